// Reading the rendered workflow spec's YAML: where a node is in the file,
// and the failures that name it. Used inside the checker and the workflow
// reader; each catches SpecError at its entry and returns a Status, so no
// exception leaves them.
#pragma once

#include <cstddef>
#include <string>

#include <yaml-cpp/yaml.h>

#include "gpusizer/check/osmo/renderer.h"

namespace gpusizer::osmo {

// A spec check refuses, with its message ("line 12: ...").
struct SpecError {
  std::string message;
  int line = 0;  // the file line it names, when it names one
};

struct SpecLines {
  const Rendered* rendered = nullptr;

  // The 1-based file line of a node of the rendered text; 0 when unknown.
  int line_of(const YAML::Node& node) const;
  // Throws SpecError naming the node's line.
  [[noreturn]] void fail(const YAML::Node& node, const std::string& problem) const;
  // A scalar's text; fails naming `path` for anything else.
  std::string scalar_text(const YAML::Node& node, const std::string& path) const;
  // Fails on keys that are not scalars or appear twice.
  void check_unique_keys(const YAML::Node& map, const std::string& path) const;
};

// The value at position `index` of a mapping, or an undefined node:
// resources and their fields are matched by position between the rendered
// and the marked document, since keys may themselves be templated.
YAML::Node nth_value(const YAML::Node& map, std::size_t index);

}  // namespace gpusizer::osmo
