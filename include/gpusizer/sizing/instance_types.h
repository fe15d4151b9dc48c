// The GPU machines of AWS, Google Cloud and Azure, as a built-in catalogue
// (docs/nodes.md "Instance catalogue"), and what each provider's published
// arithmetic leaves a pod of them (allocatable). A pool that scales from
// zero shows no node until a pod waits for one: these are the machines
// that can exist for it. Each row cites the source of its numbers. Pure:
// plain data and arithmetic, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gpusizer {

enum class Cloud { kAws, kGoogle, kAzure };
// "aws", "google", "azure".
std::string_view to_string(Cloud cloud);

struct InstanceType {
  Cloud cloud;
  std::string_view name;  // its node.kubernetes.io/instance-type label
  int64_t vcpus;
  int64_t memory_mib;  // as the provider's API reports the machine's memory
  int64_t gpus;
  // The provider's name for the GPU, as its node labels write it:
  // Karpenter's instance-gpu-name ("l40s"), GKE's gke-accelerator
  // ("nvidia-l4"), Karpenter on Azure's sku-gpu-name ("A100"; empty where
  // the size's name carries none).
  std::string_view gpu;
  int64_t gpu_memory_mib;  // per GPU
  // AWS: the ENI-limited pod count (Karpenter and the EKS AMI reserve
  // memory by it); 0 elsewhere.
  int64_t eni_pods;
  // Local SSD holding ephemeral storage with no setting (GKE's bundled
  // local SSDs: how many 375 GiB disks); 0: the boot disk holds it.
  int64_t bundled_local_ssds;
  std::string_view source;  // where the row's numbers come from
};

// Every row, AWS first; names are unique.
std::span<const InstanceType> instance_types();
// The row named `name`, or nullptr.
const InstanceType* find_instance_type(std::string_view name);

// What a node of the machine reports as allocatable.
struct Allocatable {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t ephemeral_storage_bytes = 0;
};

// What a node class sets of a new node that changes its allocatable: an
// EC2NodeClass's block devices and spec.kubelet, an AKSNodeClass's OS disk
// and kubelet, a GKE ComputeClass priority's storage. Unset: the provider's
// default.
struct LaunchSettings {
  // The disk that holds ephemeral storage: the EC2NodeClass's root volume
  // (or its AMI family's ephemeral block device), the AKSNodeClass's
  // osDiskSizeGB, the ComputeClass's bootDiskSize.
  std::optional<int64_t> disk_bytes;
  // GKE: local SSDs that hold ephemeral storage (storage.localSSDCount).
  std::optional<int64_t> local_ssds;
  // Ephemeral storage on something the catalogue does not size (an
  // EC2NodeClass's instanceStorePolicy RAID0: the instance store): not known.
  bool storage_unknown = false;
  // kubelet maxPods where memory is reserved by it (AWS Bottlerocket: 11
  // MiB a pod; AL2023 reserves by the ENI-limited count whatever it is).
  std::optional<int64_t> max_pods;
  struct Reserved {
    std::optional<int64_t> cpu_millis;
    std::optional<int64_t> memory_bytes;
    std::optional<int64_t> storage_bytes;
  };
  Reserved kube_reserved;    // each set resource replaces the provider's computed one
  Reserved system_reserved;  // none by default
  // evictionHard memory.available and nodefs.available: bytes, or a
  // percentage of capacity ("5%": 5; "100%" disables the signal).
  struct Threshold {
    int64_t bytes = 0;
    double percent = 0;
  };
  std::optional<Threshold> eviction_memory;
  std::optional<Threshold> eviction_storage;
};

// Allocatable as the provider's own arithmetic computes it for a new node
// (cloud_allocatable.cpp cites each constant):
//   AWS:    Karpenter's (aws/karpenter-provider-aws) with the default AL2023
//           EC2NodeClass (20Gi root volume), the EKS AMI's reservations;
//   Google: GKE's (plan-node-sizes), on the default 100 GB boot disk or the
//           bundled local SSDs;
//   Azure:  Karpenter on Azure's (Azure/karpenter-provider-azure), the AKS
//           node auto-provisioning default 128 GB OS disk.
// Memory capacity is the machine's less Karpenter's VM overhead (7.5%) on
// all three: a node reports less than the machine has, and no provider
// publishes by how much; real GKE nodes report about 2.5% less, so GKE's
// figure is a little under the real one, never over.
// With `settings`, what they set replaces the provider's default.
Allocatable allocatable(const InstanceType& machine, const LaunchSettings& settings = {});

// The reservations each provider publishes, on their own, for the tests
// that recompute published examples from nodes' reported capacity:
// kube-reserved CPU in millicores by the GKE/EKS brackets (6% of the first
// core, 1% of the second, 0.5% of the next two, 0.25% of the rest) ...
int64_t gke_reserved_cpu_millis(int64_t vcpus);
// ... and by AKS's table (60m for one core to 740m for 64: 6%, 4%, 2% and
// 1% brackets);
int64_t aks_reserved_cpu_millis(int64_t vcpus);
// GKE's kube-reserved memory in MiB from the machine's memory in MiB (25%,
// 20%, 10%, 6%, 2% brackets, edges at 4000, 8000, 16000 and 128000 MiB);
int64_t gke_reserved_memory_mib(int64_t machine_mib);
// AKS's (before 1.29, as Karpenter on Azure computes it) from the machine's
// memory in whole GiB: the same brackets on GiB edges;
int64_t aks_reserved_memory_mib(int64_t machine_gib);
// the EKS AMI's and Karpenter's: 11 MiB a pod plus 255 MiB.
int64_t eks_reserved_memory_mib(int64_t pods);

}  // namespace gpusizer
