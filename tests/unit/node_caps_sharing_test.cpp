// A capped floor shared by several containers: together they are given at
// most the cap, whatever some of them already ask; a cap of nothing sets
// nothing; an init container's cap leaves room for the sidecars beside it;
// the policy's pools stand in when no known node may run the pod.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_sizing.h"
#include "support/nodes_support.h"
#include "support/pod_facts_support.h"

namespace gpusizer {
namespace {

using testing::all;
using testing::gpu_container;
using testing::pod_of;
using testing::q;

// A cluster of one node of `gpus` NVIDIA GPUs.
std::shared_ptr<const NodeInventory> one_node(int64_t gpus, const char* cpu, const char* memory, const char* storage) {
  return testing::one_node_inventory("gpu-box", gpus, cpu, memory, storage);
}

// The request each container is set to, by container, of one resource.
std::map<std::string, Quantity> requests_set(const PodSizing& sizing, std::string_view resource) {
  std::map<std::string, Quantity> out;
  for (const Fix& fix : sizing.fixes) {
    for (const PodEdit& edit : fix.edits) {
      const auto* set = std::get_if<SetResource>(&edit);
      if (set && !set->limit && set->resource == resource) out[set->container->name] = q(set->value);
    }
  }
  return out;
}

PodSizing size_on(const PodFacts& pod, const NodeInventory& nodes) {
  return size_pod(default_policy(), pod, pod_phases(pod), {}, {true, true, false, &nodes});
}

TEST(NodeCapsSharing, TwoHoldersAreGivenTheCapBetweenThem) {
  // Train table for 2 GPUs: memory 128Gi; the node gives 61Gi - 1Gi reserve.
  const auto nodes = one_node(2, "64", "61Gi", "1000Gi");
  const PodFacts pod = pod_of({gpu_container("rank-a", 1, "1", "1Gi", 0), gpu_container("rank-b", 1, "1", "1Gi", 1)});
  const PodSizing sizing = size_on(pod, *nodes);
  const auto memory = requests_set(sizing, kMemory);
  ASSERT_EQ(memory.size(), 2u) << all(sizing.report.warnings);
  EXPECT_EQ(memory.at("rank-a").to_string(), "30Gi");
  EXPECT_EQ(memory.at("rank-b").to_string(), "30Gi");
}

TEST(NodeCapsSharing, WhatOneHolderAlreadyAsksLeavesLessForTheOther) {
  // rank-a asks 50Gi of the 60Gi the node gives: rank-b may have the
  // 9Gi left beside its own 1Gi, not its 30Gi share.
  const auto nodes = one_node(2, "64", "61Gi", "1000Gi");
  const PodFacts pod = pod_of({gpu_container("rank-a", 1, "1", "50Gi", 0), gpu_container("rank-b", 1, "1", "1Gi", 1)});
  const PodSizing sizing = size_on(pod, *nodes);
  const auto memory = requests_set(sizing, kMemory);
  ASSERT_EQ(memory.size(), 1u) << all(sizing.report.warnings);
  EXPECT_EQ(memory.at("rank-b").to_string(), "10Gi");
}

TEST(NodeCapsSharing, HoldersAlreadyAskingTheCapAreNotRaised) {
  const auto nodes = one_node(2, "64", "61Gi", "1000Gi");
  const PodFacts pod = pod_of({gpu_container("rank-a", 1, "1", "40Gi", 0), gpu_container("rank-b", 1, "1", "20Gi", 1)});
  const PodSizing sizing = size_on(pod, *nodes);
  EXPECT_TRUE(requests_set(sizing, kMemory).empty());
}

TEST(NodeCapsSharing, ACapOfNothingSetsNothing) {
  // The node's memory is all reserve: the floor is capped to 0, and a
  // container that asks no memory is not given a request of 0.
  const auto nodes = one_node(1, "8", "1Gi", "100Gi");
  PodFacts pod = pod_of({gpu_container("trainer", 1, "1", "1Gi")});
  pod.app[0].requests = testing::quantities({{kCpu, "1"}});
  pod.app[0].limits = pod.app[0].requests;
  const PodSizing sizing = size_on(pod, *nodes);
  EXPECT_TRUE(requests_set(sizing, kMemory).empty());
  for (const Fix& fix : sizing.fixes) {
    for (const PodEdit& edit : fix.edits) {
      const auto* set = std::get_if<SetResource>(&edit);
      EXPECT_FALSE(set && set->resource == kMemory) << set->value;
    }
  }
}

TEST(NodeCapsSharing, AnInitContainersCapLeavesRoomForTheSidecarsBesideIt) {
  // Only the init container holds the GPU; a sidecar of 8Gi runs beside
  // it, so it may have 26Gi - 8Gi of a 27Gi node.
  const auto nodes = one_node(1, "8", "27Gi", "100Gi");
  PodFacts pod = pod_of({});
  ContainerFacts loader = gpu_container("loader", 1, "1", "1Gi");
  loader.path = {"spec", "initContainers", "1"};
  pod.init.push_back(loader);
  ContainerFacts proxy = gpu_container("proxy", 0, "100m", "8Gi");
  proxy.path = {"spec", "initContainers", "0"};
  proxy.sidecar = true;
  pod.app.push_back(proxy);
  const PodSizing sizing = size_on(pod, *nodes);
  const auto memory = requests_set(sizing, kMemory);
  ASSERT_EQ(memory.count("loader"), 1u) << all(sizing.report.warnings);
  EXPECT_EQ(memory.at("loader").to_string(), "18Gi");
}

TEST(NodeCapsSharing, ThePoolsStandInWhenNoNodeTheClusterHasNowMayRunThePod) {
  // The cluster has 1-GPU nodes only; the autoscaler adds 8-GPU ones (a
  // pool at zero nodes). An 8-GPU pod is capped to the pool's shape, not
  // left uncapped for want of a node.
  Policy policy = default_policy();
  policy.node_fit.pools = {NodePool{"h100", {}, "", {NodeShape{"a3-highgpu-8g", 8, q("200"), q("300Gi"), q("5Ti")}}}};
  policy.pool_nodes = pool_inventory(policy);
  const auto nodes = one_node(1, "8", "27Gi", "100Gi");
  const PodFacts pod = pod_of({gpu_container("trainer", 8, "1", "1Gi")});
  const PodPhases phases = pod_phases(pod);
  const PodSizing sizing = size_pod(policy, pod, phases, {}, {true, true, true, nodes.get()});
  const auto memory = requests_set(sizing, kMemory);
  ASSERT_EQ(memory.count("trainer"), 1u) << all(sizing.report.warnings);
  // Train table for 8 GPUs: memory 384Gi; the shape gives 300Gi - 1Gi.
  EXPECT_EQ(memory.at("trainer").to_string(), "299Gi");
  const auto row = std::find_if(sizing.explanation.rules.begin(), sizing.explanation.rules.end(),
                                [](const RuleRow& r) { return r.rule == RuleKind::kNodeCaps; });
  ASSERT_NE(row, sizing.explanation.rules.end());
  EXPECT_NE(row->detail.find("capped to a3-highgpu-8g"), std::string::npos) << row->detail;
  EXPECT_NE(row->detail.find("of nodeFit.pools, as none of nodes.yaml may run it now: "), std::string::npos)
      << row->detail;
}

}  // namespace
}  // namespace gpusizer
