// Fail-fast errors for the trainer: what went wrong, where (file:line), and a hint.
//
// Trainer code does not thread error values through its hot loops; it throws FatalError, which
// main() turns into the process exit code the launcher acts on (65 data, 78 config, 75 requeue,
// 70 internal). Background threads (the prefetch loader) capture it and rethrow it on the main
// thread. Torch-free so data code can use it.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "schema/status.h"

namespace baton {

class FatalError : public std::runtime_error {
 public:
  FatalError(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

[[noreturn]] inline void FailAt(const char* file, int line, int exit_code, const std::string& what,
                                const std::string& hint) {
  std::string msg = what + "\n  at " + file + ":" + std::to_string(line);
  if (!hint.empty()) msg += "\n  hint: " + hint;
  throw FatalError(exit_code, msg);
}

[[noreturn]] inline void FailAt(const char* file, int line, const Status& status,
                                const std::string& hint) {
  FailAt(file, line, status.exit_code(), status.ToString(), hint);
}

template <class T>
T ValueOrFailAt(const char* file, int line, Result<T>&& result, const std::string& hint) {
  if (!result.ok()) FailAt(file, line, result.status(), hint);
  return std::move(result).value();
}

}  // namespace baton

#define BATON_FAIL(exit_code, what, hint) ::baton::FailAt(__FILE__, __LINE__, exit_code, what, hint)
// Unwraps a Result<T> or fails fast with its Status (exit code from the Status code).
#define BATON_VALUE_OR_FAIL(result, hint) ::baton::ValueOrFailAt(__FILE__, __LINE__, result, hint)
#define BATON_CHECK_OK(status, hint)                                           \
  do {                                                                         \
    const ::baton::Status baton_st_ = (status);                                \
    if (!baton_st_.ok()) ::baton::FailAt(__FILE__, __LINE__, baton_st_, hint); \
  } while (0)
