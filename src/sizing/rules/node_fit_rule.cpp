#include "gpusizer/sizing/rules/node_fit_rule.h"

#include "gpusizer/sizing/messages.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

RuleResult NodeFitRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const NodeFitPolicy& rule = input.policy.node_fit;
  if (rule.pools.empty()) {
    if (input.explain) result.row = RuleRow{RuleKind::kNodeFit, "-", "no node pools in the policy (nodeFit.pools)"};
    return result;
  }
  const PodRequest request = input.sized();
  const PodFacts& pod = input.pod;
  const NodeFit fit = check_node_fit(rule, request, pod.selection.labels, pod.node_selector);
  if (fit.verdict == NodeFit::Verdict::kNoFit) {
    const bool deny = rule.action == CheckAction::kDeny;
    result.findings.push_back(
        {DenialReason::kNodeFit, deny, deny ? pod.description + ": " + fit.message : "", pod.label + fit.brief});
  }
  if (input.explain) {
    const std::string pool = fit.pool ? "pool \"" + fit.pool->name + "\"" : "some pool";
    result.row =
        RuleRow{RuleKind::kNodeFit,
                gpus_text(request.gpus) + ", cpu " + request.cpu.to_string() + ", memory " + request.memory.to_string(),
                fit.verdict == NodeFit::Verdict::kFits ? "fits a node of " + pool : fit.message};
  }
  return result;
}

}  // namespace gpusizer
