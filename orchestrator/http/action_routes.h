// The write routes of `baton serve --auth tokens|proxy`: POST /api/runs/{id}/cancel and
// POST /api/runs/{id}/resume (docs/http_api.md, "Write actions").
//
// They are answered before routing (from HttpServer's pre-routing handler): a POST without a
// Content-Length would otherwise have httplib read its body until the client closes. A request
// body is never read (the actions take none) and the connection is closed after one that had
// one. Order of checks: an identity from the Authorization header (or the trusted proxy) or 401;
// in proxy mode the header `X-Requested-With: baton` or 403 (a cross-site form can carry the
// proxy's session cookie but not a custom header); no query parameters (a token in the URL is
// refused: 400); then RunActionService (404, 403, the action). Thread-safe.
#pragma once

#include <httplib.h>

#include "orchestrator/http/request_identity.h"
#include "orchestrator/http/run_action_service.h"

namespace baton {

// Header a write action must carry in proxy mode (the UI always sends it).
inline constexpr const char* kActionHeader = "X-Requested-With";
inline constexpr const char* kActionHeaderValue = "baton";

// True for the paths of the write routes (any run id text).
bool IsActionPath(const std::string& path);

// Answers one write action request into `res` (any of the statuses above).
void AnswerAction(const RequestIdentity& identity, RunActionService& actions,
                  const httplib::Request& req, httplib::Response& res);

}  // namespace baton
