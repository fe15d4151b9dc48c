// DRA objects (resource.k8s.io v1, v1beta2 and v1beta1, as the API server
// and manifests give them) read into what sizing keeps of them
// (sizing/device_claims.h): a ResourceClaimTemplate's or ResourceClaim's
// device requests, with each request's device class, count or allocation
// mode and firstAvailable alternatives, a DeviceClass's
// extendedResourceName, and a node-local ResourceSlice's devices (each
// one's type, product and memory). Selectors are kept only as the model
// they compare to; configs, constraints and status are not kept.
#pragma once

#include <optional>
#include <string_view>

#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// The most devices one request may ask for that gpu-sizer reads; more is
// refused as a value no node has (the API server itself caps a claim's
// allocation at 32 devices: AllocationResultsMaxSize, resource/v1 types.go).
inline constexpr int64_t kMaxDevicesPerRequest = 1 << 20;

// Whether (group, kind) is one of the kinds read here.
bool is_dra_kind(std::string_view group, std::string_view kind);

// One object (a ComputeDomain is read as the ResourceClaimTemplate its
// controller makes). nullopt for an object of another kind, for a ResourceClaim
// a Pod owns (the API server made it from a template for that pod, and no
// other pod names it), and for a ResourceSlice of devices on no one node. Fails naming the field and the
// value: `spec.spec.devices.requests[0].exactly.count "two" must be a whole
// number from 1 to 1048576` (the caller names the object).
Result<std::optional<DraObject>> read_dra_object(JsonView object);

}  // namespace gpusizer
