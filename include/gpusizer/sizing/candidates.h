// Candidate nodes (docs/rules.md "Candidate nodes"): the node classes of the
// inventory that could run a pod, as the scheduler's filters would find
// them once cordons and the taints of node conditions (not-ready, memory
// pressure, ...) are lifted (a node under them is coming back, and its
// capacity counts): with at least the pod's GPUs of the GPU resource it
// asks for, matching its nodeSelector, its required node affinity (In,
// NotIn, Exists, DoesNotExist, Gt, Lt; matchFields on metadata.name) and
// spec.nodeName, with every NoSchedule and NoExecute taint tolerated (a
// pod naming its node: NoExecute only, as the kubelet admits it). Unless the pod's tolerations are final (a Pod under
// review), a pod asking for an extended resource tolerates that resource's NoSchedule taint while policy
// nodeFit.extendedResourceToleration says the API server's ExtendedResourceToleration plugin will add it.
//
// The policy's nodeFit.pools are chosen from as node fit always chose
// them (node_fit.h pod_pool): the pool the pod names or selects, else all.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/sizing/node_fit_settings.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// Candidates::gpu_resource of a pod whose GPUs all come from DRA claims:
// its candidates are the placeable nodes whose labels name a GPU product
// (all placeable nodes when none does), whatever their allocatable.
inline constexpr std::string_view kClaimedGpus = "GPUs by DRA claim";

struct Candidates {
  const NodeInventory* inventory = nullptr;  // what they were chosen from
  std::string gpu_resource;                  // the pod's GPU resource ("nvidia.com/gpu"), or kClaimedGpus
  int64_t gpus = 0;                          // the pod's GPUs
  // Where the pod may be placed, whatever their GPUs: every filter but the
  // GPU count passed (for pools: the pool's shapes). Node fit judges these.
  std::vector<const NodeClass*> placeable;
  // Those of them with at least the pod's GPUs: the candidates caps use.
  std::vector<const NodeClass*> nodes;
  // `nodes` are every node the pod may be placed on, for a pod whose GPUs
  // come by DRA claim and no node shows which hold them: which of them is
  // its GPU node is not known.
  bool gpu_nodes_unknown = false;
  // The first of `nodes` of each shape (allocatable cpu, memory, ephemeral
  // storage and GPUs of the pod's resource), in their order: classes that
  // differ only in labels (a shape in each zone) hold a pod alike.
  std::vector<const NodeClass*> shapes;
  const NodePool* pool = nullptr;  // pools only: the pod's pool; nullptr: any pool
  // Set when the inventory has classes and none is a candidate: why each
  // was left out, the most common reason first: "12 node shapes: 9 have
  // fewer than 8 nvidia.com/gpu, 3 have taint sku=gpu:NoSchedule, not tolerated".
  std::string why_none;
  // Set when no known node was a candidate and the policy's pools or the
  // instance catalogue stood in (a pool the autoscaler scaled to zero has
  // no nodes until a pod asks for one): "of nodeFit.pools, as none of the
  // cluster's nodes may run it now: <why_none>", "of the instance
  // catalogue, as no node is known".
  std::string stood_in;
  // Why the nodes may be out of date (NodeInventory::stale of the nodes the
  // caller knows, even when the policy's pools stood in for them).
  std::string_view stale;

  // The inventory knows some node (or pool shape).
  bool known() const { return inventory && !inventory->classes.empty(); }
};

// Candidates::gpu_resource of the pod's candidates: its first GPU
// container's resource, kClaimedGpus when all its GPUs come from claims.
std::string candidate_gpu_resource(const PodFacts& pod, const Policy& policy);

// REQUIRES: pod and inventory outlive the result.
Candidates candidate_nodes(const NodeInventory& inventory, const Policy& policy, const PodFacts& pod, int64_t gpus);

// Whether the pod's GPUs are shared replicas on every candidate node:
// time-slicing or MPS that keeps the resource's name (NVIDIA's device
// plugin without renameByDefault; GPU Feature Discovery then labels the
// node nvidia.com/gpu.replicas=<n> above 1 and its product with -SHARED,
// k8s-device-plugin docs/gpu-feature-discovery). What it says, for a
// warning ("nvidia.com/gpu.replicas=4, g4dn.xlarge"); empty: some
// candidate has whole GPUs, or none is known.
std::string shared_replicas(const Candidates& candidates);

// A piece, as the scheduler defines it. (Required node affinity has no
// entry of its own: Placement matches it together with nodeSelector and
// nodeName, and the tests go through candidate_nodes.)
bool tolerates(const std::vector<Toleration>& tolerations, const Taint& taint);

}  // namespace gpusizer
