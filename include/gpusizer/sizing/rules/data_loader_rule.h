// The data loader (seed 001, docs/rules.md "Data loader"): a pod annotated
// gpu-sizer.io/dataloader needs host memory for its DataLoader workers'
// prefetched batches; that floor (data_loader.h) binds the app phase's
// memory when it is above the table's.
#pragma once

#include "gpusizer/sizing/rule.h"

namespace gpusizer {

class DataLoaderRule : public Rule {
 public:
  RuleKind kind() const override { return RuleKind::kDataLoader; }
  Stage stage() const override { return Stage::kFloor; }
  RuleResult evaluate(const RuleInput& input) const override;
  const SettingsBlock* settings() const override;
};

}  // namespace gpusizer
