// Rendering an OSMO spec: sections, variables, and the two renderings the
// checker reads (as OSMO parses it, and with markers).
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/renderer.h"

namespace gpusizer::osmo {
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
  auto variables = template_variables(lines, &sections[0], {{"gpu", "4"}, {"extra", "x y"}});
  ASSERT_TRUE(variables.ok()) << variables.error();
  EXPECT_EQ(variables.value().at("gpu").value.i, 4);
  EXPECT_EQ(variables.value().at("gpu").text, "4");
  EXPECT_EQ(variables.value().at("name").value.s, "train");
  EXPECT_EQ(variables.value().at("extra").value.s, "x y");
}

TEST(TemplateVariables, DefaultValuesMustBeAMapping) {
  const auto lines = split_lines("default-values:\n  - 1");
  const auto sections = find_sections(lines);
  EXPECT_EQ(template_variables(lines, &sections[0], {}).error(),
            "line 1: default-values must be a mapping of variable names to values");
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

TEST(Render, VariablesWithNoValueAreNamedTogether) {
  EXPECT_EQ(render("a: {{ x }}\nb: {{ y }}\nc: {{ x }}", {}).error(),
            "variables x (line 1), y (line 2) have no value, and OSMO fails the submit: add it to default-values or "
            "pass --set x=VALUE");
  EXPECT_NE(render("out: {{ output }}", {}).error().find("only when written without spaces"), std::string::npos);
}

}  // namespace
}  // namespace gpusizer::osmo
