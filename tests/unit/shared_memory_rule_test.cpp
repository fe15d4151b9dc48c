// The /dev/shm rule on its own: what it finds, the fix mutate mode applies
// (as typed edits), the memory floor a large /dev/shm adds, its explain row.
#include "gpusizer/sizing/rules/shared_memory_rule.h"

#include <gtest/gtest.h>

#include "support/pod_facts_support.h"

namespace gpusizer::shared_memory_rule_test {
namespace {

using testing::add_shm;
using testing::evaluate;
using testing::gpu_container;
using testing::pod_of;
using testing::q;

PodFacts training_pod() { return pod_of({gpu_container("trainer", 4, "32", "192Gi")}); }

TEST(SharedMemoryRule, WithoutShmTheVolumeIsAddedAndMounted) {
  const PodFacts pod = training_pod();  // the mount names its container: the pod outlives the result
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train");
  EXPECT_TRUE(result.floors.empty()) << "32Gi is what the table already holds";
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].reason, DenialReason::kShm);
  EXPECT_TRUE(result.findings[0].deny);
  EXPECT_EQ(result.findings[0].message,
            "pod default/train-x: /dev/shm is not set in container \"trainer\" (runtime default 64Mi); the train "
            "profile needs /dev/shm >= 16Gi (torchrun and DataLoader workers abort below it); add to spec.volumes "
            "{name: gpu-sizer-shm, emptyDir: {medium: Memory, sizeLimit: 32Gi}} and mount it at /dev/shm in "
            "container \"trainer\"");
  EXPECT_EQ(result.findings[0].brief, "/dev/shm unset in container \"trainer\", train profile needs >= 16Gi");
  ASSERT_TRUE(result.fix);
  ASSERT_EQ(result.fix->edits.size(), 2u);
  const auto* volume = std::get_if<AddMemoryVolume>(&result.fix->edits[0]);
  ASSERT_NE(volume, nullptr);
  EXPECT_EQ(volume->list_path, (std::vector<std::string>{"spec", "volumes"}));
  EXPECT_EQ(volume->name, "gpu-sizer-shm");
  EXPECT_EQ(volume->size_limit, q("32Gi"));
  const auto* mount = std::get_if<MountVolume>(&result.fix->edits[1]);
  ASSERT_NE(mount, nullptr);
  EXPECT_EQ(mount->container, &pod.app.at(0));
  EXPECT_EQ(mount->container->path, (std::vector<std::string>{"spec", "containers", "0"}));
  EXPECT_EQ(mount->mount_path, "/dev/shm");
  EXPECT_EQ(result.fix->changes, std::vector<std::string>{"/dev/shm: added 32Gi (trainer)"});
  EXPECT_EQ(result.fix->warnings,
            std::vector<std::string>{
                "/dev/shm: added 32Gi memory-backed emptyDir \"gpu-sizer-shm\" to \"trainer\" (train profile)"});
  ASSERT_EQ(result.fix->raised.size(), 1u);
  EXPECT_EQ(result.fix->raised[0].resource, "shm");
  EXPECT_EQ(result.fix->raised[0].added, q("32Gi"));
}

TEST(SharedMemoryRule, AShmLargerThanTheTableHoldsRaisesTheMemoryFloor) {
  PodFacts pod = training_pod();
  add_shm(pod, "dshm", "64Gi");
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train");
  EXPECT_TRUE(result.findings.empty());
  EXPECT_FALSE(result.fix);
  ASSERT_EQ(result.floors.size(), 1u);
  EXPECT_EQ(result.floors[0].resource, kMemory);
  EXPECT_EQ(result.floors[0].amount, q("224Gi"));
  EXPECT_EQ(result.floors[0].basis, "train 192Gi + 32Gi /dev/shm");
}

TEST(SharedMemoryRule, ASizeLimitBelowTheMinimumIsEnlarged) {
  PodFacts pod = training_pod();
  add_shm(pod, "dshm", "8Gi");
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].brief, "/dev/shm sizeLimit below 16Gi (train profile)");
  EXPECT_NE(result.findings[0].message.find("set spec.volumes[0].emptyDir.sizeLimit to 32Gi"), std::string::npos)
      << result.findings[0].message;
  ASSERT_TRUE(result.fix);
  ASSERT_EQ(result.fix->edits.size(), 1u);
  const auto* set = std::get_if<SetString>(&result.fix->edits[0]);
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->path, (std::vector<std::string>{"spec", "volumes", "0", "emptyDir", "sizeLimit"}));
  EXPECT_EQ(set->value, "32Gi");
  EXPECT_EQ(result.fix->raised[0].added, q("24Gi"));
}

