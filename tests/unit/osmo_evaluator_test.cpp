// The OSMO expression evaluator: Python and Jinja arithmetic and filters,
// and which failure comes first when an expression has more than one.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/evaluator.h"

namespace gpusizer::osmo::osmo_evaluator_test {
namespace {

using Outcome = Evaluated::Outcome;

Variables variables() {
  Variables v;
  v["gpu"] = {Value::integer(4), "4"};
  v["text"] = {Value::str("12"), "12"};
  v["ratio"] = {Value::real(1.5), "1.5"};
  v["flag"] = {Value::boolean(true), "True"};
  return v;
}

std::string rendered(std::string_view expression) {
  const EvaluatedText result = evaluate_text(expression, variables());
  EXPECT_EQ(result.evaluated.outcome, Outcome::kValue) << expression << ": " << result.evaluated.detail;
  return py_str(result.evaluated.value);
}

Evaluated failure(std::string_view expression) { return evaluate_text(expression, variables()).evaluated; }

TEST(Evaluate, ConditionsAsNvidiasSpecsWriteThem) {
  const std::string gate = "flag|string|lower not in [\"true\", \"1\", \"yes\"]";
  EXPECT_EQ(rendered(gate), "False") << "a YAML true is the text True, lowered";
  Variables v = variables();
  for (const char* text : {"false", "0", "no", "False"}) {
    v["flag"] = {Value::str(text), text};
    EXPECT_TRUE(truthy(evaluate_text(gate, v).evaluated.value)) << text;
  }
  v["flag"] = {Value::integer(1), "1"};
  EXPECT_FALSE(truthy(evaluate_text(gate, v).evaluated.value)) << "--set flag=1 is the int 1";
  EXPECT_EQ(rendered("gpu == 4 and text == '12'"), "True");
  EXPECT_EQ(rendered("gpu == 4.0"), "True");
  EXPECT_EQ(rendered("text == 12"), "False") << "text and a number are never equal";
  EXPECT_EQ(rendered("gpu != 4 or 'x'"), "x") << "or gives the operand that decided";
  EXPECT_EQ(rendered("not []"), "True");
  EXPECT_EQ(rendered("'2' in text"), "True");
  EXPECT_EQ(rendered("gpu >= 2 and ratio < 2"), "True");
  EXPECT_EQ(rendered("'b' > 'a'"), "True");
}

TEST(Evaluate, ShortCircuitSkipsWhatJinjaSkips) {
  EXPECT_EQ(rendered("gpu == 4 or unset"), "True");
  EXPECT_EQ(rendered("gpu == 3 and unset"), "False");
  EXPECT_EQ(failure("gpu == 4 and unset").outcome, Outcome::kUndefined);
}

TEST(Evaluate, FiltersWithArguments) {
  EXPECT_EQ(rendered("unset|default('x')"), "x");
  EXPECT_EQ(rendered("unset|d(2) * gpu"), "8");
  EXPECT_EQ(rendered("gpu|default(1)"), "4");
  EXPECT_EQ(rendered("''|default('x', true)"), "x");
  EXPECT_EQ(rendered("'a-b-c'|replace('-', '_')"), "a_b_c");
  EXPECT_EQ(rendered("'a-b-c'|replace('-', '_', 1)"), "a_b-c");
  EXPECT_EQ(rendered("[1, 'x']|join(',')"), "1,x");
  EXPECT_EQ(rendered("'abc'|int(7)"), "7");
  EXPECT_EQ(rendered("' Yes '|trim|upper"), "YES");
  EXPECT_EQ(rendered("[3, 1]|first ~ [3, 1]|last"), "31");
  EXPECT_EQ(failure("gpu|replace('a')").detail, "|replace needs the text to replace and its replacement");
  EXPECT_EQ(failure("gpu|lower(1)").detail, "|lower takes no arguments, found 1");
  EXPECT_EQ(failure("gpu in 4").outcome, Outcome::kUnevaluable);
  EXPECT_EQ(failure("[1] < 2").outcome, Outcome::kUnevaluable);
}

TEST(Evaluate, ArithmeticAsPythonDoesIt) {
  EXPECT_EQ(rendered("[64, gpu|int * 48]|max"), "192");
  EXPECT_EQ(rendered("7 // 2"), "3");
  EXPECT_EQ(rendered("-7 // 2"), "-4");
  EXPECT_EQ(rendered("-7 % 3"), "2");
  EXPECT_EQ(rendered("7 % -3"), "-2");
  EXPECT_EQ(rendered("7 / 2"), "3.5");
  EXPECT_EQ(rendered("gpu * ratio"), "6.0");
  EXPECT_EQ(rendered("flag + 1"), "2");
  EXPECT_EQ(rendered("'a' + 'b'"), "ab");
  EXPECT_EQ(rendered("[1] + [2]"), "[1, 2]");
}

TEST(Evaluate, FiltersAsJinjaDoesThem) {
  EXPECT_EQ(rendered("text|int + 1"), "13");
  EXPECT_EQ(rendered("'4.5'|int"), "4");
  EXPECT_EQ(rendered("'four'|int"), "0");
  EXPECT_EQ(rendered("gpu|float"), "4.0");
  EXPECT_EQ(rendered("'Ab'|lower"), "ab");
  EXPECT_EQ(rendered("' x '|trim"), "x");
  EXPECT_EQ(rendered("-3|abs"), "3");
  EXPECT_EQ(rendered("[1, 5, 2]|min"), "1");
  EXPECT_EQ(rendered("['b', 'A']|max"), "b");
  EXPECT_EQ(rendered("[1, 2]|length"), "2");
}

TEST(Evaluate, WhatJinjaDoesDifferentlyIsNotGuessed) {
  EXPECT_EQ(failure("text * 2").detail,
            "it multiplies the text \"12\" by 2, which Jinja repeats as text; convert with |int first");
  EXPECT_EQ(failure("gpu / 0").detail, "division by zero");
  EXPECT_EQ(failure("9223372036854775807 + 1").detail, "a number too large");
  EXPECT_EQ(failure("[1, 'a']|max").detail, "|max of a list holding the text \"a\" (convert it with |int)");
  EXPECT_EQ(failure("gpu|round").detail, "the filter |round is not supported");
  EXPECT_EQ(failure("-text").detail, "a sign before the text \"12\"");
  EXPECT_EQ(failure("'open").detail, "an unterminated string");
  for (const char* e : {"text * 2", "gpu|round", "'open"}) EXPECT_EQ(failure(e).outcome, Outcome::kUnevaluable) << e;
}

TEST(Evaluate, LeftToRightTheFirstFailureWins) {
  // A variable with no value before an unsupported part: OSMO fails the
  // submit on it, so that is what check reports.
  EXPECT_EQ(failure("missing + gpu.attr").outcome, Outcome::kUndefined);
  EXPECT_EQ(failure("missing + gpu.attr").detail, "missing");
  EXPECT_EQ(failure("missing.attr").outcome, Outcome::kUndefined) << "the name is read before its attribute";
  EXPECT_EQ(failure("[missing x]").outcome, Outcome::kUndefined);
  // After it, the unsupported part ends the evaluation first.
  EXPECT_EQ(failure("gpu.attr + missing").outcome, Outcome::kUnevaluable);
  EXPECT_EQ(failure("gpu.attr + missing").detail, "attribute access, subscripts and calls are not supported");
  // A text that does not scan is never evaluated.
  EXPECT_EQ(failure("missing + 'open").outcome, Outcome::kUnevaluable);
}

}  // namespace
}  // namespace gpusizer::osmo::osmo_evaluator_test
