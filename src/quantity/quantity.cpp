// Kubernetes resource quantities held exactly in nano-units.
//
// The parser follows k8s.io/apimachinery/pkg/api/resource (ParseQuantity and
// CanonicalizeBytes) with two deliberate differences: magnitudes above 2^63-1
// units are refused instead of silently capped, and the grammar is the
// documented one (no lone sign, no "." alone), not the scanner's quirks.

#include "gpusizer/quantity/quantity.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

__extension__ typedef unsigned __int128 uint128;

constexpr int64_t kNanosPerUnit = 1'000'000'000;
constexpr int64_t kNanosPerMilli = 1'000'000;
constexpr int128 kMaxNanos = int128{std::numeric_limits<int64_t>::max()} * kNanosPerUnit;
// kMaxNanos has 28 decimal digits; anything with more is certainly too large.
constexpr int64_t kMaxNanosDigits = 28;
// Exponents beyond this are already far outside the representable range (or
// round to 1n), so clamping them keeps later arithmetic in int64.
constexpr int64_t kExponentClamp = 1'000'000'000'000'000;

constexpr std::array<std::string_view, 7> kBinarySuffixes = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
// Indexed by (exponent + 9) / 3 for exponents -9, -6, ..., 18.
constexpr std::array<std::string_view, 10> kDecimalSuffixes = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};

constexpr std::string_view kSuffixHelp = "(use Ki, Mi, Gi, Ti, Pi, Ei, or n, u, m, k, M, G, T, P, E)";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string to_decimal(int128 value) {
  // Most values fit 64 bits, whose division the compiler inlines; 128-bit
  // division is a library call per digit.
  if (value >= std::numeric_limits<int64_t>::min() && value <= std::numeric_limits<int64_t>::max()) {
    return std::to_string(static_cast<int64_t>(value));
  }
  const bool negative = value < 0;
  auto magnitude = negative ? -static_cast<uint128>(value) : static_cast<uint128>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  } while (magnitude != 0);
  return negative ? "-" + digits : digits;
}

int128 clamp_nanos(int128 nanos) {
  if (nanos > kMaxNanos) return kMaxNanos;
  if (nanos < -kMaxNanos) return -kMaxNanos;
  return nanos;
}

// What a suffix means: value = number * 10^decimal_exponent * 1024^binary_power.
struct Suffix {
  int64_t decimal_exponent = 0;
  int binary_power = 0;
  Quantity::Format format = Quantity::Format::kDecimalSI;
};

// Returns the suffix, or the reason it is not one (without the "quantity"
// prefix, which the caller adds).
std::optional<Suffix> parse_suffix(std::string_view text, std::string& reason) {
  using Format = Quantity::Format;
  for (size_t i = 0; i < kDecimalSuffixes.size(); ++i) {
    if (text == kDecimalSuffixes[i]) {
      return Suffix{static_cast<int64_t>(i) * 3 - 9, 0, Format::kDecimalSI};
    }
  }
  for (size_t i = 1; i < kBinarySuffixes.size(); ++i) {
    if (text == kBinarySuffixes[i]) return Suffix{0, static_cast<int>(i), Format::kBinarySI};
  }
  // Checked after the tables: "E" alone is exa, "E3" an exponent.
  if (text.size() > 1 && (text[0] == 'e' || text[0] == 'E')) {
    size_t pos = 1;
    const bool negative = text[pos] == '-';
    if (text[pos] == '-' || text[pos] == '+') ++pos;
    const bool has_digits = pos < text.size();
    int64_t exponent = 0;
    for (; pos < text.size() && is_digit(text[pos]); ++pos) {
      // Saturate rather than overflow; see kExponentClamp.
      exponent = std::min(exponent * 10 + (text[pos] - '0'), kExponentClamp);
    }
    if (!has_digits || pos != text.size()) {
      reason = "invalid exponent " + in_quotes(text) + " (use e or E followed by an integer, such as e3 or E-2)";
      return std::nullopt;
    }
    return Suffix{negative ? -exponent : exponent, 0, Format::kDecimalExponent};
  }
  if (text == "e") {
    reason = "exponent \"e\" has no digits (write e3 or E-2; \"E\" alone means exa, 10^18)";
    return std::nullopt;
  }
  // Suffixes are case-sensitive, and "1gi" or "1K" are common slips; naming
  // the intended suffix saves the reader a trip to the documentation.
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
  };
  const std::string wanted = lower(text);
  for (std::string_view candidate : kBinarySuffixes) {
    if (!candidate.empty() && lower(candidate) == wanted) {
      reason = "unknown suffix " + in_quotes(text) + " (suffixes are case-sensitive: did you mean " +
               in_quotes(candidate) + "?)";
      return std::nullopt;
    }
  }
  for (std::string_view candidate : kDecimalSuffixes) {
    if (!candidate.empty() && lower(candidate) == wanted) {
      reason = "unknown suffix " + in_quotes(text) + " (suffixes are case-sensitive: did you mean " +
               in_quotes(candidate) + "?)";
      return std::nullopt;
    }
  }
  reason = "unknown suffix " + in_quotes(text) + " " + std::string(kSuffixHelp);
  return std::nullopt;
}

