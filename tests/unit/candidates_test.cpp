// Candidate nodes: the node classes a pod could run on, as the scheduler's
// filters find them (nodeSelector, required node affinity,
// spec.nodeName, taints and tolerations, the GPU count of the pod's GPU
// resource; cordons and the taints of node conditions left aside), why
// none is, and the pod's pool when the policy's pools stand in for nodes.
#include "gpusizer/sizing/candidates.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/nodes_support.h"
#include "support/pod_facts_support.h"

namespace gpusizer::candidates_test {
namespace {

using testing::inventory_of;
using testing::q;
using Labels = std::vector<std::pair<std::string, std::string>>;
using Op = NodeRequirement::Op;

// A class of nodes named `names` (the first is its shape), with `gpus` of
// `resource`.
NodeClass node_class(std::vector<std::string> names, Labels labels = {}, int64_t gpus = 8,
                     const std::string& resource = "nvidia.com/gpu") {
  NodeClass c;
  c.shape = names.front();
  c.names = std::move(names);
  // As InventoryBuilder keeps them: sorted by key, the hostname flag set.
  c.labels = std::move(labels);
  std::sort(c.labels.begin(), c.labels.end());
  c.hostname_is_name = !c.label(kHostnameLabel);
  c.cpu = q("94");
  c.memory = q("1300Gi");
  if (gpus > 0) c.extended = {{resource, gpus}};
  return c;
}

// A pod of one container asking for `gpus` of `resource`.
PodFacts gpu_pod(int64_t gpus = 1, const std::string& resource = "nvidia.com/gpu") {
  PodFacts pod = testing::pod_of({testing::gpu_container("trainer", gpus, "1", "1Gi")});
  pod.app[0].gpu_resource = resource;
  return pod;
}

NodeRequirement requirement(const std::string& key, Op op, std::vector<std::string> values = {}) {
  return {key, op, std::move(values), false};
}

NodeRequirement name_field(Op op, std::vector<std::string> values) {
  return {"metadata.name", op, std::move(values), true};
}

Taint taint(const std::string& key, const std::string& value, TaintEffect effect) { return {key, value, effect}; }

// Whether a 1-GPU pod whose required node affinity is `terms` may run on
// `node`, as production decides it: candidate_nodes, through Placement.
// Terms are ORed, a term's requirements ANDed; a term without requirements
// matches no node; no terms at all (no required affinity), any node.
bool matches_affinity(std::vector<NodeSelectorTerm> terms, const NodeClass& node) {
  PodFacts pod = gpu_pod();
  pod.has_affinity = true;
  pod.affinity_terms = std::move(terms);
  return !candidate_nodes(inventory_of({node}), default_policy(), pod, 1).nodes.empty();
}

// The same for one requirement.
bool matches(const NodeRequirement& requirement, const NodeClass& node) {
  return matches_affinity({NodeSelectorTerm{{requirement}}}, node);
}

Toleration toleration(const std::string& key, bool exists, const std::string& value = "",
                      std::optional<std::string> effect = std::nullopt) {
  return {key, exists, value, std::move(effect)};
}

std::vector<std::string> shapes(const std::vector<const NodeClass*>& classes) {
  std::vector<std::string> out;
  for (const NodeClass* c : classes) out.push_back(c->shape);
  return out;
}

using Shapes = std::vector<std::string>;

TEST(Candidates, InMatchesOnlyListedValues) {
  const NodeRequirement in = requirement("zone", Op::kIn, {"a", "b"});
  EXPECT_TRUE(matches(in, node_class({"n"}, {{"zone", "b"}})));
  EXPECT_FALSE(matches(in, node_class({"n"}, {{"zone", "c"}})));
  EXPECT_FALSE(matches(in, node_class({"n"})));
}

TEST(Candidates, NotInMatchesNodesWithoutTheLabel) {
  const NodeRequirement not_in = requirement("zone", Op::kNotIn, {"a"});
  EXPECT_FALSE(matches(not_in, node_class({"n"}, {{"zone", "a"}})));
  EXPECT_TRUE(matches(not_in, node_class({"n"}, {{"zone", "b"}})));
  EXPECT_TRUE(matches(not_in, node_class({"n"})));
}

TEST(Candidates, ExistsAndDoesNotExistLookOnlyAtTheKey) {
  const NodeClass labelled = node_class({"n"}, {{"gpu", ""}});
  const NodeClass bare = node_class({"n"});
  EXPECT_TRUE(matches(requirement("gpu", Op::kExists), labelled));
  EXPECT_FALSE(matches(requirement("gpu", Op::kExists), bare));
  EXPECT_FALSE(matches(requirement("gpu", Op::kDoesNotExist), labelled));
  EXPECT_TRUE(matches(requirement("gpu", Op::kDoesNotExist), bare));
}

TEST(Candidates, GtAndLtCompareWholeNumbers) {
  const NodeClass eight = node_class({"n"}, {{"gpu.count", "8"}, {"offset", "-3"}});
  EXPECT_TRUE(matches(requirement("gpu.count", Op::kGt, {"4"}), eight));
  EXPECT_FALSE(matches(requirement("gpu.count", Op::kGt, {"8"}), eight));
  EXPECT_TRUE(matches(requirement("gpu.count", Op::kLt, {"9"}), eight));
  EXPECT_FALSE(matches(requirement("gpu.count", Op::kLt, {"8"}), eight));
  EXPECT_TRUE(matches(requirement("offset", Op::kLt, {"0"}), eight));
  EXPECT_TRUE(matches(requirement("offset", Op::kGt, {"-4"}), eight));
}

TEST(Candidates, GtAndLtWithNonNumbersMatchNothing) {
  const NodeClass node = node_class({"n"}, {{"gpu.count", "eight"}, {"half", "1.5"}, {"eight", "8"}});
  for (Op op : {Op::kGt, Op::kLt}) {
    EXPECT_FALSE(matches(requirement("gpu.count", op, {"4"}), node));
    EXPECT_FALSE(matches(requirement("half", op, {"1"}), node));
    EXPECT_FALSE(matches(requirement("eight", op, {"four"}), node));
    EXPECT_FALSE(matches(requirement("eight", op, {"4", "9"}), node)) << "one value only";
    EXPECT_FALSE(matches(requirement("eight", op, {}), node));
    EXPECT_FALSE(matches(requirement("missing", op, {"4"}), node));
  }
}

// Gt and Lt read values as int64 (strconv.ParseInt in the scheduler), well
// past nine digits.
TEST(Candidates, GtAndLtReadAnyInt64AsTheSchedulerDoes) {
  const NodeClass node = node_class({"n"}, {{"bytes", "10000000000"}});
  EXPECT_TRUE(matches(requirement("bytes", Op::kGt, {"5"}), node));
  EXPECT_TRUE(matches(requirement("bytes", Op::kLt, {"20000000000"}), node));
}

TEST(Candidates, TermsAreOredAndTheirRequirementsAnded) {
  const NodeClass node = node_class({"n"}, {{"zone", "a"}, {"tier", "gpu"}});
  const NodeSelectorTerm both{{requirement("zone", Op::kIn, {"a"}), requirement("tier", Op::kIn, {"gpu"})}};
  const NodeSelectorTerm one_fails{{requirement("zone", Op::kIn, {"a"}), requirement("tier", Op::kIn, {"cpu"})}};
  const NodeSelectorTerm other{{requirement("zone", Op::kIn, {"b"})}};
  EXPECT_TRUE(matches_affinity({both}, node));
  EXPECT_FALSE(matches_affinity({one_fails}, node));
  EXPECT_FALSE(matches_affinity({one_fails, other}, node));
  EXPECT_TRUE(matches_affinity({other, both}, node));
  EXPECT_TRUE(matches_affinity({}, node)) << "no required affinity: any node";
}

TEST(Candidates, AnEmptyTermMatchesNothing) {
  const NodeClass node = node_class({"n"}, {{"zone", "a"}});
  EXPECT_FALSE(matches_affinity({NodeSelectorTerm{}}, node));
  EXPECT_TRUE(matches_affinity({NodeSelectorTerm{}, NodeSelectorTerm{{requirement("zone", Op::kExists)}}}, node));
}

TEST(Candidates, MatchFieldsMetadataNameMatchesAClassHoldingThatNode) {
  const NodeClass pair = node_class({"gpu-a", "gpu-b"});
  EXPECT_TRUE(matches(name_field(Op::kIn, {"gpu-b"}), pair));
  EXPECT_FALSE(matches(name_field(Op::kIn, {"gpu-c"}), pair));
  EXPECT_TRUE(matches(name_field(Op::kNotIn, {"gpu-a"}), pair)) << "gpu-b is not gpu-a";
  EXPECT_FALSE(matches(name_field(Op::kNotIn, {"gpu-a"}), node_class({"gpu-a"})));
}

TEST(Candidates, TheHostnameLabelIsMatchedByNodeName) {
  // The class dropped the label equal to each node's name: its names stand in.
  const NodeClass pair = node_class({"gpu-a", "gpu-b"});
  EXPECT_TRUE(matches(requirement(std::string(kHostnameLabel), Op::kIn, {"gpu-a"}), pair));
  EXPECT_FALSE(matches(requirement(std::string(kHostnameLabel), Op::kIn, {"gpu-z"}), pair));
  // A hostname label unlike the name was kept: it is matched as a label.
  const NodeClass renamed = node_class({"gpu-c"}, {{std::string(kHostnameLabel), "ip-10-0-0-7"}});
  EXPECT_TRUE(matches(requirement(std::string(kHostnameLabel), Op::kIn, {"ip-10-0-0-7"}), renamed));
  EXPECT_FALSE(matches(requirement(std::string(kHostnameLabel), Op::kIn, {"gpu-c"}), renamed));
}

// A node without the hostname label is matched as the scheduler matches it,
// by its labels: it is not in the class of nodes whose label was their name.
TEST(Candidates, ANodeWithoutAHostnameLabelIsNotMatchedByItsName) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  NodeInfo labelled;
  labelled.name = "gpu-a";
  labelled.labels = {{std::string(kHostnameLabel), "gpu-a"}};
  labelled.extended = {{"nvidia.com/gpu", 8}};
  NodeInfo unlabelled = labelled;
  unlabelled.name = "gpu-b";
  unlabelled.labels.clear();
  builder.upsert(labelled);
  builder.upsert(unlabelled);
  const auto inventory = builder.build();
  ASSERT_EQ(inventory->classes.size(), 2u);
  for (const NodeClass& c : inventory->classes) {
    ASSERT_EQ(c.names.size(), 1u);
    const bool has_label = c.names[0] == "gpu-a";
    EXPECT_EQ(c.hostname_is_name, has_label) << c.names[0];
    EXPECT_EQ(matches(requirement(std::string(kHostnameLabel), Op::kIn, {c.names[0]}), c), has_label) << c.names[0];
    EXPECT_EQ(matches(requirement(std::string(kHostnameLabel), Op::kExists), c), has_label) << c.names[0];
    EXPECT_EQ(matches(requirement(std::string(kHostnameLabel), Op::kDoesNotExist), c), !has_label) << c.names[0];
  }
}

// Requirements on a node's name must all hold on one node of the class: no
// node of {gpu-a, gpu-b} is both.
TEST(Candidates, ATermsNameRequirementsMustHoldOnOneNode) {
  const NodeClass pair = node_class({"gpu-a", "gpu-b"});
  const NodeSelectorTerm term{
      {name_field(Op::kIn, {"gpu-a"}), requirement(std::string(kHostnameLabel), Op::kIn, {"gpu-b"})}};
  EXPECT_FALSE(matches_affinity({term}, pair));
}

TEST(Tolerates, EqualNeedsTheKeyAndTheValue) {
  const std::vector<Toleration> sku_gpu = {toleration("sku", false, "gpu")};
  EXPECT_TRUE(tolerates(sku_gpu, taint("sku", "gpu", TaintEffect::kNoSchedule)));
  EXPECT_FALSE(tolerates(sku_gpu, taint("sku", "cpu", TaintEffect::kNoSchedule)));
  EXPECT_FALSE(tolerates(sku_gpu, taint("tier", "gpu", TaintEffect::kNoSchedule)));
  EXPECT_FALSE(tolerates({}, taint("sku", "gpu", TaintEffect::kNoSchedule)));
}

TEST(Tolerates, ExistsTakesAnyValueOfItsKey) {
  const std::vector<Toleration> sku = {toleration("sku", true)};
  EXPECT_TRUE(tolerates(sku, taint("sku", "gpu", TaintEffect::kNoExecute)));
  EXPECT_TRUE(tolerates(sku, taint("sku", "", TaintEffect::kNoSchedule)));
  EXPECT_FALSE(tolerates(sku, taint("other", "gpu", TaintEffect::kNoSchedule)));
}

TEST(Tolerates, AnEmptyKeyWithExistsToleratesEveryTaint) {
  EXPECT_TRUE(tolerates({toleration("", true)}, taint("anything", "x", TaintEffect::kNoExecute)));
  EXPECT_FALSE(tolerates({toleration("", false)}, taint("anything", "", TaintEffect::kNoSchedule)));
}

TEST(Tolerates, AnEffectToleratesOnlyTaintsOfThatEffect) {
  const std::vector<Toleration> no_schedule = {toleration("sku", true, "", "NoSchedule")};
  EXPECT_TRUE(tolerates(no_schedule, taint("sku", "gpu", TaintEffect::kNoSchedule)));
  EXPECT_FALSE(tolerates(no_schedule, taint("sku", "gpu", TaintEffect::kNoExecute)));
  // An empty effect, like none, means every effect.
  EXPECT_TRUE(tolerates({toleration("sku", true, "", "")}, taint("sku", "gpu", TaintEffect::kNoExecute)));
  EXPECT_FALSE(tolerates({toleration("", true, "", "NoExecute")}, taint("sku", "gpu", TaintEffect::kNoSchedule)));
}

TEST(CandidateNodes, EveryNodeSelectorEntryMustMatch) {
  const NodeInventory nodes = inventory_of({node_class({"zone-a"}, {{"zone", "a"}, {"tier", "gpu"}}),
                                            node_class({"zone-b"}, {{"zone", "b"}, {"tier", "gpu"}})});
  PodFacts pod = gpu_pod();
  pod.node_selector = {{"zone", "b"}};
  const Candidates one = candidate_nodes(nodes, default_policy(), pod, 1);
  EXPECT_EQ(shapes(one.nodes), Shapes{"zone-b"});
  EXPECT_EQ(one.why_none, "");
  pod.node_selector["tier"] = "cpu";
  const Candidates none = candidate_nodes(nodes, default_policy(), pod, 1);
  EXPECT_TRUE(none.placeable.empty());
  EXPECT_EQ(none.why_none, "2 node shapes: 2 do not match nodeSelector tier=cpu");
}

TEST(CandidateNodes, TheRequiredAffinityNarrowsTheNodes) {
  const NodeInventory nodes =
      inventory_of({node_class({"a100"}, {{"gpu", "a100"}}), node_class({"h100"}, {{"gpu", "h100"}})});
  PodFacts pod = gpu_pod();
  pod.has_affinity = true;
  pod.affinity_terms = {NodeSelectorTerm{{requirement("gpu", Op::kNotIn, {"a100"})}}};
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), pod, 1).nodes), Shapes{"h100"});
  pod.affinity_terms = {NodeSelectorTerm{{requirement("gpu", Op::kIn, {"v100"})}}};
  EXPECT_EQ(candidate_nodes(nodes, default_policy(), pod, 1).why_none,
            "2 node shapes: 2 do not match the node affinity");
}

