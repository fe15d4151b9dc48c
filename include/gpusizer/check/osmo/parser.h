// The parser of the Jinja expression subset check evaluates: literals,
// variables, list literals, + - * / // % ~, signs, parentheses, filters
// with positional arguments, comparisons (== != < > <= >= in, not in) and
// and / or / not. Tokens (scanner.h) in, an expression tree out.
//
// What the subset does not cover (attribute access, calls, tests,
// conditional expressions, keyword arguments...) is still valid Jinja, so it is not a
// parse failure: the parser stops at it and records it as an Unsupported
// node holding what was read before it. The evaluator reaches that node in
// the order Jinja evaluates, left to right: a variable with no value before
// it is reported as such (OSMO would fail the submit on it), and only then
// the part check cannot evaluate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/check/osmo/values.h"

namespace gpusizer::osmo {

struct Expression {
  enum class Kind {
    kLiteral,      // value
    kVariable,     // name
    kList,         // operands: the items
    kSign,         // name "-" or "+"; operands[0]
    kBinary,       // name: the operator; operands[0] and [1]
    kFilter,       // name: the filter; operands[0], then its arguments
    kCompare,      // name: == != < > <= >= in, "not in"; operands[0] and [1]
    kLogic,        // name "and" or "or"; operands[0] and [1], the right one evaluated only when needed
    kNot,          // operands[0]
    kUnsupported,  // reason; operands: what was read before it (may be none)
  };
  Kind kind = Kind::kLiteral;
  Value value;
  std::string name;
  std::string reason;
  std::vector<std::unique_ptr<Expression>> operands;
};

struct ParsedExpression {
  std::unique_ptr<Expression> root;
  // The variable when the expression is one variable with filters that keep
  // its value ({{ train_cpu }}, {{ train_gpu|int }}), else empty: its
  // --set value can then be given directly.
  std::string plain_variable;
};

// REQUIRES: tokens end with one kEnd token (scan_expression's do).
ParsedExpression parse_expression(const std::vector<Token>& tokens);

}  // namespace gpusizer::osmo
