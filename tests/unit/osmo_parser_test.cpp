// The OSMO expression parser: the tree of the subset, and unsupported
// constructs kept as nodes that hold what was read before them.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/parser.h"

namespace gpusizer::osmo::osmo_parser_test {
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
    case Kind::kFilter: {
      std::string out = "|" + e.name + "(" + show(*e.operands[0]);
      for (std::size_t a = 1; a < e.operands.size(); ++a) out += " " + show(*e.operands[a]);
      return out + ")";
    }
    case Kind::kCompare:
    case Kind::kLogic: return "(" + e.name + " " + show(*e.operands[0]) + " " + show(*e.operands[1]) + ")";
    case Kind::kNot: return "(not " + show(*e.operands[0]) + ")";
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
  EXPECT_EQ(tree("x|default(y=1)"), "|default(x !keyword arguments to filters are not supported())");
  EXPECT_EQ(tree("a if b else c"), "!`if` is not supported(a)");
  EXPECT_EQ(tree("a < b < c"), "!chained comparisons are not supported((< a b))");
  EXPECT_EQ(tree("x is defined"), "!`is` is not supported(x)");
  EXPECT_EQ(tree(""), "!an empty expression()");
  EXPECT_EQ(tree("(a"), "!`` is not supported(a)");
  EXPECT_EQ(tree("[a b]"), "!`b` is not supported([a])");
}

TEST(ParseExpression, ComparisonsAndLogicInJinjaPrecedence) {
  // NVIDIA's DIG specs gate whole task groups on this.
  EXPECT_EQ(tree("use_ckpt|string|lower not in [\"true\", \"1\", \"yes\"]"),
            "(not in |lower(|string(use_ckpt)) ['true' '1' 'yes'])");
  EXPECT_EQ(tree("usecase == \"glass\" and step == \"14000\""), "(and (== usecase 'glass') (== step '14000'))");
  EXPECT_EQ(tree("a or b and not c"), "(or a (and b (not c)))");
  EXPECT_EQ(tree("not a in b"), "(not (in a b))");
  EXPECT_EQ(tree("a + 1 >= b * 2"), "(>= (+ a 1) (* b 2))");
  EXPECT_EQ(tree("'a' ~ b + 1"), "(+ (~ 'a' b) 1)");
  EXPECT_EQ(tree("(a or b) and c"), "(and (or a b) c)");
}

TEST(ParseExpression, FiltersTakePositionalArguments) {
  EXPECT_EQ(tree("x|default('none')|upper"), "|upper(|default(x 'none'))");
  EXPECT_EQ(tree("x|replace('-', '_', 1)"), "|replace(x '-' '_' 1)");
  EXPECT_EQ(tree("items|join(', ')"), "|join(items ', ')");
  EXPECT_EQ(tree("x|int()"), "|int(x)");
  EXPECT_EQ(tree("x|round(2"), "|round(x 2 !`` is not supported())");
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
}  // namespace gpusizer::osmo::osmo_parser_test