TEST(CandidateNodes, SpecNodeNameKeepsOnlyTheClassOfThatNode) {
  const NodeInventory nodes = inventory_of({node_class({"gpu-a", "gpu-b"}), node_class({"gpu-c"}, {{"zone", "c"}})});
  PodFacts pod = gpu_pod();
  pod.node_name = "gpu-b";
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), pod, 1).nodes), Shapes{"gpu-a"});
  pod.node_name = "gone";
  EXPECT_EQ(candidate_nodes(nodes, default_policy(), pod, 1).why_none, "2 node shapes: 2 are not spec.nodeName gone");
}

TEST(CandidateNodes, NoScheduleAndNoExecuteTaintsMustBeTolerated) {
  NodeClass no_schedule = node_class({"no-schedule"});
  no_schedule.taints = {taint("sku", "gpu", TaintEffect::kNoSchedule)};
  NodeClass no_execute = node_class({"no-execute"});
  no_execute.taints = {taint("dedicated", "", TaintEffect::kNoExecute)};
  NodeClass prefer = node_class({"prefer"});
  prefer.taints = {taint("spot", "true", TaintEffect::kPreferNoSchedule)};
  const NodeInventory nodes = inventory_of({no_schedule, no_execute, prefer});
  PodFacts pod = gpu_pod();
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), pod, 1).nodes), Shapes{"prefer"});
  pod.tolerations = {toleration("sku", false, "gpu", "NoSchedule"), toleration("dedicated", true)};
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), pod, 1).nodes),
            (Shapes{"no-schedule", "no-execute", "prefer"}));

  const NodeInventory untolerated = inventory_of({no_schedule, no_execute});
  EXPECT_EQ(candidate_nodes(untolerated, default_policy(), gpu_pod(), 1).why_none,
            "2 node shapes: 1 have taint dedicated:NoExecute, not tolerated, "
            "1 have taint sku=gpu:NoSchedule, not tolerated");
}

