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

namespace gpusizer::node_caps_sharing_test {
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

// A pod whose GPU init container "loader" (initContainers[1]) starts after
// a sidecar "proxy" of 8Gi (initContainers[proxy_index]).
PodFacts loader_and_proxy(int proxy_index) {
  PodFacts pod = pod_of({});
  ContainerFacts loader = gpu_container("loader", 1, "1", "1Gi");
  loader.path = {"spec", "initContainers", "1"};
  loader.init_index = 1;
  pod.init.push_back(loader);
  ContainerFacts proxy = gpu_container("proxy", 0, "100m", "8Gi");
  proxy.path = {"spec", "initContainers", std::to_string(proxy_index)};
  proxy.init_index = proxy_index;
  proxy.sidecar = true;
  pod.app.push_back(proxy);
  return pod;
}

TEST(NodeCapsSharing, AnInitContainersCapLeavesRoomForTheSidecarsStartedBeforeIt) {
  // 27Gi less the 1Gi reserve, less the sidecar's 8Gi beside it.
  const auto nodes = one_node(1, "8", "27Gi", "100Gi");
  const PodFacts before = loader_and_proxy(0);
  const auto memory = requests_set(size_on(before, *nodes), kMemory);
  ASSERT_EQ(memory.count("loader"), 1u);
  EXPECT_EQ(memory.at("loader").to_string(), "18Gi");
  // A sidecar listed after it starts after it: the whole 26Gi.
  const PodFacts after = loader_and_proxy(2);
  EXPECT_EQ(requests_set(size_on(after, *nodes), kMemory).at("loader").to_string(), "26Gi");
}

TEST(NodeCapsSharing, AGpuSidecarBesideAnInitContainerCountsAsTheAppPhaseSizesIt) {
  // "side" (1 GPU, initContainers[0]) is raised with the app phase to the
  // table's 64Gi; "warmup" (2 GPUs, initContainers[1]) runs beside it, so
  // it may have 127Gi - 64Gi, not 127Gi - the 1Gi side asked.
  const auto nodes = one_node(4, "64", "128Gi", "1000Gi");
  PodFacts pod = pod_of({});
  ContainerFacts side = gpu_container("side", 1, "1", "1Gi");
  side.path = {"spec", "initContainers", "0"};
  side.init_index = 0;
  side.sidecar = true;
  pod.app.push_back(side);
  ContainerFacts warmup = gpu_container("warmup", 2, "1", "1Gi");
  warmup.path = {"spec", "initContainers", "1"};
  warmup.init_index = 1;
  pod.init.push_back(warmup);
  const PodSizing sizing = size_on(pod, *nodes);
  const auto memory = requests_set(sizing, kMemory);
  ASSERT_EQ(memory.size(), 2u) << all(sizing.report.warnings);
  EXPECT_EQ(memory.at("side").to_string(), "64Gi");
  EXPECT_EQ(memory.at("warmup").to_string(), "63Gi");
}

TEST(NodeCapsSharing, AFloorTheNodeHoldsIsSharedWithinItWhenOneHolderAsksOverItsShare) {
  // The 2-GPU floor (96Gi) fits the node's 199Gi, but rank-a asks 170Gi:
  // rank-b may have the 28Gi left, not its 48Gi share (218Gi in all).
  const auto nodes = one_node(2, "64", "200Gi", "1000Gi");
  const PodFacts pod = pod_of({gpu_container("rank-a", 1, "1", "170Gi", 0), gpu_container("rank-b", 1, "1", "1Gi", 1)});
  const PodSizing sizing = size_on(pod, *nodes);
  const auto memory = requests_set(sizing, kMemory);
  ASSERT_EQ(memory.size(), 1u) << all(sizing.report.warnings);
  EXPECT_EQ(memory.at("rank-b").to_string(), "29Gi");
  const auto& warnings = sizing.report.warnings;
  EXPECT_NE(std::find(warnings.begin(), warnings.end(),
                      "node cap: memory raised to at most 199Gi in all: gpu-box has 200Gi, and some containers ask "
                      "over their share"),
            warnings.end())
      << all(warnings);
}

// The pod as the patch leaves it: each container's requests and limits of
// cpu and memory set to what the sizing raised them to.
PodFacts as_patched(const PodFacts& pod, const PodSizing& sizing) {
  const auto cpu = requests_set(sizing, kCpu);
  const auto memory = requests_set(sizing, kMemory);
  std::vector<ContainerFacts> app;
  for (std::size_t i = 0; i < pod.app.size(); ++i) {
    const ContainerFacts& c = pod.app[i];
    const auto value = [&](const std::map<std::string, Quantity>& set, std::string_view resource) {
      const auto found = set.find(c.name);
      return found != set.end() ? found->second.to_string() : c.effective_request(resource)->to_string();
    };
    app.push_back(gpu_container(c.name, c.gpus, value(cpu, kCpu).c_str(), value(memory, kMemory).c_str(), i));
  }
  return pod_of(app);
}

TEST(NodeCapsSharing, DecidingTheRaisedPodAgainRaisesAndDeniesNothing) {
  // Four 1-GPU ranks share the 17Gi a 4-GPU, 18Gi node gives: the room
  // they leave (about 1.4Gi) is shared out to the MiB, so the validating
  // pass, which sees the raised pod, finds no one short.
  const auto nodes = one_node(4, "64", "18Gi", "1000Gi");
  const PodFacts pod = pod_of({gpu_container("r0", 1, "1", "8059Mi", 0), gpu_container("r1", 1, "1", "3024Mi", 1),
                               gpu_container("r2", 1, "1", "3609Mi", 2), gpu_container("r3", 1, "1", "905Mi", 3)});
  const PodSizing first = size_on(pod, *nodes);
  ASSERT_FALSE(requests_set(first, kMemory).empty());
  PodFacts raised = as_patched(pod, first);
  const PodSizing again = size_on(raised, *nodes);
  EXPECT_TRUE(requests_set(again, kMemory).empty());
  raised.mode = Mode::kEnforce;
  const PodSizing enforced = size_on(raised, *nodes);
  const auto& reasons = enforced.report.denial_reasons;
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), DenialReason::kMemory), 0) << all(enforced.report.denials);
  // Together they ask no more than the node gives.
  Quantity total;
  for (const ContainerFacts& c : raised.app) total = total.plus(*c.effective_request(kMemory));
  EXPECT_LE(total, q("17Gi")) << total.to_string();
}

