// The one reader of whole numbers and of decimals, their one wording, and
// the integer arithmetic the rules share.
#include "gpusizer/util/numbers.h"

#include <limits>

#include <gtest/gtest.h>

namespace gpusizer::numbers_test {
namespace {

TEST(ReadWhole, DigitsWithinTheRange) {
  EXPECT_EQ(read_whole("0", 0, 1024).value(), 0);
  EXPECT_EQ(read_whole("1024", 0, 1024).value(), 1024);
  EXPECT_EQ(read_whole("007", 0, 1024).value(), 7);
  EXPECT_EQ(read_whole("999999999", 1).value(), 999'999'999);
  EXPECT_EQ(read_whole("1073741824", 1024, int64_t{1} << 30).value(), int64_t{1} << 30);
}

TEST(ReadWhole, AnythingElseIsRefusedInOneWording) {
  for (const char* text : {"", "-1", "+1", " 1", "1 ", "1.0", "1e3", "twelve", "0x10", "1025"}) {
    auto value = read_whole(text, 0, 1024);
    ASSERT_FALSE(value.ok()) << text;
    EXPECT_EQ(value.error(), "must be a whole number from 0 to 1024") << text;
    EXPECT_EQ(value.status().code(), ProblemCode::kBadValue);
  }
  EXPECT_EQ(read_whole("0", 1).error(), "must be a whole number of at least 1");
  EXPECT_EQ(read_whole("1000000000", 0).error(), "must be a whole number");
  // Nineteen digits would overflow int64: refused, never wrapped.
  EXPECT_FALSE(read_whole("9999999999999999999", 0, 999'999'999'999'999'999).ok());
}

TEST(ReadDecimal, HeldInTheUnitsOfItsDecimals) {
  EXPECT_EQ(read_decimal("0.85", 3, 1, 1000).value(), 850);
  EXPECT_EQ(read_decimal("1", 3, 1, 1000).value(), 1000);
  EXPECT_EQ(read_decimal("1.56", 3, 1000, 1'000'000).value(), 1560);
  EXPECT_EQ(read_decimal("0.8500", 3, 1, 1000).value(), 850) << "zeros past the decimals change nothing";
  EXPECT_EQ(read_decimal("1.5", 9, 0, std::numeric_limits<int64_t>::max()).value(), 1'500'000'000);
  EXPECT_EQ(read_decimal("16", 0, 0, 1'000'000).value(), 16);
}

TEST(ReadDecimal, AnythingElseIsRefusedInOneWording) {
  for (const char* text : {"", ".5", "1.", "1..5", "-0.5", "85%", "0.8555", "1e3", "2", "0.0001"}) {
    auto value = read_decimal(text, 3, 1, 1000);
    ASSERT_FALSE(value.ok()) << text;
    EXPECT_EQ(value.error(), "must be a decimal number from 0.001 to 1 with at most 3 decimals") << text;
  }
  // More than nine digits on a side could overflow: refused.
  EXPECT_FALSE(read_decimal("1.0000000001", 9, 0, std::numeric_limits<int64_t>::max()).ok());
  EXPECT_FALSE(read_decimal("1000000000", 0, 0, std::numeric_limits<int64_t>::max()).ok());
}

TEST(Arithmetic, DivisionRoundsTheWayItSays) {
  EXPECT_EQ(ceil_div(7, 2), 4);
  EXPECT_EQ(ceil_div(6, 2), 3);
  EXPECT_EQ(ceil_div(-7, 2), -3);
  EXPECT_EQ(floor_div(-7, 2), -4);
  EXPECT_EQ(floor_div(7, 2), 3);
  EXPECT_EQ(ceil_div(0, 5), 0);
}

TEST(Arithmetic, ClampSaturatesAtInt64sEnds) {
  const int128 huge = int128{std::numeric_limits<int64_t>::max()} * 4;
  EXPECT_EQ(clamp_to_int64(huge), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(clamp_to_int64(-huge), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(clamp_to_int64(42), 42);
}

}  // namespace
}  // namespace gpusizer::numbers_test
