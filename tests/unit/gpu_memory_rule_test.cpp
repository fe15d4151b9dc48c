// The GPU memory rule on its own: where it reads the GPU model (the pod,
// its candidate nodes' labels, its pool), when it denies and when it warns.
#include "gpusizer/sizing/rules/gpu_memory_rule.h"

#include <gtest/gtest.h>

#include "gpusizer/sizing/candidates.h"
#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/slice_gpus.h"
#include "gpusizer/util/strings.h"
#include "support/pod_facts_support.h"

namespace gpusizer::gpu_memory_rule_test {
namespace {

using testing::evaluate;
using testing::gpu_container;
using testing::pod_of;
using testing::profile;
using testing::q;

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
      "pod default/train-x: model params=7B method=full zero=0 needs 127.0 GB per GPU"))
      << result.findings[0].message;
  EXPECT_NE(result.findings[0].message.find("(nodeSelector nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4090;"),
            std::string::npos);
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->rule, RuleKind::kGpuMemory);
  EXPECT_EQ(result.row->floor, "127.0 GB per GPU");
}

TEST(GpuMemoryRule, TheWarnActionOnlyWarns) {
  Policy policy = default_policy();
  policy.rule_settings.edit<GpuMemoryPolicy>().action = CheckAction::kWarn;
  const RuleResult result =
      evaluate(GpuMemoryRule(), policy, model_pod("params=7B,method=full", "NVIDIA-GeForce-RTX-4090"), "train");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_FALSE(result.findings[0].deny);
  EXPECT_NE(result.findings[0].brief.find("112.0 GB/GPU certain"), std::string::npos) << result.findings[0].brief;
}

TEST(GpuMemoryRule, AnUnknownGpuIsNotCheckedAndNotDenied) {
  const RuleResult result = evaluate(GpuMemoryRule(), default_policy(), model_pod("params=7B"), "train", true);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_FALSE(result.findings[0].deny);
  EXPECT_EQ(
      result.findings[0].brief,
      "model not checked: GPU model unknown; set nodeSelector nvidia.com/gpu.product or annotation gpu-sizer.io/gpu");
}

