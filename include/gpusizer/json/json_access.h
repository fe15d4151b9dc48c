// Reading JSON that came from a client: a field of the wrong type reads as
// absent instead of throwing, so odd input gets an answer, not a crash.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpusizer/util/result.h"

namespace gpusizer {

// Go's encoding/json (and so the API server) refuses JSON nested deeper
// than this; nothing deeper is a real review.
inline constexpr std::size_t kMaxJsonDepth = 10000;

// Parses text from a client as one JSON value, without recursion and with
// no more than max_depth nested arrays and objects. Fails, phrased to follow
// the input's name ("request body ..."), with what is wrong and where:
//   is not valid JSON: ... at line 1, column 17: ...   (syntax, invalid UTF-8;
//                                                       never quoting the text)
//   nests JSON deeper than 10000 levels at request.object.spec.x[0][0]...
//   repeats key "memory" in request.object.spec.containers[0].resources.limits
// A repeated key is refused rather than resolved: the API server never sends
// one, and any choice could differ from what another reader of the same
// bytes decides.
Result<nlohmann::json> parse_client_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// nlohmann's parse errors quote the text read last ("...; last read:
// '...'"): a whole string or number, as long as the input. The message
// with that quote cut to max_bytes (with "..."), or left out for 0.
std::string parse_error_quoting(std::string message, std::size_t max_bytes);

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
