#include "gpusizer/sizing/rules/node_fit_rule.h"

#include "gpusizer/sizing/messages.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

RuleResult NodeFitRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const Candidates* candidates = input.candidates;
  if (!candidates || !candidates->known()) {
    if (input.explain) {
      result.row = RuleRow{RuleKind::kNodeFit, "-",
                           "no node pools in the policy (nodeFit.pools) and no nodes known (check --nodes FILE; "
                           "serve watches the cluster's)"};
    }
    return result;
  }
  const PodRequest request = input.sized();
  const PodFacts& pod = input.pod;
  const NodeFit judged = check_node_fit(request, *candidates);
  // A pod no known node may run at all is told, never denied: a node pool
  // that scales up from zero has no node to show until the pod waits for it.
  if (judged.verdict == NodeFit::Verdict::kNoCandidates) {
    result.findings.push_back({DenialReason::kNodeFit, false, "", fit(pod.label + judged.brief)});
  } else if (judged.verdict == NodeFit::Verdict::kNoFit) {
    // Pools standing in for nodes the cluster has but the pod may not use
    // now (cordoned, tainted, too small) are a guess at what the
    // autoscaler adds: told, never denied.
    const bool deny =
        input.policy.rule_settings.get<NodeFitPolicy>().action == CheckAction::kDeny && candidates->stood_in.empty();
    result.findings.push_back(
        {DenialReason::kNodeFit, deny, deny ? pod.description + ": " + judged.message : "", pod.label + judged.brief});
  }
  if (input.explain) {
    const bool pools = candidates->inventory->source == InventorySource::kPools;
    const std::string where =
        pools
            ? "a node of " + (candidates->pool ? "pool " + in_quotes(candidates->pool->name) : std::string("some pool"))
            : "a node it may run on" +
                  (candidates->stood_in.empty() ? " (of " + candidates->inventory->origin + ")" : std::string());
    result.row =
        RuleRow{RuleKind::kNodeFit,
                gpus_text(request.gpus) + ", cpu " + request.cpu.to_string() + ", memory " + request.memory.to_string(),
                (judged.verdict == NodeFit::Verdict::kFits ? "fits " + where : judged.message) +
                    (candidates->stood_in.empty() ? "" : " (" + candidates->stood_in + ")")};
  }
  return result;
}

const SettingsBlock* NodeFitRule::settings() const {
  static const SettingsBlockOf<NodeFitPolicy> block;
  return &block;
}

}  // namespace gpusizer
