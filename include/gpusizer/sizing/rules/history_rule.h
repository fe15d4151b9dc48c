// History (issue 29, docs/history.md): what the earlier runs of the pod's
// workload used, from the snapshot the webhook refreshes from Prometheus
// (sizing/history.h). After OOM kills it sets a memory floor above what
// killed them (policy history.mode raise) or says what it would be
// (recommend); a workload that peaks close to its limit, or far below its
// request, is warned about. Only Pods carry the workload key: templates
// are sized by the tables, their Pods by history too.
#pragma once

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class HistoryRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kHistory; }
  Stage stage() const override { return Stage::kFloor; }
  RuleResult evaluate(const RuleInput& input) const override;
  const SettingsBlock* settings() const override;
};

}  // namespace gpusizer
