// The accelerator demand model: which resources and annotations ask for
// accelerators, how the policy counts each, and what decide_pod says of
// the asks the tables do not size (MIG slices, shared and fractional GPUs,
// other vendors' devices).

#include "gpusizer/sizing/accelerators.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/check/explain.h"
#include "support/nodes_support.h"
#include "support/pod_decision_support.h"

namespace gpusizer::accelerators_test {
namespace {

using namespace pod_decision_test;  // NOLINT(google-build-using-namespace)

struct Classified {
  std::string resource;
  std::optional<AcceleratorForm> form;  // nullopt: not an accelerator
  AcceleratorSizing sizing = AcceleratorSizing::kWarn;
};

TEST(ClassifyResource, TheDefaultPolicyNamesEachForm) {
  const Policy& policy = default_policy();
  const std::vector<Classified> cases = {
      {"nvidia.com/gpu", AcceleratorForm::kDevice, AcceleratorSizing::kGpus},
      {"amd.com/gpu", AcceleratorForm::kDevice, AcceleratorSizing::kGpus},
      {"nvidia.com/mig-3g.40gb", AcceleratorForm::kMigSlice},
      {"nvidia.com/mig-1g.10gb.me", AcceleratorForm::kMigSlice},
      {"nvidia.com/gpu.shared", AcceleratorForm::kShared},
      // KubeVirt's passthrough GPUs and vGPUs (NVIDIA/kubevirt-gpu-device-plugin).
      {"nvidia.com/GP102GL_TESLA_P40", AcceleratorForm::kDevice},
      {"nvidia.com/GH100_H100_SXM5_80GB", AcceleratorForm::kDevice},
      {"nvidia.com/NVIDIA_H200X-141C", AcceleratorForm::kShared},
      {"nvidia.com/hostdev", std::nullopt},
      {"nvidia.com/gpumem", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"amd.com/cpx_nps4", AcceleratorForm::kMigSlice},
      {"google.com/tpu", AcceleratorForm::kDevice},
      {"habana.ai/gaudi", AcceleratorForm::kDevice},
      {"gpu.intel.com/dxg", AcceleratorForm::kDevice},
      {"aws.amazon.com/neuroncore", AcceleratorForm::kFraction},
      {"huawei.com/Ascend910", AcceleratorForm::kDevice},
      // HAMi's memory and compute shares of other vendors' devices are not
      // devices, though their vendors' wildcards would match them.
      {"huawei.com/Ascend910B3-memory", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"hygon.com/dcumem", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"hygon.com/dcunum", AcceleratorForm::kDevice},
      {"cambricon.com/mlu.smlu.vmemory", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"cambricon.com/mlu370.smlu.vcore", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"metax-tech.com/vmemory", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"kunlunxin.com/vxpu-memory", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"enflame.com/vgcu-percentage", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      {"enflame.com/vgcu", AcceleratorForm::kDevice},
      // Named for GPUs, so warned as unknown GPUs without an entry.
      {"mthreads.com/sgpu-memory", AcceleratorForm::kFraction, AcceleratorSizing::kDetail},
      // Not listed, but named for GPUs, or a DRA extended resource: warned.
      {"example.com/my-GPU", AcceleratorForm::kUnknown},
      {"deviceclass.resource.kubernetes.io/gpu.example.com", AcceleratorForm::kUnknown},
      // Neither.
      {"example.com/fpga", std::nullopt},
      {"gpu.intel.com/monitoring", std::nullopt},
      {"hugepages-2Mi", std::nullopt},
  };
  for (const Classified& c : cases) {
    const auto found = policy.accelerator_for(c.resource);
    ASSERT_EQ(found != nullptr, c.form.has_value()) << c.resource;
    if (!found) continue;
    EXPECT_EQ(found->form, *c.form) << c.resource;
    EXPECT_EQ(found->sizing, c.sizing) << c.resource;
    EXPECT_EQ(policy.is_gpu_resource(c.resource), c.sizing == AcceleratorSizing::kGpus) << c.resource;
  }
}

TEST(DeviceClasses, AcceleratorsByNameOrByAWordOfAnUnlistedName) {
  const Policy& policy = default_policy();
  const auto unit_of = [&](const char* device_class) {
    const AcceleratorClass* of = policy.device_class_for(device_class);
    return of ? of->unit : std::string("none");
  };
  EXPECT_EQ(unit_of("gpu.nvidia.com"), "GPU");
  EXPECT_EQ(unit_of("tpu.google.com"), "TPU chip");
  EXPECT_EQ(unit_of("neuron.aws.com"), "Neuron device");
  // Not listed: said as a device of a DRA class when a word says accelerator.
  for (const char* unlisted : {"npu.rebellions.ai", "gpu.example.com", "a100gpu-pool", "tpu-v5e", "xpu.example.org",
                               "my-accelerator.example.com"}) {
    EXPECT_EQ(unit_of(unlisted), "device of a DRA class") << unlisted;
  }
  // A NIC's, a CPU's, or a word that only holds those letters: none.
  for (const char* other : {"rdma.mellanox.com", "cpu.example.com", "throughput.example.com", "efa.aws.com"}) {
    EXPECT_EQ(unit_of(other), "none") << other;
  }
}

TEST(MigProfile, ReadsTheProfileAndItsMemoryFromResourceAndProductNames) {
  const auto slice = mig_profile("nvidia.com/mig-3g.40gb");
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->profile, "3g.40gb");
  EXPECT_EQ(slice->memory_gb, 40);
  const auto product = mig_profile("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED");
  ASSERT_TRUE(product);
  EXPECT_EQ(product->profile, "1g.5gb");
  EXPECT_EQ(product->memory_gb, 5);
  EXPECT_FALSE(mig_profile("nvidia.com/mig-x"));
  EXPECT_FALSE(mig_profile("NVIDIA-A100-SXM4-40GB"));
  EXPECT_FALSE(mig_profile("mig-3g.99999999gb"));
}

json pod_asking(const json& limits, const json& annotations = nullptr) {
  return pod_of(json::array({{{"name", "worker"}, {"image", "vllm"}, {"resources", {{"limits", limits}}}}}), nullptr,
                annotations);
}

TEST(UnsizedAsks, AMigSliceIsWarnedWithTheTablesArithmeticAndNotPatched) {
  const json pod = pod_asking({{"nvidia.com/mig-3g.40gb", "2"}});
  EXPECT_TRUE(run(pod).ops.empty()) << run(pod).ops.dump();
  const Outcome v = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(v.decision.denials.empty()) << all(v.decision.denials);
  EXPECT_EQ(v.decision.warnings,
            std::vector<std::string>{"container \"worker\": 2 nvidia.com/mig-3g.40gb (MIG slice) not sized; "
                                     "as 2 GPUs, train: cpu 16, memory 96Gi"});
}

TEST(UnsizedAsks, SharedReplicasOtherVendorsAndUnknownGpuNamesAreWarned) {
  for (const std::string resource : {"nvidia.com/gpu.shared", "google.com/tpu", "habana.ai/gaudi", "example.com/gpu"}) {
    const Outcome v = validate(pod_asking({{resource, "4"}}));
    EXPECT_TRUE(has_line(v.decision.warnings, {"4 " + resource, "not sized; as 4 GPUs, train: cpu 32, memory 192Gi"}))
        << resource << "\n"
        << all(v.decision.warnings);
  }
}

// GoogleCloudPlatform/cluster-toolkit's TPU 7x job writes a placeholder
// (`google.com/tpu: <CHIPS_PER_NODE>`) where the count goes: the API server
// refuses it, so it is denied naming the field, not passed without a word
// because no GPU is counted.
TEST(UnsizedAsks, AnAcceleratorCountThatIsNotAQuantityIsDeniedNamingTheField) {
  for (const std::string value : {"<CHIPS_PER_NODE>", "-4"}) {
    const Outcome v = validate(pod_asking({{"google.com/tpu", value}}), Mode::kEnforce);
    EXPECT_TRUE(has_line(v.decision.denials, {"resources.limits.google.com/tpu"})) << value << "\n"
                                                                                   << all(v.decision.denials);
  }
}

// awslabs/ai-on-eks's Llama 3 RayService asks 12 Neuron devices with 180
// CPUs and 700G: more than the 12-GPU row, so nothing to set or say.
TEST(UnsizedAsks, AContainerThatAlreadyAsksForTheRowsCpuAndMemoryIsNotWarned) {
  const Outcome met = validate(pod_asking({{"aws.amazon.com/neuron", "12"}, {"cpu", "180"}, {"memory", "700G"}}));
  EXPECT_TRUE(met.decision.warnings.empty()) << all(met.decision.warnings);
  // Below the row in either is said as before.
  const Outcome short_cpu = validate(pod_asking({{"aws.amazon.com/neuron", "12"}, {"cpu", "8"}, {"memory", "700G"}}));
  EXPECT_TRUE(has_line(short_cpu.decision.warnings, {"12 aws.amazon.com/neuron", "not sized; as 12 GPUs"}))
      << all(short_cpu.decision.warnings);
  // The row is that of all the container's devices: two slices at the
  // 1-GPU row's 64Gi are below the 2-GPU row's 96Gi, and both are said.
  const Outcome two = validate(pod_asking(
      {{"nvidia.com/mig-3g.40gb", "1"}, {"nvidia.com/mig-4g.40gb", "1"}, {"cpu", "16"}, {"memory", "64Gi"}}));
  EXPECT_EQ(two.decision.warnings.size(), 2u) << all(two.decision.warnings);
}

TEST(UnsizedAsks, AFractionByAnnotationIsWarnedAsOneGpu) {
  json pod = pod_of(json::array({{{"name", "nb"}, {"image", "jupyter"}}}), nullptr, {{"gpu-fraction", "0.5"}});
  const Outcome v = validate(pod);
  EXPECT_EQ(v.decision.warnings, std::vector<std::string>{"annotation gpu-fraction=0.5 (fraction of a GPU) not sized; "
                                                          "as 1 GPU, train: cpu 16, memory 64Gi"});
}

TEST(UnsizedAsks, HamisMemoryShareDescribesTheGpuItComesWith) {
  // Project-HAMi/HAMi examples/nvidia: a share of one GPU (its memory in
  // MiB, or under 100 percent of its compute) is a part of a GPU, and the
  // tables' rows are for whole ones: said, not raised or denied, as a
  // shared replica is.
  for (const json& share : {json{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}},
                            json{{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "30"}}}) {
    const json pod = pod_asking(share);
    EXPECT_TRUE(run(pod).ops.empty()) << share.dump() << run(pod).ops.dump();
    const Outcome v = validate(pod, Mode::kEnforce);
    EXPECT_TRUE(v.decision.denials.empty()) << all(v.decision.denials);
    EXPECT_TRUE(has_line(v.decision.warnings, {"nvidia.com/gpu is a share of a GPU (nvidia.com/gpu", "not sized"}))
        << all(v.decision.warnings);
    EXPECT_EQ(v.decision.gpus, 1);
  }
  // All of each GPU (use_exclusive_card.yaml: 100 percent of both) is sized.
  const json whole =
      pod_asking({{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem-percentage", "100"}, {"nvidia.com/gpucores", "100"}});
  EXPECT_FALSE(run(whole).ops.empty());
  EXPECT_FALSE(has_line(validate(whole).decision.warnings, {"not sized"})) << all(validate(whole).decision.warnings);
  // Alone, a share is the only word of a GPU: warned.
  const Outcome alone = validate(pod_asking({{"nvidia.com/gpumem", "3000"}}));
  EXPECT_TRUE(has_line(alone.decision.warnings, {"3000 nvidia.com/gpumem (MiB of GPU memory) not sized"}))
      << all(alone.decision.warnings);
}

TEST(UnsizedAsks, AnAscendNpuWithHamisMemoryShareIsWarnedAsItsNpusOnly) {
  // HAMi's example (Project-HAMi/HAMi examples/ascend/job-910B3.yaml): one
  // NPU with 2000 MiB of its memory is one NPU, not 2001.
  const Outcome v = validate(pod_asking({{"huawei.com/Ascend910B3", "1"}, {"huawei.com/Ascend910B3-memory", "2000"}}));
  EXPECT_TRUE(has_line(v.decision.warnings, {"1 huawei.com/Ascend910B3 (NPU) not sized; as 1 GPU"}))
      << all(v.decision.warnings);
  EXPECT_FALSE(has_line(v.decision.warnings, {"2000"})) << all(v.decision.warnings);
}

TEST(UnsizedAsks, APodWithGpusAndSlicesIsSizedAndWarned) {
  json pod = pod_of(json::array(
      {gpu_container("trainer", "2", "1", "1Gi"),
       {{"name", "sidecar"}, {"image", "x"}, {"resources", {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}}}}}));
  const Outcome m = run(pod);
  EXPECT_EQ(resources_of(m.patched)["requests"]["memory"], "96Gi");
  const Outcome v = validate(pod);
  EXPECT_TRUE(has_line(v.decision.warnings, {"container \"sidecar\": 1 nvidia.com/mig-1g.10gb (MIG slice) not sized"}))
      << all(v.decision.warnings);
}

TEST(UnsizedAsks, ManyContainersGetThreeLinesAndACount) {
  json containers = json::array();
  for (int i = 0; i < 10; ++i) {
    containers.push_back({{"name", "c" + std::to_string(i)},
                          {"image", "x"},
                          {"resources", {{"limits", {{"nvidia.com/gpu.shared", "1"}}}}}});
  }
  const Outcome v = validate(pod_of(containers));
  ASSERT_EQ(v.decision.warnings.size(), 4u) << all(v.decision.warnings);
  EXPECT_EQ(v.decision.warnings.back(), "and 7 more accelerator asks not sized");
}

TEST(UnsizedAsks, APolicyCanSizeAnAcceleratorAsGpus) {
  const Policy policy = policy_from(
      "accelerators:\n  - {resource: habana.ai/gaudi, form: device, sizing: gpus, vendor: Intel Gaudi, unit: HPU}\n");
  const json pod = pod_asking({{"habana.ai/gaudi", "8"}});
  const Outcome m = run(pod, Endpoint::kMutate, Mode::kMutate, policy);
  EXPECT_EQ(m.decision.gpus, 8);
  EXPECT_EQ(resources_of(m.patched)["requests"]["memory"], "384Gi");
  EXPECT_TRUE(validate(m.patched, Mode::kEnforce, policy).decision.warnings.empty());
}

TEST(UnsizedAsks, EachUseOfADraClaimIsWarnedNamingTheClaim) {
  json pod = pod_of(
      json::array({{{"name", "trainer"},
                    {"image", "pytorch"},
                    {"resources", {{"requests", {{"memory", "64Gi"}}}, {"claims", json::array({{{"name", "gpus"}}})}}}},
                   {{"name", "helper"},
                    {"image", "x"},
                    {"resources", {{"claims", json::array({{{"name", "nic"}, {"request", "port"}}})}}}}}));
  pod["spec"]["resourceClaims"] = json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", "four-gpus"}},
                                               {{"name", "shared"}, {"resourceClaimName", "cluster-gpu"}}});
  EXPECT_TRUE(run(pod).ops.empty()) << run(pod).ops.dump();
  const Outcome v = validate(pod, Mode::kEnforce);
  EXPECT_TRUE(v.decision.denials.empty()) << all(v.decision.denials);
  EXPECT_EQ(
      v.decision.warnings,
      (std::vector<std::string>{
          "container \"trainer\": DRA claim \"gpus\" (template \"four-gpus\") is not sized; set its cpu and memory",
          "container \"helper\": DRA claim \"nic\": no spec.resourceClaims entry has that name"}));
  // A claim of the cluster's, by name.
  pod["spec"]["containers"][0]["resources"]["claims"][0]["name"] = "shared";
  EXPECT_TRUE(has_line(validate(pod).decision.warnings, {"DRA claim \"shared\" (claim \"cluster-gpu\") is not sized"}));
}

// Time-slicing or MPS that keeps the resource's name: each nvidia.com/gpu
// of the node is a replica, as GPU Feature Discovery's labels say.
std::shared_ptr<const NodeInventory> nodes_labelled(std::vector<std::pair<std::string, std::string>> labels) {
  return testing::one_node_inventory("t4", 4, "16", "60Gi", "100Gi", {}, std::move(labels));
}

TEST(UnsizedAsks, GpusThatAreSharedReplicasOnEveryNodeAreSaidNotRaisedOrDenied) {
  const json pod = one_gpu_pod(2, "4", "8Gi");
  using Labels = std::vector<std::pair<std::string, std::string>>;
  for (const Labels& labels : {Labels{{"nvidia.com/gpu.product", "Tesla-T4"}, {"nvidia.com/gpu.replicas", "4"}},
                               Labels{{"nvidia.com/gpu.product", "Tesla-T4-SHARED"}}}) {
    const auto nodes = nodes_labelled(labels);
    const ClusterView cluster{nodes.get(), nullptr};
    EXPECT_TRUE(run(pod, Endpoint::kMutate, Mode::kMutate, default_policy(), cluster).ops.empty()) << labels[0].second;
    const Outcome v = validate(pod, Mode::kEnforce, default_policy(), cluster);
    EXPECT_TRUE(v.decision.denials.empty()) << all(v.decision.denials);
    EXPECT_TRUE(has_line(v.decision.warnings,
                         {"nvidia.com/gpu is a shared replica on its nodes (nvidia.com/gpu.", ", t4): not sized"}))
        << all(v.decision.warnings);
  }
  // Whole GPUs (one replica each): sized, and denied below the table.
  const auto whole = nodes_labelled({{"nvidia.com/gpu.product", "Tesla-T4"}, {"nvidia.com/gpu.replicas", "1"}});
  EXPECT_FALSE(run(pod, Endpoint::kMutate, Mode::kMutate, default_policy(), {whole.get(), nullptr}).ops.empty());
  EXPECT_FALSE(validate(pod, Mode::kEnforce, default_policy(), {whole.get(), nullptr}).decision.denials.empty());
}

TEST(UnsizedAsks, ExplainPrintsEveryAskWithItsField) {
  JsonReader reader;
  const json pod = pod_asking({{"nvidia.com/mig-3g.40gb", "2"}});
  const JsonView view = reader.view_of(pod);
  PatchBuilder patch(view);
  PodTarget target{{view}, {kDescription, Mode::kMutate}};
  target.explain = true;
  const PodDecision decision = decide_pod(default_policy(), Endpoint::kValidate, target, patch);
  const auto rows = explain_rows(decision.explanation, decision.explanation);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].title, "ask");
  EXPECT_EQ(rows[0].floor, "container \"worker\": 2 nvidia.com/mig-3g.40gb");
  EXPECT_EQ(rows[0].detail,
            "MIG slice, NVIDIA, 3g.40gb, 40 GB GPU memory each; warned, not sized (policy accelerators); "
            "at spec.containers[0].resources.limits");
}

}  // namespace
}  // namespace gpusizer::accelerators_test
