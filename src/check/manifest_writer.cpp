// --fix: patches applied to the YAML tree as the user wrote it, and the
// tree written back.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gpusizer/check/manifests.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/json/paths.h"

namespace gpusizer {

using nlohmann::json;

namespace {

YAML::Node to_yaml(const json& value) {
  if (value.is_object()) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto& [key, item] : value.items()) map[key] = to_yaml(item);
    return map;
  }
  if (value.is_array()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& item : value) list.push_back(to_yaml(item));
    return list;
  }
  YAML::Node scalar(value.is_string() ? value.get<std::string>() : value.dump());
  scalar.SetTag("!");  // written quoted: "32" must stay a string
  return scalar;
}

bool looks_like_a_document_marker(std::string_view text) {
  return (text.starts_with("---") || text.starts_with("...")) &&
         (text.size() == 3 || text[3] == ' ' || text[3] == '\t');
}

// 1024 / 6: a key this long stays within YAML's implicit-key limit even
// with every character escaped.
constexpr std::size_t kShortKeyCharacters = 170;

// YAML reads an implicit key of at most 1024 characters: a longer one (up
// to 6 per character once escaped) is written as an explicit `? key`.
bool is_long_key(const YAML::Node& key) { return !key.IsScalar() || key.Scalar().size() > kShortKeyCharacters; }

// Whether node or anything in it has a key written as `? key`.
bool holds_long_key(const YAML::Node& node) {
  if (node.IsSequence())
    return std::any_of(node.begin(), node.end(), [](const YAML::Node& item) { return holds_long_key(item); });
  if (!node.IsMap()) return false;
  return std::any_of(node.begin(), node.end(), [](const auto& entry) {
    return is_long_key(entry.first) || holds_long_key(entry.first) || holds_long_key(entry.second);
  });
}

// known_short: node was found to hold no long key (its flow parent was
// checked), so its flow collections stay flow without looking again.
void emit(YAML::Emitter& out, const YAML::Node& node, bool known_short = false) {
  // Flow collections ([a, b], {k: v}) stay flow, as the author wrote them,
  // unless they hold a long key: yaml-cpp writes `{ ?"key": v}` in flow
  // style, which YAML (and yaml-cpp) cannot read back.
  const bool flow = node.Style() == YAML::EmitterStyle::Flow && (known_short || !holds_long_key(node));
  if (flow) out << YAML::Flow;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& entry : node) {
        if (is_long_key(entry.first)) out << YAML::LongKey;
        out << YAML::Key;
        emit(out, entry.first, flow);
        out << YAML::Value;
        emit(out, entry.second, flow);
      }
      out << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : node) emit(out, item, flow);
      out << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar:
      // Quoted in, quoted out: "4" must not come back as the number 4. A
      // plain scalar spanning lines is a string that only double quotes
      // keep exact (a literal block would add a final newline), and one
      // starting like a document marker (`--- x`) would end the document.
      if (node.Tag() == "!" || node.Scalar().find_first_of("\r\n") != std::string::npos ||
          looks_like_a_document_marker(node.Scalar())) {
        out << YAML::DoubleQuoted << node.Scalar();
      } else {
        out << node.Scalar();
      }
      break;
    default: out << YAML::Null;
  }
}

// Writes value over the YAML node target is a handle to, keeping each
// node whose value is unchanged as the user wrote it: a container a patch
// replaces keeps its ports as numbers, its quoting and its tags.
void merge_into(YAML::Node target, const json& value) {
  if (yaml_value(target) == value) return;
  if (value.is_object() && target.IsMap()) {
    std::vector<std::string> gone;
    for (const auto& entry : target) {
      if (const auto key = entry.first.as<std::string>(); !value.contains(key)) gone.push_back(key);
    }
    for (const std::string& key : gone) target.remove(key);
    for (const auto& [key, item] : value.items()) {
      if (target[key]) {
        merge_into(target[key], item);
      } else {
        target[key] = to_yaml(item);
      }
    }
    return;
  }
  if (value.is_array() && target.IsSequence() && target.size() <= value.size()) {
    const std::size_t kept = target.size();
    for (std::size_t i = 0; i < kept; ++i) merge_into(target[i], value[i]);
    for (std::size_t i = kept; i < value.size(); ++i) target.push_back(to_yaml(value[i]));
    return;
  }
  target = to_yaml(value);  // a handle: assigning writes the tree
}

Result<bool> apply_patch_to_yaml(YAML::Node& root, const json& operations) {
  for (const auto& operation : operations) {
    const std::string path = operation.value("path", "");
    const std::string op = operation.value("op", "");
    if ((op != "add" && op != "replace") || path.empty())
      return Status::invalid_argument("unsupported patch operation " + operation.dump());
    const auto tokens = pointer_tokens(path);
    // yaml-cpp nodes are handles: assigning through a copy writes the tree.
    YAML::Node node = root;
    // An element of the sequence node is, by its index.
    const auto index_of = [&](const std::string& token) -> std::optional<std::size_t> {
      const auto index = array_index(token);
      return index && *index < node.size() ? index : std::nullopt;
    };
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (node.IsSequence()) {
        const auto index = index_of(tokens[i]);
        if (!index) return Status::invalid_argument("patch path " + path + " does not exist");
        node.reset(node[*index]);
      } else if (node.IsMap() && node[tokens[i]]) {
        node.reset(node[tokens[i]]);
      } else {
        return Status::invalid_argument("patch path " + path + " does not exist");
      }
    }
    if (node.IsSequence() && op == "add" && tokens.back() == "-") {
      node.push_back(to_yaml(operation.at("value")));
      continue;
    }
    if (node.IsSequence() && op == "replace") {
      const auto index = index_of(tokens.back());
      if (!index) return Status::invalid_argument("patch path " + path + " does not exist");
      merge_into(node[*index], operation.at("value"));
      continue;
    }
    if (!node.IsMap() && !node.IsNull())
      return Status::invalid_argument("patch path " + path + " does not end in a map");
    if (node.IsMap() && node[tokens.back()]) {
      merge_into(node[tokens.back()], operation.at("value"));
    } else if (op == "add") {
      node[tokens.back()] = to_yaml(operation.at("value"));
    } else {
      return Status::invalid_argument("patch path " + path + " does not exist");
    }
  }
  return true;
}

}  // namespace

Result<bool> apply_patch(ManifestFile& file, std::size_t document, const json& operations) {
  ManifestDocument& target = file.documents.at(document);
  if (file.json) {
    try {
      file.json_document = file.json_document.patch(nlohmann::ordered_json::parse(operations.dump()));
    } catch (const nlohmann::json::exception& error) {
      return Status::invalid_argument(std::string("patch does not apply: ") + error.what());
    }
  } else {
    auto applied = apply_patch_to_yaml(target.node, operations);
    if (!applied) return applied;
  }
  target.object = target.object.patch(operations);
  return true;
}

std::string write_manifests(const ManifestFile& file) {
  if (file.json) return file.json_document.dump(2) + "\n";
  std::string out;
  for (std::size_t i = 0; i < file.documents.size(); ++i) {
    if (file.documents[i].node.IsNull()) continue;
    YAML::Emitter emitter;
    emit(emitter, file.documents[i].node);
    if (!out.empty()) out += "---\n";
    out += emitter.c_str();
    out += "\n";
  }
  return out;
}

}  // namespace gpusizer
