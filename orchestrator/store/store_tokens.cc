#include "orchestrator/store/store_tokens.h"

#include "orchestrator/store/store_internal.h"
#include "orchestrator/store/token_hash.h"

namespace baton {

bool ValidTokenUser(const std::string& user) {
  if (user.empty() || user.size() > 64) return false;
  for (char c : user) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '@';
    if (!ok) return false;
  }
  return true;
}

Result<std::string> AddApiToken(Store& store, const std::string& user, bool admin, double now) {
  if (!ValidTokenUser(user)) {
    return Status::InvalidArgument("token user '" + user +
                                   "': expected 1 to 64 letters, digits, '.', '_', '-' or '@'");
  }
  BATON_ASSIGN_OR_RETURN(const std::string token, RandomHex(kTokenBytes));
  BATON_ASSIGN_OR_RETURN(const std::string salt, RandomHex(kTokenSaltBytes));
  const std::string hash = TokenHash(salt, token);
  if (hash.empty()) return Status::Internal("SHA-256 failed");
  Db& db = StoreInternal::Db(store);
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(Statement * find,
                           db.Prepare("SELECT COUNT(*) FROM api_tokens WHERE username = ?"));
    find->Bind(1, user);
    BATON_ASSIGN_OR_RETURN(const bool row, find->Step());
    const bool exists = row && find->Int(0) > 0;
    find->Reset();
    if (exists) {
      return Status::InvalidArgument("user '" + user +
                                     "' already has a token; `baton token revoke " + user +
                                     "` first to replace it");
    }
    BATON_ASSIGN_OR_RETURN(Statement * ins,
                           db.Prepare("INSERT INTO api_tokens (username, admin, salt, hash, "
                                      "created_at) VALUES (?, ?, ?, ?, ?)"));
    return ins->Bind(1, user)
        .Bind(2, int64_t{admin ? 1 : 0})
        .Bind(3, salt)
        .Bind(4, hash)
        .Bind(5, now)
        .Run();
  }));
  return token;
}

Result<std::vector<ApiTokenInfo>> ListApiTokens(Store& store) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s, StoreInternal::Db(store).Prepare(
                         "SELECT username, admin, created_at FROM api_tokens ORDER BY username"));
  return s->Collect<ApiTokenInfo>([](const Statement& r) {
    return ApiTokenInfo{r.Text(0), r.Int(1) != 0, r.Double(2)};
  });
}

Status RevokeApiToken(Store& store, const std::string& user) {
  Db& db = StoreInternal::Db(store);
  return store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(Statement * del,
                           db.Prepare("DELETE FROM api_tokens WHERE username = ? RETURNING id"));
    del->Bind(1, user);
    BATON_ASSIGN_OR_RETURN(const bool row, del->Step());
    del->Reset();
    if (!row) return Status::NotFound("user '" + user + "' has no token (see `baton token list`)");
    return Status::Ok();
  });
}

Result<std::optional<Identity>> FindTokenIdentity(Store& store, const std::string& token) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            "SELECT username, admin, salt, hash FROM api_tokens"));
  std::optional<Identity> found;
  while (true) {
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) break;
    // No early exit: every row costs one hash and one constant-time compare.
    if (TokenMatches(token, s->Text(2), s->Text(3)) && !found) {
      found = Identity{s->Text(0), s->Int(1) != 0};
    }
  }
  return found;
}

}  // namespace baton
