// Node caps: a binding floor is lowered to what a candidate node can give
// the pod (memory: allocatable less the reserve; cpu and ephemeral storage:
// the pod's GPU share of it), less what its other containers ask; which
// node it is capped to; when nothing is capped; and the decider applying it.
#include "gpusizer/sizing/rules/node_caps_rule.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/sizing/candidates.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_sizing.h"
#include "support/nodes_support.h"
#include "support/pod_facts_support.h"

namespace gpusizer::node_caps_rule_test {
namespace {

using testing::all;
using testing::gpu_container;
using testing::inventory_of;
using testing::pod_of;
using testing::profile;
using testing::q;

// A node class of `gpus` NVIDIA GPUs; "-" leaves a resource unreported.
NodeClass node(const std::string& shape, int64_t gpus, const char* cpu, const char* memory, const char* storage) {
  NodeClass c;
  c.shape = shape;
  c.names = {shape + "-0"};
  c.extended = {{"nvidia.com/gpu", gpus}};
  if (std::string(cpu) != "-") c.cpu = q(cpu);
  if (std::string(memory) != "-") c.memory = q(memory);
  if (std::string(storage) != "-") c.ephemeral_storage = q(storage);
  return c;
}

// GKE's g2-standard-8: one L4.
NodeClass l4() { return node("g2-standard-8", 1, "7910m", "27Gi", "95Gi"); }

// A pod of one trainer with `gpus` NVIDIA GPUs asking cpu 1, memory 1Gi.
PodFacts trainer(int64_t gpus, const char* cpu = "1", const char* memory = "1Gi") {
  PodFacts pod = pod_of({gpu_container("trainer", gpus, cpu, memory)});
  pod.app[0].gpu_resource = "nvidia.com/gpu";
  return pod;
}

// The app phase's binding floors ("" for none).
std::vector<Floor> floors(const char* cpu, const char* memory, const char* storage) {
  std::vector<Floor> out;
  if (*cpu) out.push_back({0, kCpu, q(cpu), "train profile"});
  if (*memory) out.push_back({0, kMemory, q(memory), "train profile"});
  if (*storage) out.push_back({0, kEphemeralStorage, q(storage), "train profile"});
  return out;
}

// Runs the rule as the decider does: the pod's candidates, then the caps.
RuleResult run(const PodFacts& pod, const NodeInventory& nodes, const std::vector<Floor>& binding,
               const Policy& policy = default_policy(), std::string_view stale = {}) {
  const PodPhases phases = pod_phases(pod);
  Candidates candidates = candidate_nodes(nodes, policy, pod, phases.gpus);
  candidates.stale = stale;
  RuleInput input{policy, pod, phases, profile(policy, "train"), "defaultProfile", true, &candidates};
  input.binding = [&](std::size_t phase, std::string_view resource) -> const Floor* {
    for (const Floor& floor : binding) {
      if (floor.phase == phase && floor.resource == resource) return &floor;
    }
    return nullptr;
  };
  return NodeCapsRule().evaluate(input);
}

// The ceiling of a resource, as text; "" when there is none.
std::string ceiling(const RuleResult& result, std::string_view resource) {
  for (const Ceiling& c : result.ceilings) {
    if (c.resource == resource) return c.amount.to_string();
  }
  return "";
}

std::vector<std::string> briefs(const RuleResult& result) {
  std::vector<std::string> out;
  for (const Finding& finding : result.findings) {
    EXPECT_EQ(finding.reason, DenialReason::kNodeCap);
    EXPECT_FALSE(finding.deny);
    out.push_back(finding.brief);
  }
  return out;
}

TEST(NodeCapsRule, MemoryIsCappedAtAllocatableLessTheReserve) {
  const NodeInventory nodes = inventory_of({l4()});  // 27Gi - 1Gi: 26Gi
  EXPECT_EQ(ceiling(run(trainer(1), nodes, floors("", "26Gi", "")), kMemory), "");
  EXPECT_EQ(ceiling(run(trainer(1), nodes, floors("", "26623Mi", "")), kMemory), "");
  const RuleResult over = run(trainer(1), nodes, floors("", "26625Mi", ""));
  EXPECT_EQ(ceiling(over, kMemory), "26Gi");
  ASSERT_EQ(over.ceilings.size(), 1u);
  EXPECT_EQ(over.ceilings[0].phase, 0u);
  EXPECT_EQ(over.ceilings[0].basis, "train profile, node cap");
  EXPECT_EQ(briefs(over), std::vector<std::string>{"node cap: memory 26625Mi (train profile) capped to 26Gi: "
                                                   "g2-standard-8 has 27Gi"});
  // Rounded down to a whole Gi: 27.5Gi - 1Gi gives 26Gi.
  const NodeInventory half = inventory_of({node("half", 1, "8", "28160Mi", "95Gi")});
  EXPECT_EQ(ceiling(run(trainer(1), half, floors("", "64Gi", "")), kMemory), "26Gi");
}

TEST(NodeCapsRule, CpuIsCappedAtAllocatableLessTheReserveInTenthsOfACore) {
  const NodeInventory nodes = inventory_of({l4()});  // 7910m - 500m, rounded down: 7400m
  EXPECT_EQ(ceiling(run(trainer(1), nodes, floors("7400m", "", "")), kCpu), "");
  EXPECT_EQ(ceiling(run(trainer(1), nodes, floors("7399m", "", "")), kCpu), "");
  const RuleResult over = run(trainer(1), nodes, floors("7401m", "", ""));
  EXPECT_EQ(ceiling(over, kCpu), "7400m");
  EXPECT_EQ(briefs(over), std::vector<std::string>{
                              "node cap: cpu 7401m (train profile) capped to 7400m: g2-standard-8 has cpu 7910m"});
}

TEST(NodeCapsRule, EphemeralStorageIsCappedAtAllocatableLessTheReserve) {
  const NodeInventory nodes = inventory_of({l4()});  // 95Gi - 5Gi: 90Gi
  EXPECT_EQ(ceiling(run(trainer(1), nodes, floors("", "", "90Gi")), kEphemeralStorage), "");
  EXPECT_EQ(ceiling(run(trainer(1), nodes, floors("", "", "92159Mi")), kEphemeralStorage), "");
  EXPECT_EQ(ceiling(run(trainer(1), nodes, floors("", "", "92161Mi")), kEphemeralStorage), "90Gi");
}

TEST(NodeCapsRule, CpuAndStorageAreThePodsShareOfTheNodesGpus) {
  // (96 - 0.5) cpu and (1000Gi - 5Gi) storage over the node's GPUs, rounded
  // down; memory is the node's whatever its GPUs.
  struct Want {
    int64_t node_gpus;
    int64_t pod_gpus;
    const char* cpu;
    const char* storage;
  };
  for (const Want& want :
       {Want{1, 1, "95500m", "995Gi"}, Want{2, 1, "47700m", "497Gi"}, Want{4, 1, "23800m", "248Gi"},
        Want{8, 1, "11900m", "124Gi"}, Want{8, 2, "23800m", "248Gi"}, Want{8, 8, "95500m", "995Gi"}}) {
    const NodeInventory nodes = inventory_of({node("n", want.node_gpus, "96", "100Gi", "1000Gi")});
    const RuleResult result = run(trainer(want.pod_gpus), nodes, floors("200", "2000Gi", "2000Gi"));
    const std::string where = std::to_string(want.pod_gpus) + " of " + std::to_string(want.node_gpus);
    EXPECT_EQ(ceiling(result, kCpu), want.cpu) << where;
    EXPECT_EQ(ceiling(result, kEphemeralStorage), want.storage) << where;
    EXPECT_EQ(ceiling(result, kMemory), "99Gi") << where;
  }
  const NodeInventory eight = inventory_of({node("p4d", 8, "96", "100Gi", "1000Gi")});
  const std::vector<std::string> said = briefs(run(trainer(1), eight, floors("200", "", "")));
  EXPECT_EQ(said, std::vector<std::string>{"node cap: cpu 200 (train profile) capped to 11900m: 1 of 8 GPUs of p4d "
                                           "(cpu 96)"});
}

TEST(NodeCapsRule, EightOneGpuPodsCappedOnAnEightGpuNodeFitItTogether) {
  // Odd allocatable, so that the shares do not divide evenly.
  const NodeClass odd = node("odd", 8, "190750m", "1000Gi", "1787Gi");
  const NodeInventory nodes = inventory_of({odd});
  const RuleResult result = run(trainer(1), nodes, floors("64", "", "300Gi"));
  const Quantity cpu = q(ceiling(result, kCpu));
  const Quantity storage = q(ceiling(result, kEphemeralStorage));
  EXPECT_EQ(cpu, q("23700m"));
  EXPECT_EQ(storage, q("222Gi"));
  EXPECT_LE(cpu.times(8), odd.cpu->minus(q("500m")));
  EXPECT_LE(storage.times(8), odd.ephemeral_storage->minus(q("5Gi")));
}

TEST(NodeCapsRule, WhatTheOtherAppContainersAskIsLeftToThem) {
  PodFacts pod = trainer(1);
  ContainerFacts sidecar = gpu_container("log-shipper", 0, "2", "4Gi", 1);
  sidecar.requests.add(kEphemeralStorage, q("10Gi"));
  pod.app.push_back(sidecar);
  const RuleResult result = run(pod, inventory_of({l4()}), floors("16", "64Gi", "300Gi"));
  EXPECT_EQ(ceiling(result, kMemory), "22Gi");
  EXPECT_EQ(ceiling(result, kCpu), "5400m");
  EXPECT_EQ(ceiling(result, kEphemeralStorage), "80Gi");
}

TEST(NodeCapsRule, APodAlreadyAskingForTheFloorIsNotCapped) {
  // The trainer asks for the memory floor as written: no one raises it, so
  // no cap lowers it (node fit says it does not fit). cpu is still capped.
  const RuleResult result = run(trainer(1, "1", "64Gi"), inventory_of({l4()}), floors("16", "64Gi", ""));
  EXPECT_EQ(ceiling(result, kMemory), "");
  EXPECT_EQ(ceiling(result, kCpu), "7400m");
  ASSERT_EQ(result.ceilings.size(), 1u);
}

TEST(NodeCapsRule, FloorsTheNodeHoldsAreNotCapped) {
  const RuleResult result = run(trainer(1), inventory_of({l4()}), floors("4", "16Gi", "50Gi"));
  EXPECT_TRUE(result.ceilings.empty());
  EXPECT_TRUE(result.findings.empty());
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->floor, "-");
  EXPECT_EQ(result.row->detail,
            "the floors fit g2-standard-8 (1 nvidia.com/gpu, cpu 7910m, memory 27Gi, ephemeral-storage 95Gi)");
}

TEST(NodeCapsRule, AResourceTheNodeDoesNotReportIsNoneAsTheSchedulerCountsIt) {
  // The scheduler reads a missing allocatable as 0: nothing can be given.
  const NodeInventory nodes = inventory_of({node("bare", 1, "-", "27Gi", "-")});
  const RuleResult result = run(trainer(1), nodes, floors("16", "64Gi", "300Gi"));
  EXPECT_EQ(ceiling(result, kMemory), "26Gi");
  EXPECT_EQ(ceiling(result, kCpu), "0");
  EXPECT_EQ(ceiling(result, kEphemeralStorage), "0");
  std::string said;
  for (const std::string& brief : briefs(result)) said += brief + "\n";
  EXPECT_NE(said.find("capped to 0: bare has cpu none (unreported)"), std::string::npos) << said;
}

TEST(NodeCapsRule, TheExplainRowNamesTheNodeAndTheReserve) {
  const RuleResult result = run(trainer(1), inventory_of({l4()}), floors("16", "64Gi", "300Gi"));
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->rule, RuleKind::kNodeCaps);
  EXPECT_EQ(result.row->floor, "memory 26Gi, cpu 7400m, ephemeral-storage 90Gi");
  EXPECT_EQ(result.row->detail,
            "capped to g2-standard-8 (1 nvidia.com/gpu, cpu 7910m, memory 27Gi, ephemeral-storage 95Gi); reserved for "
            "the node's DaemonSets: cpu 500m, memory 1Gi, ephemeral-storage 5Gi");
  EXPECT_EQ(briefs(result).size(), 3u);
}

