#include "orchestrator/http/api_error.h"

namespace baton {

int HttpStatusFor(Code code) {
  switch (code) {
    case Code::kOk:
      return 200;
    case Code::kInvalidArgument:
    case Code::kConfig:
      return 400;
    case Code::kNotFound:
      return 404;
    case Code::kUnavailable:
      return 503;
    case Code::kData:
    case Code::kIo:
    case Code::kInternal:
      return 500;
  }
  return 500;
}

const char* ErrorCodeFor(int http_status) {
  switch (http_status) {
    case 400:
      return "bad_request";
    case 401:
      return "unauthorized";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 413:
      return "payload_too_large";
    case 414:
      return "uri_too_long";
    case 416:
      return "range_not_satisfiable";
    case 503:
      return "unavailable";
  }
  return http_status >= 400 && http_status < 500 ? "bad_request" : "internal";
}

nlohmann::json ErrorBody(int http_status, const std::string& code, const std::string& message) {
  return {{"error", {{"code", code}, {"status", http_status}, {"message", message}}}};
}

nlohmann::json ErrorBody(const Status& status) {
  const char* code = "internal";
  switch (status.code()) {
    case Code::kOk:
    case Code::kInternal:
      code = "internal";
      break;
    case Code::kInvalidArgument:
    case Code::kConfig:
      code = "bad_request";
      break;
    case Code::kNotFound:
      code = "not_found";
      break;
    case Code::kUnavailable:
      code = "unavailable";
      break;
    case Code::kData:
      code = "data_error";
      break;
    case Code::kIo:
      code = "io_error";
      break;
  }
  return ErrorBody(HttpStatusFor(status.code()), code, status.message());
}

}  // namespace baton
