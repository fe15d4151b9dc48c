// Rendering an OSMO spec: sections, variables, and the two renderings the
// checker reads (as OSMO parses it, and with markers).
#include <gtest/gtest.h>

#include "gpusizer/check/input_limits.h"
#include "gpusizer/check/osmo/renderer.h"

namespace gpusizer::osmo::osmo_renderer_test {
namespace {

Variables with(std::initializer_list<std::pair<const char*, int64_t>> values) {
  Variables v;
  for (const auto& [name, value] : values) v[name] = {Value::integer(value), std::to_string(value)};
  return v;
}

TEST(RenderSections, SplitAsOsmoSplitsThem) {
  const auto lines = split_lines("# comment\nworkflow:\n  name: x\ndefault-values:\n  a: 1\nversion: 2");
  const auto sections = find_sections(lines);
  ASSERT_EQ(sections.size(), 3u);
  EXPECT_EQ(sections[0].key, "workflow");
  EXPECT_EQ(sections[0].first_line, 1u);
  EXPECT_EQ(sections[0].end_line, 3u);
  EXPECT_EQ(padded_section(lines, sections[1]), "\n\n\ndefault-values:\n  a: 1\n");
}

TEST(TemplateVariables, SetValuesOverrideDefaults) {
  const auto lines = split_lines("default-values:\n  gpu: 1\n  name: train");
  const auto sections = find_sections(lines);
  auto variables =
      template_variables(lines, &sections[0], {{"gpu", "4"}, {"extra", "x y"}}, InputLimits{}.yaml_bounds());
  ASSERT_TRUE(variables.ok()) << variables.error();
  EXPECT_EQ(variables.value().at("gpu").value.i, 4);
  EXPECT_EQ(variables.value().at("gpu").text, "4");
  EXPECT_EQ(variables.value().at("name").value.s, "train");
  EXPECT_EQ(variables.value().at("extra").value.s, "x y");
}

TEST(TemplateVariables, DefaultValuesMustBeAMapping) {
  const auto lines = split_lines("default-values:\n  - 1");
  const auto sections = find_sections(lines);
  EXPECT_EQ(template_variables(lines, &sections[0], {}, InputLimits{}.yaml_bounds()).error(),
            "line 1: default-values must be a mapping of variable names to values");
}

TEST(TemplateVariables, DefaultValuesAreReadWithinTheBounds) {
  // from_yaml writes each alias out: x is 3 nodes, b's list of three x 10;
  // with the two mappings and three keys, 18.
  const auto lines = split_lines("default-values:\n  a: &x [1, 2]\n  b: [*x, *x, *x]");
  const auto sections = find_sections(lines);
  EXPECT_TRUE(template_variables(lines, &sections[0], {}, YamlBounds{18, 10, "--max-yaml-nodes"}).ok());
  EXPECT_EQ(template_variables(lines, &sections[0], {}, YamlBounds{17, 10, "--max-yaml-nodes"}).error(),
            "line 3: YAML error in default-values: holds more than 17 YAML nodes, an alias counting as every node "
            "it repeats (--max-yaml-nodes)");
}

TEST(Render, SubstitutesAndKeepsAMarkedCopy) {
  auto rendered = render("gpu: {{ gpu }}\nmemory: {{ [64, gpu * 48]|max }}Gi\nout: {{output}}", with({{"gpu", 4}}));
  ASSERT_TRUE(rendered.ok()) << rendered.error();
  EXPECT_EQ(rendered.value().text, "gpu: 4\nmemory: 192Gi\nout: {{output}}");
  EXPECT_EQ(rendered.value().marked, "gpu: zzgpusizerexpr0zz\nmemory: zzgpusizerexpr1zzGi\nout: {{output}}");
  ASSERT_EQ(rendered.value().subs.size(), 2u);
  EXPECT_EQ(rendered.value().subs[0].plain_variable, "gpu");
  EXPECT_EQ(rendered.value().subs[1].line, 2);
  EXPECT_TRUE(rendered.value().subs[1].evaluated);
}

TEST(Render, RenderedLinesMapToFileLines) {
  auto rendered = render("a: {# two\nlines #}1\nb: {{ 'x\\ny' }}\nc: 3", {});
  ASSERT_TRUE(rendered.ok()) << rendered.error();
  EXPECT_EQ(rendered.value().text, "a: \n1\nb: x\ny\nc: 3");
  EXPECT_EQ(rendered.value().file_line, (std::vector<int>{1, 2, 3, 3, 4}));
}

TEST(Render, WhatCannotBeEvaluatedIsMarkedNotFatal) {
  auto rendered = render("cpu: {{ gpu.count }}", with({{"gpu", 4}}));
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(rendered.value().text, "cpu: gpu-sizer-unevaluated-expression");
  EXPECT_FALSE(rendered.value().subs[0].evaluated);
  EXPECT_EQ(rendered.value().subs[0].problem, "attribute access, subscripts and calls are not supported");
}

TEST(Render, VariablesWithNoValueAreCollectedNotFatal) {
  auto rendered = render("a: {{ x }}\nb: {{ y }}\nc: {{ x }}", {});
  ASSERT_TRUE(rendered.ok()) << rendered.error();
  ASSERT_EQ(rendered.value().missing.size(), 3u);
  EXPECT_EQ(rendered.value().missing[1].name, "y");
  EXPECT_EQ(rendered.value().missing[1].line, 2);
  EXPECT_EQ(rendered.value().subs[0].undefined, "x");
  EXPECT_EQ(missing_variables_message(rendered.value().missing),
            "variables x (line 1), y (line 2) have no value, and OSMO fails the submit: add it to default-values or "
            "pass --set x=VALUE");
  EXPECT_EQ(missing_variables_message({{"x", 4}}, false),
            "variable x (line 4) has no value: sizing does not read it, so check went on, but OSMO fails the submit "
            "without it (add to default-values or pass --set x=VALUE; --strict makes this an error)");
  EXPECT_NE(missing_variables_message(render("out: {{ output }}", {}).value().missing)
                .find("only when written without spaces"),
            std::string::npos);
}

TEST(Render, IfBranchesAreChosenByTheirConditions) {
  const std::string text =
      "a: 1\n{% if n > 2 %}\nb: big\n{% elif n > 1 %}\nb: mid\n{% else %}\nb: small\n{% endif %}\nc: {{ n }}";
  auto big = render(text, with({{"n", 3}}));
  ASSERT_TRUE(big.ok()) << big.error();
  EXPECT_EQ(big.value().text, "a: 1\n\nb: big\n\nc: 3");
  EXPECT_EQ(big.value().file_line, (std::vector<int>{1, 2, 3, 4, 9})) << "lines keep their place in the file";
  EXPECT_EQ(render(text, with({{"n", 2}})).value().text, "a: 1\n\nb: mid\n\nc: 2");
  EXPECT_EQ(render(text, with({{"n", 0}})).value().text, "a: 1\n\nb: small\n\nc: 0");
  EXPECT_TRUE(render(text, with({{"n", 0}})).value().undecided.empty());
}

TEST(Render, BranchesLeftOutAreNotedAndCanBeForced) {
  const std::string text = "{% if a %}x{% elif b %}\ny{% else %}\nz{% endif %}";
  auto rendered = render(text, with({{"a", 0}, {"b", 1}}));
  ASSERT_TRUE(rendered.ok()) << rendered.error();
  EXPECT_EQ(rendered.value().text, "\ny");
  const std::vector<Skipped>& skipped = rendered.value().skipped;
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].branch, 0u);
  EXPECT_EQ(skipped[0].tag, "{% if a %}") << "left out by its own condition";
  EXPECT_EQ(skipped[1].branch, 2u);
  EXPECT_EQ(skipped[1].tag, "{% elif b %}") << "left out by the branch taken";
  EXPECT_EQ(skipped[1].line, 1);
  auto forced = render(text, with({{"a", 0}, {"b", 1}}), {}, {{skipped[1].id, 2}});
  ASSERT_TRUE(forced.ok()) << forced.error();
  EXPECT_EQ(forced.value().text, "\nz");
  auto none = render("{% if a %}x{% endif %}", with({{"a", 0}}));
  ASSERT_EQ(none.value().skipped.size(), 1u);
  EXPECT_EQ(none.value().skipped[0].tag, "{% if a %}");
}

