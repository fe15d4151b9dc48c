// The node inventory: GPU facts from node labels, nodes grouped into classes
// that differ only by name, upserts and removals as a watch makes them, and
// the policy's nodeFit.pools as classes.
#include "gpusizer/sizing/nodes.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/pod_facts_support.h"

namespace gpusizer::nodes_test {
namespace {

using testing::q;
using Labels = std::vector<std::pair<std::string, std::string>>;

constexpr int64_t kMiB = int64_t{1} << 20;

const std::vector<std::string> kGpuResources = {"nvidia.com/gpu", "amd.com/gpu"};

// A node with 8 NVIDIA GPUs and its own name as its hostname label, as
// every kubelet writes it.
NodeInfo gpu_node(const std::string& name, Labels labels = {}) {
  NodeInfo node;
  node.name = name;
  node.labels = std::move(labels);
  node.labels.emplace_back(std::string(kHostnameLabel), name);
  node.cpu = q("94");
  node.memory = q("1300Gi");
  node.ephemeral_storage = q("350Gi");
  node.extended = {{"nvidia.com/gpu", 8}};
  return node;
}

std::vector<std::string> shapes(const NodeInventory& inventory) {
  std::vector<std::string> out;
  for (const NodeClass& c : inventory.classes) out.push_back(c.shape);
  return out;
}

TEST(NodeGpu, GpuFeatureDiscoveryGivesTheProductAndItsMemoryInMiB) {
  const NodeGpu gpu = node_gpu({{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                                {"nvidia.com/gpu.memory", "81920"},
                                {"nvidia.com/gpu.count", "8"}});
  EXPECT_EQ(gpu.product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(gpu.product_label, "nvidia.com/gpu.product");
  EXPECT_EQ(gpu.memory_bytes, 80 * kGiB);
  EXPECT_EQ(gpu.memory_label, "nvidia.com/gpu.memory");
}

TEST(NodeGpu, GkeNamesTheAcceleratorWithoutItsMemory) {
  const NodeGpu gpu = node_gpu({{"cloud.google.com/gke-accelerator", "nvidia-l4"}});
  EXPECT_EQ(gpu.product, "nvidia-l4");
  EXPECT_EQ(gpu.product_label, "cloud.google.com/gke-accelerator");
  EXPECT_EQ(gpu.memory_bytes, 0);
  EXPECT_EQ(gpu.memory_label, "");
}

TEST(NodeGpu, KarpenterGivesTheNameAndMemoryInMiB) {
  const NodeGpu gpu =
      node_gpu({{"karpenter.k8s.aws/instance-gpu-name", "a10g"}, {"karpenter.k8s.aws/instance-gpu-memory", "24576"}});
  EXPECT_EQ(gpu.product, "a10g");
  EXPECT_EQ(gpu.product_label, "karpenter.k8s.aws/instance-gpu-name");
  EXPECT_EQ(gpu.memory_bytes, 24 * kGiB);
  EXPECT_EQ(gpu.memory_label, "karpenter.k8s.aws/instance-gpu-memory");
}

TEST(NodeGpu, TheAmdLabellerWritesVramInGiBWithAG) {
  const NodeGpu gpu = node_gpu({{"amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"}, {"amd.com/gpu.vram", "192G"}});
  EXPECT_EQ(gpu.product, "AMD_Instinct_MI300X_OAM");
  EXPECT_EQ(gpu.product_label, "amd.com/gpu.product-name");
  EXPECT_EQ(gpu.memory_bytes, 192 * kGiB);
  EXPECT_EQ(gpu.memory_label, "amd.com/gpu.vram");
  // Without its "G", or with another unit, the value is not the labeller's.
  for (const char* vram : {"192", "192Gi", "192GB", "G"}) {
    EXPECT_EQ(node_gpu({{"amd.com/gpu.vram", vram}}).memory_bytes, 0) << vram;
  }
}

TEST(NodeGpu, TheFirstProductLabelWinsAndAnEmptyOneIsSkipped) {
  const Labels both = {{"cloud.google.com/gke-accelerator", "nvidia-tesla-a100"},
                       {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"}};
  EXPECT_EQ(node_gpu(both).product, "NVIDIA-A100-SXM4-40GB");
  const Labels empty_first = {{"nvidia.com/gpu.product", ""}, {"cloud.google.com/gke-accelerator", "nvidia-l4"}};
  EXPECT_EQ(node_gpu(empty_first).product, "nvidia-l4");
  EXPECT_EQ(node_gpu(empty_first).product_label, "cloud.google.com/gke-accelerator");
}

TEST(NodeGpu, MemoryThatIsNotAWholePositiveNumberIsIgnored) {
  for (const char* memory : {"abc", "0", "-1", "1.5", "", "81920Mi", " 81920"}) {
    const NodeGpu gpu = node_gpu({{"nvidia.com/gpu.product", "NVIDIA-L4"}, {"nvidia.com/gpu.memory", memory}});
    EXPECT_EQ(gpu.memory_bytes, 0) << memory;
    EXPECT_EQ(gpu.memory_label, "") << memory;
    EXPECT_EQ(gpu.product, "NVIDIA-L4") << memory;
  }
  // A garbled first label leaves the next one to say it.
  const NodeGpu next = node_gpu({{"nvidia.com/gpu.memory", "abc"}, {"karpenter.k8s.aws/instance-gpu-memory", "1024"}});
  EXPECT_EQ(next.memory_bytes, kGiB);
  EXPECT_EQ(next.memory_label, "karpenter.k8s.aws/instance-gpu-memory");
}

TEST(NodeGpu, TheVendorIsTheProductLabelsDomainElseItsValueElseKarpentersManufacturer) {
  EXPECT_EQ(node_gpu({{"nvidia.com/gpu.product", "Tesla-T4"}}).vendor, "NVIDIA");
  EXPECT_EQ(node_gpu({{"amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"}}).vendor, "AMD");
  EXPECT_EQ(node_gpu({{"cloud.google.com/gke-accelerator", "nvidia-l4"}}).vendor, "NVIDIA");
  EXPECT_EQ(node_gpu({{"karpenter.k8s.aws/instance-gpu-manufacturer", "amd"},
                      {"karpenter.k8s.aws/instance-gpu-name", "mi300x"}})
                .vendor,
            "AMD");
  // A GKE TPU label or an unknown product names no GPU vendor.
  EXPECT_EQ(node_gpu({{"karpenter.k8s.aws/instance-gpu-name", "a10g"}}).vendor, "");
  EXPECT_EQ(node_gpu({{"cloud.google.com/gke-accelerator", "tpu-v5-lite"}}).vendor, "");
}

TEST(GpuVendorNamed, ByDomainOrFirstWordInAnyCase) {
  for (const char* name : {"nvidia.com/gpu", "gpu.nvidia.com", "mig.nvidia.com", "NVIDIA", "nvidia-tesla-t4",
                           "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}) {
    EXPECT_EQ(gpu_vendor_named(name), "NVIDIA") << name;
  }
  for (const char* name : {"amd.com/gpu", "gpu.amd.com", "AMD", "AMD_Instinct_MI210"}) {
    EXPECT_EQ(gpu_vendor_named(name), "AMD") << name;
  }
  for (const char* name : {"gpu.intel.com/i915", "gpu.intel.com", "Intel Gaudi"}) {
    EXPECT_EQ(gpu_vendor_named(name), "Intel") << name;
  }
  // Another domain, even one holding a vendor's name as a word, says none.
  for (const char* name : {"gpu.example.com", "cloud.google.com/gke-accelerator", "nvidia.example.com", "nvidiax",
                           "deviceclass.resource.kubernetes.io/gpu.nvidia.com", "", "a100"}) {
    EXPECT_EQ(gpu_vendor_named(name), "") << name;
  }
}

TEST(NodeClass, TheGpuVendorIsTheLabelsElseAnAllocatableGpuResources) {
  NodeClass labelled;
  labelled.gpu = node_gpu({{"amd.com/gpu.product-name", "AMD_Instinct_MI210"}});
  labelled.extended = {{"nvidia.com/gpu", 8}};
  EXPECT_EQ(labelled.gpu_vendor(), "AMD");
  NodeClass unlabelled;
  unlabelled.extended = {{"nvidia.com/hostdev", 4}, {"nvidia.com/gpu", 0}, {"amd.com/gpu", 8}};
  EXPECT_EQ(unlabelled.gpu_vendor(), "AMD");  // a NIC's resource and none of a GPU say nothing
  EXPECT_EQ(NodeClass{}.gpu_vendor(), "");
}

TEST(NodeGpu, NoGpuLabelsSayNothing) {
  EXPECT_EQ(node_gpu({{"kubernetes.io/os", "linux"}}), NodeGpu{});
  EXPECT_EQ(node_gpu({}), NodeGpu{});
}

TEST(TaintEffect, ReadsOnlyTheThreeEffectsAsWritten) {
  for (TaintEffect effect : {TaintEffect::kNoSchedule, TaintEffect::kPreferNoSchedule, TaintEffect::kNoExecute}) {
    EXPECT_EQ(taint_effect(to_string(effect)), effect);
  }
  EXPECT_EQ(taint_effect("noschedule"), std::nullopt);
  EXPECT_EQ(taint_effect(""), std::nullopt);
}

TEST(InventoryBuilder, NodesThatDifferOnlyByNameAreOneClass) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  for (const char* name : {"gpu-c", "gpu-a", "gpu-b"}) builder.upsert(gpu_node(name));
  const auto inventory = builder.build();
  EXPECT_EQ(inventory->source, InventorySource::kFile);
  EXPECT_EQ(inventory->origin, "nodes.yaml");
  EXPECT_EQ(inventory->node_count, 3u);
  ASSERT_EQ(inventory->classes.size(), 1u);
  const NodeClass& c = inventory->classes[0];
  EXPECT_EQ(c.names, (std::vector<std::string>{"gpu-a", "gpu-b", "gpu-c"}));
  // The hostname label equal to the name is dropped; the class keeps names.
  EXPECT_EQ(c.label(kHostnameLabel), nullptr);
  EXPECT_TRUE(c.labels.empty());
  EXPECT_EQ(c.count("nvidia.com/gpu"), 8);
}

TEST(InventoryBuilder, AHostnameLabelOtherThanTheNameIsKeptAndSplits) {
  InventoryBuilder builder(InventorySource::kCluster, "the cluster's nodes");
  builder.upsert(gpu_node("gpu-a"));
  NodeInfo renamed = gpu_node("gpu-b");
  renamed.labels = {{std::string(kHostnameLabel), "ip-10-0-0-7"}};
  builder.upsert(renamed);
  const auto inventory = builder.build();
  ASSERT_EQ(inventory->classes.size(), 2u);
  const NodeClass& kept = inventory->classes[0].names[0] == "gpu-b" ? inventory->classes[0] : inventory->classes[1];
  ASSERT_NE(kept.label(kHostnameLabel), nullptr);
  EXPECT_EQ(*kept.label(kHostnameLabel), "ip-10-0-0-7");
}

TEST(InventoryBuilder, LabelsTaintsAllocatableAndCordonEachSplitAClass) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(gpu_node("base"));
  builder.upsert(gpu_node("labelled", {{"zone", "b"}}));
  NodeInfo tainted = gpu_node("tainted");
  tainted.taints = {{"sku", "gpu", TaintEffect::kNoSchedule}};
  builder.upsert(tainted);
  NodeInfo cordoned = gpu_node("cordoned");
  cordoned.unschedulable = true;
  builder.upsert(cordoned);
  NodeInfo smaller = gpu_node("smaller");
  smaller.memory = q("1200Gi");
  builder.upsert(smaller);
  NodeInfo fewer = gpu_node("fewer");
  fewer.extended = {{"nvidia.com/gpu", 4}};
  builder.upsert(fewer);
  NodeInfo unreported = gpu_node("unreported");
  unreported.ephemeral_storage.reset();
  builder.upsert(unreported);
  EXPECT_EQ(builder.build()->classes.size(), 7u);
}

TEST(InventoryBuilder, TheOrderOfLabelsTaintsAndResourcesDoesNotSplit) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  NodeInfo a = gpu_node("a", {{"x", "1"}, {"y", "2"}});
  a.taints = {{"k1", "", TaintEffect::kNoSchedule}, {"k2", "v", TaintEffect::kNoExecute}};
  a.extended = {{"nvidia.com/gpu", 8}, {"example.com/nic", 4}};
  NodeInfo b = gpu_node("b", {{"y", "2"}, {"x", "1"}});
  b.taints = {a.taints[1], a.taints[0]};
  b.extended = {a.extended[1], a.extended[0]};
  builder.upsert(a);
  builder.upsert(b);
  const auto inventory = builder.build();
  ASSERT_EQ(inventory->classes.size(), 1u);
  const NodeClass& c = inventory->classes[0];
  EXPECT_EQ(c.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.labels, (Labels{{"x", "1"}, {"y", "2"}}));
  EXPECT_EQ(c.extended, (std::vector<std::pair<std::string, int64_t>>{{"example.com/nic", 4}, {"nvidia.com/gpu", 8}}));
  EXPECT_EQ(c.taints[0].key, "k1");
}

TEST(InventoryBuilder, UpsertReplacesTheNodeOfTheSameName) {
  InventoryBuilder builder(InventorySource::kCluster, "the cluster's nodes");
  builder.upsert(gpu_node("a"));
  builder.upsert(gpu_node("b"));
  NodeInfo relabelled = gpu_node("a", {{"zone", "b"}});
  builder.upsert(relabelled);
  EXPECT_EQ(builder.size(), 2u);
  const auto inventory = builder.build();
  EXPECT_EQ(inventory->node_count, 2u);
  ASSERT_EQ(inventory->classes.size(), 2u);
  for (const NodeClass& c : inventory->classes) {
    ASSERT_EQ(c.names.size(), 1u);
    EXPECT_EQ(c.label("zone") != nullptr, c.names[0] == "a") << c.names[0];
  }
}

TEST(InventoryBuilder, RemoveDropsTheNodeAndAClassItEmpties) {
  InventoryBuilder builder(InventorySource::kCluster, "the cluster's nodes");
  builder.upsert(gpu_node("a"));
  builder.upsert(gpu_node("b"));
  builder.upsert(gpu_node("z", {{"zone", "b"}}));
  builder.remove("a");
  builder.remove("never-added");
  auto inventory = builder.build();
  EXPECT_EQ(builder.size(), 2u);
  ASSERT_EQ(inventory->classes.size(), 2u);
  EXPECT_EQ(inventory->classes[0].names, std::vector<std::string>{"b"});
  builder.remove("z");
  inventory = builder.build();
  ASSERT_EQ(inventory->classes.size(), 1u);
  EXPECT_EQ(inventory->classes[0].names, std::vector<std::string>{"b"});
  builder.clear();
  EXPECT_EQ(builder.size(), 0u);
  EXPECT_TRUE(builder.build()->classes.empty());
}

// The watch publishes a new inventory only when the classes changed: most
// MODIFIED events are heartbeats, conditions or a new resourceVersion, and
// each publish costs decisions their candidates memo.
TEST(InventoryBuilder, UpsertAndRemoveSayWhetherTheClassesChanged) {
  InventoryBuilder builder(InventorySource::kCluster, "the cluster's nodes");
  EXPECT_TRUE(builder.upsert(gpu_node("a")));
  EXPECT_TRUE(builder.upsert(gpu_node("b"))) << "a new node in a known class changes its names";
  EXPECT_FALSE(builder.upsert(gpu_node("a"))) << "the same node again, as a heartbeat sends it";
  NodeInfo reordered = gpu_node("a", {{"zone", "a"}, {"rack", "1"}});
  EXPECT_TRUE(builder.upsert(reordered));
  std::reverse(reordered.labels.begin(), reordered.labels.end());
  EXPECT_FALSE(builder.upsert(reordered)) << "label order is not a change";
  NodeInfo smaller = reordered;
  smaller.memory = q("1200Gi");
  EXPECT_TRUE(builder.upsert(smaller));
  EXPECT_EQ(builder.size(), 2u);
  EXPECT_EQ(builder.build()->classes.size(), 2u);
  EXPECT_TRUE(builder.remove("a"));
  EXPECT_FALSE(builder.remove("a"));
  EXPECT_FALSE(builder.remove("never-added"));
  EXPECT_EQ(builder.size(), 1u);
}

TEST(InventoryBuilder, ABuiltInventoryDoesNotChangeWithLaterUpserts) {
  InventoryBuilder builder(InventorySource::kCluster, "the cluster's nodes");
  builder.upsert(gpu_node("a"));
  const auto before = builder.build("the watch lost the API server");
  builder.upsert(gpu_node("b", {{"zone", "b"}}));
  builder.remove("a");
  EXPECT_EQ(before->stale, "the watch lost the API server");
  ASSERT_EQ(before->classes.size(), 1u);
  EXPECT_EQ(before->classes[0].names, std::vector<std::string>{"a"});
  EXPECT_EQ(builder.build()->stale, "");
}

TEST(InventoryBuilder, TheLargestClassComesFirstThenByShape) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(gpu_node("z-single", {{"zone", "a"}}));
  builder.upsert(gpu_node("m-single", {{"zone", "b"}}));
  for (const char* name : {"x-1", "x-2", "x-3"}) builder.upsert(gpu_node(name, {{"zone", "c"}}));
  EXPECT_EQ(shapes(*builder.build()), (std::vector<std::string>{"x-1", "m-single", "z-single"}));
}

TEST(InventoryBuilder, TheShapeIsTheInstanceTypeElseTheFirstNodeName) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(gpu_node("gke-pool-2", {{"node.kubernetes.io/instance-type", "a2-highgpu-8g"}}));
  builder.upsert(gpu_node("gke-pool-1", {{"node.kubernetes.io/instance-type", "a2-highgpu-8g"}}));
  builder.upsert(gpu_node("bare-metal-9"));
  builder.upsert(gpu_node("bare-metal-3"));
  builder.upsert(gpu_node("bare-metal-5"));
  EXPECT_EQ(shapes(*builder.build()), (std::vector<std::string>{"bare-metal-3", "a2-highgpu-8g"}));
}

TEST(InventoryBuilder, AClassKnowsItsGpuFromItsLabels) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(
      gpu_node("a", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}, {"nvidia.com/gpu.memory", "81559"}}));
  const auto inventory = builder.build();
  const NodeClass& c = inventory->classes.at(0);
  EXPECT_EQ(c.gpu.product, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(c.gpu.memory_bytes, 81559 * kMiB);
}

