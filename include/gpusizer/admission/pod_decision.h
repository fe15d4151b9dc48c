// The decision for one pod (a Pod object or a pod template), as an endpoint
// answers it: read the pod (pod_reader.h), leave it for its Pod when its
// values are filled in at run time, size it (sizing/pod_sizing.h), then
// patch it (the mutating endpoint) or report on it (the validating one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpusizer/admission/pod_reader.h"
#include "gpusizer/json/json_patch.h"
#include "gpusizer/sizing/pod_sizing.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// The mutating endpoint patches; the validating endpoint allows or denies
// and never patches (the API server rejects patches from validating hooks).
enum class Endpoint { kMutate, kValidate };

// Annotation recording what the webhook changed, like LimitRanger's.
inline constexpr const char* kSizedKey = "gpu-sizer.io/sized";

struct PodDecision {
  std::string description;                   // the target's description
  int64_t gpus = 0;                          // app containers summed (init containers: the largest)
  std::string profile;                       // empty when the pod has no GPUs
  std::string profile_reason;                // why that profile
  std::vector<std::string> changes;          // one per container: what the patch raised
  std::vector<std::string> warnings;         // each under 120 characters
  std::vector<std::string> denials;          // non-empty: deny; each names what to set
  std::vector<DenialReason> denial_reasons;  // why each denial, in the same order
  std::vector<Problem> problems;             // what reading the pod found wrong: the kInvalid denials
  std::vector<Raise> raised;                 // what the patch raised
  std::vector<std::string_view> capped;      // resources a node cap lowered (kCpu, kMemory, kEphemeralStorage)
  std::optional<std::size_t> nodes_holding;  // node shapes that hold the pod as given; nullopt: no nodes known
  bool undecided = false;                    // left for the Pod: unresolved expressions or podSpecPatch
  bool history_raised = false;               // the patch raised memory to the history rule's floor
  Explanation explanation;                   // only when the target asks to explain
};

// Decides one pod. Patch operations (mutate endpoint, mutate mode only) are
// added to `patch`, whose document is the whole reviewed object.
PodDecision decide_pod(const Policy& policy, Endpoint endpoint, const PodTarget& target, PatchBuilder& patch);

}  // namespace gpusizer
