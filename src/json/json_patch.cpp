#include "gpusizer/json/json_patch.h"

#include "gpusizer/json/json_text.h"
#include "gpusizer/util/contract.h"

namespace gpusizer {

std::size_t PatchOverlay::node_at(std::span<const std::string_view> tokens) {
  if (nodes_.empty()) {
    nodes_.reserve(12);  // a container's requests and limits of three resources
    nodes_.emplace_back();
  }
  std::size_t n = 0;
  for (const std::string_view token : tokens) {
    GPU_SIZER_REQUIRE(!nodes_[n].is_set);
    std::size_t found = 0;
    for (const std::size_t child : nodes_[n].children) {
      if (nodes_[child].token == token) found = child;
    }
    if (found == 0) {
      found = nodes_.size();
      nodes_.push_back(Node{.token = token});
      nodes_[n].children.push_back(found);
    }
    n = found;
  }
  return n;
}

void PatchOverlay::set(std::span<const std::string_view> tokens, std::string value, bool json) {
  const std::size_t n = node_at(tokens);
  GPU_SIZER_REQUIRE(n != 0 && nodes_[n].children.empty() && nodes_[n].appended.empty());
  nodes_[n].is_set = true;
  nodes_[n].json = json;
  nodes_[n].value = std::move(value);
}

void PatchOverlay::append_json(std::span<const std::string_view> array_tokens, std::string json_value) {
  const std::size_t n = node_at(array_tokens);
  GPU_SIZER_REQUIRE(n != 0 && nodes_[n].children.empty());
  nodes_[n].appended.push_back(std::move(json_value));
}

void PatchBuilder::add_operation(std::string_view pointer, std::span<const std::string> nested_keys,
                                 std::string_view value, bool json, std::string_view op) {
  if (overflowed_) return;
  const std::size_t before = operations_.size();
  if (!operations_.empty()) operations_ += ',';
  operations_ += R"({"op":")";
  operations_ += op;
  operations_ += R"(","path":)";
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

std::size_t PatchBuilder::walk(std::span<const std::string> tokens, JsonView& node) {
  // The steps the last walk took with the same tokens name the same nodes:
  // the document does not change, and a map this patch created stays
  // created.
  std::size_t depth = 0;
  while (depth + 1 < tokens.size() && depth < walked_.size() && walked_[depth].token == tokens[depth]) ++depth;
  walked_.resize(depth);
  std::string& pointer = pointer_;  // grows token by token as the walk goes down
  pointer.resize(depth == 0 ? 0 : walked_.back().pointer_length);
  node = depth == 0 ? document_.root() : walked_.back().node;
  for (; depth + 1 < tokens.size(); ++depth) {
    const std::size_t parent_length = pointer.size();
    append_pointer_token(pointer, tokens[depth]);
    const JsonView child = document_.child(node, std::string_view(pointer).substr(0, parent_length), tokens[depth]);
    // A null map is as good as a missing one: `add` replaces it.
    if (child.is_null() && !created_.contains(pointer)) return depth;
    node = child;
    walked_.push_back({tokens[depth], pointer.size(), node});
  }
  return depth;
}

void PatchBuilder::put(const std::vector<std::string>& tokens, std::string_view value, bool json) {
  JsonView parent;
  const std::size_t depth = walk(tokens, parent);
  if (depth + 1 < tokens.size()) {
    // First missing parent: add it with the rest of the path nested inside.
    add_missing(tokens, depth, value, json);
    return;
  }
  if (!tokens.empty()) append_pointer_token(pointer_, tokens.back());
  add_operation(pointer_, {}, value, json);
}

void PatchBuilder::add_missing(std::span<const std::string> tokens, std::size_t missing, std::string_view value,
                               bool json) {
  std::string& pointer = pointer_;  // through the missing parent
  add_operation(pointer, tokens.subspan(missing + 1), value, json);
  created_.insert(pointer);
  for (std::size_t k = missing + 1; k + 1 < tokens.size(); ++k) {
    append_pointer_token(pointer, tokens[k]);
    created_.insert(pointer);
  }
}

void PatchBuilder::merge(const std::vector<std::string>& tokens, const PatchOverlay& overlay) {
  if (overlay.empty()) return;
  // Down to the deepest node that holds every edit.
  std::vector<std::string> at = tokens;
  std::size_t n = 0;
  for (;;) {
    const PatchOverlay::Node& node = overlay.nodes_[n];
    if (node.is_set || !node.appended.empty() || node.children.size() != 1) break;
    n = node.children.front();
    at.emplace_back(overlay.nodes_[n].token);
  }
  const PatchOverlay::Node& node = overlay.nodes_[n];
  if (node.is_set) {
    put(at, node.value, node.json);
    return;
  }
  if (node.appended.size() == 1) {
    append_json(at, node.appended.front());
    return;
  }
  JsonView parent;
  const std::size_t depth = walk(at, parent);
  std::string value;
  value.reserve(256);  // a container's resources, written once
  if (depth + 1 < at.size()) {
    write_merged(JsonView(), overlay, n, value);
    add_missing(at, depth, value, true);
    return;
  }
  const JsonView existing = document_.child(parent, pointer_, at.back());
  append_pointer_token(pointer_, at.back());
  write_merged(existing, overlay, n, value);
  // `add` at an array's index would insert (a container is an element of
  // its list); `replace` swaps the value in place, map member or element.
  add_operation(pointer_, {}, value, true, existing.is_absent() ? "add" : "replace");
}

void PatchBuilder::write_merged(JsonView existing, const PatchOverlay& overlay, std::size_t n, std::string& out) {
  const PatchOverlay::Node& node = overlay.nodes_[n];
  if (node.is_set) {
    if (node.json) {
      out += node.value;
    } else {
      append_json_string(out, node.value);
    }
    return;
  }
  if (!node.appended.empty()) {
    out += '[';
    bool first = true;
    const auto element = [&](std::string_view text) {
      if (!first) out += ',';
      first = false;
      out += text;
    };
    existing.for_each_element([&](JsonView item) { element(item.text()); });
    for (const std::string& item : node.appended) element(item);
    out += ']';
    return;
  }
  const auto edited = [&](std::string_view key) -> std::size_t {
    for (const std::size_t child : node.children) {
      if (overlay.nodes_[child].token == key) return child;
    }
    return 0;
  };
  out += '{';
  bool first = true;
  const auto member = [&](std::string_view key) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, key);
    out += ':';
  };
  // The members as the document has them, in its order; then the new ones.
  existing.for_each_member([&](std::string_view key, JsonView value) {
    member(key);
    if (const std::size_t child = edited(key); child != 0) {
      write_merged(value, overlay, child, out);
    } else {
      out += value.text();
    }
  });
  for (const std::size_t child : node.children) {
    const std::string_view key = overlay.nodes_[child].token;
    if (existing.is_object() && existing.contains(key)) continue;
    member(key);
    write_merged(JsonView(), overlay, child, out);
  }
  out += '}';
}

}  // namespace gpusizer
