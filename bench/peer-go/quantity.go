package main

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// ---------------------------------------------------------------------------
// Quantities: Kubernetes resource quantities held as int64 milli-units (what
// resource.Quantity.MilliValue gives), enough for any CPU or memory a node has
// (up to 8 PiB). The suffix family is kept so values print canonically the
// way Kubernetes (and gpu-sizer) print them: "1.5Gi" -> "1536Mi", "8000m" -> "8".

type qformat int

const (
	decimalSI qformat = iota
	binarySI
	decimalExponent
)

type quantity struct {
	milli  int64
	format qformat
}

var (
	binarySuffixes  = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	decimalSuffixes = []string{"n", "u", "m", "", "k", "M", "G", "T", "P", "E"} // exponents -9, -6, ..., 18
)

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// quoteText quotes user input for a message: one line, printable ASCII,
// at most 64 characters shown.
func quoteText(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s) && i < 64; i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	if len(s) > 64 {
		fmt.Fprintf(&b, "... (%d characters)", len(s))
	}
	return b.String()
}

func parseSuffix(s string) (exp10 int64, binPow int, f qformat, err error) {
	for i, suffix := range decimalSuffixes {
		if s == suffix {
			return int64(i)*3 - 9, 0, decimalSI, nil
		}
	}
	for i := 1; i < len(binarySuffixes); i++ {
		if s == binarySuffixes[i] {
			return 0, i, binarySI, nil
		}
	}
	if len(s) > 1 && (s[0] == 'e' || s[0] == 'E') {
		pos, neg := 1, s[1] == '-'
		if s[pos] == '-' || s[pos] == '+' {
			pos++
		}
		hasDigits := pos < len(s)
		var exp int64
		for ; pos < len(s) && isDigit(s[pos]); pos++ {
			if exp < 1e15 {
				exp = exp*10 + int64(s[pos]-'0')
			}
		}
		if !hasDigits || pos != len(s) {
			return 0, 0, 0, fmt.Errorf("invalid exponent %s (use e or E followed by an integer, such as e3 or E-2)", quoteText(s))
		}
		if neg {
			exp = -exp
		}
		return exp, 0, decimalExponent, nil
	}
	if s == "e" {
		return 0, 0, 0, errors.New(`exponent "e" has no digits (write e3 or E-2; "E" alone means exa, 10^18)`)
	}
	lower := strings.ToLower(s)
	for _, list := range [][]string{binarySuffixes, decimalSuffixes} {
		for _, candidate := range list {
			if candidate != "" && strings.ToLower(candidate) == lower {
				return 0, 0, 0, fmt.Errorf("unknown suffix %s (suffixes are case-sensitive: did you mean %s?)", quoteText(s), quoteText(candidate))
			}
		}
	}
	return 0, 0, 0, fmt.Errorf("unknown suffix %s (use Ki, Mi, Gi, Ti, Pi, Ei, or n, u, m, k, M, G, T, P, E)", quoteText(s))
}