TEST(CandidateNodes, APodAskingForAGpuToleratesItsNoScheduleTaintOnly) {
  // GKE taints GPU nodes nvidia.com/gpu=present:NoSchedule; the
  // ExtendedResourceToleration plugin tolerates it for pods asking for GPUs.
  NodeClass gke = node_class({"gke-l4"}, {}, 1);
  gke.taints = {taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule)};
  NodeClass evicting = node_class({"evicting"}, {}, 1);
  evicting.taints = {taint("nvidia.com/gpu", "present", TaintEffect::kNoExecute)};
  const NodeInventory nodes = inventory_of({gke, evicting});
  const Candidates candidates = candidate_nodes(nodes, default_policy(), gpu_pod(), 1);
  EXPECT_EQ(shapes(candidates.nodes), Shapes{"gke-l4"});
  // A pod asking for AMD GPUs is given no toleration of NVIDIA's taint.
  const Candidates amd = candidate_nodes(nodes, default_policy(), gpu_pod(1, "amd.com/gpu"), 1);
  EXPECT_TRUE(amd.placeable.empty());
  EXPECT_EQ(amd.why_none,
            "2 node shapes: 1 have taint nvidia.com/gpu=present:NoExecute, not tolerated, "
            "1 have taint nvidia.com/gpu=present:NoSchedule, not tolerated");
  // A GPU init container asks for the resource too.
  PodFacts init_only = gpu_pod();
  init_only.init = {init_only.app[0]};
  init_only.app[0].gpu_resource.clear();
  init_only.app[0].gpus = 0;
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), init_only, 1).nodes), Shapes{"gke-l4"});
}

