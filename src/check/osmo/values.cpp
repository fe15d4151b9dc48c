#include "gpusizer/check/osmo/values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

Value Value::boolean(bool v) {
  Value x;
  x.type = Type::kBool;
  x.b = v;
  return x;
}

Value Value::integer(int64_t v) {
  Value x;
  x.type = Type::kInt;
  x.i = v;
  return x;
}

Value Value::real(double v) {
  Value x;
  x.type = Type::kFloat;
  x.f = v;
  return x;
}

Value Value::str(std::string v) {
  Value x;
  x.type = Type::kStr;
  x.s = std::move(v);
  return x;
}

Value Value::list(std::vector<Value> items) {
  Value x;
  x.type = Type::kList;
  x.items = std::move(items);
  return x;
}

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
    out += std::string("e") + (exponent < 0 ? "-" : "+") + (magnitude < 10 ? "0" : "") + std::to_string(magnitude);
  }
  return (negative ? "-" : "") + out;
}

std::string py_repr(const Value& v) {
  if (v.type != Value::Type::kStr) return py_str(v);
  const bool double_quotes = v.s.find('\'') != std::string::npos && v.s.find('"') == std::string::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (char c : v.s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == quote) {
      out += std::string("\\") + c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out + quote;
}

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

std::optional<double> python_float(std::string_view text) {
  const std::string t(trim(text));
  if (t.empty() || t.find_first_of("xXpP_") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return value;
}

Value typed_set_value(const std::string& text) {
  if (auto i = python_int(text)) return Value::integer(*i);
  if (auto f = python_float(text)) return Value::real(*f);
  return Value::str(text);
}

namespace {

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

}  // namespace

Value from_yaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted and block scalars "!", plain ones "?".
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return Value::str(node.Scalar());
      return resolve_plain(node.Scalar());
    case YAML::NodeType::Sequence: {
      std::vector<Value> items;
      for (const auto& item : node) items.push_back(from_yaml(item));
      return Value::list(std::move(items));
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
    default: return Value::none();
  }
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
    case Value::Type::kInt:
    case Value::Type::kFloat: return "the number " + py_str(v);
    case Value::Type::kStr: return "the text \"" + v.s + "\"";
    case Value::Type::kList: return "a list";
    case Value::Type::kDict: return "a mapping";
  }
  return "a value";
}

}  // namespace gpusizer::osmo
