// JSON Pointers (RFC 6901): how patches name a place in a document. (The
// dotted field path people read in messages is field_path, util/strings.h.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpusizer {

// RFC 6901 escaping of one reference token: `~` -> `~0`, `/` -> `~1`.
std::string escape_pointer_token(std::string_view token);

// Appends "/" and the token, escaped, to a JSON Pointer.
void append_pointer_token(std::string& pointer, std::string_view token);

// A JSON Pointer string from tokens, each escaped.
std::string json_pointer(const std::vector<std::string>& tokens);

// The unescaped tokens of a JSON Pointer ("/a~1b/0" -> {"a/b", "0"}); none
// for the empty pointer (the whole document).
std::vector<std::string> pointer_tokens(std::string_view pointer);

}  // namespace gpusizer