// Multiplies a string of decimal digits by a small factor, in place.
void multiply_digits(std::string& digits, uint64_t factor) {
  uint128 carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    const uint128 product = uint128{factor} * static_cast<unsigned>(*it - '0') + carry;
    *it = static_cast<char>('0' + static_cast<int>(product % 10));
    carry = product / 10;
  }
  std::string head;
  for (; carry != 0; carry /= 10) {
    head.insert(head.begin(), static_cast<char>('0' + static_cast<int>(carry % 10)));
  }
  digits.insert(0, head);
}

// The magnitude in nanos of digits * 10^nano_exponent * 1024^binary_power,
// rounded up to a whole nano, or nothing if it exceeds kMaxNanos. digits has
// no leading zeros and is not empty.
std::optional<int128> magnitude_in_nanos(std::string digits, int64_t nano_exponent, int binary_power) {
  // digits >= 10^(size-1), so this bound rejects huge inputs before any work
  // proportional to the exponent.
  if (static_cast<int64_t>(digits.size()) - 1 + nano_exponent > kMaxNanosDigits) {
    return std::nullopt;
  }
  if (nano_exponent >= 0 && digits.size() <= 18) {
    // The usual quantity ("64Gi", "500m", "4"): a whole number of nanos from
    // at most 18 digits (below 2^60), times at most 1024^6 (2^60), times 10
    // only while within kMaxNanos, all exact in int128.
    uint64_t number = 0;
    for (char c : digits) number = number * 10 + static_cast<uint64_t>(c - '0');
    int128 nanos = int128{number} << (10 * binary_power);
    for (int64_t i = 0; i < nano_exponent && nanos <= kMaxNanos; ++i) nanos *= 10;
    if (nanos > kMaxNanos) return std::nullopt;
    return nanos;
  }
  // Working on the digit string keeps the product exact for any input length:
  // fractions finer than 1n may carry hundreds of digits, all of which matter
  // for rounding up.
  multiply_digits(digits, uint64_t{1} << (10 * binary_power));
  bool round_up = false;
  if (nano_exponent >= 0) {
    digits.append(static_cast<size_t>(nano_exponent), '0');  // at most 28, by the bound above
  } else {
    const auto dropped = static_cast<uint64_t>(-nano_exponent);
    const size_t kept = dropped >= digits.size() ? 0 : digits.size() - dropped;
    round_up = digits.find_first_not_of('0', kept) != std::string::npos;
    digits.resize(kept);
  }
  int128 nanos = 0;
  for (char c : digits) {
    nanos = nanos * 10 + (c - '0');
    if (nanos > kMaxNanos) return std::nullopt;  // checked each step, so no overflow
  }
  // Kubernetes rounds the magnitude up (inf.RoundUp) so a tiny request still
  // gets something.
  if (round_up) ++nanos;
  if (nanos > kMaxNanos) return std::nullopt;
  return nanos;
}

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
  auto fail = [text](std::string_view reason) {
    return Status::invalid_argument("quantity " + in_quotes(text) + ": " + std::string(reason));
  };
  if (text.empty()) return fail("empty (expected a number such as 1, 500m or 2Gi)");
  if (text.find_first_of(" \t\n\r\v\f") != std::string_view::npos) {
    return fail("contains whitespace");
  }

  size_t pos = 0;
  const bool negative = text[0] == '-';
  if (text[0] == '-' || text[0] == '+') ++pos;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) {
    return fail("more than one sign");
  }
  const size_t integer_begin = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  const std::string_view integer_digits = text.substr(integer_begin, pos - integer_begin);
  std::string_view fraction_digits;
  if (pos < text.size() && text[pos] == '.') {
    const size_t fraction_begin = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    fraction_digits = text.substr(fraction_begin, pos - fraction_begin);
  }
  if (integer_digits.empty() && fraction_digits.empty()) {
    return fail("no number before the suffix (expected digits such as 1, 1.5 or .5)");
  }
  if (pos < text.size() && text[pos] == '.') return fail("more than one decimal point");

  std::string reason;
  const std::optional<Suffix> suffix = parse_suffix(text.substr(pos), reason);
  if (!suffix) return fail(reason);

  std::string digits(integer_digits);
  digits.append(fraction_digits);
  digits.erase(0, digits.find_first_not_of('0'));  // npos erases everything: the value is 0
  if (digits.empty()) return Quantity(0, suffix->format);

  // value = digits * 10^(exponent - fraction length) units, and 1 unit is 10^9 nanos.
  const int64_t nano_exponent = suffix->decimal_exponent - static_cast<int64_t>(fraction_digits.size()) + 9;
  const std::optional<int128> magnitude = magnitude_in_nanos(std::move(digits), nano_exponent, suffix->binary_power);
  if (!magnitude) {
    return fail("exceeds the maximum magnitude of 9223372036854775807 (2^63-1) units");
  }
  Format format = suffix->format;
  // As Kubernetes does: a binary quantity below one unit cannot be printed
  // with a binary suffix, so it becomes decimal.
  if (format == Format::kBinarySI && *magnitude < kNanosPerUnit) format = Format::kDecimalSI;
  return Quantity(negative ? -*magnitude : *magnitude, format);
}

