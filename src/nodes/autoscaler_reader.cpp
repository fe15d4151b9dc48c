#include "gpusizer/nodes/autoscaler_reader.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

constexpr std::string_view kNodePoolLabel = "karpenter.sh/nodepool";

// The object's API group: "karpenter.sh" of "karpenter.sh/v1".
std::string_view group_of(JsonView object) {
  const std::string_view api_version = object["apiVersion"].string();
  const std::size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

// A whole number written as a number or a string ("8"); fails naming the field.
Result<int64_t> whole_number(JsonView value, const std::string& field) {
  const std::string text = value.is_string() ? std::string(value.string()) : value.text();
  auto number = read_whole(text, 0);
  if (!number)
    return Status::failure(ProblemCode::kBadValue, field, field + " " + in_quotes(text) + " " + number.error());
  return number;
}

Status not_an_object(JsonView value, const std::string& field) {
  if (value.is_null() || value.is_object()) return {};
  return Status::failure(ProblemCode::kWrongType, field, field + " is not an object");
}

// A string map (template labels), string values only.
std::vector<std::pair<std::string, std::string>> string_pairs(JsonView map) {
  std::vector<std::pair<std::string, std::string>> pairs;
  map.for_each_member([&](std::string_view key, JsonView value) {
    if (value.is_string()) pairs.emplace_back(key, value.string());
  });
  return pairs;
}

// kubeReserved or systemReserved: cpu, memory and ephemeral-storage.
Status read_reserved(JsonView map, const std::string& field, LaunchSettings::Reserved& out) {
  if (Status status = not_an_object(map, field); !status.ok()) return status;
  Status status;
  map.for_each_member([&](std::string_view resource, JsonView value) {
    if (!status.ok()) return;
    if (resource != "cpu" && resource != "memory" && resource != "ephemeral-storage") return;
    auto quantity = read_quantity(value, field + "." + std::string(resource), false);
    if (!quantity) {
      status = quantity.status();
      return;
    }
    if (resource == "cpu") out.cpu_millis = quantity.value().milli_ceil();
    if (resource == "memory") out.memory_bytes = quantity.value().value_ceil();
    if (resource == "ephemeral-storage") out.storage_bytes = quantity.value().value_ceil();
  });
  return status;
}

// An eviction threshold: a quantity ("100Mi") or a share of capacity ("10%").
Result<LaunchSettings::Threshold> read_threshold(JsonView value, const std::string& field) {
  const std::string_view text = value.string();
  if (text.ends_with('%')) {
    auto thousandths = read_decimal(text.substr(0, text.size() - 1), 3, 0, 100'000);
    if (!thousandths) {
      return Status::failure(ProblemCode::kBadValue, field,
                             field + " " + in_quotes(text) + " is not a percentage: " + thousandths.error());
    }
    return LaunchSettings::Threshold{0, static_cast<double>(thousandths.value()) / 1000};
  }
  auto quantity = read_quantity(value, field, false);
  if (!quantity) return quantity.status();
  return LaunchSettings::Threshold{quantity.value().value_ceil(), 0};
}

// The EC2NodeClass's spec.kubelet settings that change allocatable; its
// maxPods only where Karpenter reserves memory by it (Bottlerocket).
Status read_kubelet(JsonView kubelet, const std::string& field, bool pods_reserve_memory, LaunchSettings& settings) {
  if (Status status = not_an_object(kubelet, field); !status.ok()) return status;
  if (!kubelet["maxPods"].is_null()) {
    auto pods = whole_number(kubelet["maxPods"], field + ".maxPods");
    if (!pods) return pods.status();
    if (pods_reserve_memory) settings.max_pods = pods.value();
  }
  if (Status status = read_reserved(kubelet["kubeReserved"], field + ".kubeReserved", settings.kube_reserved);
      !status.ok()) {
    return status;
  }
  if (Status status = read_reserved(kubelet["systemReserved"], field + ".systemReserved", settings.system_reserved);
      !status.ok()) {
    return status;
  }
  const JsonView eviction = kubelet["evictionHard"];
  if (Status status = not_an_object(eviction, field + ".evictionHard"); !status.ok()) return status;
  for (const auto& [signal, slot] : {std::pair{"memory.available", &settings.eviction_memory},
                                     std::pair{"nodefs.available", &settings.eviction_storage}}) {
    if (eviction[signal].is_null()) continue;
    auto threshold = read_threshold(eviction[signal], field + ".evictionHard." + signal);
    if (!threshold) return threshold.status();
    *slot = threshold.value();
  }
  return {};
}

// EC2NodeClass (karpenter.k8s.aws/v1): the disk ephemeral storage is on,
// as Karpenter finds it (pkg/providers/instancetype/types.go
// ephemeralStorage): the instance store under instanceStorePolicy RAID0
// (not in the catalogue: not known); else the block device mapping marked
// rootVolume; else the AMI family's ephemeral device (/dev/xvdb for
// Bottlerocket, /dev/xvda otherwise); else 20Gi.
Status read_ec2_node_class(JsonView spec, LaunchSettings& settings) {
  if (spec["instanceStorePolicy"].string() == "RAID0") settings.storage_unknown = true;
  bool bottlerocket = spec["amiFamily"].string() == "Bottlerocket";
  spec["amiSelectorTerms"].for_each_element(
      [&](JsonView term) { bottlerocket = bottlerocket || term["alias"].string().starts_with("bottlerocket@"); });
  const std::string_view ephemeral_device = bottlerocket ? "/dev/xvdb" : "/dev/xvda";
  std::optional<int64_t> root;
  std::optional<int64_t> by_device;
  std::size_t index = 0;
  Status status;
  spec["blockDeviceMappings"].for_each_element([&](JsonView mapping) {
    const std::string field = "spec.blockDeviceMappings[" + std::to_string(index++) + "].ebs.volumeSize";
    const JsonView size = mapping["ebs"]["volumeSize"];
    if (!status.ok() || size.is_null()) return;
    auto quantity = read_quantity(size, field, false);
    if (!quantity) {
      status = quantity.status();
      return;
    }
    const int64_t bytes = quantity.value().value_ceil();
    if (mapping["rootVolume"].is_true() && !root) root = bytes;
    if (mapping["deviceName"].string() == ephemeral_device && !by_device) by_device = bytes;
  });
  if (!status.ok()) return status;
  if (root || by_device) settings.disk_bytes = root ? root : by_device;
  return read_kubelet(spec["kubelet"], "spec.kubelet", bottlerocket, settings);
}

// AKSNodeClass (karpenter.azure.com): the OS disk in GB (10^9 bytes, as
// Karpenter on Azure sizes ephemeral storage from osDiskSizeGB). Its
// kubelet has no reservation or eviction setting, and AKS reserves memory
// by no pod count (Azure/karpenter-provider-azure pkg/apis/v1beta1).
Status read_aks_node_class(JsonView spec, LaunchSettings& settings) {
  if (spec["osDiskSizeGB"].is_null()) return {};
  auto gb = whole_number(spec["osDiskSizeGB"], "spec.osDiskSizeGB");
  if (!gb) return gb.status();
  settings.disk_bytes = clamp_to_int64(int128{gb.value()} * kGB);
  return {};
}

// The cloud whose machines a node class launches; nullopt for one the
// catalogue has none of (KWOK, a provider not in it).
std::optional<Cloud> cloud_of_node_class(std::string_view kind) {
  if (kind == "EC2NodeClass") return Cloud::kAws;
  if (kind == "AKSNodeClass") return Cloud::kAzure;
  return std::nullopt;
}

// A NodePool (karpenter.sh/v1): the machines its template allows.
Status read_node_pool(JsonView object, const std::string& name, AutoscalerObjects& objects) {
  const JsonView spec = object["spec"]["template"]["spec"];
  AutoscalerPool pool;
  pool.kind = "NodePool";
  pool.name = name;
  const JsonView labels = object["spec"]["template"]["metadata"]["labels"];
  if (Status status = not_an_object(labels, "spec.template.metadata.labels"); !status.ok()) return status;
  pool.labels = string_pairs(labels);
  pool.labels.emplace_back(kNodePoolLabel, name);
  spec["requirements"].for_each_element([&](JsonView expression) {
    if (auto requirement = read_node_requirement(expression, false)) pool.requirements.push_back(*requirement);
  });
  auto taints = read_taints(spec["taints"], "spec.template.spec.taints");
  if (!taints) return taints.status();
  pool.taints = std::move(taints).value();
  const JsonView ref = spec["nodeClassRef"];
  pool.node_class = std::string(ref["kind"].string()) + "/" + std::string(ref["name"].string());
  pool.cloud = cloud_of_node_class(ref["kind"].string());
  if (!pool.cloud) return {};  // no machine of the catalogue: the pool adds none
  // Karpenter labels its nodes with their node class too:
  // karpenter.k8s.aws/ec2nodeclass=<name>.
  pool.labels.emplace_back(std::string(ref["group"].string()) + "/" + lowercase(ref["kind"].string()),
                           std::string(ref["name"].string()));
  const JsonView limits = object["spec"]["limits"];
  if (Status status = not_an_object(limits, "spec.limits"); !status.ok()) return status;
  Status status;
  limits.for_each_member([&](std::string_view resource, JsonView value) {
    if (!status.ok()) return;
    auto quantity = read_quantity(value, "spec.limits." + std::string(resource), false);
    if (!quantity) {
      status = quantity.status();
      return;
    }
    if (resource == "cpu") pool.limit_cpu_millis = quantity.value().milli_ceil();
    if (resource == "memory") pool.limit_memory_bytes = quantity.value().value_ceil();
    if (resource == "nvidia.com/gpu") pool.limit_gpus = quantity.value().value_ceil();
  });
  if (!status.ok()) return status;
  objects.pools.push_back(std::move(pool));
  return {};
}

// A requirement that the machine's label be `value`.
NodeRequirement label_is(std::string_view key, std::string value) {
  return {std::string(key), NodeRequirement::Op::kIn, {std::move(value)}, false};
}

// A ComputeClass (cloud.google.com/v1): each priority a set of Google
// machines, by machine family or type, GPU type and count, cores and
// memory, with its boot disk or local SSDs. A priority of existing node
// pools (nodepools), TPUs or a Pod family names no machine of the
// catalogue and adds none.
Status read_compute_class(JsonView object, const std::string& name, AutoscalerObjects& objects) {
  std::size_t index = 0;
  Status status;
  object["spec"]["priorities"].for_each_element([&](JsonView priority) {
    const std::string at = "spec.priorities[" + std::to_string(index++) + "]";
    if (!status.ok()) return;
    if (!priority.is_object() || !priority["nodepools"].is_null() || !priority["tpu"].is_null() ||
        !priority["podFamily"].is_null()) {
      return;
    }
    AutoscalerPool pool;
    pool.kind = "ComputeClass";
    pool.name = name;
    pool.cloud = Cloud::kGoogle;
    pool.labels = {{std::string(kComputeClassLabel), name}};
    if (priority["spot"].is_true()) pool.labels.emplace_back("cloud.google.com/gke-spot", "true");
    for (auto& label : string_pairs(priority["nodeLabels"])) pool.labels.push_back(std::move(label));
    auto taints = read_taints(priority["taints"], at + ".taints");
    if (!taints) {
      status = taints.status();
      return;
    }
    pool.taints = std::move(taints).value();
    pool.taints.push_back({std::string(kComputeClassLabel), name, TaintEffect::kNoSchedule});
    if (const std::string_view family = priority["machineFamily"].string(); !family.empty())
      pool.requirements.push_back(label_is("cloud.google.com/machine-family", std::string(family)));
    if (const std::string_view type = priority["machineType"].string(); !type.empty())
      pool.requirements.push_back(label_is("node.kubernetes.io/instance-type", std::string(type)));
    const JsonView gpu = priority["gpu"];
    if (const std::string_view type = gpu["type"].string(); !type.empty())
      pool.requirements.push_back(label_is("cloud.google.com/gke-accelerator", std::string(type)));
    const auto number = [&](JsonView value, const std::string& field, auto apply) {
      if (!status.ok() || value.is_null()) return;
      auto read = whole_number(value, field);
      if (!read) {
        status = read.status();
        return;
      }
      apply(read.value());
    };
    number(gpu["count"], at + ".gpu.count", [&](int64_t count) {
      pool.requirements.push_back(label_is("cloud.google.com/gke-accelerator-count", std::to_string(count)));
    });
    number(priority["minCores"], at + ".minCores", [&](int64_t cores) { pool.min_vcpus = cores; });
    number(priority["minMemoryGb"], at + ".minMemoryGb",
           [&](int64_t gb) { pool.min_memory_mib = clamp_to_int64(int128{gb} * 1024); });
    const JsonView storage = priority["storage"];
    number(storage["bootDiskSize"], at + ".storage.bootDiskSize",
           [&](int64_t gb) { pool.settings.disk_bytes = clamp_to_int64(int128{gb} * kGiB); });
    number(storage["localSSDCount"], at + ".storage.localSSDCount",
           [&](int64_t count) { pool.settings.local_ssds = count; });
    if (status.ok()) objects.pools.push_back(std::move(pool));
  });
  return status;
}

}  // namespace

std::string_view autoscaler_kind(JsonView object) {
  const std::string_view kind = object["kind"].string();
  const std::string_view group = group_of(object);
  if (kind == "NodePool" && group == "karpenter.sh") return kind;
  if (kind == "EC2NodeClass" && group == "karpenter.k8s.aws") return kind;
  if (kind == "AKSNodeClass" && group == "karpenter.azure.com") return kind;
  if (kind == "ComputeClass" && group == "cloud.google.com") return kind;
  return {};
}

Status add_autoscaler_object(JsonView object, AutoscalerObjects& objects) {
  const std::string_view kind = autoscaler_kind(object);
  const std::string name(object["metadata"]["name"].string());
  if (name.empty()) return Status::failure(ProblemCode::kMissingField, "metadata.name", "metadata.name is missing");
  if (Status status = not_an_object(object["spec"], "spec"); !status.ok()) return status;
  if (kind == "NodePool") return read_node_pool(object, name, objects);
  if (kind == "ComputeClass") return read_compute_class(object, name, objects);
  LaunchSettings settings;
  Status status = kind == "EC2NodeClass" ? read_ec2_node_class(object["spec"], settings)
                                         : read_aks_node_class(object["spec"], settings);
  if (!status.ok()) return status;
  objects.node_classes[std::string(kind) + "/" + name] = settings;
  return {};
}

}  // namespace gpusizer
