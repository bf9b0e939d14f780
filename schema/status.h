// Status and Result<T>: errors as values for everything outside the trainer's hot path.
//
// The orchestrator, the store, the HTTP layer and the shared schema code return these instead of
// throwing; the trainer converts a failed Status into its fail-fast exit at the boundary. A
// Status carries a Code (which decides the process exit code, see exit_codes.h) and a message
// that names the file, key, value or run it is about. Value types; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "schema/exit_codes.h"

namespace baton {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // bad command-line usage
  kConfig,           // a run config that fails validation
  kData,             // a dataset, episode or checkpoint file that is missing or corrupt
  kNotFound,         // an unknown run, job or file the user named
  kUnavailable,      // an external service (SLURM, a port) that is not there
  kIo,               // the filesystem refused a read or write
  kInternal,         // a bug: an invariant we own was broken
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status Config(std::string m) { return {Code::kConfig, std::move(m)}; }
  static Status Data(std::string m) { return {Code::kData, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Io(std::string m) { return {Code::kIo, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // The process exit code a command should end with when this error reaches main().
  int exit_code() const { return ExitCodeFor(code_); }
  // "config error: <message>" — what a user reads on stderr.
  std::string ToString() const;

  // Prefixes context ("while loading run 12: ...") without changing the code.
  Status Annotate(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

  static int ExitCodeFor(Code code);

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

const char* CodeName(Code code);

// Either a value or a failed Status. Access to value() of a failed Result is a bug (aborts).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  // By value: a reference into a temporary Result would dangle (`for (x : f().value())`).
  T value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace baton

// Returns early from a function returning Status or Result<T> when `expr` failed.
#define BATON_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::baton::Status baton_status_ = (expr);        \
    if (!baton_status_.ok()) return baton_status_; \
  } while (0)

// `lhs = value of expr` when `expr` (a Result<T>) holds a value, else returns its Status from a
// function returning Status or Result<U>. `lhs` declares (`auto x`, `RunRecord run`) or names an
// existing variable; the value is moved out, so move-only types work. Several statements: give an
// unbraced `if` braces around it.
#define BATON_ASSIGN_OR_RETURN(lhs, ...) \
  BATON_ASSIGN_OR_RETURN_IMPL_(BATON_STATUS_CONCAT_(baton_result_, __LINE__), lhs, __VA_ARGS__)
#define BATON_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
  auto result = (__VA_ARGS__);                         \
  if (!result.ok()) return result.status();            \
  lhs = std::move(result).value()
#define BATON_STATUS_CONCAT_(a, b) BATON_STATUS_CONCAT_INNER_(a, b)
#define BATON_STATUS_CONCAT_INNER_(a, b) a##b
