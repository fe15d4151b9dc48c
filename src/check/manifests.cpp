#include "gpusizer/check/manifests.h"

#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "gpusizer/json/json_access.h"
#include "gpusizer/json/paths.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

using nlohmann::json;

namespace {

// The position after the digits starting at pos.
std::size_t skip_digits(std::string_view text, std::size_t pos) {
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
  return pos;
}

std::size_t skip_sign(std::string_view text, std::size_t pos) {
  return pos < text.size() && (text[pos] == '-' || text[pos] == '+') ? pos + 1 : pos;
}

// The core schema's int and float forms, [-+]?[0-9]+ and
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, matched by hand:
// libstdc++'s std::regex recurses once per character, and a long number
// (100,000 digits) overflowed the stack.
bool is_int(std::string_view text) {
  const std::size_t begin = skip_sign(text, 0);
  const std::size_t end = skip_digits(text, begin);
  return end > begin && end == text.size();
}

bool is_float(std::string_view text) {
  std::size_t pos = skip_sign(text, 0);
  const bool leading_dot = pos < text.size() && text[pos] == '.';
  const std::size_t integer_end = skip_digits(text, leading_dot ? pos + 1 : pos);
  if (integer_end == (leading_dot ? pos + 1 : pos)) return false;
  pos = integer_end;
  if (!leading_dot && pos < text.size() && text[pos] == '.') pos = skip_digits(text, pos + 1);
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    const std::size_t exponent = skip_sign(text, pos + 1);
    pos = skip_digits(text, exponent);
    if (pos == exponent) return false;
  }
  return pos == text.size();
}

// YAML 1.2 core schema for plain scalars.
template <typename Json>
Json plain_scalar(const std::string& text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (is_int(text)) {
    int64_t value = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size()) return value;
    // Too large for int64: a number as JSON reads it (unsigned or double),
    // so a flow-style document --fix writes back reads the same as JSON.
  }
  if (is_float(text)) {
    try {
      return Json::parse(text[0] == '.' ? "0" + text : text[0] == '+' ? text.substr(1) : text);
    } catch (const nlohmann::json::exception&) {
      return text;
    }
  }
  return text;
}

// JSON keys are strings. A mapping or list as a key is most often an
// unquoted template (`token: {{HF_TOKEN}}`), which YAML reads as a map
// whose key is a map; yaml-cpp's own error said only "bad conversion".
void reject_collection_key(const YAML::Node& key) {
  if (!key.IsMap() && !key.IsSequence()) return;
  throw YAML::Exception(key.Mark(),
                        "a mapping or list used as a key, which no Kubernetes object has (an unquoted {{...}} "
                        "template is read as one): quote the value or fill the template in");
}

template <typename Json>
Json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
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
      for (const auto& entry : node) {
        reject_collection_key(entry.first);
        object[entry.first.as<std::string>()] = to_json<Json>(entry.second);
      }
      return object;
    }
  }
  return nullptr;
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

// yaml-cpp reads any bytes: it passes invalid UTF-8 through and decodes
// UTF-16 or UTF-32 (guessed from NUL bytes) into invalid UTF-8, so check
// would decide, and --fix rewrite, what it misread. Only UTF-8 is read, and
// in a file only YAML's printable characters. The offset of the first byte
// that does not start such a character, or npos.
std::size_t first_invalid_character(std::string_view text, bool printable_only) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = lead < 0x80           ? 1
                               : (lead >> 5) == 0x6  ? 2
                               : (lead >> 4) == 0xE  ? 3
                               : (lead >> 3) == 0x1E ? 4
                                                     : 0;
    if (length == 0 || i + length > text.size()) return i;
    char32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return i;
      c = (c << 6) | (next & 0x3F);
    }
    const char32_t shortest = length == 1 ? 0 : length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
    const bool printable = c == 0x09 || c == 0x0A || c == 0x0D || (c >= 0x20 && c <= 0x7E) || c == 0x85 ||
                           (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) ||
                           (c >= 0x10000 && c <= 0x10FFFF);
    if (c < shortest || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF || (printable_only && !printable)) return i;
    i += length;
  }
  return std::string_view::npos;
}

