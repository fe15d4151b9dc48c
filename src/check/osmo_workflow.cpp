#include "gpusizer/check/osmo_workflow.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "gpusizer/util/strings.h"
#include "gpusizer/util/yaml_keys.h"

namespace gpusizer {
namespace {

// ---------------------------------------------------------------------------
// Top-level sections, split the way OSMO's parse_workflow_spec does: a line
// matching ^[A-Za-z][A-Za-z0-9_-]*: starts a section; text before the first
// one is dropped.

struct Section {
  std::string key;
  std::size_t first_line = 0;  // 0-based, the `key:` line
  std::size_t end_line = 0;    // one past the last line
};

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::optional<std::string> section_key(std::string_view line) {
  if (line.empty() || !std::isalpha(static_cast<unsigned char>(line[0]))) return std::nullopt;
  std::size_t i = 1;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' ||
                             line[i] == '-')) {
    ++i;
  }
  if (i < line.size() && line[i] == ':') return std::string(line.substr(0, i));
  return std::nullopt;
}

std::vector<Section> find_sections(const std::vector<std::string_view>& lines) {
  std::vector<Section> sections;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (auto key = section_key(lines[i])) {
      if (!sections.empty()) sections.back().end_line = i;
      sections.push_back(Section{*key, i, lines.size()});
    }
  }
  return sections;
}

// The section's lines in place, every other line empty: YAML marks and
// offsets then count lines of the whole file.
std::string padded_section(const std::vector<std::string_view>& lines, const Section& section) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += '\n';
    if (i >= section.first_line && i < section.end_line) out += lines[i];
  }
  return out;
}

std::string at_line(int line) { return line > 0 ? "line " + std::to_string(line) + ": " : ""; }

// ---------------------------------------------------------------------------
// Values as Python and Jinja see them.

struct Value {
  enum class Type { kNone, kBool, kInt, kFloat, kStr, kList, kDict };
  Type type = Type::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<Value> items;  // kList: the items; kDict: the values
  std::vector<Value> keys;   // kDict: the keys, in order

  static Value none() { return {}; }
  static Value boolean(bool v) { Value x; x.type = Type::kBool; x.b = v; return x; }
  static Value integer(int64_t v) { Value x; x.type = Type::kInt; x.i = v; return x; }
  static Value real(double v) { Value x; x.type = Type::kFloat; x.f = v; return x; }
  static Value str(std::string v) { Value x; x.type = Type::kStr; x.s = std::move(v); return x; }
};

// Python repr of a float: shortest round-trip digits, fixed notation for
// exponents -4..15 (always with a fractional part), scientific otherwise.
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::scientific);
  if (ec != std::errc()) return std::to_string(v);
  std::string sci(buffer, end);  // "-1.5e+00"
  const bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  const auto e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::atoi(sci.c_str() + e + 1);
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else {
      const auto whole = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() <= whole) {
        out = digits + std::string(whole - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, whole) + "." + digits.substr(whole);
      }
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int magnitude = std::abs(exponent);
    out += std::string("e") + (exponent < 0 ? "-" : "+") + (magnitude < 10 ? "0" : "") +
           std::to_string(magnitude);
  }
  return (negative ? "-" : "") + out;
}

std::string py_str(const Value& v);

std::string py_repr(const Value& v) {
  if (v.type != Value::Type::kStr) return py_str(v);
  const bool double_quotes = v.s.find('\'') != std::string::npos && v.s.find('"') == std::string::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (char c : v.s) {
    if (c == '\\') out += "\\\\";
    else if (c == quote) out += std::string("\\") + c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out + quote;
}

// Python str(): what Jinja writes into the rendered text.
std::string py_str(const Value& v) {
  switch (v.type) {
    case Value::Type::kNone: return "None";
    case Value::Type::kBool: return v.b ? "True" : "False";
    case Value::Type::kInt: return std::to_string(v.i);
    case Value::Type::kFloat: return py_float(v.f);
    case Value::Type::kStr: return v.s;
    case Value::Type::kList: {
      std::vector<std::string> parts;
      for (const Value& item : v.items) parts.push_back(py_repr(item));
      return "[" + join(parts, ", ") + "]";
    }
    case Value::Type::kDict: {
      std::vector<std::string> parts;
      for (std::size_t k = 0; k < v.keys.size(); ++k) parts.push_back(py_repr(v.keys[k]) + ": " + py_repr(v.items[k]));
      return "{" + join(parts, ", ") + "}";
    }
  }
  return "";
}

// Python int(text): optional sign, digits with single underscores between.
std::optional<int64_t> python_int(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() == '_' || text.back() == '_') return std::nullopt;
  std::string digits;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_') {
      if (text[i - 1] == '_') return std::nullopt;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    digits += c;
  }
  if (negative) digits.insert(0, "-");
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;  // too big
  return value;
}

// Python float(text): decimal or scientific notation, inf, nan.
std::optional<double> python_float(std::string_view text) {
  const std::string t(trim(text));
  if (t.empty() || t.find_first_of("xXpP_") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return value;
}

// A --set value as `osmo workflow submit` types it: int, float, or string.
Value typed_set_value(const std::string& text) {
  if (auto i = python_int(text)) return Value::integer(*i);
  if (auto f = python_float(text)) return Value::real(*f);
  return Value::str(text);
}

// A plain YAML scalar as PyYAML's safe_load (YAML 1.1) resolves the common
// forms: null, bool, decimal int, float with a dot; anything else a string.
Value resolve_plain(const std::string& s) {
  static const std::set<std::string> kNull = {"", "~", "null", "Null", "NULL"};
  static const std::set<std::string> kTrue = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
  static const std::set<std::string> kFalse = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
  if (kNull.count(s)) return Value::none();
  if (kTrue.count(s)) return Value::boolean(true);
  if (kFalse.count(s)) return Value::boolean(false);
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  const bool int_like = !body.empty() && std::isdigit(static_cast<unsigned char>(body[0])) &&
                        (body[0] != '0' || body.size() == 1) &&
                        body.find_first_not_of("0123456789_") == std::string_view::npos;
  if (int_like) {
    if (auto i = python_int(s)) return Value::integer(*i);
    return Value::str(s);
  }
  if (s == ".inf" || s == "+.inf" || s == ".Inf" || s == ".INF") return Value::real(HUGE_VAL);
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return Value::real(-HUGE_VAL);
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return Value::real(NAN);
  if (body.find('.') != std::string_view::npos &&
      body.find_first_not_of("0123456789_.eE+-") == std::string_view::npos &&
      std::count(body.begin(), body.end(), '.') == 1) {
    std::string cleaned = s;
    cleaned.erase(std::remove(cleaned.begin(), cleaned.end(), '_'), cleaned.end());
    if (auto f = python_float(cleaned)) return Value::real(*f);
  }
  return Value::str(s);
}

Value from_yaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted and block scalars "!", plain ones "?".
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return Value::str(node.Scalar());
      return resolve_plain(node.Scalar());
    case YAML::NodeType::Sequence: {
      Value list;
      list.type = Value::Type::kList;
      for (const auto& item : node) list.items.push_back(from_yaml(item));
      return list;
    }
    case YAML::NodeType::Map: {
      Value dict;
      dict.type = Value::Type::kDict;
      for (const auto& entry : node) {
        dict.keys.push_back(from_yaml(entry.first));
        dict.items.push_back(from_yaml(entry.second));
      }
      return dict;
    }
    default:
      return Value::none();
  }
}

// ---------------------------------------------------------------------------
// The Jinja expression subset (see the header).