TEST(NodeClass, GpusAreTheFirstGpuResourceItHas) {
  NodeClass c;
  c.extended = {{"amd.com/gpu", 8}, {"example.com/nic", 2}};
  EXPECT_EQ(c.gpus(kGpuResources), (std::pair<std::string_view, int64_t>{"amd.com/gpu", 8}));
  EXPECT_EQ(c.count("nvidia.com/gpu"), 0);
  EXPECT_EQ(c.count("example.com/nic"), 2);
  c.extended = {{"example.com/nic", 2}};
  EXPECT_EQ(c.gpus(kGpuResources).second, 0);
  EXPECT_EQ(c.gpus(kGpuResources).first, "");
}

TEST(NodeClass, DescribeNamesTheShapeItsGpusAndAllocatable) {
  NodeClass c;
  c.shape = "a2-highgpu-8g";
  c.extended = {{"nvidia.com/gpu", 8}};
  c.cpu = q("94");
  c.memory = q("1300Gi");
  c.ephemeral_storage = q("350Gi");
  EXPECT_EQ(c.describe(), "a2-highgpu-8g (8 nvidia.com/gpu, cpu 94, memory 1300Gi, ephemeral-storage 350Gi)");
  // What the node does not report, or has none of, is not said.
  c.extended = {{"example.com/nic", 0}, {"nvidia.com/gpu", 1}};
  c.cpu = q("7910m");
  c.ephemeral_storage.reset();
  EXPECT_EQ(c.describe(), "a2-highgpu-8g (1 nvidia.com/gpu, cpu 7910m, memory 1300Gi)");
}