// A scalar's text as decoded. yaml-cpp decodes the escapes \N and \_ into
// single bytes (0x85, 0xA0) that are not UTF-8.
const std::string& decoded(const YAML::Node& scalar) {
  if (first_invalid_character(scalar.Scalar(), false) != std::string_view::npos) {
    throw YAML::ParserException(scalar.Mark(),
                                "an escape decodes to text that is not UTF-8 (write \\N as \\u0085, \\_ as \\u00a0)");
  }
  return scalar.Scalar();
}

// A copy sharing no nodes: yaml-cpp keeps an alias (*x) as the same node as
// its anchor (&x), so a patch to one template would also change every other
// place that aliases it. Aliased content is written out expanded; load_yaml
// has bounded how many nodes that makes and how deeply this recurses.
YAML::Node detached(const YAML::Node& node) {
  YAML::Node copy;
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      copy = YAML::Node(YAML::NodeType::Map);
      // yaml-cpp finds a key by comparing it with every key before it, so
      // copying a map key by key looked up took 200 s for 40,000 keys.
      // New keys are appended; a repeated one (rare) is looked up, so its
      // last value wins, as JSON readers have it.
      std::unordered_set<std::string> keys;
      for (const auto& entry : node) {
        reject_collection_key(entry.first);
        std::string key = entry.first.IsScalar() ? decoded(entry.first) : entry.first.as<std::string>();
        if (keys.insert(key).second) {
          copy.force_insert(key, detached(entry.second));
        } else {
          copy[key] = detached(entry.second);
        }
      }
      break;
    }
    case YAML::NodeType::Sequence:
      copy = YAML::Node(YAML::NodeType::Sequence);
      for (const auto& item : node) copy.push_back(detached(item));
      break;
    case YAML::NodeType::Scalar:
      // An unquoted null (`key: !tag`, `!tag ~`) is null, as to_json reads
      // it; written as a scalar it would come back quoted, as a string.
      if (node.Tag() != "!" && plain_scalar<json>(node.Scalar()).is_null()) return copy;
      copy = YAML::Node(decoded(node));
      copy.SetTag(node.Tag());
      break;
    default: return copy;
  }
  copy.SetStyle(node.Style());
  return copy;
}