// A cordoned or not-ready node comes back: a pod sized past it could not
// run on it then, so its capacity counts (issue 28). Its other taints and
// labels still keep pods out.
TEST(CandidateNodes, CordonedAndConditionTaintedNodesStayCandidates) {
  NodeClass cordoned = node_class({"cordoned"});
  cordoned.unschedulable = true;
  cordoned.taints = {taint("node.kubernetes.io/unschedulable", "", TaintEffect::kNoSchedule)};
  NodeClass not_ready = node_class({"not-ready"});
  not_ready.taints = {taint("node.kubernetes.io/not-ready", "", TaintEffect::kNoSchedule),
                      taint("node.kubernetes.io/not-ready", "", TaintEffect::kNoExecute)};
  NodeClass pressured = node_class({"pressured"});
  pressured.taints = {taint("node.kubernetes.io/memory-pressure", "", TaintEffect::kNoSchedule),
                      taint("node.kubernetes.io/unreachable", "", TaintEffect::kNoExecute),
                      taint("node.cloudprovider.kubernetes.io/uninitialized", "true", TaintEffect::kNoSchedule)};
  NodeClass also_dedicated = node_class({"also-dedicated"});
  also_dedicated.unschedulable = true;
  also_dedicated.taints = {taint("dedicated", "team-a", TaintEffect::kNoSchedule)};
  const NodeInventory nodes = inventory_of({cordoned, not_ready, pressured, also_dedicated});
  const Candidates candidates = candidate_nodes(nodes, default_policy(), gpu_pod(), 1);
  EXPECT_EQ(shapes(candidates.nodes), (Shapes{"cordoned", "not-ready", "pressured"}));
  // What a warning or explain row names says why none takes a pod now.
  EXPECT_EQ(cordoned.describe(), "cordoned (8 nvidia.com/gpu, cpu 94, memory 1300Gi; cordoned now)");
  EXPECT_EQ(not_ready.unavailable_now(), "not-ready");
  EXPECT_EQ(pressured.unavailable_now(), "memory-pressure, unreachable, uninitialized");
  EXPECT_EQ(node_class({"ready"}).describe(), "ready (8 nvidia.com/gpu, cpu 94, memory 1300Gi)");
  // Only the dedicated taint is left to say why the last is no candidate.
  const NodeInventory dedicated_only = inventory_of({also_dedicated});
  EXPECT_EQ(candidate_nodes(dedicated_only, default_policy(), gpu_pod(), 1).why_none,
            "1 node shape: 1 have taint dedicated=team-a:NoSchedule, not tolerated");
}