TEST(NodeInventory, GpuShapesCountsTheClassesWithSomeGpuResource) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  builder.upsert(gpu_node("nvidia"));
  NodeInfo amd = gpu_node("amd");
  amd.extended = {{"amd.com/gpu", 8}};
  builder.upsert(amd);
  NodeInfo cpu_only = gpu_node("cpu-only");
  cpu_only.extended.clear();
  builder.upsert(cpu_only);
  const auto inventory = builder.build();
  EXPECT_EQ(inventory->classes.size(), 3u);
  EXPECT_EQ(inventory->gpu_shapes(kGpuResources), 2u);
  EXPECT_EQ(inventory->gpu_shapes({"nvidia.com/gpu"}), 1u);
  EXPECT_EQ(NodeInventory::none()->gpu_shapes(kGpuResources), 0u);
  EXPECT_EQ(NodeInventory::none()->source, InventorySource::kNone);
}

TEST(PoolInventory, NoPoolsIsTheInventoryOfNothing) {
  EXPECT_EQ(pool_inventory(default_policy()), NodeInventory::none());
}

TEST(PoolInventory, EachShapeOfEachPoolIsAClass) {
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>().pools = {
      NodePool{"a100",
               {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}},
               "NVIDIA-A100-SXM4-80GB",
               {NodeShape{"a100-half", 4, q("126"), q("980Gi"), q("14Ti")},
                NodeShape{"dgx-a100", 8, q("252"), q("1960Gi"), q("28Ti")}}},
      NodePool{"l4", {}, "", {NodeShape{"g2-standard-8", 1, q("7910m"), q("27Gi"), q("95Gi")}}}};
  const auto inventory = pool_inventory(policy);
  EXPECT_EQ(inventory->source, InventorySource::kPools);
  EXPECT_EQ(inventory->origin, "policy nodeFit.pools");
  EXPECT_EQ(shapes(*inventory), (std::vector<std::string>{"a100-half", "dgx-a100", "g2-standard-8"}));
  const NodeClass& dgx = inventory->classes[1];
  EXPECT_EQ(dgx.pool, "a100");
  EXPECT_EQ(dgx.labels, (Labels{{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}));
  EXPECT_TRUE(dgx.taints.empty());
  EXPECT_TRUE(dgx.names.empty());
  EXPECT_FALSE(dgx.unschedulable);
  // Its GPU count under every GPU resource of the policy.
  EXPECT_EQ(dgx.extended, (std::vector<std::pair<std::string, int64_t>>{{"amd.com/gpu", 8}, {"nvidia.com/gpu", 8}}));
  EXPECT_EQ(dgx.memory, q("1960Gi"));
  EXPECT_EQ(dgx.gpu.product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(dgx.gpu.product_label, "nodeFit.pools[a100].gpuProduct");
  EXPECT_EQ(inventory->classes[2].pool, "l4");
  EXPECT_EQ(inventory->classes[2].gpu.product, "");
  EXPECT_EQ(inventory->gpu_shapes(policy.gpu_resources), 3u);
}

}  // namespace
}  // namespace gpusizer::nodes_test
