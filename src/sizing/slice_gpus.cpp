#include "gpusizer/sizing/slice_gpus.h"

#include <algorithm>

namespace gpusizer {

NodeGpu slice_gpu(const ClaimInventory& claims, const Policy& policy, std::string_view node) {
  NodeGpu gpu;
  const auto found = claims.node_slices.find(node);
  if (found == claims.node_slices.end()) return gpu;
  for (const auto& slice : found->second) {
    const AcceleratorClass* of = policy.device_class_for(slice->driver);
    if (!of || of->sizing != AcceleratorSizing::kGpus) continue;
    for (const SliceDevice& device : slice->devices) {
      if ((!device.type.empty() && device.type != "gpu") || device.product.empty()) continue;
      // GPU Feature Discovery labels the same name with its spaces as
      // dashes (NVIDIA-A100-SXM4-80GB): the GPU table matches that form.
      gpu.product = device.product;
      std::replace(gpu.product.begin(), gpu.product.end(), ' ', '-');
      gpu.product_label = "ResourceSlice " + slice->driver + " productName";
      gpu.from_slice = true;
      gpu.vendor = gpu_vendor_named(slice->driver);
      if (device.memory_bytes > 0) {
        gpu.memory_bytes = device.memory_bytes;
        gpu.memory_label = "ResourceSlice " + slice->driver + " capacity memory";
      }
      return gpu;
    }
  }
  return gpu;
}

std::shared_ptr<const NodeInventory> with_slice_gpus(const NodeInventory& nodes, const ClaimInventory& claims,
                                                     const Policy& policy) {
  if (claims.node_slices.empty()) return nullptr;
  std::shared_ptr<NodeInventory> filled;
  for (std::size_t i = 0; i < nodes.classes.size(); ++i) {
    const NodeClass& node_class = nodes.classes[i];
    if (!node_class.gpu.product.empty()) continue;
    for (const std::string& name : node_class.names) {
      NodeGpu gpu = slice_gpu(claims, policy, name);
      if (gpu.product.empty()) continue;
      if (!filled) {
        filled = std::make_shared<NodeInventory>(nodes);
        filled->id = NodeInventory::next_id();
      }
      filled->classes[i].gpu = std::move(gpu);
      break;
    }
  }
  return filled;
}

}  // namespace gpusizer
