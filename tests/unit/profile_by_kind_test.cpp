// Servers are sized as servers: the embedded policy's rules by kind and by
// owner kind choose the infer profile for serving controllers, serving
// CRDs and the Pods they create, and train for batch kinds and their Pods.
// The explicit label and the rules before them still win.
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"

namespace gpusizer::profile_by_kind_test {
namespace {

std::string profile_of(const SelectionInput& input) {
  auto choice = select_profile(default_policy(), input);
  EXPECT_TRUE(choice.ok()) << choice.error();
  return choice.ok() ? choice.value().profile->name : "";
}

SelectionInput of_kind(const std::string& kind, const std::string& owner_kind = "") {
  SelectionInput input;
  input.kind = kind;
  input.owner_kind = owner_kind;
  return input;
}

TEST(ProfileByKind, ServingControllersAndCrdsAreInfer) {
  for (const char* kind : {"Deployment", "StatefulSet", "ReplicaSet", "LeaderWorkerSet", "RayService",
                           "InferenceService", "LLMInferenceService", "NIMService"}) {
    EXPECT_EQ(profile_of(of_kind(kind)), "infer") << kind;
  }
}

TEST(ProfileByKind, PodsOfServingControllersAreInfer) {
  for (const char* owner : {"ReplicaSet", "StatefulSet", "LeaderWorkerSet"}) {
    EXPECT_EQ(profile_of(of_kind("Pod", owner)), "infer") << owner;
  }
  // A RayService's cluster is a RayCluster; KubeRay labels its pods.
  SelectionInput ray = of_kind("Pod", "RayCluster");
  EXPECT_EQ(profile_of(ray), "train");
  ray.labels["ray.io/originated-from-crd"] = "RayService";
  EXPECT_EQ(profile_of(ray), "infer");
}

TEST(ProfileByKind, BatchKindsAndTheirPodsTrain) {
  for (const char* kind : {"Job", "CronJob", "Workflow", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "RayJob",
                           "TrainJob", "ClusterTrainingRuntime"}) {
    EXPECT_EQ(profile_of(of_kind(kind)), "train") << kind;
  }
  for (const char* owner : {"Job", "Workflow", "PyTorchJob"}) EXPECT_EQ(profile_of(of_kind("Pod", owner)), "train");
  // A bare Pod, or a kind no rule names: the default.
  EXPECT_EQ(profile_of(of_kind("Pod")), "train");
  EXPECT_EQ(profile_of(of_kind("RayCluster")), "train");
}

TEST(ProfileByKind, TheLabelAndEarlierRulesWin) {
  SelectionInput labelled = of_kind("Deployment");
  labelled.labels["gpu-sizer.io/profile"] = "train";
  EXPECT_EQ(profile_of(labelled), "train");
  SelectionInput osmo = of_kind("Pod", "ReplicaSet");
  osmo.labels["osmo.group_name"] = "finetune-job";
  EXPECT_EQ(profile_of(osmo), "train");
}

TEST(ProfileByKind, TheReasonNamesTheRule) {
  auto choice = select_profile(default_policy(), of_kind("Pod", "ReplicaSet"));
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice.value().reason, "policy rule: ownerKind in [ReplicaSet, StatefulSet, LeaderWorkerSet, Model]");
}

TEST(ProfileByKind, AnInRuleNeedsAList) {
  auto parsed = parse_policy("profileRules:\n  - {on: kind, in: [], profile: infer}\n", "test.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("profileRules[0].in"), std::string::npos) << parsed.error();
  auto unknown = parse_policy("profileRules:\n  - {on: kinds, equals: Job, profile: train}\n", "test.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("kind or ownerKind"), std::string::npos) << unknown.error();
}

}  // namespace
}  // namespace gpusizer::profile_by_kind_test
