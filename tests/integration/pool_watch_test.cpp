// The autoscaler pool watch (server/pool_watcher.h) against a loopback API
// server (fake_api_server.h), as the node and DRA watches are tested: the
// kinds whose API group version lists them are found by discovery, listed
// and watched; their machines join the node watch's inventory, and a pod
// of a NodePool with no node is sized within them. A kind not served is
// looked for again, and watched once its CRD appears.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/server/pool_watcher.h"
#include "gpusizer/util/base64.h"
#include "integration/node_watch_support.h"
#include "support/review_support.h"

namespace gpusizer::testing::pool_watch_test {
namespace {

using nlohmann::json;

constexpr const char* kNodePools = "/apis/karpenter.sh/v1/nodepools";
constexpr const char* kNodeClasses = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses";
constexpr const char* kComputeClasses = "/apis/cloud.google.com/v1/computeclasses";

json resource_list(const std::string& group_version, const std::string& resource) {
  return {{"kind", "APIResourceList"},
          {"groupVersion", group_version},
          {"resources", {{{"name", resource}, {"namespaced", false}, {"verbs", {"get", "list", "watch"}}}}}};
}

json node_pool() {
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodePool"},
          {"metadata", {{"name", "gpu-l40s"}, {"resourceVersion", "5"}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"nodeClassRef", {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "gpu"}}},
                {"requirements",
                 {{{"key", "node.kubernetes.io/instance-type"},
                   {"operator", "In"},
                   {"values", {"g6e.2xlarge", "g6e.4xlarge"}}}}}}}}}}}};
}

json node_class() {
  return {{"apiVersion", "karpenter.k8s.aws/v1"},
          {"kind", "EC2NodeClass"},
          {"metadata", {{"name", "gpu"}, {"resourceVersion", "5"}}},
          {"spec",
           {{"blockDeviceMappings",
             {{{"deviceName", "/dev/xvda"}, {"rootVolume", true}, {"ebs", {{"volumeSize", "200Gi"}}}}}}}}};
}

json compute_class() {
  return {{"apiVersion", "cloud.google.com/v1"},
          {"kind", "ComputeClass"},
          {"metadata", {{"name", "l4"}, {"resourceVersion", "9"}}},
          {"spec", {{"priorities", {{{"machineType", "g2-standard-8"}}}}}}};
}

// The machines of an inventory and who launches them: "g6e.4xlarge of NodePool gpu-l40s".
std::vector<std::string> launchable(const NodeInventory& inventory) {
  std::vector<std::string> out;
  for (const NodeClass& c : inventory.classes) {
    if (!c.launched_by.empty()) out.push_back(c.named() + " ephemeral-storage " + c.ephemeral_storage->to_string());
  }
  return out;
}

const PoolWatchStatus& kind_status(const std::vector<PoolWatchStatus>& all, const std::string& kind) {
  for (const PoolWatchStatus& each : all) {
    if (each.kind == kind) return each;
  }
  throw std::runtime_error("no status of " + kind);
}

class PoolWatch : public NodeWatchFixture {
 protected:
  PoolWatch() {
    api_.set_nodes({}, "100");  // a fleet scaled to zero
    api_.set_document("/apis/karpenter.sh/v1", resource_list("karpenter.sh/v1", "nodepools"));
    api_.set_document("/apis/karpenter.k8s.aws/v1", resource_list("karpenter.k8s.aws/v1", "ec2nodeclasses"));
    api_.set_items(kNodePools, {node_pool()}, "5");
    api_.set_items(kNodeClasses, {node_class()}, "5");
  }

  static PoolWatchOptions pool_options() {
    PoolWatchOptions options;
    static_cast<ListWatchOptions&>(options) = NodeWatchFixture::options();
    options.rediscover = std::chrono::milliseconds(50);
    return options;
  }
};

