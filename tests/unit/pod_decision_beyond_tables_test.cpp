// decide_pod beyond the table: the data-loader floor, GPU memory fit, node
// fit and explain, as the webhook applies them.

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
// Beyond the table through decide_pod: the data-loader floor, GPU memory
// fit and node fit, as the webhook applies them.

namespace gpusizer::pod_decision_beyond_tables_test {
namespace {

using namespace pod_decision_test;  // NOLINT(google-build-using-namespace)

json annotated_pod(int64_t gpus, json annotations, json node_selector = nullptr) {
  json pod = pod_of(json::array({gpu_container("trainer", std::to_string(gpus), "1", "1Gi")}), nullptr,
                    std::move(annotations));
  if (!node_selector.is_null()) pod["spec"]["nodeSelector"] = std::move(node_selector);
  return pod;
}

// The pod as the mutating endpoint leaves it, for the validating checks.
json sized(const json& pod) { return run(pod).patched; }

const char* const kSevenBFull = "params=7B,context=4k,precision=bf16,method=full,zero=0,mode=train";

json rtx4090() { return {{"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"}}; }

struct LoaderFloor {
  const char* batch;
  const char* memory;  // what 1 GPU then gets
};

class DataLoaderFloorTest : public ::testing::TestWithParam<LoaderFloor> {};

// 1 GPU, 4 workers x 2 prefetch x batch x 1 MiB uint8 x 1.56 + 2Gi + 3Gi
// against the 64Gi table: 4800 lands on 64Gi, 4700 under, 4900 over.
TEST_P(DataLoaderFloorTest, TheLargerOfTableAndLoaderBinds) {
  const std::string annotation =
      std::string("workers=4,prefetch=2,batch=") + GetParam().batch + ",sample=1024x1024,dtype=uint8";
  const Outcome r = run(annotated_pod(1, {{"gpu-sizer.io/dataloader", annotation}}));
  EXPECT_EQ(resources_of(r.patched)["limits"]["memory"], GetParam().memory) << r.ops.dump();
}

INSTANTIATE_TEST_SUITE_P(OneGpu, DataLoaderFloorTest,
                         ::testing::Values(LoaderFloor{"4700", "64Gi"}, LoaderFloor{"4800", "64Gi"},
                                           LoaderFloor{"4900", "65Gi"}));

TEST(DataLoaderRule, SeedOomRowOnFourGpusNeeds241GiAndSaysWhy) {
  const json pod = annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=32,prefetch=8,batch=256,sample=3x224x224"}});
  const Outcome r = run(pod);
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "241Gi") << r.ops.dump();
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], "32") << "CPU stays the table's";
  EXPECT_TRUE(has_line(r.decision.warnings, {"memory request 1Gi->241Gi", "(4 GPUs, data loader)"}))
      << all(r.decision.warnings);
  EXPECT_TRUE(has_line(r.decision.warnings,
                       {"data loader memory floor 241Gi = 4x(32x8x147Mi x1.56+2Gi)+3Gi (gpu-sizer.io/dataloader)"}))
      << all(r.decision.warnings);
  for (const auto& warning : r.decision.warnings) EXPECT_LT(warning.size(), 120u) << warning;
  const Outcome denied = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(has_line(denied.decision.denials,
                       {"need memory >= 241Gi (data loader: 4 x (32 workers x 8 prefetch x 147Mi batch x 1.56 + 2Gi) + "
                        "3Gi; train table 192Gi)",
                        "set memory to 241Gi and cpu to 32"}))
      << all(denied.decision.denials);
}

TEST(DataLoaderRule, AFloorNoNodeHasIsDeniedNotPatched) {
  const json pod =
      annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=32,prefetch=8,batch=256,sample=3x224x224000"}});
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_FALSE(r.decision.denials.empty());
  EXPECT_TRUE(contains(r.decision.denials[0], "more than any node has; check its values")) << r.decision.denials[0];
}

TEST(DataLoaderRule, ProfileWithoutATableGetsTheLoaderFloorOnly) {
  json pod = annotated_pod(1, {{"gpu-sizer.io/dataloader", "workers=12,prefetch=3,batch=256,sample=3x224x224"}});
  pod["metadata"]["labels"] = {{"gpu-sizer.io/profile", "render"}};
  const Outcome r = run(pod);
  EXPECT_EQ(resources_of(r.patched)["requests"]["memory"], "14Gi") << r.ops.dump();
  EXPECT_EQ(resources_of(r.patched)["requests"]["cpu"], "1") << "a profile without a table sizes no CPU";
}

