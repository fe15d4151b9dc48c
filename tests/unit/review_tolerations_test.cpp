// A Pod the API server reviews has been through its mutating admission
// plugins: the toleration ExtendedResourceToleration adds is there if the
// plugin runs, so none is assumed. An offline check sees the manifest
// before the plugin, so the toleration is assumed (policy
// nodeFit.extendedResourceToleration).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/json/json_patch.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy.h"
#include "support/handle_review_support.h"
#include "support/nodes_support.h"

namespace gpusizer::review_tolerations_test {
namespace {

using nlohmann::json;

// GKE's g2-standard-8 (one L4, 27Gi), tainted as GKE taints GPU nodes.
std::shared_ptr<const NodeInventory> gke_l4_cluster() {
  return testing::one_node_inventory("g2-standard-8", 1, "7910m", "27Gi", "95Gi",
                                     {{"nvidia.com/gpu", "present", TaintEffect::kNoSchedule}});
}

// A 1-GPU training Pod asking for cpu 1 and memory 1Gi.
json one_gpu_pod(json tolerations = json::array()) {
  json pod = review_test::pod("1", "1", "1Gi");
  if (!tolerations.empty()) pod["spec"]["tolerations"] = std::move(tolerations);
  return pod;
}

// What a node cap lowered for the pod, decided as the API server's review
// (admitted) or an offline check sees it.
std::vector<std::string_view> capped(const json& pod, bool admitted, const Policy& policy = default_policy()) {
  const auto nodes = gke_l4_cluster();
  JsonReader reader;
  const JsonView object = reader.view_of(pod);
  PatchBuilder patch(object);
  const ObjectIdentity id{"", "Pod", "team-a", "train-x", admitted};
  const auto decisions =
      decide_object(policy, Endpoint::kMutate, id, object, patch, {}, false, ClusterView{nodes.get(), nullptr}).pods;
  EXPECT_EQ(decisions.size(), 1u);
  return decisions.empty() ? std::vector<std::string_view>{} : decisions.front().capped;
}

TEST(ReviewTolerations, AnOfflineCheckAssumesThePluginAddsTheGpuToleration) {
  EXPECT_FALSE(capped(one_gpu_pod(), false).empty());
}

TEST(ReviewTolerations, APodUnderReviewHasOnlyTheTolerationsItCarries) {
  // No toleration after the plugins: the tainted L4 is no candidate, so
  // nothing is capped to it (the Pod cannot run there anyway).
  EXPECT_TRUE(capped(one_gpu_pod(), true).empty());
  const json tolerated =
      one_gpu_pod(json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}));
  EXPECT_FALSE(capped(tolerated, true).empty());
}

TEST(ReviewTolerations, APolicyForAClusterWithoutThePluginAssumesNoToleration) {
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>().extended_resource_toleration = false;
  EXPECT_TRUE(capped(one_gpu_pod(), false, policy).empty());
}

TEST(ReviewTolerations, TheReviewHandlerSaysThePodWasAdmitted) {
  const auto nodes = gke_l4_cluster();
  const HttpReply reply = handle_review(default_policy(), Endpoint::kMutate, review_test::review(one_gpu_pod()).dump(),
                                        gpusizer::ClusterView{nodes.get(), nullptr});
  ASSERT_EQ(reply.outcome.pods.size(), 1u) << reply.body;
  EXPECT_TRUE(reply.outcome.pods[0].capped.empty()) << reply.body;
}

}  // namespace
}  // namespace gpusizer::review_tolerations_test
