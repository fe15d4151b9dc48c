#include "gpusizer/check/osmo/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

bool truthy(const Value& v) {
  switch (v.type) {
    case Value::Type::kNone: return false;
    case Value::Type::kBool: return v.b;
    case Value::Type::kInt: return v.i != 0;
    case Value::Type::kFloat: return v.f != 0;
    case Value::Type::kStr: return !v.s.empty();
    case Value::Type::kList: return !v.items.empty();
    case Value::Type::kDict: return !v.keys.empty();
  }
  return false;
}

namespace {

// Thrown inside this file only, to leave the recursion; evaluate() turns
// both into an Evaluated.
struct Unevaluable {
  std::string reason;
};
struct Undefined {
  std::string name;
};

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::str(py_str(a) + py_str(b));
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
    if (op == "+") {
      overflow = __builtin_add_overflow(x, y, &r);
    } else if (op == "-") {
      overflow = __builtin_sub_overflow(x, y, &r);
    } else if (op == "*") {
      overflow = __builtin_mul_overflow(x, y, &r);
    } else {
      if (y == 0) throw Unevaluable{"division by zero"};
      // Python floors // and gives % the divisor's sign.
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
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

// Jinja's do_int: int(text), else int(float(text)), else the default (0).
Value to_int(const Value& v, const Value& fallback) {
  if (v.type == Value::Type::kStr) {
    if (auto i = python_int(v.s)) return Value::integer(*i);
    if (auto f = python_float(v.s); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18) {
      return Value::integer(static_cast<int64_t>(*f));
    }
    return fallback;
  }
  if (v.type == Value::Type::kFloat) {
    if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(v.f));
  }
  if (is_number(v)) return Value::integer(as_int(v));
  return fallback;
}

// |max and |min: of numbers, or of texts compared without case, as Jinja does.
Value extreme(const std::string& name, const Value& v) {
  if (v.type != Value::Type::kList) throw Unevaluable{"|" + name + " of " + describe(v)};
  if (v.items.empty()) throw Unevaluable{"|" + name + " of an empty list"};
  const bool numbers = std::all_of(v.items.begin(), v.items.end(), is_number);
  const bool texts =
      std::all_of(v.items.begin(), v.items.end(), [](const Value& x) { return x.type == Value::Type::kStr; });
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
    bool better = false;
    if (numbers) {
      better = want_max ? as_double(item) > as_double(*best) : as_double(item) < as_double(*best);
    } else {
      const std::string a = lowercase(item.s), b = lowercase(best->s);
      better = want_max ? a > b : a < b;
    }
    if (better) best = &item;
  }
  return *best;
}

// Python's ==: numbers (bools among them) by value, texts, lists and dicts
// item by item; values of other different types are never equal.
bool equal(const Value& a, const Value& b) {
  if (is_number(a) && is_number(b)) return as_double(a) == as_double(b);
  if (a.type != b.type) return false;
  switch (a.type) {
    case Value::Type::kNone: return true;
    case Value::Type::kStr: return a.s == b.s;
    case Value::Type::kList:
    case Value::Type::kDict:
      return a.keys.size() == b.keys.size() && a.items.size() == b.items.size() &&
             std::equal(a.keys.begin(), a.keys.end(), b.keys.begin(), equal) &&
             std::equal(a.items.begin(), a.items.end(), b.items.begin(), equal);
    default: return false;
  }
}

// Python's `in`: an item of a list, a key of a dict, a part of a text.
bool contains(const Value& container, const Value& item) {
  auto has = [&](const std::vector<Value>& values) {
    return std::any_of(values.begin(), values.end(), [&](const Value& v) { return equal(v, item); });
  };
  if (container.type == Value::Type::kList) return has(container.items);
  if (container.type == Value::Type::kDict) return has(container.keys);
  if (container.type == Value::Type::kStr && item.type == Value::Type::kStr) {
    return container.s.find(item.s) != std::string::npos;
  }
  throw Unevaluable{"`in` of " + describe(item) + " in " + describe(container)};
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  int order = 0;
  if (is_number(a) && is_number(b)) {
    order = as_double(a) < as_double(b) ? -1 : as_double(a) > as_double(b) ? 1 : 0;
  } else if (a.type == Value::Type::kStr && b.type == Value::Type::kStr) {
    order = a.s.compare(b.s);
  } else {
    throw Unevaluable{"`" + op + "` between " + describe(a) + " and " + describe(b)};
  }
  if (op == "<") return order < 0;
  if (op == ">") return order > 0;
  if (op == "<=") return order <= 0;
  return order >= 0;
}

// Python's str.replace(old, new[, count]).
std::string replaced(std::string text, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  std::size_t p = 0;
  for (int64_t done = 0; count < 0 || done < count; ++done) {
    const std::size_t hit = from.empty() ? (p <= text.size() ? p : std::string::npos) : text.find(from, p);
    if (hit == std::string::npos) break;
    out += text.substr(p, hit - p) + to;
    if (from.empty()) {
      if (hit == text.size()) return out;
      out += text[hit];
      p = hit + 1;
    } else {
      p = hit + from.size();
    }
  }
  return out + text.substr(std::min(p, text.size()));
}