TEST(DataLoaderRule, MalformedAnnotationStopsThePatchAndIsDenied) {
  const json pod = annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=twelve,batch=256,sample=3x224x224"}});
  EXPECT_TRUE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_FALSE(r.decision.denial_reasons.empty());
  EXPECT_EQ(r.decision.denial_reasons[0], DenialReason::kInvalid);
  EXPECT_TRUE(contains(r.decision.denials[0], "annotation gpu-sizer.io/dataloader part \"workers=twelve\""))
      << r.decision.denials[0];
}

TEST(VramFit, SevenBFullFineTuneOnTwo24GBGpusIsDeniedWithTheOptionsThatFit) {
  const json pod = annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}}, rtx4090());
  const Outcome mutated = run(pod);
  EXPECT_FALSE(contains(mutated.ops.dump(), "model")) << "no patch fixes a model that does not fit";
  const Outcome r = validate(mutated.patched);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  for (const char* part : {"pod default/train-x: model params=7B method=full zero=0 needs 127.0 GB per GPU",
                           "112.0 certain", "and its certain part alone is more than the 25.8 GB of RTX-4090",
                           "Would fit:", "method=qlora: 12.8 GB/GPU", "method=lora,zero=3: 15.6 GB/GPU"}) {
    EXPECT_TRUE(contains(r.decision.denials[0], part)) << part << "\n" << r.decision.denials[0];
  }
}

TEST(VramFit, WithinTheSafetyMarginIsAllowedWithAWarning) {
  const Outcome r = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,method=lora"}}, rtx4090())));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"model 7B lora: 23.2 GB/GPU", "21.8 GB usable"}))
      << all(r.decision.warnings);
}

TEST(VramFit, WarnActionNeverDenies) {
  const Policy policy = policy_from("gpuMemory:\n  action: warn\n");
  const Outcome r =
      validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}}, rtx4090())), Mode::kMutate, policy);
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"112.0 GB/GPU certain"})) << all(r.decision.warnings);
}

TEST(VramFit, AuditSaysItWouldDeny) {
  const Outcome r = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}}, rtx4090())), Mode::kAudit);
  EXPECT_TRUE(r.decision.denials.empty());
  EXPECT_TRUE(has_line(r.decision.warnings, {"audit: would deny:", "112.0 GB/GPU certain"}))
      << all(r.decision.warnings);
}

TEST(GpuModel, NodeSelectorWinsOverTheAnnotationWhichServesWithoutOne) {
  // The scheduler enforces the nodeSelector: the annotation cannot talk a
  // 24 GB pod into an 80 GB verdict.
  // 28 GB certain per GPU (112 GB over 4 ranks): more than an RTX 4090's
  // 25.8 GB, within an H100's 85.5.
  const json annotations = {{"gpu-sizer.io/model", "params=7B,zero=3,ranks=4"}, {"gpu-sizer.io/gpu", "H100-80GB"}};
  const Outcome pinned = validate(sized(annotated_pod(2, annotations, rtx4090())));
  ASSERT_EQ(pinned.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  EXPECT_TRUE(contains(pinned.decision.denials[0], "25.8 GB of RTX-4090 (nodeSelector")) << pinned.decision.denials[0];
  const Outcome annotated = validate(sized(annotated_pod(2, annotations)));
  EXPECT_TRUE(annotated.decision.denials.empty()) << all(annotated.decision.denials);
  EXPECT_TRUE(annotated.decision.warnings.empty()) << all(annotated.decision.warnings);
}

TEST(GpuModel, AnUnknownAllowedModelTurnsTheDenialIntoAWarning) {
  json pod = annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}});
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      json::parse(R"([{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                       "values": ["NVIDIA-A10G", "NVIDIA-H200", "NVIDIA-A10G"]}]}])");
  const Outcome r = validate(sized(pod));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"112.0 GB/GPU certain"})) << all(r.decision.warnings);
}

TEST(VramFit, ZeroDenialTellsAJobSpanningPodsToSetRanks) {
  const Outcome r = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,zero=3"}}, rtx4090())));
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  EXPECT_TRUE(
      contains(r.decision.denials[0], "If the job spans several pods, set ranks=<total GPUs> in gpu-sizer.io/model"))
      << r.decision.denials[0];
}

