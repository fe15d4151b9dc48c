// What the sizing rules see of one pod (a Pod or a pod template): its
// containers with their requests and limits, its volumes, the labels and
// annotations the rules read, and where it may be scheduled. The admission
// layer reads it from the review (admission/pod_reader.h); once read it is
// immutable and holds no JSON, so each rule is a plain function of it and
// the policy.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/sizing/workload_kinds.h"

namespace gpusizer {

// The resources gpu-sizer sizes, by their Kubernetes names.
inline constexpr std::string_view kCpu = "cpu";
inline constexpr std::string_view kMemory = "memory";
inline constexpr std::string_view kEphemeralStorage = "ephemeral-storage";

// A resource in whole units (millicores for cpu, bytes otherwise), rounded
// up, for the integer arithmetic of caps; and back.
inline int64_t resource_units(const Quantity& quantity, std::string_view resource) {
  return resource == kCpu ? quantity.milli_ceil() : quantity.value_ceil();
}
inline Quantity of_resource_units(int64_t units, std::string_view resource) {
  return resource == kCpu ? Quantity::from_milli(units) : Quantity::from_bytes(units);
}

// Annotation "false" opts a pod out of mutation; validation still applies.
inline constexpr const char* kMutateOptOutKey = "gpu-sizer.io/mutate";

// A container's requests or limits of the resources gpu-sizer reads: a few
// at most, so a list searched in order beats a map. Names may point into
// the reviewed document, which outlives the facts.
class Quantities {
 public:
  // nullptr when the resource is not set.
  const Quantity* find(std::string_view resource) const {
    for (const auto& [name, quantity] : items_) {
      if (name == resource) return &quantity;
    }
    return nullptr;
  }
  // Keeps an earlier value over a later one (a template's over its default).
  void add(std::string_view resource, const Quantity& quantity) {
    if (find(resource)) return;
    if (items_.empty()) items_.reserve(4);  // cpu, memory, ephemeral-storage, a GPU
    items_.emplace_back(resource, quantity);
  }
  void add_all(Quantities&& later) {
    if (items_.empty()) {
      items_ = std::move(later.items_);  // nothing earlier to keep: no copy
      return;
    }
    for (const auto& [name, quantity] : later.items_) add(name, quantity);
  }
  // Calls visit(name, quantity) on each, in the order added.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const auto& [name, quantity] : items_) visit(name, quantity);
  }

 private:
  std::vector<std::pair<std::string_view, Quantity>> items_;
};

struct ContainerFacts {
  std::string name;
  std::vector<std::string> path;  // JSON Pointer tokens to the container in the reviewed object
  // Its ResourceRequirements' key: "resources", or TrainJob's "resourcesPerNode".
  std::string resources_key = "resources";
  // A component that writes its resources in fields of its own
  // (PodShape::kFields), which are read and patched instead; nullptr: none.
  const ComponentFields* fields = nullptr;
  std::string shm_volume;  // the volume mounted at /dev/shm; empty: none
  Quantities requests;
  Quantities limits;
  int64_t gpus = 0;  // its accelerator asks the tables count as GPUs, summed
  // Of them, those its DRA claims give (ClaimUse::gpus), or DRA extended
  // resources: no node reports them as allocatable.
  int64_t claim_gpus = 0;
  // Its extended resources that a DRA DeviceClass serves (KEP-5004: the
  // class's extendedResourceName, or deviceclass.resource.kubernetes.io/
  // <class>), with the accelerator class of that DeviceClass: asks of
  // those resources are that class's (container_asks).
  std::vector<std::pair<std::string_view, const AcceleratorClass*>> device_class_resources;
  // It asks for accelerators beside gpuResources: the policy's accelerators
  // that count as GPUs, or others. Its asks (container_asks,
  // sizing/accelerator_asks.h) are worked out when said.
  bool accelerator_gpus = false;
  bool other_accelerators = false;
  std::string gpu_resource;  // the first of those asks' resources; empty: none
  bool sidecar = false;      // an init container with restartPolicy Always (in PodFacts::app)
  // Its place in the pod's initContainers, which start in that order (a
  // sidecar runs beside the init containers after it); -1: not there.
  int init_index = -1;
  // vLLM's flags in its command or args (read for containers that hold
  // GPUs; 0: not given): --gpu-memory-utilization in thousandths of the
  // GPU, --tensor-parallel-size, --pipeline-parallel-size.
  int64_t gpu_memory_utilization = 0;
  int64_t tensor_parallel = 0;
  int64_t pipeline_parallel = 0;

