// A command run to its end with its output: by argv (fork and exec, no
// shell) or as a shell command line. Shared by the command-line and the
// Prometheus tests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace gpusizer::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when it did not exit (a signal)
  std::string output;  // stdout and stderr together
};

// In a forked child: runs argv[0] with argv, or exits 127 when it cannot.
[[noreturn]] inline void exec_or_exit(const std::vector<std::string>& argv) {
  std::vector<std::string> copy = argv;
  std::vector<char*> raw;
  for (auto& a : copy) raw.push_back(a.data());
  raw.push_back(nullptr);
  ::execv(raw[0], raw.data());
  ::_exit(127);
}

// Runs argv[0] (a path) with argv; stderr joins stdout.
inline CommandResult run_command(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    exec_or_exit(argv);
  }
  ::close(out[1]);
  CommandResult result;
  std::array<char, 4096> buffer;
  ssize_t n;
  while ((n = ::read(out[0], buffer.data(), buffer.size())) > 0) {
    result.output.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Runs a shell command line; its stdout is the output (a `2>&1` in it
// adds stderr).
inline CommandResult run_shell(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  CommandResult result;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace gpusizer::testing
