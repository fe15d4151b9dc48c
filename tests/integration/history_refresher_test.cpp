// serve's history refresher against a Prometheus that takes a connection
// and never answers it: stop() (serve's SIGTERM) cuts the read instead of
// waiting out its timeout, which would outlast the pod's grace period.
#include "gpusizer/server/history_refresher.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpusizer/history/prometheus_history.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/sizing/policy.h"
#include "integration/fake_api_server.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::history_refresher_test {
namespace {

// A server on 127.0.0.1 that accepts connections, holds them open and
// never reads or writes.
class SilentServer {
 public:
  SilentServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(listener_, 16), 0);
    EXPECT_EQ(::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    thread_ = std::thread([this] {
      while (!stopping_) {
        pollfd ready{listener_, POLLIN, 0};
        if (::poll(&ready, 1, 10) <= 0) continue;
        const int connection = ::accept(listener_, nullptr, nullptr);
        if (connection < 0) continue;
        held_.push_back(connection);
        ++accepted_;
      }
    });
  }
  ~SilentServer() {
    stopping_ = true;
    thread_.join();
    for (const int connection : held_) ::close(connection);
    ::close(listener_);
  }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  SilentServer(SilentServer&&) = delete;
  SilentServer& operator=(SilentServer&&) = delete;

  const std::string& url() const { return url_; }
  int accepted() const { return accepted_; }

 private:
  int listener_ = -1;
  std::string url_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::vector<int> held_;  // the accepting thread's until it is joined
  std::thread thread_;
};

TEST(HistoryRefresher, StopCutsAReadThatPrometheusNeverAnswers) {
  const SilentServer prometheus;
  const TempDir dir;
  replace_file(dir.path() + "/policy.yaml", "history: {mode: recommend}\n");
  auto policy = PolicyStore::open(dir.path() + "/policy.yaml");
  ASSERT_TRUE(policy) << policy.error();
  HistoryRefresher refresher(PrometheusSource{prometheus.url(), 60}, *policy.value(), 3600, nullptr);
  refresher.start();
  ASSERT_TRUE(eventually([&] { return prometheus.accepted() > 0; }));
  const auto before = std::chrono::steady_clock::now();
  refresher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5)) << "the read's timeout is 60 s";
  EXPECT_EQ(refresher.status().error, "") << "a read cut by stop() is no outage";
  refresher.stop();  // idempotent
}

TEST(HistoryReadStop, AReadAfterAStopFailsAtOnceWithoutConnecting) {
  const SilentServer prometheus;
  HistoryReadStop stop;
  stop.stop();
  const auto read =
      read_history(PrometheusSource{prometheus.url(), 60}, default_policy().rule_settings.get<HistoryPolicy>(), &stop);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), prometheus.url() + ": stopped");
  EXPECT_EQ(prometheus.accepted(), 0);
}

}  // namespace
}  // namespace gpusizer::testing::history_refresher_test
