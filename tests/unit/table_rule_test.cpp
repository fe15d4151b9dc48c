// The GPU table rule on its own: the floors it sets for each phase, the
// single-pod stages it caps, its explain row.
#include "gpusizer/sizing/rules/table_rule.h"

#include <gtest/gtest.h>

#include "gpusizer/sizing/sizing.h"
#include "support/pod_facts_support.h"

namespace gpusizer::table_rule_test {
namespace {

using testing::evaluate;
using testing::gpu_container;
using testing::pod_of;
using testing::q;

const Floor* find_floor(const RuleResult& result, std::size_t phase, std::string_view resource) {
  for (const Floor& floor : result.floors) {
    if (floor.phase == phase && floor.resource == resource) return &floor;
  }
  return nullptr;
}

TEST(TableRule, EachPhaseGetsTheRowOfItsGpus) {
  PodFacts pod = pod_of({gpu_container("trainer", 4, "1", "1Gi")});
  ContainerFacts init = gpu_container("warmup", 8, "1", "1Gi");
  init.path = {"spec", "initContainers", "0"};
  pod.init.push_back(init);
  const RuleResult result = evaluate(TableRule(), default_policy(), pod, "train");
  ASSERT_EQ(result.floors.size(), 6u);
  EXPECT_EQ(find_floor(result, 0, kCpu)->amount, q("32"));
  EXPECT_EQ(find_floor(result, 0, kMemory)->amount, q("192Gi"));
  EXPECT_EQ(find_floor(result, 0, kEphemeralStorage)->amount, q("300Gi"));
  // The init container runs alone with more GPUs than the app phase.
  EXPECT_EQ(find_floor(result, 1, kCpu)->amount, q("64"));
  EXPECT_EQ(find_floor(result, 1, kMemory)->amount, q("384Gi"));
  EXPECT_EQ(find_floor(result, 0, kMemory)->basis, "train profile");
  EXPECT_TRUE(find_floor(result, 0, kMemory)->arithmetic.empty());
  EXPECT_TRUE(result.findings.empty());
  EXPECT_FALSE(result.row) << "no row unless explaining";
}

TEST(TableRule, BetweenRowsThePerGpuRuleGivesTheValue) {
  const RuleResult result =
      evaluate(TableRule(), default_policy(), pod_of({gpu_container("t", 3, "1", "1Gi")}), "train");
  EXPECT_EQ(find_floor(result, 0, kCpu)->amount, q("24"));
  EXPECT_EQ(find_floor(result, 0, kMemory)->amount, q("144Gi"));
}

TEST(TableRule, AProfileWithoutATableSetsNoFloor) {
  const RuleResult result =
      evaluate(TableRule(), default_policy(), pod_of({gpu_container("r", 1, "1", "1Gi")}), "render");
  EXPECT_TRUE(result.floors.empty());
  EXPECT_TRUE(result.findings.empty());
}

TEST(TableRule, MoreGpusThanASinglePodStageTakesIsDenied) {
  PodFacts pod = pod_of({gpu_container("r", 2, "1", "1Gi")});
  const RuleResult result = evaluate(TableRule(), default_policy(), pod, "render");
  ASSERT_EQ(result.findings.size(), 1u);
  const Finding& finding = result.findings[0];
  EXPECT_EQ(finding.reason, DenialReason::kMaxGpus);
  EXPECT_TRUE(finding.deny);
  EXPECT_EQ(finding.message,
            "pod default/train-x: the render profile is a single-pod stage allowing at most 1 GPU(s), found 2 GPUs "
            "(defaultProfile); set the GPU count to 1");
  EXPECT_EQ(finding.brief, "the render profile allows at most 1 GPU(s), found 2 GPUs");

  // An OSMO task's pod is fixed with the values to submit.
  pod.selection.labels[kOsmoGroupLabel] = "render-stage";
  const RuleResult osmo = evaluate(TableRule(), default_policy(), pod, "render");
  ASSERT_EQ(osmo.findings.size(), 1u);
  EXPECT_TRUE(osmo.findings[0].message.ends_with("set the GPU count to 1 (OSMO: --set render_gpu=1)"))
      << osmo.findings[0].message;
}

TEST(TableRule, ExplainsTheRowOfTheAppPhase) {
  const RuleResult result =
      evaluate(TableRule(), default_policy(), pod_of({gpu_container("t", 4, "1", "1Gi")}), "train", true);
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->rule, RuleKind::kTable);
  EXPECT_EQ(result.row->floor, "cpu 32, memory 192Gi, ephemeral-storage 300Gi");
  EXPECT_EQ(result.row->detail, "train row for 4 GPUs");
  const RuleResult none =
      evaluate(TableRule(), default_policy(), pod_of({gpu_container("r", 1, "1", "1Gi")}), "render", true);
  ASSERT_TRUE(none.row);
  EXPECT_EQ(none.row->floor, "-");
  EXPECT_EQ(none.row->detail, "the render profile has no table");
}

}  // namespace
}  // namespace gpusizer::table_rule_test
