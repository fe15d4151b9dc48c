// Compact JSON text, byte for byte what nlohmann's dump() writes (keys in
// its sorted order, invalid UTF-8 replaced by U+FFFD), several times faster
// for the answers and log lines written on every review: strings are checked
// as UTF-8 with simdjson and copied in runs between the characters that
// need escaping, where nlohmann decodes every byte.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpusizer {

std::string to_json_text(const nlohmann::json& value);

// Appends text as a JSON string, quoted and escaped exactly as to_json_text
// writes strings: answers written piece by piece stay byte for byte what
// a whole nlohmann value would have written.
void append_json_string(std::string& out, std::string_view text);

// {"error":"message"}: the body of every 4xx/5xx answer, from the review
// handler and from both transports.
std::string json_error_text(std::string_view message);

}  // namespace gpusizer
