// RequestIdentity: who an API request is, for `baton serve --auth tokens|proxy` (docs/team.md,
// "Identity and write actions"; docs/http_api.md, "Identity").
//
//   tokens  Authorization: Bearer <token> (or ?token= on a GET, for links that cannot carry a
//           header), looked up in the store's api_tokens (store_tokens.h): hashed, compared in
//           constant time.
//   proxy   the header named by --trust-proxy-header (X-Remote-User), honoured only when the
//           connection's peer address is one of --trusted-proxy; from any other address the
//           header is ignored. Admins are the --admin-user names.
// Write actions take the token from the header only, never from the query or a cookie. An
// identity is a user name baton accepts (ValidTokenUser). Thread-safe (each lookup leases its
// own read connection).
#pragma once

#include <httplib.h>

#include <optional>
#include <string>
#include <vector>

#include "orchestrator/http/store_pool.h"
#include "orchestrator/store/store_tokens.h"
#include "schema/status.h"

namespace baton {

enum class AuthMode { kNone, kTokens, kProxy };

// "tokens" | "proxy"; nullopt for anything else.
std::optional<AuthMode> ParseAuthMode(const std::string& word);

struct AuthOptions {
  AuthMode mode = AuthMode::kNone;  // kNone: no identities, no write routes (as before --auth)
  std::string proxy_header;         // --trust-proxy-header, e.g. X-Remote-User
  std::vector<std::string> trusted_proxies;  // --trusted-proxy: peer IP addresses, exactly
  std::vector<std::string> admin_users;      // --admin-user: admins in proxy mode
};

// kInvalidArgument naming the flag when the options do not fit together (proxy without a header
// or a trusted address; proxy flags without --auth proxy).
[[nodiscard]] Status CheckAuthOptions(const AuthOptions& o);

class RequestIdentity {
 public:
  RequestIdentity(AuthOptions options, StorePool* pool)
      : options_(std::move(options)), pool_(pool) {}

  const AuthOptions& options() const { return options_; }
  bool enabled() const { return options_.mode != AuthMode::kNone; }

  // The request's identity; nullopt when it has none (the caller answers 401). `header_only`
  // (write actions): a token only counts from the Authorization header. Store errors.
  [[nodiscard]] Result<std::optional<Identity>> Identify(const httplib::Request& req,
                                                         bool header_only) const;
  // What a 401 says is missing, for this mode.
  std::string Missing() const;

 private:
  AuthOptions options_;
  StorePool* pool_;
};

}  // namespace baton