  // What the container asks for: the request, or the limit it defaults to.
  std::optional<Quantity> effective_request(std::string_view resource) const {
    if (const Quantity* request = requests.find(resource)) return *request;
    return limit(resource);
  }
  std::optional<Quantity> limit(std::string_view resource) const {
    const Quantity* limit = limits.find(resource);
    return limit ? std::optional<Quantity>(*limit) : std::nullopt;
  }
  // Whether its resource is sized: a component that writes some of its
  // resources in fields (Dynamo's cpu and memory) is sized in those only;
  // one that writes none is sized as its pods will be, and only said.
  bool sizes(std::string_view resource) const {
    return !fields || !fields->writes_resources() || fields->writes(resource);
  }
};

// One requirement of a node selector term (spec.affinity.nodeAffinity),
// as Kubernetes defines it: a label (or, for matchFields, the node's
// metadata.name) against values.
struct NodeRequirement {
  enum class Op { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  std::string key;
  Op op = Op::kIn;
  std::vector<std::string> values;
  bool field = false;  // matchFields: key is metadata.name
};

// Requirements ANDed; the terms of a pod are ORed.
struct NodeSelectorTerm {
  std::vector<NodeRequirement> requirements;
};

// A toleration (spec.tolerations): operator Exists matches any value, an
// empty key with Exists every taint, no effect every effect.
struct Toleration {
  std::string key;
  bool exists = false;  // operator Exists; else Equal
  std::string value;
  std::optional<std::string> effect;  // nullopt: all effects
};

// One volume of the pod, as the /dev/shm rule reads it.
struct VolumeFacts {
  std::string_view name;               // points into the reviewed document
  std::size_t list = 0;                // which of PodFacts::volume_lists holds it
  std::size_t index = 0;               // where in that list
  bool memory_backed = false;          // an emptyDir with medium Memory
  std::optional<Quantity> size_limit;  // a memory-backed one's sizeLimit; nullopt: none
  std::string size_limit_error;        // set when that sizeLimit is not a quantity
};

struct WorkflowFields;

// A container's use of one of the pod's DRA claims (its resources.claims,
// KEP-4381). What devices it gets is in the claim (a ResourceClaimTemplate
// or ResourceClaim): when the DRA objects known (sizing/device_claims.h)
// hold it, its requests are read as asks; a class the policy counts as
// GPUs is sized, the rest said. A claim not known is said, never counted
// or denied.
struct ClaimUse {
  std::string container;  // the container's name
  std::string field;      // "spec.containers[0].resources.claims[0]"
  std::string claim;      // the pod's spec.resourceClaims[].name
  std::string request;    // the claim's request it uses; empty: all of them
  // "ResourceClaimTemplate" or "ResourceClaim", and its name; empty when
  // the pod lists no claim of that name.
  std::string source_kind;
  std::string source;
  // The template or claim was found among the DRA objects known.
  bool known = false;
  // Known: one ask per request this use gets whose device class is an
  // accelerator (name: the class; field: the request's name). Their names
  // point into the DRA objects, which outlive the decision.
  std::vector<AcceleratorAsk> asks;
  // The GPUs its asks add to the container: 0 when another container of
  // the same list (app containers share; each init container has its own)
  // already counted the claim's devices.
  int64_t gpus = 0;
};

// What the admission layer knows of a pod before reading its fields: how
// messages name it, and how the policy and the reviewed object treat it.
// The review decides it once (admission/review.cpp); the reader passes it
// on unchanged as the start of the pod's facts, so the rules see exactly
// what the review decided.
struct PodContext {
  std::string description;    // "pod default/train-x": the start of every message
  Mode mode = Mode::kMutate;  // the policy's mode for the object's namespace
  // Which template of the object, before "container ..." in warnings:
  // empty for a Pod, `template "finetune" ` for Argo, `Worker ` for a
  // replica type, else the template's field path.
  std::string label;
  // The template of a long-lived controller that is not patched (policy
  // longLived): what a patch would fix is said, not done or denied; its
  // Pods are sized when created.
  bool sized_at_creation = false;
  // Found by its shape in a kind no table names: it may not be what its
  // operator runs, so what would be denied is said, never denied.
  bool found_by_shape = false;
  // A Pod under review by the API server: its tolerations already hold
  // what the admission plugins add (candidates.h).
  bool tolerations_final = false;
  // An in-place resize (pods/resize) of a running Pod: no patch can fix
  // it, so in mutate mode what would be denied is said, not denied; in
  // enforce mode it is denied as at creation.
  bool resize = false;
};

// The context, and what was read from the pod's fields.
struct PodFacts : PodContext {
  bool opted_out = false;  // annotation gpu-sizer.io/mutate=false

