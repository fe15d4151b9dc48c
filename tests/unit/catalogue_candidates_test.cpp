// The catalogue's machines as candidates for a pod that selects machines
// by label (issue 28): which selections pick them, which machines each
// allows, and what sizing does with them when no node is known.
#include "gpusizer/sizing/catalogue_candidates.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/sizing/node_fit_settings.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/pod_sizing.h"
#include "support/pod_facts_support.h"

namespace gpusizer::catalogue_candidates_test {
namespace {

using Op = NodeRequirement::Op;
using Shapes = std::vector<std::string>;

PodFacts gpu_pod(int64_t gpus = 1) { return testing::pod_of({testing::gpu_container("trainer", gpus, "1", "1Gi")}); }

NodeSelectorTerm term(std::vector<NodeRequirement> requirements) { return {std::move(requirements)}; }

NodeRequirement requirement(const std::string& key, Op op, std::vector<std::string> values = {}) {
  return {key, op, std::move(values), false};
}

Shapes shapes(const Candidates& candidates) {
  Shapes out;
  for (const NodeClass* c : candidates.nodes) out.push_back(c->shape);
  return out;
}

TEST(CatalogueCandidates, AMachineLabelInTheSelectorOrARequiredTermSelectsMachines) {
  PodFacts pod = gpu_pod();
  EXPECT_FALSE(selects_machines(pod));
  pod.node_selector = {{"cloud.google.com/gke-nodepool", "gpu"}};
  EXPECT_FALSE(selects_machines(pod));
  pod.node_selector["node.kubernetes.io/instance-type"] = "g2-standard-8";
  EXPECT_TRUE(selects_machines(pod));
  PodFacts by_affinity = gpu_pod();
  by_affinity.has_affinity = true;
  // NotIn and DoesNotExist only rule machines out.
  by_affinity.affinity_terms = {term({requirement("karpenter.k8s.aws/instance-family", Op::kNotIn, {"g4dn"})})};
  EXPECT_FALSE(selects_machines(by_affinity));
  by_affinity.affinity_terms.push_back(term({requirement("karpenter.k8s.aws/instance-gpu-count", Op::kGt, {"3"})}));
  EXPECT_TRUE(selects_machines(by_affinity));
}

TEST(CatalogueCandidates, EachSelectionAllowsItsMachines) {
  // An instance type beside a pool's own label: the pool's name is the
  // autoscaler's to meet; the machine is the one named.
  PodFacts pinned = gpu_pod();
  pinned.node_selector = {{"node.kubernetes.io/instance-type", "g2-standard-8"},
                          {"cloud.google.com/gke-nodepool", "gpu-pool"}};
  EXPECT_EQ(shapes(catalogue_candidates(default_policy(), pinned, 1)), Shapes{"g2-standard-8"});
  // A GPU model and a count: the machines with at least that many.
  PodFacts l4 = gpu_pod(2);
  l4.node_selector = {{"cloud.google.com/gke-accelerator", "nvidia-l4"}};
  EXPECT_EQ(shapes(catalogue_candidates(default_policy(), l4, 2)),
            (Shapes{"g2-standard-24", "g2-standard-48", "g2-standard-96"}));
  // A family by affinity, on AWS.
  PodFacts g6e = gpu_pod(4);
  g6e.has_affinity = true;
  g6e.affinity_terms = {term({requirement("karpenter.k8s.aws/instance-family", Op::kIn, {"g6e"}),
                              requirement("karpenter.sh/capacity-type", Op::kIn, {"spot"})})};
  EXPECT_EQ(shapes(catalogue_candidates(default_policy(), g6e, 4)),
            (Shapes{"g6e.12xlarge", "g6e.24xlarge", "g6e.48xlarge"}));
  // A term with no machine requirement ORed in allows any machine.
  g6e.affinity_terms.push_back(term({requirement("karpenter.sh/nodepool", Op::kIn, {"default"})}));
  EXPECT_GT(catalogue_candidates(default_policy(), g6e, 4).nodes.size(), 3U);
  // Azure, by its GPU name label.
  PodFacts h100 = gpu_pod(8);
  h100.node_selector = {{"karpenter.azure.com/sku-gpu-name", "H100"}};
  EXPECT_EQ(shapes(catalogue_candidates(default_policy(), h100, 8)), Shapes{"Standard_ND96isr_H100_v5"});
  // A pod naming its node is not waiting for a machine.
  pinned.node_name = "gke-gpu-0";
  EXPECT_TRUE(catalogue_candidates(default_policy(), pinned, 1).nodes.empty());
  // An unknown instance type: none.
  PodFacts unknown = gpu_pod();
  unknown.node_selector = {{"node.kubernetes.io/instance-type", "x9.huge"}};
  EXPECT_TRUE(catalogue_candidates(default_policy(), unknown, 1).nodes.empty());
}

TEST(CatalogueCandidates, WithNoNodeKnownThePodIsCappedToTheMachineItSelects) {
  // g2-standard-8 (1 L4, 8 vCPU, 32 GB): not the table's 16 CPU / 64Gi.
  PodFacts pod = testing::pod_of({testing::gpu_container("server", 1, "1", "1Gi")});
  pod.app[0].requests = {};
  pod.app[0].limits = {};
  pod.node_selector = {{"node.kubernetes.io/instance-type", "g2-standard-8"}};
  const SizingOptions options{.report = true, .explain = true};
  const PodSizing sizing = size_pod(default_policy(), pod, pod_phases(pod), {}, options);
  const std::string warnings = testing::all(sizing.report.warnings);
  EXPECT_NE(warnings.find("capped to 7400m: g2-standard-8 has cpu 7910m"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("capped to 24Gi: g2-standard-8 has 26604Mi"), std::string::npos) << warnings;
  bool said = false;
  for (const RuleRow& row : sizing.explanation.rules) {
    said = said || row.detail.find("of the instance catalogue, as no node is known") != std::string::npos;
  }
  EXPECT_TRUE(said);
  // One machine selected: no move between machines to tell.
  const PodSizing fixed = size_pod(default_policy(), pod, pod_phases(pod), {}, {.fix = true});
  ASSERT_FALSE(fixed.fixes.empty());
  EXPECT_EQ(testing::all(fixed.fixes[0].warnings).find("smallest fitting instance"), std::string::npos);
}

TEST(CatalogueCandidates, APolicyPoolThePodRulesOutLeavesItToTheCatalogue) {
  // The policy describes one node group (an N1 with an attached T4, which
  // the catalogue lacks); a pod pinned to g2-standard-8 is not that
  // group's, so the catalogue's g2-standard-8 caps it (the real-scheduler
  // e2e found it capped to the N1's shape).
  Policy policy = default_policy();
  NodeFitPolicy& fit = policy.rule_settings.edit<NodeFitPolicy>();
  fit.pools.push_back(
      NodePool{"t4-pool",
               {{"node.kubernetes.io/instance-type", "n1-standard-8"}},
               "",
               {NodeShape{"n1-standard-8-t4", 1, Quantity::from_milli(7910), Quantity::from_bytes(int64_t{26} << 30),
                          Quantity::from_bytes(int64_t{85} << 30)}}});
  fit.pool_nodes = pool_inventory(policy);
  PodFacts pod = testing::pod_of({testing::gpu_container("server", 1, "1", "1Gi")});
  pod.node_selector = {{"node.kubernetes.io/instance-type", "g2-standard-8"}};
  const PodSizing sizing = size_pod(policy, pod, pod_phases(pod), {}, {.report = true});
  const std::string warnings = testing::all(sizing.report.warnings);
  EXPECT_NE(warnings.find("capped to 7400m: g2-standard-8 has cpu 7910m"), std::string::npos) << warnings;
  // The group's own pod is the group's.
  pod.node_selector = {{"node.kubernetes.io/instance-type", "n1-standard-8"}};
  const std::string in_group =
      testing::all(size_pod(policy, pod, pod_phases(pod), {}, {.report = true}).report.warnings);
  EXPECT_NE(in_group.find("capped to 7400m: n1-standard-8-t4 has cpu 7910m"), std::string::npos) << in_group;
}

TEST(CatalogueCandidates, AMoveToALargerMachineThanThePodsOwnRequestFitsIsSaid) {
  // 6 CPU of its own fit a g6e.2xlarge (7910m); sized, it needs the
  // g6e.4xlarge.
  PodFacts pod = testing::pod_of({testing::gpu_container("worker", 1, "6", "1Gi")});
  pod.app[0].limits = {};
  pod.app[0].requests = testing::quantities({{kCpu, "6"}});
  pod.has_affinity = true;
  pod.affinity_terms = {
      term({requirement("node.kubernetes.io/instance-type", Op::kIn, {"g6e.2xlarge", "g6e.4xlarge"})})};
  const PodSizing sizing = size_pod(default_policy(), pod, pod_phases(pod), {}, {.fix = true});
  ASSERT_FALSE(sizing.fixes.empty());
  EXPECT_NE(testing::all(sizing.fixes[0].warnings)
                .find("node fit: smallest fitting instance now g6e.4xlarge (was g6e.2xlarge)"),
            std::string::npos)
      << testing::all(sizing.fixes[0].warnings);
}

}  // namespace
}  // namespace gpusizer::catalogue_candidates_test