TEST(CandidateNodes, OnlyTheTaintsOfConditionsAreTransient) {
  for (const char* key : {"node.kubernetes.io/out-of-service", "karpenter.sh/disrupted",
                          "node.kubernetes.io/not-ready-x", "example.com/node.kubernetes.io/not-ready"}) {
    NodeClass tainted = node_class({"tainted"});
    tainted.taints = {taint(key, "", TaintEffect::kNoSchedule)};
    EXPECT_TRUE(candidate_nodes(inventory_of({tainted}), default_policy(), gpu_pod(), 1).nodes.empty()) << key;
    EXPECT_FALSE(is_condition_taint(key)) << key;
  }
}

TEST(CandidateNodes, WithoutThePluginOrOnceItRanNoTolerationIsAdded) {
  NodeClass gke = node_class({"gke-l4"}, {}, 1);
  gke.taints = {taint("nvidia.com/gpu", "present", TaintEffect::kNoSchedule)};
  const NodeInventory nodes = inventory_of({gke});
  // The cluster does not run ExtendedResourceToleration.
  Policy off = default_policy();
  off.rule_settings.edit<NodeFitPolicy>().extended_resource_toleration = false;
  EXPECT_TRUE(candidate_nodes(nodes, off, gpu_pod(), 1).nodes.empty());
  // A Pod under review: the plugin, if it runs, already added the
  // toleration; this one has none, so it may not run there.
  PodFacts admitted = gpu_pod();
  admitted.tolerations_final = true;
  const Candidates candidates = candidate_nodes(nodes, default_policy(), admitted, 1);
  EXPECT_TRUE(candidates.nodes.empty());
  EXPECT_EQ(candidates.why_none, "1 node shape: 1 have taint nvidia.com/gpu=present:NoSchedule, not tolerated");
  admitted.tolerations = {toleration("nvidia.com/gpu", true, "", "NoSchedule")};
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), admitted, 1).nodes), Shapes{"gke-l4"});
}

