#include "gpusizer/manifests.h"

#include <algorithm>
#include <charconv>
#include <regex>

namespace gpusizer {

using nlohmann::json;

namespace {

// YAML 1.2 core schema for plain scalars.
template <typename Json>
Json plain_scalar(const std::string& text) {
  static const std::regex kInteger(R"([-+]?[0-9]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (std::regex_match(text, kInteger)) {
    int64_t value = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size()) return value;
    return text;  // too large for a number: keep the digits
  }
  if (std::regex_match(text, kFloat)) {
    try {
      return Json::parse(text[0] == '.' ? "0" + text : text[0] == '+' ? text.substr(1) : text);
    } catch (const nlohmann::json::exception&) {
      return text;
    }
  }
  return text;
}

template <typename Json>
Json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted scalars "!" and plain ones "?".
      return node.Tag() == "!" ? Json(node.Scalar()) : plain_scalar<Json>(node.Scalar());
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) array.push_back(to_json<Json>(item));
      return array;
    }
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node) object[entry.first.as<std::string>()] = to_json<Json>(entry.second);
      return object;
    }
  }
  return nullptr;
}

YAML::Node to_yaml(const json& value) {
  if (value.is_object()) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto& [key, item] : value.items()) map[key] = to_yaml(item);
    return map;
  }
  YAML::Node scalar(value.is_string() ? value.get<std::string>() : value.dump());
  scalar.SetTag("!");  // written quoted: "32" must stay a string
  return scalar;
}

std::string unescape_token(std::string token) {
  for (std::size_t i = 0; (i = token.find('~', i)) != std::string::npos; ++i) {
    token.replace(i, 2, token.compare(i, 2, "~1") == 0 ? "/" : "~");
  }
  return token;
}

std::vector<std::string> pointer_tokens(const std::string& pointer) {
  std::vector<std::string> tokens;
  std::size_t start = 1;
  while (start <= pointer.size()) {
    const std::size_t slash = pointer.find('/', start);
    tokens.push_back(unescape_token(pointer.substr(start, slash - start)));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return tokens;
}

void emit(YAML::Emitter& out, const YAML::Node& node) {
  // Flow collections ([a, b], {k: v}) stay flow, as the author wrote them.
  if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& entry : node) {
        out << YAML::Key;
        emit(out, entry.first);
        out << YAML::Value;
        emit(out, entry.second);
      }
      out << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : node) emit(out, item);
      out << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar:
      // Quoted in, quoted out: "4" must not come back as the number 4.
      if (node.Tag() == "!") {
        out << YAML::DoubleQuoted << node.Scalar();
      } else if (node.Scalar().find('\n') != std::string::npos) {
        out << YAML::Literal << node.Scalar();
      } else {
        out << node.Scalar();
      }
      break;
    default:
      out << YAML::Null;
  }
}

bool has_content(std::string_view body) {
  for (std::size_t offset = 0; offset < body.size();) {
    const std::size_t first = body.find_first_not_of(" \t\r", offset);
    if (first == std::string_view::npos) return false;
    if (body[first] != '\n' && body[first] != '#') return true;
    const std::size_t end = body.find('\n', first);
    offset = end == std::string_view::npos ? body.size() : end + 1;
  }
  return false;
}

// A copy sharing no nodes: yaml-cpp keeps an alias (*x) as the same node as
// its anchor (&x), so a patch to one template would also change every other
// place that aliases it. Aliased content is written out expanded.
YAML::Node detached(const YAML::Node& node) {
  YAML::Node copy;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      copy = YAML::Node(YAML::NodeType::Map);
      for (const auto& entry : node) copy[entry.first.as<std::string>()] = detached(entry.second);
      break;
    case YAML::NodeType::Sequence:
      copy = YAML::Node(YAML::NodeType::Sequence);
      for (const auto& item : node) copy.push_back(detached(item));
      break;
    case YAML::NodeType::Scalar:
      copy = YAML::Node(node.Scalar());
      copy.SetTag(node.Tag());
      break;
    default:
      return copy;
  }
  copy.SetStyle(node.Style());
  return copy;
}

