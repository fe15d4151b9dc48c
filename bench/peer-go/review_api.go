package main

import (
	"encoding/json"
	"strings"
)

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
