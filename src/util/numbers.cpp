#include "gpusizer/util/numbers.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "gpusizer/util/contract.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Digits only, at most max_digits of them (18 fit in int64).
std::optional<int64_t> digits_value(std::string_view text, std::size_t max_digits) {
  if (!all_digits(text) || text.size() > max_digits) return std::nullopt;
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

int64_t power_of_ten(int exponent) {
  int64_t power = 1;
  for (int i = 0; i < exponent; ++i) power *= 10;
  return power;
}

}  // namespace

std::string whole_number_text(int64_t minimum, int64_t maximum) {
  if (maximum != kMaxWhole) return "a whole number from " + std::to_string(minimum) + " to " + std::to_string(maximum);
  if (minimum > 0) return "a whole number of at least " + std::to_string(minimum);
  return "a whole number";
}

Result<int64_t> read_whole(std::string_view text, int64_t minimum, int64_t maximum) {
  GPU_SIZER_REQUIRE(0 <= minimum && minimum <= maximum && maximum < 1000000000000000000);
  const auto value = digits_value(text, 18);
  if (!value || *value < minimum || *value > maximum) {
    return Status::invalid_argument("must be " + whole_number_text(minimum, maximum));
  }
  return *value;
}

Result<int64_t> read_decimal(std::string_view text, int decimals, int64_t minimum, int64_t maximum) {
  GPU_SIZER_REQUIRE(0 <= decimals && decimals <= 9 && 0 <= minimum && minimum <= maximum);
  const int64_t unit = power_of_ten(decimals);
  auto problem = [&] {
    return Status::invalid_argument("must be a decimal number from " + decimal_text(minimum, unit) + " to " +
                                    decimal_text(maximum, unit) + " with at most " + std::to_string(decimals) +
                                    " decimals");
  };
  const std::size_t dot = text.find('.');
  // Nine digits on each side: the value times 10^9 stays within int64.
  const auto whole = digits_value(text.substr(0, dot), 9);
  if (!whole) return problem();
  int64_t value = *whole * unit;
  if (dot != std::string_view::npos) {
    const std::string_view fraction = text.substr(dot + 1);
    const auto digits = digits_value(fraction, 9);
    if (!digits) return problem();
    // fraction digits / 10^length, times unit: whole only when the digits
    // past `decimals` are zeros.
    const int128 scaled = int128{*digits} * unit;
    const int128 divisor = power_of_ten(static_cast<int>(fraction.size()));
    if (scaled % divisor != 0) return problem();
    value += static_cast<int64_t>(scaled / divisor);
  }
  if (value < minimum || value > maximum) return problem();
  return value;
}

int128 floor_div(int128 value, int128 divisor) {
  GPU_SIZER_REQUIRE(divisor > 0);
  int128 quotient = value / divisor;
  if (value % divisor != 0 && value < 0) --quotient;
  return quotient;
}

int128 ceil_div(int128 value, int128 divisor) {
  GPU_SIZER_REQUIRE(divisor > 0);
  int128 quotient = value / divisor;
  if (value % divisor != 0 && value > 0) ++quotient;
  return quotient;
}

int64_t clamp_to_int64(int128 value) {
  if (value > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (value < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

}  // namespace gpusizer