  std::vector<ContainerFacts> app;   // containers and restartable init sidecars
  std::vector<ContainerFacts> init;  // ordinary init containers: run before, one at a time
  // The pod's own spec.resources (pod-level resources, KEP-2837), read as a
  // container named "spec.resources" whose path is the pod spec's, so that
  // its requests and limits are raised by the same edits; absent when the
  // spec has none. For cpu and memory it sets, the pod's cgroup and the
  // scheduler's request are its values, not the containers' sum.
  std::optional<ContainerFacts> pod_level;
  // It asks for an accelerator by annotation (KAI's gpu-fraction): its
  // asks (annotation_asks) are worked out when said.
  bool annotation_accelerators = false;
  // A Pod's workload (admission/workload_identity.h: "PyTorchJob/llama-ft"),
  // for the history rule and the annotation gpu-sizer.io/workload; empty
  // unless a Pod is read with history on.
  std::string workload;
  std::string namespace_name;  // the Pod's, with workload
  // Its containers' uses of DRA claims, in container order.
  std::vector<ClaimUse> claim_uses;

  // Read only for pods that hold GPUs: where the pod's volume lists are
  // (a Pod's spec.volumes; an Argo template's volumes, then its
  // workflow's), the first being the pod's own, where a volume is added;
  // and the volumes of its own list (an Argo workflow's are `workflow`'s).
  std::vector<std::vector<std::string>> volume_lists;
  std::vector<VolumeFacts> volumes;

  // Profile selection's input: the labels and annotations the policy and
  // the rules read (the template's over the object's), and names.
  SelectionInput selection;

  // Read only for pods that hold GPUs: where the pod may be scheduled, as
  // its own spec says (an Argo template's workflow adds what the template
  // does not set: see the effective ones below). Its nodeSelector and the
  // values of the GPU product label that every required node affinity
  // term allows.
  std::map<std::string, std::string, std::less<>> node_selector;
  std::vector<std::string> affinity_products;
  // The required node affinity's terms (ORed; none: any node), the
  // tolerations as written, and spec.nodeName when the pod names its node.
  std::vector<NodeSelectorTerm> affinity_terms;
  bool has_affinity = false;  // a required node affinity was read
  std::vector<Toleration> tolerations;
  std::string node_name;

  // An Argo template's workflow spec, read once for all of its templates
  // (a workflow may have thousands); nullptr for other pods.
  std::shared_ptr<const WorkflowFields> workflow;

  // Whether spec.resources sets cpu or memory (a request or a limit): then
  // the pod, not each container, is sized for it.
  bool sized_at_pod_level(std::string_view resource) const {
    return pod_level && (resource == kCpu || resource == kMemory) &&
           (pod_level->requests.find(resource) || pod_level->limits.find(resource));
  }

  // The annotation's value (the template's, else the object's), or nullptr.
  const std::string* annotation(std::string_view key) const { return selection.annotation(key); }
  // JSON Pointer tokens to a volume.
  std::vector<std::string> volume_path(const VolumeFacts& volume) const {
    std::vector<std::string> path = volume_lists[volume.list];
    path.push_back(std::to_string(volume.index));
    return path;
  }

  // Where the pod may be scheduled, its spec's and its workflow's together:
  // the template's nodeSelector entries over the workflow's, key by key;
  // the template's tolerations, required affinity and nodeName, else the
  // workflow's.
  const std::string* node_selector_value(std::string_view key) const;
  // Calls visit(key, value) on each nodeSelector entry in key order while
  // it returns true; returns whether every call did.
  template <typename Visit>
  bool every_node_selector_entry(Visit&& visit) const;
  const std::vector<Toleration>& effective_tolerations() const;
  // The pod whose has_affinity, affinity_terms and affinity_products apply:
  // this one, or its workflow's spec.
  const PodFacts& affinity_source() const;
  const std::string& effective_node_name() const;
};

// Volumes by name, for a lookup per container (a pod may mount a volume of
// its own in each of thousands).
class VolumeIndex {
 public:
  explicit VolumeIndex(const std::vector<VolumeFacts>& volumes) {
    by_name_.reserve(volumes.size());
    for (const VolumeFacts& volume : volumes) by_name_.emplace(volume.name, &volume);  // the first keeps its name
  }
  // The volume named `name`, or nullptr.
  const VolumeFacts* find(std::string_view name) const {
    const auto found = by_name_.find(name);
    return found == by_name_.end() ? nullptr : found->second;
  }

