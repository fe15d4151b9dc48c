#include "gpusizer/sizing/rules/table_rule.h"

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// More GPUs than a single-pod stage takes: no patch fixes the count.
std::optional<Finding> check_max_gpus(const RuleInput& input) {
  const Profile& profile = input.profile;
  const int64_t gpus = input.phases.gpus;
  if (!profile.max_gpus || gpus <= *profile.max_gpus) return std::nullopt;
  const std::string most = std::to_string(*profile.max_gpus);
  return Finding{DenialReason::kMaxGpus, true,
                 input.pod.description + ": the " + profile_text(profile) + " is a single-pod stage allowing at most " +
                     most + " GPU(s), found " + gpus_text(gpus) + " (" + input.profile_reason +
                     "); set the GPU count to " + most +
                     osmo_fix(input.pod.selection, set_hint(profile, *profile.max_gpus)),
                 "the " + profile_text(profile) + " allows at most " + most + " GPU(s), found " + gpus_text(gpus)};
}

RuleRow explain(const RuleInput& input, const Phase& app) {
  const auto row = required_resources(input.profile, app.gpus);
  if (!row) return {RuleKind::kTable, "-", "the " + profile_text(input.profile) + " has no table"};
  std::string floor = "cpu " + row->cpu.to_string() + ", memory " + row->memory.to_string();
  if (row->storage) floor += ", ephemeral-storage " + row->storage->to_string();
  return {RuleKind::kTable, floor, input.profile.name + " row for " + gpus_text(app.gpus)};
}

}  // namespace

RuleResult TableRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const std::string basis = profile_text(input.profile);
  const auto& phases = input.phases.phases;
  result.floors.reserve(3 * phases.size());
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const auto row = required_resources(input.profile, phases[i].gpus);
    if (!row) continue;
    result.floors.push_back({i, kCpu, row->cpu, basis});
    result.floors.push_back({i, kMemory, row->memory, basis});
    if (row->storage) result.floors.push_back({i, kEphemeralStorage, *row->storage, basis});
  }
  if (auto finding = check_max_gpus(input)) result.findings.push_back(std::move(*finding));
  if (input.explain && input.phases.app()) result.row = explain(input, *input.phases.app());
  return result;
}

}  // namespace gpusizer
