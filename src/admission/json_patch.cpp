#include "gpusizer/json_patch.h"

namespace gpusizer {

std::string escape_pointer_token(std::string_view token) {
  std::string escaped;
  escaped.reserve(token.size());
  for (char c : token) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::string json_pointer(const std::vector<std::string>& tokens) {
  std::string pointer;
  for (const auto& token : tokens) pointer += "/" + escape_pointer_token(token);
  return pointer;
}

JsonView PatchBuilder::child(JsonView node, const std::string& pointer, const std::string& token) {
  if (!node.is_array()) return node.child(token);
  auto [slot, inserted] = arrays_.try_emplace(pointer);
  if (inserted) slot->second = node.elements();
  const auto index = array_index(token);
  if (!index || *index >= slot->second.size()) return {};
  return slot->second[*index];
}

void PatchBuilder::set(const std::vector<std::string>& tokens, nlohmann::json value) {
  JsonView node = document_;
  std::string pointer;
  for (std::size_t depth = 0; depth + 1 < tokens.size(); ++depth) {
    const std::string parent_pointer = pointer;
    pointer += "/" + escape_pointer_token(tokens[depth]);
    node = child(node, parent_pointer, tokens[depth]);
    // A null map is as good as a missing one: `add` replaces it.
    if (!node.is_null() || created_.contains(pointer)) continue;
    // First missing parent: add it with the rest of the path nested inside.
    nlohmann::json nested = std::move(value);
    for (std::size_t k = tokens.size() - 1; k > depth; --k) {
      nested = nlohmann::json{{tokens[k], std::move(nested)}};
    }
    operations_.push_back({{"op", "add"}, {"path", pointer}, {"value", std::move(nested)}});
    created_.insert(pointer);
    for (std::size_t k = depth + 1; k + 1 < tokens.size(); ++k) {
      pointer += "/" + escape_pointer_token(tokens[k]);
      created_.insert(pointer);
    }
    return;
  }
  operations_.push_back({{"op", "add"}, {"path", json_pointer(tokens)}, {"value", std::move(value)}});
}

}  // namespace gpusizer