TEST(GpuModel, FromRequiredAffinityDeniesOnlyWhenNoCandidateFits) {
  json pod = annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,zero=3"}});  // 56 GB certain per GPU
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      json::parse(R"([{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                       "values": ["NVIDIA-GeForce-RTX-4090", "NVIDIA-A100-SXM4-80GB"]}]}])");
  const Outcome some_fit = validate(sized(pod));
  EXPECT_TRUE(some_fit.decision.denials.empty()) << all(some_fit.decision.denials);
  EXPECT_TRUE(has_line(some_fit.decision.warnings, {"56.0 GB/GPU certain"})) << all(some_fit.decision.warnings);
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
     ["matchExpressions"][0]["values"] = {"NVIDIA-GeForce-RTX-4090"};
  EXPECT_EQ(validate(sized(pod)).decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
}

TEST(GpuModel, UnknownOrMissingModelWarnsOnce) {
  const Outcome none = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}})));
  EXPECT_TRUE(none.decision.denials.empty());
  EXPECT_TRUE(
      has_line(none.decision.warnings, {"model not checked: GPU model unknown", "nodeSelector nvidia.com/gpu.product"}))
      << all(none.decision.warnings);
  const Outcome unknown =
      validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}}, {{"nvidia.com/gpu.product", "Acme-X1"}})));
  EXPECT_TRUE(unknown.decision.denials.empty());
  EXPECT_TRUE(has_line(unknown.decision.warnings, {"model not checked: GPU \"Acme-X1\" is not in gpuMemory.gpus"}))
      << all(unknown.decision.warnings);
}

TEST(GpuModel, AMigSliceIsCheckedWithItsOwnMemory) {
  // A single-strategy MIG node's GPU is the slice: 5 GB cannot hold the
  // 7B full fine-tune's certain 112 GB per GPU.
  const Outcome mig = validate(sized(annotated_pod(2, {{"gpu-sizer.io/model", kSevenBFull}},
                                                   {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}})));
  EXPECT_EQ(mig.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram}) << all(mig.decision.denials);
  EXPECT_TRUE(has_line(mig.decision.denials, {"the 5 GB of NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}))
      << all(mig.decision.denials);
}

TEST(ModelAnnotation, MalformedIsDeniedNamingThePartButDoesNotStopThePatch) {
  const json pod = annotated_pod(2, {{"gpu-sizer.io/model", "params=7B,zero=4"}}, rtx4090());
  EXPECT_FALSE(run(pod).ops.empty());
  const Outcome r = validate(pod);
  ASSERT_FALSE(r.decision.denial_reasons.empty());
  EXPECT_TRUE(has_line(r.decision.denials, {"annotation gpu-sizer.io/model part \"zero=4\": must be 0, 1, 2 or 3"}))
      << all(r.decision.denials);
}

// One pool of 8-GPU nodes holding exactly what the 8-GPU train row asks.
Policy node_pool_policy(const std::string& action) {
  return policy_from("nodeFit:\n  action: " + action +
                     "\n  pools:\n    - name: a100\n      gpuProduct: NVIDIA-A100-SXM4-80GB\n"
                     "      nodes: [{name: dgx-a100, gpus: 8, cpu: \"64\", memory: 384Gi, ephemeralStorage: 300Gi}]\n");
}

TEST(NodeFit, SizedPodEqualToTheLargestNodeFits) {
  const Outcome r = validate(run(annotated_pod(8, nullptr)).patched, Mode::kMutate, node_pool_policy("deny"));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(r.decision.warnings.empty()) << all(r.decision.warnings);
}

TEST(NodeFit, SidecarsCountWithTheAppContainers) {
  json pod = run(annotated_pod(8, nullptr)).patched;
  pod["spec"]["containers"].push_back(sidecar());
  const Outcome r = validate(pod, Mode::kMutate, node_pool_policy("deny"));
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kNodeFit});
  EXPECT_TRUE(contains(r.decision.denials[0], "dgx-a100")) << r.decision.denials[0];
}

TEST(NodeFit, MoreGpusThanAnyNodeWarnsByDefaultAction) {
  const Outcome r = validate(run(annotated_pod(16, nullptr)).patched, Mode::kMutate, node_pool_policy("warn"));
  EXPECT_TRUE(r.decision.denials.empty()) << all(r.decision.denials);
  EXPECT_TRUE(has_line(r.decision.warnings, {"node fit: 16 GPUs", "largest \"dgx-a100\" has 8 GPUs"}))
      << all(r.decision.warnings);
}

