// `gpu-sizer check --nodes` on capacity that is not taking pods now but
// will (issue 28): a node that is cordoned or under the taint of one of
// its conditions still holds the pods sized for it when it comes back, so
// the caps are its, and the warning says which node and that it is away;
// a machine no node shows yet (a pinned instance type, a NodePool scaled
// to zero) caps as the node it would be.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/cli_support.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::cli_capacity_test {
namespace {

using nlohmann::json;

// One g2-standard-8 node (one L4, 8 vCPU, 32 GB) as GKE reports it: 7910m
// CPU and about 27Gi memory allocatable; and a larger CPU-only node.
json fleet(const json& l4_taints, bool cordoned) {
  json l4 = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", "gke-l4-0"},
        {"labels",
         {{"node.kubernetes.io/instance-type", "g2-standard-8"}, {"cloud.google.com/gke-accelerator", "nvidia-l4"}}}}},
      {"spec", {{"taints", l4_taints}}},
      {"status",
       {{"allocatable",
         {{"cpu", "7910m"},
          {"memory", "27601920Ki"},
          {"ephemeral-storage", "47060071478"},
          {"nvidia.com/gpu", "1"}}}}}};
  if (cordoned) l4["spec"]["unschedulable"] = true;
  const json cpu = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", "cpu-0"}, {"labels", {{"node.kubernetes.io/instance-type", "n2-standard-64"}}}}},
      {"status", {{"allocatable", {{"cpu", "63770m"}, {"memory", "240Gi"}, {"ephemeral-storage", "90Gi"}}}}}};
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array({l4, cpu})}};
}

const char* const kL4Pod = R"(apiVersion: v1
kind: Pod
metadata:
  name: l4-infer
  namespace: ml
spec:
  containers:
  - name: server
    image: vllm/vllm-openai:v0.8.5
    resources:
      limits:
        nvidia.com/gpu: 1
)";

std::string check(const TempDir& dir, const json& nodes) {
  std::ofstream(dir.path() + "/nodes.json") << nodes.dump();
  std::ofstream(dir.path() + "/pod.yaml") << kL4Pod;
  const auto result = cli_test::run("check --fix --nodes " + dir.path() + "/nodes.json " + dir.path() + "/pod.yaml");
  return result.output;
}

// check prints node fit's warning whole: the webhook's is cut at 120
// characters, and its end names the selector no node matches.
TEST(CliCapacity, ANodeFitWarningIsPrintedWhole) {
  TempDir dir;
  std::ofstream(dir.path() + "/nodes.json") << fleet(json::array(), false).dump();
  std::string pod = kL4Pod;
  pod += "  nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3-a-product-name-long-enough-to-cut\n";
  std::ofstream(dir.path() + "/pod.yaml") << pod;
  const auto result = cli_test::run("check --nodes " + dir.path() + "/nodes.json " + dir.path() + "/pod.yaml");
  EXPECT_NE(result.output.find("nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-a-product-name-long-enough-to-cut"),
            std::string::npos)
      << result.output;
}

// An amd.com/gpu pod on NVIDIA nodes: the largest has GPUs, none of them
// the pod's ("has 0 GPUs" read as wrong).
TEST(CliCapacity, NodesWithNoneOfThePodsGpuResourceAreSaidToHaveNone) {
  TempDir dir;
  std::ofstream(dir.path() + "/nodes.json") << fleet(json::array(), false).dump();
  std::string pod = kL4Pod;
  pod.replace(pod.find("nvidia.com/gpu"), std::string("nvidia.com/gpu").size(), "amd.com/gpu");
  std::ofstream(dir.path() + "/pod.yaml") << pod;
  const auto result = cli_test::run("check --nodes " + dir.path() + "/nodes.json " + dir.path() + "/pod.yaml");
  EXPECT_NE(result.output.find("has no amd.com/gpu"), std::string::npos) << result.output;
}

