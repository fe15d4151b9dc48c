// Numbers as people write them in policies, annotations and flags, and the
// exact integer arithmetic the sizing rules do with them. One reader per
// kind of number and one wording for what is wrong with one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gpusizer/util/result.h"

namespace gpusizer {

// GCC and Clang's 128-bit integer; __extension__ keeps -Wpedantic quiet.
__extension__ typedef __int128 int128;

// The maximum of a whole number with no bound of its own: nine digits,
// beyond any count a policy or annotation means, and small enough that
// products of a few of them stay exact.
inline constexpr int64_t kMaxWhole = 999'999'999;

// A gigabyte as the seeds write GB (10^9 bytes), a mebibyte and a gibibyte.
inline constexpr int64_t kGB = 1'000'000'000;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// "a whole number from 1 to 1024"; with the maximum kMaxWhole, "a whole
// number of at least 1", or "a whole number" from 0.
std::string whole_number_text(int64_t minimum, int64_t maximum = kMaxWhole);

// Digits only (no sign, point, space or unit), within [minimum, maximum].
// Fails with "must be " + whole_number_text(minimum, maximum); a caller
// whose message does not already show the text adds what it found.
// REQUIRES: 0 <= minimum <= maximum < 10^18.
Result<int64_t> read_whole(std::string_view text, int64_t minimum, int64_t maximum = kMaxWhole);

// A plain decimal ("40", "0.85", "1.5": digits, then optionally a point and
// more digits; no sign, exponent or unit), returned times 10^decimals
// ("0.85" with 3 decimals: 850). At most 9 digits on each side of the
// point; the value times 10^decimals must be whole ("0.8500" is 850,
// "0.8555" has more than 3 decimals) and within [minimum, maximum], both
// also times 10^decimals. Fails with "must be a decimal number from 0.001
// to 1 with at most 3 decimals".
// REQUIRES: 0 <= decimals <= 9, 0 <= minimum <= maximum.
Result<int64_t> read_decimal(std::string_view text, int decimals, int64_t minimum, int64_t maximum);

// Division rounding toward -infinity, and toward +infinity.
// REQUIRES: divisor > 0.
int128 floor_div(int128 value, int128 divisor);
int128 ceil_div(int128 value, int128 divisor);

// The value within int64's range, saturating at either end.
int64_t clamp_to_int64(int128 value);

}  // namespace gpusizer
