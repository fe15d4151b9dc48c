// Allocatable of a catalogue machine (instance_types.h), by each provider's
// published arithmetic: allocatable = capacity - kube-reserved -
// system-reserved (none on all three unless a node class sets it) - the
// hard eviction threshold.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "gpusizer/sizing/instance_types.h"
#include "gpusizer/util/numbers.h"

namespace gpusizer {
namespace {

// Karpenter's VM memory overhead, the fraction of the machine's memory a
// node does not report as capacity (--vm-memory-overhead-percent, default
// 0.075: aws/karpenter-provider-aws pkg/operator/options/options.go;
// Azure/karpenter-provider-azure the same), in thousandths.
constexpr int64_t kVmOverheadThousandths = 75;

// A bracketed reservation: `rate` (in 1/10000) of the part of the amount
// from `from` up to the next bracket's `from`.
struct Bracket {
  int64_t from;
  int64_t rate;
};

// The reservation in 1/10000 of the amount's unit: the callers truncate
// once, at the end, as the providers do.
template <std::size_t N>
int64_t bracketed(int64_t amount, const Bracket (&brackets)[N]) {
  int64_t reserved = 0;
  for (std::size_t i = 0; i < N && amount > brackets[i].from; ++i) {
    const int64_t to = i + 1 < N ? std::min(amount, brackets[i + 1].from) : amount;
    reserved += (to - brackets[i].from) * brackets[i].rate;
  }
  return reserved;
}

int64_t capacity_mib(int64_t machine_mib) {
  return machine_mib - (machine_mib * kVmOverheadThousandths + 999) / 1000;  // Karpenter rounds the overhead up
}

// A new node as its provider makes it with no setting: capacity, the
// kube-reserved it computes, and its hard eviction thresholds (system-reserved
// is none on all three).
struct NodeDefaults {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t storage_bytes = 0;
  int64_t reserved_cpu_millis = 0;
  int64_t reserved_memory_bytes = 0;
  int64_t reserved_storage_bytes = 0;
  int64_t eviction_memory_bytes = 0;
  int64_t eviction_storage_bytes = 0;
};

// AWS, Karpenter with an AL2023 EC2NodeClass (aws/karpenter-provider-aws
// pkg/providers/instancetype/types.go; amifamily/resolver.go DefaultEBS):
// memory less 11 MiB a pod (kubelet maxPods, else the ENI-limited count)
// + 255 MiB and the 100Mi eviction threshold; ephemeral storage on the root
// volume (20Gi by default), less 1Gi kube-reserved and the 10% nodefs
// eviction threshold.
NodeDefaults aws_defaults(const InstanceType& machine, const LaunchSettings& settings) {
  const int64_t disk = settings.disk_bytes.value_or(20 * kGiB);
  return {machine.vcpus * 1000,
          capacity_mib(machine.memory_mib) * kMiB,
          disk,
          gke_reserved_cpu_millis(machine.vcpus),
          eks_reserved_memory_mib(settings.max_pods.value_or(machine.eni_pods)) * kMiB,
          kGiB,
          100 * kMiB,
          (disk + 9) / 10};
}

// The filesystem a 100 GB boot disk gives a GKE node, as it reports it:
// the published example's capacity (98831908Ki, plan-node-sizes), and the
// same fraction of any other disk.
constexpr int64_t kGkeBootFilesystem = int64_t{98831908} * 1024;
constexpr int64_t kGkeBootDisk = 100 * kGiB;

int64_t gke_filesystem(int64_t disk) {
  return static_cast<int64_t>(static_cast<double>(disk) * static_cast<double>(kGkeBootFilesystem) /
                              static_cast<double>(kGkeBootDisk));
}

// The kubelet takes its 10% eviction threshold as a float32 fraction of
// the filesystem (0.1f is a little over 0.1): the published example
// recomputes to the byte only so.
int64_t gke_eviction(int64_t filesystem) {
  return static_cast<int64_t>(static_cast<double>(filesystem) * static_cast<double>(0.1F));
}

// Google, GKE (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes):
// memory less GKE's brackets on the machine's memory and the 100 MiB
// eviction threshold; ephemeral storage on the boot disk (100 GB by
// default) less min(50%, 6 GiB + 35%, 100 GiB) of it and the 10% eviction
// threshold, or on local SSDs (the machine's bundled ones, or a
// ComputeClass's localSSDCount) less 50, 75 or 100 GiB for one, two or
// more (GoogleCloudPlatform/cluster-autoscaler pkg/cloudprovider/gke/reserved.go).
NodeDefaults google_defaults(const InstanceType& machine, const LaunchSettings& settings) {
  const int64_t disk = settings.disk_bytes.value_or(kGkeBootDisk);
  int64_t filesystem = disk == kGkeBootDisk ? kGkeBootFilesystem : gke_filesystem(disk);
  int64_t reserved = std::min({disk / 2, 6 * kGiB + disk * 35 / 100, 100 * kGiB});
  const int64_t ssds = settings.local_ssds.value_or(machine.bundled_local_ssds);
  if (ssds > 0) {
    filesystem = gke_filesystem(ssds * 375 * kGiB);
    reserved = ssds == 1 ? 50 * kGiB : ssds == 2 ? 75 * kGiB : 100 * kGiB;
  }
  return {machine.vcpus * 1000,
          capacity_mib(machine.memory_mib) * kMiB,
          filesystem,
          gke_reserved_cpu_millis(machine.vcpus),
          gke_reserved_memory_mib(machine.memory_mib) * kMiB,
          reserved,
          100 * kMiB,
          gke_eviction(filesystem)};
}

// Azure, Karpenter on Azure as AKS node auto-provisioning runs it
// (Azure/karpenter-provider-azure pkg/providers/instancetype/instancetype.go):
// AKS's CPU table, the memory brackets on whole GiB and the 750Mi
// eviction threshold (the reservations before AKS 1.29, larger than 1.29's
// 20 MB a pod + 50 MB and 100Mi: the smaller allocatable of the two);
// ephemeral storage on the OS disk (osDiskSizeGB, 128 GB by default) less
// the 10% eviction threshold.
NodeDefaults azure_defaults(const InstanceType& machine, const LaunchSettings& settings) {
  const int64_t disk = settings.disk_bytes.value_or(int64_t{128} * 1000 * 1000 * 1000);
  return {machine.vcpus * 1000,
          capacity_mib(machine.memory_mib) * kMiB,
          disk,
          aks_reserved_cpu_millis(machine.vcpus),
          aks_reserved_memory_mib(machine.memory_mib / 1024) * kMiB,
          0,
          750 * kMiB,
          disk / 10};
}

NodeDefaults defaults(const InstanceType& machine, const LaunchSettings& settings) {
  switch (machine.cloud) {
    case Cloud::kAws: return aws_defaults(machine, settings);
    case Cloud::kGoogle: return google_defaults(machine, settings);
    case Cloud::kAzure: return azure_defaults(machine, settings);
  }
  return {};
}

// A set eviction threshold as Karpenter computes it (aws/karpenter-provider-aws
// pkg/providers/instancetype/types.go computeEvictionSignal): a percentage
// of capacity rounded up, "100%" disabling the signal.
int64_t threshold(const std::optional<LaunchSettings::Threshold>& set, int64_t capacity, int64_t otherwise) {
  if (!set) return otherwise;
  if (set->percent >= 100) return set->bytes;
  return set->bytes + static_cast<int64_t>(std::ceil(static_cast<double>(capacity) / 100 * set->percent));
}

}  // namespace

int64_t gke_reserved_cpu_millis(int64_t vcpus) {
  static constexpr Bracket kBrackets[] = {{0, 600}, {1000, 100}, {2000, 50}, {4000, 25}};
  return bracketed(vcpus * 1000, kBrackets) / 10000;
}

int64_t aks_reserved_cpu_millis(int64_t vcpus) {
  static constexpr Bracket kBrackets[] = {{0, 600}, {1000, 400}, {2000, 200}, {4000, 100}};
  return bracketed(vcpus * 1000, kBrackets) / 10000;
}

int64_t gke_reserved_memory_mib(int64_t machine_mib) {
  // GKE's edges are 4000, 8000, ... MiB (its autoscaler: "treating GB as
  // 1000*MiB"), which real nodes confirm; a machine of 1000 MiB or less
  // gets 255 MiB.
  if (machine_mib <= 1000) return 255;
  static constexpr Bracket kBrackets[] = {{0, 2500}, {4000, 2000}, {8000, 1000}, {16000, 600}, {128000, 200}};
  return bracketed(machine_mib, kBrackets) / 10000;
}

int64_t aks_reserved_memory_mib(int64_t machine_gib) {
  static constexpr Bracket kBrackets[] = {{0, 2500}, {4, 2000}, {8, 1000}, {16, 600}, {128, 200}};
  // In GiB, then MiB truncated, as Karpenter on Azure does.
  return bracketed(machine_gib, kBrackets) * 1024 / 10000;
}

int64_t eks_reserved_memory_mib(int64_t pods) { return 11 * pods + 255; }

Allocatable allocatable(const InstanceType& machine, const LaunchSettings& settings) {
  const NodeDefaults node = defaults(machine, settings);
  const LaunchSettings::Reserved& kube = settings.kube_reserved;
  const LaunchSettings::Reserved& system = settings.system_reserved;
  // allocatable = capacity - kube-reserved - system-reserved - eviction, never below nothing.
  const auto left = [](int64_t capacity, int64_t reserved) { return std::max<int64_t>(0, capacity - reserved); };
  return {
      left(node.cpu_millis, kube.cpu_millis.value_or(node.reserved_cpu_millis) + system.cpu_millis.value_or(0)),
      left(node.memory_bytes, kube.memory_bytes.value_or(node.reserved_memory_bytes) + system.memory_bytes.value_or(0) +
                                  threshold(settings.eviction_memory, node.memory_bytes, node.eviction_memory_bytes)),
      left(node.storage_bytes,
           kube.storage_bytes.value_or(node.reserved_storage_bytes) + system.storage_bytes.value_or(0) +
               threshold(settings.eviction_storage, node.storage_bytes, node.eviction_storage_bytes))};
}

}  // namespace gpusizer
