// Values as OSMO's Python side types and writes them.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/values.h"

namespace gpusizer::osmo::osmo_values_test {
namespace {

TEST(OsmoValues, SetValuesAreTypedAsOsmoSubmitTypesThem) {
  EXPECT_EQ(typed_set_value("4").type, Value::Type::kInt);
  EXPECT_EQ(typed_set_value("1_000").i, 1000);
  EXPECT_EQ(typed_set_value("1.5").type, Value::Type::kFloat);
  EXPECT_EQ(typed_set_value("192Gi").type, Value::Type::kStr);
  EXPECT_EQ(typed_set_value("1__0").type, Value::Type::kStr);
}

TEST(OsmoValues, DefaultValuesAreTypedAsPyYamlReadsThem) {
  const YAML::Node node = YAML::Load("{a: 10, b: '10', c: yes, d: 1.5, e: ~, f: [1, x], g: 010, h: .inf}");
  EXPECT_EQ(from_yaml(node["a"]).type, Value::Type::kInt);
  EXPECT_EQ(from_yaml(node["b"]).type, Value::Type::kStr) << "quoted stays text";
  EXPECT_EQ(py_str(from_yaml(node["c"])), "True");
  EXPECT_EQ(py_str(from_yaml(node["d"])), "1.5");
  EXPECT_EQ(py_str(from_yaml(node["e"])), "None");
  EXPECT_EQ(py_str(from_yaml(node["f"])), "[1, 'x']");
  EXPECT_EQ(from_yaml(node["g"]).type, Value::Type::kStr) << "a leading zero is not a YAML 1.1 decimal";
  EXPECT_EQ(py_str(from_yaml(node["h"])), "inf");
}

TEST(OsmoValues, WrittenAsPythonWritesThem) {
  EXPECT_EQ(py_float(1.0), "1.0");
  EXPECT_EQ(py_float(1e16), "1e+16");
  EXPECT_EQ(py_float(0.0001), "0.0001");
  EXPECT_EQ(py_float(0.00001), "1e-05");
  EXPECT_EQ(py_float(-2.5), "-2.5");
  EXPECT_EQ(py_repr(Value::str("it's")), "\"it's\"");
  EXPECT_EQ(py_repr(Value::str("a\nb")), "'a\\nb'");
  EXPECT_EQ(describe(Value::integer(4)), "the number 4");
  EXPECT_EQ(describe(Value::str("x")), "the text \"x\"");
}

TEST(OsmoValues, PythonIntRefusesWhatPythonRefuses) {
  EXPECT_EQ(python_int(" -12 "), -12);
  EXPECT_FALSE(python_int("_1"));
  EXPECT_FALSE(python_int("1_"));
  EXPECT_FALSE(python_int("99999999999999999999"));
  EXPECT_FALSE(python_int("1.0"));
  EXPECT_EQ(python_float("2e3"), 2000.0);
  EXPECT_FALSE(python_float("0x10"));
}

}  // namespace
}  // namespace gpusizer::osmo::osmo_values_test
