// The offload rule on its own: DeepSpeed offload in the annotation
// gpu-sizer.io/model raises the app phase's memory floor by what it keeps
// in host memory for the pod's GPUs, on top of the profile table.
#include "gpusizer/sizing/rules/offload_rule.h"

#include <gtest/gtest.h>

#include "gpusizer/sizing/model_fit.h"
#include "support/pod_facts_support.h"

namespace gpusizer::offload_rule_test {
namespace {

using testing::evaluate;
using testing::gpu_container;
using testing::pod_of;
using testing::q;

PodFacts annotated(const std::string& model) {
  PodFacts pod = pod_of({gpu_container("trainer", 4, "32", "192Gi")});
  pod.selection.annotations[kModelKey] = model;
  return pod;
}

// Llama-2-7B (6,738,415,616 params) with ZeRO-3 and offload=all on 4 GPUs:
// 18 bytes a parameter in host memory (DeepSpeed's estimator without its
// 1.5 buffer) = 121,291,481,088 bytes = 112.96Gi, over the train table's
// 192Gi at 4 GPUs: 305Gi in whole Gi.
TEST(OffloadRule, OffloadRaisesTheMemoryFloorByTheHostState) {
  const RuleResult result =
      evaluate(OffloadRule(), default_policy(), annotated("model=llama-2-7b,zero=3,offload=all"), "train", true);
  ASSERT_EQ(result.floors.size(), 1u);
  const Floor& floor = result.floors[0];
  EXPECT_EQ(floor.resource, kMemory);
  EXPECT_EQ(floor.amount, q("305Gi"));
  EXPECT_EQ(floor.basis, "offload");
  EXPECT_EQ(floor.arithmetic,
            "offload: offload=all keeps 28.25 GiB per GPU in host memory x 4 GPUs = 112.97 GiB + train table 192Gi");
  EXPECT_TRUE(result.findings.empty());
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->floor, "memory 305Gi");
}

TEST(OffloadRule, OptimizerOffloadKeepsSixteenBytesATrainedParameter) {
  // 16 x 6,738,415,616 = 107,814,649,856 bytes = 100.41Gi; + 192Gi -> 293Gi.
  const RuleResult result =
      evaluate(OffloadRule(), default_policy(), annotated("model=llama-2-7b,zero=2,offload=optimizer"), "train");
  ASSERT_EQ(result.floors.size(), 1u);
  EXPECT_EQ(result.floors[0].amount, q("293Gi"));
}

TEST(OffloadRule, WithoutOffloadOrWithABadAnnotationNothing) {
  for (const char* model :
       {"model=llama-2-7b,zero=3", "params=7B", "params=7B,offload=all", "model=llama-2-7b,zero=3,offload=nvme"}) {
    const RuleResult result = evaluate(OffloadRule(), default_policy(), annotated(model), "train", true);
    EXPECT_TRUE(result.floors.empty()) << model;
    // A malformed annotation is the GPU memory rule's to report, once.
    EXPECT_TRUE(result.findings.empty()) << model;
  }
  EXPECT_TRUE(evaluate(OffloadRule(), default_policy(), pod_of({gpu_container("t", 4, "32", "192Gi")}), "train")
                  .floors.empty());
}

}  // namespace
}  // namespace gpusizer::offload_rule_test
