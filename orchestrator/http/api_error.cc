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
