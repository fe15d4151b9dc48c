// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource),
// held exactly: no floating point anywhere, so comparisons never drift.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "gpusizer/util/numbers.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

class Quantity {
 public:
  // The suffix family a quantity was written in. Canonical printing keeps it:
  // "1.5Gi" prints as "1536Mi", "1.5" as "1500m", "1e3" as "1e3".
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  // Zero, DecimalSI.
  Quantity() = default;

  // Parses the Kubernetes grammar: an optional sign, digits with an optional
  // fraction ("1", "1.5", "1.", ".5"), then a binary suffix (Ki Mi Gi Ti Pi
  // Ei), a decimal suffix (n u m "" k M G T P E) or an exponent ("e3",
  // "E-2", "e+3"). Values finer than 1n are rounded up to 1n, as Kubernetes
  // does. Fails, naming the text and the reason, on anything else ("1KB",
  // "1gi", "--1", " 1", "") and on magnitudes above 2^63-1 units, where
  // Kubernetes would silently cap.
  static Result<Quantity> parse(std::string_view text);

  // Exact constructors used by the sizing engine: CPU in milli-cores
  // (DecimalSI, prints "32" or "1500m") and byte counts (BinarySI, prints
  // "192Gi").
  static Quantity from_milli(int64_t milli);
  static Quantity from_bytes(int64_t bytes);

  Format format() const { return format_; }

  // The value in milli-units, rounded up (Kubernetes MilliValue), saturating
  // at the int64 range.
  int64_t milli_ceil() const;
  // The value in whole units (bytes for memory), rounded up (Kubernetes
  // Value), saturating at the int64 range.
  int64_t value_ceil() const;
  // True when the value is a whole number of units (GPU counts must be).
  bool is_whole() const;
  bool is_negative() const { return nanos_ < 0; }
  bool is_zero() const { return nanos_ == 0; }

  // Canonical form, exactly as Kubernetes serializes the quantity: the
  // largest suffix (multiple of 3 for decimal, of 1024 for binary) that keeps
  // the mantissa whole, no fractional digits. Binary quantities that are not
  // whole bytes, or whose magnitude is below 1024, print as DecimalSI.
  std::string to_string() const;

  // Exact arithmetic; results keep this quantity's format and saturate at
  // the +/- 2^63-1 units range instead of overflowing.
  Quantity plus(const Quantity& other) const;
  Quantity times(int64_t factor) const;
  // this * numerator / denominator, rounded up to a whole multiple of
  // granule (for example 1Mi for memory shares, 1m for CPU shares).
  // Defined for every input (quantity.cpp says how a zero or negative
  // denominator or granule is taken): a hostile GPU count reaches it.
  Quantity share_ceil(int64_t numerator, int64_t denominator, const Quantity& granule) const;
  // The same rounded down, for the most a share may be: a node's
  // allocatable split over its GPUs.
  Quantity share_floor(int64_t numerator, int64_t denominator, const Quantity& granule) const;
  Quantity minus(const Quantity& other) const { return plus(other.times(-1)); }

  // Compares values only: 1Gi == 1024Mi, 1 == 1000m.
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) { return a.nanos_ <=> b.nanos_; }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }

 private:
  Quantity(int128 nanos, Format format) : nanos_(nanos), format_(format) {}

  // The value in units of 1e-9. 2^63-1 units need ~93 bits, so int128 holds
  // every parseable quantity and sums of a few of them exactly.
  int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace gpusizer
