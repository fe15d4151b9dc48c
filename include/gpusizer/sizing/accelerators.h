// How a pod asks for accelerators: the demand model every rule reads. Each
// ask is one resource (or annotation) of one container or pod: what it
// names, how many, what one unit is (a whole device, a MIG slice, a shared
// or time-sliced replica, a fraction or memory share), its vendor, the
// model when the ask states it, and the field it came from. Which names are
// accelerators, and how each counts for the host-RAM tables, is policy
// (`gpuResources` and `accelerators`, docs/policy.md): a unit counted as a
// GPU is sized by the tables; the rest are warned about with the tables'
// arithmetic, never passed with no word.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"

namespace gpusizer {

// What one unit of an ask is.
enum class AcceleratorForm {
  kDevice,    // a whole device (GPU, Gaudi, Neuron device, TPU chip...)
  kMigSlice,  // a MIG slice: a fixed share of one GPU's memory and compute
  kShared,    // a time-sliced or MPS replica of a GPU shared with other pods
  kFraction,  // a fraction of a GPU, or an amount of its memory or compute
  kUnknown,   // a resource named for GPUs that the policy does not list
};
std::string_view to_string(AcceleratorForm form);

// How the host-RAM tables count one unit.
enum class AcceleratorSizing {
  kGpus,    // as one GPU: the pod is sized by the tables
  kWarn,    // not at all: said, with what the tables would give per unit
  kDetail,  // it describes the container's devices (HAMi's nvidia.com/gpumem): shown, not counted
};
std::string_view to_string(AcceleratorSizing sizing);

// One entry of the policy's `accelerators` list.
struct AcceleratorClass {
  // An extended resource; a '*' matches any run of characters
  // ("nvidia.com/mig-*", "huawei.com/Ascend*-memory"). Empty for an annotation.
  std::string resource;
  std::string annotation;  // a pod annotation key (KAI's gpu-fraction); empty for a resource
  // A DRA DeviceClass name, matched as resource is ("gpu.nvidia.com",
  // "compute-domain-*"); empty for a resource or annotation.
  std::string device_class;
  AcceleratorForm form = AcceleratorForm::kDevice;
  AcceleratorSizing sizing = AcceleratorSizing::kWarn;
  std::string vendor;  // "NVIDIA", "Intel", "AWS"...
  std::string unit;    // what one unit is, for messages: "MIG slice", "MiB of GPU memory"
  // A detail's amount that is all of the device it describes (HAMi's
  // gpucores: 100 percent). Below it, or for any amount when 0 (MiB of
  // memory: how much a GPU has is not known), the device is shared.
  int64_t whole = 0;

  // Whether the resource (or, for a device class entry, the class name)
  // matches.
  bool matches(std::string_view name) const;
};

// A MIG profile in a resource or product name ("mig-3g.40gb",
// "A100-SXM4-40GB-MIG-1g.5gb"): the profile and its memory in GB.
struct MigProfile {
  std::string profile;  // "3g.40gb"
  int64_t memory_gb = 0;
};
std::optional<MigProfile> mig_profile(std::string_view name);

// One ask of one container (or of the pod, for an annotation, or of a DRA
// claim the container uses: then name is the device class). Small and
// cheap to make: GPU containers have one each, on every review.
struct AcceleratorAsk {
  // Its class: in the policy, or a built-in one for a name the policy
  // does not list (unknown_accelerator_class).
  const AcceleratorClass* of = nullptr;
  // The resource or annotation key. Points into the reviewed document or
  // the policy, which outlive the decision.
  std::string_view name;
  Quantity amount;  // how many units
  // Where it was read, below its holder: "limits" or "requests" of the
  // container's resources, or "metadata.annotations" of the pod.
  std::string_view field;
  std::string written;  // an annotation's value as written; empty for a resource
  // A DRA request met by every matching device of a node (allocationMode
  // All): how many is not known (amount 0).
  bool all_devices = false;
  // A DRA request with firstAvailable alternatives: amount is the fewest
  // devices of the class any of them asks for, up_to the most (0: one count).
  int64_t up_to = 0;
  // The model a DRA request's selector compares to ("NVIDIA H100 80GB
  // HBM3", a MIG profile "1g.5gb"); empty: none stated.
  std::string_view model;

  AcceleratorForm form() const { return of->form; }
  AcceleratorSizing sizing() const { return of->sizing; }
  // The class's vendor, else the name's domain ("example.com").
  std::string vendor() const;
  // A MIG slice's profile and memory, as its name states them.
  std::optional<MigProfile> mig() const;
  // The amount as a person wrote it: "2", "3000", an annotation's "0.5".
  std::string amount_text() const;
  // "2 nvidia.com/mig-3g.40gb (MIG slice)".
  std::string describe() const;
};

// The built-in class of a DRA request's partition of a GPU
// (DeviceAlternative::partition): part of one, warned as a MIG slice is.
const AcceleratorClass* gpu_partition();

// The built-in class of a resource the policy does not list: named for
// GPUs ("gpu" in the part after the domain, any case), or a DRA extended
// resource (deviceclass.resource.kubernetes.io/<class>); both kUnknown and
// warned. nullptr for anything else.
const AcceleratorClass* unknown_accelerator_class(std::string_view resource);
// The DeviceClass a DRA extended resource names implicitly (KEP-5004:
// every class is usable as deviceclass.resource.kubernetes.io/<class>);
// empty for any other resource.
std::string_view implicit_device_class(std::string_view resource);

// The same for a DRA device class the policy does not list: one named for
// GPUs ("gpu" anywhere in it); nullptr for any other (a NIC's, a CPU's).
const AcceleratorClass* unknown_device_class(std::string_view device_class);

}  // namespace gpusizer