TEST(CandidateNodes, APodNamingItsNodeIgnoresNoScheduleTaintsAsTheKubeletDoes) {
  NodeClass cordoned = node_class({"cordoned"});
  cordoned.taints = {taint("dedicated", "team-a", TaintEffect::kNoSchedule)};
  NodeClass evicting = node_class({"evicting"});
  evicting.taints = {taint("dedicated", "team-a", TaintEffect::kNoExecute)};
  const NodeInventory nodes = inventory_of({cordoned, evicting});
  PodFacts pod = gpu_pod();
  pod.node_name = "cordoned";
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), pod, 1).nodes), Shapes{"cordoned"});
  pod.node_name = "evicting";
  const Candidates candidates = candidate_nodes(nodes, default_policy(), pod, 1);
  EXPECT_TRUE(candidates.nodes.empty());
  EXPECT_EQ(candidates.why_none,
            "2 node shapes: 1 are not spec.nodeName evicting, 1 have taint dedicated=team-a:NoExecute, not tolerated");
}

TEST(CandidateNodes, NamingTheNodeAndPinningItByAffinityAreNotTheSameShape) {
  // The two write the same requirement, but only the named pod skips the
  // scheduler's taints: the per-thread memo must not mix them up.
  NodeClass tainted = node_class({"n1"});
  tainted.taints = {taint("dedicated", "a", TaintEffect::kNoSchedule)};
  const NodeInventory nodes = inventory_of({tainted});
  PodFacts named = gpu_pod();
  named.node_name = "n1";
  PodFacts pinned = gpu_pod();
  pinned.has_affinity = true;
  pinned.affinity_terms = {NodeSelectorTerm{{name_field(Op::kIn, {"n1"})}}};
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), named, 1).nodes), Shapes{"n1"});
  EXPECT_TRUE(candidate_nodes(nodes, default_policy(), pinned, 1).nodes.empty());
  EXPECT_EQ(shapes(candidate_nodes(nodes, default_policy(), named, 1).nodes), Shapes{"n1"});
}

