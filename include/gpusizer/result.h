// Result<T>: a value or an error message, returned across module boundaries
// instead of throwing (the LevelDB Status habit).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpusizer {

// An error a person will read: it names what is wrong and where.
struct Error {
  std::string message;
};

template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Error error) : state_(std::move(error)) {}  // NOLINT: implicit on purpose

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  // REQUIRES: !ok()
  const std::string& error() const { return std::get<Error>(state_).message; }

 private:
  std::variant<T, Error> state_;
};

}  // namespace gpusizer
