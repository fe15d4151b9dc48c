#include "gpusizer/sizing/policy_fields.h"

#include <algorithm>

#include "gpusizer/util/strings.h"
#include "gpusizer/util/yaml_keys.h"

namespace gpusizer::policy_fields {

[[noreturn]] void fail(ProblemCode code, const std::string& path, const YAML::Node& node, const std::string& problem) {
  std::string where = path;
  if (node.Mark().line >= 0) where += " (line " + std::to_string(node.Mark().line + 1) + ")";
  throw FieldError{code, path, where + ": " + problem};
}

void check_unique_keys(const YAML::Node& map, const std::string& path) {
  if (auto repeated = repeated_key(map)) {
    fail(ProblemCode::kDuplicateField, path.empty() ? repeated->Scalar() : path + "." + repeated->Scalar(), *repeated,
         "appears more than once");
  }
}

void check_keys(const YAML::Node& map, const std::string& path, std::initializer_list<std::string_view> known) {
  check_keys(map, path, std::span<const std::string_view>(known.begin(), known.size()));
}

void check_keys(const YAML::Node& map, const std::string& path, std::span<const std::string_view> known) {
  check_unique_keys(map, path);
  for (const auto& entry : map) {
    const auto key = entry.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::vector<std::string> names(known.begin(), known.end());
      fail(ProblemCode::kUnknownField, path.empty() ? key : path + "." + key, entry.first,
           "unknown field (known: " + join(names, ", ") + ")");
    }
  }
}

void require_map(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) fail(ProblemCode::kWrongType, path, node, "must be a mapping");
}

std::string read_string(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar() || node.Scalar().empty())
    fail(ProblemCode::kWrongType, path, node, "must be a non-empty string");
  return node.Scalar();
}

int64_t read_int(const YAML::Node& node, const std::string& path, int64_t minimum, int64_t maximum) {
  const std::string text = read_string(node, path);
  auto value = read_whole(text, minimum, maximum);
  if (!value) fail(ProblemCode::kBadValue, path, node, value.error() + ", found \"" + text + "\"");
  return value.value();
}

Quantity read_quantity(const YAML::Node& node, const std::string& path, Zero zero) {
  auto parsed = Quantity::parse(read_string(node, path));
  if (!parsed) fail(ProblemCode::kBadValue, path, node, parsed.error());
  if (parsed.value().is_negative())
    fail(ProblemCode::kBadValue, path, node, "must not be negative, found " + node.Scalar());
  if (zero == Zero::kRefused && parsed.value().is_zero()) {
    fail(ProblemCode::kBadValue, path, node, "must be greater than zero, found " + node.Scalar());
  }
  return parsed.value();
}

Milli read_decimal(const YAML::Node& node, const std::string& path, Milli minimum, Milli maximum) {
  const std::string text = read_string(node, path);
  auto value = gpusizer::read_decimal(text, 3, minimum, maximum);
  if (!value) fail(ProblemCode::kBadValue, path, node, value.error() + ", found \"" + text + "\"");
  return value.value();
}

bool read_bool(const YAML::Node& node, const std::string& path) {
  const std::string text = node.IsScalar() ? node.Scalar() : "";
  if (text == "true") return true;
  if (text == "false") return false;
  fail(ProblemCode::kBadValue, path, node, "must be true or false, found \"" + text + "\"");
}

std::vector<std::string> read_string_list(const YAML::Node& node, const std::string& path) {
  if (!node.IsSequence()) fail(ProblemCode::kWrongType, path, node, "must be a list of strings");
  std::vector<std::string> items;
  for (std::size_t i = 0; i < node.size(); ++i) {
    items.push_back(read_string(node[i], path + "[" + std::to_string(i) + "]"));
  }
  return items;
}

std::string read_dns_label(const YAML::Node& node, const std::string& path) {
  std::string text = read_string(node, path);
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  const bool valid = text.size() <= 63 && alnum(text.front()) && alnum(text.back()) &&
                     std::all_of(text.begin(), text.end(), [&](char c) { return alnum(c) || c == '-'; });
  if (!valid)
    fail(ProblemCode::kBadValue, path, node,
         "must be a DNS-1123 label (lowercase letters, digits, '-'), found \"" + text + "\"");
  return text;
}

CheckAction read_action(const YAML::Node& node, const std::string& path) {
  const std::string text = read_string(node, path);
  if (text == "warn") return CheckAction::kWarn;
  if (text == "deny") return CheckAction::kDeny;
  fail(ProblemCode::kBadValue, path, node, "must be warn or deny, found \"" + text + "\"");
}

void check_profile_names(const Policy& policy, const YAML::Node& root, std::initializer_list<const char*> keys,
                         const std::vector<std::string>& names) {
  std::string path;
  // Where the file wrote the list, if it did; reset() rebinds, where
  // yaml-cpp's operator= would write into the tree.
  YAML::Node given;
  given.reset(root);
  for (const char* key : keys) {
    path += path.empty() ? key : std::string(".") + key;
    given.reset(given && given.IsMap() ? given[key] : YAML::Node());
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (policy.find_profile(names[i])) continue;
    fail(ProblemCode::kUnknownName, path + "[" + std::to_string(i) + "]", given ? given[i] : root,
         "names unknown profile \"" + names[i] + "\" (profiles: " + policy.profile_names() + ")");
  }
}

}  // namespace gpusizer::policy_fields
