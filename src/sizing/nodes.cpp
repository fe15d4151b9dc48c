#include "gpusizer/sizing/nodes.h"

#include <algorithm>
#include <array>
#include <atomic>

#include "gpusizer/sizing/node_fit_settings.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// The labels that name a node's GPU model, most specific first: GPU Feature
// Discovery (NVIDIA GPU Operator), GKE, EKS Karpenter, the AMD labeller.
constexpr std::string_view kProductLabels[] = {"nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
                                               "karpenter.k8s.aws/instance-gpu-name", "amd.com/gpu.product-name"};

const std::string* find_label(const std::vector<std::pair<std::string, std::string>>& labels, std::string_view key) {
  for (const auto& [name, value] : labels) {
    if (name == key) return &value;
  }
  return nullptr;
}

// "81920" MiB (GFD, Karpenter) or "192G" GiB (the AMD labeller), as bytes;
// 0 when the value is not a whole positive number of them.
int64_t label_bytes(std::string_view value, int64_t unit, std::string_view suffix) {
  if (!suffix.empty()) {
    if (!value.ends_with(suffix)) return 0;
    value.remove_suffix(suffix.size());
  }
  auto number = read_whole(value, 1, int64_t{1} << 40);
  return number ? clamp_to_int64(int128(number.value()) * unit) : 0;
}

std::string quantity_key(const std::optional<Quantity>& quantity) {
  return quantity ? quantity->to_string() : std::string("-");
}

// Everything that makes two nodes different to sizing, as one string.
// REQUIRES: node is canonical(); hostname_is_name as it said.
std::string class_key(const NodeInfo& node, bool hostname_is_name) {
  // A node whose hostname label was its name and one without the label have
  // the same labels left, but a requirement on the label holds on the first
  // (by its name) and never on the second.
  std::string key = hostname_is_name ? "h" : "-";
  for (const auto& [name, value] : node.labels) key += name + '\x1f' + value + '\x1e';
  key += '\x1d';
  for (const Taint& taint : node.taints) {
    key += taint.key + '\x1f' + taint.value + '\x1f' + std::string(to_string(taint.effect)) + '\x1e';
  }
  key += '\x1d';
  key += node.unschedulable ? "u" : "s";
  key += quantity_key(node.cpu) + '\x1f' + quantity_key(node.memory) + '\x1f' + quantity_key(node.ephemeral_storage);
  for (const auto& [name, count] : node.extended) key += '\x1e' + name + '\x1f' + std::to_string(count);
  return key;
}

// The node with its lists sorted and its own name out of its labels;
// hostname_is_name says whether that label was there.
NodeInfo canonical(NodeInfo node, bool& hostname_is_name) {
  hostname_is_name = std::erase_if(node.labels, [&](const auto& label) {
                       return label.first == kHostnameLabel && label.second == node.name;
                     }) > 0;
  std::sort(node.labels.begin(), node.labels.end());
  std::sort(node.taints.begin(), node.taints.end());
  std::sort(node.extended.begin(), node.extended.end());
  return node;
}

}  // namespace

std::string_view to_string(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoSchedule: return "NoSchedule";
    case TaintEffect::kPreferNoSchedule: return "PreferNoSchedule";
    case TaintEffect::kNoExecute: return "NoExecute";
  }
  return "NoSchedule";
}

std::optional<TaintEffect> taint_effect(std::string_view text) {
  for (TaintEffect effect : {TaintEffect::kNoSchedule, TaintEffect::kPreferNoSchedule, TaintEffect::kNoExecute}) {
    if (to_string(effect) == text) return effect;
  }
  return std::nullopt;
}

std::string_view to_string(InventorySource source) {
  switch (source) {
    case InventorySource::kNone: return "none";
    case InventorySource::kPools: return "policy";
    case InventorySource::kFile: return "file";
    case InventorySource::kCluster: return "cluster";
    case InventorySource::kCatalogue: return "catalogue";
  }
  return "none";
}

NodeGpu node_gpu(const std::vector<std::pair<std::string, std::string>>& labels) {
  NodeGpu gpu;
  for (std::string_view key : kProductLabels) {
    if (const std::string* value = find_label(labels, key); value && !value->empty()) {
      gpu.product = *value;
      gpu.product_label = key;
      gpu.vendor = gpu_vendor_named(key);
      if (gpu.vendor.empty()) gpu.vendor = gpu_vendor_named(*value);
      break;
    }
  }
  if (const std::string* maker = find_label(labels, "karpenter.k8s.aws/instance-gpu-manufacturer");
      maker && gpu.vendor.empty()) {
    gpu.vendor = gpu_vendor_named(*maker);
  }
  struct MemoryLabel {
    std::string_view key;
    int64_t unit;
    std::string_view suffix;
  };
  // GFD and Karpenter publish MiB; the AMD labeller writes "192G" (GiB).
  for (const MemoryLabel& label :
       {MemoryLabel{"nvidia.com/gpu.memory", kMiB, ""}, MemoryLabel{"karpenter.k8s.aws/instance-gpu-memory", kMiB, ""},
        MemoryLabel{"amd.com/gpu.vram", kGiB, "G"}}) {
    const std::string* value = find_label(labels, label.key);
    const int64_t bytes = value ? label_bytes(*value, label.unit, label.suffix) : 0;
    if (bytes > 0) {
      gpu.memory_bytes = bytes;
      gpu.memory_label = label.key;
      break;
    }
  }
  return gpu;
}

