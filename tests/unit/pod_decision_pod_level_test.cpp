// decide_pod on pods that set pod-level resources (spec.resources, KEP-2837):
// the pod's cgroup is what runs out, and the API server refuses a pod whose
// spec.resources is below its containers' sum or a container limit above it.

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/check/explain.h"
#include "support/api_validation.h"
#include "support/pod_decision_support.h"

namespace gpusizer::pod_decision_pod_level_test {
namespace {

using namespace pod_decision_test;  // NOLINT(google-build-using-namespace)
using testing::api_resource_errors;

// A 4-GPU trainer asking cpu 4 / memory 32Gi (limit 48Gi) and a sidecar
// asking cpu 1 / memory 1Gi, in a pod whose spec.resources is `pod_level`.
json pod_level_pod(const json& pod_level) {
  json trainer = {{"name", "trainer"},
                  {"image", "pytorch"},
                  {"resources",
                   {{"requests", {{"cpu", "4"}, {"memory", "32Gi"}, {"ephemeral-storage", "300Gi"}}},
                    {"limits", {{"nvidia.com/gpu", "4"}, {"memory", "48Gi"}}}}}};
  json helper = {
      {"name", "helper"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}};
  json pod = pod_of(json::array({trainer, helper}));
  pod["spec"]["resources"] = pod_level;
  return pod;
}

json the_issue_pod_level() {
  return {{"requests", {{"cpu", "8"}, {"memory", "64Gi"}}}, {"limits", {{"cpu", "8"}, {"memory", "64Gi"}}}};
}

TEST(PodLevelResources, TheIssuesPodIsSizedAtThePodLevelAndStaysValid) {
  const json pod = pod_level_pod(the_issue_pod_level());
  ASSERT_TRUE(api_resource_errors(pod).empty());
  const Outcome r = run(pod);
  // The table's 4-GPU train row (cpu 32, memory 192Gi) for the trainer,
  // and what the helper asks beside it.
  EXPECT_EQ(r.patched["spec"]["resources"], json({{"requests", {{"cpu", "33"}, {"memory", "193Gi"}}},
                                                  {"limits", {{"cpu", "33"}, {"memory", "193Gi"}}}}))
      << r.ops.dump(1);
  // The containers' requests are left as written: their sum stays below the pod's.
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], "4");
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "32Gi");
  // Its own limit would still OOM the trainer at 48Gi: raised to its share.
  EXPECT_EQ(resources_of(r.patched)["limits"]["memory"], "192Gi");
  EXPECT_EQ(api_resource_errors(r.patched), std::vector<std::string>{});
  EXPECT_TRUE(has_line(r.decision.warnings,
                       {"spec.resources: memory request 64Gi->193Gi, limit 64Gi->193Gi", "4 GPUs, train profile"}))
      << all(r.decision.warnings);
  EXPECT_TRUE(has_line(r.decision.warnings, {"container \"trainer\": memory limit 48Gi->192Gi"}))
      << all(r.decision.warnings);
  // A second pass changes nothing.
  EXPECT_TRUE(run(r.patched).ops.empty()) << run(r.patched).ops.dump();
}

TEST(PodLevelResources, OnlyWhatSpecResourcesSetsIsSizedAtThePodLevel) {
  // memory at the pod level, cpu per container.
  const Outcome r = run(pod_level_pod({{"requests", {{"memory", "64Gi"}}}}));
  EXPECT_EQ(r.patched["spec"]["resources"], json({{"requests", {{"memory", "193Gi"}}}})) << r.ops.dump(1);
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], "32");
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "32Gi");
  EXPECT_EQ(api_resource_errors(r.patched), std::vector<std::string>{});
}

TEST(PodLevelResources, ALimitAloneIsTheRequestAndBothAreRaised) {
  const Outcome r = run(pod_level_pod({{"limits", {{"cpu", "8"}, {"memory", "64Gi"}}}}));
  EXPECT_EQ(r.patched["spec"]["resources"], json({{"requests", {{"cpu", "33"}, {"memory", "193Gi"}}},
                                                  {"limits", {{"cpu", "33"}, {"memory", "193Gi"}}}}))
      << r.ops.dump(1);
  EXPECT_EQ(api_resource_errors(r.patched), std::vector<std::string>{});
}

TEST(PodLevelResources, APodLevelRequestThatCoversTheFloorsIsLeftAlone) {
  const Outcome r = run(pod_level_pod({{"requests", {{"cpu", "40"}, {"memory", "256Gi"}}}}));
  EXPECT_EQ(r.patched["spec"]["resources"], json({{"requests", {{"cpu", "40"}, {"memory", "256Gi"}}}}));
  // Only the trainer's own memory limit is below its share.
  EXPECT_EQ(resources_of(r.patched)["limits"]["memory"], "192Gi");
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "32Gi");
}

