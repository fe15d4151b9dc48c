// decide_pod and the /dev/shm rule: a training pod gets a memory-backed
// /dev/shm, and a sizeLimit above what the table includes raises memory.

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/check/explain.h"
#include "gpusizer/json/json_patch.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "support/pod_decision_support.h"

// ---------------------------------------------------------------------------
// /dev/shm: training pods need a memory-backed emptyDir of >= 16Gi (mutate
// adds 32Gi); a sizeLimit above the 32Gi the table includes raises memory.

namespace gpusizer::pod_decision_shm_test {
namespace {

using namespace pod_decision_test;  // NOLINT(google-build-using-namespace)

json shm_volume(const std::string& name, json size_limit) {
  json empty_dir = {{"medium", "Memory"}};
  if (!size_limit.is_null()) empty_dir["sizeLimit"] = std::move(size_limit);
  return {{"name", name}, {"emptyDir", empty_dir}};
}

json shm_mount(const std::string& volume) { return {{"name", volume}, {"mountPath", "/dev/shm"}}; }

// A sized 4-GPU training pod with a sidecar; with a dshm volume of
// size_limit mounted in the trainer unless size_limit is absent.
json training_pod(const json& size_limit = json(json::value_t::discarded), int64_t gpus = 4) {
  const Requirement need = *required_resources(*default_policy().find_profile("train"), gpus);
  json pod = pod_of(json::array(
      {gpu_container("trainer", std::to_string(gpus), need.cpu.to_string(), need.memory.to_string()), sidecar()}));
  pod["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] = "300Gi";
  if (size_limit.is_discarded()) {
    pod["spec"].erase("volumes");
    pod["spec"]["containers"][0].erase("volumeMounts");
  } else {
    pod["spec"]["volumes"] = json::array({shm_volume("dshm", size_limit)});
  }
  return pod;
}

TEST(ShmRule, TrainingPodWithoutShmGets32GiMemoryBackedEmptyDir) {
  const Outcome r = run(training_pod());
  EXPECT_EQ(r.patched["spec"]["volumes"], json::array({shm_volume("gpu-sizer-shm", "32Gi")})) << r.ops.dump();
  EXPECT_EQ(r.patched["spec"]["containers"][0]["volumeMounts"], json::array({shm_mount("gpu-sizer-shm")}));
  EXPECT_FALSE(r.patched["spec"]["containers"][1].contains("volumeMounts")) << "the sidecar holds no GPU";
  EXPECT_EQ(r.patched["spec"]["containers"][0]["resources"]["limits"]["memory"], "192Gi");
  EXPECT_TRUE(
      has_line(r.decision.warnings,
               {"/dev/shm: added 32Gi memory-backed emptyDir \"gpu-sizer-shm\" to \"trainer\" (train profile)"}))
      << all(r.decision.warnings);
  EXPECT_TRUE(contains(r.patched["metadata"]["annotations"]["gpu-sizer.io/sized"], "/dev/shm: added 32Gi (trainer)"));
  ASSERT_EQ(r.decision.raised.size(), 1u);
  EXPECT_EQ(r.decision.raised[0].resource, "shm");
}

TEST(ShmRule, ExistingArraysGetTheVolumeAndMountAppended) {
  json pod = training_pod();
  pod["spec"]["volumes"] = json::array({{{"name", "data"}, {"emptyDir", json::object()}}});
  pod["spec"]["containers"][0]["volumeMounts"] = json::array({{{"name", "data"}, {"mountPath", "/data"}}});
  const Outcome r = run(pod);
  EXPECT_TRUE(
      has_line({r.ops.dump()}, {R"("path":"/spec/volumes/-")", R"("path":"/spec/containers/0/volumeMounts/-")"}))
      << r.ops.dump();
  EXPECT_EQ(r.patched["spec"]["volumes"][1], shm_volume("gpu-sizer-shm", "32Gi"));
  EXPECT_EQ(r.patched["spec"]["containers"][0]["volumeMounts"][1], shm_mount("gpu-sizer-shm"));
}

TEST(ShmRule, SizeLimitAtTheMinimumIsKept) {
  const Outcome r = run(training_pod("16Gi"));
  EXPECT_TRUE(r.ops.empty()) << r.ops.dump();
  EXPECT_TRUE(validate(training_pod("16Gi"), Mode::kEnforce).decision.denials.empty());
}

TEST(ShmRule, SizeLimitJustUnderTheMinimumIsEnlargedTo32Gi) {
  const Outcome r = run(training_pod("16383Mi"));
  EXPECT_EQ(r.patched["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "32Gi") << r.ops.dump();
  EXPECT_TRUE(
      has_line(r.decision.warnings, {"emptyDir \"dshm\" sizeLimit 16383Mi->32Gi (16383Mi is below the 16Gi minimum)"}))
      << all(r.decision.warnings);
  const Outcome denied = validate(training_pod("16383Mi"), Mode::kEnforce);
  ASSERT_EQ(denied.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_TRUE(contains(denied.decision.denials[0], "set spec.volumes[0].emptyDir.sizeLimit to 32Gi"))
      << denied.decision.denials[0];
}

TEST(ShmRule, SizeLimitJustOverTheMinimumIsKept) { EXPECT_TRUE(run(training_pod("16385Mi")).ops.empty()); }

TEST(ShmRule, NoSizeLimitIsBoundedByThePodMemoryAndKept) { EXPECT_TRUE(run(training_pod(nullptr)).ops.empty()); }

TEST(ShmRule, InferencePodOfOneGpuGetsNoShm) {
  json pod = training_pod(json(json::value_t::discarded), 1);
  pod["metadata"]["labels"] = {{"gpu-sizer.io/profile", "infer"}};
  pod["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] = "200Gi";
  const Outcome r = run(pod);
  EXPECT_FALSE(r.patched["spec"].contains("volumes")) << r.ops.dump();
  EXPECT_TRUE(validate(pod, Mode::kEnforce).decision.denials.empty());
}

TEST(ShmRule, ExistingVolumeIsMountedWhereAGpuContainerLacksIt) {
  json pod = training_pod("32Gi", 2);
  pod["spec"]["containers"] = json::array({gpu_container("a", "1", "8", "48Gi"), gpu_container("b", "1", "8", "48Gi")});
  pod["spec"]["containers"][0]["volumeMounts"] = json::array({shm_mount("dshm")});
  const Outcome r = run(pod);
  EXPECT_EQ(r.patched["spec"]["volumes"].size(), 1u) << r.ops.dump();
  EXPECT_EQ(r.patched["spec"]["containers"][1]["volumeMounts"], json::array({shm_mount("dshm")}));
  EXPECT_TRUE(has_line(r.decision.warnings, {"/dev/shm: mounted emptyDir \"dshm\" in \"b\""}))
      << all(r.decision.warnings);
  const Outcome denied = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(
      has_line(denied.decision.denials, {"/dev/shm is not mounted in container \"b\"", "mount volume \"dshm\""}))
      << all(denied.decision.denials);
}

TEST(ShmRule, DiskBackedShmIsWarnedAndLeft) {
  json pod = training_pod("32Gi");
  pod["spec"]["volumes"][0]["emptyDir"].erase("medium");
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"/dev/shm (volume \"dshm\") is not a memory-backed emptyDir"}))
      << all(r.decision.warnings);
}

TEST(ShmRule, TakenVolumeNameIsAProblem) {
  json pod = training_pod();
  pod["spec"]["volumes"] = json::array({{{"name", "gpu-sizer-shm"}, {"hostPath", {{"path", "/x"}}}}});
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kInvalid});
  EXPECT_TRUE(contains(r.decision.denials[0], "spec.volumes[0] is volume \"gpu-sizer-shm\"")) << r.decision.denials[0];
}

struct ShmFloor {
  const char* size_limit;
  const char* memory;  // what 2 GPUs then need
};

class ShmFloorTest : public ::testing::TestWithParam<ShmFloor> {};

TEST_P(ShmFloorTest, SizeLimitOverTheTablesShareRaisesMemory) {
  const Outcome r = run(training_pod(GetParam().size_limit, 2));
  EXPECT_EQ(r.patched["spec"]["containers"][0]["resources"]["limits"]["memory"], GetParam().memory) << r.ops.dump();
}

INSTANTIATE_TEST_SUITE_P(TableIncludes32Gi, ShmFloorTest,
                         ::testing::Values(ShmFloor{"31Gi", "96Gi"}, ShmFloor{"32Gi", "96Gi"}, ShmFloor{"33Gi", "97Gi"},
                                           ShmFloor{"64Gi", "128Gi"}));

TEST(ShmRule, MemoryRaisedForShmSaysWhy) {
  const Outcome r = run(training_pod("64Gi"));
  EXPECT_TRUE(has_line(r.decision.warnings, {"memory request 192Gi->224Gi", "train 192Gi + 32Gi /dev/shm"}))
      << all(r.decision.warnings);
  const Outcome denied = validate(training_pod("64Gi"), Mode::kEnforce);
  EXPECT_TRUE(has_line(denied.decision.denials, {"need memory >= 224Gi", "set memory to 224Gi"}))
      << all(denied.decision.denials);
}

TEST(ShmRule, EnforceDeniesAMissingShmAtOneGpu) {
  const Outcome r = validate(training_pod(json(json::value_t::discarded), 1), Mode::kEnforce);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_TRUE(contains(r.decision.denials[0], "/dev/shm is not set in container \"trainer\"")) << r.decision.denials[0];
  EXPECT_TRUE(contains(r.decision.denials[0], "{name: gpu-sizer-shm, emptyDir: {medium: Memory, sizeLimit: 32Gi}}"))
      << r.decision.denials[0];
  EXPECT_TRUE(run(training_pod(json(json::value_t::discarded), 1), Endpoint::kMutate, Mode::kEnforce).ops.empty());
}

TEST(ShmRule, AuditSaysItWouldDeny) {
  const Outcome r = validate(training_pod(), Mode::kAudit);
  EXPECT_TRUE(r.decision.denials.empty());
  EXPECT_TRUE(has_line(r.decision.warnings, {"audit: would deny: /dev/shm unset in container \"trainer\""}))
      << all(r.decision.warnings);
}

TEST(ShmRule, OptedOutPodIsDeniedNamingTheAnnotation) {
  json pod = training_pod();
  pod["metadata"]["annotations"] = {{"gpu-sizer.io/mutate", "false"}};
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_TRUE(contains(r.decision.denials[0], "remove annotation gpu-sizer.io/mutate=false")) << r.decision.denials[0];
}

TEST(ShmRule, PatchedPodIsStableOnASecondPass) {
  for (const json& pod : {training_pod(), training_pod("8Gi"), training_pod("64Gi")}) {
    const Outcome first = run(pod);
    const Outcome second = run(first.patched);
    EXPECT_TRUE(second.ops.empty()) << second.ops.dump();
    EXPECT_TRUE(validate(first.patched, Mode::kEnforce).decision.denials.empty());
  }
}

TEST(ShmRule, EachGpuContainersOwnShmIsCheckedAndCountsAgainstMemory) {
  json pod = training_pod("32Gi", 2);
  pod["spec"]["containers"] = json::array({gpu_container("a", "1", "8", "48Gi"), gpu_container("b", "1", "8", "48Gi")});
  pod["spec"]["containers"][0]["volumeMounts"] = json::array({shm_mount("dshm")});
  pod["spec"]["containers"][1]["volumeMounts"] = json::array({shm_mount("small")});
  pod["spec"]["volumes"].push_back(shm_volume("small", "1Gi"));
  const Outcome r = run(pod);
  EXPECT_EQ(r.patched["spec"]["volumes"][1]["emptyDir"]["sizeLimit"], "32Gi") << r.ops.dump();
  // Two 32Gi memory-backed volumes: 32Gi above the 32Gi the table holds.
  EXPECT_EQ(r.patched["spec"]["containers"][0]["resources"]["limits"]["memory"], "64Gi") << r.ops.dump();
  const Outcome denied = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(has_line(denied.decision.denials, {"volume \"small\"", "set spec.volumes[1].emptyDir.sizeLimit to 32Gi"}))
      << all(denied.decision.denials);
  EXPECT_TRUE(run(r.patched).ops.empty());
}

TEST(ShmRule, NonListVolumeMountsAreAProblemNotOverwritten) {
  json pod = training_pod();
  pod["spec"]["containers"][0]["volumeMounts"] = json::object();
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  EXPECT_TRUE(has_line(r.decision.denials, {"spec.containers[0].volumeMounts is not a list"}))
      << all(r.decision.denials);
}

TEST(ShmRule, OptedOutPodInEnforceModeIsNotToldGpuSizerSetsIt) {
  json pod = training_pod();
  pod["metadata"]["annotations"] = {{"gpu-sizer.io/mutate", "false"}};
  const Outcome r = validate(pod, Mode::kEnforce);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kShm});
  EXPECT_FALSE(contains(r.decision.denials[0], "so gpu-sizer sets")) << r.decision.denials[0];
}