// `v|name(args...)`. The filters OSMO's specs use and their neighbours;
// any other is not evaluated.
Value filter(const std::string& name, const Value& v, const std::vector<Value>& args) {
  auto arity = [&](std::size_t most) {
    if (args.size() > most) {
      throw Unevaluable{"|" + name + " takes " + (most ? "at most " + std::to_string(most) : std::string("no")) +
                        " arguments, found " + std::to_string(args.size())};
    }
  };
  auto text_arg = [&](std::size_t i) {
    if (args[i].type != Value::Type::kStr) throw Unevaluable{"|" + name + " of " + describe(args[i])};
    return args[i].s;
  };
  if (name == "int") {
    arity(1);
    return to_int(v, args.empty() ? Value::integer(0) : args[0]);
  }
  if (name == "float") {
    arity(1);
    const Value fallback = args.empty() ? Value::real(0.0) : args[0];
    if (v.type == Value::Type::kStr) {
      auto f = python_float(v.s);
      return f ? Value::real(*f) : fallback;
    }
    return is_number(v) ? Value::real(as_double(v)) : fallback;
  }
  if (name == "default" || name == "d") {
    // Reached with a value: an unset variable was handled by the caller.
    arity(2);
    const bool falsy_too = args.size() > 1 && truthy(args[1]);
    return falsy_too && !truthy(v) ? (args.empty() ? Value::str("") : args[0]) : v;
  }
  if (name == "replace") {
    if (args.size() < 2) throw Unevaluable{"|replace needs the text to replace and its replacement"};
    arity(3);
    const int64_t count = args.size() == 3 && is_number(args[2]) ? as_int(args[2]) : -1;
    return Value::str(replaced(py_str(v), text_arg(0), text_arg(1), count));
  }
  if (name == "join") {
    arity(1);
    if (v.type != Value::Type::kList) throw Unevaluable{"|join of " + describe(v)};
    std::vector<std::string> parts;
    for (const Value& item : v.items) parts.push_back(py_str(item));
    return Value::str(join(parts, args.empty() ? "" : text_arg(0)));
  }
  arity(0);
  if (name == "string") return Value::str(py_str(v));
  if (name == "lower") return Value::str(lowercase(py_str(v)));
  if (name == "upper") {
    std::string s = py_str(v);
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
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
  if (name == "first" || name == "last") {
    if (v.type != Value::Type::kList || v.items.empty()) throw Unevaluable{"|" + name + " of " + describe(v)};
    return name == "first" ? v.items.front() : v.items.back();
  }
  if (name == "max" || name == "min") return extreme(name, v);
  throw Unevaluable{"the filter |" + name + " is not supported"};
}

Value value_of(const Expression& e, const Variables& variables) {
  switch (e.kind) {
    case Expression::Kind::kLiteral: return e.value;
    case Expression::Kind::kVariable: {
      auto it = variables.find(e.name);
      if (it == variables.end()) throw Undefined{e.name};
      return it->second.value;
    }
    case Expression::Kind::kList: {
      std::vector<Value> items;
      for (const auto& item : e.operands) items.push_back(value_of(*item, variables));
      return Value::list(std::move(items));
    }
    case Expression::Kind::kSign: {
      Value v = value_of(*e.operands[0], variables);
      if (!is_number(v)) throw Unevaluable{"a sign before " + describe(v)};
      if (e.name != "-") return v;
      return v.type == Value::Type::kFloat ? Value::real(-v.f) : Value::integer(-as_int(v));
    }
    case Expression::Kind::kBinary: {
      const Value left = value_of(*e.operands[0], variables);
      const Value right = value_of(*e.operands[1], variables);
      return arithmetic(e.name, left, right);
    }
    case Expression::Kind::kFilter: {
      const Expression& operand = *e.operands[0];
      const bool fallback = e.name == "default" || e.name == "d";
      std::vector<Value> args;
      auto evaluate_args = [&] {
        for (std::size_t a = 1; a < e.operands.size(); ++a) args.push_back(value_of(*e.operands[a], variables));
      };
      if (fallback && operand.kind == Expression::Kind::kVariable && !variables.count(operand.name)) {
        evaluate_args();
        return args.empty() ? Value::str("") : args[0];
      }
      const Value v = value_of(operand, variables);
      evaluate_args();
      return filter(e.name, v, args);
    }
    case Expression::Kind::kCompare: {
      const Value left = value_of(*e.operands[0], variables);
      const Value right = value_of(*e.operands[1], variables);
      return Value::boolean(compare(e.name, left, right));
    }
    case Expression::Kind::kLogic: {
      // Like Python, `and` / `or` give the operand that decided, not a bool.
      Value left = value_of(*e.operands[0], variables);
      if (truthy(left) == (e.name == "or")) return left;
      return value_of(*e.operands[1], variables);
    }
    case Expression::Kind::kNot: return Value::boolean(!truthy(value_of(*e.operands[0], variables)));
    case Expression::Kind::kUnsupported:
      // What was read before the unsupported part comes first, as in Jinja.
      for (const auto& before : e.operands) value_of(*before, variables);
      throw Unevaluable{e.reason};
  }
  throw Unevaluable{"an unknown expression"};
}

}  // namespace

Evaluated evaluate(const Expression& expression, const Variables& variables) {
  try {
    return {Evaluated::Outcome::kValue, value_of(expression, variables), ""};
  } catch (const Undefined& undefined) {
    return {Evaluated::Outcome::kUndefined, Value(), undefined.name};
  } catch (const Unevaluable& problem) {
    return {Evaluated::Outcome::kUnevaluable, Value(), problem.reason};
  }
}

EvaluatedText evaluate_text(std::string_view expression, const Variables& variables) {
  auto tokens = scan_expression(expression);
  if (!tokens) return {{Evaluated::Outcome::kUnevaluable, Value(), tokens.error()}, ""};
  const ParsedExpression parsed = parse_expression(tokens.value());
  return {evaluate(*parsed.root, variables), parsed.plain_variable};
}

}  // namespace gpusizer::osmo
