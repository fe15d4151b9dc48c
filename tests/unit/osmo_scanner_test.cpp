// The OSMO template scanner: a template cut into pieces with their lines,
// an expression cut into tokens, and the typed failures of each.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/scanner.h"

namespace gpusizer::osmo::osmo_scanner_test {
namespace {

using Kind = TemplatePiece::Kind;

std::vector<TemplatePiece> pieces(std::string_view text) {
  auto scanned = scan_template(text);
  EXPECT_TRUE(scanned.ok()) << scanned.error();
  return scanned.ok() ? scanned.value() : std::vector<TemplatePiece>{};
}

TEST(ScanTemplate, CutsTextExpressionsKeptTokensAndComments) {
  const auto p = pieces("cpu: {{ train_cpu }}\nout: {{output}}/x {# note\nmore #}\n{{- a -}}");
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[0].kind, Kind::kText);
  EXPECT_EQ(p[0].text, "cpu: ");
  EXPECT_EQ(p[1].kind, Kind::kExpression);
  EXPECT_EQ(p[1].text, "{{ train_cpu }}");
  EXPECT_EQ(p[1].inner, " train_cpu ");
  EXPECT_EQ(p[3].kind, Kind::kKept) << "OSMO fills {{output}} in later";
  EXPECT_EQ(p[3].line, 2);
  EXPECT_EQ(p[5].kind, Kind::kComment);
  EXPECT_EQ(p[7].kind, Kind::kExpression);
  EXPECT_EQ(p[7].inner, " a ") << "whitespace-control marks are not part of the expression";
  EXPECT_EQ(p[7].line, 4);
  std::string whole;
  for (const auto& piece : p) whole += piece.text;
  EXPECT_EQ(whole, "cpu: {{ train_cpu }}\nout: {{output}}/x {# note\nmore #}\n{{- a -}}");
}

TEST(ScanTemplate, SpecialTokensOnlyWhenWrittenWithoutSpaces) {
  EXPECT_EQ(pieces("{{input:0}}")[0].kind, Kind::kKept);
  EXPECT_EQ(pieces("{{host:train}}")[0].kind, Kind::kKept);
  EXPECT_EQ(pieces("{{ output }}")[0].kind, Kind::kExpression);
  EXPECT_EQ(pieces("{{input:}}")[0].kind, Kind::kExpression);
}

TEST(ScanTemplate, BracesInsideStringsDoNotCloseAnExpression) {
  const auto p = pieces("{{ '}}' + x }}");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].inner, " '}}' + x ");
}

TEST(ScanTemplate, WhatOsmoCannotRenderIsAnErrorNamingTheLine) {
  EXPECT_EQ(scan_template("a\n{{ x").error(),
            "line 2: `{{` is never closed with `}}`; OSMO fails to render this spec too");
  EXPECT_EQ(scan_template("a\n{{ x").problem().code, ProblemCode::kSyntax);
  EXPECT_TRUE(
      scan_template("a\nb {# x").error().starts_with("line 2: `{#` opens a Jinja comment that is never closed"));
  EXPECT_TRUE(scan_template("a\n  {% if x \nb")
                  .error()
                  .starts_with("line 2: `{%` opens a Jinja statement that is never closed with `%}`"));
}

TEST(ScanTemplate, StatementsArePiecesWithTheirInside) {
  const auto p = pieces("a\n    {%- if x|lower in [\"1\"] -%}\nb\n{% endif %}");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[1].kind, Kind::kStatement);
  EXPECT_EQ(p[1].inner, " if x|lower in [\"1\"] ") << "whitespace-control marks are not part of it";
  EXPECT_EQ(p[1].line, 2);
  EXPECT_EQ(p[3].kind, Kind::kStatement);
  EXPECT_EQ(p[3].line, 4);
}

TEST(ScanTemplate, ALoneBraceIsText) {
  const auto p = pieces("a { b } c");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, Kind::kText);
}

TEST(ScanExpression, TokensAsJinjaReadsThem) {
  auto tokens = scan_expression("[64, gpu|int * 48]|max // 2 ** 1.5e2 'a\\'b' 1_000");
  ASSERT_TRUE(tokens.ok()) << tokens.error();
  std::vector<std::string> texts;
  for (const Token& t : tokens.value()) texts.push_back(t.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"[", "64", ",", "gpu", "|", "int", "*", "48", "]", "|", "max", "//", "2",
                                             "**", "1.5e2", "a'b", "1_000", ""}));
  EXPECT_EQ(tokens.value()[1].i, 64);
  EXPECT_EQ(tokens.value()[14].kind, Token::Kind::kFloat);
  EXPECT_DOUBLE_EQ(tokens.value()[14].f, 150.0);
  EXPECT_EQ(tokens.value()[16].i, 1000);
  EXPECT_EQ(tokens.value().back().kind, Token::Kind::kEnd);
}

TEST(ScanExpression, UnterminatedStringsAndHugeNumbersCannotBeEvaluated) {
  EXPECT_EQ(scan_expression("'abc").error(), "an unterminated string");
  EXPECT_EQ(scan_expression("'abc").problem().code, ProblemCode::kSyntax);
  EXPECT_EQ(scan_expression("99999999999999999999").error(), "the number 99999999999999999999 is too large");
  EXPECT_EQ(scan_expression("99999999999999999999").problem().code, ProblemCode::kTooLarge);
  EXPECT_TRUE(scan_expression("").ok());
}

}  // namespace
}  // namespace gpusizer::osmo::osmo_scanner_test