// Document bodies and the line each starts on. A `---` at the start of a
// line always separates documents (block scalars are indented), so each can
// be parsed alone and an error named by its document and line. Fails once
// more than max_documents hold content, before splitting further.
Result<std::vector<std::pair<std::string, int>>> split_documents(std::string_view text, const std::string& source,
                                                                 std::size_t max_documents) {
  std::vector<std::pair<std::string, int>> documents(1, {"", 1});
  // Every document but the last holds content; the last may yet.
  auto too_many = [&] { return documents.size() > max_documents && has_content(documents.back().first); };
  const auto error = [&] {
    return Status::failure(
        ProblemCode::kTooLarge, "",
        source + ": more than " + std::to_string(max_documents) + " documents (" + kMaxDocumentsFlag + ")");
  };
  int line = 1;
  for (std::size_t offset = 0; offset < text.size(); ++line) {
    std::size_t end = text.find('\n', offset);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view content = text.substr(offset, end - offset);
    // As in YAML, "---" separates only when a space or the line end follows:
    // "---x" is content.
    if (content.starts_with("---") &&
        (content.size() == 3 || std::string_view(" \t\r\n").find(content[3]) != std::string_view::npos)) {
      if (too_many()) return error();
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
  if (too_many()) return error();
  return documents;
}

// Thrown by parse_bounded_json past a bound.
struct JsonBoundPassed {
  std::string message;
};

// JSON as nlohmann reads it, keeping key order and number forms, within
// the bounds YAML is read with: nodes (objects, arrays, keys and values)
// and depth, for JSON is YAML and costs as much to check. Throws
// nlohmann's parse errors, and JsonBoundPassed.
nlohmann::ordered_json parse_bounded_json(std::string_view text, YamlBudget& budget) {
  using Event = nlohmann::ordered_json::parse_event_t;
  const YamlBounds& bounds = budget.bounds;
  return nlohmann::ordered_json::parse(text, [&](int depth, Event event, const nlohmann::ordered_json&) {
    if (event == Event::object_end || event == Event::array_end) return true;
    if (++budget.nodes > bounds.max_nodes) throw JsonBoundPassed{too_many_nodes(bounds)};
    const bool opens = event == Event::object_start || event == Event::array_start;
    if (opens && static_cast<std::size_t>(depth) >= bounds.max_depth) throw JsonBoundPassed{too_deep(bounds)};
    return true;
  });
}

}  // namespace

json yaml_value(const YAML::Node& node) { return to_json<json>(node); }

Result<ManifestFile> read_manifests(std::string_view text, const std::string& source, const InputLimits& limits) {
  ManifestFile file;
  file.source = source;
  YamlBudget budget{limits.yaml_bounds()};
  const auto first = text.find_first_not_of(" \t\r\n");
  file.json = first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
  std::string json_error;
  if (file.json) {
    // JSON is read as JSON, so --fix writes back the same numbers and key
    // order (a YAML round trip would retype them).
    try {
      file.json_document = parse_bounded_json(text, budget);
      ManifestDocument document;
      document.object = json::parse(file.json_document.dump());
      file.documents.push_back(std::move(document));
      return file;
    } catch (const JsonBoundPassed& passed) {
      return Status::failure(ProblemCode::kTooLarge, "", source + ": document 1: " + passed.message);
    } catch (const nlohmann::json::exception& error) {
      const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&error);
      const std::size_t byte = parse ? parse->byte : 0;
      const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + std::min(byte, text.size()), '\n'));
      json_error = source + ": document 1, line " + std::to_string(line) + ": " +
                   parse_error_quoting(error.what(), kQuotedBytes);
    }
    // Not JSON, but maybe YAML in flow style ({apiVersion: v1, ...}), as
    // kubectl reads it and --fix writes a flow-style document back.
    file.json = false;
    budget.nodes = 0;  // what the JSON parser counted before it failed is read again
  }
  // Not JSON either: the JSON parser's error, which names where, over YAML's;
  // in a file with Go template actions, what to do about them (looked for
  // only when the file fails).
  auto fail = [&](ProblemCode code, std::string message) {
    if (!json_error.empty()) {
      code = ProblemCode::kSyntax;
      message = json_error;
    }
    if (code == ProblemCode::kSyntax && text.find("{{") != std::string_view::npos) {
      message +=
          "; the file holds template actions ({{ ... }}): if it is a Helm chart's template, check the rendered "
          "chart (helm template ... | gpu-sizer check -)";
    }
    return Status::failure(code, "", std::move(message));
  };
  auto bodies = split_documents(text, source, limits.max_documents);
  if (!bodies) return bodies.status();
  for (std::size_t i = 0; i < bodies.value().size(); ++i) {
    const auto& [body, first_line] = bodies.value()[i];
    auto where = [&, first = first_line](const YAML::Mark& mark) {
      return source + ": document " + std::to_string(i + 1) + ", line " +
             std::to_string(first + std::max(mark.line, 0)) + ": ";
    };
    if (const std::size_t bad = first_invalid_character(body, true); bad != std::string_view::npos) {
      YAML::Mark mark;
      mark.line = static_cast<int>(std::count(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
      const auto byte = static_cast<unsigned char>(body[bad]);
      return fail(ProblemCode::kSyntax,
                  where(mark) + "not UTF-8 text at byte 0x" + kHexDigits[byte >> 4] + kHexDigits[byte & 0xf] +
                      ": control characters, invalid UTF-8 and UTF-16 or UTF-32 files are not read");
    }
    ManifestDocument document;
    document.index = i;
    document.line = first_line;
    try {
      document.node = detached(load_yaml(body, budget));
      document.object = to_json<json>(document.node);
    } catch (const YAML::Exception& error) {
      const bool bound = error.msg == too_many_nodes(budget.bounds) || error.msg == too_deep(budget.bounds);
      return fail(bound ? ProblemCode::kTooLarge : ProblemCode::kSyntax, where(error.mark) + error.msg);
    }
    file.documents.push_back(std::move(document));
  }
  return file;
}

}  // namespace gpusizer