TEST(GpuMemoryRule, ASingleStrategyMigNodesGpuHasItsSlicesMemory) {
  // 7B with QLoRA needs 12.8 GB per GPU: it fits a 3g.20gb slice (17 GB
  // usable); with LoRA its certain 15.2 GB cannot fit a 1g.5gb one.
  const RuleResult fits =
      evaluate(GpuMemoryRule(), default_policy(),
               model_pod("params=7B,method=qlora", "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"), "train", true);
  EXPECT_TRUE(fits.findings.empty()) << fits.findings.front().brief;
  ASSERT_TRUE(fits.row);
  EXPECT_NE(fits.row->detail.find("the 20 GB of NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"), std::string::npos)
      << fits.row->detail;
  const RuleResult too_small =
      evaluate(GpuMemoryRule(), default_policy(),
               model_pod("params=7B,method=lora", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"), "train");
  ASSERT_EQ(too_small.findings.size(), 1u);
  EXPECT_EQ(too_small.findings[0].reason, DenialReason::kVram);
  EXPECT_TRUE(too_small.findings[0].deny);
  EXPECT_NE(too_small.findings[0].message.find("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"), std::string::npos)
      << too_small.findings[0].message;
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

// A node of 8 GPUs with these labels, one class per node.
NodeInfo labelled_node(const std::string& name, std::vector<std::pair<std::string, std::string>> labels) {
  NodeInfo node;
  node.name = name;
  node.labels = std::move(labels);
  node.cpu = q("94");
  node.memory = q("1300Gi");
  node.extended = {{"nvidia.com/gpu", 8}};
  return node;
}

// Runs the rule with the pod's candidates among `nodes`, as the decider does.
RuleResult evaluate_on(const NodeInventory& nodes, const PodFacts& pod, const Policy& policy = default_policy()) {
  const PodPhases phases = pod_phases(pod);
  const Candidates candidates = candidate_nodes(nodes, policy, pod, phases.gpus);
  const RuleInput input{policy, pod, phases, profile(policy, "train"), "defaultProfile", true, &candidates};
  return GpuMemoryRule().evaluate(input);
}

// A DRA driver without GPU Feature Discovery labels nothing: the
// ResourceSlice's product and memory capacity (slice_gpus.h) stand in.
TEST(GpuMemoryRule, AClaimedGpuIsCheckedWithItsResourceSlicesProductAndMemory) {
  NodeInfo node = labelled_node("gpu-node-1", {});
  node.extended.clear();  // GPUs by DRA are in no allocatable
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(node);
  ClaimInventoryBuilder claims("test");
  DraObject slice;
  slice.kind = DraKind::kResourceSlice;
  slice.name = "gpu-node-1-gpu.nvidia.com";
  slice.slice = {"gpu-node-1", "gpu.nvidia.com", {{"gpu", "NVIDIA A100-SXM4-40GB", int64_t{80} << 30}}};
  claims.upsert(std::move(slice));
  const auto filled = with_slice_gpus(*builder.build(), *claims.build(), default_policy());
  ASSERT_NE(filled, nullptr);
  PodFacts pod = model_pod("params=3B,method=full,zero=0");
  pod.app[0].gpu_resource.clear();
  pod.app[0].claim_gpus = pod.app[0].gpus;
  const RuleResult fits = evaluate_on(*filled, pod);
  EXPECT_TRUE(fits.findings.empty()) << fits.findings[0].brief;
  ASSERT_TRUE(fits.row);
  EXPECT_NE(fits.row->detail.find("ResourceSlice gpu.nvidia.com productName=NVIDIA-A100-SXM4-40GB, ResourceSlice "
                                  "gpu.nvidia.com capacity memory of every node it may run on"),
            std::string::npos)
      << fits.row->detail;
}

TEST(GpuMemoryRule, TheGpuEveryCandidateHasIsCheckedWithItsLabelsMemory) {
  // An A100 of 40960 MiB in the table, labelled with 80GiB by GPU Feature
  // Discovery: the label wins. 3B trained in full holds 48 GB per GPU that
  // cannot shrink, 55 GB in all.
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  for (const char* zone : {"a", "b"}) {
    builder.upsert(labelled_node(std::string("gpu-") + zone, {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                                                              {"nvidia.com/gpu.memory", "81920"},
                                                              {"topology.kubernetes.io/zone", zone}}));
  }
  const auto nodes = builder.build();
  ASSERT_EQ(nodes->classes.size(), 2u);
  const RuleResult fits = evaluate_on(*nodes, model_pod("params=3B,method=full,zero=0"));
  EXPECT_TRUE(fits.findings.empty()) << fits.findings[0].brief;
  ASSERT_TRUE(fits.row);
  EXPECT_NE(fits.row->detail.find("node label nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB, nvidia.com/gpu.memory of "
                                  "every node it may run on"),
            std::string::npos)
      << fits.row->detail;

  // Without the memory label the table's 40960 MiB decides: too small.
  InventoryBuilder unlabelled(InventorySource::kFile, "nodes.yaml");
  unlabelled.upsert(labelled_node("gpu-a", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"}}));
  const RuleResult denied = evaluate_on(*unlabelled.build(), model_pod("params=3B,method=full,zero=0"));
  ASSERT_EQ(denied.findings.size(), 1u);
  EXPECT_TRUE(denied.findings[0].deny);
}

TEST(GpuMemoryRule, TheMemoryLabelWinsOverTheTableForAGpuItHolds) {
  // An L40 with ECC off exposes 49140 MiB, the table's 46068 MiB being the
  // ECC-on default. 25B in bf16 holds 50.0 GB of weights: more than 46068 MiB
  // (48.3 GB), less than 49140 MiB (51.5 GB).
  const PodFacts pod = model_pod("params=25B,mode=infer");
  InventoryBuilder labelled(InventorySource::kFile, "nodes.yaml");
  labelled.upsert(labelled_node("l40", {{"nvidia.com/gpu.product", "NVIDIA-L40"}, {"nvidia.com/gpu.memory", "49140"}}));
  const RuleResult fits = evaluate_on(*labelled.build(), pod);
  ASSERT_EQ(fits.findings.size(), 1u);
  EXPECT_FALSE(fits.findings[0].deny) << fits.findings[0].message;
  ASSERT_TRUE(fits.row);
  EXPECT_NE(fits.row->detail.find("nvidia.com/gpu.memory"), std::string::npos) << fits.row->detail;

  InventoryBuilder unlabelled(InventorySource::kFile, "nodes.yaml");
  unlabelled.upsert(labelled_node("l40", {{"nvidia.com/gpu.product", "NVIDIA-L40"}}));
  const RuleResult denied = evaluate_on(*unlabelled.build(), pod);
  ASSERT_EQ(denied.findings.size(), 1u);
  EXPECT_TRUE(denied.findings[0].deny) << denied.findings[0].brief;
}

TEST(GpuMemoryRule, ALabelledGpuMissingFromTheTableIsCheckedByItsLabel) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  const std::string product = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition";
  builder.upsert(labelled_node("rtx-pro", {{"nvidia.com/gpu.product", product}, {"nvidia.com/gpu.memory", "97887"}}));
  const RuleResult result = evaluate_on(*builder.build(), model_pod("params=7B,method=full,zero=0"));
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_TRUE(result.findings[0].deny);
  EXPECT_NE(result.findings[0].message.find(product), std::string::npos) << result.findings[0].message;
}

TEST(GpuMemoryRule, CandidatesWithDifferentGpusLeaveTheModelUnknown) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(labelled_node("a100", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}));
  builder.upsert(labelled_node("h100", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}));
  const auto nodes = builder.build();
  const RuleResult result = evaluate_on(*nodes, model_pod("params=7B,method=full,zero=0"));
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_FALSE(result.findings[0].deny);
  EXPECT_EQ(
      result.findings[0].brief,
      "model not checked: GPU model unknown; set nodeSelector nvidia.com/gpu.product or annotation gpu-sizer.io/gpu");
  // The pod's nodeSelector narrows them to one: checked against it.
  const RuleResult selected = evaluate_on(*nodes, model_pod("params=7B,method=full,zero=0", "NVIDIA-GeForce-RTX-4090"));
  ASSERT_EQ(selected.findings.size(), 1u);
  EXPECT_TRUE(selected.findings[0].deny);
}

// Only nodes with the pod's GPU resource say what its GPU is: untainted
// CPU-only nodes beside A100 nodes (GKE, where the GPU taint is tolerated
// implicitly) do not hide the A100.
TEST(GpuMemoryRule, NodesWithoutGpusDoNotHideTheCandidatesGpu) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(labelled_node("a100", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}));
  NodeInfo cpu_only = labelled_node("cpu", {});
  cpu_only.extended.clear();
  builder.upsert(cpu_only);
  const RuleResult result = evaluate_on(*builder.build(), model_pod("params=7B,method=full,zero=0"));
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_TRUE(result.findings[0].deny) << result.findings[0].brief;
}

