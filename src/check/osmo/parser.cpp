#include "gpusizer/check/osmo/parser.h"

#include <algorithm>
#include <set>
#include <utility>

#include "gpusizer/util/contract.h"

namespace gpusizer::osmo {

namespace {

using Node = std::unique_ptr<Expression>;

Node node(Expression::Kind kind) {
  auto expression = std::make_unique<Expression>();
  expression->kind = kind;
  return expression;
}

Node literal(Value value) {
  Node out = node(Expression::Kind::kLiteral);
  out->value = std::move(value);
  return out;
}

Node with_operands(Expression::Kind kind, std::string name, std::vector<Node> operands) {
  Node out = node(kind);
  out->name = std::move(name);
  out->operands = std::move(operands);
  return out;
}

bool is_keyword(const std::string& name) {
  static const std::set<std::string> kKeywords = {"true", "True", "false", "False", "none", "None", "and",
                                                  "or",   "not",  "in",    "is",    "if",   "else"};
  return kKeywords.count(name) > 0;
}

// Recursive descent in Jinja's precedence: or, and, not, comparisons (==,
// !=, <, >, <=, >=, in, not in), sum, concatenation (~), product, unary
// (sign or primary, then filters), primary. After an Unsupported node
// nothing more is read: `stopped_` unwinds every level, which keeps what it
// had read.
class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  Node parse() {
    Node v = disjunction();
    if (!stopped_ && peek().kind != Token::Kind::kEnd) return unsupported(std::move(v), peek());
    return v;
  }