TEST(SharedMemoryRule, AtTheMinimumNothingIsChanged) {
  PodFacts pod = training_pod();
  add_shm(pod, "dshm", "16Gi");
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train");
  EXPECT_TRUE(result.findings.empty());
  EXPECT_FALSE(result.fix);
  EXPECT_TRUE(result.floors.empty());
}

TEST(SharedMemoryRule, AVolumeTakingTheAddedNameIsAProblem) {
  PodFacts pod = training_pod();
  VolumeFacts disk;
  disk.name = "gpu-sizer-shm";
  pod.volumes.push_back(disk);
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].reason, DenialReason::kInvalid);
  EXPECT_EQ(
      result.findings[0].message,
      "pod default/train-x: spec.volumes[0] is volume \"gpu-sizer-shm\", the name gpu-sizer gives the /dev/shm it "
      "adds, and is not /dev/shm; rename it");
  EXPECT_FALSE(result.fix);
}

TEST(SharedMemoryRule, ADiskBackedShmIsNotChecked) {
  PodFacts pod = training_pod();
  add_shm(pod, "dshm", nullptr);
  pod.volumes[0].memory_backed = false;
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_FALSE(result.findings[0].deny);
  EXPECT_EQ(result.findings[0].reason, DenialReason::kShm);
  EXPECT_EQ(result.findings[0].brief,
            "pod default/train-x: /dev/shm (volume \"dshm\") is not a memory-backed emptyDir; its size is not checked");
}

TEST(SharedMemoryRule, AnUnreadableSizeLimitIsAProblem) {
  PodFacts pod = training_pod();
  add_shm(pod, "dshm", nullptr);
  pod.volumes[0].size_limit_error = "quantity \"lots\": not a number";
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].reason, DenialReason::kInvalid);
  EXPECT_EQ(result.findings[0].message,
            "pod default/train-x: spec.volumes[0].emptyDir.sizeLimit quantity \"lots\": not a number");
}

TEST(SharedMemoryRule, ProfilesNotListedAreNotChecked) {
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), training_pod(), "render", true);
  EXPECT_TRUE(result.findings.empty());
  EXPECT_FALSE(result.fix);
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->detail, "not checked: the render profile is not in sharedMemory.profiles");
}

TEST(SharedMemoryRule, AServerOfOneGpuIsNotChecked) {
  const PodFacts one_gpu = pod_of({gpu_container("server", 1, "4", "64Gi")});
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), one_gpu, "infer", true);
  EXPECT_TRUE(result.findings.empty());
  EXPECT_FALSE(result.fix);
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->detail,
            "not checked: the infer profile needs /dev/shm from 2 GPUs (sharedMemory.serving.fromGpus)");
}

TEST(SharedMemoryRule, ATensorParallelServerGetsTheServingSize) {
  // 4 GPUs of the infer profile: NCCL between them goes through /dev/shm.
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), training_pod(), "infer", true);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].message,
            "pod default/train-x: /dev/shm is not set in container \"trainer\" (runtime default 64Mi); the infer "
            "profile needs /dev/shm >= 1Gi (NCCL moves tensor-parallel traffic through it); add to spec.volumes "
            "{name: gpu-sizer-shm, emptyDir: {medium: Memory, sizeLimit: 8Gi}} and mount it at /dev/shm in "
            "container \"trainer\"");
  ASSERT_TRUE(result.fix);
  ASSERT_EQ(result.fix->edits.size(), 2u);
  EXPECT_EQ(std::get<AddMemoryVolume>(result.fix->edits[0]).size_limit.to_string(), "8Gi");
  EXPECT_TRUE(result.floors.empty()) << "8Gi is below the 32Gi the table includes";
}

TEST(SharedMemoryRule, AnOptedOutPodIsToldHowToLetGpuSizerSetIt) {
  PodFacts pod = training_pod();
  pod.opted_out = true;
  const RuleResult result = evaluate(SharedMemoryRule(), default_policy(), pod, "train", true);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_TRUE(
      result.findings[0].message.ends_with(", or remove annotation gpu-sizer.io/mutate=false so gpu-sizer sets it"))
      << result.findings[0].message;
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->detail, "none found: denied (opted out of mutation); minimum 16Gi, the table includes 32Gi");
}

}  // namespace
}  // namespace gpusizer::shared_memory_rule_test