std::string_view gpu_vendor_named(std::string_view name) {
  // As written in a domain or a word, then as said.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kVendors = {
      {{"nvidia", "NVIDIA"}, {"amd", "AMD"}, {"intel", "Intel"}}};
  std::string_view word = name.substr(0, name.find_first_of(" -_./"));  // "NVIDIA", "nvidia" of nvidia-l4
  // A domain's label before ".com": "nvidia.com/gpu", "gpu.amd.com".
  if (const std::string_view domain = name.substr(0, name.find('/')); domain.ends_with(".com")) {
    word = domain.substr(0, domain.size() - 4);
    word = word.substr(word.rfind('.') + 1);  // npos + 1 is 0: all of it
  }
  const std::string lower = lowercase(word);
  for (const auto& [written, vendor] : kVendors) {
    if (lower == written) return vendor;
  }
  return {};
}

std::string_view NodeClass::gpu_vendor() const {
  if (!gpu.vendor.empty()) return gpu.vendor;
  for (const auto& [name, count] : extended) {
    if (count > 0 && name.find("gpu") != std::string::npos) {
      if (const std::string_view vendor = gpu_vendor_named(name); !vendor.empty()) return vendor;
    }
  }
  return {};
}

const std::string* NodeClass::label(std::string_view key) const {
  // Sorted by key (InventoryBuilder, pool_inventory): a decision asks every
  // class, so a binary search.
  const auto found = std::lower_bound(labels.begin(), labels.end(), key,
                                      [](const auto& label, std::string_view wanted) { return label.first < wanted; });
  return found != labels.end() && found->first == key ? &found->second : nullptr;
}

bool NodeClass::is_open(std::string_view key) const {
  return std::binary_search(open_labels.begin(), open_labels.end(), key);
}

int64_t NodeClass::count(std::string_view resource) const {
  for (const auto& [name, count] : extended) {
    if (name == resource) return count;
  }
  return 0;
}

std::pair<std::string_view, int64_t> NodeClass::gpus(const std::vector<std::string>& gpu_resources) const {
  for (const std::string& resource : gpu_resources) {
    if (const int64_t n = count(resource); n > 0) return {resource, n};
  }
  return {"", 0};
}

bool is_condition_taint(std::string_view key) {
  static constexpr std::array<std::string_view, 8> kConditionTaints = {
      "node.kubernetes.io/not-ready",
      "node.kubernetes.io/unreachable",
      kUnschedulableTaint,
      "node.kubernetes.io/memory-pressure",
      "node.kubernetes.io/disk-pressure",
      "node.kubernetes.io/pid-pressure",
      "node.kubernetes.io/network-unavailable",
      "node.cloudprovider.kubernetes.io/uninitialized"};
  return std::find(kConditionTaints.begin(), kConditionTaints.end(), key) != kConditionTaints.end();
}

std::string NodeClass::unavailable_now() const {
  std::vector<std::string> why;
  if (unschedulable) why.emplace_back("cordoned");
  for (const Taint& taint : taints) {
    if (!is_condition_taint(taint.key) || taint.effect == TaintEffect::kPreferNoSchedule) continue;
    if (unschedulable && taint.key == kUnschedulableTaint) continue;  // "cordoned" says it
    // The condition's name: "not-ready", "memory-pressure", "uninitialized".
    const std::string_view name = std::string_view(taint.key).substr(taint.key.rfind('/') + 1);
    if (!contains(why, name)) why.emplace_back(name);
  }
  return join(why, ", ");
}

std::string NodeClass::named() const { return launched_by.empty() ? shape : shape + " of " + launched_by; }

std::string NodeClass::describe() const {
  std::vector<std::string> parts;
  for (const auto& [name, count] : extended) {
    if (count > 0) parts.push_back(std::to_string(count) + " " + name);
  }
  if (cpu) parts.push_back("cpu " + cpu->to_string());
  if (memory) parts.push_back("memory " + memory->to_string());
  if (ephemeral_storage) parts.push_back("ephemeral-storage " + ephemeral_storage->to_string());
  const std::string now = unavailable_now();
  return named() + " (" + join(parts, ", ") + (now.empty() ? "" : "; " + now + " now") + ")";
}

