// The GPU memory rule on its own: where it reads the GPU model, when it
// denies and when it only warns.
#include "gpusizer/sizing/rules/gpu_memory_rule.h"

#include <gtest/gtest.h>

#include "gpusizer/sizing/model_fit.h"
#include "support/pod_facts_support.h"

namespace gpusizer {
namespace {

using testing::evaluate;
using testing::gpu_container;
using testing::pod_of;

PodFacts model_pod(const std::string& model, const std::string& product = "") {
  PodFacts pod = pod_of({gpu_container("trainer", 2, "16", "96Gi")});
  pod.selection.annotations[kModelKey] = model;
  if (!product.empty()) pod.node_selector["nvidia.com/gpu.product"] = product;
  return pod;
}

TEST(GpuMemoryRule, AModelThatFitsNoAllowedGpuIsDenied) {
  const RuleResult result =
      evaluate(GpuMemoryRule(), default_policy(), model_pod("params=7B,method=full,zero=0", "NVIDIA-GeForce-RTX-4090"),
               "train", true);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].reason, DenialReason::kVram);
  EXPECT_TRUE(result.findings[0].deny);
  EXPECT_TRUE(result.findings[0].message.starts_with(
      "pod default/train-x: model params=7B method=full zero=0 needs 280.0 GB per GPU"))
      << result.findings[0].message;
  EXPECT_NE(result.findings[0].message.find("(nodeSelector nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4090;"),
            std::string::npos);
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->rule, RuleKind::kGpuMemory);
  EXPECT_EQ(result.row->floor, "280.0 GB per GPU");
}

TEST(GpuMemoryRule, TheWarnActionOnlyWarns) {
  Policy policy = default_policy();
  policy.gpu_memory.action = CheckAction::kWarn;
  const RuleResult result =
      evaluate(GpuMemoryRule(), policy, model_pod("params=7B,method=full", "NVIDIA-GeForce-RTX-4090"), "train");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_FALSE(result.findings[0].deny);
  EXPECT_NE(result.findings[0].brief.find("280.0 GB"), std::string::npos) << result.findings[0].brief;
}

TEST(GpuMemoryRule, AnUnknownGpuIsNotCheckedAndNotDenied) {
  const RuleResult result = evaluate(GpuMemoryRule(), default_policy(), model_pod("params=7B"), "train", true);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_FALSE(result.findings[0].deny);
  EXPECT_EQ(
      result.findings[0].brief,
      "model not checked: GPU model unknown; set nodeSelector nvidia.com/gpu.product or annotation gpu-sizer.io/gpu");
}

TEST(GpuMemoryRule, TheAnnotationNamesTheGpuWhenTheSchedulerDoesNot) {
  PodFacts pod = model_pod("params=7B,method=lora,zero=3");
  pod.selection.annotations[kGpuKey] = "H100-80GB";
  const RuleResult result = evaluate(GpuMemoryRule(), default_policy(), pod, "train", true);
  EXPECT_TRUE(result.findings.empty());
  ASSERT_TRUE(result.row);
  EXPECT_NE(result.row->detail.find("annotation gpu-sizer.io/gpu=H100-80GB"), std::string::npos) << result.row->detail;
}

TEST(GpuMemoryRule, AMalformedAnnotationIsAProblem) {
  const RuleResult result = evaluate(GpuMemoryRule(), default_policy(), model_pod("params=7B,zero=4"), "train");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].reason, DenialReason::kInvalid);
  EXPECT_EQ(result.findings[0].message,
            "pod default/train-x: annotation gpu-sizer.io/model part \"zero=4\": must be 0, 1, 2 or 3");
}

TEST(GpuMemoryRule, WithoutTheAnnotationNothing) {
  const RuleResult result =
      evaluate(GpuMemoryRule(), default_policy(), pod_of({gpu_container("t", 2, "16", "96Gi")}), "train", true);
  EXPECT_TRUE(result.findings.empty());
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->detail, "no annotation gpu-sizer.io/model");
}

}  // namespace
}  // namespace gpusizer
