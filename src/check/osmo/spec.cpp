#include "gpusizer/check/osmo/spec.h"

#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/util/yaml_keys.h"

namespace gpusizer::osmo {

int SpecLines::line_of(const YAML::Node& node) const {
  if (!node.IsDefined()) return 0;
  const int mark = node.Mark().line;
  if (mark < 0) return 0;
  const auto index = static_cast<std::size_t>(mark);
  return index < rendered->file_line.size() ? rendered->file_line[index] : mark + 1;
}

void SpecLines::fail(const YAML::Node& node, const std::string& problem) const {
  const int line = line_of(node);
  throw SpecError{at_line(line) + problem, line};
}

std::string SpecLines::scalar_text(const YAML::Node& node, const std::string& path) const {
  if (!node.IsScalar()) fail(node, path + " must be a single value");
  return node.Scalar();
}

void SpecLines::check_unique_keys(const YAML::Node& map, const std::string& path) const {
  for (const auto& entry : map) scalar_text(entry.first, path + " key");
  if (auto repeated = repeated_key(map)) {
    fail(*repeated, path + "." + repeated->Scalar() + " appears more than once (OSMO would silently use the last one)");
  }
}

YAML::Node nth_value(const YAML::Node& map, std::size_t index) {
  if (!map || !map.IsMap() || index >= map.size()) return YAML::Node();
  std::size_t i = 0;
  for (const auto& entry : map) {
    if (i++ == index) return entry.second;
  }
  return YAML::Node();
}

}  // namespace gpusizer::osmo
