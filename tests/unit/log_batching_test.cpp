// Review lines wait in memory and are written with the next line that is
// not one, in order (src/server/log.cpp): one write per batch, not per
// review.
#include <array>
#include <chrono>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "gpusizer/server/log.h"

namespace gpusizer {
namespace {

// Redirects stderr to a pipe for the test's lifetime.
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

  // What has been written so far.
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

TEST(LogBatching, ReviewLinesWaitForTheNextOtherLineAndKeepTheirOrder) {
  CapturedStderr stderr_pipe;
  // A timer that never fires in the test: what is written is what the
  // lines themselves cause.
  configure_logging(LogFormat::kText, spdlog::level::info, std::chrono::hours(1));
  log_review_event(spdlog::level::info, {{"uid", "first"}});
  log_review_event(spdlog::level::info, {{"uid", "second"}});
  EXPECT_EQ(stderr_pipe.written(), "");
  log_event(spdlog::level::info, "policy reloaded");
  const std::string written = stderr_pipe.written();
  const auto first = written.find("review uid=first");
  const auto second = written.find("review uid=second");
  const auto other = written.find("policy reloaded");
  ASSERT_NE(first, std::string::npos) << written;
  ASSERT_NE(second, std::string::npos) << written;
  ASSERT_NE(other, std::string::npos) << written;
  EXPECT_LT(first, second);
  EXPECT_LT(second, other);
  // A review that failed is written at once.
  log_review_event(spdlog::level::warn, {{"uid", "failed"}});
  EXPECT_NE(stderr_pipe.written().find("review uid=failed"), std::string::npos);
}

TEST(LogBatching, ConfiguringAgainReplacesTheLoggers) {
  configure_logging(LogFormat::kJson, spdlog::level::info, std::chrono::hours(1));
  EXPECT_NO_THROW(configure_logging(LogFormat::kText, spdlog::level::info, std::chrono::hours(1)));
}

}  // namespace
}  // namespace gpusizer