// parseQuantity parses the Kubernetes quantity grammar: sign, digits with an
// optional fraction, then a binary suffix, a decimal suffix or an exponent.
// Values finer than 1m round up to 1m, as MilliValue does.
func parseQuantity(s string) (quantity, error) {
	fail := func(reason string) (quantity, error) {
		return quantity{}, fmt.Errorf("quantity %s: %s", quoteText(s), reason)
	}
	if s == "" {
		return fail("empty (expected a number such as 1, 500m or 2Gi)")
	}
	if strings.ContainsAny(s, " \t\n\r\v\f") {
		return fail("contains whitespace")
	}
	pos := 0
	neg := s[0] == '-'
	if s[0] == '-' || s[0] == '+' {
		pos++
	}
	if pos < len(s) && (s[pos] == '-' || s[pos] == '+') {
		return fail("more than one sign")
	}
	start := pos
	for pos < len(s) && isDigit(s[pos]) {
		pos++
	}
	intDigits, fracDigits := s[start:pos], ""
	if pos < len(s) && s[pos] == '.' {
		pos++
		fracStart := pos
		for pos < len(s) && isDigit(s[pos]) {
			pos++
		}
		fracDigits = s[fracStart:pos]
	}
	if intDigits == "" && fracDigits == "" {
		return fail("no number before the suffix (expected digits such as 1, 1.5 or .5)")
	}
	if pos < len(s) && s[pos] == '.' {
		return fail("more than one decimal point")
	}
	exp10, binPow, f, err := parseSuffix(s[pos:])
	if err != nil {
		return fail(err.Error())
	}
	digits := strings.TrimLeft(intDigits+fracDigits, "0")
	if digits == "" {
		return quantity{0, f}, nil
	}
	tooLarge := func() (quantity, error) {
		return fail("exceeds the maximum magnitude of 9223372036854775807m")
	}
	// value = digits * 10^milliExp * 1024^binPow milli-units.
	milliExp := exp10 - int64(len(fracDigits)) + 3
	if int64(len(digits))-1+milliExp > 18 {
		return tooLarge()
	}
	var milli int64
	if -milliExp > int64(len(digits))+21 {
		milli = 1 // far below 1m, even times 1024^6: rounds up to 1m
	} else {
		n, _ := new(big.Int).SetString(digits, 10)
		n.Lsh(n, uint(10*binPow))
		ten := big.NewInt(10)
		if milliExp >= 0 {
			n.Mul(n, new(big.Int).Exp(ten, big.NewInt(milliExp), nil))
		} else {
			var rem big.Int
			n.QuoRem(n, new(big.Int).Exp(ten, big.NewInt(-milliExp), nil), &rem)
			if rem.Sign() != 0 {
				n.Add(n, big.NewInt(1))
			}
		}
		if !n.IsInt64() || n.Int64() == math.MaxInt64 {
			return tooLarge()
		}
		milli = n.Int64()
	}
	// A binary quantity below one unit cannot print with a binary suffix.
	if f == binarySI && milli < 1000 {
		f = decimalSI
	}
	if neg {
		milli = -milli
	}
	return quantity{milli, f}, nil
}

func mustQuantity(s string) quantity {
	q, err := parseQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

// String prints the canonical form: the largest suffix that keeps the
// mantissa whole.
func (q quantity) String() string {
	if q.milli == 0 {
		return "0"
	}
	if q.format == binarySI && q.milli%1000 == 0 && (q.milli >= 1024000 || q.milli <= -1024000) {
		units, power := q.milli/1000, 0
		for power+1 < len(binarySuffixes) && units%1024 == 0 {
			units /= 1024
			power++
		}
		return strconv.FormatInt(units, 10) + binarySuffixes[power]
	}
	mantissa, exp := q.milli, -3
	for mantissa%10 == 0 {
		mantissa /= 10
		exp++
	}
	for exp%3 != 0 {
		mantissa *= 10
		exp--
	}
	if q.format == decimalExponent {
		if exp == 0 {
			return strconv.FormatInt(mantissa, 10)
		}
		return strconv.FormatInt(mantissa, 10) + "e" + strconv.Itoa(exp)
	}
	return strconv.FormatInt(mantissa, 10) + decimalSuffixes[(exp+9)/3]
}

func saturate(v int64, overflow bool, negative bool) int64 {
	if !overflow {
		return v
	}
	if negative {
		return -math.MaxInt64
	}
	return math.MaxInt64
}

// plus keeps the left operand's format, or the right one's when the left is zero.
func (q quantity) plus(o quantity) quantity {
	sum := q.milli + o.milli
	overflow := (q.milli > 0 && o.milli > 0 && sum < 0) || (q.milli < 0 && o.milli < 0 && sum >= 0)
	f := q.format
	if q.milli == 0 {
		f = o.format
	}
	return quantity{saturate(sum, overflow, q.milli < 0), f}
}

func (q quantity) times(n int64) quantity {
	if q.milli == 0 || n == 0 {
		return quantity{0, q.format}
	}
	product := q.milli * n
	overflow := product/n != q.milli || (q.milli == -1 && n == math.MinInt64)
	return quantity{saturate(product, overflow, (q.milli < 0) != (n < 0)), q.format}
}

// shareCeil is q * num / den rounded up to a multiple of granule milli-units.
// REQUIRES: q >= 0, 0 < num <= den, granule > 0.
func (q quantity) shareCeil(num, den, granule int64) quantity {
	hi, lo := bits.Mul64(uint64(q.milli), uint64(num))
	quo, rem := bits.Div64(hi, lo, uint64(den)) // hi < den since num <= den
	whole := int64(quo)
	if whole%granule != 0 || rem != 0 {
		whole = (whole/granule + 1) * granule
	}
	return quantity{whole, q.format}
}
