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

TEST(ProfileByCommand, AnInferenceServerServesWhereNoKindSays) {
  // A bare Pod, or an unknown serving CRD found by its shape (OME's
  // ClusterServingRuntime, AIBrix's StormService), starting a server.
  for (const char* command :
       {"vllm serve Qwen/Qwen2.5-7B --tensor-parallel-size 2",
        "/bin/bash -lc -- ulimit -n 65536; ray start --head; vllm serve deepseek-ai/DeepSeek-R1",
        "python3 -m vllm.entrypoints.openai.api_server --model m", "python3 -m sglang.launch_server --tp 8",
        "tritonserver --model-repository=/models", "text-generation-launcher --model-id m", "trtllm-serve m"}) {
    for (const char* kind : {"Pod", "ClusterServingRuntime"}) {
      SelectionInput input = of_kind(kind);
      input.commands = {"sleep 1", command};
      EXPECT_EQ(profile_of(input), "infer") << kind << ": " << command;
    }
  }
  SelectionInput serving = of_kind("StormService");
  serving.commands = {"vllm serve m"};
  auto choice = select_profile(default_policy(), serving);
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice.value().reason, "policy rule: command contains \"vllm serve\"");
  // A training command, or a kind whose rule says train, stays train: the
  // kind rules come first (a Job benchmarking vLLM is a batch job).
  SelectionInput training = of_kind("Pod");
  training.commands = {"torchrun --nproc-per-node 8 train.py"};
  EXPECT_EQ(profile_of(training), "train");
  SelectionInput job = of_kind("Job");
  job.commands = {"vllm serve m"};
  EXPECT_EQ(profile_of(job), "train");
}

TEST(ProfileByCommand, APolicyWithoutCommandRulesReadsNoCommand) {
  EXPECT_TRUE(selection_reads(default_policy(), ProfileRule::Subject::kCommand, {}));
  auto none = parse_policy("profileRules: []\n", "test.yaml");
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(selection_reads(none.value(), ProfileRule::Subject::kCommand, {}));
  auto glob = parse_policy("profileRules:\n  - {on: command, glob: \"*serve*\", profile: infer}\n", "test.yaml");
  ASSERT_TRUE(glob.ok()) << glob.error();
  SelectionInput input = of_kind("Pod");
  input.commands = {"my-server serve --port 8000"};
  EXPECT_EQ(select_profile(glob.value(), input).value().profile->name, "infer");
}

TEST(ProfileByKind, AnInRuleNeedsAList) {
  auto parsed = parse_policy("profileRules:\n  - {on: kind, in: [], profile: infer}\n", "test.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("profileRules[0].in"), std::string::npos) << parsed.error();
  auto unknown = parse_policy("profileRules:\n  - {on: kinds, equals: Job, profile: train}\n", "test.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("kind, ownerKind or command"), std::string::npos) << unknown.error();
}

}  // namespace
}  // namespace gpusizer::profile_by_kind_test
