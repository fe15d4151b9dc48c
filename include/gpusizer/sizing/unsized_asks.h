// What a pod asks of accelerators that the tables do not size (policy
// `accelerators` with sizing warn, or detail with nothing beside it): said
// in a warning each, with what the tables would give if each unit were a
// GPU, so that no GPU workload passes with no word.
#pragma once

#include <string>
#include <vector>

#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// At most this many lines per pod; a summary line counts the rest.
inline constexpr std::size_t kMaxUnsizedAskWarnings = 3;

// One warning per unsized ask, each under 120 characters:
//   `container "c": 2 nvidia.com/mig-3g.40gb (MIG slice, NVIDIA, 40 GB each)
//    not sized; as 2 GPUs, train: cpu 16, memory 96Gi`.
std::vector<std::string> unsized_ask_warnings(const Policy& policy, const PodFacts& pod);

// Whether the pod asks for any accelerator the tables do not size.
bool has_unsized_asks(const PodFacts& pod);

}  // namespace gpusizer
