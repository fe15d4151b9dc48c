// The decider on its own: which floor binds, the order of the report, what
// audit mode says, what stops mutation, and the order of the fixes.
#include "gpusizer/sizing/pod_sizing.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "gpusizer/sizing/data_loader.h"
#include "gpusizer/sizing/model_fit.h"
#include "support/pod_facts_support.h"

namespace gpusizer::pod_sizing_test {
namespace {

using testing::add_shm;
using testing::all;
using testing::gpu_container;
using testing::pod_of;

constexpr const char* kLoader = "workers=32,prefetch=8,batch=256,sample=3x224x224";  // 241Gi on 4 GPUs

PodSizing size(const PodFacts& pod, SizingOptions options, const std::vector<Problem>& problems = {}) {
  return size_pod(default_policy(), pod, pod_phases(pod), problems, options);
}

SizingOptions report_only() { return {true, false, false}; }
SizingOptions fix_only() { return {false, true, false}; }

bool starts_with_any(const std::vector<std::string>& lines, const std::string& start) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line.starts_with(start); });
}

TEST(PodSizing, TheLargestFloorBindsAndItsArithmeticIsTheDenialsWhy) {
  PodFacts pod = pod_of({gpu_container("trainer", 4, "32", "192Gi")}, Mode::kEnforce);
  add_shm(pod, "dshm", "64Gi");                         // table 192Gi + 32Gi above what it holds: 224Gi
  pod.selection.annotations[kDataLoaderKey] = kLoader;  // 241Gi
  const PodSizing sizing = size(pod, {true, false, true});
  ASSERT_EQ(sizing.report.denial_reasons, std::vector<DenialReason>{DenialReason::kMemory});
  EXPECT_NE(sizing.report.denials[0].find("need memory >= 241Gi (data loader: 4 x (32 workers"), std::string::npos)
      << sizing.report.denials[0];
  ASSERT_TRUE(sizing.explanation.binding);
  EXPECT_EQ(sizing.explanation.binding->floor, "memory 241Gi");
  // The data loader's arithmetic comes once, before the container's line.
  EXPECT_TRUE(starts_with_any(sizing.report.warnings, "data loader memory floor 241Gi")) << all(sizing.report.warnings);

  pod.selection.annotations.erase(kDataLoaderKey);
  const PodSizing without_loader = size(pod, {true, false, true});
  EXPECT_EQ(without_loader.explanation.binding->floor, "memory 224Gi");
  EXPECT_EQ(without_loader.explanation.binding->detail, "train 192Gi + 32Gi /dev/shm");
}

TEST(PodSizing, TheReportIsInTheOrderOfItsReasons) {
  // Found in rule order (the /dev/shm rule before the memory shortfall the
  // decider finds after the floors), reported in DenialReason order.
  PodFacts pod = pod_of({gpu_container("trainer", 4, "32", "64Gi")}, Mode::kEnforce);
  pod.selection.annotations[kDataLoaderKey] = "workers=twelve,batch=2,sample=3";
  const PodSizing sizing = size(pod, report_only());
  EXPECT_EQ(sizing.report.denial_reasons,
            (std::vector<DenialReason>{DenialReason::kInvalid, DenialReason::kMemory, DenialReason::kShm}))
      << all(sizing.report.denials);
  EXPECT_TRUE(sizing.blocked);
}

TEST(PodSizing, AuditModeDeniesNothingAndSaysWhatItWould) {
  PodFacts pod = pod_of({gpu_container("trainer", 4, "1", "64Gi")}, Mode::kAudit);
  add_shm(pod, "dshm", "32Gi");
  const PodSizing sizing = size(pod, report_only());
  EXPECT_TRUE(sizing.report.denials.empty()) << all(sizing.report.denials);
  EXPECT_TRUE(starts_with_any(sizing.report.warnings, "audit: would raise: container \"trainer\": cpu 1 is below 32"))
      << all(sizing.report.warnings);
  EXPECT_TRUE(
      starts_with_any(sizing.report.warnings, "audit: would deny: container \"trainer\": memory 64Gi is below 192Gi"))
      << all(sizing.report.warnings);
}

