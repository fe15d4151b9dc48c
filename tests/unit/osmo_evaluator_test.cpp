// The OSMO expression evaluator: Python and Jinja arithmetic and filters,
// and which failure comes first when an expression has more than one.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/evaluator.h"

namespace gpusizer::osmo {
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
}  // namespace gpusizer::osmo
