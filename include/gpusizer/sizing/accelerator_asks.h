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

// Whether the reader saw asks beside the GPUs the tables count (other
// accelerators, fraction annotations, DRA claims): only then can
// unsized_ask_warnings say anything. The flags alone: cheap on every pod.
bool asks_other_accelerators(const PodFacts& pod);

// One warning per unsized ask, each under 120 characters:
//   `container "c": 2 nvidia.com/mig-3g.40gb (MIG slice) not sized; as 2
//    GPUs, train: cpu 16, memory 96Gi`.
std::vector<std::string> unsized_ask_warnings(const Policy& policy, const PodFacts& pod);

}  // namespace gpusizer