TEST(GpuMemoryRule, ThePoolsGpuProductStillNamesTheGpu) {
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>().pools = {
      NodePool{"h100", {}, "NVIDIA-H100-80GB-HBM3", {NodeShape{"dgx-h100", 8, q("224"), q("2000Gi"), q("28Ti")}}}};
  const auto pools = pool_inventory(policy);
  PodFacts pod = model_pod("params=7B,method=full,zero=0");
  pod.selection.labels["osmo.pool"] = "h100";
  const RuleResult result = evaluate_on(*pools, pod, policy);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_TRUE(result.findings[0].deny);
  EXPECT_NE(result.findings[0].message.find("node pool \"h100\""), std::string::npos) << result.findings[0].message;
  // A pod in no pool: no pool's GPU is its.
  const RuleResult unpooled = evaluate_on(*pools, model_pod("params=7B,method=full,zero=0"), policy);
  ASSERT_EQ(unpooled.findings.size(), 1u);
  EXPECT_NE(unpooled.findings[0].brief.find("GPU model unknown"), std::string::npos) << unpooled.findings[0].brief;
}

}  // namespace
}  // namespace gpusizer::gpu_memory_rule_test

namespace gpusizer::gpu_memory_rule_test {
namespace {

// A vLLM container's --gpu-memory-utilization is the share the model may
// use: 70B at fp8 (70 GB of weights) on an H100 (81559 MiB = 85.5 GB) fits
// 0.95 of it and is denied at 0.8 (68.4 GB), where the weights alone exceed
// what vLLM allocates.
TEST(GpuMemoryRule, VllmsUtilizationFromTheContainerIsTheUsableShare) {
  for (const auto& [share, deny] : {std::pair{950, false}, std::pair{800, true}}) {
    PodFacts pod = model_pod("params=70B,precision=fp8,context=1k", "NVIDIA-H100-80GB-HBM3");
    pod.app[0].gpu_memory_utilization = share;
    const RuleResult result = evaluate(GpuMemoryRule(), default_policy(), pod, "infer", true);
    ASSERT_TRUE(result.row);
    EXPECT_NE(result.row->detail.find("at vLLM --gpu-memory-utilization " + milli_text(share)), std::string::npos)
        << result.row->detail;
    const bool denied = !result.findings.empty() && result.findings[0].deny;
    EXPECT_EQ(denied, deny) << share;
  }
}

// A vLLM pod serving 70B over --tensor-parallel-size 8 holds 17.5 GB of
// weights per GPU: read from its args when the annotation gives no tp,
// it is allowed, not denied for 140 GB on one GPU.
TEST(GpuMemoryRule, VllmsTensorParallelismFromTheArgsSplitsTheWeights) {
  PodFacts pod = pod_of({gpu_container("vllm", 8, "32", "256Gi")});
  pod.selection.annotations[kModelKey] = "params=70B,context=8k";
  pod.node_selector["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
  const RuleResult plain = evaluate(GpuMemoryRule(), default_policy(), pod, "infer", true);
  ASSERT_FALSE(plain.findings.empty());
  EXPECT_TRUE(plain.findings[0].deny);
  pod.app[0].tensor_parallel = 8;
  const RuleResult split = evaluate(GpuMemoryRule(), default_policy(), pod, "infer", true);
  EXPECT_TRUE(split.findings.empty() || !split.findings[0].deny);
  ASSERT_TRUE(split.row);
  EXPECT_NE(split.row->detail.find("split over tp=8"), std::string::npos) << split.row->detail;
  // A tp that does not divide the pod's GPUs is not vLLM's on this pod: not taken.
  pod.app[0].tensor_parallel = 3;
  EXPECT_TRUE(evaluate(GpuMemoryRule(), default_policy(), pod, "infer").findings[0].deny);
}

// A training pod's --gpu-memory-utilization is not vLLM's reservation:
// the safety margin stays.
TEST(GpuMemoryRule, ATrainingPodIgnoresTheUtilizationFlag) {
  PodFacts pod = model_pod("params=1B", "NVIDIA-H100-80GB-HBM3");
  pod.app[0].gpu_memory_utilization = 500;
  const RuleResult result = evaluate(GpuMemoryRule(), default_policy(), pod, "train", true);
  ASSERT_TRUE(result.row);
  EXPECT_NE(result.row->detail.find("at safety margin 0.85"), std::string::npos) << result.row->detail;
}

TEST(GpuMemoryRule, ExplainShowsEachComponentAsItsOwnPart) {
  const RuleResult result =
      evaluate(GpuMemoryRule(), default_policy(),
               model_pod("model=llama-2-7b,method=lora,rank=8", "NVIDIA-A100-SXM4-80GB"), "train", true);
  ASSERT_TRUE(result.row);
  ASSERT_GE(result.row->parts.size(), 5u);
  EXPECT_EQ(result.row->parts[0].name, "weights");
  EXPECT_EQ(result.row->parts[0].value, "12.56 GiB/GPU certain");
  EXPECT_EQ(result.row->parts[0].formula, "6.74B params x 2 bytes (bf16) + 4.19M adapter params (rank 8) x 2 bytes");
  EXPECT_EQ(result.row->parts[2].name, "optimizer");
  EXPECT_EQ(result.row->parts[2].bytes, 4'194'304LL * 12);
}

}  // namespace
}  // namespace gpusizer::gpu_memory_rule_test