TEST(PodSizing, WrongInputStopsMutation) {
  PodFacts pod = pod_of({gpu_container("trainer", 4, "1", "64Gi")});
  add_shm(pod, "dshm", "32Gi");
  EXPECT_FALSE(size(pod, fix_only()).fixes.empty());
  const PodSizing blocked = size(
      pod, fix_only(),
      {{ProblemCode::kWrongType, "spec.containers[1]", "pod default/train-x: spec.containers[1] is not an object"}});
  EXPECT_TRUE(blocked.blocked);
  EXPECT_TRUE(blocked.fixes.empty());
  pod.opted_out = true;
  EXPECT_TRUE(size(pod, fix_only()).fixes.empty());
  pod.opted_out = false;
  pod.mode = Mode::kEnforce;
  EXPECT_TRUE(size(pod, fix_only()).fixes.empty());
}

TEST(PodSizing, FixesRaiseRequestsFirstThenEachRulesFix) {
  PodFacts pod = pod_of({gpu_container("trainer", 4, "1", "64Gi")});
  pod.selection.annotations[kDataLoaderKey] = kLoader;
  const PodSizing sizing = size(pod, fix_only());
  ASSERT_EQ(sizing.fixes.size(), 2u);
  const Fix& requests = sizing.fixes[0];
  ASSERT_FALSE(requests.edits.empty());
  const auto* cpu = std::get_if<SetResource>(&requests.edits[0]);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->resource, kCpu);
  EXPECT_EQ(cpu->value, "32");
  EXPECT_EQ(requests.changes,
            std::vector<std::string>{"trainer: cpu request 1->32, limit 1->32, memory request 64Gi->241Gi, limit "
                                     "64Gi->241Gi, ephemeral-storage request unset->300Gi"});
  // The data loader's arithmetic follows the raises it explains.
  EXPECT_TRUE(requests.warnings.back().starts_with("data loader memory floor 241Gi")) << all(requests.warnings);
  EXPECT_TRUE(std::holds_alternative<AddMemoryVolume>(sizing.fixes[1].edits[0]));
}

TEST(PodSizing, CheckRulesRunOnlyWhereTheirFindingsAreUsed) {
  PodFacts pod = pod_of({gpu_container("trainer", 2, "16", "96Gi")});
  add_shm(pod, "dshm", "32Gi");
  pod.selection.annotations[kModelKey] = "params=7B,method=full";
  pod.node_selector["nvidia.com/gpu.product"] = "NVIDIA-GeForce-RTX-4090";
  const PodSizing fixing = size(pod, fix_only());
  EXPECT_TRUE(fixing.report.denials.empty());
  EXPECT_TRUE(fixing.explanation.rules.empty());
  const PodSizing reporting = size(pod, report_only());
  EXPECT_EQ(reporting.report.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
}

TEST(PodSizing, AnUnknownProfileIsReportedAndSizesNothing) {
  PodFacts pod = pod_of({gpu_container("trainer", 2, "1", "1Gi")});
  pod.selection.labels["gpu-sizer.io/profile"] = "nope";
  const PodSizing sizing = size(pod, {true, true, true});
  EXPECT_EQ(sizing.profile, nullptr);
  EXPECT_EQ(sizing.report.denial_reasons, std::vector<DenialReason>{DenialReason::kUnknownProfile});
  EXPECT_TRUE(sizing.fixes.empty());
  EXPECT_TRUE(sizing.explanation.rules.empty());
}

TEST(PodSizing, EveryReasonAndRuleHasItsOwnName) {
  std::vector<std::string_view> reasons;
  for (DenialReason reason : {DenialReason::kInvalid, DenialReason::kUnknownProfile, DenialReason::kMaxGpus,
                              DenialReason::kMemory, DenialReason::kShm, DenialReason::kVram, DenialReason::kNodeFit}) {
    reasons.push_back(to_string(reason));
  }
  EXPECT_EQ(reasons, (std::vector<std::string_view>{"invalid", "unknown_profile", "max_gpus", "memory", "shm", "vram",
                                                    "node_fit"}));
  std::vector<std::string_view> rules;
  for (const Rule* rule : sizing_rules()) rules.push_back(rule_name(rule->kind()));
  EXPECT_EQ(rules, (std::vector<std::string_view>{"table", "/dev/shm", "data loader", "history", "offload", "node caps",
                                                  "GPU memory", "node fit"}));
}

}  // namespace
}  // namespace gpusizer::pod_sizing_test
