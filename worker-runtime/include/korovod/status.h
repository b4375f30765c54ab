// The one error model of the worker runtime: expected failures are values (Status, Result<T>),
// never exceptions. Broken invariants abort via KOROVOD_CHECK (src/core/check.h).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace korovod {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // bad call: wrong dtype/shape, duplicate name, unknown process set
  kPreconditionError = 2, // mismatch between ranks (shape, dtype, op, root, device)
  kAborted = 3,           // shut down, stalled op failed, collective timed out
  kUnknownError = 4,      // transport/backend failure
  kInProgress = 5,        // poll(): not finished yet
  kNotInitialized = 6,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status precondition(std::string m) { return {StatusCode::kPreconditionError, std::move(m)}; }
  static Status aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status unknown(std::string m) { return {StatusCode::kUnknownError, std::move(m)}; }
  static Status in_progress() { return {StatusCode::kInProgress, "in progress"}; }
  static Status not_initialized(std::string m) { return {StatusCode::kNotInitialized, std::move(m)}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(implicit); must not be ok

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

#define KOROVOD_RETURN_IF_ERROR(expr)          \
  do {                                         \
    ::korovod::Status korovod_st_ = (expr);    \
    if (!korovod_st_.is_ok()) return korovod_st_; \
  } while (0)

}  // namespace korovod