TEST(NodeCapsRule, NoCandidateNodeCapsNothingAndSaysWhy) {
  const RuleResult result = run(trainer(8), inventory_of({l4()}), floors("64", "384Gi", "300Gi"));
  EXPECT_TRUE(result.ceilings.empty());
  EXPECT_TRUE(result.findings.empty());
  ASSERT_TRUE(result.row);
  EXPECT_EQ(result.row->detail,
            "no candidate node (1 node shape: 1 have fewer than 8 nvidia.com/gpu): nothing is capped");
}

TEST(NodeCapsRule, NoNodesKnownCapsNothing) {
  const RuleResult none = run(trainer(1), *NodeInventory::none(), floors("16", "64Gi", "300Gi"));
  EXPECT_TRUE(none.ceilings.empty());
  EXPECT_TRUE(none.findings.empty());
  ASSERT_TRUE(none.row);
  EXPECT_EQ(none.row->detail, "no nodes known (no node inventory, no nodeFit.pools): nothing is capped");

  // No candidates given at all.
  const PodFacts pod = trainer(1);
  const PodPhases phases = pod_phases(pod);
  RuleInput input{default_policy(), pod, phases, profile(default_policy(), "train"), "defaultProfile", true};
  const RuleResult unknown = NodeCapsRule().evaluate(input);
  EXPECT_TRUE(unknown.ceilings.empty());
  ASSERT_TRUE(unknown.row);
  EXPECT_EQ(unknown.row->detail, "no nodes known: nothing is capped");
}

