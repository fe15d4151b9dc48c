// Compact JSON text, byte for byte what nlohmann's dump() writes (keys in
// its sorted order, invalid UTF-8 replaced by U+FFFD), several times faster
// for the answers and log lines written on every review: strings are checked
// as UTF-8 with simdjson and copied in runs between the characters that
// need escaping, where nlohmann decodes every byte.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpusizer {

std::string to_json_text(const nlohmann::json& value);

}  // namespace gpusizer
