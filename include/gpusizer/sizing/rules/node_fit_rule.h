// Node fit (docs/rules.md "Node fit"): the pod as the floors size it
// against the node shapes of its pool in nodeFit.pools (node_fit.h); warned
// about, or denied by nodeFit.action, when no shape holds it.
#pragma once

#include "gpusizer/sizing/node_fit_settings.h"
#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class NodeFitRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kNodeFit; }
  Stage stage() const override { return Stage::kCheck; }
  RuleResult evaluate(const RuleInput& input) const override;
  const SettingsBlock* settings() const override;
};

}  // namespace gpusizer
