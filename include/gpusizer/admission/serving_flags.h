// A serving engine's flags read from a GPU container's command and args.
#pragma once

#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/pod_facts.h"

namespace gpusizer {

// vLLM's flags from the container's command and args, each string split
// on spaces so that `sh -c "vllm serve ..."` counts, written as
// "--flag=value" or "--flag value": --gpu-memory-utilization (the share of
// the GPU it allocates up front, in thousandths), --tensor-parallel-size
// (-tp) and --pipeline-parallel-size (-pp). A value that is not a number
// in range (an environment variable vLLM expands) is not read.
// REQUIRES: command and args are the container's (absent when it has none).
void read_serving_flags(JsonView command, JsonView args, ContainerFacts& container);

}  // namespace gpusizer
