// Loading YAML someone else wrote, with bounds. yaml-cpp loads an alias
// (*x) as the very node its anchor (&x) names; whoever then walks the tree
// (copying it, converting it to JSON, printing it) repeats that node at
// every alias, so 500 bytes of aliases of aliases ("billion laughs") walk
// to 490 million nodes. As hardened YAML loaders do, the nodes a document
// expands to are counted, here from the parser's events before any node
// is built, so a file past a bound costs one parse, never its expansion.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace gpusizer {

struct YamlBounds {
  // Mappings, sequences and scalars (keys too), an alias counted as every
  // node it repeats, each time it is used.
  std::size_t max_nodes = 0;
  // Mappings and sequences nested in one another, aliases expanded.
  std::size_t max_depth = 0;
  // The flag that raises max_nodes, named in its error; empty: none.
  std::string_view nodes_flag;
};

// What the documents of one input have used of their bounds: they share
// max_nodes, so a file of many documents expands to max_nodes at most.
struct YamlBudget {
  YamlBounds bounds;
  std::size_t nodes = 0;  // counted so far
};

// YAML::Load(text): its first document, once the nodes it expands to are
// counted into budget.nodes. Throws YAML::ParserException at the node that
// passes budget.bounds ("holds more than 2000000 YAML nodes, an alias
// counting as the nodes it repeats (--max-yaml-nodes)", "nests deeper than
// 400 levels"), at an alias inside the node its own anchor names (a cycle,
// which expands without end), and whatever YAML::Load throws.
YAML::Node load_yaml(std::string_view text, YamlBudget& budget);

// The errors past max_nodes and max_depth, for readers of JSON that count
// the same bounds.
std::string too_many_nodes(const YamlBounds& bounds);
std::string too_deep(const YamlBounds& bounds);

}  // namespace gpusizer
