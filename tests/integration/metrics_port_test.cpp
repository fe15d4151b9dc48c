// The metrics port (plain HTTP: /metrics, /status) against clients that
// hold it: it is served with deadlines and a connection cap of its own, so
// slow clients can neither stop Prometheus' scrapes nor hold up shutdown.
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "integration/raw_client.h"

namespace gpusizer::testing::metrics_port_test {
namespace {

const std::string kSlowScrape =
    "GET /metrics HTTP/1.1\r\nHost: gpu-sizer\r\nX-Padding: " + std::string(100, 'p') + "\r\n\r\n";

// Four clients sending a scrape a byte a second, each on its own thread.
class SlowMetricsClients {
 public:
  explicit SlowMetricsClients(int port) {
    for (int i = 0; i < 4; ++i) {
      threads_.emplace_back([this, port, i] {
        RawClient client(port);
        results_[i] = trickle(client, kSlowScrape, started_);
      });
    }
    started_.wait();
  }
  ~SlowMetricsClients() { join(); }
  SlowMetricsClients(const SlowMetricsClients&) = delete;
  SlowMetricsClients& operator=(const SlowMetricsClients&) = delete;

  const std::array<Trickle, 4>& join() {
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
    return results_;
  }

 private:
  std::latch started_{4};
  std::array<Trickle, 4> results_{};
  std::vector<std::thread> threads_;
};

TEST(MetricsPort, SlowClientsAreCutAndScrapesGoOn) {
  WebhookProcess webhook({"--metrics-listen", "127.0.0.1:0"});
  SlowMetricsClients slow(webhook.metrics_port());
  // Before issue 25 the four held both threads of the metrics server, and
  // every scrape failed until they were done.
  for (int i = 0; i < 5; ++i) {
    const auto asked = Clock::now();
    EXPECT_TRUE(contains(scrape_metrics(webhook), "gpu_sizer_build_info")) << "scrape " << i;
    EXPECT_LT(Clock::now() - asked, seconds(2)) << "scrape " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  for (const Trickle& result : slow.join()) {
    EXPECT_TRUE(result.cut);
    EXPECT_FALSE(result.answered);
    // Keep-alive 2 s + read timeout 3 s for a whole request.
    EXPECT_LT(result.seconds, 10) << "cut at the metrics port's deadline";
  }
}

TEST(MetricsPort, SlowClientsDoNotHoldShutdownPastTheDelayAndFiveSeconds) {
  WebhookProcess webhook({"--metrics-listen", "127.0.0.1:0", "--shutdown-delay", "1"});
  SlowMetricsClients slow(webhook.metrics_port());
  const auto terminated = Clock::now();
  webhook.terminate();
  EXPECT_EQ(webhook.wait_for(std::chrono::seconds(20)), std::optional<int>(0));
  const double took = std::chrono::duration<double>(Clock::now() - terminated).count();
  // --shutdown-delay 1, then at most the metrics port's 5 s allowance.
  EXPECT_LT(took, 1 + 5 + 1.5) << "slow metrics clients held up shutdown";
}

TEST(MetricsPort, StatusPageIsNotCachedAndOtherPathsAre404NamingTheRoutes) {
  WebhookProcess webhook({"--metrics-listen", "127.0.0.1:0"});
  httplib::Client client("127.0.0.1", webhook.metrics_port());
  const auto status = client.Get("/status");
  ASSERT_TRUE(status) << httplib::to_string(status.error());
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(status->get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(status->get_header_value("X-Content-Type-Options"), "nosniff");
  const auto missing = client.Get("/nothing");
  ASSERT_TRUE(missing) << httplib::to_string(missing.error());
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(contains(missing->body, "no route GET /nothing (use GET /metrics, GET /status)")) << missing->body;
}

}  // namespace
}  // namespace gpusizer::testing::metrics_port_test