TEST_F(PoolWatch, ANodePoolsMachinesJoinTheNodesAndSizeItsPods) {
  const auto nodes = start();
  PoolWatcher pools(api_.config(), pool_options(), *nodes);
  pools.start();
  // The pool and its node class are listed each on its own: once both are,
  // the machines have the class's 200Gi root volume.
  const std::vector<std::string> expected = {"g6e.2xlarge of NodePool gpu-l40s ephemeral-storage 179Gi",
                                             "g6e.4xlarge of NodePool gpu-l40s ephemeral-storage 179Gi"};
  ASSERT_TRUE(eventually([&] { return launchable(*nodes->inventory()) == expected; }))
      << ::testing::PrintToString(launchable(*nodes->inventory()));
  EXPECT_EQ(nodes->inventory()->node_count, 0U);
  EXPECT_EQ(pools.launchable(), 2U);
  ASSERT_TRUE(
      eventually([&] { return kind_status(pools.status(), "ComputeClass").discovery != "not looked for yet"; }));
  const std::vector<PoolWatchStatus> status = pools.status();
  EXPECT_EQ(kind_status(status, "NodePool").collection, kNodePools);
  EXPECT_EQ(kind_status(status, "NodePool").objects, 1U);
  EXPECT_EQ(kind_status(status, "AKSNodeClass").collection, "");
  EXPECT_EQ(kind_status(status, "AKSNodeClass").discovery, "not served (no CRD)");

  // A pod of the pool is sized within g6e.4xlarge, not to the table's 16 CPU.
  const json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", "infer"}, {"namespace", "ml"}}},
                    {"spec",
                     {{"nodeSelector", {{"karpenter.sh/nodepool", "gpu-l40s"}}},
                      {"containers",
                       {{{"name", "server"},
                         {"image", "vllm/vllm-openai"},
                         {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  const auto inventory = nodes->inventory();
  const json answer = json::parse(handle_review(default_policy(), Endpoint::kMutate, admission_review(pod, "ml").dump(),
                                                ClusterView{inventory.get(), nullptr})
                                      .body);
  const std::string patch = base64_decode(answer["response"]["patch"].get<std::string>()).value();
  EXPECT_NE(patch.find("\"15300m\""), std::string::npos) << patch;
  // The validating answer says which machine of which pool capped it.
  const json validated =
      json::parse(handle_review(default_policy(), Endpoint::kValidate, admission_review(pod, "ml").dump(),
                                ClusterView{inventory.get(), nullptr})
                      .body);
  EXPECT_NE(validated.dump().find("capped to 15300m: g6e.4xlarge of NodePool gpu-l40s has cpu 15890m"),
            std::string::npos)
      << validated.dump();

  // The pool deleted: its machines go.
  api_.push_event("DELETED", node_pool(), kNodePools);
  ASSERT_TRUE(eventually([&] { return launchable(*nodes->inventory()).empty(); }));
  pools.stop();
}

TEST_F(PoolWatch, AKindWhoseCrdAppearsLaterIsWatchedThen) {
  const auto nodes = start();
  PoolWatcher pools(api_.config(), pool_options(), *nodes);
  pools.start();
  ASSERT_TRUE(eventually([&] { return launchable(*nodes->inventory()).size() == 2; }));
  ASSERT_TRUE(
      eventually([&] { return kind_status(pools.status(), "ComputeClass").discovery != "not looked for yet"; }));
  EXPECT_EQ(kind_status(pools.status(), "ComputeClass").discovery, "not served (no CRD)");
  // GKE's ComputeClass CRD installed, with one class.
  api_.set_items(kComputeClasses, {compute_class()}, "9");
  api_.set_document("/apis/cloud.google.com/v1", resource_list("cloud.google.com/v1", "computeclasses"));
  ASSERT_TRUE(eventually([&] { return launchable(*nodes->inventory()).size() == 3; }))
      << ::testing::PrintToString(launchable(*nodes->inventory()));
  EXPECT_EQ(kind_status(pools.status(), "ComputeClass").collection, kComputeClasses);
  pools.stop();
  pools.stop();  // idempotent
}

TEST_F(PoolWatch, ForbiddenDiscoveryIsSaidAndNothingIsLaunched) {
  api_.fail_lists(403, status_body(403, "Forbidden", "nodepools.karpenter.sh is forbidden"));
  const auto nodes = start();
  PoolWatcher pools(api_.config(), pool_options(), *nodes);
  pools.start();
  ASSERT_TRUE(eventually([&] {
    return kind_status(pools.status(), "NodePool").discovery.find("403 Forbidden") != std::string::npos;
  })) << kind_status(pools.status(), "NodePool").discovery;
  EXPECT_TRUE(launchable(*nodes->inventory()).empty());
  pools.stop();
}

}  // namespace
}  // namespace gpusizer::testing::pool_watch_test
