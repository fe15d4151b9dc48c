// What would make a model fit when it does not (design
// docs/plans/issue-8-design.md section 2.3 "Options"): one lever at a time
// (ZeRO-3, checkpointing, a micro-batch of 1, 8-bit Adam, offload, more
// GPUs, LoRA or QLoRA, a lighter precision, tensor parallelism, a larger
// GPU of gpuMemory.gpus), pairs only when no single
// lever fits. Pure: plain structs in and out.
#pragma once

#include <cstdint>
#include <vector>

#include "gpusizer/sizing/model_fit.h"

namespace gpusizer {

// The options for `spec` on `gpus` GPUs of model `gpu`: those that fit,
// least GPU memory in total then least need first, followed by the single
// changes that do not fit, each at its lowest need.
std::vector<VramOption> vram_options(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t gpus,
                                     const GpuModel& gpu);

}  // namespace gpusizer
