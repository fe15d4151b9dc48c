// Node inventory benchmarks (docs/performance.md "Node inventory"): a fleet of
// 5,000 generated GPU nodes of 20 shapes in 3 zones, written as the API
// server lists them (each Node with the conditions, addresses and images a
// real one carries). How long a full relist takes (parse, read, classes,
// snapshot), what the inventory keeps per node, and the handler's time on a
// review with the inventory against without it.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <nlohmann/json.hpp>

#include "generated_nodes.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy.h"

namespace {

using nlohmann::json;

constexpr int kNodes = 5000;

struct Shape {
  const char* instance_type;
  const char* provider;  // gke, eks, aks
  int gpus;
  const char* cpu;
  const char* memory;
  const char* storage;
  const char* product;
  int gpu_memory_mib;
  int weight;  // nodes of this shape per 100
};

// Allocatable roughly as the providers publish their instance shapes minus
// system reservations (as ../shared/corpus/nodes.yaml approximates them).
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {"g2-standard-8", "gke", 1, "7910m", "27Gi", "95Gi", "NVIDIA-L4", 23034, 12},
      {"g2-standard-24", "gke", 2, "23", "88Gi", "190Gi", "NVIDIA-L4", 23034, 6},
      {"g2-standard-48", "gke", 4, "47", "180Gi", "375Gi", "NVIDIA-L4", 23034, 5},
      {"g2-standard-96", "gke", 8, "95690m", "340Gi", "750Gi", "NVIDIA-L4", 23034, 4},
      {"a2-highgpu-1g", "gke", 1, "11900m", "78Gi", "95Gi", "NVIDIA-A100-SXM4-40GB", 40960, 4},
      {"a2-highgpu-8g", "gke", 8, "95690m", "600Gi", "375Gi", "NVIDIA-A100-SXM4-40GB", 40960, 4},
      {"a2-ultragpu-8g", "gke", 8, "95690m", "1300Gi", "3000Gi", "NVIDIA-A100-SXM4-80GB", 81920, 4},
      {"a3-highgpu-8g", "gke", 8, "207", "1800Gi", "6000Gi", "NVIDIA-H100-80GB-HBM3", 81559, 5},
      {"g5.xlarge", "eks", 1, "3920m", "14Gi", "230Gi", "NVIDIA-A10G", 23028, 8},
      {"g5.12xlarge", "eks", 4, "47", "180Gi", "3500Gi", "NVIDIA-A10G", 23028, 5},
      {"g5.48xlarge", "eks", 8, "191", "740Gi", "7000Gi", "NVIDIA-A10G", 23028, 3},
      {"g6.xlarge", "eks", 1, "3920m", "14Gi", "230Gi", "NVIDIA-L4", 23034, 8},
      {"p4d.24xlarge", "eks", 8, "95690m", "1100Gi", "7500Gi", "NVIDIA-A100-SXM4-40GB", 40960, 5},
      {"p4de.24xlarge", "eks", 8, "95690m", "1100Gi", "7500Gi", "NVIDIA-A100-SXM4-80GB", 81920, 3},
      {"p5.48xlarge", "eks", 8, "191", "1900Gi", "7500Gi", "NVIDIA-H100-80GB-HBM3", 81559, 5},
      {"Standard_NC4as_T4_v3", "aks", 1, "3860m", "23Gi", "119Gi", "Tesla-T4", 15360, 5},
      {"Standard_NC24ads_A100_v4", "aks", 1, "23660m", "200Gi", "119Gi", "NVIDIA-A100-80GB-PCIe", 81920, 4},
      {"Standard_NV36ads_A10_v5", "aks", 1, "35500m", "410Gi", "119Gi", "NVIDIA-A10", 23028, 3},
      {"Standard_ND96asr_v4", "aks", 8, "95500m", "850Gi", "2700Gi", "NVIDIA-A100-SXM4-40GB", 40960, 4},
      {"Standard_ND96isr_H100_v5", "aks", 8, "95500m", "1800Gi", "2700Gi", "NVIDIA-H100-80GB-HBM3", 81559, 3},
  };
  return all;
}

