// Signals the server is sent in a pod: SIGHUP (sent by people and by some
// config reloaders) reads the policy and the certificate again; it used to
// end the process, unlogged, with the requests in flight lost.
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>

#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::signals_test {
namespace {

const json kFourGpuPod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

bool patches(WebhookProcess& webhook) {
  return webhook.review("/mutate", admission_review(kFourGpuPod))["response"].contains("patch");
}

TEST(WebhookSignals, SighupReadsThePolicyAgainAtOnceAndLosesNoRequest) {
  TempDir dir;
  const std::string policy = dir.path() + "/policy.yaml";
  write_file(policy, "mode: mutate\n");
  // Polled once an hour: only SIGHUP makes it read the file again here.
  WebhookProcess webhook({"--policy", policy, "--policy-poll", "3600"});
  ASSERT_TRUE(patches(webhook));

  // Sixteen reviews in flight, each on its own connection, when SIGHUP comes.
  const std::string body = admission_review(kFourGpuPod).dump();
  std::vector<std::future<int>> in_flight;
  for (int i = 0; i < 16; ++i) {
    in_flight.push_back(std::async(std::launch::async, [&] {
      auto result = webhook.client()->Post("/validate", body, "application/json");
      return result ? result->status : -1;
    }));
  }
  write_file(policy, "mode: enforce\n");
  ASSERT_EQ(::kill(webhook.pid(), SIGHUP), 0);
  for (auto& review : in_flight) EXPECT_EQ(review.get(), 200);
  EXPECT_EQ(webhook.wait_for(std::chrono::milliseconds(200)), std::nullopt) << "SIGHUP ended the process";

  // Enforce mode: /mutate leaves the pod to /validate to deny.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (patches(webhook) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(patches(webhook)) << "the new policy was not read";
  const std::string log = webhook.stderr_text();
  EXPECT_NE(log.find("SIGHUP: reading the policy and the certificate again"), std::string::npos) << log;
  EXPECT_NE(log.find("policy reloaded"), std::string::npos) << log;

  // Nothing changed since: a second SIGHUP says so.
  ASSERT_EQ(::kill(webhook.pid(), SIGHUP), 0);
  const auto said_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (webhook.stderr_text().find("SIGHUP: the policy and the certificate are unchanged") == std::string::npos &&
         std::chrono::steady_clock::now() < said_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(webhook.stderr_text().find("SIGHUP: the policy and the certificate are unchanged"), std::string::npos);
  EXPECT_EQ(webhook.stop(), 0);
}

}  // namespace
}  // namespace gpusizer::testing::signals_test
