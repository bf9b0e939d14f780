// The store's table of per-user API tokens (api_tokens, schema version 11): `baton token
// add|list|revoke` write it, `baton serve --auth tokens` reads it for every request's identity.
// One token per user; the secret itself is never stored (token_hash.h).
//
// Part of the store, the only code that speaks SQL. Free functions over a Store the caller owns;
// thread-compatible, like the Store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// What `baton token list` shows: no secret, no hash.
struct ApiTokenInfo {
  std::string user;
  bool admin = false;
  double created_at = 0;
};

// Who a request is, once its token or the trusted proxy's header said so.
struct Identity {
  std::string user;
  bool admin = false;  // may cancel and resume every user's runs
};

// A user name baton accepts for a token: 1..64 of letters, digits, '.', '_', '-', '@'.
bool ValidTokenUser(const std::string& user);

// Creates `user`'s token and returns the secret (shown once; only its salted hash is stored).
// kInvalidArgument for a name ValidTokenUser refuses, or a user who already has a token (revoke
// it first).
[[nodiscard]] Result<std::string> AddApiToken(Store& store, const std::string& user, bool admin,
                                              double now);
// By user name.
[[nodiscard]] Result<std::vector<ApiTokenInfo>> ListApiTokens(Store& store);
// kNotFound naming the user when there is no token to revoke.
[[nodiscard]] Status RevokeApiToken(Store& store, const std::string& user);
// The identity whose token `token` is; nullopt when none is. Every stored token is compared (in
// constant time each), so the answer's timing does not say which user came close.
[[nodiscard]] Result<std::optional<Identity>> FindTokenIdentity(Store& store,
                                                                const std::string& token);

}  // namespace baton
