#include "schema/status.h"

namespace baton {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "usage error";
    case Code::kConfig:
      return "config error";
    case Code::kData:
      return "data error";
    case Code::kNotFound:
      return "not found";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kIo:
      return "I/O error";
    case Code::kInternal:
      return "internal error";
  }
  return "error";
}

int Status::ExitCodeFor(Code code) {
  switch (code) {
    case Code::kOk:
      return kExitOk;
    case Code::kInvalidArgument:
      return kExitUsage;
    case Code::kConfig:
      return kExitConfig;
    case Code::kData:
      return kExitData;
    case Code::kNotFound:
      return kExitNotFound;
    case Code::kUnavailable:
      return kExitUnavailable;
    case Code::kIo:
      return kExitIo;
    case Code::kInternal:
      return kExitInternal;
  }
  return kExitFailure;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace baton