 private:
  std::unordered_map<std::string_view, const VolumeFacts*> by_name_;
};

// An Argo workflow's spec as its templates' pods inherit it: its volumes
// (each template's volume_lists[1]) and scheduling fields, read into a
// PodFacts without containers, and its volumes by name.
struct WorkflowFields {
  explicit WorkflowFields(PodFacts read);
  WorkflowFields(const WorkflowFields&) = delete;
  WorkflowFields& operator=(const WorkflowFields&) = delete;

  const PodFacts spec;
  const VolumeIndex volumes;  // of spec
  // Distinct for every workflow read in the process's life: the key of what
  // is worked out once per workflow (candidates.cpp).
  const uint64_t serial;
};

// The volume named `name`: the pod's own (`own` indexes pod.volumes), else
// its workflow's; nullptr when neither has it.
inline const VolumeFacts* find_volume(const PodFacts& pod, const VolumeIndex& own, std::string_view name) {
  if (const VolumeFacts* volume = own.find(name)) return volume;
  return pod.workflow ? pod.workflow->volumes.find(name) : nullptr;
}

inline WorkflowFields::WorkflowFields(PodFacts read)
    : spec(std::move(read)), volumes(spec.volumes), serial([] {
        static std::atomic<uint64_t> last{0};
        return ++last;
      }()) {}

inline const std::string* PodFacts::node_selector_value(std::string_view key) const {
  if (auto found = node_selector.find(key); found != node_selector.end()) return &found->second;
  return workflow ? workflow->spec.node_selector_value(key) : nullptr;
}

template <typename Visit>
bool PodFacts::every_node_selector_entry(Visit&& visit) const {
  static const std::map<std::string, std::string, std::less<>> kNone;
  const auto& inherited = workflow ? workflow->spec.node_selector : kNone;
  // Both maps in key order, the template's entry where both have a key: a
  // visit that stops early never walks the rest of a large one.
  auto own = node_selector.begin();
  auto other = inherited.begin();
  while (own != node_selector.end() || other != inherited.end()) {
    const bool take_own = other == inherited.end() || (own != node_selector.end() && own->first <= other->first);
    if (take_own && other != inherited.end() && own->first == other->first) ++other;
    const auto& [key, value] = take_own ? *own++ : *other++;
    if (!visit(key, value)) return false;
  }
  return true;
}

inline const std::vector<Toleration>& PodFacts::effective_tolerations() const {
  return tolerations.empty() && workflow ? workflow->spec.tolerations : tolerations;
}

inline const PodFacts& PodFacts::affinity_source() const {
  return !has_affinity && workflow && workflow->spec.has_affinity ? workflow->spec : *this;
}

inline const std::string& PodFacts::effective_node_name() const {
  return node_name.empty() && workflow ? workflow->spec.node_name : node_name;
}

// Containers that run together and hold GPUs: they share what `gpus` GPUs
// need. Init containers run one at a time before the app containers, so a
// pod has an app phase (its app containers and sidecars that hold GPUs)
// and a phase for each init container that asks for more GPUs than all of
// them.
struct Phase {
  std::vector<const ContainerFacts*> holders;
  int64_t gpus = 0;
  bool app = false;
};

struct PodPhases {
  std::vector<Phase> phases;  // the app phase first, when it holds GPUs
  int64_t gpus = 0;           // the pod's: the app phase's or the largest init container's
  // Set when the app containers together ask for more GPUs than any node
  // has: the pod's input is wrong (kTooLarge), and no app phase is sized.
  std::optional<Problem> too_many_gpus;

  // The app phase, or nullptr when only init containers hold GPUs.
  const Phase* app() const { return !phases.empty() && phases.front().app ? &phases.front() : nullptr; }
};

// REQUIRES: facts outlive the result (phases point at its containers).
PodPhases pod_phases(const PodFacts& facts);
}  // namespace gpusizer
