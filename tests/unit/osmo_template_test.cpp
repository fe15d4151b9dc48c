// The structure of an OSMO template: {% if %} / {% for %} blocks nested
// over the scanner's pieces, and the statements check refuses, by line.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/template.h"

namespace gpusizer::osmo::osmo_template_test {
namespace {

using Kind = TemplateNode::Kind;

Result<std::vector<TemplateNode>> tree(std::string_view text) {
  auto pieces = scan_template(text);
  EXPECT_TRUE(pieces.ok()) << pieces.error();
  return parse_template(pieces.value());
}

TEST(ParseTemplate, IfBranchesNestAndNumberTheirBlocks) {
  auto nodes = tree(
      "a\n{% if x %}\nb\n{% for i in xs %}{{ i }}{% endfor %}\n{% elif y == 1 %}\nc\n{% else %}\nd\n{% endif %}\n");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  ASSERT_EQ(nodes.value().size(), 3u);
  const TemplateNode& block = nodes.value()[1];
  EXPECT_EQ(block.kind, Kind::kIf);
  EXPECT_EQ(block.id, 0u);
  ASSERT_EQ(block.branches.size(), 3u);
  EXPECT_EQ(block.branches[0].condition, "x");
  EXPECT_EQ(block.branches[1].condition, "y == 1");
  EXPECT_EQ(block.branches[1].line, 5);
  EXPECT_TRUE(block.branches[2].is_else);
  const TemplateNode& loop = block.branches[0].body[1];
  EXPECT_EQ(loop.kind, Kind::kFor);
  EXPECT_EQ(loop.id, 1u);
  EXPECT_EQ(loop.loop_variable, "i");
  EXPECT_EQ(loop.branches[0].condition, "xs");
  EXPECT_EQ(loop.branches[0].tag, "{% for i in xs %}");
}

TEST(ParseTemplate, MismatchedOrUnknownStatementsNameTheirLine) {
  EXPECT_EQ(tree("a\n{% endif %}").error(), "line 2: `{% endif %}` closes no open {% if %}");
  EXPECT_EQ(tree("{% for a in b %}\n{% endif %}").error(),
            "line 2: `{% endif %}` closes no open {% if %} (the block open is `{% for a in b %}`)");
  EXPECT_EQ(tree("{% else %}").error(), "line 1: `{% else %}` matches no open {% if %}");
  EXPECT_EQ(tree("{% if a %}{% else %}{% elif b %}{% endif %}").error(),
            "line 1: `{% elif b %}` matches no open {% if %}");
  EXPECT_EQ(tree("{% if a %}{% else b %}{% endif %}").error(), "line 1: `{% else b %}` takes no condition");
  EXPECT_EQ(tree("{% if %}{% endif %}").error(), "line 1: `{% if %}` needs an expression after if");
  EXPECT_EQ(tree("x\n\n{% for a, b in c %}{% endfor %}").error(),
            "line 3: `{% for a, b in c %}`: check reads only `for NAME in EXPRESSION` (one loop variable)");
  EXPECT_EQ(tree("{% if a %}\n{% for x in y %}\n{% endif %}").error(),
            "line 3: `{% endif %}` closes no open {% if %} (the block open is `{% for x in y %}`)");
  EXPECT_TRUE(tree("\n{% for x in y %}")
                  .error()
                  .starts_with("line 2: `{% for x in y %}` is never closed with "
                               "{% endfor %}"));
  EXPECT_TRUE(
      tree("{% macro m() %}{% endmacro %}").error().starts_with("line 1: `{% macro m() %}` check renders only"));
}

}  // namespace
}  // namespace gpusizer::osmo::osmo_template_test
