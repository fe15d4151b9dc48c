// A pod's accelerator asks (sizing/accelerators.h), worked out from its
// facts when something says them: explain, and the warnings about asks the
// tables do not size (policy `accelerators` with sizing warn, or detail
// with nothing beside it), each with what the tables would give if each
// unit were a GPU, so that no GPU workload passes with no word. Reading a
// pod only counts its GPUs and notes that other asks exist, which keeps
// plain GPU pods as cheap to decide as before.
#pragma once

#include <string>
#include <vector>

#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// At most this many lines per pod; a summary line counts the rest.
inline constexpr std::size_t kMaxUnsizedAskWarnings = 3;

// A container's asks: each accelerator resource of its limits, then those
// of its requests that its limits lack.
std::vector<AcceleratorAsk> container_asks(const Policy& policy, const ContainerFacts& container);
// The pod's asks by annotation (KAI's gpu-fraction).
std::vector<AcceleratorAsk> annotation_asks(const Policy& policy, const PodFacts& pod);

// The asks of a DRA claim's requests: all of them, or the one `request`
// names ("gpu", or "gpu/older-gpu" for one of its firstAvailable
// alternatives). One per request whose alternatives name an accelerator
// class (Policy::device_class_for): the first such alternative's class;
// as amount the fewest devices any alternative gets (one of a class not
// counted as GPUs gets none), and up_to the most. A request of
// allocationMode All is all_devices, its amount unknown (0).
// REQUIRES: claim outlives the asks (their names point into it).
std::vector<AcceleratorAsk> claim_asks(const Policy& policy, const ClaimSpec& claim, std::string_view request);
// The GPUs the tables count among a claim's asks: the amounts of those
// counted as GPUs.
int64_t claim_gpus(const std::vector<AcceleratorAsk>& asks);

// Whether the reader saw asks beside the GPUs the tables count (other
// accelerators, fraction annotations, DRA claims): only then can
// unsized_ask_warnings say anything. The flags alone: cheap on every pod.
bool asks_other_accelerators(const PodFacts& pod);

// What makes a container's GPUs shares of GPUs, written beside them: a
// detail fraction below its whole (HAMi's nvidia.com/gpucores: 30, or any
// nvidia.com/gpumem beside nvidia.com/gpu: 1), as "nvidia.com/gpucores 30";
// empty when no container's are. The tables' rows are for whole GPUs, so
// such a pod is said, not sized (as nvidia.com/gpu.shared is).
std::string gpu_share(const Policy& policy, const PodFacts& pod);

// One warning per unsized ask, each under 120 characters:
//   `container "c": 2 nvidia.com/mig-3g.40gb (MIG slice) not sized; as 2
//    GPUs, train: cpu 16, memory 96Gi`. A container's asks are not warned
// about when its cpu and memory requests already meet the row of all its
// devices (each unit as a GPU): nothing to set.
std::vector<std::string> unsized_ask_warnings(const Policy& policy, const PodFacts& pod);

}  // namespace gpusizer
