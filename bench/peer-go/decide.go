package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

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
