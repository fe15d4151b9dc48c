// yaml-cpp keeps a mapping's repeated keys and its lookups return the first
// one, so `mode: audit` followed by `mode: enforce` would silently run in
// audit mode. Readers of hand-written YAML reject repeated keys with this.
#pragma once

#include <optional>
#include <set>
#include <string>

#include <yaml-cpp/yaml.h>

namespace gpusizer {

// The second occurrence of the first key that appears twice in `map`, or
// nothing. Keys are compared as text.
inline std::optional<YAML::Node> repeated_key(const YAML::Node& map) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && !seen.insert(entry.first.Scalar()).second) return entry.first;
  }
  return std::nullopt;
}

}  // namespace gpusizer
