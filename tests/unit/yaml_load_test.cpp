// load_yaml (yaml_load.h): the nodes a YAML document expands to, aliases
// counted as all they repeat, and how deep they nest, counted before the
// document is built.
#include "gpusizer/util/yaml_load.h"

#include <string>

#include <gtest/gtest.h>

namespace gpusizer::yaml_load_test {
namespace {

YamlBudget budget(std::size_t max_nodes, std::size_t max_depth = 100) {
  return YamlBudget{YamlBounds{max_nodes, max_depth, "--max-yaml-nodes"}};
}

// The error load_yaml throws, as "line L: message", or "" when it loads.
std::string error_of(const std::string& text, YamlBudget& counted) {
  try {
    load_yaml(text, counted);
  } catch (const YAML::ParserException& error) {
    return "line " + std::to_string(error.mark.line + 1) + ": " + error.msg;
  }
  return "";
}

// l0 is one scalar, each level a list of nine aliases of the level below.
std::string laughs(int levels) {
  std::string text = "l0: &l0 lol\n";
  for (int level = 1; level <= levels; ++level) {
    const std::string below = "*l" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [" + below;
    for (int i = 1; i < 9; ++i) text += ", " + below;
    text += "]\n";
  }
  return text;
}

TEST(LoadYaml, CountsEveryMappingSequenceScalarAndKey) {
  YamlBudget counted = budget(100);
  const YAML::Node node = load_yaml("a: [1, 2]\nb: ~\n", counted);
  EXPECT_EQ(node["a"][1].as<int>(), 2);
  // The mapping, two keys, the list and its two items, the null.
  EXPECT_EQ(counted.nodes, 7u);
}

TEST(LoadYaml, AnAliasCountsAsEveryNodeItRepeatsEachTimeItIsUsed) {
  YamlBudget counted = budget(100);
  load_yaml("a: &x [1, 2]\nb: *x\nc: [*x, *x]\n", counted);
  // The mapping; a, b, c; x (3 nodes) written once and aliased three times;
  // c's list.
  EXPECT_EQ(counted.nodes, 1u + 3u + 4u * 3u + 1u);
}

TEST(LoadYaml, PastMaxNodesFailsAtTheAliasNamingTheBoundAndItsFlag) {
  YamlBudget exact = budget(17);
  EXPECT_EQ(error_of("a: &x [1, 2]\nb: *x\nc: [*x, *x]\n", exact), "");
  YamlBudget under = budget(16);
  EXPECT_EQ(error_of("a: &x [1, 2]\nb: *x\nc: [*x, *x]\n", under),
            "line 3: holds more than 16 YAML nodes, an alias counting as every node it repeats (--max-yaml-nodes)");
}

TEST(LoadYaml, BillionLaughsIsCountedNotExpanded) {
  // l9 alone expands to 9^9 scalars; counting stops at the first alias of
  // l7 (line 8), the level that passes a million.
  YamlBudget counted = budget(1'000'000);
  EXPECT_EQ(error_of(laughs(9), counted),
            "line 8: holds more than 1000000 YAML nodes, an alias counting as every node it repeats "
            "(--max-yaml-nodes)");
}

TEST(LoadYaml, DocumentsSharingABudgetShareItsBound) {
  YamlBudget counted = budget(5);
  load_yaml("[1, 2]", counted);
  EXPECT_EQ(counted.nodes, 3u);
  EXPECT_EQ(error_of("[1, 2]", counted),
            "line 1: holds more than 5 YAML nodes, an alias counting as every node it "
            "repeats (--max-yaml-nodes)");
}

TEST(LoadYaml, NestingPastMaxDepthFailsAliasesExpanded) {
  YamlBudget shallow = budget(100, 3);
  EXPECT_EQ(error_of("[[[1]]]", shallow), "");
  EXPECT_EQ(error_of("[[[[1]]]]", shallow), "line 1: nests deeper than 3 levels");
  // x nests 2 levels; aliased inside 2 more it nests 4.
  YamlBudget aliased = budget(100, 3);
  EXPECT_EQ(error_of("a: &x [[1]]\nb: [*x]\n", aliased), "line 2: nests deeper than 3 levels");
}

TEST(LoadYaml, AnAliasInsideItsOwnAnchorIsACycle) {
  YamlBudget counted = budget(100);
  EXPECT_EQ(error_of("a: &x\n  b: *x\n", counted),
            "line 2: the alias *x is inside the node its anchor &x names, so it repeats without end");
}

TEST(LoadYaml, AnAnchorNamedAgainIsTheLatestForItsAliases) {
  YamlBudget counted = budget(100);
  load_yaml("a: &x [1, 2, 3]\nb: &x 1\nc: *x\n", counted);
  // The mapping, 3 keys, a's list of 3, b, and c's alias of b: one node.
  EXPECT_EQ(counted.nodes, 1u + 3u + 4u + 1u + 1u);
}

TEST(LoadYaml, ParseErrorsAreYamlCppsOwn) {
  YamlBudget counted = budget(100);
  EXPECT_EQ(error_of("a: [1, 2", counted), "line 1: end of sequence flow not found");
}

}  // namespace
}  // namespace gpusizer::yaml_load_test
