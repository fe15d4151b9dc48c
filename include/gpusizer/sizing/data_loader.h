// The data-loader memory floor (seed 001): host RAM that PyTorch DataLoader
// workers hold in prefetched batches, from the pod annotation
// gpu-sizer.io/dataloader. Pure: plain structs in and out, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

inline constexpr const char* kDataLoaderKey = "gpu-sizer.io/dataloader";

// Host RAM of DataLoader prefetch buffers (seed 001), from the annotation
// gpu-sizer.io/dataloader.
struct DataLoaderPolicy {
  Milli overhead_factor = 0;  // on each prefetched batch
  Quantity per_gpu_base;      // per rank: the process and its copy of the weights
  Quantity pod_base;          // per pod: OS and base
  int64_t default_prefetch = 2;
  Quantity round_up_to;  // the floor is a whole multiple of this
  std::map<std::string, int64_t, std::less<>> dtype_bytes;

  // The policy block dataLoader (rule_settings.h).
  static constexpr std::string_view kKey = "dataLoader";
  void read(const YAML::Node& node, bool complete);
};

// One GPU's DataLoader, as the annotation gives it. Values are per GPU
// (seed 001: "Keep these PER GPU").
struct DataLoaderSpec {
  int64_t workers = 0;          // 0: no worker processes, no buffer
  int64_t prefetch = 0;         // batches each worker keeps ready
  int64_t batch = 0;            // samples per batch
  std::vector<int64_t> sample;  // dimensions of one sample: 3x224x224
  std::string dtype;            // a key of DataLoaderPolicy::dtype_bytes
  int64_t dtype_bytes = 0;      // its value, resolved when parsed
};

// Parses "workers=12,prefetch=3,batch=256,sample=3x224x224,dtype=float32":
// comma-separated key=value parts, ASCII spaces around parts ignored, each
// key at most once. workers 0..1024 and batch 1..10^6 and sample (1 to 8
// dimensions, each 1..10^6) are required; prefetch 1..1024 defaults to
// policy.default_prefetch, dtype to float32. A batch or a per-GPU buffer
// above 2^62 bytes is an error, so data_loader_floor never overflows.
// Errors name the part and the problem:
//   part "workers=twelve": must be a whole number from 0 to 1024
// and the caller prefixes the pod and the annotation.
Result<DataLoaderSpec> parse_dataloader(std::string_view text, const DataLoaderPolicy& policy);

// What the data loader of a pod with `gpus` GPUs needs, in bytes:
//   batch  = batch x product(sample) x dtype bytes
//   buffer = ceil(workers x prefetch x batch x overheadFactor)     per GPU
//   memory = roundUp(gpus x (buffer + perGpuBase) + podBase, roundUpTo)
struct DataLoaderFloor {
  Quantity memory;
  int64_t batch_bytes = 0;
  int64_t buffer_bytes_per_gpu = 0;
  std::string brief;   // "4x(32x8x147Mi x1.56+2Gi)+3Gi", for warnings
  std::string detail;  // "4 x (32 workers x 8 prefetch x 147Mi batch x 1.56 + 2Gi) + 3Gi"
};

// REQUIRES: spec came from parse_dataloader with this policy, gpus >= 1.
// (Past parse_dataloader's limits the bytes saturate rather than overflow.)
DataLoaderFloor data_loader_floor(const DataLoaderPolicy& policy, const DataLoaderSpec& spec, int64_t gpus);

}  // namespace gpusizer