struct Variable {
  Value value;
  std::string text;  // as the user wrote it on --set, or str() of the default
};
using Variables = std::map<std::string, Variable, std::less<>>;

// Thrown inside the evaluator only.
struct Unevaluable {
  std::string reason;
};
struct Undefined {
  std::string name;
};

struct Token {
  enum class Kind { kName, kInt, kFloat, kString, kOp, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;
  int64_t i = 0;
  double f = 0;
};

std::vector<Token> tokenize(std::string_view expr) {
  std::vector<Token> tokens;
  std::size_t p = 0;
  while (p < expr.size()) {
    const char c = expr[p];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++p;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t q = p;
      while (q < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[q])) || expr[q] == '_')) ++q;
      tokens.push_back({Token::Kind::kName, std::string(expr.substr(p, q - p))});
      p = q;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t q = p;
      while (q < expr.size() && (std::isdigit(static_cast<unsigned char>(expr[q])) || expr[q] == '_')) ++q;
      bool is_float = false;
      if (q + 1 < expr.size() && expr[q] == '.' && std::isdigit(static_cast<unsigned char>(expr[q + 1]))) {
        is_float = true;
        ++q;
        while (q < expr.size() && (std::isdigit(static_cast<unsigned char>(expr[q])) || expr[q] == '_')) ++q;
      }
      if (q < expr.size() && (expr[q] == 'e' || expr[q] == 'E')) {
        std::size_t r = q + 1;
        if (r < expr.size() && (expr[r] == '+' || expr[r] == '-')) ++r;
        if (r < expr.size() && std::isdigit(static_cast<unsigned char>(expr[r]))) {
          is_float = true;
          q = r;
          while (q < expr.size() && std::isdigit(static_cast<unsigned char>(expr[q]))) ++q;
        }
      }
      Token token{is_float ? Token::Kind::kFloat : Token::Kind::kInt, std::string(expr.substr(p, q - p))};
      std::string cleaned = token.text;
      cleaned.erase(std::remove(cleaned.begin(), cleaned.end(), '_'), cleaned.end());
      if (is_float) {
        token.f = std::strtod(cleaned.c_str(), nullptr);
      } else {
        auto i = python_int(cleaned);
        if (!i) throw Unevaluable{"the number " + token.text + " is too large"};
        token.i = *i;
      }
      tokens.push_back(token);
      p = q;
    } else if (c == '\'' || c == '"') {
      std::string text;
      std::size_t q = p + 1;
      for (; q < expr.size() && expr[q] != c; ++q) {
        if (expr[q] == '\\' && q + 1 < expr.size()) {
          const char e = expr[++q];
          text += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        } else {
          text += expr[q];
        }
      }
      if (q >= expr.size()) throw Unevaluable{"an unterminated string"};
      tokens.push_back({Token::Kind::kString, text});
      p = q + 1;
    } else {
      static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
      std::string op(1, c);
      for (const char* two : kTwo) {
        if (expr.substr(p, 2) == two) op = two;
      }
      tokens.push_back({Token::Kind::kOp, op});
      p += op.size();
    }
  }
  tokens.push_back({Token::Kind::kEnd, ""});
  return tokens;
}

bool is_number(const Value& v) {
  return v.type == Value::Type::kInt || v.type == Value::Type::kFloat || v.type == Value::Type::kBool;
}
double as_double(const Value& v) {
  return v.type == Value::Type::kFloat ? v.f : v.type == Value::Type::kBool ? (v.b ? 1 : 0) : static_cast<double>(v.i);
}
int64_t as_int(const Value& v) { return v.type == Value::Type::kBool ? (v.b ? 1 : 0) : v.i; }

std::string describe(const Value& v) {
  switch (v.type) {
    case Value::Type::kNone: return "none";
    case Value::Type::kBool: return "a boolean";
    case Value::Type::kInt: return "the number " + py_str(v);
    case Value::Type::kFloat: return "the number " + py_str(v);
    case Value::Type::kStr: return "the text \"" + v.s + "\"";
    case Value::Type::kList: return "a list";
    case Value::Type::kDict: return "a mapping";
  }
  return "a value";
}

class Evaluator {
 public:
  Evaluator(std::string_view expr, const Variables& vars) : tokens_(tokenize(expr)), vars_(vars) {}

  Value evaluate() {
    Value v = sum();
    if (peek().kind != Token::Kind::kEnd) unsupported(peek());
    return v;
  }

  // The variable when the expression is one variable with value-preserving
  // filters ({{ train_cpu }}, {{ train_gpu|int }}), else empty.
  std::string plain_variable() const {
    if (tokens_.empty() || tokens_[0].kind != Token::Kind::kName || is_keyword(tokens_[0].text)) return "";
    std::size_t p = 1;
    while (p + 1 < tokens_.size() && tokens_[p].kind == Token::Kind::kOp && tokens_[p].text == "|" &&
           tokens_[p + 1].kind == Token::Kind::kName &&
           (tokens_[p + 1].text == "int" || tokens_[p + 1].text == "string" || tokens_[p + 1].text == "trim")) {
      p += 2;
    }
    return tokens_[p].kind == Token::Kind::kEnd ? tokens_[0].text : "";
  }

 private:
  static bool is_keyword(const std::string& name) {
    static const std::set<std::string> kKeywords = {"true", "True", "false", "False", "none", "None",
                                                    "and", "or", "not", "in", "is", "if", "else"};
    return kKeywords.count(name) > 0;
  }

