// What gpu-sizer knows of DRA (resource.k8s.io, KEP-4381) objects: the
// device requests of ResourceClaimTemplates and ResourceClaims, the
// DeviceClasses they name, and the devices drivers publish on each node
// (ResourceSlices: GPU facts node labels may lack, sizing/slice_gpus.h). A pod's container that uses a claim (its
// resources.claims) gets the claim's devices; with the claim known, the
// devices of a class the policy counts as GPUs are sized as GPUs
// (docs/rules.md "DRA claims").
//
// The objects come from the files `check` reads, or from serve's watch of
// the cluster's (server/claim_watcher.h); nodes/claim_reader.h reads them.
// Pure: plain structs, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpusizer {

// One way a request may be met: the request itself (`exactly`, or
// v1beta1's fields on the request), or one of its `firstAvailable`
// subrequests, in the order the scheduler tries them.
struct DeviceAlternative {
  std::string name;          // the subrequest's; empty for the request itself
  std::string device_class;  // deviceClassName
  int64_t count = 1;         // allocationMode ExactCount's count (the API's default: 1)
  bool all = false;          // allocationMode All: every matching device of the node
  // A value its CEL selectors compare a model attribute to
  // (productName, model, profile == '...'), for messages; empty: none.
  std::string model;
  // Its selectors ask for a partition of a GPU by the device's type
  // (ROCm/k8s-gpu-dra-driver: gpu.amd.com serves whole GPUs and
  // partitions, `type == "amdgpu-partition"`): part of a GPU, as a MIG slice.
  bool partition = false;
};

struct DeviceRequest {
  std::string name;
  std::vector<DeviceAlternative> alternatives;  // one, or firstAvailable's, in order
};

// A ResourceClaim's spec (a template's spec.spec).
struct ClaimSpec {
  std::vector<DeviceRequest> requests;
};

enum class DraKind { kClaimTemplate, kClaim, kDeviceClass, kResourceSlice };
// "ResourceClaimTemplate", "ResourceClaim", "DeviceClass", "ResourceSlice".
std::string_view to_string(DraKind kind);
// "ResourceClaimTemplates", "ResourceClaims", "DeviceClasses", "ResourceSlices".
std::string_view plural(DraKind kind);

// One device a driver publishes in a ResourceSlice, as far as sizing reads it.
struct SliceDevice {
  std::string type;          // its "type" attribute (NVIDIA's gpu, mig, channel...); empty: none
  std::string product;       // its productName attribute, else model; empty: none
  int64_t memory_bytes = 0;  // its memory capacity; 0: not given
};

// A ResourceSlice of devices local to one node (spec.nodeName); slices of
// devices that are not (network-attached: allNodes, nodeSelector) are not kept.
struct DeviceSlice {
  std::string node;
  std::string driver;
  std::vector<SliceDevice> devices;
};

// One object as read.
struct DraObject {
  DraKind kind = DraKind::kClaimTemplate;
  std::string namespace_name;  // empty for a DeviceClass (cluster-scoped)
  std::string name;
  ClaimSpec spec;                 // a template or claim
  std::string extended_resource;  // a DeviceClass's spec.extendedResourceName (KEP-5004); empty: none
  DeviceSlice slice;              // a ResourceSlice
};

// The DRA objects known, immutable once built.
struct ClaimInventory {
  // Where they came from, as warnings say it: "the checked files", "the cluster".
  std::string origin;
  // Set while they may be out of date (the watch has not listed, or lost
  // the API server): a claim not found is then said to be unknown, not
  // missing.
  std::string stale;
  // By "namespace/name" (claims and templates) or name (classes).
  std::map<std::string, std::shared_ptr<const ClaimSpec>, std::less<>> templates;
  std::map<std::string, std::shared_ptr<const ClaimSpec>, std::less<>> claims;
  // DeviceClass names by their extendedResourceName.
  std::map<std::string, std::string, std::less<>> extended_resources;
  std::size_t device_classes = 0;
  // ResourceSlices by the node their devices are on.
  std::map<std::string, std::vector<std::shared_ptr<const DeviceSlice>>, std::less<>> node_slices;
  // Distinct for every inventory built: the key of what is worked out once
  // per inventory (slice_gpus.h).
  uint64_t id = 0;

  // The template or claim `kind` ("ResourceClaimTemplate" or
  // "ResourceClaim") named `name` in `namespace_name`; nullptr: not known.
  const ClaimSpec* find(std::string_view kind, std::string_view namespace_name, std::string_view name) const;
};

// Builds inventories from objects one at a time (a watch, the files of a
// check) and takes an immutable inventory when wanted.
class ClaimInventoryBuilder {
 public:
  explicit ClaimInventoryBuilder(std::string origin) : origin_(std::move(origin)) {}
  // Adds the object, or replaces the one of the same kind and name.
  void upsert(DraObject object);
  // Returns whether it was known.
  bool remove(DraKind kind, std::string_view namespace_name, std::string_view name);
  // Forgets every object of the kind (a watch lists it again).
  void clear(DraKind kind);
  std::size_t count(DraKind kind) const;
  std::shared_ptr<const ClaimInventory> build(std::string stale = {}) const;

 private:
  std::string origin_;
  std::map<std::string, std::shared_ptr<const ClaimSpec>, std::less<>> templates_;
  std::map<std::string, std::shared_ptr<const ClaimSpec>, std::less<>> claims_;
  std::map<std::string, std::string, std::less<>> classes_;                        // name -> extendedResourceName
  std::map<std::string, std::shared_ptr<const DeviceSlice>, std::less<>> slices_;  // by name
};

}  // namespace gpusizer
