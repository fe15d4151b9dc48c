// Stderr redirected to a pipe for a test's lifetime, for the log lines
// the process writes there.
#pragma once

#include <array>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace gpusizer::testing {

class CapturedStderr {
 public:
  CapturedStderr() {
    EXPECT_EQ(::pipe2(pipe_.data(), O_NONBLOCK), 0);
    saved_ = ::dup(STDERR_FILENO);
    ::dup2(pipe_[1], STDERR_FILENO);
  }
  ~CapturedStderr() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;
  CapturedStderr(CapturedStderr&&) = delete;
  CapturedStderr& operator=(CapturedStderr&&) = delete;

  // What has been written since the last call.
  std::string written() {
    std::string text;
    std::array<char, 4096> buffer{};
    ssize_t n = 0;
    while ((n = ::read(pipe_[0], buffer.data(), buffer.size())) > 0) text.append(buffer.data(), static_cast<size_t>(n));
    return text;
  }

 private:
  std::array<int, 2> pipe_{};
  int saved_ = -1;
};

}  // namespace gpusizer::testing
