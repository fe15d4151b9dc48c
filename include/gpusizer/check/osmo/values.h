// Values as OSMO's Python side and its Jinja templates see them: what a
// default-value or a --set value is (its type, as PyYAML and `osmo workflow
// submit` decide it), and how it is written into the rendered spec.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace gpusizer::osmo {

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
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value real(double v);
  static Value str(std::string v);
  static Value list(std::vector<Value> items);
};

// A template variable: its value, and its text as the user gave it (the
// --set text, or str() of the default) for the --set line.
struct Variable {
  Value value;
  std::string text;
};
using Variables = std::map<std::string, Variable, std::less<>>;

// Python str(): what Jinja writes into the rendered text ("True", "1.5",
// "['a', 2]").
std::string py_str(const Value& v);
// Python repr(): strings quoted as Python quotes them.
std::string py_repr(const Value& v);
// Python's repr of a float: shortest round-trip digits, fixed notation for
// exponents -4..15 (always with a fractional part), scientific otherwise.
std::string py_float(double v);

// Python int(text): optional sign, digits with single underscores between;
// nullopt for anything else or beyond int64.
std::optional<int64_t> python_int(std::string_view text);
// Python float(text): decimal or scientific notation, inf, nan.
std::optional<double> python_float(std::string_view text);

// A --set value as `osmo workflow submit` types it: int, float, or string.
Value typed_set_value(const std::string& text);
// A YAML node as PyYAML's safe_load (YAML 1.1) reads it: quoted scalars are
// strings; plain ones null, bool, int, float (with a dot) or string.
Value from_yaml(const YAML::Node& node);

// Numbers for arithmetic: ints, floats and bools (Python's bool is an int).
bool is_number(const Value& v);
double as_double(const Value& v);
int64_t as_int(const Value& v);
// How a message names a value: "the number 4", "the text \"x\"", "a list".
std::string describe(const Value& v);

}  // namespace gpusizer::osmo
