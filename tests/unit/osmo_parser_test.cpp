// The OSMO expression parser: the tree of the subset, and unsupported
// constructs kept as nodes that hold what was read before them.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/parser.h"

namespace gpusizer::osmo {
namespace {

using Kind = Expression::Kind;

ParsedExpression parse(std::string_view text) {
  auto tokens = scan_expression(text);
  EXPECT_TRUE(tokens.ok()) << tokens.error();
  return parse_expression(tokens.value());
}

// The tree as text: (op a b), [a b], |filter(x), !reason(before).
std::string show(const Expression& e) {
  switch (e.kind) {
    case Kind::kLiteral: return py_repr(e.value);
    case Kind::kVariable: return e.name;
    case Kind::kList: {
      std::string out = "[";
      for (const auto& item : e.operands) out += (out.size() > 1 ? " " : "") + show(*item);
      return out + "]";
    }
    case Kind::kSign: return e.name + show(*e.operands[0]);
    case Kind::kBinary: return "(" + e.name + " " + show(*e.operands[0]) + " " + show(*e.operands[1]) + ")";
    case Kind::kFilter: return "|" + e.name + "(" + show(*e.operands[0]) + ")";
    case Kind::kUnsupported: return "!" + e.reason + "(" + (e.operands.empty() ? "" : show(*e.operands[0])) + ")";
  }
  return "?";
}

std::string tree(std::string_view text) { return show(*parse(text).root); }

TEST(ParseExpression, PrecedenceSignsParenthesesListsAndFilters) {
  EXPECT_EQ(tree("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(tree("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(tree("-x|abs"), "|abs(-x)");
  EXPECT_EQ(tree("[64, gpu|int * 48]|max"), "|max([64 (* |int(gpu) 48)])");
  EXPECT_EQ(tree("a // 2 % 3 - 1"), "(- (% (// a 2) 3) 1)");
  EXPECT_EQ(tree("'x' + \"y\""), "(+ 'x' 'y')");
  EXPECT_EQ(tree("true"), "True");
  EXPECT_EQ(tree("None"), "None");
}

TEST(ParseExpression, UnsupportedPartsKeepWhatCameBefore) {
  EXPECT_EQ(tree("a + b.c + d"), "(+ a !attribute access, subscripts and calls are not supported(b))");
  EXPECT_EQ(tree("x|round(2)"), "!filter arguments (|round(...)) are not supported(x)");
  EXPECT_EQ(tree("a if b else c"), "!`if` is not supported(a)");
  EXPECT_EQ(tree("not a"), "!`not` is not supported()");
  EXPECT_EQ(tree(""), "!an empty expression()");
  EXPECT_EQ(tree("(a"), "!`` is not supported(a)");
  EXPECT_EQ(tree("[a b]"), "!`b` is not supported([a])");
}

TEST(ParseExpression, APlainVariableIsOneNameWithValueKeepingFilters) {
  EXPECT_EQ(parse("train_cpu").plain_variable, "train_cpu");
  EXPECT_EQ(parse(" train_gpu|int ").plain_variable, "train_gpu");
  EXPECT_EQ(parse("m|string|trim").plain_variable, "m");
  EXPECT_EQ(parse("m|float").plain_variable, "");
  EXPECT_EQ(parse("m * 2").plain_variable, "");
  EXPECT_EQ(parse("true").plain_variable, "");
  EXPECT_EQ(parse("4").plain_variable, "");
}

}  // namespace
}  // namespace gpusizer::osmo
