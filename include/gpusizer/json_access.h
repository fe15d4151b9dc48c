// Reading JSON that came from a client: a field of the wrong type reads as
// absent instead of throwing, so odd input gets an answer, not a crash.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpusizer {

// object[key], or null when object is not an object or lacks the key.
inline const nlohmann::json& member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// object[key] when it is a string, else "".
inline std::string string_member(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

}  // namespace gpusizer
