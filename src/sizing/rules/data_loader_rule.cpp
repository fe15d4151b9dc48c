#include "gpusizer/sizing/rules/data_loader_rule.h"

#include "gpusizer/sizing/data_loader.h"
#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/sizing.h"

namespace gpusizer {

namespace {

// A floor above this (64Ti) is a typo in the annotation, not a node: it is
// denied instead of patched.
constexpr int64_t kMaxFloorBytes = int64_t{64} << 40;

}  // namespace

RuleResult DataLoaderRule::evaluate(const RuleInput& input) const {
  RuleResult result;
  const std::string* annotation = input.pod.annotation(kDataLoaderKey);
  const Phase* app = input.phases.app();
  auto explain = [&](std::string floor, std::string detail) {
    if (input.explain && app) result.row = RuleRow{RuleKind::kDataLoader, std::move(floor), std::move(detail)};
  };
  auto problem = [&](const std::string& message) {
    result.findings.push_back({DenialReason::kInvalid, true, message, message});
    explain("-", message);
  };
  explain("-", std::string("no annotation ") + kDataLoaderKey);
  if (!annotation || !app) return result;

  const std::string about = input.pod.description + ": annotation " + kDataLoaderKey + " ";
  auto spec = parse_dataloader(*annotation, input.policy.rule_settings.get<DataLoaderPolicy>());
  if (!spec) {
    problem(about + spec.error());
    return result;
  }
  const DataLoaderFloor floor =
      data_loader_floor(input.policy.rule_settings.get<DataLoaderPolicy>(), spec.value(), app->gpus);
  // A typo (sample=3x224x224000) must be denied, not patched into a request
  // no node has.
  if (floor.memory > Quantity::from_bytes(kMaxFloorBytes)) {
    problem(about + "needs " + floor.memory.to_string() + " of memory (" + floor.detail +
            "), more than any node has; check its values");
    return result;
  }
  if (floor.memory.is_zero()) return result;
  const auto table = required_resources(input.profile, app->gpus);
  result.floors.push_back({0, kMemory, floor.memory, "data loader",
                           "data loader: " + floor.detail +
                               (table ? "; " + input.profile.name + " table " + table->memory.to_string() : ""),
                           fit(input.pod.label + "data loader memory floor " + floor.memory.to_string() + " = " +
                               floor.brief + " (" + kDataLoaderKey + ")")});
  explain("memory " + floor.memory.to_string(), floor.detail);
  return result;
}

const SettingsBlock* DataLoaderRule::settings() const {
  static const SettingsBlockOf<DataLoaderPolicy> block;
  return &block;
}

}  // namespace gpusizer