TEST(NodeCapsRule, StaleNodesAreSaidInAWarning) {
  const std::string stale = "the node watch has lost the API server since 12:00:00";
  const RuleResult capped = run(trainer(1), inventory_of({l4()}), floors("", "64Gi", ""), default_policy(), stale);
  EXPECT_EQ(ceiling(capped, kMemory), "26Gi");
  ASSERT_EQ(capped.findings.size(), 2u);
  EXPECT_EQ(capped.findings[0].brief, "node caps: " + stale);
  EXPECT_EQ(capped.findings[0].reason, DenialReason::kNodeCap);
  EXPECT_FALSE(capped.findings[0].deny);
  // Said even when nothing is known to cap to.
  const RuleResult none = run(trainer(1), *NodeInventory::none(), floors("", "64Gi", ""), default_policy(), stale);
  EXPECT_EQ(briefs(none), std::vector<std::string>{"node caps: " + stale});
}

TEST(NodeCapsRule, TheNodeChosenHoldsThePodAsWrittenAndKeepsMostMemoryThenCpu) {
  // The pod asks cpu 50 as written. "roomy" has the most memory but only 40
  // cpus: the pod could not run there, so it is not capped to it.
  const NodeClass roomy = node("roomy", 1, "40", "400Gi", "1Ti");
  const NodeClass small = node("small", 1, "100", "200Gi", "1Ti");
  const NodeClass mid = node("mid", 1, "60", "300Gi", "1Ti");
  const NodeClass mid_more_cpu = node("mid-more-cpu", 1, "62", "300Gi", "1Ti");
  const PodFacts pod = trainer(1, "50", "1Gi");
  const std::vector<Floor> binding = floors("64", "500Gi", "");
  const RuleResult memory_first = run(pod, inventory_of({roomy, small, mid}), binding);
  EXPECT_EQ(ceiling(memory_first, kMemory), "299Gi");
  EXPECT_EQ(ceiling(memory_first, kCpu), "59500m");
  // Equal memory: the one keeping more cpu.
  const RuleResult then_cpu = run(pod, inventory_of({roomy, mid, mid_more_cpu, small}), binding);
  EXPECT_EQ(ceiling(then_cpu, kCpu), "61500m");
  EXPECT_NE(then_cpu.row->detail.find("capped to mid-more-cpu ("), std::string::npos) << then_cpu.row->detail;
}

