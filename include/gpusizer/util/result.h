// Status and Result<T>: how every module boundary reports failure, instead
// of throwing (LevelDB's Status is the model). A failure carries a code, for
// callers that act on the kind, and a message a person acts on: it names
// what is wrong, where, and what to set.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "gpusizer/util/contract.h"

namespace gpusizer {

class Status {
 public:
  enum class Code {
    kOk,
    kInvalidArgument,  // input is wrong: a manifest, a review, a policy, a flag, an annotation
    kIoError,          // the system refused: a file, a socket, a TLS library call
  };

  Status() = default;  // ok
  static Status invalid_argument(std::string message) { return {Code::kInvalidArgument, std::move(message)}; }
  static Status io_error(std::string message) { return {Code::kIoError, std::move(message)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // Empty when ok().
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

// A value, or the Status of the failure that prevented it.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor): returned as a T
  // REQUIRES: !status.ok()
  Result(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor): returned as a failure
    GPU_SIZER_REQUIRE(!std::get<Status>(state_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  // REQUIRES: !ok()
  const Status& status() const { return std::get<Status>(state_); }
  // REQUIRES: !ok(). The message: status().message().
  const std::string& error() const { return status().message(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace gpusizer
