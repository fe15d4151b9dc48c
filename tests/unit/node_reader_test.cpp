// Reading v1 Nodes: the fields sizing keeps and the errors that name the
// field, Lists and NodeLists of them, and `check --nodes FILE` as
// `kubectl get nodes -o yaml` (or -o json) writes it.
#include "gpusizer/nodes/node_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "gpusizer/check/node_file.h"
#include "support/pod_facts_support.h"

namespace gpusizer::node_reader_test {
namespace {

using nlohmann::json;
using testing::q;

json l4_node(const std::string& name = "gke-l4-0") {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"node.kubernetes.io/instance-type", "g2-standard-8"},
              {"cloud.google.com/gke-accelerator", "nvidia-l4"}}}}},
          {"spec", {{"taints", {{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}}}}},
          {"status",
           {{"allocatable",
             {{"cpu", "7910m"},
              {"memory", "27Gi"},
              {"ephemeral-storage", "95Gi"},
              {"nvidia.com/gpu", "1"},
              {"pods", "110"},
              {"hugepages-2Mi", "0"}}},
            {"images", json::array({{{"names", {"registry/some:image"}}, {"sizeBytes", 1}}})}}}};
}

Result<NodeInfo> read(const json& node) {
  JsonReader reader;
  return read_node(reader.view_of(node));
}

std::string error_of(const json& node) {
  auto read_back = read(node);
  EXPECT_FALSE(read_back.ok());
  return read_back.ok() ? "" : read_back.error();
}

TEST(ReadNode, KeepsTheNameLabelsTaintsCordonAndAllocatable) {
  json node = l4_node();
  node["spec"]["unschedulable"] = true;
  auto read_back = read(node);
  ASSERT_TRUE(read_back.ok()) << read_back.error();
  const NodeInfo& info = read_back.value();
  EXPECT_EQ(info.name, "gke-l4-0");
  EXPECT_EQ(info.labels.size(), 3u);
  ASSERT_EQ(info.taints.size(), 1u);
  EXPECT_EQ(info.taints[0], (Taint{"nvidia.com/gpu", "present", TaintEffect::kNoSchedule}));
  EXPECT_TRUE(info.unschedulable);
  EXPECT_EQ(info.cpu, q("7910m"));
  EXPECT_EQ(info.memory, q("27Gi"));
  EXPECT_EQ(info.ephemeral_storage, q("95Gi"));
  // Only extended resources (names with a "/"): not pods or hugepages.
  EXPECT_EQ(info.extended, (std::vector<std::pair<std::string, int64_t>>{{"nvidia.com/gpu", 1}}));
}

TEST(ReadNode, AbsentFieldsAreUnknownNotZero) {
  auto read_back = read({{"metadata", {{"name", "bare"}}}});
  ASSERT_TRUE(read_back.ok()) << read_back.error();
  const NodeInfo& info = read_back.value();
  EXPECT_FALSE(info.cpu);
  EXPECT_FALSE(info.memory);
  EXPECT_FALSE(info.ephemeral_storage);
  EXPECT_TRUE(info.labels.empty());
  EXPECT_TRUE(info.taints.empty());
  EXPECT_FALSE(info.unschedulable);
}

TEST(ReadNode, WholeExtendedResourcesAreKeptOthersDropped) {
  json node = l4_node();
  node["status"]["allocatable"] = {{"nvidia.com/gpu", 8},  // a bare number, as custom tools write it
                                   {"example.com/fraction", "500m"},
                                   {"example.com/negative", "-1"},
                                   {"example.com/nic", "2"},
                                   {"cpu", 96}};
  auto read_back = read(node);
  ASSERT_TRUE(read_back.ok()) << read_back.error();
  auto extended = read_back.value().extended;
  std::sort(extended.begin(), extended.end());
  EXPECT_EQ(extended, (std::vector<std::pair<std::string, int64_t>>{{"example.com/nic", 2}, {"nvidia.com/gpu", 8}}));
  EXPECT_EQ(read_back.value().cpu, q("96"));
}

