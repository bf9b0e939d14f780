// The HTTP API's one error shape and its Status → HTTP status map.
//
//   {"error": {"code": "not_found", "status": 404, "message": "no run with id 7"}}
//
// Every failed request — bad parameter, unknown run or route, missing token, database trouble,
// an exception caught at the server boundary — answers with this body. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "schema/status.h"

namespace baton {

// 400 for kInvalidArgument/kConfig, 404 kNotFound, 503 kUnavailable, 500 otherwise.
int HttpStatusFor(Code code);

// The body for an HTTP status and message; `code` is a stable snake_case name.
nlohmann::json ErrorBody(int http_status, const std::string& code, const std::string& message);

// ErrorBody for a failed Status (its HTTP status from HttpStatusFor).
nlohmann::json ErrorBody(const Status& status);

}  // namespace baton
