// Node fit: whether a sized pod fits any node it may run on (its candidate
// nodes: the inventory's, or the shapes of its pool in the policy's
// nodeFit.pools). A check, not a floor: the caller warns or denies by
// NodeFitPolicy::action. Pure: plain structs in and out, no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/candidates.h"
#include "gpusizer/sizing/node_fit_settings.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// The scheduler's view of a sized pod: its effective requests (requests
// only; the caller sums overhead, app containers and sidecars, and the
// largest init container). Zero ephemeral storage: none requested.
struct PodRequest {
  int64_t gpus = 0;
  Quantity cpu;
  Quantity memory;
  Quantity ephemeral_storage;
};

struct NodeFit {
  enum class Verdict {
    kOff,           // no nodes known (no inventory, no pools)
    kFits,          // some placeable node holds every resource the pod requests
    kNoFit,         // none does
    kNoCandidates,  // no known node may run the pod at all (selectors, taints, cordons)
  };
  Verdict verdict = Verdict::kOff;
  // The largest placeable node (most GPUs, then memory, then cpu); nullptr
  // when kOff or kNoCandidates.
  const NodeClass* largest = nullptr;
  // Set unless kOff or kFits. message names every resource the largest node
  // lacks and the way out; brief is its short form, under 110 characters:
  //   node fit: 16 GPUs, cpu 128, memory 768Gi fit no node of pool "a100"; largest "dgx-a100" has 8 GPUs
  std::string message;
  std::string brief;
};

// The pod's pool: the one named by the pod label policy.pool_label, else the
// first whose non-empty node_selector is a subset of the pod's
// nodeSelector (its workflow's with it); nullptr when none is (the pod may
// land in any pool).
const NodePool* pod_pool(const NodeFitPolicy& policy, const PodFacts& pod);

// Whether the node holds the pod: its GPUs of gpu_resource, cpu, memory
// and ephemeral storage each at most the node's allocatable (a resource the
// node does not report is none, as the scheduler counts it). GPUs by DRA
// claim (kClaimedGpus) are in no allocatable: only the rest is compared.
bool holds(const NodeClass& node, const PodRequest& request, std::string_view gpu_resource);

// The smallest candidate (fewest GPUs of the pod's resource, then least
// cpu, then memory: the cheaper machine) that holds the request, or nullptr.
const NodeClass* smallest_holding(const Candidates& candidates, const PodRequest& request);

// Whether some placeable candidate (candidates.h) holds the pod: its GPUs
// of the pod's GPU resource, cpu, memory and ephemeral storage each at most
// the node's allocatable (a resource the node does not report is none).
NodeFit check_node_fit(const PodRequest& request, const Candidates& candidates);

// A pod's effective request as the scheduler sums it: its app containers
// and sidecars together, or its largest init container, whichever is larger,
// each container's value from `request` (nullopt: not requested); for cpu
// and memory that the pod's spec.resources sets, `request` of PodFacts::pod_level.
PodRequest pod_request(
    const PodFacts& pod, int64_t gpus,
    const std::function<std::optional<Quantity>(const ContainerFacts&, std::string_view resource)>& request);

}  // namespace gpusizer
