// Quantity must agree with Kubernetes (k8s.io/apimachinery/pkg/api/resource)
// on what parses, what it is worth and how it prints, because the webhook
// writes these strings back into pod specs the API server re-parses.

#include "gpusizer/quantity/quantity.h"

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gpusizer::quantity_test {
namespace {

using Format = Quantity::Format;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Parses text that the test expects to be valid.
Quantity q(const std::string& text) {
  Result<Quantity> parsed = Quantity::parse(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? parsed.value() : Quantity();
}

const Quantity kMax = Quantity::from_bytes(kInt64Max);
const Quantity kMin = Quantity::from_bytes(-kInt64Max);

std::string format_name(Format format) {
  switch (format) {
    case Format::kDecimalSI: return "DecimalSI";
    case Format::kBinarySI: return "BinarySI";
    case Format::kDecimalExponent: return "DecimalExponent";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Valid input: value, format and canonical form.

struct Canonical {
  std::string text;
  std::string canonical;
  Format format;
};

std::ostream& operator<<(std::ostream& os, const Canonical& c) {
  return os << '"' << c.text << "\" -> \"" << c.canonical << "\" " << format_name(c.format);
}

class CanonicalTest : public ::testing::TestWithParam<Canonical> {};

TEST_P(CanonicalTest, PrintsCanonicallyAndRoundTrips) {
  const Canonical& c = GetParam();
  const Quantity parsed = q(c.text);
  EXPECT_EQ(parsed.to_string(), c.canonical);
  EXPECT_EQ(format_name(parsed.format()), format_name(c.format));

  // Printing and re-parsing must give back the same value (and, for these
  // inputs, the same text), or a patched pod spec would drift.
  const Quantity reparsed = q(c.canonical);
  EXPECT_EQ(reparsed, parsed) << c.canonical;
  EXPECT_EQ(reparsed.to_string(), c.canonical);
}

INSTANTIATE_TEST_SUITE_P(
    BinarySuffixes, CanonicalTest,
    ::testing::Values(Canonical{"1Ki", "1Ki", Format::kBinarySI}, Canonical{"1Mi", "1Mi", Format::kBinarySI},
                      Canonical{"1Gi", "1Gi", Format::kBinarySI}, Canonical{"1Ti", "1Ti", Format::kBinarySI},
                      Canonical{"1Pi", "1Pi", Format::kBinarySI}, Canonical{"1Ei", "1Ei", Format::kBinarySI},
                      Canonical{"7Ei", "7Ei", Format::kBinarySI}, Canonical{"1023Ki", "1023Ki", Format::kBinarySI},
                      Canonical{"2048Ki", "2Mi", Format::kBinarySI}, Canonical{"1024Gi", "1Ti", Format::kBinarySI},
                      Canonical{"1.5Gi", "1536Mi", Format::kBinarySI},
                      Canonical{"-1.5Gi", "-1536Mi", Format::kBinarySI},
                      Canonical{"-2048Ki", "-2Mi", Format::kBinarySI},
                      // 1536 bytes: whole, but 1536/1024 is not, so no suffix.
                      Canonical{"1.5Ki", "1536", Format::kBinarySI},
                      // Below 1024 bytes binary quantities print as decimal.
                      Canonical{"0.5Ki", "512", Format::kBinarySI}, Canonical{"1023", "1023", Format::kDecimalSI},
                      // Not whole bytes: printed as decimal so nothing is lost.
                      Canonical{"0.9Gi", "966367641600m", Format::kBinarySI},
                      Canonical{"1.1Ki", "1126400m", Format::kBinarySI},
                      // Below one byte Kubernetes switches the format itself.
                      Canonical{"0.0001Ki", "102400u", Format::kDecimalSI}, Canonical{"0Ki", "0", Format::kBinarySI}));

INSTANTIATE_TEST_SUITE_P(
    DecimalSuffixes, CanonicalTest,
    ::testing::Values(Canonical{"1n", "1n", Format::kDecimalSI}, Canonical{"1u", "1u", Format::kDecimalSI},
                      Canonical{"1m", "1m", Format::kDecimalSI}, Canonical{"1", "1", Format::kDecimalSI},
                      Canonical{"1k", "1k", Format::kDecimalSI}, Canonical{"1M", "1M", Format::kDecimalSI},
                      Canonical{"1G", "1G", Format::kDecimalSI}, Canonical{"1T", "1T", Format::kDecimalSI},
                      Canonical{"1P", "1P", Format::kDecimalSI},
                      Canonical{"1E", "1E", Format::kDecimalSI},  // exa, not an exponent
                      Canonical{"100M", "100M", Format::kDecimalSI}, Canonical{"1000", "1k", Format::kDecimalSI},
                      Canonical{"12000", "12k", Format::kDecimalSI}, Canonical{"1500000", "1500k", Format::kDecimalSI},
                      Canonical{"1000m", "1", Format::kDecimalSI}, Canonical{"1000n", "1u", Format::kDecimalSI},
                      Canonical{"1.5k", "1500", Format::kDecimalSI}, Canonical{"10", "10", Format::kDecimalSI},
                      Canonical{"0.5m", "500u", Format::kDecimalSI}, Canonical{"0", "0", Format::kDecimalSI},
                      Canonical{"9223372036854775807", "9223372036854775807", Format::kDecimalSI},
                      Canonical{"-9223372036854775807", "-9223372036854775807", Format::kDecimalSI}));

INSTANTIATE_TEST_SUITE_P(
    SignsAndFractions, CanonicalTest,
    ::testing::Values(Canonical{"1.5", "1500m", Format::kDecimalSI}, Canonical{"-1.5", "-1500m", Format::kDecimalSI},
                      Canonical{"+1", "1", Format::kDecimalSI}, Canonical{"-1", "-1", Format::kDecimalSI},
                      Canonical{"-0", "0", Format::kDecimalSI}, Canonical{"1.", "1", Format::kDecimalSI},
                      Canonical{".5", "500m", Format::kDecimalSI}, Canonical{"-.5", "-500m", Format::kDecimalSI},
                      Canonical{"0.1", "100m", Format::kDecimalSI}, Canonical{"001.500", "1500m", Format::kDecimalSI},
                      Canonical{"1.Gi", "1Gi", Format::kBinarySI}));

INSTANTIATE_TEST_SUITE_P(
    Exponents, CanonicalTest,
    ::testing::Values(
        Canonical{"1e3", "1e3", Format::kDecimalExponent}, Canonical{"1E3", "1e3", Format::kDecimalExponent},
        Canonical{"1e+3", "1e3", Format::kDecimalExponent}, Canonical{"1E+2", "100", Format::kDecimalExponent},
        Canonical{"1e-2", "10e-3", Format::kDecimalExponent}, Canonical{"1e-3", "1e-3", Format::kDecimalExponent},
        Canonical{"-1e3", "-1e3", Format::kDecimalExponent}, Canonical{"1e4", "10e3", Format::kDecimalExponent},
        Canonical{"1.5e3", "1500", Format::kDecimalExponent}, Canonical{"1.5e0", "1500e-3", Format::kDecimalExponent},
        Canonical{"123e-2", "1230e-3", Format::kDecimalExponent}, Canonical{"1e0", "1", Format::kDecimalExponent},
        Canonical{"1.e3", "1e3", Format::kDecimalExponent}, Canonical{".5e1", "5", Format::kDecimalExponent},
        Canonical{"1e18", "1e18", Format::kDecimalExponent}, Canonical{"1e-9", "1e-9", Format::kDecimalExponent},
        Canonical{"0e3", "0", Format::kDecimalExponent}, Canonical{"1e0003", "1e3", Format::kDecimalExponent}));

const std::string k399Zeros(399, '0');

INSTANTIATE_TEST_SUITE_P(RoundingAndLongInput, CanonicalTest,
                         ::testing::Values(
                             // Finer than 1n rounds the magnitude up, for either sign.
                             Canonical{"0.0000000001", "1n", Format::kDecimalSI},
                             Canonical{"-0.0000000001", "-1n", Format::kDecimalSI},
                             Canonical{"0.0000000011", "2n", Format::kDecimalSI},
                             Canonical{"0.5n", "1n", Format::kDecimalSI},
                             Canonical{"1.0000000001", "1000000001n", Format::kDecimalSI},
                             Canonical{"1e-10", "1e-9", Format::kDecimalExponent},
                             Canonical{"1e-999999999", "1e-9", Format::kDecimalExponent},
                             Canonical{"1e-99999999999999999999999999", "1e-9", Format::kDecimalExponent},
                             Canonical{"0.000000000000000000000000000001Ei", "1n", Format::kDecimalSI},
                             // 400 significant digits, exactly representable or rounded exactly.
                             Canonical{"0." + k399Zeros + "1", "1n", Format::kDecimalSI},
                             Canonical{"0." + k399Zeros + "1e400", "1", Format::kDecimalExponent},
                             Canonical{"1" + k399Zeros + "e-399", "1", Format::kDecimalExponent},
                             Canonical{"1." + k399Zeros + "1", "1000000001n", Format::kDecimalSI},
                             Canonical{"0." + k399Zeros + "1Ki", "1n", Format::kDecimalSI},
                             Canonical{"000" + k399Zeros + "1Ki", "1Ki", Format::kBinarySI}));

// Canonical strings of values built from integers must re-parse to the same
// value; this sweeps every suffix boundary in both families.
TEST(QuantityRoundTrip, GeneratedValues) {
  std::vector<Quantity> values;
  for (int64_t base : {1, 3, 7, 999, 1000, 1001, 1023, 1024, 1536, 123456789}) {
    for (int64_t scale = 1; scale <= kInt64Max / base / 10; scale *= 10) {
      values.push_back(Quantity::from_milli(base * scale));
      values.push_back(Quantity::from_milli(-base * scale));
    }
    for (int64_t scale = 1; scale <= kInt64Max / base / 2; scale *= 2) {
      values.push_back(Quantity::from_bytes(base * scale));
      values.push_back(Quantity::from_bytes(-base * scale));
    }
  }
  ASSERT_GT(values.size(), 1000u);
  for (const Quantity& value : values) {
    const std::string text = value.to_string();
    Result<Quantity> reparsed = Quantity::parse(text);
    ASSERT_TRUE(reparsed.ok()) << text << ": " << reparsed.error();
    EXPECT_EQ(reparsed.value(), value) << text;
    // The text itself is stable only once it is decimal: 2000 bytes print as
    // "2000" (not a multiple of 1024), which re-parses as DecimalSI "2k".
    const std::string again = reparsed.value().to_string();
    EXPECT_EQ(Quantity::parse(again).value().to_string(), again) << text;
  }
}

TEST(QuantityRoundTrip, ExtremesPrintExactly) {
  EXPECT_EQ(kMax.to_string(), "9223372036854775807");
  EXPECT_EQ(kMin.to_string(), "-9223372036854775807");
  EXPECT_EQ(Quantity::from_milli(kInt64Min).to_string(), "-9223372036854775808m");
  EXPECT_EQ(Quantity::from_milli(kInt64Max).to_string(), "9223372036854775807m");
  EXPECT_EQ(q("9223372036854775806.999999999").to_string(), "9223372036854775806999999999n");
}

// ---------------------------------------------------------------------------
// Invalid input: each error names the input and says what is wrong.

struct Invalid {
  std::string text;
  std::string shown;   // how the message quotes the text
  std::string reason;  // a substring the message must contain
};

std::ostream& operator<<(std::ostream& os, const Invalid& c) { return os << "quantity " << c.shown; }

class InvalidTest : public ::testing::TestWithParam<Invalid> {};

TEST_P(InvalidTest, FailsNamingTheInputAndReason) {
  const Invalid& c = GetParam();
  const Result<Quantity> parsed = Quantity::parse(c.text);
  ASSERT_FALSE(parsed.ok()) << "parsed as " << parsed.value().to_string();
  EXPECT_EQ(parsed.error().rfind("quantity " + c.shown + ": ", 0), 0u) << parsed.error();
  EXPECT_NE(parsed.error().find(c.reason), std::string::npos) << parsed.error();
  EXPECT_EQ(parsed.error().find('\n'), std::string::npos) << parsed.error();
}

const std::string kSuffixList = "(use Ki, Mi, Gi, Ti, Pi, Ei, or n, u, m, k, M, G, T, P, E)";

INSTANTIATE_TEST_SUITE_P(
    Malformed, InvalidTest,
    ::testing::Values(
        Invalid{"", R"("")", "empty"}, Invalid{"1KB", R"("1KB")", R"(unknown suffix "KB" )" + kSuffixList},
        Invalid{"1Kib", R"("1Kib")", R"(unknown suffix "Kib" )" + kSuffixList},
        Invalid{"1m5", R"("1m5")", R"(unknown suffix "m5")"}, Invalid{"1i", R"("1i")", R"(unknown suffix "i")"},
        Invalid{"1,5", R"("1,5")", R"(unknown suffix ",5")"}, Invalid{"0x10", R"("0x10")", R"(unknown suffix "x10")"},
        Invalid{"1K", R"("1K")", R"(unknown suffix "K" (suffixes are case-sensitive: did you mean "k"?))"},
        Invalid{"1gi", R"("1gi")", R"(did you mean "Gi"?)"}, Invalid{"1ki", R"("1ki")", R"(did you mean "Ki"?)"},
        Invalid{"1MI", R"("1MI")", R"(did you mean "Mi"?)"}, Invalid{"--1", R"("--1")", "more than one sign"},
        Invalid{"+-1", R"("+-1")", "more than one sign"}, Invalid{"-+1", R"("-+1")", "more than one sign"},
        Invalid{"1e", R"("1e")", R"(exponent "e" has no digits)"},
        Invalid{"1e+", R"("1e+")", R"(invalid exponent "e+")"}, Invalid{"1E-", R"("1E-")", R"(invalid exponent "E-")"},
        Invalid{"1e1.5", R"("1e1.5")", R"(invalid exponent "e1.5")"},
        Invalid{"1e3e3", R"("1e3e3")", R"(invalid exponent "e3e3")"},
        Invalid{"1e3Ki", R"("1e3Ki")", R"(invalid exponent "e3Ki")"},
        Invalid{"e3", R"("e3")", "no number before the suffix"}, Invalid{".", R"(".")", "no number before the suffix"},
        Invalid{"-", R"("-")", "no number before the suffix"}, Invalid{"+", R"("+")", "no number before the suffix"},
        Invalid{"-.", R"("-.")", "no number before the suffix"},
        Invalid{"abc", R"("abc")", "no number before the suffix"},
        Invalid{"Ki", R"("Ki")", "no number before the suffix"},
        Invalid{"1.5.5", R"("1.5.5")", "more than one decimal point"},
        Invalid{"1..5", R"("1..5")", "more than one decimal point"}, Invalid{" 1", R"(" 1")", "contains whitespace"},
        Invalid{"1 ", R"("1 ")", "contains whitespace"}, Invalid{"1 Gi", R"("1 Gi")", "contains whitespace"},
        // Control characters and bytes that are not UTF-8 are escaped so the
        // message stays one valid line (in_quotes); other characters are kept.
        Invalid{"1\n", R"("1\u000a")", "contains whitespace"}, Invalid{"1\"", R"("1\"")", R"(unknown suffix "\"")"},
        Invalid{"1\xc2\xb5", "\"1\xc2\xb5\"", "unknown suffix \"\xc2\xb5\""},
        Invalid{"1\xff", R"("1\xff")", R"(unknown suffix "\xff")"}));

INSTANTIATE_TEST_SUITE_P(
    TooLarge, InvalidTest,
    ::testing::Values(
        Invalid{"9223372036854775808", R"("9223372036854775808")",
                "exceeds the maximum magnitude of 9223372036854775807"},
        Invalid{"-9223372036854775808", R"("-9223372036854775808")", "exceeds the maximum"},
        Invalid{"9223372036854775807.000000001", R"("9223372036854775807.000000001")", "exceeds the maximum"},
        // Rounding up to the next nano crosses the limit too.
        Invalid{"9223372036854775807.0000000001", R"("9223372036854775807.0000000001")", "exceeds the maximum"},
        Invalid{"8Ei", R"("8Ei")", "exceeds the maximum"}, Invalid{"-8Ei", R"("-8Ei")", "exceeds the maximum"},
        Invalid{"10E", R"("10E")", "exceeds the maximum"}, Invalid{"1e19", R"("1e19")", "exceeds the maximum"},
        Invalid{"1e999999999", R"("1e999999999")", "exceeds the maximum"},
        Invalid{"1e99999999999999999999999999", R"("1e99999999999999999999999999")", "exceeds the maximum"},
        // Long enough to overflow int128 itself if digits were not checked
        // as they accumulate.
        Invalid{"99999999999999999999Ei", R"("99999999999999999999Ei")", "exceeds the maximum"},
        Invalid{"9223372036854775807000000000000n", R"("9223372036854775807000000000000n")", "exceeds the maximum"},
        // 400 digits: the message quotes the start and says how long it was.
        Invalid{"1" + k399Zeros, "\"1" + std::string(63, '0') + "\"... (400 bytes)", "exceeds the maximum"},
        Invalid{"0." + k399Zeros + "1e430", "\"0." + std::string(62, '0') + "\"... (406 bytes)",
                "exceeds the maximum"}));

// ---------------------------------------------------------------------------
// Comparisons ignore the format.

TEST(QuantityCompare, AcrossFamilies) {
  EXPECT_EQ(q("1Gi"), q("1024Mi"));
  EXPECT_EQ(q("1"), q("1000m"));
  EXPECT_EQ(q("1E"), q("1e18"));
  EXPECT_EQ(q("1k"), q("1e3"));
  EXPECT_EQ(q("0.5"), q("500m"));
  EXPECT_EQ(q("-0"), Quantity());
  EXPECT_LT(q("1k"), q("1Ki"));
  EXPECT_GT(q("1Mi"), q("1M"));
  EXPECT_LT(q("-1"), q("0"));
  EXPECT_LT(q("999999999n"), q("1"));
  EXPECT_NE(q("1n"), q("0"));
}

TEST(QuantityCompare, Predicates) {
  EXPECT_TRUE(q("-1n").is_negative());
  EXPECT_FALSE(q("0").is_negative());
  EXPECT_TRUE(q("0Gi").is_zero());
  EXPECT_FALSE(q("1n").is_zero());
  EXPECT_TRUE(Quantity().is_zero());
  EXPECT_EQ(format_name(Quantity().format()), "DecimalSI");
}

// ---------------------------------------------------------------------------
// Rounded accessors.

struct Rounded {
  std::string text;
  int64_t milli;
  int64_t value;
  bool whole;
};

std::ostream& operator<<(std::ostream& os, const Rounded& c) { return os << c.text; }

class RoundedTest : public ::testing::TestWithParam<Rounded> {};

TEST_P(RoundedTest, RoundsTowardPositiveInfinity) {
  const Rounded& c = GetParam();
  const Quantity value = q(c.text);
  EXPECT_EQ(value.milli_ceil(), c.milli);
  EXPECT_EQ(value.value_ceil(), c.value);
  EXPECT_EQ(value.is_whole(), c.whole);
}

INSTANTIATE_TEST_SUITE_P(All, RoundedTest,
                         ::testing::Values(Rounded{"0", 0, 0, true}, Rounded{"1", 1000, 1, true},
                                           Rounded{"400m", 400, 1, false},  // 400m of memory is 1 byte
                                           Rounded{"1.5", 1500, 2, false}, Rounded{"1000m", 1000, 1, true},
                                           Rounded{"1n", 1, 1, false}, Rounded{"1.000001m", 2, 1, false},
                                           Rounded{"-400m", -400, 0, false}, Rounded{"-1.5", -1500, -1, false},
                                           Rounded{"-1n", 0, 0, false}, Rounded{"-2", -2000, -2, true},
                                           Rounded{"1Gi", 1073741824000, 1073741824, true},
                                           Rounded{"0.5Ki", 512000, 512, true},
                                           // Milli-units no longer fit in int64: saturate.
                                           Rounded{"9223372036854775807", kInt64Max, kInt64Max, true},
                                           Rounded{"-9223372036854775807", kInt64Min, -kInt64Max, true},
                                           Rounded{"9223372036854775.808", kInt64Max, 9223372036854776, false}));

// ---------------------------------------------------------------------------
// Constructors and arithmetic.

TEST(QuantityConstruct, FromMilliIsDecimal) {
  EXPECT_EQ(Quantity::from_milli(32000).to_string(), "32");
  EXPECT_EQ(Quantity::from_milli(1500).to_string(), "1500m");
  EXPECT_EQ(Quantity::from_milli(-250).to_string(), "-250m");
  EXPECT_EQ(Quantity::from_milli(1500), q("1.5"));
  EXPECT_EQ(format_name(Quantity::from_milli(2048000).format()), "DecimalSI");
  EXPECT_EQ(Quantity::from_milli(2048000).to_string(), "2048");
}

TEST(QuantityConstruct, FromBytesIsBinary) {
  EXPECT_EQ(Quantity::from_bytes(int64_t{192} << 30).to_string(), "192Gi");
  EXPECT_EQ(Quantity::from_bytes(1536).to_string(), "1536");
  EXPECT_EQ(Quantity::from_bytes(1000).to_string(), "1k");  // below 1024: decimal
  EXPECT_EQ(format_name(Quantity::from_bytes(1).format()), "BinarySI");
  // -2^63 is outside the symmetric range every operation keeps.
  EXPECT_EQ(Quantity::from_bytes(kInt64Min), kMin);
}

TEST(QuantityArithmetic, PlusKeepsLeftFormat) {
  EXPECT_EQ(q("1Gi").plus(q("512Mi")).to_string(), "1536Mi");
  EXPECT_EQ(q("1").plus(q("500m")).to_string(), "1500m");
  EXPECT_EQ(q("1Gi").plus(q("-1Gi")).to_string(), "0");
  EXPECT_EQ(q("1e3").plus(q("1")).to_string(), "1001");
  EXPECT_EQ(q("1e3").plus(q("1k")).to_string(), "2e3");
  EXPECT_EQ(q("1M").plus(q("1Mi")).to_string(), "2048576");
  EXPECT_EQ(format_name(q("1M").plus(q("1Mi")).format()), "DecimalSI");
  EXPECT_EQ(q("1Mi").plus(q("1048576")).to_string(), "2Mi");
  EXPECT_EQ(format_name(q("1Mi").plus(q("1M")).format()), "BinarySI");
}

TEST(QuantityArithmetic, PlusFromZeroTakesTheOtherFormat) {
  // Kubernetes Add does this, so a sum started from Quantity() prints in the
  // family of what was added.
  EXPECT_EQ(Quantity().plus(q("192Gi")).to_string(), "192Gi");
  EXPECT_EQ(format_name(Quantity().plus(q("1e3")).format()), "DecimalExponent");
}

TEST(QuantityArithmetic, PlusSaturates) {
  EXPECT_EQ(kMax.plus(q("1n")), kMax);
  EXPECT_EQ(kMax.plus(kMax), kMax);
  EXPECT_EQ(kMin.plus(q("-1")), kMin);
  EXPECT_EQ(q("7Ei").plus(q("1Ei")).to_string(), "9223372036854775807");
  EXPECT_EQ(kMax.plus(q("-1")).to_string(), "9223372036854775806");
}

TEST(QuantityArithmetic, Times) {
  EXPECT_EQ(q("1Gi").times(3).to_string(), "3Gi");
  EXPECT_EQ(q("1.5").times(-2).to_string(), "-3");
  EXPECT_EQ(q("1500m").times(0).to_string(), "0");
  EXPECT_EQ(q("1e3").times(2).to_string(), "2e3");
  EXPECT_EQ(kMax.times(-1), kMin);
  EXPECT_EQ(q("1Ei").times(8), kMax);
  EXPECT_EQ(q("1Ei").times(-8), kMin);
  EXPECT_EQ(q("-1Ei").times(-8), kMax);
  EXPECT_EQ(q("1").times(kInt64Min), kMin);
  // nanos * factor overflows even int128 here.
  EXPECT_EQ(kMax.times(kInt64Max), kMax);
  EXPECT_EQ(kMax.times(kInt64Min), kMin);
}

struct Share {
  std::string value;
  int64_t numerator;
  int64_t denominator;
  std::string granule;
  std::string expected;
};

std::ostream& operator<<(std::ostream& os, const Share& c) {
  return os << c.value << " * " << c.numerator << "/" << c.denominator << " to " << c.granule;
}

class ShareTest : public ::testing::TestWithParam<Share> {};

TEST_P(ShareTest, RoundsUpToGranule) {
  const Share& c = GetParam();
  const Quantity granule = c.granule.empty() ? Quantity() : q(c.granule);
  EXPECT_EQ(q(c.value).share_ceil(c.numerator, c.denominator, granule).to_string(), c.expected);
}

INSTANTIATE_TEST_SUITE_P(All, ShareTest,
                         ::testing::Values(Share{"144Gi", 2, 3, "1Mi", "96Gi"}, Share{"32", 1, 3, "1m", "10667m"},
                                           Share{"100Gi", 1, 3, "1Mi", "34134Mi"}, Share{"144Gi", 3, 2, "1Gi", "216Gi"},
                                           Share{"10", 1, 4, "1", "3"}, Share{"10", 1, 5, "1", "2"},
                                           Share{"1", 1, 3, "1n", "333333334n"},
                                           Share{"1", 1, 1, "1Gi", "1073741824"},  // keeps this quantity's format
                                           Share{"0", 1, 3, "1Mi", "0"}, Share{"5", 0, 3, "1", "0"},
                                           // Negative shares round toward +infinity, i.e. toward zero.
                                           Share{"-10", 1, 4, "1", "-2"}, Share{"10", -1, 4, "1", "-2"},
                                           Share{"10", 1, -4, "1", "-2"}, Share{"-10", -1, 4, "1", "3"},
                                           // Exact although value * numerator needs more than 128 bits.
                                           Share{"1Ei", kInt64Max, kInt64Max, "1n", "1Ei"},
                                           Share{"7Ei", kInt64Max - 1, kInt64Max, "1n", "8070450532247928831125m"},
                                           // Saturation.
                                           Share{"9223372036854775807", 2, 1, "1", "9223372036854775807"},
                                           Share{"9223372036854775807", kInt64Max, 1, "1", "9223372036854775807"},
                                           Share{"-9223372036854775807", kInt64Max, 1, "1", "-9223372036854775807"},
                                           Share{"9223372036854775807", 1, 1, "1Ei", "9223372036854775807"},
                                           // Outside the REQUIRES: a zero denominator saturates, a zero granule
                                           // rounds to the nano.
                                           Share{"5", 1, 0, "1", "9223372036854775807"},
                                           Share{"-5", 1, 0, "1", "-9223372036854775807"},
                                           Share{"10", 1, 3, "", "3333333334n"}));

// A share rounded down: the most a pod may take of a node's allocatable
// without taking another pod's GPU's share.
TEST(QuantityShareFloor, RoundsDownToTheGranule) {
  EXPECT_EQ(q("95500m").share_floor(1, 8, q("1m")).to_string(), "11937m");  // 11937.5m
  EXPECT_EQ(q("32").share_floor(1, 3, q("1m")).to_string(), "10666m");
  EXPECT_EQ(q("100Gi").share_floor(1, 3, q("1Mi")).to_string(), "34133Mi");
  EXPECT_EQ(q("144Gi").share_floor(2, 3, q("1Mi")).to_string(), "96Gi");  // exact: as share_ceil
  EXPECT_EQ(q("10").share_floor(1, 4, q("1")).to_string(), "2");
  EXPECT_EQ(q("-10").share_floor(1, 4, q("1")).to_string(), "-3");
}

TEST(QuantityMinus, SubtractsKeepingTheFormat) {
  EXPECT_EQ(q("27Gi").minus(q("1Gi")).to_string(), "26Gi");
  EXPECT_EQ(q("8").minus(q("500m")).to_string(), "7500m");
  EXPECT_EQ(q("1Gi").minus(q("2Gi")).to_string(), "-1Gi");
}

}  // namespace
}  // namespace gpusizer::quantity_test