TEST(ShmRule, ArgoTemplatesUseWorkflowVolumesOrGetTheirOwn) {
  const json workflow = json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf", "namespace": "ml"},
    "spec": {"entrypoint": "a", "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
      "templates": [
        {"name": "a", "container": {"image": "x", "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
          "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "16", "memory": "64Gi", "ephemeral-storage": "300Gi"}}}},
        {"name": "b", "container": {"image": "x",
          "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "16", "memory": "64Gi", "ephemeral-storage": "300Gi"}}}}]}})");
  JsonReader reader;
  const JsonView view = reader.view_of(workflow);
  PatchBuilder patch(view);
  for (const PodTemplateRef& ref : find_pod_templates("argoproj.io", "Workflow", view)) {
    decide_pod(default_policy(), Endpoint::kMutate, PodTarget{ref, {"workflow ml/wf", Mode::kMutate}, view["metadata"]},
               patch);
  }
  const json patched = apply_ops(workflow, patch.operations());
  EXPECT_EQ(patched["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "32Gi") << patch.text();
  EXPECT_EQ(patched["spec"]["templates"][1]["volumes"], json::array({shm_volume("gpu-sizer-shm", "32Gi")}));
  EXPECT_EQ(patched["spec"]["templates"][1]["container"]["volumeMounts"], json::array({shm_mount("gpu-sizer-shm")}));
}

}  // namespace
}  // namespace gpusizer::pod_decision_shm_test
