// GPU facts from ResourceSlices where node labels lack them: a DRA driver
// publishes each node's devices with their attributes (productName) and
// capacity (memory), and a cluster that runs the DRA driver without GPU
// Feature Discovery has no GPU label on its nodes. A node whose labels
// name no GPU product takes the product and memory of the first whole GPU
// its slices publish, of a driver whose DeviceClass of the same name the
// policy counts as GPUs (gpu.nvidia.com); a device whose type attribute
// says otherwise (mig, channel) is not a whole GPU. Then GPUs by claim
// know their nodes, and the GPU memory check its product
// (docs/rules.md "DRA claims").
#pragma once

#include <memory>
#include <string_view>

#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// The GPU facts a node's slices give; an empty product when none.
NodeGpu slice_gpu(const ClaimInventory& claims, const Policy& policy, std::string_view node);

// `nodes` with slice facts in the classes whose labels name no GPU product
// (each class takes its first node's that has any); nullptr when no class
// gains any, and `nodes` stands as it is.
std::shared_ptr<const NodeInventory> with_slice_gpus(const NodeInventory& nodes, const ClaimInventory& claims,
                                                     const Policy& policy);

}  // namespace gpusizer