// One Node as the API server lists it: labels of the provider, GPU Feature
// Discovery and the zone; the GPU taint; conditions, addresses, images.
json node_json(const Shape& shape, int index) {
  const std::string name = std::string(shape.provider) + "-" + shape.instance_type + "-" + std::to_string(index);
  const std::string zone = std::string("zone-") + static_cast<char>('a' + index % 3);
  json labels = {{"kubernetes.io/hostname", name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/os", "linux"},
                 {"beta.kubernetes.io/arch", "amd64"},
                 {"node.kubernetes.io/instance-type", shape.instance_type},
                 {"beta.kubernetes.io/instance-type", shape.instance_type},
                 {"topology.kubernetes.io/zone", zone},
                 {"topology.kubernetes.io/region", "region-1"},
                 {"nvidia.com/gpu.present", "true"},
                 {"nvidia.com/gpu.count", std::to_string(shape.gpus)},
                 {"nvidia.com/gpu.product", shape.product},
                 {"nvidia.com/gpu.memory", std::to_string(shape.gpu_memory_mib)},
                 {"nvidia.com/cuda.driver.major", "550"},
                 {"feature.node.kubernetes.io/pci-10de.present", "true"}};
  json taints = json::array();
  if (std::string(shape.provider) == "gke") {
    labels["cloud.google.com/gke-nodepool"] = std::string("pool-") + shape.instance_type;
    labels["cloud.google.com/gke-accelerator"] = "nvidia-l4";
    taints.push_back({{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}});
  } else if (std::string(shape.provider) == "eks") {
    labels["karpenter.sh/nodepool"] = "gpu";
    labels["karpenter.k8s.aws/instance-gpu-count"] = std::to_string(shape.gpus);
  } else {
    labels["kubernetes.azure.com/agentpool"] = "gpu";
    taints.push_back({{"key", "sku"}, {"value", "gpu"}, {"effect", "NoSchedule"}});
  }
  json images = json::array();
  for (int i = 0; i < 25; ++i) {
    images.push_back({{"names",
                       {"registry.example.com/team/image-" + std::to_string(i) + "@sha256:" + std::string(64, 'a'),
                        "registry.example.com/team/image-" + std::to_string(i) + ":v1.2." + std::to_string(i)}},
                      {"sizeBytes", 123456789 + i}});
  }
  json conditions = json::array();
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    conditions.push_back({{"type", type},
                          {"status", std::string(type) == "Ready" ? "True" : "False"},
                          {"lastHeartbeatTime", "2026-11-24T10:00:00Z"},
                          {"lastTransitionTime", "2026-11-20T10:00:00Z"},
                          {"reason", std::string("Kubelet") + type},
                          {"message", "kubelet is posting ready status"}});
  }
  const json allocatable = {{"cpu", shape.cpu},
                            {"memory", shape.memory},
                            {"ephemeral-storage", shape.storage},
                            {"nvidia.com/gpu", std::to_string(shape.gpus)},
                            {"pods", "110"},
                            {"hugepages-1Gi", "0"},
                            {"hugepages-2Mi", "0"}};
  return {
      {"metadata",
       {{"name", name},
        {"uid", "0d5c2f3e-0000-4000-8000-" + std::to_string(100000000000 + index)},
        {"resourceVersion", std::to_string(1000 + index)},
        {"creationTimestamp", "2026-11-20T10:00:00Z"},
        {"labels", labels},
        {"annotations",
         {{"node.alpha.kubernetes.io/ttl", "0"},
          {"volumes.kubernetes.io/controller-managed-attach-detach", "true"},
          {"csi.volume.kubernetes.io/nodeid",
           "{\"pd.csi.storage.gke.io\":\"projects/p/zones/z/instances/" + name + "\"}"}}}}},
      {"spec", {{"providerID", "cloud://" + name}, {"podCIDR", "10.0.0.0/24"}, {"taints", taints}}},
      {"status",
       {{"capacity", allocatable},
        {"allocatable", allocatable},
        {"conditions", conditions},
        {"addresses", {{{"type", "InternalIP"}, {"address", "10.0.0.1"}}, {{"type", "Hostname"}, {"address", name}}}},
        {"nodeInfo", {{"kubeletVersion", "v1.30.5"}, {"containerRuntimeVersion", "containerd://1.7.0"}}},
        {"images", images}}}};
}

// The fleet as one NodeList page, as GET /api/v1/nodes answers it.
std::string list_of(const json& items) {
  return json({{"kind", "NodeList"},
               {"apiVersion", "v1"},
               {"metadata", {{"resourceVersion", "99999"}}},
               {"items", items}})
      .dump();
}

const std::string& node_list() {
  static const std::string text = [] {
    int total_weight = 0;
    for (const Shape& shape : shapes()) total_weight += shape.weight;
    json items = json::array();
    int index = 0;
    for (const Shape& shape : shapes()) {
      const int count = kNodes * shape.weight / total_weight;
      for (int i = 0; i < count; ++i) items.push_back(node_json(shape, index++));
    }
    for (; index < kNodes; ++index) items.push_back(node_json(shapes().front(), index));
    return list_of(items);
  }();
  return text;
}

