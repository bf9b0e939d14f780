// The HTTP API's one error shape and its Status → HTTP status map.
//
//   {"error": {"code": "not_found", "status": 404, "message": "no run with id 7"}}
//
// Every failed request — bad or unknown parameter, unknown run or route, missing token, a method
// other than GET/HEAD, database trouble, an exception caught at the server boundary, and what
// httplib refuses before any route runs (malformed request, URI or body too long, bad Range) —
// answers with this body. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "schema/status.h"

namespace baton {

// 400 for kInvalidArgument/kConfig, 404 kNotFound, 503 kUnavailable, 500 otherwise.
int HttpStatusFor(Code code);

// The stable code of an HTTP error status that has no Status behind it: 400 "bad_request",
// 401 "unauthorized", 404 "not_found", 405 "method_not_allowed", 413 "payload_too_large",
// 414 "uri_too_long", 416 "range_not_satisfiable", 503 "unavailable"; any other 4xx
// "bad_request", anything else "internal".
const char* ErrorCodeFor(int http_status);

// The body for an HTTP status and message; `code` is a stable snake_case name.
nlohmann::json ErrorBody(int http_status, const std::string& code, const std::string& message);

// ErrorBody for a failed Status (its HTTP status from HttpStatusFor).
nlohmann::json ErrorBody(const Status& status);

}  // namespace baton