TEST(CandidateNodes, OnlyNodesWithThePodsGpuResourceCount) {
  const NodeInventory nodes = inventory_of({node_class({"nvidia"}, {}, 8, "nvidia.com/gpu"),
                                            node_class({"amd"}, {}, 8, "amd.com/gpu"), node_class({"cpu"}, {}, 0)});
  const Candidates amd = candidate_nodes(nodes, default_policy(), gpu_pod(2, "amd.com/gpu"), 2);
  EXPECT_EQ(amd.gpu_resource, "amd.com/gpu");
  EXPECT_EQ(shapes(amd.nodes), Shapes{"amd"});
  EXPECT_EQ(shapes(amd.placeable), (Shapes{"nvidia", "amd", "cpu"}));
  const Candidates nvidia = candidate_nodes(nodes, default_policy(), gpu_pod(2), 2);
  EXPECT_EQ(nvidia.gpu_resource, "nvidia.com/gpu");
  EXPECT_EQ(shapes(nvidia.nodes), Shapes{"nvidia"});

  const NodeInventory nvidia_only = inventory_of({node_class({"nvidia"})});
  EXPECT_EQ(candidate_nodes(nvidia_only, default_policy(), gpu_pod(1, "amd.com/gpu"), 1).why_none,
            "1 node shape: 1 have fewer than 1 amd.com/gpu");
}

TEST(CandidateNodes, PlaceableNodesNeedNotHoldTheGpus) {
  const NodeInventory nodes = inventory_of({node_class({"four"}, {}, 4), node_class({"eight"}, {}, 8)});
  const Candidates candidates = candidate_nodes(nodes, default_policy(), gpu_pod(8), 8);
  EXPECT_EQ(candidates.gpus, 8);
  EXPECT_EQ(shapes(candidates.placeable), (Shapes{"four", "eight"}));
  EXPECT_EQ(shapes(candidates.nodes), Shapes{"eight"});
  EXPECT_EQ(candidates.why_none, "");
  EXPECT_TRUE(candidates.known());
}