TEST(PodLevelResources, ContainersWithoutRequestsShareThePodsRequest) {
  json pod = pod_of(json::array(
      {{{"name", "trainer"}, {"image", "pytorch"}, {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}}));
  pod["spec"]["resources"] = {{"requests", {{"cpu", "8"}, {"memory", "64Gi"}}}};
  const Outcome r = run(pod);
  EXPECT_EQ(r.patched["spec"]["resources"], json({{"requests", {{"cpu", "32"}, {"memory", "192Gi"}}}}))
      << r.ops.dump(1);
  EXPECT_FALSE(resources_of(r.patched)["requests"].contains("memory")) << resources_of(r.patched).dump();
  EXPECT_EQ(resources_of(r.patched)["requests"]["ephemeral-storage"], "300Gi") << "not covered at the pod level";
  EXPECT_EQ(api_resource_errors(r.patched), std::vector<std::string>{});
}

TEST(PodLevelResources, EnforceModeDeniesNamingSpecResources) {
  const Outcome r = validate(pod_level_pod(the_issue_pod_level()), Mode::kEnforce);
  ASSERT_FALSE(r.decision.denials.empty()) << all(r.decision.warnings);
  EXPECT_TRUE(has_line(r.decision.denials,
                       {"pod default/train-x spec.resources: 4 GPUs need memory >= 193Gi",
                        "found request 64Gi, limit 64Gi", "set spec.resources memory to 193Gi and cpu to 33"}))
      << all(r.decision.denials);
  // A pod mutate has sized is admitted.
  const Outcome sized = validate(run(pod_level_pod(the_issue_pod_level())).patched, Mode::kEnforce);
  EXPECT_TRUE(sized.decision.denials.empty()) << all(sized.decision.denials);
}

TEST(PodLevelResources, NodeCapsApplyToThePodLevelTotal) {
  const Policy policy = policy_from(
      "nodeFit:\n  pools:\n    - name: small\n"
      "      nodes: [{name: n, gpus: 4, cpu: \"24\", memory: 160Gi, ephemeralStorage: 1Ti}]\n");
  const Outcome r = run(pod_level_pod(the_issue_pod_level()), Endpoint::kMutate, Mode::kMutate, policy);
  // The node less what its DaemonSets keep (cpu 500m, memory 1Gi): the
  // trainer's capped share and the helper's request together.
  EXPECT_EQ(r.patched["spec"]["resources"]["requests"], json({{"cpu", "23500m"}, {"memory", "159Gi"}}))
      << r.ops.dump(1);
  EXPECT_EQ(api_resource_errors(r.patched), std::vector<std::string>{});
}

TEST(PodLevelResources, ExplainShowsThePodLevelRow) {
  JsonReader reader;
  const json pod = pod_level_pod(the_issue_pod_level());
  const JsonView view = reader.view_of(pod);
  PatchBuilder patch(view);
  PodTarget target{{view}, {kDescription, Mode::kMutate}};
  target.explain = true;
  const PodDecision decision = decide_pod(default_policy(), Endpoint::kMutate, target, patch);
  const auto& rows = decision.explanation.containers;
  ASSERT_FALSE(rows.empty());
  EXPECT_TRUE(rows.back().pod_level);
  EXPECT_EQ(rows.back().requests, "cpu 33, memory 193Gi");
}

TEST(ApiValidation, CatchesWhatTheApiServerRefuses) {
  json pod = pod_level_pod(the_issue_pod_level());
  pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "96Gi";
  EXPECT_TRUE(has_line(api_resource_errors(pod), {"resources.requests[memory] 64Gi must be at least", "97Gi"}))
      << all(api_resource_errors(pod));
  pod = pod_level_pod(the_issue_pod_level());
  pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "128Gi";
  EXPECT_TRUE(has_line(api_resource_errors(pod), {"limits[memory] 64Gi is below container trainer's limit 128Gi"}));
  pod = one_gpu_pod("2", "16", "64Gi");
  pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "32Gi";
  EXPECT_TRUE(has_line(api_resource_errors(pod), {"requests[memory] 64Gi must be at most its limit 32Gi"}));
  pod = one_gpu_pod("2", "16", "64Gi");
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4";
  EXPECT_TRUE(has_line(api_resource_errors(pod), {"requests[nvidia.com/gpu] 2 must equal its limit 4"}));
}

}  // namespace
}  // namespace gpusizer::pod_decision_pod_level_test
