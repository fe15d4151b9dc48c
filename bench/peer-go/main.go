// Command peer-go is the GPU pod sizing webhook a team would write with the Go
// standard library alone: the benchmark's point of comparison for gpu-sizer.
// It applies gpu-sizer's default policy to Pods on CREATE and answers the
// same AdmissionReview responses (patch, warnings, denials, audit
// annotations); every other kind and operation is allowed unchanged.
//
//	peer-go -listen 127.0.0.1:8443 -cert tls.crt -key tls.key
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/big"
	"math/bits"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

const (
	keyProfile = "gpu-sizer.io/profile"
	keyOptOut  = "gpu-sizer.io/mutate"
	keySized   = "gpu-sizer.io/sized"

	warningLimit  = 119  // bytes per warning: kubectl may cut longer ones
	warningBudget = 3500 // bytes of warnings per answer (the API server drops past 4096)
	messageBudget = 8192 // denial message and auditAnnotations.sized
	sizedBudget   = 4096 // the gpu-sizer.io/sized annotation
	maxGPUsPerPod = 1 << 20
	maxBodyBytes  = 8 << 20
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

// ---------------------------------------------------------------------------
// The policy: gpu-sizer's embedded default, mode mutate.

type tableRow struct {
	gpus        int64
	cpu, memory quantity
}

type profile struct {
	name, setPrefix       string
	storage               *quantity
	table                 []tableRow
	extraCPU, extraMemory quantity
	maxGPUs               int64 // 0: no limit
}

type profileRule struct {
	label    string // the label to look at; "" means the pod's name
	contains bool   // substring match; otherwise equality
	value    string
	profile  string
	text     string
}

var (
	gpuResources           = []string{"nvidia.com/gpu", "amd.com/gpu"}
	exemptNamespaces       = []string{"kube-system", "kube-public"}
	denyFromGPUs     int64 = 2
	defaultProfile         = "train"
	// Resources read from containers, in sorted order (problems are reported in it).
	readResources = []string{"amd.com/gpu", "cpu", "ephemeral-storage", "memory", "nvidia.com/gpu"}
)

func newTableProfile(name, storage string, rows [][3]string, extraCPU, extraMemory string) *profile {
	p := &profile{name: name, setPrefix: name, extraCPU: mustQuantity(extraCPU), extraMemory: mustQuantity(extraMemory)}
	s := mustQuantity(storage)
	p.storage = &s
	for _, r := range rows {
		gpus, _ := strconv.ParseInt(r[0], 10, 64)
		p.table = append(p.table, tableRow{gpus, mustQuantity(r[1]), mustQuantity(r[2])})
	}
	return p
}

var profiles = map[string]*profile{
	"train": newTableProfile("train", "300Gi", [][3]string{
		{"1", "16", "64Gi"}, {"2", "16", "96Gi"}, {"4", "32", "192Gi"}, {"8", "64", "384Gi"}}, "8", "48Gi"),
	"infer": newTableProfile("infer", "200Gi", [][3]string{
		{"1", "4", "64Gi"}, {"2", "8", "96Gi"}, {"4", "16", "192Gi"}, {"8", "32", "384Gi"}}, "4", "48Gi"),
	"render":  {name: "render", setPrefix: "render", maxGPUs: 1},
	"augment": {name: "augment", setPrefix: "augment", maxGPUs: 1},
}

func rule(label string, contains bool, value, profile string) profileRule {
	subject, match := "name", "equals"
	if label != "" {
		subject = "label " + label
	}
	if contains {
		match = "contains"
	}
	return profileRule{label, contains, value, profile, subject + " " + match + " \"" + value + "\""}
}

// The default rules that can match a Pod (the others name Argo templates).
var profileRules = []profileRule{
	rule("osmo.group_name", false, "finetune-job", "train"),
	rule("osmo.group_name", false, "anomaly-infer", "infer"),
	rule("osmo.group_name", true, "render", "render"),
	rule("osmo.group_name", true, "augment", "augment"),
	rule("", true, "render", "render"),
	rule("", true, "augment", "augment"),
}

type requirement struct {
	cpu, memory quantity
	storage     *quantity
}

// required gives what gpus GPUs need: the table row at or below, plus the
// per-GPU increment for each GPU past it. ok is false for table-less profiles.
func (p *profile) required(gpus int64) (req requirement, ok bool) {
	if len(p.table) == 0 {
		return requirement{}, false
	}
	base := p.table[0]
	for _, row := range p.table {
		if row.gpus <= gpus {
			base = row
		}
	}
	extra := int64(0)
	if gpus > base.gpus {
		extra = gpus - base.gpus
	}
	return requirement{base.cpu.plus(p.extraCPU.times(extra)), base.memory.plus(p.extraMemory.times(extra)), p.storage}, true
}

func (p *profile) setHint(gpus int64) string {
	hint := p.setPrefix + "_gpu=" + strconv.FormatInt(gpus, 10)
	if need, ok := p.required(gpus); ok {
		hint += " " + p.setPrefix + "_cpu=" + need.cpu.String() + " " + p.setPrefix + "_memory=" + need.memory.String()
	}
	return hint
}

func knownProfiles() string {
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// selectProfile: the label gpu-sizer.io/profile, then the annotation, then
// the first matching rule, then the default profile.
func selectProfile(labels, annotations map[string]string, name string) (p *profile, reason string, err error) {
	for _, source := range []struct {
		origin string
		values map[string]string
	}{{"label ", labels}, {"annotation ", annotations}} {
		named, ok := source.values[keyProfile]
		if !ok {
			continue
		}
		if p := profiles[named]; p != nil {
			return p, source.origin + keyProfile + "=" + named, nil
		}
		return nil, "", fmt.Errorf("%s%s=%s names no profile of the policy (known: %s)", source.origin, keyProfile, named, knownProfiles())
	}
	for _, r := range profileRules {
		subject, ok := name, true
		if r.label != "" {
			subject, ok = labels[r.label]
		}
		if ok && ((r.contains && strings.Contains(subject, r.value)) || (!r.contains && subject == r.value)) {
			return profiles[r.profile], "policy rule: " + r.text, nil
		}
	}
	return profiles[defaultProfile], "defaultProfile", nil
}

// ---------------------------------------------------------------------------
// The AdmissionReview API (admission.k8s.io/v1) and the Pod fields the rule reads.

type groupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type admissionRequest struct {
	UID         string           `json:"uid"`
	Kind        groupVersionKind `json:"kind"`
	SubResource string           `json:"subResource"`
	Name        string           `json:"name"`
	Namespace   string           `json:"namespace"`
	Operation   string           `json:"operation"`
	Object      json.RawMessage  `json:"object"`
	DryRun      *bool            `json:"dryRun"`
}

type status struct {
	Code    int32  `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type admissionResponse struct {
	UID              string            `json:"uid"`
	Allowed          bool              `json:"allowed"`
	Status           *status           `json:"status,omitempty"`
	PatchType        string            `json:"patchType,omitempty"`
	Patch            []byte            `json:"patch,omitempty"` // base64 in JSON
	Warnings         []string          `json:"warnings,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
}

type admissionReview struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Request    *admissionRequest  `json:"request,omitempty"`
	Response   *admissionResponse `json:"response,omitempty"`
}

type objectMeta struct {
	Name              string            `json:"name"`
	GenerateName      string            `json:"generateName"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	DeletionTimestamp *string           `json:"deletionTimestamp"`
}

type resourceRequirements struct {
	Limits   map[string]json.RawMessage `json:"limits"`
	Requests map[string]json.RawMessage `json:"requests"`
}

type podContainer struct {
	Name          string                `json:"name"`
	Resources     *resourceRequirements `json:"resources"`
	RestartPolicy string                `json:"restartPolicy"`
}

type podSpec struct {
	Containers     []podContainer `json:"containers"`
	InitContainers []podContainer `json:"initContainers"`
}

type pod struct {
	Metadata *objectMeta `json:"metadata"`
	Spec     *podSpec    `json:"spec"`
}

// ---------------------------------------------------------------------------
// JSON Patch: "add" operations, with missing parent maps added first.

type patchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value"`
}

type patchLevel struct {
	key    string
	exists bool // present and not null in the reviewed object
}

type patchBuilder struct {
	ops     []patchOp
	created map[string]bool // pointers of maps this patch adds
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// set adds base/levels.../key = value; the first level that neither exists
// nor was added by this patch is added with the rest nested inside.
func (b *patchBuilder) set(base string, levels []patchLevel, key string, value interface{}) {
	pointer := base
	for i, level := range levels {
		pointer += "/" + pointerEscaper.Replace(level.key)
		if level.exists || b.created[pointer] {
			continue
		}
		nested := value
		nested = map[string]interface{}{key: nested}
		for k := len(levels) - 1; k > i; k-- {
			nested = map[string]interface{}{levels[k].key: nested}
		}
		b.ops = append(b.ops, patchOp{"add", pointer, nested})
		if b.created == nil {
			b.created = map[string]bool{}
		}
		b.created[pointer] = true
		for k := i + 1; k < len(levels); k++ {
			pointer += "/" + pointerEscaper.Replace(levels[k].key)
			b.created[pointer] = true
		}
		return
	}
	b.ops = append(b.ops, patchOp{"add", pointer + "/" + pointerEscaper.Replace(key), value})
}

// resourceEdits are one container's raised requests and limits, written as
// gpu-sizer writes them: one operation at the deepest map that holds them
// all (a lone value at its key; requests alone at requests; both at
// resources), with the values the container had copied into it.
type resourceEdits struct {
	c                *containerView
	requests, limits map[string]string
}

func merged(written map[string]json.RawMessage, raised map[string]string) map[string]interface{} {
	out := map[string]interface{}{}
	for key, value := range written {
		out[key] = value
	}
	for key, value := range raised {
		out[key] = value
	}
	return out
}

func (b *patchBuilder) writeResources(e *resourceEdits) {
	res := e.c.source.Resources
	hasRes := res != nil
	side := func(name string, written map[string]json.RawMessage, raised map[string]string) {
		if len(raised) == 1 {
			for key, value := range raised {
				b.set(e.c.pointer, []patchLevel{{"resources", hasRes}, {name, hasRes && written != nil}}, key, value)
			}
			return
		}
		if hasRes && written != nil {
			b.ops = append(b.ops, patchOp{"replace", e.c.pointer + "/resources/" + name, merged(written, raised)})
			return
		}
		b.set(e.c.pointer, []patchLevel{{"resources", hasRes}}, name, merged(written, raised))
	}
	switch {
	case len(e.limits) == 0:
		side("requests", resOrNil(res).Requests, e.requests)
	case len(e.requests) == 0:
		side("limits", resOrNil(res).Limits, e.limits)
	default:
		value := map[string]interface{}{
			"requests": merged(resOrNil(res).Requests, e.requests),
			"limits":   merged(resOrNil(res).Limits, e.limits),
		}
		if hasRes {
			b.ops = append(b.ops, patchOp{"replace", e.c.pointer + "/resources", value})
		} else {
			b.ops = append(b.ops, patchOp{"add", e.c.pointer + "/resources", value})
		}
	}
}

func resOrNil(res *resourceRequirements) *resourceRequirements {
	if res == nil {
		return &resourceRequirements{}
	}
	return res
}

// ---------------------------------------------------------------------------
// Deciding one Pod.

type containerView struct {
	name     string
	field    string // spec.containers[0]
	pointer  string // /spec/containers/0
	source   *podContainer
	requests map[string]quantity
	limits   map[string]quantity
	gpus     int64
}

func (c *containerView) effectiveRequest(resource string) (quantity, bool) {
	if q, ok := c.requests[resource]; ok {
		return q, true
	}
	q, ok := c.limits[resource]
	return q, ok
}

type group struct {
	holders []*containerView
	gpus    int64
}

type shortfall struct {
	c          *containerView
	groupGPUs  int64
	resource   string
	need       quantity
	request    quantity
	hasRequest bool
	limit      quantity
	hasLimit   bool
}

type podDecision struct {
	warnings []string
	denials  []string
	changes  []string
}

type podDecider struct {
	endpoint    string
	description string // pod NAMESPACE/NAME
	pod         *pod
	patch       *patchBuilder

	app, init      []*containerView
	problems       []string
	gpuProblem     bool
	optedOut       bool
	gpus           int64
	groups         []group
	profile        *profile
	profileReason  string
	profileProblem string
	violations     []string
	shortfalls     []shortfall
	out            podDecision
}

func gpusText(n int64) string {
	if n == 1 {
		return "1 GPU"
	}
	return strconv.FormatInt(n, 10) + " GPUs"
}

// truncate cuts s to at most max bytes, ending in "...", never inside a UTF-8 sequence.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max - 3
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "..."
}

// joinCapped joins items while the text stays within max bytes, then counts the rest.
func joinCapped(items []string, sep string, max int, what string) string {
	var b strings.Builder
	for i, item := range items {
		if i > 0 && b.Len()+len(sep)+len(item) > max {
			return fmt.Sprintf("%s%s... and %d more %s", b.String(), sep, len(items)-i, what)
		}
		if i > 0 {
			b.WriteString(sep)
			b.WriteString(item)
		} else {
			b.WriteString(truncate(item, max))
		}
	}
	return b.String()
}

// containerWarning shortens a long container name so the warning stays under
// the limit and still ends with the numbers.
func containerWarning(name, rest string) string {
	head, tail := `container "`, `": `+rest
	if fixed := len(head) + len(tail); fixed+len(name) > warningLimit && fixed+8 < warningLimit {
		name = truncate(name, warningLimit-fixed)
	}
	return truncate(head+name+tail, warningLimit)
}

func (d *podDecider) addProblem(field, what string, gpuField bool) {
	d.problems = append(d.problems, d.description+": "+field+" "+what)
	d.gpuProblem = d.gpuProblem || gpuField
}

func jsonTypeName(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func (d *podDecider) readQuantities(values map[string]json.RawMessage, field string, out map[string]quantity) {
	for _, resource := range readResources {
		raw, ok := values[resource]
		if !ok {
			continue
		}
		isGPU := resource != "cpu" && resource != "memory" && resource != "ephemeral-storage"
		var q quantity
		var err error
		switch {
		case raw[0] == '"':
			var text string
			if err = json.Unmarshal(raw, &text); err == nil {
				q, err = parseQuantity(text)
			}
		case raw[0] == '-' || isDigit(raw[0]):
			q, err = parseQuantity(string(raw))
		default:
			err = errors.New(`must be a quantity such as "64Gi" or 4, found ` + jsonTypeName(raw))
		}
		switch {
		case err != nil:
			d.addProblem(field+"."+resource, err.Error(), isGPU)
		case q.milli < 0:
			d.addProblem(field+"."+resource, "must not be negative, found "+q.String(), isGPU)
		default:
			out[resource] = q
		}
	}
}

func (d *podDecider) gpuCount(c *containerView, resource string) int64 {
	request, hasRequest := c.requests[resource]
	limit, hasLimit := c.limits[resource]
	if !hasRequest && !hasLimit {
		return 0
	}
	where := c.field + ".resources"
	if hasRequest && hasLimit && request.milli != limit.milli {
		d.addProblem(where, resource+" request "+request.String()+" and limit "+limit.String()+
			" differ; GPUs are not overcommitted: set both to the same number", true)
		return 0
	}
	count := request
	if hasLimit {
		count = limit
	}
	if count.milli%1000 != 0 {
		d.addProblem(where, resource+" must be a whole number of GPUs, found "+count.String(), true)
		return 0
	}
	if count.milli/1000 > maxGPUsPerPod {
		d.addProblem(where, resource+" asks for "+count.String()+" GPUs, more than any node has", true)
		return 0
	}
	return count.milli / 1000
}

func (d *podDecider) readContainers(list []podContainer, key string, init bool) {
	for i := range list {
		c := &list[i]
		v := &containerView{
			name:     c.Name,
			field:    "spec." + key + "[" + strconv.Itoa(i) + "]",
			pointer:  "/spec/" + key + "/" + strconv.Itoa(i),
			source:   c,
			requests: map[string]quantity{},
			limits:   map[string]quantity{},
		}
		if v.name == "" {
			v.name = v.field
		}
		if c.Resources != nil {
			d.readQuantities(c.Resources.Requests, v.field+".resources.requests", v.requests)
			d.readQuantities(c.Resources.Limits, v.field+".resources.limits", v.limits)
		}
		for _, resource := range gpuResources {
			v.gpus += d.gpuCount(v, resource)
		}
		// Init containers that keep running (sidecars) run beside the app containers.
		if init && c.RestartPolicy != "Always" {
			d.init = append(d.init, v)
		} else {
			d.app = append(d.app, v)
		}
	}
}

func (d *podDecider) decide() podDecision {
	var labels, annotations map[string]string
	name := ""
	if m := d.pod.Metadata; m != nil {
		labels, annotations, name = m.Labels, m.Annotations, m.Name
		if name == "" {
			name = m.GenerateName
		}
	}
	d.optedOut = annotations[keyOptOut] == "false"
	if d.pod.Spec == nil {
		return d.out // no containers, no GPUs
	}
	d.readContainers(d.pod.Spec.Containers, "containers", false)
	d.readContainers(d.pod.Spec.InitContainers, "initContainers", true)

	// The app containers share what their GPU sum needs; an init container
	// (run alone, before them) asking for more gets what its own count needs.
	var app group
	for _, c := range d.app {
		if c.gpus > 0 {
			app.holders = append(app.holders, c)
			app.gpus += c.gpus
		}
	}
	if app.gpus > maxGPUsPerPod {
		d.problems = append(d.problems, d.description+": its containers ask for "+gpusText(app.gpus)+" together, more than any node has")
		d.gpuProblem = true
	} else if app.gpus > 0 {
		d.groups = append(d.groups, app)
	}
	d.gpus = app.gpus
	for _, c := range d.init {
		if c.gpus > app.gpus {
			d.groups = append(d.groups, group{[]*containerView{c}, c.gpus})
		}
		if c.gpus > d.gpus {
			d.gpus = c.gpus
		}
	}
	if d.gpus == 0 && !d.gpuProblem {
		return d.out
	}

	p, reason, err := selectProfile(labels, annotations, name)
	if err != nil {
		d.profileProblem = d.description + ": " + err.Error()
	} else if d.gpus > 0 {
		d.profile, d.profileReason = p, reason
		d.checkGPULimit()
		d.findShortfalls()
	}
	if d.endpoint == "mutate" {
		if !d.optedOut && len(d.problems) == 0 && d.profileProblem == "" {
			d.raise()
		}
	} else {
		d.report()
	}
	return d.out
}

func (d *podDecider) profileText() string { return d.profile.name + " profile" }

func (d *podDecider) checkGPULimit() {
	max := d.profile.maxGPUs
	if max == 0 || d.gpus <= max {
		return
	}
	d.violations = append(d.violations, fmt.Sprintf(
		"%s: the %s is a single-pod stage allowing at most %d GPU(s), found %s (%s); set the GPU count to %d (OSMO: --set %s)",
		d.description, d.profileText(), max, gpusText(d.gpus), d.profileReason, max, d.profile.setHint(max)))
}

const (
	cpuGranule    = 1                // 1m
	memoryGranule = (1 << 20) * 1000 // 1Mi in milli-units
)

func (d *podDecider) findShortfalls() {
	for _, g := range d.groups {
		need, ok := d.profile.required(g.gpus)
		if !ok {
			return
		}
		for _, c := range g.holders {
			share := func(total quantity, granule int64) quantity {
				if c.gpus == g.gpus {
					return total
				}
				return total.shareCeil(c.gpus, g.gpus, granule)
			}
			d.addShortfall(c, g.gpus, "cpu", share(need.cpu, cpuGranule))
			d.addShortfall(c, g.gpus, "memory", share(need.memory, memoryGranule))
			if need.storage != nil {
				d.addShortfall(c, g.gpus, "ephemeral-storage", share(*need.storage, memoryGranule))
			}
		}
	}
}

func (d *podDecider) addShortfall(c *containerView, groupGPUs int64, resource string, need quantity) {
	request, hasRequest := c.effectiveRequest(resource)
	limit, hasLimit := c.limits[resource]
	if hasRequest && request.milli >= need.milli && (!hasLimit || limit.milli >= need.milli) {
		return
	}
	d.shortfalls = append(d.shortfalls, shortfall{c, groupGPUs, resource, need, request, hasRequest, limit, hasLimit})
}

func holderGPUs(s *shortfall) string {
	if s.c.gpus == s.groupGPUs {
		return gpusText(s.groupGPUs)
	}
	return strconv.FormatInt(s.c.gpus, 10) + " of " + gpusText(s.groupGPUs)
}

func showRequest(s *shortfall) string {
	if !s.hasRequest {
		return "unset"
	}
	return s.request.String()
}

// raise patches each shortfall: a request below the need is raised to it, a
// limit below the new request rises with it; nothing is lowered or added
// where there was no limit.
func (d *podDecider) raise() {
	var perContainer []string
	var current *containerView
	var edits []*resourceEdits
	edit := func(c *containerView) *resourceEdits {
		for _, e := range edits {
			if e.c == c {
				return e
			}
		}
		e := &resourceEdits{c: c, requests: map[string]string{}, limits: map[string]string{}}
		edits = append(edits, e)
		return e
	}
	for i := range d.shortfalls {
		s := &d.shortfalls[i]
		raiseRequest := !s.hasRequest || s.request.milli < s.need.milli
		newRequest := s.request
		if raiseRequest {
			newRequest = s.need
		}
		var parts []string
		if raiseRequest {
			edit(s.c).requests[s.resource] = newRequest.String()
			written := "unset"
			if q, ok := s.c.requests[s.resource]; ok {
				written = q.String()
			}
			parts = append(parts, s.resource+" request "+written+"->"+newRequest.String())
		}
		if s.hasLimit && s.limit.milli < newRequest.milli {
			edit(s.c).limits[s.resource] = newRequest.String()
			prefix := "limit "
			if !raiseRequest {
				prefix = s.resource + " limit "
			}
			parts = append(parts, prefix+s.limit.String()+"->"+newRequest.String())
		}
		change := strings.Join(parts, ", ")
		d.out.warnings = append(d.out.warnings,
			containerWarning(s.c.name, change+" ("+holderGPUs(s)+", "+d.profileText()+")"))
		if s.c != current {
			perContainer = append(perContainer, s.c.name+": "+change)
			current = s.c
		} else {
			perContainer[len(perContainer)-1] += ", " + change
		}
	}
	if len(perContainer) == 0 {
		return
	}
	for _, e := range edits {
		d.patch.writeResources(e)
	}
	d.out.changes = perContainer
	sized := d.profileText() + ", " + gpusText(d.gpus) + ": " + joinCapped(perContainer, "; ", sizedBudget, "containers")
	m := d.pod.Metadata
	d.patch.set("", []patchLevel{{"metadata", m != nil}, {"annotations", m != nil && m.Annotations != nil}}, keySized, sized)
}

func (d *podDecider) denial(s *shortfall) string {
	found := "request " + showRequest(s)
	if s.hasLimit {
		found += ", limit " + s.limit.String()
	}
	fix := "set memory to " + s.need.String()
	for i := range d.shortfalls {
		if other := &d.shortfalls[i]; other.c == s.c && other.resource == "cpu" {
			fix += " and cpu to " + other.need.String()
		}
	}
	fix += " (OSMO: --set " + d.profile.setHint(s.groupGPUs) + ")"
	if d.optedOut {
		fix += ", or remove annotation " + keyOptOut + "=false so gpu-sizer sets them"
	}
	return d.description + " container \"" + s.c.name + "\": " + holderGPUs(s) + " need memory >= " +
		s.need.String() + " (" + d.profileText() + "), found " + found + "; " + fix
}

// report is the validating check: deny what must not run, warn about the rest.
func (d *podDecider) report() {
	d.out.denials = append(d.out.denials, d.problems...)
	if d.profileProblem != "" {
		d.out.denials = append(d.out.denials, d.profileProblem)
	}
	d.out.denials = append(d.out.denials, d.violations...)
	for i := range d.shortfalls {
		s := &d.shortfalls[i]
		if s.resource == "memory" && s.groupGPUs >= denyFromGPUs {
			d.out.denials = append(d.out.denials, d.denial(s))
			continue
		}
		d.out.warnings = append(d.out.warnings, containerWarning(s.c.name, s.resource+" "+showRequest(s)+
			" is below "+s.need.String()+" for "+holderGPUs(s)+" ("+d.profileText()+")"))
	}
}

// capWarnings keeps the warnings within the API server's budget.
func capWarnings(warnings []string) []string {
	kept := make([]string, 0, len(warnings))
	total := 0
	for i, w := range warnings {
		w = truncate(w, warningLimit)
		if total+len(w) > warningBudget {
			return append(kept, fmt.Sprintf("... and %d more warnings (see annotation %s)", len(warnings)-i, keySized))
		}
		total += len(w)
		kept = append(kept, w)
	}
	return kept
}

// ---------------------------------------------------------------------------
// HTTP.

type requestError struct{ message string }

func (e *requestError) Error() string { return e.message }

func badRequest(format string, args ...interface{}) error {
	return &requestError{fmt.Sprintf(format, args...)}
}

// review answers one AdmissionReview body; the decision is for the log.
func review(endpoint string, body []byte) (answer *admissionReview, decision string, err error) {
	var in admissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, "", badRequest("request body is not a valid AdmissionReview: %v", err)
	}
	if in.APIVersion != "admission.k8s.io/v1" {
		return nil, "", badRequest("apiVersion must be admission.k8s.io/v1, found %q (register the webhook with admissionReviewVersions: [v1])", in.APIVersion)
	}
	if in.Kind != "AdmissionReview" {
		return nil, "", badRequest("kind must be AdmissionReview, found %q", in.Kind)
	}
	req := in.Request
	if req == nil {
		return nil, "", badRequest("request is missing or not an object")
	}
	if req.UID == "" {
		return nil, "", badRequest("request.uid is missing or not a non-empty string")
	}
	resp := &admissionResponse{UID: req.UID, Allowed: true}
	answer = &admissionReview{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: resp}

	// Pods are sized when created; everything else passes unchanged.
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.Operation != "CREATE" || req.SubResource != "" {
		return answer, "allowed", nil
	}
	var p *pod
	if obj := strings.TrimLeft(string(req.Object), " \t\r\n"); strings.HasPrefix(obj, "{") {
		p = new(pod)
		if err := json.Unmarshal(req.Object, p); err != nil {
			return nil, "", badRequest("request.object is not a valid Pod: %v", err)
		}
		if p.Metadata != nil && p.Metadata.DeletionTimestamp != nil {
			return answer, "allowed", nil
		}
	}
	for _, ns := range exemptNamespaces {
		if req.Namespace == ns {
			resp.AuditAnnotations = map[string]string{"bypassed": "namespace \"" + ns + "\" is exempt in the gpu-sizer policy"}
			return answer, "allowed", nil
		}
	}
	if p == nil {
		return nil, "", badRequest("request.object must be the Pod being created, as a JSON object")
	}
	name := req.Name
	if name == "" && p.Metadata != nil {
		name = p.Metadata.Name
		if name == "" {
			name = p.Metadata.GenerateName + "*"
		}
	} else if name == "" {
		name = "*"
	}
	if req.Namespace != "" {
		name = req.Namespace + "/" + name
	}
	patch := &patchBuilder{}
	d := &podDecider{endpoint: endpoint, description: "pod " + name, pod: p, patch: patch}
	out := d.decide()

	decision = "allowed"
	if len(out.changes) > 0 {
		resp.AuditAnnotations = map[string]string{"sized": joinCapped(out.changes, "; ", messageBudget, "containers")}
	}
	if len(out.denials) > 0 {
		decision = "denied"
		message := joinCapped(out.denials, "; ", messageBudget, "denials")
		resp.Allowed = false
		resp.Status = &status{Code: http.StatusForbidden, Reason: "Forbidden", Message: message}
		if resp.AuditAnnotations == nil {
			resp.AuditAnnotations = map[string]string{}
		}
		resp.AuditAnnotations["denied"] = message
	} else if endpoint == "mutate" && len(patch.ops) > 0 {
		decision = "mutated"
		if resp.Patch, err = json.Marshal(patch.ops); err != nil {
			return nil, "", err
		}
		resp.PatchType = "JSONPatch"
	}
	if len(out.warnings) > 0 {
		resp.Warnings = capWarnings(out.warnings)
	}
	return answer, decision, nil
}

func writeJSON(w http.ResponseWriter, code int, value interface{}) {
	body, err := json.Marshal(value)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}

func writeError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, map[string]string{"error": message})
}

