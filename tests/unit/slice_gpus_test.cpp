// ResourceSlices as GPU facts: a node-local slice read in each API
// version (nodes/claim_reader.h), its whole GPUs of a driver the policy
// counts as GPUs taken where the node's labels name no GPU
// (sizing/slice_gpus.h), and the difference it makes to a pod whose GPUs
// come by DRA claim: its candidates are the nodes with GPUs, so a cap
// comes from them, not from a larger CPU node.

#include "gpusizer/sizing/slice_gpus.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/nodes/claim_reader.h"
#include "support/pod_decision_support.h"
#include "support/review_support.h"

namespace gpusizer::slice_gpus_test {
namespace {

using nlohmann::json;

json device(const std::string& name, const std::string& type, const std::string& product, json memory) {
  json attributes = {{"productName", {{"string", product}}}};
  if (!type.empty()) attributes["type"] = {{"string", type}};
  return {{"name", name}, {"attributes", attributes}, {"capacity", {{"memory", {{"value", std::move(memory)}}}}}};
}

json slice(const std::string& node, json devices, const std::string& driver = "gpu.nvidia.com",
           const std::string& version = "resource.k8s.io/v1") {
  json spec = {{"driver", driver},
               {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
               {"devices", std::move(devices)}};
  if (!node.empty()) spec["nodeName"] = node;
  return {{"apiVersion", version},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-" + driver}}},
          {"spec", std::move(spec)}};
}

std::optional<DraObject> read(const json& object) {
  JsonReader reader;
  auto read_object = read_dra_object(reader.view_of(object));
  EXPECT_TRUE(read_object.ok()) << (read_object.ok() ? "" : read_object.error());
  return read_object.ok() ? std::move(read_object).value() : std::nullopt;
}

std::shared_ptr<const ClaimInventory> claims_of(const std::vector<json>& objects) {
  ClaimInventoryBuilder builder("test");
  for (const json& object : objects) {
    if (auto read_object = read(object)) builder.upsert(std::move(*read_object));
  }
  return builder.build();
}

TEST(ReadResourceSlice, ReadsEachDevicesTypeProductAndMemoryInEachVersion) {
  const auto v1 = read(slice("gpu-node-1", json::array({device("gpu-0", "gpu", "NVIDIA A100-SXM4-80GB", "80Gi"),
                                                        device("mig-0", "mig", "NVIDIA A100-SXM4-80GB", "10Gi")})));
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->kind, DraKind::kResourceSlice);
  EXPECT_EQ(v1->slice.node, "gpu-node-1");
  EXPECT_EQ(v1->slice.driver, "gpu.nvidia.com");
  ASSERT_EQ(v1->slice.devices.size(), 2u);
  EXPECT_EQ(v1->slice.devices[0].type, "gpu");
  EXPECT_EQ(v1->slice.devices[0].product, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(v1->slice.devices[0].memory_bytes, int64_t{80} << 30);
  EXPECT_EQ(v1->slice.devices[1].type, "mig");
  // v1beta1 wrote a device's fields under `basic`, a capacity as the
  // quantity itself, and attributes may be qualified by their domain.
  const json beta_device = {{"name", "gpu-0"},
                            {"basic",
                             {{"attributes", {{"gpu.example.com/model", {{"string", "LATEST-GPU-MODEL"}}}}},
                              {"capacity", {{"memory", "40Gi"}}}}}};
  const auto beta = read(slice("n", json::array({beta_device}), "gpu.example.com", "resource.k8s.io/v1beta1"));
  ASSERT_TRUE(beta);
  EXPECT_EQ(beta->slice.devices[0].product, "LATEST-GPU-MODEL");
  EXPECT_EQ(beta->slice.devices[0].memory_bytes, int64_t{40} << 30);
  // A capacity that is not a quantity is not a fact.
  const auto odd = read(slice("n", json::array({device("gpu-0", "gpu", "X", "lots")})));
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->slice.devices[0].memory_bytes, 0);
  // Devices on no one node (network-attached) are not a node's.
  EXPECT_FALSE(read(slice("", json::array({device("gpu-0", "gpu", "X", "1Gi")}))));
}

TEST(SliceGpu, TheFirstWholeGpuOfADriverThePolicyCountsAsGpus) {
  const Policy& policy = default_policy();
  const auto claims =
      claims_of({slice("gpu-node-1", json::array({device("mig-0", "mig", "NVIDIA A100-SXM4-80GB", "10Gi"),
                                                  device("gpu-1", "gpu", "NVIDIA A100-SXM4-80GB", "80Gi")})),
                 slice("nic-node", json::array({device("nic-0", "", "ConnectX-7", "0")}), "net.example.com")});
  const NodeGpu gpu = slice_gpu(*claims, policy, "gpu-node-1");
  // In the form GPU Feature Discovery labels it, which the GPU table matches.
  EXPECT_EQ(gpu.product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(gpu.memory_bytes, int64_t{80} << 30);
  EXPECT_TRUE(gpu.from_slice);
  EXPECT_EQ(gpu.product_label, "ResourceSlice gpu.nvidia.com productName");
  EXPECT_TRUE(slice_gpu(*claims, policy, "nic-node").product.empty()) << "a NIC's driver is no GPU";
  EXPECT_TRUE(slice_gpu(*claims, policy, "elsewhere").product.empty());
}

// Two nodes without GPU labels, as a cluster that runs the DRA driver
// without GPU Feature Discovery has: a GPU node of 30 CPU / 120Gi, and a
// larger CPU node.
std::shared_ptr<const NodeInventory> unlabelled_nodes() {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  for (const auto& [name, cpu, memory] : {std::tuple{"gpu-node-1", "30", "120Gi"}, {"cpu-node-1", "94", "700Gi"}}) {
    NodeInfo node;
    node.name = name;
    node.labels = {{"node.kubernetes.io/instance-type", std::string(name).substr(0, 8)}};
    node.cpu = Quantity::parse(cpu).value();
    node.memory = Quantity::parse(memory).value();
    node.ephemeral_storage = Quantity::parse("500Gi").value();
    builder.upsert(node);
  }
  return builder.build();
}

TEST(SliceGpus, FillOnlyClassesWhoseLabelsNameNoGpu) {
  const auto nodes = unlabelled_nodes();
  const auto none = claims_of({});
  EXPECT_EQ(with_slice_gpus(*nodes, *none, default_policy()), nullptr);
  const auto claims = claims_of({slice("gpu-node-1", json::array({device("gpu-0", "gpu", "NVIDIA L4", "24Gi")}))});
  const auto filled = with_slice_gpus(*nodes, *claims, default_policy());
  ASSERT_NE(filled, nullptr);
  EXPECT_NE(filled->id, nodes->id);
  std::size_t with_gpu = 0;
  for (const NodeClass& node_class : filled->classes) {
    if (node_class.gpu.product.empty()) continue;
    ++with_gpu;
    EXPECT_EQ(node_class.names, std::vector<std::string>{"gpu-node-1"});
    EXPECT_EQ(node_class.gpu.product, "NVIDIA-L4");
  }
  EXPECT_EQ(with_gpu, 1u);
}

TEST(SliceGpus, AClaimedGpuPodIsCappedByTheNodeItsSlicesShowGpusOn) {
  const std::string fixture = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/accelerators/dra-4gpu-template.yaml";
  const json claim_template = testing::first_manifest_object(fixture);
  auto documents = read_manifests(read_file(fixture).value(), fixture);
  const json pod = documents.value().documents.at(1).object;
  const auto nodes = unlabelled_nodes();
  const auto decide = [&](const std::vector<json>& dra) {
    const auto claims = claims_of(dra);
    const HttpReply reply =
        handle_review(default_policy(), Endpoint::kValidate, testing::admission_review(pod, "ml-team").dump(),
                      {nodes.get(), claims.get()});
    return json::parse(reply.body)["response"].value("warnings", json::array()).dump();
  };
  // No node says it has GPUs: every node may hold them, and the largest
  // bounds the caps: the table's 192Gi fits, nothing is capped.
  const std::string unknown = decide({claim_template});
  EXPECT_EQ(unknown.find("node cap"), std::string::npos) << unknown;
  // The slice shows the GPUs on the 120Gi node: the memory is capped to it.
  const std::string known = decide(
      {claim_template, slice("gpu-node-1", json::array({device("gpu-0", "gpu", "NVIDIA A100-SXM4-80GB", "80Gi"),
                                                        device("gpu-1", "gpu", "NVIDIA A100-SXM4-80GB", "80Gi"),
                                                        device("gpu-2", "gpu", "NVIDIA A100-SXM4-80GB", "80Gi"),
                                                        device("gpu-3", "gpu", "NVIDIA A100-SXM4-80GB", "80Gi")}))});
  EXPECT_NE(known.find("node cap: memory 192Gi (train profile) capped to 119Gi: gpu-node has 120Gi"), std::string::npos)
      << known;
}

}  // namespace
}  // namespace gpusizer::slice_gpus_test