// The table's storage is a disk reservation: raising it never moves a pod
// off a node its memory and cpu fit. A 2-GPU train pod on a fleet of GKE's
// a2-highgpu-2g (85Gi of disk) and p4de.24xlarge: capped to the a2's disk,
// not sent to the 8-GPU machine (kubeflow distributed-workloads' TrainJob).
TEST(NodeCapsRule, StorageIsCappedToTheLeastDiskOfTheNodesThatHoldMemoryAndCpu) {
  const NodeClass a2 = node("a2-highgpu-2g", 2, "23890m", "148Gi", "85Gi");
  const NodeClass p4de = node("p4de.24xlarge", 8, "95690m", "1100Gi", "7000Gi");
  const PodFacts pod = trainer(2, "8", "40Gi");
  const RuleResult result = run(pod, inventory_of({p4de, a2}), floors("16", "96Gi", "300Gi"));
  EXPECT_EQ(ceiling(result, kMemory), "");
  EXPECT_EQ(ceiling(result, kCpu), "");
  EXPECT_EQ(ceiling(result, kEphemeralStorage), "80Gi");
  EXPECT_EQ(briefs(result), std::vector<std::string>{"node cap: ephemeral-storage 300Gi (train profile) capped to "
                                                     "80Gi: a2-highgpu-2g has ephemeral-storage 85Gi"});
  EXPECT_NE(result.row->detail.find("memory and cpu fit p4de.24xlarge ("), std::string::npos) << result.row->detail;
  EXPECT_NE(result.row->detail.find("ephemeral-storage capped to a2-highgpu-2g ("), std::string::npos)
      << result.row->detail;
  // A node its memory does not fit does not cap its storage: a 1-GPU pod
  // raised to 64Gi leaves the 27Gi L4 node, so its storage is the larger
  // node's share.
  const NodeClass a100 = node("a2-ultragpu-1g", 1, "11900m", "148Gi", "350Gi");
  const RuleResult kept = run(trainer(1), inventory_of({l4(), a100}), floors("8", "64Gi", "300Gi"));
  EXPECT_EQ(ceiling(kept, kEphemeralStorage), "") << all(briefs(kept));
  // A shape whose disk is not known (a Karpenter pool of instance-store
  // machines) is no least disk: it does not cap storage to nothing.
  const NodeClass p5e = node("p5e.48xlarge", 8, "191450m", "1950Gi", "-");
  const RuleResult unknown = run(trainer(8), inventory_of({p4de, p5e}), floors("64", "384Gi", "300Gi"));
  EXPECT_EQ(ceiling(unknown, kEphemeralStorage), "") << all(briefs(unknown));
}

