// SHA-256 as hex: tells which policy text or certificate is active.
#pragma once

#include <string>
#include <string_view>

namespace gpusizer {

// Hex SHA-256 of text.
std::string sha256_hex(std::string_view text);

}  // namespace gpusizer