 private:
  const Token& peek(std::size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  bool at_op(std::string_view op) const { return peek().kind == Token::Kind::kOp && peek().text == op; }
  bool at_word(std::string_view word, std::size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::kName && peek(ahead).text == word;
  }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  Node unsupported(Node before, std::string reason) {
    stopped_ = true;
    Node out = node(Expression::Kind::kUnsupported);
    out->reason = std::move(reason);
    if (before) out->operands.push_back(std::move(before));
    return out;
  }
  Node unsupported(Node before, const Token& token) {
    if (token.kind == Token::Kind::kOp && (token.text == "." || token.text == "[" || token.text == "(")) {
      return unsupported(std::move(before), "attribute access, subscripts and calls are not supported");
    }
    return unsupported(std::move(before), "`" + token.text + "` is not supported");
  }

  Node binary(Expression::Kind kind, const std::string& op, Node left, Node right) {
    std::vector<Node> operands;
    operands.push_back(std::move(left));
    operands.push_back(std::move(right));
    return with_operands(kind, op, std::move(operands));
  }
  Node binary(const std::string& op, Node left, Node right) {
    return binary(Expression::Kind::kBinary, op, std::move(left), std::move(right));
  }

  Node disjunction() { return logic("or", &Parser::conjunction); }
  Node conjunction() { return logic("and", &Parser::negation); }

  // One left-associative level of `or` or `and` over the next level.
  Node logic(const std::string& word, Node (Parser::*operand)()) {
    Node v = (this->*operand)();
    while (!stopped_ && at_word(word)) {
      next();
      Node right = (this->*operand)();
      v = binary(Expression::Kind::kLogic, word, std::move(v), std::move(right));
    }
    return v;
  }

  Node negation() {
    if (!at_word("not")) return comparison();
    next();
    std::vector<Node> operand;
    operand.push_back(negation());
    return with_operands(Expression::Kind::kNot, "not", std::move(operand));
  }

  // The comparison operator at the cursor ("not in" is two tokens), or "".
  std::string comparison_operator() const {
    static const std::set<std::string> kOps = {"==", "!=", "<", ">", "<=", ">="};
    if (peek().kind == Token::Kind::kOp && kOps.count(peek().text)) return peek().text;
    if (at_word("in")) return "in";
    if (at_word("not") && at_word("in", 1)) return "not in";
    return "";
  }

  // Jinja chains comparisons as Python does: a < b < c is a < b and b < c.
  // A chain is rare in templates, so only its first link is read here and a
  // second one is not supported rather than evaluated with b twice.
  Node comparison() {
    Node v = sum();
    const std::string op = comparison_operator();
    if (stopped_ || op.empty()) return v;
    pos_ += op == "not in" ? 2 : 1;
    Node right = sum();
    v = binary(Expression::Kind::kCompare, op, std::move(v), std::move(right));
    if (!stopped_ && !comparison_operator().empty()) {
      return unsupported(std::move(v), "chained comparisons are not supported");
    }
    return v;
  }

  Node sum() {
    Node v = concatenation();
    while (!stopped_ && (at_op("+") || at_op("-"))) {
      const std::string op = next().text;
      Node right = concatenation();
      v = binary(op, std::move(v), std::move(right));
    }
    return v;
  }

  Node concatenation() {
    Node v = product();
    while (!stopped_ && at_op("~")) {
      next();
      Node right = product();
      v = binary("~", std::move(v), std::move(right));
    }
    return v;
  }

  Node product() {
    Node v = unary(true);
    while (!stopped_ && (at_op("*") || at_op("/") || at_op("//") || at_op("%"))) {
      const std::string op = next().text;
      Node right = unary(true);
      v = binary(op, std::move(v), std::move(right));
    }
    return v;
  }

  Node unary(bool with_filters) {
    Node v;
    if (at_op("-") || at_op("+")) {
      const std::string sign = next().text;
      std::vector<Node> operand;
      operand.push_back(unary(false));
      v = with_operands(Expression::Kind::kSign, sign, std::move(operand));
      if (stopped_) return v;
    } else {
      v = primary();
      if (stopped_) return v;
      if (at_op(".") || at_op("[") || at_op("(")) return unsupported(std::move(v), peek());
    }
    while (with_filters && at_op("|")) {
      next();
      if (peek().kind != Token::Kind::kName) return unsupported(std::move(v), peek());
      const std::string name = next().text;
      std::vector<Node> operands;
      operands.push_back(std::move(v));
      if (at_op("(")) {
        next();
        if (!arguments(operands)) return with_operands(Expression::Kind::kFilter, name, std::move(operands));
      }
      v = with_operands(Expression::Kind::kFilter, name, std::move(operands));
    }
    return v;
  }

  // A filter's positional arguments after its `(`, through the `)`.
  // False when it stopped: the last operand is then the Unsupported node.
  bool arguments(std::vector<Node>& operands) {
    while (!at_op(")")) {
      if (peek().kind == Token::Kind::kName && peek(1).kind == Token::Kind::kOp && peek(1).text == "=") {
        operands.push_back(unsupported(nullptr, "keyword arguments to filters are not supported"));
        return false;
      }
      operands.push_back(disjunction());
      if (stopped_) return false;
      if (at_op(",")) {
        next();
      } else if (!at_op(")")) {
        operands.push_back(unsupported(nullptr, peek()));
        return false;
      }
    }
    next();
    return true;
  }

  Node primary() {
    const Token& token = next();
    switch (token.kind) {
      case Token::Kind::kInt: return literal(Value::integer(token.i));
      case Token::Kind::kFloat: return literal(Value::real(token.f));
      case Token::Kind::kString: return literal(Value::str(token.text));
      case Token::Kind::kName: {
        if (token.text == "true" || token.text == "True") return literal(Value::boolean(true));
        if (token.text == "false" || token.text == "False") return literal(Value::boolean(false));
        if (token.text == "none" || token.text == "None") return literal(Value::none());
        if (is_keyword(token.text)) return unsupported(nullptr, token);
        Node variable = node(Expression::Kind::kVariable);
        variable->name = token.text;
        return variable;
      }
      case Token::Kind::kOp:
        if (token.text == "(") return group();
        if (token.text == "[") return list();
        return unsupported(nullptr, token);
      case Token::Kind::kEnd: return unsupported(nullptr, "an empty expression");
    }
    return unsupported(nullptr, token);
  }

  Node group() {
    Node inner = disjunction();
    if (stopped_) return inner;
    if (!at_op(")")) return unsupported(std::move(inner), peek());
    next();
    return inner;
  }

  Node list() {
    std::vector<Node> items;
    while (!at_op("]")) {
      items.push_back(disjunction());
      if (stopped_) return with_operands(Expression::Kind::kList, "", std::move(items));
      if (at_op(",")) {
        next();
      } else if (!at_op("]")) {
        return unsupported(with_operands(Expression::Kind::kList, "", std::move(items)), peek());
      }
    }
    next();
    return with_operands(Expression::Kind::kList, "", std::move(items));
  }

  const std::vector<Token>& tokens_;
  std::size_t pos_ = 0;
  bool stopped_ = false;
};

std::string plain_variable(const std::vector<Token>& tokens) {
  if (tokens.empty() || tokens[0].kind != Token::Kind::kName || is_keyword(tokens[0].text)) return "";
  std::size_t p = 1;
  while (p + 1 < tokens.size() && tokens[p].kind == Token::Kind::kOp && tokens[p].text == "|" &&
         tokens[p + 1].kind == Token::Kind::kName &&
         (tokens[p + 1].text == "int" || tokens[p + 1].text == "string" || tokens[p + 1].text == "trim")) {
    p += 2;
  }
  return tokens[p].kind == Token::Kind::kEnd ? tokens[0].text : "";
}

}  // namespace

ParsedExpression parse_expression(const std::vector<Token>& tokens) {
  GPU_SIZER_REQUIRE(!tokens.empty() && tokens.back().kind == Token::Kind::kEnd);
  return {Parser(tokens).parse(), plain_variable(tokens)};
}

}  // namespace gpusizer::osmo