TEST(Render, ForRepeatsItsBodyPerItem) {
  Variables v;
  v["names"] = {Value::list({Value::str("a"), Value::str("b")}), "['a', 'b']"};
  auto rendered = render("x:\n{% for n in names %}\n  - {{ n }}\n{% endfor %}\ny: {{ n|default(0) }}", v);
  ASSERT_TRUE(rendered.ok()) << rendered.error();
  EXPECT_EQ(rendered.value().text, "x:\n\n  - a\n\n  - b\n\ny: 0") << "the loop variable ends with the loop";
  EXPECT_EQ(rendered.value().file_line, (std::vector<int>{1, 2, 3, 4, 3, 4, 5})) << "each pass reads the body's lines";
}

TEST(Render, AnUnknownConditionIsNotedAndItsAlternativesCanBeChosen) {
  const std::string text = "{% if flag %}\na: 1\n{% elif other %}\na: 2\n{% endif %}\n{% for x in xs %}b\n{% endfor %}";
  auto first = render(text, {});
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(first.value().undecided.size(), 2u);
  const Undecided& gate = first.value().undecided[0];
  EXPECT_EQ(gate.line, 1);
  EXPECT_EQ(gate.tag, "{% if flag %}");
  EXPECT_EQ(gate.variable, "flag");
  EXPECT_EQ(gate.problem, "variable flag has no value");
  EXPECT_EQ(gate.alternatives, 3u) << "the if branch, the elif branch, or nothing";
  EXPECT_EQ(first.value().undecided[1].alternatives, 2u) << "a loop over unknown items: none, or its body once";
  EXPECT_TRUE(first.value().missing.empty()) << "a condition's variable is the block's, not a {{ }}'s";
  EXPECT_EQ(first.value().text, "\na: 1\n\n");
  EXPECT_EQ(render(text, {}, {{gate.id, 1}}).value().text, "\na: 2\n\n");
  EXPECT_EQ(render(text, {}, {{gate.id, 2}, {first.value().undecided[1].id, 1}}).value().text, "\nb\n");
}

TEST(Render, LoopsThatRenderTooMuchAreAnErrorNotAnExhaustedMachine) {
  Variables v;
  std::vector<Value> items(200, Value::integer(1));
  v["xs"] = {Value::list(items), ""};
  const std::string text =
      "a\n{% for a in xs %}{% for b in xs %}{% for c in xs %}{% for d in xs %}"
      "0123456789{% endfor %}{% endfor %}{% endfor %}{% endfor %}";
  EXPECT_TRUE(render(text, v).error().ends_with("the loop renders the spec past 64 MiB; check stops there"))
      << render(text, v).error();
}

TEST(Render, StatementErrorsNameTheLine) {
  EXPECT_EQ(render("a\n{% set x = 1 %}", {}).error(),
            "line 2: `{% set x = 1 %}` check renders only {% if %} / {% elif %} / {% else %} / {% endif %} and "
            "{% for %} / {% endfor %} statements; check a rendered copy of the spec instead");
  EXPECT_TRUE(
      render("{% if a %}\nx\n", {}).error().starts_with("line 1: `{% if a %}` is never closed with {% endif %}"));
}

}  // namespace
}  // namespace gpusizer::osmo::osmo_renderer_test