TEST(NodeCapsSharing, ThePoolsStandInWhenNoNodeTheClusterHasNowMayRunThePod) {
  // The cluster has 1-GPU nodes only; the autoscaler adds 8-GPU ones (a
  // pool at zero nodes). An 8-GPU pod is capped to the pool's shape, not
  // left uncapped for want of a node.
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>().pools = {
      NodePool{"h100", {}, "", {NodeShape{"a3-highgpu-8g", 8, q("200"), q("300Gi"), q("5Ti")}}}};
  policy.rule_settings.edit<NodeFitPolicy>().pool_nodes = pool_inventory(policy);
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

TEST(NodeCapsSharing, PoolsStandingInAreNeverAReasonToDeny) {
  // The cluster's one 8-GPU node carries an admin's maintenance taint; the
  // pools know only 4-GPU nodes. The pod would run once the taint is
  // lifted: node fit warns, even with action deny. (A cordon would not
  // do: a cordoned node stays a candidate.)
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>().action = CheckAction::kDeny;
  policy.rule_settings.edit<NodeFitPolicy>().pools = {
      NodePool{"small", {}, "", {NodeShape{"four-gpus", 4, q("96"), q("700Gi"), q("2Ti")}}}};
  policy.rule_settings.edit<NodeFitPolicy>().pool_nodes = pool_inventory(policy);
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  NodeInfo info;
  info.name = "dgx-0";
  info.cpu = q("200");
  info.memory = q("1900Gi");
  info.ephemeral_storage = q("20Ti");
  info.extended = {{"nvidia.com/gpu", 8}};
  info.taints = {Taint{"maintenance", "true", TaintEffect::kNoSchedule}};
  builder.upsert(info);
  const auto nodes = builder.build();
  const PodFacts pod = pod_of({gpu_container("trainer", 8, "64", "384Gi")}, Mode::kEnforce);
  const PodSizing sizing = size_pod(policy, pod, pod_phases(pod), {}, {true, false, false, nodes.get()});
  const auto& reasons = sizing.report.denial_reasons;
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), DenialReason::kNodeFit), 0) << all(sizing.report.denials);
  const std::string warnings = all(sizing.report.warnings);
  EXPECT_NE(warnings.find("node fit:"), std::string::npos) << warnings;
}

}  // namespace
}  // namespace gpusizer::node_caps_sharing_test
