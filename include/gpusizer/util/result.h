// Status and Result<T>: how every module boundary reports failure, instead
// of throwing (LevelDB's Status is the model). A failure is a Problem
// (problem.h): a code for callers and tests that act on the kind, the field
// it is about, and a message a person acts on, naming what is wrong, where,
// and what to set.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "gpusizer/util/contract.h"
#include "gpusizer/util/problem.h"

namespace gpusizer {

class Status {
 public:
  Status() = default;  // ok
  Status(Problem problem)
      : problem_(std::move(problem)) {}  // NOLINT(google-explicit-constructor): returned as a failure
  static Status failure(ProblemCode code, std::string path, std::string message) {
    return Problem{code, std::move(path), std::move(message)};
  }
  // A value that does not read, about no one field.
  static Status invalid_argument(std::string message) {
    return failure(ProblemCode::kBadValue, "", std::move(message));
  }
  static Status io_error(std::string message) { return failure(ProblemCode::kIo, "", std::move(message)); }

  bool ok() const { return !problem_.has_value(); }
  // REQUIRES: !ok()
  const Problem& problem() const {
    GPU_SIZER_REQUIRE(problem_.has_value());
    return *problem_;
  }
  // REQUIRES: !ok()
  ProblemCode code() const { return problem().code; }
  // Empty when ok().
  const std::string& message() const {
    static const std::string kNone;
    return problem_ ? problem_->message : kNone;
  }

 private:
  std::optional<Problem> problem_;
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
  Result(Problem problem) : state_(Status(std::move(problem))) {}  // NOLINT(google-explicit-constructor): as above

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
  // REQUIRES: !ok()
  const Problem& problem() const { return status().problem(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace gpusizer
