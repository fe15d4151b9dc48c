#include "gpusizer/check/osmo/parser.h"

#include <set>
#include <utility>

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

// Recursive descent in Jinja's precedence: sum, product, unary (sign or
// primary, then filters), primary. After an Unsupported node nothing more is
// read: `stopped_` unwinds every level, which keeps what it had read.
class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  Node parse() {
    Node v = sum();
    if (!stopped_ && peek().kind != Token::Kind::kEnd) return unsupported(std::move(v), peek());
    return v;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  bool at_op(std::string_view op) const { return peek().kind == Token::Kind::kOp && peek().text == op; }
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

  Node binary(const std::string& op, Node left, Node right) {
    std::vector<Node> operands;
    operands.push_back(std::move(left));
    operands.push_back(std::move(right));
    return with_operands(Expression::Kind::kBinary, op, std::move(operands));
  }

  Node sum() {
    Node v = product();
    while (!stopped_ && (at_op("+") || at_op("-"))) {
      const std::string op = next().text;
      Node right = product();
      v = binary(op, std::move(v), std::move(right));
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
      if (at_op("(")) return unsupported(std::move(v), "filter arguments (|" + name + "(...)) are not supported");
      std::vector<Node> operand;
      operand.push_back(std::move(v));
      v = with_operands(Expression::Kind::kFilter, name, std::move(operand));
    }
    return v;
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
    Node inner = sum();
    if (stopped_) return inner;
    if (!at_op(")")) return unsupported(std::move(inner), peek());
    next();
    return inner;
  }

  Node list() {
    std::vector<Node> items;
    while (!at_op("]")) {
      items.push_back(sum());
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
  return {Parser(tokens).parse(), plain_variable(tokens)};
}

}  // namespace gpusizer::osmo
