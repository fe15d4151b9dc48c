#include "gpusizer/json/paths.h"

#include <algorithm>

namespace gpusizer {

void append_pointer_token(std::string& pointer, std::string_view token) {
  pointer += '/';
  // The runs between the characters to escape are copied whole.
  std::size_t run = 0;  // start of the characters not yet copied
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] != '~' && token[i] != '/') continue;
    pointer.append(token, run, i - run);
    pointer += token[i] == '~' ? "~0" : "~1";
    run = i + 1;
  }
  pointer.append(token, run);
}

std::string escape_pointer_token(std::string_view token) {
  std::string escaped;
  append_pointer_token(escaped, token);
  return escaped.substr(1);
}

std::string json_pointer(const std::vector<std::string>& tokens) {
  std::string pointer;
  for (const auto& token : tokens) append_pointer_token(pointer, token);
  return pointer;
}

std::vector<std::string> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  std::size_t start = 1;
  while (start <= pointer.size()) {
    const std::size_t slash = std::min(pointer.find('/', start), pointer.size());
    std::string token;
    for (std::size_t i = start; i < slash; ++i) {
      if (pointer[i] == '~' && i + 1 < slash && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token += pointer[++i] == '1' ? '/' : '~';
      } else {
        token += pointer[i];
      }
    }
    tokens.push_back(std::move(token));
    start = slash + 1;
  }
  return tokens;
}

}  // namespace gpusizer