TEST(NodeFit, EnforceModeDemandsNoMoreThanTheNodeHolds) {
  // The table asks 384Gi of an 8-GPU pod; the pool's node has 256Gi. The
  // denial asks for what the node can give (less the reserve), and says why.
  const Policy policy = policy_from(
      "mode: enforce\nnodeFit:\n  action: warn\n  pools:\n    - name: small\n"
      "      nodes: [{name: n, gpus: 8, cpu: \"64\", memory: 256Gi, ephemeralStorage: 1Ti}]\n");
  const Outcome r = validate(annotated_pod(8, nullptr), Mode::kEnforce, policy);
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kMemory}) << all(r.decision.denials);
  EXPECT_TRUE(contains(r.decision.denials[0], "need memory >= 255Gi (train profile, node cap)"))
      << r.decision.denials[0];
  EXPECT_TRUE(has_line(r.decision.warnings, {"node cap: memory 384Gi (train profile) capped to 255Gi: n has 256Gi"}))
      << all(r.decision.warnings);
  EXPECT_FALSE(has_line(r.decision.warnings, {"node fit:"})) << all(r.decision.warnings);
}

TEST(AuditLines, NameTheTemplateOfAWorkload) {
  const json workflow = json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "wf", "namespace": "ml"},
    "spec": {"entrypoint": "a", "templates": [{"name": "finetune", "container": {"image": "x",
      "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "16", "memory": "64Gi", "ephemeral-storage": "300Gi"}}}}]}})");
  JsonReader reader;
  const JsonView view = reader.view_of(workflow);
  PatchBuilder patch(view);
  const auto refs = find_pod_templates("argoproj.io", "Workflow", view);
  ASSERT_EQ(refs.size(), 1u);
  const PodDecision d = decide_pod(
      default_policy(), Endpoint::kValidate,
      PodTarget{refs[0], {"Workflow ml/wf", Mode::kAudit, "template \"finetune\" "}, view["metadata"]}, patch);
  EXPECT_TRUE(has_line(d.warnings, {"audit: would deny: template \"finetune\" /dev/shm unset"})) << all(d.warnings);
}

TEST(NodeFit, PoolGpuProductIsTheLastSourceOfTheGpuModel) {
  json pod = annotated_pod(2, {{"gpu-sizer.io/model", "params=13B,method=full,zero=3"}});  // 104 GB certain
  pod["metadata"]["labels"] = {{"osmo.pool", "a100"}};
  const Outcome r = validate(sized(pod), Mode::kMutate, node_pool_policy("warn"));
  ASSERT_EQ(r.decision.denial_reasons, std::vector<DenialReason>{DenialReason::kVram});
  EXPECT_TRUE(contains(r.decision.denials[0], "A100-80GB (node pool \"a100\"")) << r.decision.denials[0];
}

TEST(Explain, RulesNameEveryFloorAndTheBindingOne) {
  json pod = annotated_pod(4, {{"gpu-sizer.io/dataloader", "workers=32,prefetch=8,batch=256,sample=3x224x224"}});
  pod["spec"].erase("volumes");
  pod["spec"]["containers"][0].erase("volumeMounts");
  JsonReader reader;
  const JsonView view = reader.view_of(pod);
  PatchBuilder patch(view);
  PodTarget target{{view}, {kDescription, Mode::kMutate}};
  target.explain = true;
  const PodDecision decision = decide_pod(default_policy(), Endpoint::kMutate, target, patch);
  std::vector<std::string> rows;
  for (const auto& row : explain_rows(decision.explanation, decision.explanation)) {
    rows.push_back(row.title + " | " + row.floor + " | " + row.detail);
  }
  EXPECT_TRUE(has_line(rows, {"table | cpu 32, memory 192Gi, ephemeral-storage 300Gi | train row for 4 GPUs"}))
      << all(rows);
  EXPECT_TRUE(has_line(rows, {"/dev/shm | /dev/shm 32Gi | none found: gpu-sizer sets 32Gi"})) << all(rows);
  EXPECT_TRUE(has_line(rows, {"data loader | memory 241Gi | 4 x (32 workers x 8 prefetch"})) << all(rows);
  EXPECT_TRUE(has_line(rows, {"binding | memory 241Gi | data loader: 4 x (32 workers"})) << all(rows);
  EXPECT_TRUE(
      has_line(rows, {"container \"trainer\" | cpu 32, memory 241Gi, ephemeral-storage 300Gi | requests it runs with"}))
      << all(rows);
  EXPECT_TRUE(has_line(rows, {"GPU memory | - | no annotation gpu-sizer.io/model"})) << all(rows);
  EXPECT_TRUE(has_line(rows, {"node fit | - | no node pools"})) << all(rows);
  target.explain = false;
  PatchBuilder quiet(view);
  EXPECT_TRUE(decide_pod(default_policy(), Endpoint::kMutate, target, quiet).explanation.rules.empty());
}

}  // namespace
}  // namespace gpusizer::pod_decision_beyond_tables_test