// Document bodies and the line each starts on. A `---` at the start of a
// line always separates documents (block scalars are indented), so each can
// be parsed alone and an error named by its document and line.
std::vector<std::pair<std::string, int>> split_documents(std::string_view text) {
  std::vector<std::pair<std::string, int>> documents(1, {"", 1});
  int line = 1;
  for (std::size_t offset = 0; offset < text.size(); ++line) {
    std::size_t end = text.find('\n', offset);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view content = text.substr(offset, end - offset);
    if (content.starts_with("---")) {
      // Comments before a separator are no document of their own.
      if (has_content(documents.back().first)) {
        documents.emplace_back("", line + 1);
      } else {
        documents.back() = {"", line + 1};
      }
      const std::string_view rest = content.substr(3);  // "--- key: value" starts the next document inline
      if (rest.find_first_not_of(" \t\r\n") != std::string_view::npos) {
        documents.back().first += std::string(rest);
        documents.back().second = line;
      }
    } else {
      documents.back().first += std::string(content);
    }
    offset = end;
  }
  return documents;
}

}  // namespace

Result<ManifestFile> read_manifests(std::string_view text, const std::string& source) {
  ManifestFile file;
  file.source = source;
  const auto first = text.find_first_not_of(" \t\r\n");
  file.json = first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
  if (file.json) {
    // JSON is read as JSON, so --fix writes back the same numbers and key
    // order (a YAML round trip would retype them).
    try {
      file.json_document = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& error) {
      const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&error);
      const std::size_t byte = parse ? parse->byte : 0;
      const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + std::min(byte, text.size()), '\n'));
      return Error{source + ": document 1, line " + std::to_string(line) + ": " + error.what()};
    }
    ManifestDocument document;
    document.object = json::parse(file.json_document.dump());
    file.documents.push_back(std::move(document));
    return file;
  }
  const auto bodies = split_documents(text);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const auto& [body, first_line] = bodies[i];
    auto where = [&, first = first_line](const YAML::Mark& mark) {
      return source + ": document " + std::to_string(i + 1) + ", line " +
             std::to_string(first + std::max(mark.line, 0)) + ": ";
    };
    ManifestDocument document;
    document.index = i;
    document.line = first_line;
    try {
      document.node = detached(YAML::Load(body));
      document.object = to_json<json>(document.node);
    } catch (const YAML::Exception& error) {
      return Error{where(error.mark) + error.msg};
    }
    file.documents.push_back(std::move(document));
  }
  return file;
}

namespace {

Result<bool> apply_patch_to_yaml(YAML::Node& root, const json& operations) {
  for (const auto& operation : operations) {
    const std::string path = operation.value("path", "");
    if (operation.value("op", "") != "add" || path.empty()) return Error{"unsupported patch operation " + operation.dump()};
    const auto tokens = pointer_tokens(path);
    // yaml-cpp nodes are handles: assigning through a copy writes the tree.
    YAML::Node node = root;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (node.IsSequence()) {
        std::size_t index = 0;
        auto [end, error] = std::from_chars(tokens[i].data(), tokens[i].data() + tokens[i].size(), index);
        if (error != std::errc() || index >= node.size()) return Error{"patch path " + path + " does not exist"};
        node.reset(node[index]);
      } else if (node.IsMap() && node[tokens[i]]) {
        node.reset(node[tokens[i]]);
      } else {
        return Error{"patch path " + path + " does not exist"};
      }
    }
    if (!node.IsMap() && !node.IsNull()) return Error{"patch path " + path + " does not end in a map"};
    node[tokens.back()] = to_yaml(operation.at("value"));
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
      return Error{std::string("patch does not apply: ") + error.what()};
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