TEST(ReadNode, LabelValuesThatAreNotStringsAreNotKept) {
  json node = l4_node();
  node["metadata"]["labels"] = {{"zone", "a"}, {"count", 8}};
  auto read_back = read(node);
  ASSERT_TRUE(read_back.ok()) << read_back.error();
  EXPECT_EQ(read_back.value().labels, (std::vector<std::pair<std::string, std::string>>{{"zone", "a"}}));
}

TEST(ReadNode, ErrorsNameTheFieldAndTheValue) {
  json memory = l4_node();
  memory["status"]["allocatable"]["memory"] = "27Gb";
  EXPECT_EQ(error_of(memory), "status.allocatable.memory \"27Gb\" is not a quantity");
  json extended = l4_node();
  extended["status"]["allocatable"]["nvidia.com/gpu"] = "one";
  EXPECT_EQ(error_of(extended), "status.allocatable.nvidia.com/gpu \"one\" is not a quantity");
  json effect = l4_node();
  effect["spec"]["taints"].push_back({{"key", "sku"}, {"effect", "Sometimes"}});
  EXPECT_EQ(error_of(effect), "spec.taints[1].effect \"Sometimes\" is not NoSchedule, PreferNoSchedule or NoExecute");
  json no_effect = l4_node();
  no_effect["spec"]["taints"] = {{{"key", "sku"}}};
  EXPECT_EQ(error_of(no_effect), "spec.taints[0].effect \"\" is not NoSchedule, PreferNoSchedule or NoExecute");
  json labels = l4_node();
  labels["metadata"]["labels"] = json::array({"zone=a"});
  EXPECT_EQ(error_of(labels), "metadata.labels is not an object");
  json taints = l4_node();
  taints["spec"]["taints"] = "none";
  EXPECT_EQ(error_of(taints), "spec.taints is not a list");
  json allocatable = l4_node();
  allocatable["status"]["allocatable"] = json::array();
  EXPECT_EQ(error_of(allocatable), "status.allocatable is not an object");
  json nameless = l4_node();
  nameless["metadata"].erase("name");
  EXPECT_EQ(error_of(nameless), "metadata.name is missing");
  EXPECT_EQ(error_of("gke-l4-0"), "is a string, not a Node");
}

// A negative cpu, memory or storage would be a negative cap: the node is
// malformed, as one whose value is not a quantity.
TEST(ReadNode, ANegativeAllocatableIsAnErrorNamingTheField) {
  for (const char* resource : {"cpu", "memory", "ephemeral-storage"}) {
    json node = l4_node();
    node["status"]["allocatable"][resource] = "-1Gi";
    EXPECT_EQ(error_of(node), "status.allocatable." + std::string(resource) + " \"-1Gi\" is negative");
  }
  json number = l4_node();
  number["status"]["allocatable"]["cpu"] = -8;
  EXPECT_EQ(error_of(number), "status.allocatable.cpu \"-8\" is negative");
  json zero = l4_node();
  zero["status"]["allocatable"]["memory"] = "0";
  EXPECT_TRUE(read(zero).ok()) << "zero is a quantity a node may report";
}

Status add(const json& document, InventoryBuilder& builder) {
  JsonReader reader;
  return add_nodes(reader.view_of(document), "nodes.yaml: document 1", builder);
}

TEST(AddNodes, ANodeAListAndANodeListAreRead) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  ASSERT_TRUE(add(l4_node("n-0"), builder).ok());
  EXPECT_EQ(builder.size(), 1u);
  const json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", {l4_node("n-1"), l4_node("n-2")}}};
  ASSERT_TRUE(add(list, builder).ok());
  EXPECT_EQ(builder.size(), 3u);
  // A NodeList's items carry no kind.
  json bare = l4_node("n-3");
  bare.erase("kind");
  const json node_list = {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", {bare}}};
  const Status status = add(node_list, builder);
  ASSERT_TRUE(status.ok()) << status.message();
  const auto inventory = builder.build();
  EXPECT_EQ(inventory->node_count, 4u);
  ASSERT_EQ(inventory->classes.size(), 1u);
  EXPECT_EQ(inventory->classes[0].shape, "g2-standard-8");
  EXPECT_EQ(inventory->classes[0].names, (std::vector<std::string>{"n-0", "n-1", "n-2", "n-3"}));
}

