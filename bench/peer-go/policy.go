package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

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
