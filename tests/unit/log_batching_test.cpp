// Review lines wait in memory and are written with the next line that is
// not one, in order (src/server/log.cpp): one write per batch, not per
// review.
#include <chrono>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "gpusizer/server/log.h"
#include "support/captured_stderr.h"

namespace gpusizer::log_batching_test {
namespace {

void log_review_uid(spdlog::level::level_enum level, std::string_view uid) {
  LogLine line(log_format(), "review");
  line.add_string("uid", uid);
  log_review_line(level, line);
}

TEST(LogBatching, ReviewLinesWaitForTheNextOtherLineAndKeepTheirOrder) {
  testing::CapturedStderr stderr_pipe;
  // A timer that never fires in the test: what is written is what the
  // lines themselves cause.
  configure_logging(LogFormat::kText, spdlog::level::info, std::chrono::hours(1));
  log_review_uid(spdlog::level::info, "first");
  log_review_uid(spdlog::level::info, "second");
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
  log_review_uid(spdlog::level::warn, "failed");
  EXPECT_NE(stderr_pipe.written().find("review uid=failed"), std::string::npos);
}

TEST(LogBatching, ConfiguringAgainReplacesTheLoggers) {
  configure_logging(LogFormat::kJson, spdlog::level::info, std::chrono::hours(1));
  EXPECT_NO_THROW(configure_logging(LogFormat::kText, spdlog::level::info, std::chrono::hours(1)));
}

}  // namespace
}  // namespace gpusizer::log_batching_test
