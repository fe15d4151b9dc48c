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

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class NodeCapsRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kNodeCaps; }
  Stage stage() const override { return Stage::kCap; }
  RuleResult evaluate(const RuleInput& input) const override;
};

}  // namespace gpusizer