Quantity Quantity::from_milli(int64_t milli) { return Quantity(int128{milli} * kNanosPerMilli, Format::kDecimalSI); }

Quantity Quantity::from_bytes(int64_t bytes) {
  // -2^63 is one unit beyond the symmetric range every other operation keeps.
  return Quantity(clamp_nanos(int128{bytes} * kNanosPerUnit), Format::kBinarySI);
}

int64_t Quantity::milli_ceil() const { return clamp_to_int64(ceil_div(nanos_, kNanosPerMilli)); }

int64_t Quantity::value_ceil() const { return clamp_to_int64(ceil_div(nanos_, kNanosPerUnit)); }

bool Quantity::is_whole() const { return nanos_ % kNanosPerUnit == 0; }

std::string Quantity::to_string() const {
  if (nanos_ == 0) return "0";
  const bool binary = format_ == Format::kBinarySI && nanos_ % kNanosPerUnit == 0 &&
                      (nanos_ >= int128{1024} * kNanosPerUnit || nanos_ <= int128{-1024} * kNanosPerUnit);
  if (binary) {
    auto units = static_cast<int64_t>(nanos_ / kNanosPerUnit);
    size_t power = 0;
    while (power + 1 < kBinarySuffixes.size() && units % 1024 == 0) {
      units /= 1024;
      ++power;
    }
    return std::to_string(units) + std::string(kBinarySuffixes[power]);
  }
  // Move every trailing zero into the exponent, then give back just enough
  // to land on a multiple of 3 (an SI prefix). nanos fit in 28 digits, so the
  // exponent ends up in [-9, 18].
  int128 mantissa = nanos_;
  int64_t exponent = -9;
  if (mantissa % kNanosPerUnit == 0) {
    // Whole units, the usual case: their nine nano digits go in one step.
    mantissa /= kNanosPerUnit;
    exponent = 0;
  }
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    mantissa *= 10;
    --exponent;
  }
  if (format_ == Format::kDecimalExponent) {
    return to_decimal(mantissa) + (exponent == 0 ? "" : "e" + std::to_string(exponent));
  }
  return to_decimal(mantissa) + std::string(kDecimalSuffixes[static_cast<size_t>(exponent + 9) / 3]);
}

