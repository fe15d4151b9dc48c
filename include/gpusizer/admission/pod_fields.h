// The parts of a pod spec that are read the same way for a pod and for what
// the templates of one object take from it: volume lists, where it may be
// scheduled, a container's resources. decide_object (review.h) reads the
// object's part once (read_inherited_selection, read_argo_workflow): a
// workflow of thousands of templates must not read its metadata and
// workflow-wide fields once per template.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/result.h"
#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

// A quantity written in JSON: a string ("64Gi") or, as custom resources
// arrive, a bare number (4). Fails naming the value.
Result<Quantity> quantity_from_json(JsonView value);

// The ownerReference that controls a Pod (controller: true), else its
// first; absent for a template (whose metadata has no owners). Only
// references with a kind count.
JsonView controlling_owner(JsonView owners);
// controlling_owner's kind; empty when there is none.
std::string controller_kind(JsonView owners);

// The volume a container's volumeMounts mount at /dev/shm, or empty.
std::string shm_mount(JsonView mounts);

// Appends the volume list at `path` (JSON Pointer tokens) to the pod's, and
// its volumes: their names, and the size of the memory-backed ones (a
// sizeLimit that does not parse is the /dev/shm rule's problem, when it
// reads that volume).
void read_volume_list(JsonView list, std::vector<std::string> path, PodFacts& facts);

// Where the pod may run, from one spec: its nodeSelector entries the pod
// lacks, its required node affinity, tolerations and nodeName where the pod
// has none yet, and the GPU products the affinity allows. An earlier
// source (an Argo template) wins over a later one (its workflow): key by
// key for the nodeSelector, as a whole for the rest.
void read_scheduling(const Policy& policy, JsonView spec, PodFacts& facts);

// A container's ResourceRequirements as read: the quantities of the
// resources gpu-sizer reads, and what is wrong with them.
struct ResourcesRead {
  Quantities requests;
  Quantities limits;
  struct Problem {
    ProblemCode code;
    std::string field;         // "spec.containers[0].resources.limits.cpu"
    std::string what;          // "must not be negative, found -1"
    bool accelerator = false;  // about a GPU or another accelerator of the policy
  };
  std::vector<Problem> problems;
  std::vector<std::string> unresolved;  // resources holding {{...}}, $(VAR) or ${VAR} expressions
  bool unresolved_gpu = false;          // ... among them a GPU count
  // Accelerators beside gpuResources: counted as GPUs by the policy's
  // accelerators (sizing gpus), or not.
  bool accelerator_gpus = false;
  bool other_accelerators = false;
  JsonView claims;  // resources.claims: the pod's DRA claims the container uses; absent: none
};

// One resource's quantity `value`, added to `out` when gpu-sizer reads the
// resource (cpu, memory, ephemeral-storage, an accelerator), with what is
// wrong with it in `read`; problems name the value `parent().key`.
void read_resource_quantity(const Policy& policy, std::string_view resource, JsonView value,
                            const std::function<std::string()>& parent, std::string_view key, Quantities& out,
                            ResourcesRead& read);

// item[resources_key]; `field` names the item in problems (called only
// when there is one: most containers have none).
ResourcesRead read_resources(const Policy& policy, JsonView item, const std::string& resources_key,
                             const std::function<std::string()>& field);
// The same, of the ResourceRequirements `resources` (absent: none), named
// `resources_field` in problems ("spec.containers[0].resources").
ResourcesRead read_resources_at(const Policy& policy, JsonView resources,
                                const std::function<std::string()>& resources_field);

// Where read_wanted_metadata puts what it reads.
struct SelectionMaps {
  std::map<std::string, std::string, std::less<>>& labels;
  std::map<std::string, std::string, std::less<>>& annotations;
  std::string& name;  // metadata.name, or generateName; kept when already set
};
// Adds the metadata's labels and annotations that a decision reads (the
// policy's and the rules'; with pod_keys the data loader, model and GPU
// annotations too) to the maps where they lack the key.
void read_wanted_metadata(const Policy& policy, JsonView metadata, bool pod_keys, SelectionMaps maps);

// What a pod template takes from the reviewed object's metadata: the labels
// and annotations the policy and the rules read, and its name. A template
// with metadata of its own (own_metadata) takes no data loader, model or
// GPU annotation from the object: those describe one pod.
std::shared_ptr<const InheritedSelection> read_inherited_selection(const Policy& policy, JsonView metadata,
                                                                   bool own_metadata);

// An Argo workflow's spec as each of its templates takes it: volumes and
// scheduling fields (sizing's WorkflowFields), and templateDefaults'
// container and script resources, merged under each template's.
struct ArgoWorkflow {
  std::shared_ptr<const WorkflowFields> fields;
  ResourcesRead container_defaults;
  ResourcesRead script_defaults;
};
// REQUIRES: ref is an Argo template's (PodShape::kArgoTemplate).
std::shared_ptr<const ArgoWorkflow> read_argo_workflow(const Policy& policy, const PodTemplateRef& ref);

}  // namespace gpusizer