TEST(CandidateNodes, WhyNoneCountsEachReasonMostCommonFirst) {
  // A cordon is no reason: the node counts by its GPUs, as a ready one.
  NodeClass cordoned = node_class({"cordoned"}, {}, 2);
  cordoned.unschedulable = true;
  NodeClass tainted = node_class({"tainted"});
  tainted.taints = {taint("sku", "gpu", TaintEffect::kNoSchedule)};
  const NodeInventory nodes = inventory_of(
      {node_class({"one"}, {}, 1), cordoned, node_class({"two"}, {}, 2), tainted, node_class({"four"}, {}, 4)});
  const Candidates candidates = candidate_nodes(nodes, default_policy(), gpu_pod(8), 8);
  EXPECT_TRUE(candidates.nodes.empty());
  EXPECT_EQ(candidates.why_none,
            "5 node shapes: 4 have fewer than 8 nvidia.com/gpu, 1 have taint sku=gpu:NoSchedule, not tolerated");
}

TEST(CandidateNodes, NoNodesKnownIsNotAReasonToSay) {
  const Candidates candidates = candidate_nodes(*NodeInventory::none(), default_policy(), gpu_pod(), 1);
  EXPECT_FALSE(candidates.known());
  EXPECT_TRUE(candidates.placeable.empty());
  EXPECT_EQ(candidates.why_none, "");
}

Policy two_pools() {
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>().pools = {
      NodePool{"a100",
               {{"gpu", "a100"}},
               "",
               {NodeShape{"a100-half", 4, q("126"), q("980Gi"), q("14Ti")},
                NodeShape{"dgx-a100", 8, q("252"), q("1960Gi"), q("28Ti")}}},
      NodePool{"h100", {{"gpu", "h100"}}, "", {NodeShape{"dgx-h100", 8, q("224"), q("2000Gi"), q("28Ti")}}}};
  return policy;
}

TEST(CandidateNodes, PoolsAreChosenAsNodeFitChoosesThem) {
  const Policy policy = two_pools();
  const auto pools = pool_inventory(policy);
  PodFacts labelled = gpu_pod(8);
  labelled.selection.labels["osmo.pool"] = "a100";
  const Candidates a100 = candidate_nodes(*pools, policy, labelled, 8);
  ASSERT_NE(a100.pool, nullptr);
  EXPECT_EQ(a100.pool->name, "a100");
  EXPECT_EQ(shapes(a100.placeable), (Shapes{"a100-half", "dgx-a100"}));
  EXPECT_EQ(shapes(a100.nodes), Shapes{"dgx-a100"});

  PodFacts selected = gpu_pod(8);
  selected.node_selector = {{"gpu", "h100"}, {"zone", "b"}};
  const Candidates h100 = candidate_nodes(*pools, policy, selected, 8);
  ASSERT_NE(h100.pool, nullptr);
  EXPECT_EQ(h100.pool->name, "h100");
  EXPECT_EQ(shapes(h100.nodes), Shapes{"dgx-h100"});

  // No pool named or selected: every pool's shapes. Taints, cordons and
  // affinity are the nodes', which pools do not have.
  PodFacts any = gpu_pod(8);
  any.node_name = "somewhere";
  const Candidates all = candidate_nodes(*pools, policy, any, 8);
  EXPECT_EQ(all.pool, nullptr);
  EXPECT_EQ(shapes(all.nodes), (Shapes{"dgx-a100", "dgx-h100"}));

  const Candidates too_many = candidate_nodes(*pools, policy, labelled, 16);
  EXPECT_TRUE(too_many.nodes.empty());
  EXPECT_EQ(too_many.why_none, "2 node shapes: 2 have fewer than 16 nvidia.com/gpu");
}

}  // namespace
}  // namespace gpusizer::candidates_test