Quantity Quantity::plus(const Quantity& other) const {
  // Operands are within +/- kMaxNanos, so the sum cannot overflow int128. A
  // zero left operand takes the right one's format, as Kubernetes Add does,
  // so sums accumulated from Quantity() print as "192Gi", not "206158430208".
  return Quantity(clamp_nanos(nanos_ + other.nanos_), nanos_ == 0 ? other.format_ : format_);
}

Quantity Quantity::times(int64_t factor) const {
  int128 product = 0;
  if (__builtin_mul_overflow(nanos_, int128{factor}, &product)) {
    return Quantity((nanos_ < 0) != (factor < 0) ? -kMaxNanos : kMaxNanos, format_);
  }
  return Quantity(clamp_nanos(product), format_);
}

// Rounds toward +infinity for every sign, so a negative share never grows in
// magnitude. A negative denominator flips the sign of the ratio; a zero one
// saturates like any other overflow. A granule that is not positive rounds to
// the nearest nano above instead.
Quantity Quantity::share_ceil(int64_t numerator, int64_t denominator, const Quantity& granule) const {
  int128 num = numerator;
  int128 den = denominator;
  if (den < 0) {
    num = -num;
    den = -den;
  }
  const int sign = (nanos_ > 0) - (nanos_ < 0);
  const int num_sign = (num > 0) - (num < 0);
  if (den == 0) return Quantity(static_cast<int128>(sign) * num_sign * kMaxNanos, format_);

  // nanos * num needs up to 156 bits, so split nanos = q*den + r first:
  // nanos*num/den = q*num + r*num/den, and r*num fits because r < den <= 2^63.
  const int128 q = floor_div(nanos_, den);
  const int128 r = nanos_ - q * den;
  const int128 tail = r * num;
  const int128 tail_whole = floor_div(tail, den);
  const bool has_fraction = tail - tail_whole * den != 0;
  int128 whole = 0;
  if (__builtin_mul_overflow(q, num, &whole) || __builtin_add_overflow(whole, tail_whole, &whole)) {
    return Quantity(static_cast<int128>(sign) * num_sign * kMaxNanos, format_);
  }
  // Past these bounds the result saturates whatever the rounding; checking
  // first keeps the granule arithmetic below far from int128 overflow.
  if (whole >= kMaxNanos) return Quantity(kMaxNanos, format_);
  if (whole < -3 * kMaxNanos) return Quantity(-kMaxNanos, format_);

  // exact = whole + fraction with 0 <= fraction < 1, and whole = k*g + s with
  // 0 <= s < g, so s + fraction < g: the ceiling is k*g when both are zero
  // and (k+1)*g otherwise.
  const int128 g = granule.nanos_ > 0 ? granule.nanos_ : 1;
  const int128 k = floor_div(whole, g);
  const int128 rounded = (whole == k * g && !has_fraction) ? whole : (k + 1) * g;
  return Quantity(clamp_nanos(rounded), format_);
}

Quantity Quantity::share_floor(int64_t numerator, int64_t denominator, const Quantity& granule) const {
  // Rounding down is rounding the negated share up, negated back.
  return times(-1).share_ceil(numerator, denominator, granule).times(-1);
}

}  // namespace gpusizer