  const Token& peek() const { return tokens_[pos_]; }
  bool at_op(std::string_view op) const { return peek().kind == Token::Kind::kOp && peek().text == op; }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] static void unsupported(const Token& token) {
    if (token.kind == Token::Kind::kOp && (token.text == "." || token.text == "[" || token.text == "("))
      throw Unevaluable{"attribute access, subscripts and calls are not supported"};
    throw Unevaluable{"`" + token.text + "` is not supported"};
  }

  Value sum() {
    Value v = product();
    while (at_op("+") || at_op("-")) {
      const std::string op = next().text;
      v = arithmetic(op, v, product());
    }
    return v;
  }

  Value product() {
    Value v = unary(true);
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const std::string op = next().text;
      v = arithmetic(op, v, unary(true));
    }
    return v;
  }

  Value unary(bool with_filters) {
    Value v;
    if (at_op("-") || at_op("+")) {
      const bool negate = next().text == "-";
      v = unary(false);
      if (!is_number(v)) throw Unevaluable{"a sign before " + describe(v)};
      if (negate) v = v.type == Value::Type::kFloat ? Value::real(-v.f) : Value::integer(-as_int(v));
    } else {
      v = primary();
      if (at_op(".") || at_op("[") || at_op("(")) unsupported(peek());
    }
    if (with_filters) {
      while (at_op("|")) {
        next();
        if (peek().kind != Token::Kind::kName) unsupported(peek());
        const std::string name = next().text;
        if (at_op("(")) throw Unevaluable{"filter arguments (|" + name + "(...)) are not supported"};
        v = filter(name, v);
      }
    }
    return v;
  }

  Value primary() {
    const Token token = next();
    switch (token.kind) {
      case Token::Kind::kInt: return Value::integer(token.i);
      case Token::Kind::kFloat: return Value::real(token.f);
      case Token::Kind::kString: return Value::str(token.text);
      case Token::Kind::kName: {
        if (token.text == "true" || token.text == "True") return Value::boolean(true);
        if (token.text == "false" || token.text == "False") return Value::boolean(false);
        if (token.text == "none" || token.text == "None") return Value::none();
        if (is_keyword(token.text)) unsupported(token);
        auto it = vars_.find(token.text);
        if (it == vars_.end()) throw Undefined{token.text};
        return it->second.value;
      }
      case Token::Kind::kOp:
        if (token.text == "(") {
          Value v = sum();
          if (!at_op(")")) unsupported(peek());
          next();
          return v;
        }
        if (token.text == "[") {
          Value list;
          list.type = Value::Type::kList;
          while (!at_op("]")) {
            list.items.push_back(sum());
            if (at_op(",")) {
              next();
            } else if (!at_op("]")) {
              unsupported(peek());
            }
          }
          next();
          return list;
        }
        unsupported(token);
      case Token::Kind::kEnd:
        throw Unevaluable{"an empty expression"};
    }
    unsupported(token);
  }

  static Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (op == "+" && a.type == Value::Type::kStr && b.type == Value::Type::kStr) return Value::str(a.s + b.s);
    if (op == "+" && a.type == Value::Type::kList && b.type == Value::Type::kList) {
      Value list = a;
      list.items.insert(list.items.end(), b.items.begin(), b.items.end());
      return list;
    }
    if (op == "*" && ((a.type == Value::Type::kStr && is_number(b)) || (is_number(a) && b.type == Value::Type::kStr))) {
      const Value& text = a.type == Value::Type::kStr ? a : b;
      const Value& count = a.type == Value::Type::kStr ? b : a;
      throw Unevaluable{"it multiplies " + describe(text) + " by " + py_str(count) +
                        ", which Jinja repeats as text; convert with |int first"};
    }
    if (!is_number(a) || !is_number(b)) {
      throw Unevaluable{"`" + op + "` between " + describe(a) + " and " + describe(b) +
                        (a.type == Value::Type::kStr || b.type == Value::Type::kStr ? " (convert text with |int)" : "")};
    }
    const bool ints = a.type != Value::Type::kFloat && b.type != Value::Type::kFloat;
    if (op == "/") {
      if (as_double(b) == 0) throw Unevaluable{"division by zero"};
      return Value::real(as_double(a) / as_double(b));
    }
    if (ints) {
      const int64_t x = as_int(a), y = as_int(b);
      int64_t r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
      else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
      else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
      else {
        if (y == 0) throw Unevaluable{"division by zero"};
        // Python floors // and gives % the divisor's sign.
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) { --q; m += y; }
        r = op == "//" ? q : m;
      }
      if (overflow) throw Unevaluable{"a number too large"};
      return Value::integer(r);
    }
    const double x = as_double(a), y = as_double(b);
    if (op == "+") return Value::real(x + y);
    if (op == "-") return Value::real(x - y);
    if (op == "*") return Value::real(x * y);
    if (y == 0) throw Unevaluable{"division by zero"};
    if (op == "//") return Value::real(std::floor(x / y));
    return Value::real(x - y * std::floor(x / y));
  }

  static Value filter(const std::string& name, const Value& v) {
    if (name == "int") {
      // Jinja's do_int: int(text), else int(float(text)), else 0.
      if (v.type == Value::Type::kStr) {
        if (auto i = python_int(v.s)) return Value::integer(*i);
        if (auto f = python_float(v.s); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18)
          return Value::integer(static_cast<int64_t>(*f));
        return Value::integer(0);
      }
      if (v.type == Value::Type::kFloat) {
        if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return Value::integer(0);
        return Value::integer(static_cast<int64_t>(v.f));
      }
      if (is_number(v)) return Value::integer(as_int(v));
      return Value::integer(0);
    }
    if (name == "float") {
      if (v.type == Value::Type::kStr) return Value::real(python_float(v.s).value_or(0.0));
      if (is_number(v)) return Value::real(as_double(v));
      return Value::real(0.0);
    }
    if (name == "string") return Value::str(py_str(v));
    if (name == "lower" || name == "upper") {
      std::string s = py_str(v);
      for (char& c : s) c = static_cast<char>(name == "lower" ? std::tolower(static_cast<unsigned char>(c))
                                                              : std::toupper(static_cast<unsigned char>(c)));
      return Value::str(s);
    }
    if (name == "trim") return Value::str(std::string(trim(py_str(v))));
    if (name == "abs") {
      if (!is_number(v)) throw Unevaluable{"|abs of " + describe(v)};
      return v.type == Value::Type::kFloat ? Value::real(std::fabs(v.f)) : Value::integer(std::llabs(as_int(v)));
    }
    if (name == "length" || name == "count") {
      if (v.type == Value::Type::kStr) return Value::integer(static_cast<int64_t>(v.s.size()));
      if (v.type == Value::Type::kList) return Value::integer(static_cast<int64_t>(v.items.size()));
      if (v.type == Value::Type::kDict) return Value::integer(static_cast<int64_t>(v.keys.size()));
      throw Unevaluable{"|" + name + " of " + describe(v)};
    }
    if (name == "max" || name == "min") {
      if (v.type != Value::Type::kList) throw Unevaluable{"|" + name + " of " + describe(v)};
      if (v.items.empty()) throw Unevaluable{"|" + name + " of an empty list"};
      const bool numbers = std::all_of(v.items.begin(), v.items.end(), is_number);
      const bool texts = std::all_of(v.items.begin(), v.items.end(),
                                     [](const Value& x) { return x.type == Value::Type::kStr; });
      if (!numbers && !texts) {
        for (const Value& item : v.items) {
          if (!is_number(item)) {
            throw Unevaluable{"|" + name + " of a list holding " + describe(item) +
                              (item.type == Value::Type::kStr ? " (convert it with |int)" : "")};
          }
        }
      }
      const bool want_max = name == "max";
      const Value* best = &v.items.front();
      for (const Value& item : v.items) {
        bool better;
        if (numbers) {
          better = want_max ? as_double(item) > as_double(*best) : as_double(item) < as_double(*best);
        } else {
          std::string a = item.s, b = best->s;
          for (char& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          for (char& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          better = want_max ? a > b : a < b;
        }
        if (better) best = &item;
      }
      return *best;
    }
    throw Unevaluable{"the filter |" + name + " is not supported"};
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  const Variables& vars_;
};

// ---------------------------------------------------------------------------
// Rendering the workflow section.

// One `{{ ... }}` in the workflow section (special tokens excluded).
struct Substitution {
  std::string source;  // as written, braces included
  int line = 0;        // 1-based
  std::string plain_variable;
  bool evaluated = false;
  std::string problem;  // why it was not evaluated
};

struct Rendered {
  std::string text;    // what OSMO would parse
  std::string marked;  // the same with each substitution replaced by its marker
  std::vector<int> file_line;  // 1-based file line of each rendered line
  std::vector<Substitution> subs;
};

constexpr std::string_view kMarkerHead = "zzgpusizerexpr";
constexpr std::string_view kMarkerTail = "zz";
constexpr std::string_view kUnevaluated = "gpu-sizer-unevaluated-expression";

std::string marker(std::size_t index) {
  return std::string(kMarkerHead) + std::to_string(index) + std::string(kMarkerTail);
}

// OSMO hides these from Jinja when written exactly so (no spaces):
// {{(uuid|workflow_id|output|input:[^}]+|host:[^}]+)}}. Returns the length.
std::size_t special_token_length(std::string_view text) {
  if (!text.starts_with("{{")) return 0;
  const std::string_view rest = text.substr(2);
  for (std::string_view word : {"uuid}}", "workflow_id}}", "output}}"}) {
    if (rest.starts_with(word)) return 2 + word.size();
  }
  for (std::string_view prefix : {"input:", "host:"}) {
    if (!rest.starts_with(prefix)) continue;
    const std::size_t close = rest.find('}', prefix.size());
    if (close == std::string_view::npos || close == prefix.size()) return 0;
    if (rest.substr(close, 2) != "}}") return 0;
    return 2 + close + 2;
  }
  return 0;
}

// The end of an expression opened at `open` (the index after `}}`), skipping
// string literals; npos when never closed.
std::size_t expression_end(std::string_view text, std::size_t open) {
  char quote = 0;
  for (std::size_t i = open + 2; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      return i + 2;
    }
  }
  return std::string_view::npos;
}

const char* const kSpecialTokenHint =
    " (OSMO keeps {{output}}, {{input:N}}, {{uuid}}, {{workflow_id}} and {{host:x}} only when written "
    "without spaces)";

Result<Rendered> render(std::string_view text, const Variables& vars) {
  Rendered out;
  int line = 1;
  out.file_line.push_back(1);
  struct Missing {
    std::string name;
    int line;
  };
  std::vector<Missing> missing;
  auto emit_rendered = [&](std::string_view s) {
    for (char c : s) {
      out.text += c;
      if (c == '\n') out.file_line.push_back(line);
    }
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const std::string_view rest = text.substr(i);
    if (rest.starts_with("{%")) {
      const std::size_t close = rest.find("%}");
      const std::string block(trim(rest.substr(0, close == std::string_view::npos ? rest.find('\n') : close + 2)));
      return Status::invalid_argument(at_line(line) + "`" + block +
                   "`: check cannot render Jinja control blocks ({% ... %}); check a rendered copy "
                   "of the spec instead");
    }
    if (rest.starts_with("{#")) {
      const std::size_t close = rest.find("#}");
      if (close == std::string_view::npos) {
        return Status::invalid_argument(at_line(line) +
                     "`{#` opens a Jinja comment that is never closed with `#}`; OSMO fails to render "
                     "this spec too (a shell `${#ARRAY[@]}` needs `{{ '{#' }}` or a space)");
      }
      for (char c : rest.substr(0, close + 2)) {
        if (c == '\n') {
          ++line;
          out.marked += '\n';
          emit_rendered("\n");
        }
      }
      i += close + 2;
      continue;
    }
    if (rest.starts_with("{{")) {
      if (const std::size_t special = special_token_length(rest)) {
        emit_rendered(rest.substr(0, special));
        out.marked += rest.substr(0, special);
        i += special;
        continue;
      }
      const std::size_t end = expression_end(rest, 0);
      if (end == std::string_view::npos) {
        return Status::invalid_argument(at_line(line) + "`{{` is never closed with `}}`; OSMO fails to render this spec too");
      }
      Substitution sub;
      sub.source = std::string(rest.substr(0, end));
      sub.line = line;
      std::string_view inner = rest.substr(2, end - 4);
      if (!inner.empty() && (inner.front() == '-' || inner.front() == '+')) inner.remove_prefix(1);
      if (!inner.empty() && (inner.back() == '-' || inner.back() == '+')) inner.remove_suffix(1);
      std::string value;
      try {
        Evaluator evaluator(inner, vars);
        sub.plain_variable = evaluator.plain_variable();
        value = py_str(evaluator.evaluate());
        sub.evaluated = true;
      } catch (const Undefined& undefined) {
        missing.push_back({undefined.name, line});
      } catch (const Unevaluable& problem) {
        sub.problem = problem.reason;
      }
      if (!sub.evaluated) value = std::string(kUnevaluated);
      emit_rendered(value);
      out.marked += marker(out.subs.size());
      out.subs.push_back(std::move(sub));
      for (char c : rest.substr(0, end)) line += c == '\n';
      i += end;
      continue;
    }
    if (text[i] == '\n') ++line;
    emit_rendered(text.substr(i, 1));
    out.marked += text[i];
    ++i;
  }
  if (!missing.empty()) {
    std::vector<std::string> names;
    std::set<std::string> seen;
    bool special = false;
    for (const Missing& m : missing) {
      if (!seen.insert(m.name).second) continue;
      names.push_back(m.name + " (line " + std::to_string(m.line) + ")");
      special = special || m.name == "output" || m.name == "uuid" || m.name == "workflow_id";
    }
    const std::string& first = missing.front().name;
    return Status::invalid_argument(std::string(names.size() == 1 ? "variable " : "variables ") + join(names, ", ") +
                 (names.size() == 1 ? " has" : " have") +
                 " no value, and OSMO fails the submit: add it to default-values or pass --set " + first +
                 "=VALUE" + (special ? kSpecialTokenHint : ""));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Reading the rendered workflow.

// Thrown inside this file only; check_osmo_workflow turns it into an Error.
struct SpecError {
  std::string message;
};

struct Spec {
  const Rendered* rendered = nullptr;
  int line_of(const YAML::Node& node) const {
    if (!node.IsDefined()) return 0;
    const int mark = node.Mark().line;
    if (mark < 0) return 0;
    const auto index = static_cast<std::size_t>(mark);
    return index < rendered->file_line.size() ? rendered->file_line[index] : mark + 1;
  }
  [[noreturn]] void fail(const YAML::Node& node, const std::string& problem) const {
    throw SpecError{at_line(line_of(node)) + problem};
  }
};

std::string scalar_text(const Spec& spec, const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) spec.fail(node, path + " must be a single value");
  return node.Scalar();
}

void check_unique_keys(const Spec& spec, const YAML::Node& map, const std::string& path) {
  for (const auto& entry : map) scalar_text(spec, entry.first, path + " key");
  if (auto repeated = repeated_key(map)) {
    spec.fail(*repeated, path + "." + repeated->Scalar() + " appears more than once (OSMO would silently use the last one)");
  }
}

struct TaskRef {
  std::string task, group, resource;
  int line = 0;
  YAML::Node node;
};

struct Field {
  OsmoFieldSource source;
  std::string text;  // rendered value; empty when absent or unevaluated
};

constexpr const char* kBinaryUnits[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

int64_t unit_bytes(std::string_view unit) {
  int64_t bytes = 1;
  for (const char* u : kBinaryUnits) {
    bytes *= 1024;
    if (unit == u) return bytes;
  }
  return 0;
}

// Reconstructs a field's source from the marked rendering of the same value.
OsmoFieldSource field_source(const std::string& marked_value, const Rendered& rendered, bool allow_unit) {
  OsmoFieldSource source;
  std::vector<std::size_t> used;
  std::string written;  // the value with markers turned back into their text
  std::size_t p = 0;
  while (p < marked_value.size()) {
    const std::size_t head = marked_value.find(kMarkerHead, p);
    if (head == std::string::npos) {
      written += marked_value.substr(p);
      break;
    }
    written += marked_value.substr(p, head - p);
    std::size_t q = head + kMarkerHead.size();
    std::size_t index = 0;
    const std::size_t digits = q;
    while (q < marked_value.size() && std::isdigit(static_cast<unsigned char>(marked_value[q]))) {
      index = index * 10 + static_cast<std::size_t>(marked_value[q] - '0');
      ++q;
    }
    if (q == digits || marked_value.compare(q, kMarkerTail.size(), kMarkerTail) != 0 ||
        index >= rendered.subs.size()) {
      written += marked_value.substr(head, q - head);
      p = q;
      continue;
    }
    used.push_back(index);
    written += rendered.subs[index].source;
    p = q + kMarkerTail.size();
  }
  if (used.empty()) {
    source.kind = OsmoFieldSource::Kind::kLiteral;
    return source;
  }
  for (std::size_t index : used) {
    if (!rendered.subs[index].evaluated) {
      source.evaluated = false;
      source.problem = rendered.subs[index].problem;
    }
  }
  const Substitution& only = rendered.subs[used.front()];
  const std::string tail = written.substr(std::min(written.size(), only.source.size()));
  const bool unit_ok = tail.empty() || (allow_unit && unit_bytes(tail) > 0);
  if (used.size() == 1 && written.starts_with(only.source) && unit_ok && !only.plain_variable.empty() &&
      only.evaluated) {
    source.kind = OsmoFieldSource::Kind::kVariable;
    source.variable = only.plain_variable;
    source.unit = tail;
    return source;
  }
  source.kind = OsmoFieldSource::Kind::kExpression;
  source.expression = written;
  return source;
}

// The node at the same place in the marked document: resources entries and
// block fields are matched by position, since keys may themselves be templated.
YAML::Node nth_value(const YAML::Node& map, std::size_t index) {
  if (!map || !map.IsMap() || index >= map.size()) return YAML::Node();
  std::size_t i = 0;
  for (const auto& entry : map) {
    if (i++ == index) return entry.second;
  }
  return YAML::Node();
}

std::string gpu_word(int64_t gpus) { return std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs"); }

bool is_cpu_number(std::string_view text) {
  if (text.empty()) return false;
  bool dot = false, digit = false;
  for (char c : text) {
    if (c == '.' && !dot) dot = true;
    else if (std::isdigit(static_cast<unsigned char>(c))) digit = true;
    else return false;
  }
  return digit;
}

// Shell-quotes a --set pair's value when it holds anything a shell treats specially.
std::string shell_pair(const std::string& name, const std::string& value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./:=@%+,-").find(c) != std::string_view::npos;
  });
  if (plain) return name + "=" + value;
  std::string quoted = "'";
  for (char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return name + "=" + quoted + "'";
}

struct SetPair {
  std::string variable, value, block;
  bool gpu = false;  // the pair sets a block's GPU count
};

class BlockChecker {
 public:
  BlockChecker(const Policy& policy, const Variables& vars, const Rendered& rendered, const Spec& spec)
      : policy_(policy), vars_(vars), rendered_(rendered), spec_(spec) {}

  OsmoBlockReport check(const std::string& name, const YAML::Node& block, const YAML::Node& marked_block,
                        const std::vector<TaskRef>& tasks, const std::map<std::string, std::string, std::less<>>& labels,
                        std::vector<SetPair>& pairs) {
    OsmoBlockReport report;
    report.block = name;
    const std::string path = "resources." + name;

    std::map<std::string, Field> fields;
    if (block && block.IsMap()) {
      check_unique_keys(spec_, block, path);
      static const std::set<std::string> kAllowed = {"cpu", "memory", "storage", "gpu", "platform",
                                                     "nodesExcluded", "topology"};
      std::size_t index = 0;
      for (const auto& entry : block) {
        const std::string key = entry.first.Scalar();
        if (!kAllowed.count(key)) {
          spec_.fail(entry.first, path + "." + key +
                                      " is not a resource field (OSMO takes cpu, gpu, memory, storage, "
                                      "platform, nodesExcluded, topology)");
        }
        if (key == "cpu" || key == "gpu" || key == "memory" || key == "storage") {
          Field field;
          if (!entry.second.IsNull()) {
            const std::string text = scalar_text(spec_, entry.second, path + "." + key);
            const YAML::Node marked = nth_value(marked_block, index);
            if (marked && marked.IsScalar()) {
              field.source = field_source(marked.Scalar(), rendered_, key == "memory" || key == "storage");
            } else {
              field.source.kind = OsmoFieldSource::Kind::kLiteral;
            }
            field.source.line = spec_.line_of(entry.second);
            if (field.source.evaluated) field.text = std::string(trim(text));
          }
          fields[key] = field;
        }
        ++index;
      }
    } else if (block && !block.IsNull()) {
      spec_.fail(block, path + " must be a mapping of resource fields");
    }
    report.gpu_source = fields["gpu"].source;
    report.cpu_source = fields["cpu"].source;
    report.memory_source = fields["memory"].source;
    report.storage_source = fields["storage"].source;

    // Profiles of the tasks, as their pods would be labelled.
    struct Choice {
      const Profile* profile;
      std::string reason;
    };
    std::vector<Choice> choices;
    for (const TaskRef& task : tasks) {
      SelectionInput input;
      input.labels = labels;
      input.labels["osmo.group_name"] = task.group;
      input.labels["osmo.task_name"] = task.task;
      input.name = task.task;
      auto choice = select_profile(policy_, input);
      if (!choice.ok()) throw SpecError{at_line(task.line) + "task " + task.task + ": " + choice.error()};
      if (!choice.value().profile) throw SpecError{"the policy names no profile for task " + task.task};
      choices.push_back({choice.value().profile, choice.value().reason});
      report.tasks.push_back({task.task, task.group, choice.value().profile->name});
    }
    report.profile = choices.front().profile->name;
    report.profile_reason = choices.front().reason;

    // Rendered values (a field check could not evaluate stays empty).
    const Field& gpu = fields["gpu"];
    if (!gpu.source.evaluated) {
      report.findings.push_back(computed_by(path + ".gpu", gpu.source) +
                                ", which check cannot evaluate (" + gpu.source.problem +
                                "): the GPU count is unknown");
      return report;
    }
    if (!gpu.text.empty() && gpu.text != "None") {
      auto count = python_int(gpu.text);
      if (!count || *count < 0 || gpu.text.find('_') != std::string::npos) {
        spec_.fail(block["gpu"], path + ".gpu: \"" + gpu.text + "\" is not a whole number of GPUs");
      }
      report.gpus = *count;
    }
    report.cpu = parse_cpu(block, fields["cpu"], path);
    report.memory = parse_bytes(block, fields["memory"], path, "memory");
    report.storage = parse_bytes(block, fields["storage"], path, "storage");
    if (report.gpus == 0) return report;  // nothing to size

    // Profiles that cap the GPU count (single-pod stages).
    int64_t gpus = report.gpus;
    std::set<std::string> seen;
    for (const Choice& choice : choices) {
      const Profile& profile = *choice.profile;
      if (!seen.insert(profile.name).second || !profile.max_gpus || report.gpus <= *profile.max_gpus) continue;
      const int64_t cap = *profile.max_gpus;
      std::string finding = profile.name + " profile allows at most " + gpu_word(cap) + ", found " +
                            std::to_string(report.gpus);
      if (gpu.source.kind == OsmoFieldSource::Kind::kVariable) {
        gpus = std::min(gpus, cap);
      } else if (gpu.source.kind == OsmoFieldSource::Kind::kLiteral) {
        finding += ": edit " + path + ".gpu (line " + std::to_string(gpu.source.line) + ") to " + std::to_string(cap);
        gpus = std::min(gpus, cap);
      } else {
        finding += ": " + computed_by(path + ".gpu", gpu.source) + "; change it to give at most " + std::to_string(cap);
        gpus = std::min(gpus, cap);
      }
      report.findings.push_back(finding);
    }

    // The largest need of the table profiles, field by field.
    const Profile* sizing = nullptr;
    std::vector<std::string> shared;
    std::set<std::string> listed;
    for (std::size_t t = 0; t < choices.size(); ++t) {
      const Profile& profile = *choices[t].profile;
      shared.push_back(tasks[t].task + " (" + profile.name + ")");
      if (!listed.insert(profile.name).second) continue;
      auto need = required_resources(profile, gpus);
      if (!need) continue;
      if (!report.need) {
        report.need = need;
        sizing = &profile;
        continue;
      }
      if (need->memory > report.need->memory ||
          (need->memory == report.need->memory && need->cpu > report.need->cpu)) {
        sizing = &profile;
      }
      report.need->cpu = std::max(report.need->cpu, need->cpu);
      report.need->memory = std::max(report.need->memory, need->memory);
      if (need->storage && (!report.need->storage || *need->storage > *report.need->storage)) {
        report.need->storage = need->storage;
      }
    }
    if (sizing) {
      report.profile = sizing->name;
      for (std::size_t t = 0; t < choices.size(); ++t) {
        if (choices[t].profile == sizing) {
          report.profile_reason = choices[t].reason;
          break;
        }
      }
    }
    if (listed.size() > 1) {
      report.profile_reason = "tasks " + join(shared, ", ") + " share " + path +
                              "; sized to the largest need (" + report.profile + ")";
    }

    if (gpus != report.gpus && gpu.source.kind == OsmoFieldSource::Kind::kVariable) {
      pairs.push_back({gpu.source.variable, std::to_string(gpus), name, true});
      report.set_values.push_back(gpu.source.variable + "=" + std::to_string(gpus));
    }
    if (!report.need) return report;
    if (gpus == report.gpus && gpu.source.kind == OsmoFieldSource::Kind::kVariable) {
      pairs.push_back({gpu.source.variable, std::to_string(gpus), name, true});
      report.set_values.push_back(gpu.source.variable + "=" + std::to_string(gpus));
    }

    const std::string for_gpus = " for " + gpu_word(gpus) + " (" + report.profile + " profile)";
    size_field(report, pairs, fields["cpu"], report.cpu, report.need->cpu, "cpu", for_gpus, path, true);
    size_field(report, pairs, fields["memory"], report.memory, report.need->memory, "memory", for_gpus, path, true);
    if (report.need->storage) {
      size_field(report, pairs, fields["storage"], report.storage, *report.need->storage, "storage",
                 " (" + report.profile + " profile)", path, false);
    }
    return report;
  }

 private:
  static std::string computed_by(const std::string& field, const OsmoFieldSource& source) {
    return field + " is computed by `" + source.expression + "` (line " + std::to_string(source.line) + ")";
  }

  std::optional<Quantity> parse_cpu(const YAML::Node& block, const Field& field, const std::string& path) const {
    if (field.text.empty() || field.text == "None") return std::nullopt;
    auto q = is_cpu_number(field.text) ? Quantity::parse(field.text) : Result<Quantity>(Status::invalid_argument(""));
    if (!q.ok()) {
      spec_.fail(block["cpu"], path + ".cpu: \"" + field.text + "\" is not a number of cores (OSMO takes a plain number)");
    }
    return q.value();
  }

  std::optional<Quantity> parse_bytes(const YAML::Node& block, const Field& field, const std::string& path,
                                      const std::string& key) const {
    if (field.text.empty() || field.text == "None") return std::nullopt;
    const std::string& text = field.text;
    std::string parsed = text;
    bool unit = false;
    for (const char* u : kBinaryUnits) unit = unit || text.ends_with(u);
    if (!unit) {
      if (!is_cpu_number(text)) {
        spec_.fail(block[key], path + "." + key + ": \"" + text +
                                   "\" is not an amount OSMO takes: use binary units (Ki, Mi, Gi, Ti), not GB or G");
      }
      parsed = text + "Ki";  // OSMO reads a bare number as Ki
    }
    auto q = Quantity::parse(parsed);
    if (!q.ok() || q.value().is_negative()) {
      spec_.fail(block[key], path + "." + key + ": \"" + text + "\" is not an amount OSMO takes");
    }
    return q.value();
  }

  // The text to set `source.variable` to so the field gives at least `need`.
  std::string set_text(const OsmoFieldSource& source, const Quantity& need, bool cpu) const {
    if (!source.unit.empty()) {
      const int64_t unit = unit_bytes(source.unit);
      return std::to_string((need.value_ceil() + unit - 1) / unit);
    }
    if (cpu) return std::to_string((need.milli_ceil() + 999) / 1000);
    return need.to_string();
  }

  void size_field(OsmoBlockReport& report, std::vector<SetPair>& pairs, const Field& field,
                  const std::optional<Quantity>& found, const Quantity& need, const std::string& key,
                  const std::string& for_gpus, const std::string& path, bool always_set) {
    const OsmoFieldSource& source = field.source;
    const std::string needed = key == "cpu" ? set_text(OsmoFieldSource{}, need, true) : need.to_string();
    const bool variable = source.kind == OsmoFieldSource::Kind::kVariable;
    if (!source.evaluated) {
      report.findings.push_back(computed_by(path + "." + key, source) + ", which check cannot evaluate (" +
                                source.problem + "): make sure it gives at least " + needed + for_gpus);
      return;
    }
    const bool short_of = !found || *found < need;
    if (!found) {
      report.findings.push_back(key + " is not set; " + needed + " needed" + for_gpus + ": add " + key + " to " + path);
      return;
    }
    if (short_of) {
      std::string finding = key + " " + found->to_string() + " is below " + needed + for_gpus;
      if (source.kind == OsmoFieldSource::Kind::kLiteral) {
        finding += ": " + path + "." + key + " is written in the file (line " + std::to_string(source.line) +
                   "), edit it to " + needed;
      } else if (!variable) {
        finding += ": " + computed_by(path + "." + key, source) + ", change it to give at least " + needed;
      }
      report.findings.push_back(finding);
    }
    if (variable && (always_set || short_of)) {
      std::string value;
      if (short_of) {
        value = set_text(source, need, key == "cpu");
      } else {
        auto it = vars_.find(source.variable);
        value = it != vars_.end() ? it->second.text : field.text;
      }
      pairs.push_back({source.variable, value, report.block, false});
      report.set_values.push_back(shell_pair(source.variable, value));
    }
  }

  const Policy& policy_;
  const Variables& vars_;
  const Rendered& rendered_;
  const Spec& spec_;
};

// Compares two --set values as quantities; nullopt when either is not one.
std::optional<std::strong_ordering> compare_values(const std::string& a, const std::string& b) {
  auto qa = Quantity::parse(a), qb = Quantity::parse(b);
  if (!qa.ok() || !qb.ok()) return std::nullopt;
  return qa.value() <=> qb.value();
}

void check_version(const std::vector<std::string_view>& lines, const Section& section) {
  const std::string text = padded_section(lines, section);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw SpecError{at_line(e.mark.line + 1) + "YAML error: " + e.msg};
  }
  const YAML::Node version = root["version"];
  const int line = static_cast<int>(section.first_line) + 1;
  if (!version.IsScalar()) throw SpecError{at_line(line) + "version must be 2"};
  const std::string value(trim(version.Scalar()));
  const auto as_int = python_int(value);
  const auto as_float = python_float(value);
  if (!((as_int && *as_int == 2) || (!as_int && as_float && *as_float == 2.0))) {
    throw SpecError{at_line(line) + "version " + value + " is not supported: OSMO accepts only version 2"};
  }
}

OsmoReport check_spec(const Policy& policy, std::string_view text,
                      const std::map<std::string, std::string>& set_values) {
  const std::vector<std::string_view> lines = split_lines(text);
  const std::vector<Section> sections = find_sections(lines);
  const Section* workflow_section = nullptr;
  const Section* defaults_section = nullptr;
  std::set<std::string> seen;
  for (const Section& section : sections) {
    const int line = static_cast<int>(section.first_line) + 1;
    if (!seen.insert(section.key).second) {
      throw SpecError{at_line(line) + "the top-level key " + section.key + " appears more than once"};
    }
    if (section.key == "workflow") {
      workflow_section = &section;
    } else if (section.key == "default-values") {
      defaults_section = &section;
    } else if (section.key == "version") {
      check_version(lines, section);
    } else {
      throw SpecError{at_line(line) + "unknown top-level key " + section.key +
                      " (an OSMO workflow spec has workflow, default-values and version)"};
    }
  }
  if (!workflow_section) throw SpecError{"no top-level workflow: key; this is not an OSMO workflow spec"};

  // default-values, read from the raw text as OSMO reads it (never rendered).
  Variables vars;
  if (defaults_section) {
    YAML::Node root;
    try {
      root = YAML::Load(padded_section(lines, *defaults_section));
    } catch (const YAML::ParserException& e) {
      throw SpecError{at_line(e.mark.line + 1) + "YAML error in default-values: " + e.msg};
    }
    const YAML::Node defaults = root["default-values"];
    if (defaults.IsMap()) {
      for (const auto& entry : defaults) {
        if (!entry.first.IsScalar()) continue;
        Value value = from_yaml(entry.second);
        const std::string shown = py_str(value);
        vars[entry.first.Scalar()] = Variable{std::move(value), shown};
      }
    } else if (!defaults.IsNull()) {
      throw SpecError{at_line(static_cast<int>(defaults_section->first_line) + 1) +
                      "default-values must be a mapping of variable names to values"};
    }
  }
  for (const auto& [name, raw] : set_values) vars[name] = Variable{typed_set_value(raw), raw};

  auto rendered_result = render(padded_section(lines, *workflow_section), vars);
  if (!rendered_result.ok()) throw SpecError{rendered_result.error()};
  const Rendered& rendered = rendered_result.value();
  const Spec spec{&rendered};

  YAML::Node root;
  try {
    root = YAML::Load(rendered.text);
  } catch (const YAML::ParserException& e) {
    const auto index = static_cast<std::size_t>(std::max(0, e.mark.line));
    const int line = index < rendered.file_line.size() ? rendered.file_line[index] : e.mark.line + 1;
    throw SpecError{at_line(line) + "YAML error after rendering: " + e.msg};
  }
  YAML::Node marked_root;
  try {
    marked_root = YAML::Load(rendered.marked);
  } catch (const YAML::Exception&) {
    marked_root = YAML::Node();  // sources then read as literal
  }

  const YAML::Node workflow = root["workflow"];
  if (!workflow.IsMap()) spec.fail(workflow, "workflow must be a mapping (name, resources, tasks or groups)");
  check_unique_keys(spec, workflow, "workflow");

  std::map<std::string, std::string, std::less<>> labels;
  if (const YAML::Node node = workflow["labels"]; node && node.IsMap()) {
    for (const auto& entry : node) {
      if (entry.first.IsScalar() && entry.second.IsScalar()) labels[entry.first.Scalar()] = entry.second.Scalar();
    }
  }

  // Tasks, flat or in groups.
  const YAML::Node flat = workflow["tasks"];
  const YAML::Node groups = workflow["groups"];
  if (flat && groups) spec.fail(groups, "workflow has both tasks and groups; OSMO takes exactly one of them");
  if (!flat && !groups) spec.fail(workflow, "workflow has neither tasks nor groups");
  std::vector<TaskRef> tasks;
  auto read_task = [&](const YAML::Node& node, const std::string& path, const std::string* group) {
    if (!node.IsMap()) spec.fail(node, path + " must be a mapping");
    const YAML::Node name = node["name"];
    if (!name || !name.IsScalar() || name.Scalar().empty()) spec.fail(node, path + " has no name");
    TaskRef task;
    task.task = name.Scalar();
    task.group = group ? *group : task.task + "-group";
    task.line = spec.line_of(name);
    task.node = node;
    const YAML::Node resource = node["resource"];
    task.resource = resource && !resource.IsNull() ? scalar_text(spec, resource, path + ".resource") : "default";
    tasks.push_back(task);
  };
  if (flat) {
    if (!flat.IsSequence()) spec.fail(flat, "workflow.tasks must be a list");
    for (std::size_t t = 0; t < flat.size(); ++t) read_task(flat[t], "workflow.tasks[" + std::to_string(t) + "]", nullptr);
  } else {
    if (!groups.IsSequence()) spec.fail(groups, "workflow.groups must be a list");
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::string path = "workflow.groups[" + std::to_string(g) + "]";
      const YAML::Node group = groups[g];
      if (!group.IsMap()) spec.fail(group, path + " must be a mapping");
      const YAML::Node name = group["name"];
      if (!name || !name.IsScalar() || name.Scalar().empty()) spec.fail(group, path + " has no name");
      const YAML::Node group_tasks = group["tasks"];
      if (!group_tasks || !group_tasks.IsSequence()) spec.fail(group, path + " has no tasks list");
      const std::string group_name = name.Scalar();
      for (std::size_t t = 0; t < group_tasks.size(); ++t) {
        read_task(group_tasks[t], path + ".tasks[" + std::to_string(t) + "]", &group_name);
      }
    }
  }

  // Resource blocks in file order; OSMO's default when the key is absent is
  // {default: {}}.
  const YAML::Node resources = workflow["resources"];
  const YAML::Node marked_resources = marked_root.IsMap() && marked_root["workflow"].IsMap()
                                          ? marked_root["workflow"]["resources"]
                                          : YAML::Node();
  std::vector<std::pair<std::string, std::size_t>> blocks;  // name, index in resources
  if (resources && !resources.IsNull()) {
    if (!resources.IsMap()) spec.fail(resources, "workflow.resources must be a mapping of named resource specs");
    check_unique_keys(spec, resources, "resources");
    std::size_t index = 0;
    for (const auto& entry : resources) blocks.emplace_back(entry.first.Scalar(), index++);
  }
  const bool implicit_default = !resources || resources.IsNull();
  std::vector<std::string> known;
  for (const auto& [name, index] : blocks) known.push_back(name);
  for (const TaskRef& task : tasks) {
    const bool defined = std::find(known.begin(), known.end(), task.resource) != known.end();
    if (defined || (implicit_default && task.resource == "default")) continue;
    const YAML::Node resource = task.node["resource"];
    spec.fail(resource ? resource : task.node["name"],
              "task " + task.task + " uses resource " + task.resource + ", which workflow.resources does not define" +
                  (known.empty() ? std::string() : " (defined: " + join(known, ", ") + ")"));
  }
  if (implicit_default) blocks.emplace_back("default", std::string::npos);

  OsmoReport report;
  std::vector<SetPair> pairs;
  BlockChecker checker(policy, vars, rendered, spec);
  for (const auto& [name, index] : blocks) {
    std::vector<TaskRef> users;
    for (const TaskRef& task : tasks) {
      if (task.resource == name) users.push_back(task);
    }
    if (users.empty()) continue;
    const YAML::Node block = index == std::string::npos ? YAML::Node() : nth_value(resources, index);
    const YAML::Node marked_block = index == std::string::npos ? YAML::Node() : nth_value(marked_resources, index);
    report.blocks.push_back(checker.check(name, block, marked_block, users, labels, pairs));
  }

  // The --set line: blocks' pairs deduplicated by variable, then the user's others.
  std::vector<SetPair> merged;
  for (const SetPair& pair : pairs) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const SetPair& m) { return m.variable == pair.variable; });
    if (it == merged.end()) {
      merged.push_back(pair);
      continue;
    }
    if (it->value == pair.value) continue;
    if (it->gpu || pair.gpu) {
      for (OsmoBlockReport& block : report.blocks) {
        if (block.block != pair.block) continue;
        block.findings.push_back("variable " + pair.variable + " is shared with resources." + it->block +
                                 ", which needs " + it->variable + "=" + it->value + " while this block needs " +
                                 pair.value + ": give the blocks separate variables");
      }
      continue;
    }
    if (auto order = compare_values(pair.value, it->value); order && *order > 0) it->value = pair.value;
  }
  std::vector<std::string> line;
  for (const SetPair& pair : merged) line.push_back(shell_pair(pair.variable, pair.value));
  for (const auto& user : set_values) {
    const bool covered =
        std::any_of(merged.begin(), merged.end(), [&](const SetPair& m) { return m.variable == user.first; });
    if (!covered) line.push_back(shell_pair(user.first, user.second));
  }
  report.set_line = join(line, " ");
  return report;
}