func reviewHandler(endpoint string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		started := time.Now()
		uid, decision := "", "error"
		defer func() {
			log.Printf("review endpoint=%s uid=%q decision=%s duration=%s", endpoint, uid, decision, time.Since(started))
		}()
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST "+r.URL.Path)
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "application/json") {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be application/json, found %q", ct))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the size limit of %d bytes", maxBodyBytes))
			} else {
				writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
			}
			return
		}
		answer, d, err := review(endpoint, body)
		if err != nil {
			code := http.StatusInternalServerError
			if _, ok := err.(*requestError); ok {
				code = http.StatusBadRequest
			}
			writeError(w, code, err.Error())
			return
		}
		uid, decision = answer.Response.UID, d
		writeJSON(w, http.StatusOK, answer)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8443", "HOST:PORT to serve HTTPS on")
	certFile := flag.String("cert", "", "server certificate (PEM)")
	keyFile := flag.String("key", "", "server private key (PEM)")
	flag.Parse()
	log.SetPrefix("peer-go ")
	if *certFile == "" || *keyFile == "" {
		log.Fatal("-cert and -key are required")
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("loading the certificate: %v", err)
	}

	mux := http.NewServeMux()
	mux.Handle("/mutate", reviewHandler("mutate"))
	mux.Handle("/validate", reviewHandler("validate"))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path+" (use POST /mutate, POST /validate, GET /healthz)")
	})
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       5 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("cannot listen on %s: %v", *listen, err)
	}
	fmt.Printf("listening on https://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	done := make(chan struct{})
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		close(done)
	}()
	if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-done
}