std::size_t NodeInventory::gpu_shapes(const std::vector<std::string>& gpu_resources) const {
  return static_cast<std::size_t>(std::count_if(classes.begin(), classes.end(),
                                                [&](const NodeClass& c) { return c.gpus(gpu_resources).second > 0; }));
}

uint64_t NodeInventory::next_id() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

std::shared_ptr<const NodeInventory> NodeInventory::none() {
  static const auto empty = std::make_shared<const NodeInventory>();
  return empty;
}

InventoryBuilder::InventoryBuilder(InventorySource source, std::string origin)
    : source_(source), origin_(std::move(origin)) {}

bool InventoryBuilder::upsert(NodeInfo node) {
  bool hostname_is_name = false;
  node = canonical(std::move(node), hostname_is_name);
  std::string key = class_key(node, hostname_is_name);
  if (const auto known = node_class_.find(node.name); known != node_class_.end()) {
    // A heartbeat or a new resourceVersion: the node stays in its class.
    if (known->second->first == key) return false;
    remove(node.name);
  }
  auto found = classes_.find(key);
  if (found == classes_.end()) {
    NodeClass shape;
    shape.labels = std::move(node.labels);
    shape.taints = std::move(node.taints);
    shape.unschedulable = node.unschedulable;
    shape.cpu = node.cpu;
    shape.memory = node.memory;
    shape.ephemeral_storage = node.ephemeral_storage;
    shape.extended = std::move(node.extended);
    shape.gpu = node_gpu(shape.labels);
    shape.hostname_is_name = hostname_is_name;
    found = classes_.emplace(std::move(key), Entry{std::move(shape), 0}).first;
  }
  ++found->second.members;
  node_class_.emplace(std::move(node.name), found);
  return true;
}

bool InventoryBuilder::remove(std::string_view name) {
  auto node = node_class_.find(name);
  if (node == node_class_.end()) return false;
  const Classes::iterator entry = node->second;
  node_class_.erase(node);
  if (--entry->second.members == 0) classes_.erase(entry);
  return true;
}

void InventoryBuilder::clear() {
  node_class_.clear();
  classes_.clear();
}

std::shared_ptr<const NodeInventory> InventoryBuilder::build(std::string stale) const {
  auto inventory = std::make_shared<NodeInventory>();
  inventory->source = source_;
  inventory->origin = origin_;
  inventory->stale = std::move(stale);
  inventory->node_count = node_class_.size();
  inventory->classes.reserve(classes_.size());
  std::map<const Entry*, std::size_t> index;
  for (const auto& [key, entry] : classes_) {
    index.emplace(&entry, inventory->classes.size());
    inventory->classes.push_back(entry.shape);
    inventory->classes.back().names.reserve(entry.members);
  }
  // node_class_ is sorted by name, so each class's names come out sorted.
  for (const auto& [name, entry] : node_class_) inventory->classes[index.at(&entry->second)].names.push_back(name);
  for (NodeClass& c : inventory->classes) {
    const std::string* instance_type = c.label("node.kubernetes.io/instance-type");
    c.shape = instance_type ? *instance_type : c.names.front();
  }
  std::stable_sort(inventory->classes.begin(), inventory->classes.end(), [](const NodeClass& a, const NodeClass& b) {
    if (a.names.size() != b.names.size()) return a.names.size() > b.names.size();
    return a.shape < b.shape;
  });
  inventory->classes.insert(inventory->classes.end(), launchable_.begin(), launchable_.end());
  return inventory;
}

std::shared_ptr<const NodeInventory> pool_inventory(const Policy& policy) {
  const NodeFitPolicy& fit = policy.rule_settings.get<NodeFitPolicy>();
  if (fit.pools.empty()) return NodeInventory::none();
  auto inventory = std::make_shared<NodeInventory>();
  inventory->source = InventorySource::kPools;
  inventory->origin = "policy nodeFit.pools";
  for (const NodePool& pool : fit.pools) {
    for (const NodeShape& node : pool.nodes) {
      NodeClass shape;
      shape.shape = node.name;
      shape.pool = pool.name;
      shape.labels.assign(pool.node_selector.begin(), pool.node_selector.end());
      shape.hostname_is_name = !shape.label(kHostnameLabel);
      shape.cpu = node.cpu;
      shape.memory = node.memory;
      shape.ephemeral_storage = node.ephemeral_storage;
      for (const std::string& resource : policy.gpu_resources) shape.extended.emplace_back(resource, node.gpus);
      std::sort(shape.extended.begin(), shape.extended.end());
      shape.gpu.product = pool.gpu_product;
      shape.gpu.product_label = "nodeFit.pools[" + pool.name + "].gpuProduct";
      inventory->classes.push_back(std::move(shape));
    }
  }
  return inventory;
}

}  // namespace gpusizer