// The decider: a 1-GPU train pod (table: cpu 16, memory 64Gi, storage
// 300Gi) on a cluster of one 1-GPU L4 node.
std::shared_ptr<const NodeInventory> one_l4_node() {
  return testing::one_node_inventory("g2-standard-8", 1, "7910m", "27Gi", "95Gi");
}

TEST(NodeCapsDecision, AOneGpuTrainPodIsSizedToWhatItsNodeHolds) {
  const auto nodes = one_l4_node();
  const PodFacts pod = trainer(1);
  const PodSizing sizing = size_pod(default_policy(), pod, pod_phases(pod), {}, {true, true, false, nodes.get()});
  ASSERT_FALSE(sizing.fixes.empty());
  std::vector<std::string> requests;
  for (const PodEdit& edit : sizing.fixes[0].edits) {
    const auto* set = std::get_if<SetResource>(&edit);
    if (set && !set->limit) requests.push_back(std::string(set->resource) + " " + set->value);
  }
  EXPECT_EQ(requests, (std::vector<std::string>{"cpu 7400m", "memory 26Gi", "ephemeral-storage 90Gi"}));
  EXPECT_EQ(sizing.capped, (std::vector<std::string_view>{kMemory, kCpu, kEphemeralStorage}));
  EXPECT_EQ(sizing.nodes_holding, std::optional<std::size_t>(1));
  const std::vector<std::string>& warnings = sizing.report.warnings;
  for (const char* line : {"node cap: memory 64Gi (train profile) capped to 26Gi: g2-standard-8 has 27Gi",
                           "node cap: cpu 16 (train profile) capped to 7400m: g2-standard-8 has cpu 7910m",
                           "node cap: ephemeral-storage 300Gi (train profile) capped to 90Gi: g2-standard-8 has "
                           "ephemeral-storage 95Gi"}) {
    EXPECT_NE(std::find(warnings.begin(), warnings.end(), line), warnings.end()) << line << all(warnings);
  }
}

TEST(NodeCapsDecision, WithoutNodesThePodGetsTheTable) {
  const PodFacts pod = trainer(1);
  const PodSizing sizing = size_pod(default_policy(), pod, pod_phases(pod), {}, {true, true, false, nullptr});
  EXPECT_TRUE(sizing.capped.empty());
  EXPECT_EQ(sizing.nodes_holding, std::nullopt);
  ASSERT_FALSE(sizing.fixes.empty());
  const auto* cpu = std::get_if<SetResource>(&sizing.fixes[0].edits[0]);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->value, "16");
}

TEST(NodeCapsDecision, EnforceModeDeniesAskingForTheCappedMemory) {
  Policy policy = default_policy();
  policy.deny_from_gpus = 1;  // so that a 1-GPU pod's memory is denied, not warned about
  const auto nodes = one_l4_node();
  const PodFacts pod = pod_of({gpu_container("trainer", 1, "1", "1Gi")}, Mode::kEnforce);
  const PodSizing sizing = size_pod(policy, pod, pod_phases(pod), {}, {true, false, false, nodes.get()});
  ASSERT_EQ(std::count(sizing.report.denial_reasons.begin(), sizing.report.denial_reasons.end(), DenialReason::kMemory),
            1)
      << all(sizing.report.denials);
  const auto memory =
      std::find(sizing.report.denial_reasons.begin(), sizing.report.denial_reasons.end(), DenialReason::kMemory) -
      sizing.report.denial_reasons.begin();
  const std::string& denial = sizing.report.denials[static_cast<std::size_t>(memory)];
  EXPECT_NE(denial.find("need memory >= 26Gi (train profile, node cap)"), std::string::npos) << denial;
  EXPECT_NE(denial.find("set memory to 26Gi and cpu to 7400m"), std::string::npos) << denial;
}

}  // namespace
}  // namespace gpusizer::node_caps_rule_test