// One node of each class of the fleet: each shape in each of the 3 zones.
const std::string& class_list() {
  static const std::string text = [] {
    json items = json::array();
    int index = 0;
    for (const Shape& shape : shapes()) {
      for (int zone = 0; zone < 3; ++zone) items.push_back(node_json(shape, index++));
    }
    return list_of(items);
  }();
  return text;
}

// What the watcher does with a list: parse, read each Node, join classes,
// take the snapshot.
std::shared_ptr<const gpusizer::NodeInventory> relist(const std::string& text, gpusizer::JsonReader& reader) {
  gpusizer::InventoryBuilder builder(gpusizer::InventorySource::kCluster, "the cluster's nodes");
  auto list = reader.parse(text);
  list.value()["items"].for_each_element([&](gpusizer::JsonView item) {
    auto node = gpusizer::read_node(item);
    if (node) builder.upsert(std::move(node).value());
  });
  return builder.build();
}

std::size_t heap_in_use() { return mallinfo2().uordblks; }

void nodes_relist(benchmark::State& state) {
  const std::string& text = node_list();
  gpusizer::JsonReader reader;
  std::size_t classes = 0;
  for (auto _ : state) {
    auto inventory = relist(text, reader);
    classes = inventory->classes.size();
    benchmark::DoNotOptimize(inventory);
  }
  // What the builder and the snapshot keep, measured once outside the loop:
  // the heap they hold after the document is gone.
  const std::size_t before = heap_in_use();
  gpusizer::InventoryBuilder builder(gpusizer::InventorySource::kCluster, "the cluster's nodes");
  {
    gpusizer::JsonReader once;
    auto list = once.parse(text);
    list.value()["items"].for_each_element([&](gpusizer::JsonView item) {
      auto node = gpusizer::read_node(item);
      if (node) builder.upsert(std::move(node).value());
    });
  }
  auto snapshot = builder.build();
  const std::size_t kept = heap_in_use() - before;
  state.counters["nodes"] = static_cast<double>(snapshot->node_count);
  state.counters["classes"] = static_cast<double>(classes);
  state.counters["list_MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["bytes_per_node"] = static_cast<double>(kept) / static_cast<double>(snapshot->node_count);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(nodes_relist)->Unit(benchmark::kMillisecond);

std::string read_workload(const std::string& file) {
  std::ifstream in(GPU_SIZER_SOURCE_DIR "/bench/workloads/" + file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The main workload pinned to an instance type no node of the inventory
// is (p5.48xlarge): the instance catalogue stands in (issue 28).
std::string pinned_to_catalogue_machine(const std::string& body) {
  nlohmann::json review = nlohmann::json::parse(body);
  review["request"]["object"]["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = "p5.48xlarge";
  return review.dump();
}

// The handler on the main workload, with the 5,000-node inventory or none;
// `pinned`: pinned to a machine only the catalogue knows.
void nodes_decide(benchmark::State& state, bool with_inventory, bool pinned) {
  const std::string workload = read_workload("pod-12k-mutated.json");
  const std::string body = pinned ? pinned_to_catalogue_machine(workload) : workload;
  gpusizer::JsonReader reader;
  const auto inventory = with_inventory ? relist(node_list(), reader) : gpusizer::NodeInventory::none();
  const gpusizer::Policy& policy = gpusizer::default_policy();
  const auto first = gpusizer::handle_review(policy, gpusizer::Endpoint::kMutate, body,
                                             gpusizer::ClusterView{inventory.get(), nullptr});
  if (first.status != 200) {
    state.SkipWithError("the review is not answered 200");
    return;
  }
  for (auto _ : state) {
    auto reply = gpusizer::handle_review(policy, gpusizer::Endpoint::kMutate, body,
                                         gpusizer::ClusterView{inventory.get(), nullptr});
    benchmark::DoNotOptimize(reply);
  }
  state.counters["classes"] = static_cast<double>(inventory->classes.size());
}
BENCHMARK_CAPTURE(nodes_decide, without_inventory, false, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(nodes_decide, with_5000_nodes, true, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(nodes_decide, with_5000_nodes_pinned_to_the_catalogue, true, true)->Unit(benchmark::kMicrosecond);

}  // namespace

const std::string& generated_node_list() { return node_list(); }

std::shared_ptr<const gpusizer::NodeInventory> generated_inventory(bool one_node_per_class) {
  gpusizer::JsonReader reader;
  if (one_node_per_class) {
    static const auto classes = relist(class_list(), reader);
    return classes;
  }
  static const auto fleet = relist(node_list(), reader);
  return fleet;
}
