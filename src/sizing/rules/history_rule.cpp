#include "gpusizer/sizing/rules/history_rule.h"

#include "gpusizer/sizing/history.h"
#include "gpusizer/sizing/messages.h"
#include "gpusizer/util/kubernetes_names.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

RuleResult HistoryRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const HistoryPolicy& policy = input.policy.rule_settings.get<HistoryPolicy>();
  const Phase* app = input.phases.app();
  // Strings are built only when explaining: the rule runs for every GPU pod.
  auto explain = [&](std::string_view floor, std::string_view detail) {
    if (input.explain && app) result.row = RuleRow{RuleKind::kHistory, std::string(floor), std::string(detail)};
  };
  if (policy.mode == HistoryPolicy::Mode::kOff) {
    explain("-", "history is off (policy history.mode)");
    return result;
  }
  if (input.pod.workload.empty() || !app) {
    explain("-", "only a Pod has a workload key; its template is sized by the tables");
    return result;
  }
  const std::string key = history_key(input.pod.workload, app->gpus, input.profile.name);
  if (!input.history) {
    if (input.explain) explain("-", "no history read yet (" + key + ")");
    return result;
  }
  // The floor is the pod's in all: the OOM-killed containers' recommended
  // memory, and the others' requests as they are.
  Quantity floor;
  // Each OOM-killed container's evidence and arithmetic, "; " between
  // them, written in place: the rule runs for every GPU pod history knows.
  std::string said;
  std::string how;
  for (const ContainerFacts* holder : app->holders) {
    const ContainerHistory* history = input.history->find({input.pod.namespace_name, key, holder->name});
    MemoryAdvice scratch;
    const MemoryAdvice& advice = history ? input.history->advice_for(policy, *history, scratch) : scratch;
    const auto who = [&] { return input.pod.label + "container " + in_quotes(holder->name); };
    switch (advice.kind) {
      case MemoryAdvice::Kind::kOomKilled:
        floor = floor.plus(advice.recommended);
        if (!said.empty()) {
          said += "; ";
          how += "; ";
        }
        said.append(who()).append(" ").append(advice.evidence);
        how += advice.arithmetic;
        continue;
      case MemoryAdvice::Kind::kNearLimit:
      case MemoryAdvice::Kind::kOversized:
        result.findings.push_back(
            {DenialReason::kMemory, false, "",
             fit(who() + " " + advice.evidence + ": history recommends memory " + advice.recommended.to_string())});
        break;
      case MemoryAdvice::Kind::kNone:
      case MemoryAdvice::Kind::kFits: break;
    }
    floor = floor.plus(holder->effective_request(kMemory).value_or(Quantity()));
  }
  if (said.empty()) {
    if (input.explain) explain("-", "no OOM kill in history of " + key);
    return result;
  }
  said.append(": memory ").append(floor.to_string());
  if (policy.mode == HistoryPolicy::Mode::kRecommend) {
    result.findings.push_back({DenialReason::kMemory, false, "", fit(said + " recommended (history.mode recommend)")});
    if (input.explain) explain("-", said + " recommended: " + how);
    return result;
  }
  if (input.explain) explain("memory " + floor.to_string(), said + ": " + how);
  result.floors.push_back(
      {0, kMemory, floor, "history", "history: " + how, fit("history: " + said + " (" + how + ")")});
  return result;
}

const SettingsBlock* HistoryRule::settings() const {
  static const SettingsBlockOf<HistoryPolicy> block;
  return &block;
}

}  // namespace gpusizer
