#include "orchestrator/http/request_identity.h"

#include <algorithm>

namespace baton {

namespace {

const std::optional<Identity> kNoIdentity;

}  // namespace

std::optional<AuthMode> ParseAuthMode(const std::string& word) {
  if (word == "tokens") return AuthMode::kTokens;
  if (word == "proxy") return AuthMode::kProxy;
  return std::nullopt;
}

Status CheckAuthOptions(const AuthOptions& o) {
  const bool proxy_flags =
      !o.proxy_header.empty() || !o.trusted_proxies.empty() || !o.admin_users.empty();
  if (o.mode != AuthMode::kProxy && proxy_flags) {
    return Status::InvalidArgument(
        "--trust-proxy-header, --trusted-proxy and --admin-user need --auth proxy");
  }
  if (o.mode == AuthMode::kProxy) {
    if (o.proxy_header.empty()) {
      return Status::InvalidArgument(
          "--auth proxy needs --trust-proxy-header NAME (the header the proxy sets, e.g. "
          "X-Remote-User)");
    }
    if (o.trusted_proxies.empty()) {
      return Status::InvalidArgument(
          "--auth proxy needs --trusted-proxy ADDR (the proxy's address; the header is ignored "
          "from any other)");
    }
  }
  return Status::Ok();
}

Result<std::optional<Identity>> RequestIdentity::Identify(const httplib::Request& req,
                                                          bool header_only) const {
  if (options_.mode == AuthMode::kProxy) {
    const auto& t = options_.trusted_proxies;
    if (std::find(t.begin(), t.end(), req.remote_addr) == t.end()) return kNoIdentity;
    if (req.get_header_value_count(options_.proxy_header.c_str()) != 1) return kNoIdentity;
    const std::string user = req.get_header_value(options_.proxy_header.c_str());
    if (!ValidTokenUser(user)) return kNoIdentity;
    const auto& admins = options_.admin_users;
    return std::optional<Identity>(
        Identity{user, std::find(admins.begin(), admins.end(), user) != admins.end()});
  }
  if (options_.mode != AuthMode::kTokens) return kNoIdentity;
  std::string token;
  const std::string auth = req.get_header_value("Authorization");
  if (auth.rfind("Bearer ", 0) == 0) {
    token = auth.substr(7);
  } else if (!header_only && req.has_param("token")) {
    token = req.get_param_value("token");
  }
  if (token.empty()) return kNoIdentity;
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  return FindTokenIdentity(lease.store(), token);
}

std::string RequestIdentity::Missing() const {
  if (options_.mode == AuthMode::kProxy) {
    return "no identity: this server takes the user from the " + options_.proxy_header +
           " header of its trusted proxy only";
  }
  return "this server needs a user's token: Authorization: Bearer <token> (`baton token add "
         "USER`)";
}

}  // namespace baton
