// Node fit: whether a sized pod fits any node shape of its pool (policy
// nodeFit). A check, not a floor: the caller warns or denies by
// NodeFitPolicy::action. Pure: plain structs in and out, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "gpusizer/quantity/quantity.h"
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
    kOff,    // the policy lists no pools
    kFits,   // some shape holds every resource the pod requests
    kNoFit,  // no shape does
  };
  Verdict verdict = Verdict::kOff;
  // The pool checked, pointing into the policy; nullptr: every pool's shapes.
  const NodePool* pool = nullptr;
  // The largest checked shape (most GPUs, then memory, then cpu); nullptr when kOff.
  const NodeShape* largest = nullptr;
  // Set when kNoFit. message names every resource the largest node lacks
  // and the way out; brief is its short form, under 110 characters:
  //   node fit: 16 GPUs, cpu 128, memory 768Gi fit no node of pool "a100"; largest "dgx-a100" has 8 GPUs
  std::string message;
  std::string brief;
};

// The pod's pool: the one named by the pod label policy.pool_label, else the
// first whose non-empty node_selector is a subset of the pod's
// node_selector; nullptr when none is (the pod may land in any pool).
const NodePool* pod_pool(const NodeFitPolicy& policy, const std::map<std::string, std::string, std::less<>>& pod_labels,
                         const std::map<std::string, std::string, std::less<>>& node_selector);

// Checks the pod's pool (pod_pool), or every shape of every pool when it
// has none. A shape fits when the pod's GPUs, cpu, memory
// and ephemeral storage are each at most the shape's.
NodeFit check_node_fit(const NodeFitPolicy& policy, const PodRequest& request,
                       const std::map<std::string, std::string, std::less<>>& pod_labels,
                       const std::map<std::string, std::string, std::less<>>& node_selector);

}  // namespace gpusizer
