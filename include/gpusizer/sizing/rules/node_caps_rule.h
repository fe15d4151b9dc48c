// Node caps (docs/rules.md "Node caps"): a binding floor is never more than
// some candidate node of the pod can hold, so sizing never makes a
// schedulable pod unschedulable: memory at most the node's allocatable
// minus nodeCaps.reserve, cpu and ephemeral-storage at most the pod's share
// of the node's (allocatable - reserve) x pod GPUs / node GPUs, so the
// node's other GPUs keep theirs. Each is less what the phase's other
// containers already ask. Of the candidates, the one that holds the pod as
// written and cuts the floors least (memory first, then cpu, then storage)
// is capped to. Each cap is a warning naming the node and the value it
// could not give; no candidate known: nothing is capped.
#pragma once

#include <string_view>

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

// Node caps (docs/rules.md "Node caps"): what the node's own DaemonSets
// (device plugin, GPU Feature Discovery, DCGM exporter, node exporter, a
// log agent) take of a node's allocatable, left to them when a floor is
// capped to a node.
struct NodeCapsPolicy {
  Quantity reserve_cpu;
  Quantity reserve_memory;
  Quantity reserve_ephemeral_storage;

  // The policy block nodeCaps (rule_settings.h).
  static constexpr std::string_view kKey = "nodeCaps";
  void read(const YAML::Node& node, bool complete);
};

class NodeCapsRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kNodeCaps; }
  Stage stage() const override { return Stage::kCap; }
  RuleResult evaluate(const RuleInput& input) const override;
  const SettingsBlock* settings() const override;
};

}  // namespace gpusizer