TEST(CliCapacity, ANodeThatIsNotReadyOrCordonedStillCapsThePodsSizedForIt) {
  const json not_ready = json::array({{{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoSchedule"}},
                                      {{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoExecute"}}});
  const json cordon = json::array({{{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}}});
  TempDir dir;
  for (const auto& [taints, cordoned, said] :
       {std::tuple{not_ready, false,
                   "node cap: g2-standard-8 is not-ready now; sized for it, the pod waits until it is back"},
        std::tuple{cordon, true,
                   "node cap: g2-standard-8 is cordoned now; sized for it, the pod waits until it is back"}}) {
    const std::string output = check(dir, fleet(taints, cordoned));
    // Sized within the L4 node (not the table's 16 CPU / 64Gi / 300Gi), and
    // each cap names the node and says it takes no pod now.
    EXPECT_NE(output.find("cpu request unset->7400m (1 GPU, train profile, node cap)"), std::string::npos) << output;
    EXPECT_NE(output.find("memory request unset->25Gi"), std::string::npos) << output;
    EXPECT_NE(output.find("ephemeral-storage request unset->38Gi"), std::string::npos) << output;
    EXPECT_NE(output.find("capped to 25Gi: g2-standard-8 has 26955Mi"), std::string::npos) << output;
    EXPECT_NE(output.find(said), std::string::npos) << output;
    EXPECT_EQ(output.find("node fit:"), std::string::npos) << output;
  }
  // Another taint still keeps the pod off: no candidate, nothing capped,
  // and node fit says no node may run it.
  const json dedicated = json::array({{{"key", "dedicated"}, {"value", "batch"}, {"effect", "NoSchedule"}}});
  const std::string output = check(dir, fleet(dedicated, false));
  EXPECT_NE(output.find("memory request unset->64Gi (1 GPU, train profile)"), std::string::npos) << output;
  EXPECT_EQ(output.find("node cap"), std::string::npos) << output;
}

// A pool scaled to zero (issue 28): a Ray worker pinned by node affinity
// to two instance types no node of the file has yet is capped to the
// larger of them, from the instance catalogue, and told it now needs the
// larger machine.
TEST(CliCapacity, APodPinnedToInstanceTypesNoNodeHasIsCappedToTheLargestOfThem) {
  TempDir dir;
  std::ofstream(dir.path() + "/nodes.json") << fleet(json::array(), false).dump();
  std::ofstream(dir.path() + "/worker.yaml") << R"(apiVersion: v1
kind: Pod
metadata:
  name: ray-worker
  namespace: ml
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: node.kubernetes.io/instance-type
            operator: In
            values: [g6e.2xlarge, g6e.4xlarge]
          - key: karpenter.sh/nodepool
            operator: In
            values: [gpu]
  containers:
  - name: worker
    image: rayproject/ray:2.9.0-gpu
    resources:
      requests:
        cpu: "6"
      limits:
        nvidia.com/gpu: 1
)";
  const auto result = cli_test::run("explain --nodes " + dir.path() + "/nodes.json " + dir.path() + "/worker.yaml");
  const std::string& output = result.output;
  EXPECT_NE(output.find("cpu request 6->15300m (1 GPU, train profile, node cap)"), std::string::npos) << output;
  EXPECT_NE(output.find("capped to 15300m: g6e.4xlarge has cpu 15890m"), std::string::npos) << output;
  // Its own 6 CPU fit the smaller machine: the move to the larger is said.
  EXPECT_NE(output.find("node fit: smallest fitting instance now g6e.4xlarge (was g6e.2xlarge)"), std::string::npos)
      << output;
  EXPECT_NE(output.find("of the instance catalogue, as none of " + dir.path() + "/nodes.json may run it now"),
            std::string::npos)
      << output;
}

// A 1-GPU server pod that selects a Karpenter NodePool by name.
std::string pool_pod(const std::string& name, const std::string& node_pool) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  namespace: ml\nspec:\n  nodeSelector:\n    karpenter.sh/nodepool: " + node_pool +
         "\n  containers:\n  - name: server\n    image: vllm/vllm-openai:v0.8.5\n    resources:\n      limits:\n"
         "        nvidia.com/gpu: 1\n";
}

// A fleet scaled to zero (issue 28): the file holds a Karpenter NodePool
// that may launch only g6e.2xlarge and g6e.4xlarge (one L40S; 8 and 16
// vCPU) and its EC2NodeClass with a 200Gi root volume, and no Node. The
// pod is sized within the larger machine as Karpenter computes it, and
// each cap names the machine and the pool.
TEST(CliCapacity, APodOfANodePoolWithNoNodeIsSizedWithinTheMachinesThePoolMayLaunch) {
  TempDir dir;
  std::ofstream(dir.path() + "/pools.yaml") << R"(apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-l40s
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - key: node.kubernetes.io/instance-type
        operator: In
        values: [g6e.2xlarge, g6e.4xlarge]
      taints:
      - {key: nvidia.com/gpu, effect: NoSchedule}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  blockDeviceMappings:
  - deviceName: /dev/xvda
    rootVolume: true
    ebs: {volumeSize: 200Gi, volumeType: gp3}
)";
  std::ofstream(dir.path() + "/pod.yaml") << pool_pod("l40s-infer", "gpu-l40s");
  const auto result = cli_test::run("check --nodes " + dir.path() + "/pools.yaml " + dir.path() + "/pod.yaml");
  const std::string& output = result.output;
  // Not the table's 16 CPU and 300Gi: g6e.4xlarge leaves 15890m after the
  // kubelet's reserve, and 179Gi of the 200Gi root volume.
  EXPECT_NE(output.find("cpu request unset->15300m (1 GPU, train profile, node cap)"), std::string::npos) << output;
  EXPECT_NE(output.find("ephemeral-storage request unset->174Gi (1 GPU, train profile, node cap)"), std::string::npos)
      << output;
  EXPECT_NE(output.find("capped to 15300m: g6e.4xlarge of NodePool gpu-l40s has cpu 15890m"), std::string::npos)
      << output;
  // A pod the pool does not take (another pool's label) is sized as before:
  // no machine is known for it.
  std::ofstream(dir.path() + "/other.yaml") << pool_pod("other", "gpu-h100");
  const auto other = cli_test::run("check --nodes " + dir.path() + "/pools.yaml " + dir.path() + "/other.yaml");
  EXPECT_NE(other.output.find("cpu request unset->16 (1 GPU, train profile)"), std::string::npos) << other.output;
  EXPECT_EQ(other.output.find("node cap"), std::string::npos) << other.output;
}

}  // namespace
}  // namespace gpusizer::testing::cli_capacity_test
