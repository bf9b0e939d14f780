// The API's routes: each path pattern with the query parameters it takes and its handler, which
// reads the parameters (request_params.h) and asks the service; the answer or the failure comes
// back as a value, and HttpServer writes it in the one shape (JSON, or CSV where a route has
// one). The table is the API's list of endpoints (docs/http_api.md "Endpoints"). The handlers
// borrow the service; thread-safe as it is.
#pragma once

#include <httplib.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/http/run_history_service.h"
#include "schema/status.h"

namespace baton {

// An API route: its path pattern (as documented), the query parameters it takes, and a handler
// that returns the answer or the failure to answer with.
using ApiHandler = std::function<Result<nlohmann::json>(const httplib::Request&)>;
struct ApiRoute {
  const char* regex;  // httplib pattern over the path; group 1 is the run id where there is one
  const char* name;   // the route as docs/http_api.md writes it, for messages
  std::vector<std::string> params;
  ApiHandler handler;
  // The answer as CSV for ?format=csv; routes without one answer JSON only.
  std::function<std::string(const nlohmann::json&)> csv = nullptr;
};

// Every API route, in the order they are matched.
std::vector<ApiRoute> ApiRoutes(RunHistoryService* svc);

// kInvalidArgument naming the first query parameter `route` does not take, or one given twice
// (which value would win is a guess; httplib alone would silently take the first). `token` is
// taken everywhere when the server has one.
[[nodiscard]] Status CheckQueryParams(const httplib::Request& req, const ApiRoute& route,
                                      bool token_param);

}  // namespace baton
