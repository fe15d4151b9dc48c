// Shared by the command-line tests (cli_test.cpp and cli_rules_test.cpp):
// the gpu-sizer binary run through the shell, and the workload manifests
// under tests/data/workloads.
#pragma once

#include <string>

#include "integration/commands.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::cli_test {

// Runs gpu-sizer with args through the shell; stderr joins stdout unless
// the args redirect it themselves.
inline CommandResult run(const std::string& args, bool merge_stderr = true) {
  return run_shell(std::string(GPU_SIZER_BINARY) + " " + args + (merge_stderr ? " 2>&1" : ""));
}

// Runs gpu-sizer as run() does, within 1 GiB of address space and 60 s of
// CPU: input that once took all memory or hours fails its test instead of
// the machine. A sanitizer build runs without the address-space limit, and
// with ten times the CPU (it runs several times slower).
inline CommandResult run_bounded(const std::string& args) {
  // Sanitizers reserve terabytes of address space for their shadow memory,
  // so a build with one cannot run under an address-space limit.
  const std::string limits = kSanitized ? "ulimit -t 600; " : "ulimit -t 60; ulimit -v 1048576; ";
  return run_shell(limits + GPU_SIZER_BINARY + " " + args + " 2>&1");
}

inline const std::string kWorkloads = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/";

}  // namespace gpusizer::testing::cli_test