TEST(AddNodes, OtherKindsAreRefusedNamingWhere) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  EXPECT_EQ(add({{"kind", "Pod"}, {"metadata", {{"name", "x"}}}}, builder).message(),
            "nodes.yaml: document 1: kind \"Pod\" is not a Node, a List of Nodes, a NodePool, an EC2NodeClass, an "
            "AKSNodeClass or a ComputeClass");
  const json mixed = {{"kind", "List"}, {"items", {l4_node(), {{"kind", "Pod"}}}}};
  EXPECT_EQ(add(mixed, builder).message(), "nodes.yaml: document 1: items[1]: kind \"Pod\" is not a Node");
  EXPECT_EQ(add({{"kind", "NodeList"}, {"items", "none"}}, builder).message(),
            "nodes.yaml: document 1: items is not a list");
}

TEST(AddNodes, ANodeErrorNamesTheItemAndTheNode) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  json bad = l4_node("gke-l4-7");
  bad["status"]["allocatable"]["cpu"] = "8 cores";
  EXPECT_EQ(add({{"kind", "List"}, {"items", {l4_node(), bad}}}, builder).message(),
            "nodes.yaml: document 1: items[1] (node gke-l4-7): status.allocatable.cpu \"8 cores\" is not a quantity");
  EXPECT_EQ(add(bad, builder).message(),
            "nodes.yaml: document 1: node gke-l4-7: status.allocatable.cpu \"8 cores\" is not a quantity");
}

TEST(AddNodes, ANegativeAllocatableNamesTheNodeAndTheField) {
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  json bad = l4_node("gke-l4-9");
  bad["status"]["allocatable"]["memory"] = "-1Gi";
  EXPECT_EQ(add({{"kind", "List"}, {"items", {l4_node(), bad}}}, builder).message(),
            "nodes.yaml: document 1: items[1] (node gke-l4-9): status.allocatable.memory \"-1Gi\" is negative");
}

// A file in the test's own name, removed after it.
struct NodeFile {
  std::filesystem::path path;
  explicit NodeFile(const std::string& text, const char* extension = ".yaml") {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path = std::filesystem::temp_directory_path() /
           ("gpu-sizer-" + std::string(test->name()) + "-" + std::to_string(::getpid()) + extension);
    std::ofstream(path, std::ios::trunc) << text;
  }
  ~NodeFile() { std::filesystem::remove(path); }
  NodeFile(const NodeFile&) = delete;
  NodeFile& operator=(const NodeFile&) = delete;
};

// As `kubectl get nodes -o yaml` prints it (trimmed): quoted numbers, a
// List of Nodes.
constexpr const char* kKubectlYaml = R"(apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      cloud.google.com/gke-accelerator: nvidia-l4
      kubernetes.io/hostname: gke-l4-0
      node.kubernetes.io/instance-type: g2-standard-8
      nvidia.com/gpu.memory: "23034"
    name: gke-l4-0
  spec:
    taints:
    - effect: NoSchedule
      key: nvidia.com/gpu
      value: present
  status:
    allocatable:
      cpu: 7910m
      ephemeral-storage: "101994987636"
      memory: 27Gi
      nvidia.com/gpu: "1"
      pods: "110"
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/hostname: cpu-0
    name: cpu-0
  status:
    allocatable:
      cpu: 4
      memory: 16Gi
kind: List
metadata:
  resourceVersion: ""
)";

