// A serving engine's flags read from a GPU container's command and args.
#pragma once

#include <cstddef>
#include <string>

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

// The container's command and args as one line, each string joined to the
// next by a space (["python3", "-m", "vllm.entrypoints.openai.api_server"]
// is "python3 -m vllm.entrypoints.openai.api_server"): what a profile rule
// `on: command` matches. At most max_bytes of it (a hostile spec's
// megabyte script is matched by its start).
inline constexpr std::size_t kCommandLineBytes = 4096;
std::string command_line(JsonView command, JsonView args, std::size_t max_bytes);

}  // namespace gpusizer