std::string source_text(const OsmoFieldSource& source) {
  switch (source.kind) {
    case OsmoFieldSource::Kind::kAbsent: return "not set";
    case OsmoFieldSource::Kind::kLiteral: return "literal";
    case OsmoFieldSource::Kind::kVariable: return "{{" + source.variable + "}}" + source.unit;
    case OsmoFieldSource::Kind::kExpression: return source.expression;
  }
  return "";
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

nlohmann::json source_json(const OsmoFieldSource& source) {
  static const char* const kKinds[] = {"absent", "literal", "variable", "expression"};
  nlohmann::json out = {{"kind", kKinds[static_cast<int>(source.kind)]}};
  if (source.line) out["line"] = source.line;
  if (source.kind == OsmoFieldSource::Kind::kVariable) {
    out["variable"] = source.variable;
    if (!source.unit.empty()) out["unit"] = source.unit;
  }
  if (source.kind == OsmoFieldSource::Kind::kExpression) {
    out["expression"] = source.expression;
    out["evaluated"] = source.evaluated;
    if (!source.evaluated) out["problem"] = source.problem;
  }
  return out;
}

nlohmann::json quantity_json(const std::optional<Quantity>& q) {
  return q ? nlohmann::json(q->to_string()) : nlohmann::json(nullptr);
}

}  // namespace

