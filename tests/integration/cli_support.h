// Shared by the command-line tests (cli_test.cpp and cli_rules_test.cpp):
// the gpu-sizer binary run through the shell, and the workload manifests
// under tests/data/workloads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdio>
#include <string>

#include <sys/wait.h>

namespace gpusizer::testing::cli_test {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs gpu-sizer with args through the shell; stderr joins stdout unless
// the args redirect it themselves.
inline CommandResult run(const std::string& args, bool merge_stderr = true) {
  const std::string command = std::string(GPU_SIZER_BINARY) + " " + args + (merge_stderr ? " 2>&1" : "");
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline const std::string kWorkloads = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/";

}  // namespace gpusizer::testing::cli_test
