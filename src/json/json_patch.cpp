#include "gpusizer/json/json_patch.h"

#include "gpusizer/json/json_text.h"

namespace gpusizer {

void PatchBuilder::add_operation(std::string_view pointer, std::span<const std::string> nested_keys,
                                 std::string_view value, bool json) {
  if (overflowed_) return;
  const std::size_t before = operations_.size();
  if (!operations_.empty()) operations_ += ',';
  operations_ += R"({"op":"add","path":)";
  append_json_string(operations_, pointer);
  operations_ += R"(,"value":)";
  for (const std::string& key : nested_keys) {
    operations_ += '{';
    append_json_string(operations_, key);
    operations_ += ':';
  }
  if (json) {
    operations_ += value;
  } else {
    append_json_string(operations_, value);
  }
  operations_.append(nested_keys.size(), '}');
  operations_ += '}';
  // "[" and "]" around the operations.
  if (operations_.size() + 2 > max_bytes_) {
    operations_.resize(before);
    overflowed_ = true;
  }
}

void PatchBuilder::set(const std::vector<std::string>& tokens, std::string_view value) { put(tokens, value, false); }

void PatchBuilder::set_json(const std::vector<std::string>& tokens, std::string_view json_value) {
  put(tokens, json_value, true);
}

void PatchBuilder::append_json(const std::vector<std::string>& array_tokens, std::string_view json_value) {
  std::string pointer;
  JsonView node = document_.root();
  for (const auto& token : array_tokens) {
    node = document_.child(node, pointer, token);
    append_pointer_token(pointer, token);
  }
  if (node.is_array() || created_.contains(pointer)) {
    std::vector<std::string> end = array_tokens;
    end.push_back("-");
    put(end, json_value, true);
    return;
  }
  put(array_tokens, "[" + std::string(json_value) + "]", true);
  created_.insert(pointer);
}

void PatchBuilder::put(const std::vector<std::string>& tokens, std::string_view value, bool json) {
  // The steps the last walk took with the same tokens name the same nodes:
  // the document does not change, and a map this patch created stays
  // created.
  std::size_t depth = 0;
  while (depth + 1 < tokens.size() && depth < walked_.size() && walked_[depth].token == tokens[depth]) ++depth;
  walked_.resize(depth);
  std::string& pointer = pointer_;  // grows token by token as the walk goes down
  pointer.resize(depth == 0 ? 0 : walked_.back().pointer_length);
  JsonView node = depth == 0 ? document_.root() : walked_.back().node;
  for (; depth + 1 < tokens.size(); ++depth) {
    const std::size_t parent_length = pointer.size();
    append_pointer_token(pointer, tokens[depth]);
    node = document_.child(node, std::string_view(pointer).substr(0, parent_length), tokens[depth]);
    // A null map is as good as a missing one: `add` replaces it.
    if (!node.is_null() || created_.contains(pointer)) {
      walked_.push_back({tokens[depth], pointer.size(), node});
      continue;
    }
    // First missing parent: add it with the rest of the path nested inside.
    add_operation(pointer, std::span(tokens).subspan(depth + 1), value, json);
    created_.insert(pointer);
    for (std::size_t k = depth + 1; k + 1 < tokens.size(); ++k) {
      append_pointer_token(pointer, tokens[k]);
      created_.insert(pointer);
    }
    return;
  }
  if (!tokens.empty()) append_pointer_token(pointer, tokens.back());
  add_operation(pointer, {}, value, json);
}

}  // namespace gpusizer