bool is_osmo_workflow(std::string_view text) {
  bool workflow = false;
  for (const Section& section : find_sections(split_lines(text))) {
    if (section.key == "apiVersion" || section.key == "kind") return false;
    workflow = workflow || section.key == "workflow";
  }
  return workflow;
}

bool OsmoReport::fits() const {
  return std::all_of(blocks.begin(), blocks.end(), [](const OsmoBlockReport& b) { return b.fits(); });
}

Result<OsmoReport> check_osmo_workflow(const Policy& policy, std::string_view text,
                                       const std::map<std::string, std::string>& set_values) {
  try {
    return check_spec(policy, text, set_values);
  } catch (const SpecError& e) {
    return Status::invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::invalid_argument(at_line(e.mark.line >= 0 ? e.mark.line + 1 : 0) + e.msg);
  }
}

std::string osmo_report_text(const std::string& file, const OsmoReport& report) {
  std::string out = file + ": OSMO workflow, " + std::to_string(report.blocks.size()) +
                    (report.blocks.size() == 1 ? " resource block" : " resource blocks") + " used by tasks\n";
  for (const OsmoBlockReport& block : report.blocks) {
    out += "\nresources." + block.block + ": " + (block.fits() ? "OK" : "UNDERSIZED") + "\n";
    std::vector<std::string> tasks;
    for (const OsmoTask& task : block.tasks) tasks.push_back(task.task + " (group " + task.group + ")");
    out += "  tasks:    " + join(tasks, ", ") + "\n";
    out += "  profile:  " + block.profile + " (" + block.profile_reason + ")\n";
    const bool gpus_known = block.gpu_source.evaluated;
    out += "  GPUs:     " + (gpus_known ? std::to_string(block.gpus) : std::string("?")) + "  from " +
           source_text(block.gpu_source) + "\n";
    if (!gpus_known) {
      // The finding below says why; nothing can be sized without the count.
    } else if (block.gpus > 0) {
      out += "  " + pad("", 10) + pad("found", 10) + pad("needed", 10) + "from\n";
      auto row = [&](const std::string& key, const std::optional<Quantity>& found,
                     const std::optional<Quantity>& needed, const OsmoFieldSource& source) {
        const std::string found_text = found ? found->to_string() : source.evaluated ? "-" : "?";
        out += "  " + pad(key, 10) + pad(found_text, 10) + pad(needed ? needed->to_string() : "-", 10) +
               source_text(source) + "\n";
      };
      row("cpu", block.cpu, block.need ? std::optional<Quantity>(block.need->cpu) : std::nullopt, block.cpu_source);
      row("memory", block.memory, block.need ? std::optional<Quantity>(block.need->memory) : std::nullopt,
          block.memory_source);
      row("storage", block.storage, block.need ? block.need->storage : std::nullopt, block.storage_source);
    } else {
      out += "  no GPUs: nothing to size\n";
    }
    for (const std::string& finding : block.findings) out += "  - " + finding + "\n";
  }
  out += "\n";
  if (report.fits()) {
    out += "all resource blocks fit\n";
  } else if (report.set_line.empty()) {
    out += "no --set value fixes this: edit the resource blocks as the findings say\n";
  } else {
    out += "--set " + report.set_line + "\n";
  }
  return out;
}

