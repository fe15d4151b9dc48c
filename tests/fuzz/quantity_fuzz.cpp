// Quantity::parse on arbitrary text. What parses must print in a form that
// parses back to the same value (the webhook writes these strings into pod
// specs that the API server parses again), printing must be a fixed point,
// and the exact arithmetic the sizing engine uses must stay free of
// undefined behaviour for every parseable value.
//
// Input: the text. When it holds a space (never valid in a quantity), the
// parts before and after the first one are also parsed as a pair for the
// arithmetic checks.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "gpusizer/quantity/quantity.h"

namespace gpusizer::fuzz {
namespace {

// Parses, and checks the round trip of whatever parses.
Result<Quantity> parse_checked(std::string_view text) {
  Result<Quantity> parsed = Quantity::parse(text);
  if (!parsed) {
    if (parsed.error().empty()) fail("a parse error has a message", text);
    return parsed;
  }
  const Quantity& value = parsed.value();
  const std::string printed = value.to_string();
  Result<Quantity> again = Quantity::parse(printed);
  if (!again) fail("the printed form parses", std::string(text) + " -> " + printed + ": " + again.error());
  if (again.value() != value) fail("the printed form has the same value", std::string(text) + " -> " + printed);
  if (again.value().to_string() != printed) {
    fail("printing is a fixed point", std::string(text) + " -> " + printed + " -> " + again.value().to_string());
  }
  return parsed;
}

void check_arithmetic(const Quantity& a, const Quantity& b) {
  if (a.plus(b) != b.plus(a)) fail("plus is commutative", a.to_string() + " + " + b.to_string());
  if (a.times(1) != a) fail("times(1) keeps the value", a.to_string());
  if ((a < b) != (b > a)) fail("ordering is antisymmetric", a.to_string() + " vs " + b.to_string());
  if (a <= b && a.milli_ceil() > b.milli_ceil())
    fail("milli_ceil is monotonic", a.to_string() + " <= " + b.to_string());
  if (a <= b && a.value_ceil() > b.value_ceil())
    fail("value_ceil is monotonic", a.to_string() + " <= " + b.to_string());
  // Values as the engine derives them from GPU counts, including the
  // extremes a hostile count could produce.
  const int64_t n = b.value_ceil();
  const int64_t d = a.milli_ceil();
  (void)a.times(n).to_string();
  (void)a.times(-n).to_string();
  (void)a.share_ceil(n, d, b).to_string();
  (void)a.share_ceil(d, n, a).to_string();
  if (n > 0 && b > Quantity()) {
    const Quantity whole = a.share_ceil(n, n, b);
    if (a >= Quantity() && whole < a) fail("share_ceil(n, n) rounds up", a.to_string() + " granule " + b.to_string());
  }
}

}  // namespace
}  // namespace gpusizer::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpusizer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto whole = fuzz::parse_checked(text)) fuzz::check_arithmetic(whole.value(), whole.value());
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) return 0;
  auto a = fuzz::parse_checked(text.substr(0, space));
  auto b = fuzz::parse_checked(text.substr(space + 1));
  if (a && b) {
    fuzz::check_arithmetic(a.value(), b.value());
    fuzz::check_arithmetic(b.value(), a.value());
  }
  return 0;
}
