#include "gpusizer/check/osmo/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

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

// Jinja's do_int: int(text), else int(float(text)), else 0.
Value to_int(const Value& v) {
  if (v.type == Value::Type::kStr) {
    if (auto i = python_int(v.s)) return Value::integer(*i);
    if (auto f = python_float(v.s); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18) {
      return Value::integer(static_cast<int64_t>(*f));
    }
    return Value::integer(0);
  }
  if (v.type == Value::Type::kFloat) {
    if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return Value::integer(0);
    return Value::integer(static_cast<int64_t>(v.f));
  }
  if (is_number(v)) return Value::integer(as_int(v));
  return Value::integer(0);
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
  auto lower = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  const bool want_max = name == "max";
  const Value* best = &v.items.front();
  for (const Value& item : v.items) {
    bool better = false;
    if (numbers) {
      better = want_max ? as_double(item) > as_double(*best) : as_double(item) < as_double(*best);
    } else {
      const std::string a = lower(item.s), b = lower(best->s);
      better = want_max ? a > b : a < b;
    }
    if (better) best = &item;
  }
  return *best;
}

Value filter(const std::string& name, const Value& v) {
  if (name == "int") return to_int(v);
  if (name == "float") {
    if (v.type == Value::Type::kStr) return Value::real(python_float(v.s).value_or(0.0));
    if (is_number(v)) return Value::real(as_double(v));
    return Value::real(0.0);
  }
  if (name == "string") return Value::str(py_str(v));
  if (name == "lower" || name == "upper") {
    std::string s = py_str(v);
    for (char& c : s) {
      c = static_cast<char>(name == "lower" ? std::tolower(static_cast<unsigned char>(c))
                                            : std::toupper(static_cast<unsigned char>(c)));
    }
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
    case Expression::Kind::kFilter: return filter(e.name, value_of(*e.operands[0], variables));
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