nlohmann::json osmo_report_json(const std::string& file, const OsmoReport& report) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const OsmoBlockReport& block : report.blocks) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const OsmoTask& task : block.tasks) {
      tasks.push_back({{"task", task.task}, {"group", task.group}, {"profile", task.profile}});
    }
    auto field = [&](const std::optional<Quantity>& found, const std::optional<Quantity>& needed,
                     const OsmoFieldSource& source) {
      return nlohmann::json{{"found", quantity_json(found)}, {"needed", quantity_json(needed)},
                            {"source", source_json(source)}};
    };
    const auto need_cpu = block.need ? std::optional<Quantity>(block.need->cpu) : std::nullopt;
    const auto need_memory = block.need ? std::optional<Quantity>(block.need->memory) : std::nullopt;
    const auto need_storage = block.need ? block.need->storage : std::nullopt;
    blocks.push_back({{"block", block.block},
                      {"tasks", tasks},
                      {"profile", block.profile},
                      {"profileReason", block.profile_reason},
                      {"gpus", block.gpu_source.evaluated ? nlohmann::json(block.gpus) : nlohmann::json(nullptr)},
                      {"gpu", {{"source", source_json(block.gpu_source)}}},
                      {"cpu", field(block.cpu, need_cpu, block.cpu_source)},
                      {"memory", field(block.memory, need_memory, block.memory_source)},
                      {"storage", field(block.storage, need_storage, block.storage_source)},
                      {"findings", block.findings},
                      {"set", block.set_values},
                      {"fits", block.fits()}});
  }
  return {{"file", file},
          {"format", "osmo-workflow"},
          {"fits", report.fits()},
          {"set", report.set_line},
          {"blocks", blocks}};
}

}  // namespace gpusizer
