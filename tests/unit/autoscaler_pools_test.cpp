// Karpenter NodePools with their node classes, and GKE ComputeClasses, read
// into the machines each may launch (issue 28, part 3): which machines,
// with which labels, taints and allocatable, and where a pod may go.
#include "gpusizer/sizing/autoscaler_pools.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/check/node_file.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/nodes/autoscaler_reader.h"
#include "gpusizer/sizing/candidates.h"
#include "support/pod_facts_support.h"

namespace gpusizer::autoscaler_pools_test {
namespace {

using nlohmann::json;
using Shapes = std::vector<std::string>;
constexpr int64_t kMiB = int64_t{1} << 20;

Status add(const json& object, AutoscalerObjects& objects) {
  JsonReader reader;
  const std::string text = object.dump();
  auto view = reader.parse(text);
  EXPECT_TRUE(view.ok());
  return add_autoscaler_object(view.value(), objects);
}

// The pool: one L40S, 8 or 16 vCPU, GPU taint, spot or on-demand.
json l40s_pool(const json& node_class_ref = {
                   {"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "gpu"}}) {
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodePool"},
          {"metadata", {{"name", "gpu-l40s"}}},
          {"spec",
           {{"template",
             {{"metadata", {{"labels", {{"team", "ml"}}}}},
              {"spec",
               {{"nodeClassRef", node_class_ref},
                {"requirements",
                 {{{"key", "node.kubernetes.io/instance-type"},
                   {"operator", "In"},
                   {"values", {"g6e.2xlarge", "g6e.4xlarge"}}},
                  {{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {"on-demand", "spot"}}},
                  {{"key", "kubernetes.io/arch"}, {"operator", "In"}, {"values", {"amd64"}}}}},
                {"taints", {{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}}}}}}}}}};
}

json ec2_node_class(const json& spec) {
  return {{"apiVersion", "karpenter.k8s.aws/v1"},
          {"kind", "EC2NodeClass"},
          {"metadata", {{"name", "gpu"}}},
          {"spec", spec}};
}

Shapes shapes(const std::vector<NodeClass>& machines) {
  Shapes out;
  for (const NodeClass& machine : machines) out.push_back(machine.shape);
  return out;
}

const NodeClass& find(const std::vector<NodeClass>& machines, const std::string& shape) {
  for (const NodeClass& machine : machines) {
    if (machine.shape == shape) return machine;
  }
  ADD_FAILURE() << "no " << shape;
  return machines.front();
}

TEST(AutoscalerPools, ANodePoolLaunchesTheMachinesItsRequirementsAllowWithItsLabelsAndTaints) {
  AutoscalerObjects objects;
  ASSERT_TRUE(add(l40s_pool(), objects).ok());
  const std::vector<NodeClass> machines = launchable_machines(objects);
  EXPECT_EQ(shapes(machines), (Shapes{"g6e.2xlarge", "g6e.4xlarge"}));
  const NodeClass& large = find(machines, "g6e.4xlarge");
  EXPECT_EQ(large.launched_by, "NodePool gpu-l40s");
  EXPECT_EQ(large.named(), "g6e.4xlarge of NodePool gpu-l40s");
  ASSERT_NE(large.label("karpenter.sh/nodepool"), nullptr);
  EXPECT_EQ(*large.label("karpenter.sh/nodepool"), "gpu-l40s");
  EXPECT_EQ(*large.label("team"), "ml");
  EXPECT_EQ(*large.label("kubernetes.io/arch"), "amd64");  // a single value: the node's label
  EXPECT_EQ(*large.label("karpenter.k8s.aws/instance-gpu-name"), "l40s");
  // Several values, or a well-known label the pool leaves open: the pod's.
  EXPECT_TRUE(large.is_open("karpenter.sh/capacity-type"));
  EXPECT_TRUE(large.is_open("topology.kubernetes.io/zone"));
  EXPECT_FALSE(large.is_open("kubernetes.io/arch"));
  EXPECT_EQ(large.taints, (std::vector<Taint>{{"nvidia.com/gpu", "", TaintEffect::kNoSchedule}}));
  EXPECT_EQ(large.count("nvidia.com/gpu"), 1);
  EXPECT_TRUE(large.names.empty());
}

TEST(AutoscalerPools, APoolsLimitsAndCategoryRuleMachinesOut) {
  json pool = l40s_pool();
  pool["spec"]["template"]["spec"]["requirements"] = {
      {{"key", "karpenter.k8s.aws/instance-category"}, {"operator", "In"}, {"values", {"p"}}}};
  pool["spec"]["limits"] = {{"nvidia.com/gpu", 4}};
  AutoscalerObjects objects;
  ASSERT_TRUE(add(pool, objects).ok());
  for (const NodeClass& machine : launchable_machines(objects)) {
    EXPECT_EQ(machine.shape.front(), 'p') << machine.shape;
    EXPECT_LE(machine.count("nvidia.com/gpu"), 4) << machine.shape;
  }
  // A CPU pool (categories c, m, r) launches no GPU machine.
  pool["spec"]["template"]["spec"]["requirements"] = {
      {{"key", "karpenter.k8s.aws/instance-category"}, {"operator", "In"}, {"values", {"c", "m", "r"}}}};
  AutoscalerObjects cpu;
  ASSERT_TRUE(add(pool, cpu).ok());
  EXPECT_TRUE(launchable_machines(cpu).empty());
  // A node class of a provider the catalogue does not hold (KWOK): none.
  AutoscalerObjects kwok;
  ASSERT_TRUE(add(l40s_pool({{"group", "karpenter.kwok.sh"}, {"kind", "KWOKNodeClass"}, {"name", "x"}}), kwok).ok());
  EXPECT_TRUE(launchable_machines(kwok).empty());
}

// Thousands of pools that each allow every machine would be hundreds of
// thousands of node classes: at most kMaxLaunchableMachines are kept, and
// the caller is told; a --nodes file with more is refused.
TEST(AutoscalerPools, MachinesPastTheLimitAreLeftOutAndSaid) {
  AutoscalerObjects objects;
  json pool = l40s_pool();
  pool["spec"]["template"]["spec"].erase("requirements");  // every AWS machine: 300 pools of 44
  for (int i = 0; i < 300; ++i) {
    pool["metadata"]["name"] = "pool-" + std::to_string(i);
    ASSERT_TRUE(add(pool, objects).ok());
  }
  bool more = false;
  EXPECT_EQ(launchable_machines(objects, &more).size(), kMaxLaunchableMachines);
  EXPECT_TRUE(more);
  objects.pools.resize(2);
  EXPECT_LT(launchable_machines(objects, &more).size(), kMaxLaunchableMachines);
  EXPECT_FALSE(more);

  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (int i = 0; i < 300; ++i) {
    pool["metadata"]["name"] = "pool-" + std::to_string(i);
    list["items"].push_back(pool);
  }
  const std::string path = ::testing::TempDir() + "/many-pools.json";
  std::ofstream(path) << list.dump();
  auto read = read_node_file(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error(), path +
                              ": its NodePools and ComputeClasses may launch more than 10000 machines in all; "
                              "narrow their requirements or split the file");
}

// Karpenter's ephemeral storage and kubelet arithmetic
// (aws/karpenter-provider-aws pkg/providers/instancetype/types.go): the
// root volume, 1Gi kube-reserved and 10% nodefs eviction; memory less
// 11 MiB a pod + 255 MiB and the eviction threshold.
TEST(AutoscalerPools, AnEc2NodeClassSetsTheRootVolumeAndTheKubelet) {
  AutoscalerObjects objects;
  ASSERT_TRUE(add(l40s_pool(), objects).ok());
  const NodeClass before = find(launchable_machines(objects), "g6e.4xlarge");
  EXPECT_EQ(before.ephemeral_storage->value_ceil(), 17 * kGiB);  // the default 20Gi root volume
  ASSERT_TRUE(add(ec2_node_class({{"amiSelectorTerms", {{{"alias", "al2023@latest"}}}},
                                  {"blockDeviceMappings",
                                   {{{"deviceName", "/dev/xvda"},
                                     {"rootVolume", true},
                                     {"ebs", {{"volumeSize", "200Gi"}, {"volumeType", "gp3"}}}}}},
                                  {"kubelet", {{"maxPods", 110}, {"evictionHard", {{"memory.available", "5%"}}}}}}),
                  objects)
                  .ok());
  const NodeClass after = find(launchable_machines(objects), "g6e.4xlarge");
  EXPECT_EQ(after.ephemeral_storage->value_ceil(), 200 * kGiB - kGiB - 20 * kGiB);
  EXPECT_EQ(after.cpu, before.cpu);
  // g6e.4xlarge: 131072 MiB, capacity less 7.5% (9831 MiB); 11 MiB for
  // each of its 234 ENI-limited pods + 255 MiB whatever maxPods says on
  // AL2023; eviction 100Mi by default, 5% of capacity (rounded up) now.
  const int64_t capacity = (131072 - 9831) * kMiB;
  EXPECT_EQ(before.memory->value_ceil(), capacity - (11 * 234 + 255) * kMiB - 100 * kMiB);
  EXPECT_EQ(after.memory->value_ceil(), capacity - (11 * 234 + 255) * kMiB -
                                            static_cast<int64_t>(std::ceil(static_cast<double>(capacity) / 100 * 5)));
  EXPECT_EQ(*after.label("karpenter.k8s.aws/ec2nodeclass"), "gpu");
}

TEST(AutoscalerPools, BottlerocketsDataVolumeAndAnInstanceStoreAreReadAsKarpenterReadsThem) {
  AutoscalerObjects objects;
  ASSERT_TRUE(add(l40s_pool(), objects).ok());
  ASSERT_TRUE(add(ec2_node_class({{"amiSelectorTerms", {{{"alias", "bottlerocket@latest"}}}},
                                  {"blockDeviceMappings",
                                   {{{"deviceName", "/dev/xvda"}, {"ebs", {{"volumeSize", "4Gi"}}}},
                                    {{"deviceName", "/dev/xvdb"}, {"ebs", {{"volumeSize", "100Gi"}}}}}},
                                  {"kubelet", {{"maxPods", 110}}}}),
                  objects)
                  .ok());
  const NodeClass machine = find(launchable_machines(objects), "g6e.2xlarge");  // a copy: the list is a temporary
  EXPECT_EQ(machine.ephemeral_storage->value_ceil(), 100 * kGiB - kGiB - 10 * kGiB);
  // Bottlerocket reserves 11 MiB for each of maxPods: g6e.2xlarge, 65536 MiB
  // less 7.5% (4916 MiB).
  EXPECT_EQ(machine.memory->value_ceil(), (65536 - 4916 - (11 * 110 + 255) - 100) * kMiB);
  // RAID0 instance store: a size the catalogue does not hold, so no cap.
  AutoscalerObjects raid;
  ASSERT_TRUE(add(l40s_pool(), raid).ok());
  ASSERT_TRUE(add(ec2_node_class({{"instanceStorePolicy", "RAID0"}}), raid).ok());
  EXPECT_FALSE(find(launchable_machines(raid), "g6e.2xlarge").ephemeral_storage.has_value());
}

TEST(AutoscalerPools, AComputeClassLaunchesEachPrioritysMachines) {
  const json compute_class = {
      {"apiVersion", "cloud.google.com/v1"},
      {"kind", "ComputeClass"},
      {"metadata", {{"name", "l4-first"}}},
      {"spec",
       {{"priorities",
         {{{"machineFamily", "g2"}, {"gpu", {{"type", "nvidia-l4"}, {"count", 2}}}},
          {{"machineType", "a2-highgpu-1g"}, {"spot", true}, {"storage", {{"bootDiskSize", 200}}}},
          {{"nodepools", {"existing-pool"}}}}},
        {"nodePoolAutoCreation", {{"enabled", true}}}}}};
  AutoscalerObjects objects;
  ASSERT_TRUE(add(compute_class, objects).ok());
  const std::vector<NodeClass> machines = launchable_machines(objects);
  EXPECT_EQ(shapes(machines), (Shapes{"g2-standard-24", "a2-highgpu-1g"}));
  const NodeClass& a2 = find(machines, "a2-highgpu-1g");
  EXPECT_EQ(a2.launched_by, "ComputeClass l4-first");
  EXPECT_EQ(*a2.label("cloud.google.com/compute-class"), "l4-first");
  EXPECT_EQ(*a2.label("cloud.google.com/gke-spot"), "true");
  // A 200 GiB boot disk: twice the filesystem GKE's 100 GB disk reports
  // (98831908Ki), less min(50%, 6 GiB + 35%, 100 GiB) of the disk (76 GiB)
  // and the kubelet's float32 10% of the filesystem.
  const int64_t filesystem = int64_t{2} * 98831908 * 1024;
  EXPECT_EQ(a2.ephemeral_storage->value_ceil(),
            filesystem - 76 * kGiB - static_cast<int64_t>(static_cast<double>(filesystem) * static_cast<double>(0.1F)));
}

TEST(AutoscalerPools, AWrongFieldIsNamedWithItsValue) {
  AutoscalerObjects objects;
  EXPECT_EQ(add(ec2_node_class({{"kubelet", {{"maxPods", "many"}}}}), objects).message(),
            "spec.kubelet.maxPods \"many\" must be a whole number");
  EXPECT_EQ(add(ec2_node_class({{"kubelet", {{"evictionHard", {{"nodefs.available", "ten%"}}}}}}), objects).message(),
            "spec.kubelet.evictionHard.nodefs.available \"ten%\" is not a percentage: must be a decimal number from 0 "
            "to 100 with at most 3 decimals");
  EXPECT_EQ(add(ec2_node_class({{"blockDeviceMappings", {{{"ebs", {{"volumeSize", "lots"}}}}}}}), objects).message(),
            "spec.blockDeviceMappings[0].ebs.volumeSize \"lots\" is not a quantity");
  json pool = l40s_pool();
  pool["spec"]["template"]["spec"]["taints"] = {{{"key", "x"}, {"effect", "Never"}}};
  EXPECT_EQ(add(pool, objects).message(),
            "spec.template.spec.taints[0].effect \"Never\" is not NoSchedule, PreferNoSchedule or NoExecute");
  json nameless = l40s_pool();
  nameless["metadata"].erase("name");
  EXPECT_EQ(add(nameless, objects).message(), "metadata.name is missing");
}

// Where a pod may go among a pool's machines: the pool's taints and labels
// as a node's; a zone or capacity type the pool leaves open, whatever the
// pod asks.
TEST(AutoscalerPools, APodGoesToAPoolAsItWouldToItsNodes) {
  AutoscalerObjects objects;
  ASSERT_TRUE(add(l40s_pool(), objects).ok());
  NodeInventory inventory;
  inventory.source = InventorySource::kFile;
  inventory.classes = launchable_machines(objects);
  const Policy& policy = default_policy();
  const auto candidates = [&](const PodFacts& pod) {
    Shapes out;
    for (const NodeClass* c : candidate_nodes(inventory, policy, pod, 1).nodes) out.push_back(c->shape);
    return out;
  };
  PodFacts pod = testing::pod_of({testing::gpu_container("server", 1, "1", "1Gi")});
  pod.tolerations_final = true;  // a Pod under review: no toleration is added
  EXPECT_EQ(candidates(pod), Shapes{}) << "the GPU taint is not tolerated";
  pod.tolerations = {{"nvidia.com/gpu", true, "", std::nullopt}};
  EXPECT_EQ(candidates(pod), (Shapes{"g6e.2xlarge", "g6e.4xlarge"}));
  pod.node_selector = {{"karpenter.sh/nodepool", "gpu-l40s"}, {"topology.kubernetes.io/zone", "us-east-1a"}};
  pod.has_affinity = true;
  pod.affinity_terms = {{{{"karpenter.sh/capacity-type", NodeRequirement::Op::kIn, {"spot"}, false}}}};
  EXPECT_EQ(candidates(pod), (Shapes{"g6e.2xlarge", "g6e.4xlarge"}));
  pod.node_selector = {{"team", "ml"}, {"node.kubernetes.io/instance-type", "g6e.2xlarge"}};
  EXPECT_EQ(candidates(pod), Shapes{"g6e.2xlarge"});
  // A label the pool neither sets nor leaves open: Karpenter launches nothing.
  pod.node_selector = {{"dedicated", "inference"}};
  EXPECT_EQ(candidates(pod), Shapes{});
  pod.node_selector = {{"kubernetes.io/arch", "arm64"}};
  EXPECT_EQ(candidates(pod), Shapes{});
}

// GKE taints a compute class's nodes with its name and gives the
// toleration to the pods that select the class by nodeSelector: only they
// go there.
TEST(AutoscalerPools, OnlyAPodThatSelectsAComputeClassGoesToItsMachines) {
  const json compute_class = {{"apiVersion", "cloud.google.com/v1"},
                              {"kind", "ComputeClass"},
                              {"metadata", {{"name", "l4"}}},
                              {"spec", {{"priorities", {{{"machineType", "g2-standard-8"}}}}}}};
  AutoscalerObjects objects;
  ASSERT_TRUE(add(compute_class, objects).ok());
  NodeInventory inventory;
  inventory.source = InventorySource::kFile;
  inventory.classes = launchable_machines(objects);
  ASSERT_EQ(inventory.classes.size(), 1U);
  EXPECT_EQ(inventory.classes[0].taints,
            (std::vector<Taint>{{"cloud.google.com/compute-class", "l4", TaintEffect::kNoSchedule}}));
  PodFacts pod = testing::pod_of({testing::gpu_container("server", 1, "1", "1Gi")});
  EXPECT_TRUE(candidate_nodes(inventory, default_policy(), pod, 1).nodes.empty());
  pod.node_selector = {{"cloud.google.com/compute-class", "l4"}};
  EXPECT_EQ(candidate_nodes(inventory, default_policy(), pod, 1).nodes.size(), 1U);
  pod.node_selector = {{"cloud.google.com/compute-class", "h100"}};
  EXPECT_TRUE(candidate_nodes(inventory, default_policy(), pod, 1).nodes.empty());
}

// The corpus fleet scaled to zero (tests/data/fleets/scaled-to-zero.yaml,
// which make corpus-check sizes the corpus against): every GPU machine of
// ../shared/corpus/nodes.yaml but the N1 with an attached T4, as the
// machines of pools, and no node.
TEST(AutoscalerPools, TheCorpusFleetScaledToZeroLaunchesItsMachines) {
  auto fleet = read_node_file(std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/fleets/scaled-to-zero.yaml");
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  EXPECT_EQ(fleet.value()->node_count, 0U);
  Shapes machines = shapes(fleet.value()->classes);
  std::sort(machines.begin(), machines.end());
  EXPECT_EQ(machines, (Shapes{"Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3", "Standard_ND96asr_v4",
                              "Standard_ND96isr_H100_v5", "Standard_NV36ads_A10_v5", "a2-highgpu-2g", "a2-ultragpu-1g",
                              "g2-standard-12", "g2-standard-96", "g6.12xlarge", "g6.xlarge", "g6e.2xlarge",
                              "p4de.24xlarge", "p5e.48xlarge"}));
  for (const NodeClass& machine : fleet.value()->classes) EXPECT_FALSE(machine.launched_by.empty()) << machine.shape;
}

}  // namespace
}  // namespace gpusizer::autoscaler_pools_test