TEST(ReadNodeFile, ReadsWhatKubectlGetNodesPrintsInYaml) {
  const NodeFile file(kKubectlYaml);
  auto inventory = read_node_file(file.path.string());
  ASSERT_TRUE(inventory.ok()) << inventory.error();
  const NodeInventory& nodes = *inventory.value();
  EXPECT_EQ(nodes.source, InventorySource::kFile);
  EXPECT_EQ(nodes.origin, file.path.string());
  EXPECT_EQ(nodes.node_count, 2u);
  ASSERT_EQ(nodes.classes.size(), 2u);
  const NodeClass& l4 = nodes.classes[0].shape == "g2-standard-8" ? nodes.classes[0] : nodes.classes[1];
  EXPECT_EQ(l4.cpu, q("7910m"));
  EXPECT_EQ(l4.ephemeral_storage, q("101994987636"));
  EXPECT_EQ(l4.count("nvidia.com/gpu"), 1);
  EXPECT_EQ(l4.gpu.product, "nvidia-l4");
  EXPECT_EQ(l4.gpu.memory_bytes, int64_t{23034} << 20);
  ASSERT_EQ(l4.taints.size(), 1u);
  const NodeClass& cpu = nodes.classes[0].shape == "cpu-0" ? nodes.classes[0] : nodes.classes[1];
  EXPECT_EQ(cpu.cpu, q("4")) << "a plain YAML number is a quantity too";
  EXPECT_EQ(nodes.gpu_shapes({"nvidia.com/gpu"}), 1u);
}

TEST(ReadNodeFile, ReadsJsonAndSeveralYamlDocuments) {
  const json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", {l4_node("a"), l4_node("b")}}};
  const NodeFile json_file(list.dump(2), ".json");
  auto from_json = read_node_file(json_file.path.string());
  ASSERT_TRUE(from_json.ok()) << from_json.error();
  EXPECT_EQ(from_json.value()->node_count, 2u);

  const NodeFile yaml_file(std::string(l4_node("c").dump()) + "\n---\n" + l4_node("d").dump() + "\n");
  auto from_yaml = read_node_file(yaml_file.path.string());
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.error();
  EXPECT_EQ(from_yaml.value()->classes.at(0).names, (std::vector<std::string>{"c", "d"}));
}

TEST(ReadNodeFile, AnEmptyFileOrOneOfOtherObjectsIsRefused) {
  const NodeFile empty("");
  auto none = read_node_file(empty.path.string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), empty.path.string() +
                              ": holds no Node, NodePool, EC2NodeClass, AKSNodeClass or ComputeClass (write what "
                              "`kubectl get nodes,nodepools,ec2nodeclasses -o yaml` prints)");

  const NodeFile pod("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n");
  auto pods = read_node_file(pod.path.string());
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error(), pod.path.string() +
                              ": document 1: kind \"Pod\" is not a Node, a List of Nodes, a NodePool, an "
                              "EC2NodeClass, an AKSNodeClass or a ComputeClass");
}

// What `kubectl get nodes -o yaml` prints for a fleet scaled to zero: no
// node is known, which is not a mistake.
TEST(ReadNodeFile, AnEmptyListIsAFleetScaledToZero) {
  const NodeFile empty_list("apiVersion: v1\nkind: List\nitems: []\n");
  auto read_back = read_node_file(empty_list.path.string());
  ASSERT_TRUE(read_back.ok()) << read_back.error();
  EXPECT_EQ(read_back.value()->source, InventorySource::kFile);
  EXPECT_EQ(read_back.value()->node_count, 0U);
  EXPECT_TRUE(read_back.value()->classes.empty());
}

TEST(ReadNodeFile, AnErrorNamesTheFileTheDocumentAndTheNode) {
  const NodeFile file(l4_node("ok").dump() +
                      "\n---\nkind: List\nitems:\n- kind: Node\n  metadata: {name: gke-l4-3}\n"
                      "  status: {allocatable: {cpu: 8 cores}}\n");
  auto read_back = read_node_file(file.path.string());
  ASSERT_FALSE(read_back.ok());
  EXPECT_EQ(read_back.error(), file.path.string() +
                                   ": document 2: items[0] (node gke-l4-3): status.allocatable.cpu \"8 cores\" is not "
                                   "a quantity");
  EXPECT_FALSE(read_node_file(file.path.string() + ".missing").ok());
}

}  // namespace
}  // namespace gpusizer::node_reader_test
