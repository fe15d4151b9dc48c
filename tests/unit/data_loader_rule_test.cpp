// The data-loader rule on its own: the memory floor of the annotation, its
// arithmetic for denials and warnings, and what it refuses.
#include "gpusizer/sizing/rules/data_loader_rule.h"

#include <gtest/gtest.h>

#include "gpusizer/sizing/data_loader.h"
#include "support/pod_facts_support.h"

namespace gpusizer::data_loader_rule_test {
namespace {

using testing::evaluate;
using testing::gpu_container;
using testing::pod_of;
using testing::q;

PodFacts annotated(const std::string& loader) {
  PodFacts pod = pod_of({gpu_container("trainer", 4, "32", "192Gi")});
  pod.selection.annotations[kDataLoaderKey] = loader;
  return pod;
}

TEST(DataLoaderRule, TheAnnotationSetsAMemoryFloorWithItsArithmetic) {
  const RuleResult result = evaluate(DataLoaderRule(), default_policy(),
                                     annotated("workers=32,prefetch=8,batch=256,sample=3x224x224"), "train", true);
  ASSERT_EQ(result.floors.size(), 1u);
  const Floor& floor = result.floors[0];
  EXPECT_EQ(floor.phase, 0u);
  EXPECT_EQ(floor.resource, kMemory);
  EXPECT_EQ(floor.amount, q("241Gi"));
  EXPECT_EQ(floor.basis, "data loader");
  EXPECT_EQ(floor.arithmetic,
            "data loader: 4 x (32 workers x 8 prefetch x 147Mi batch x 1.56 + 2Gi) + 3Gi; train table 192Gi");
  EXPECT_EQ(floor.note, "data loader memory floor 241Gi = 4x(32x8x147Mi x1.56+2Gi)+3Gi (gpu-sizer.io/dataloader)");
  EXPECT_TRUE(result.findings.empty());
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->floor, "memory 241Gi");
}

TEST(DataLoaderRule, WithoutTheAnnotationNothing) {
  const RuleResult result =
      evaluate(DataLoaderRule(), default_policy(), pod_of({gpu_container("t", 4, "32", "192Gi")}), "train", true);
  EXPECT_TRUE(result.floors.empty());
  EXPECT_TRUE(result.findings.empty());
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->detail, "no annotation gpu-sizer.io/dataloader");
}

TEST(DataLoaderRule, AMalformedAnnotationIsAProblemNamingThePart) {
  const RuleResult result =
      evaluate(DataLoaderRule(), default_policy(), annotated("workers=twelve,batch=2,sample=3"), "train");
  EXPECT_TRUE(result.floors.empty());
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].reason, DenialReason::kInvalid);
  EXPECT_TRUE(result.findings[0].deny);
  EXPECT_EQ(result.findings[0].message,
            "pod default/train-x: annotation gpu-sizer.io/dataloader part \"workers=twelve\": must be a whole number "
            "from 0 to 1024");
}

TEST(DataLoaderRule, AFloorNoNodeHasIsRefusedNotPatched) {
  const RuleResult result = evaluate(DataLoaderRule(), default_policy(),
                                     annotated("workers=1024,prefetch=1024,batch=1000,sample=3x224x224"), "train");
  EXPECT_TRUE(result.floors.empty());
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_NE(result.findings[0].message.find("more than any node has; check its values"), std::string::npos)
      << result.findings[0].message;
}

TEST(DataLoaderRule, AProfileWithoutATableStillGetsTheFloor) {
  const RuleResult result =
      evaluate(DataLoaderRule(), default_policy(), annotated("workers=2,batch=8,sample=3x224x224"), "render");
  ASSERT_EQ(result.floors.size(), 1u);
  EXPECT_EQ(result.floors[0].arithmetic.find("table"), std::string::npos) << result.floors[0].arithmetic;
}

}  // namespace
}  // namespace gpusizer::data_loader_rule_test
