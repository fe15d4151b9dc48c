// The settings of the node fit rule (rules/node_fit_rule.h), which the
// candidate nodes, the node caps and the status page share: the policy
// block nodeFit, the node pools a pod may run on when no nodes are known.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

struct NodeInventory;  // sizing/nodes.h

// One node shape of a pool: its allocatable resources.
struct NodeShape {
  std::string name;
  int64_t gpus = 0;
  Quantity cpu;
  Quantity memory;
  Quantity ephemeral_storage;
};

struct NodePool {
  std::string name;
  std::map<std::string, std::string, std::less<>> node_selector;
  std::string gpu_product;  // the GPU model of pods in this pool; may be empty
  std::vector<NodeShape> nodes;
};

// Whether a sized pod fits any node of its pool. No pools: not checked.
struct NodeFitPolicy {
  CheckAction action = CheckAction::kWarn;
  std::string pool_label;  // a pod label naming its pool
  std::vector<NodePool> pools;
  // The API server runs the ExtendedResourceToleration admission plugin
  // (GKE does; upstream it is off by default): a pod asking for a GPU
  // resource tolerates that resource's NoSchedule taint (candidates.h).
  bool extended_resource_toleration = true;
  // The pools as node classes (sizing/nodes.h pool_inventory), made when
  // the policy is read; nullptr: no pools. Decisions use it when no nodes
  // are known.
  std::shared_ptr<const NodeInventory> pool_nodes;

  // The policy block nodeFit (rule_settings.h).
  static constexpr std::string_view kKey = "nodeFit";
  void read(const YAML::Node& node, bool complete);
  // Each pool's gpuProduct matches a GPU model of gpuMemory.gpus; makes
  // pool_nodes.
  static void finish(Policy& policy, const YAML::Node& root);
};

}  // namespace gpusizer
