// The node-fit rule on its own: it judges the pod as the floors size it,
// asks for that only when there are pools, and warns or denies by action.
#include "gpusizer/sizing/rules/node_fit_rule.h"

#include <gtest/gtest.h>

#include "gpusizer/sizing/candidates.h"
#include "gpusizer/sizing/nodes.h"
#include "support/pod_facts_support.h"

namespace gpusizer::node_fit_rule_test {
namespace {

using testing::gpu_container;
using testing::pod_of;
using testing::profile;
using testing::q;

Policy with_pool(CheckAction action) {
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>().action = action;
  policy.rule_settings.edit<NodeFitPolicy>().pools = {
      NodePool{"a100", {}, "", {NodeShape{"dgx-a100", 8, q("64"), q("384Gi"), q("300Gi")}}}};
  return policy;
}

struct FitRun {
  RuleResult result;
  int sized_asked = 0;
};

FitRun run(const Policy& policy, PodRequest sized) {
  const PodFacts pod = pod_of({gpu_container("trainer", sized.gpus, "1", "1Gi")});
  const PodPhases phases = pod_phases(pod);
  FitRun out;
  // The pod's candidates, as the decider chooses them: the pool's shapes.
  const auto nodes =
      policy.rule_settings.get<NodeFitPolicy>().pools.empty() ? NodeInventory::none() : pool_inventory(policy);
  const Candidates candidates = candidate_nodes(*nodes, policy, pod, sized.gpus);
  RuleInput input{policy, pod, phases, profile(policy, "train"), "defaultProfile", true, &candidates};
  input.sized = [&] {
    ++out.sized_asked;
    return sized;
  };
  out.result = NodeFitRule().evaluate(input);
  return out;
}

TEST(NodeFitRule, WithoutPoolsTheSizedPodIsNotWorkedOut) {
  const FitRun r = run(default_policy(), {8, q("64"), q("384Gi"), q("300Gi")});
  EXPECT_EQ(r.sized_asked, 0);
  EXPECT_TRUE(r.result.findings.empty());
  ASSERT_TRUE(r.result.row);
  EXPECT_EQ(r.result.row->detail,
            "no node pools in the policy (nodeFit.pools) and no nodes known (check --nodes FILE; serve watches the "
            "cluster's)");
}

TEST(NodeFitRule, APodEqualToTheLargestNodeFits) {
  const FitRun r = run(with_pool(CheckAction::kDeny), {8, q("64"), q("384Gi"), q("300Gi")});
  EXPECT_EQ(r.sized_asked, 1);
  EXPECT_TRUE(r.result.findings.empty());
  EXPECT_EQ(r.result.row->detail, "fits a node of some pool");
}

TEST(NodeFitRule, JustOverTheLargestNodeIsDeniedOrWarnedByAction) {
  const PodRequest over{8, q("64"), q("385Gi"), q("300Gi")};
  const FitRun denied = run(with_pool(CheckAction::kDeny), over);
  ASSERT_EQ(denied.result.findings.size(), 1u);
  EXPECT_EQ(denied.result.findings[0].reason, DenialReason::kNodeFit);
  EXPECT_TRUE(denied.result.findings[0].deny);
  EXPECT_TRUE(
      denied.result.findings[0].message.starts_with("pod default/train-x: node fit: 8 GPUs, cpu 64, memory 385Gi"))
      << denied.result.findings[0].message;
  const FitRun warned = run(with_pool(CheckAction::kWarn), over);
  ASSERT_EQ(warned.result.findings.size(), 1u);
  EXPECT_FALSE(warned.result.findings[0].deny);
  EXPECT_EQ(warned.result.findings[0].brief,
            "node fit: 8 GPUs, cpu 64, memory 385Gi fit no node of any pool; largest \"dgx-a100\" has memory 384Gi");
}

}  // namespace
}  // namespace gpusizer::node_fit_rule_test
