// The decision for one pod (a Pod object or a pod template): count its GPUs,
// choose its profile, and raise, warn about or deny its CPU, memory and
// ephemeral-storage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpusizer/json/json_patch.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

// The mutating endpoint patches; the validating endpoint allows or denies
// and never patches (the API server rejects patches from validating hooks).
enum class Endpoint { kMutate, kValidate };

// Annotation "false" opts a pod out of mutation; validation still applies.
inline constexpr const char* kMutateOptOutKey = "gpu-sizer.io/mutate";
// Annotation recording what the webhook changed, like LimitRanger's.
inline constexpr const char* kSizedKey = "gpu-sizer.io/sized";

struct PodTarget {
  PodTemplateRef ref;       // the pod or pod template and where it is in the reviewed object
  std::string description;  // "pod default/train-x", the start of every message
  Mode mode;                // the policy's mode for the object's namespace
  // The reviewed object's metadata, for labels and annotations a template
  // lacks; absent for a Pod (its own metadata is the object's).
  JsonView parent_metadata;
  // Which template of the object, before "container ..." in warnings:
  // empty for a Pod, `template "finetune" ` for Argo, `Worker ` for a
  // replica type, else the template's field path.
  std::string label;
  // Fill PodDecision::rules (gpu-sizer explain); the webhook leaves it off.
  bool explain = false;
};

// One request raised by the mutating endpoint, for metrics.
struct Raise {
  std::string resource;  // cpu, memory, ephemeral-storage, or shm (/dev/shm sizeLimit)
  Quantity added;        // new request minus the request before
};

// One rule's part in a pod's sizing, as `gpu-sizer explain` prints it.
struct RuleResult {
  std::string rule;    // table, /dev/shm, data loader, GPU memory, node fit, binding
  std::string floor;   // what it asks of the pod ("cpu 32, memory 192Gi"), or "-"
  std::string detail;  // why, or why it does not apply
};

struct PodDecision {
  std::string description;     // the target's description
  int64_t gpus = 0;            // app containers summed (init containers: the largest)
  std::string profile;         // empty when the pod has no GPUs
  std::string profile_reason;  // why that profile
  std::vector<std::string> changes;   // one per container: what the patch raised
  std::vector<std::string> warnings;  // each under 120 characters
  std::vector<std::string> denials;   // non-empty: deny; each names what to set
  // Why each denial, in the same order: memory, max_gpus, shm, vram,
  // node_fit, invalid or unknown_profile (metric label values).
  std::vector<std::string> denial_reasons;
  std::vector<Raise> raised;          // what the patch raised
  bool undecided = false;             // left for the Pod: unresolved expressions or podSpecPatch
  std::vector<RuleResult> rules;      // only when the target asks to explain
};

// Decides one pod. Patch operations (mutate endpoint, mutate mode only) are
// added to `patch`, whose document is the whole reviewed object.
PodDecision decide_pod(const Policy& policy, Endpoint endpoint, const PodTarget& target,
                       PatchBuilder& patch);

// A quantity written in JSON: a string ("64Gi") or, as custom resources
// arrive, a bare number (4). Fails naming the value.
Result<Quantity> quantity_from_json(JsonView value);

}  // namespace gpusizer
