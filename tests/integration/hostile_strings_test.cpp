// Strings no API server sends, from anyone who can reach the webhook port
// (deploy/ runs without --client-ca), against the real binary: what they
// become in metrics, on /status, in answers and in log lines.
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "integration/prometheus_support.h"
#include "integration/raw_client.h"
#include "support/review_support.h"

namespace gpusizer::testing::hostile_strings_test {
namespace {

const std::string kRlo = "\xe2\x80\xae";  // U+202E RIGHT-TO-LEFT OVERRIDE
const json kFourGpuPod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});

// A webhook with its metrics listener, and GET on it.
class MetricsWebhook {
 public:
  explicit MetricsWebhook(std::vector<std::string> args = {})
      : port_(prometheus_test::free_port()), webhook_(with_metrics(std::move(args), port_)) {}

  WebhookProcess& webhook() { return webhook_; }
  std::string get(const std::string& path) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(60);  // the unbounded /metrics of before was 120 MB
    auto result = client.Get(path);
    if (!result || result->status != 200) throw std::runtime_error("GET " + path + " failed");
    return result->body;
  }

 private:
  static std::vector<std::string> with_metrics(std::vector<std::string> args, int port) {
    args.insert(args.end(), {"--metrics-listen", "127.0.0.1:" + std::to_string(port)});
    return args;
  }
  int port_;
  WebhookProcess webhook_;
};

TEST(HostileStrings, FourMegabyteNamespacesLeaveMetricsStatusAndMemorySmall) {
  // Each such review used to add a copy of the namespace to every series
  // counting it and to the /status ring, never freed: five grew the
  // process by about 280 MB, past the chart's 256Mi limit, and /metrics
  // to 120 MB.
  MetricsWebhook server;
  WebhookProcess& webhook = server.webhook();
  for (int i = 0; i < 5; ++i) {
    const std::string ns = std::string(4 << 20, static_cast<char>('a' + i));
    for (const char* endpoint : {"/mutate", "/validate"}) {
      auto client = webhook.client();  // a new connection: another server thread
      auto answer = client->Post(endpoint, admission_review(kFourGpuPod, ns).dump(), "application/json");
      ASSERT_TRUE(answer) << httplib::to_string(answer.error());
      ASSERT_EQ(answer->status, 200);
      EXPECT_LT(answer->body.size(), 16u * 1024) << endpoint;
    }
  }
  const std::string metrics = server.get("/metrics");
  EXPECT_LT(metrics.size(), 64u * 1024);
  EXPECT_TRUE(
      contains(metrics, R"(gpu_sizer_corrections_total{namespace="invalid",profile="train",resource="memory"} 5)"))
      << metrics.substr(0, 3000);
  const std::string status = server.get("/status");
  EXPECT_LT(status.size(), 256u * 1024);
  EXPECT_TRUE(contains(status, "&quot;" + std::string(64, 'e') + "&quot;... (4194304 bytes)/train-x"));
  ASSERT_TRUE(log_shows(webhook, "\"msg\":\"review\""));
  EXPECT_LT(log_line_with(webhook, "\"msg\":\"review\"").size(), 4096u);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' allocators hold freed memory: resident memory is measured in the ordinary build";
#endif
  const std::optional<long> resident = resident_kib(webhook.pid());
  ASSERT_TRUE(resident);
  ::testing::Test::RecordProperty("resident_kib", std::to_string(*resident));
  EXPECT_LT(*resident, 96 * 1024) << "KiB resident; the chart's limit is 256Mi";
}

TEST(HostileStrings, AMegabyteNumberGetsAShortAnswerAndAShortLogLine) {
  WebhookProcess webhook;
  const std::string number(1 << 20, '9');
  std::string body = admission_review(gpu_pod("train-x", {{"limits", {{"nvidia.com/gpu", 4}}}})).dump();
  body.replace(body.find("\"nvidia.com/gpu\":4"), 18, "\"nvidia.com/gpu\":" + number);
  auto answer = webhook.post("/mutate", body);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 400);
  EXPECT_EQ(answer->body,
            "{\"error\":\"request body is not valid JSON: [json.exception.out_of_range.406] number overflow "
            "parsing \\\"" +
                std::string(64, '9') + "\\\"... (1048576 bytes)\"}");
  ASSERT_TRUE(log_shows(webhook, "number overflow"));
  const std::string line = log_line_with(webhook, "number overflow");
  EXPECT_LT(line.size(), 1024u) << line.substr(0, 300);
}

TEST(HostileStrings, AWorkflowOfThousandsOfUndersizedTemplatesGetsAShortLogLine) {
  // Each template makes two denials (memory and /dev/shm). The review's log
  // line listed every one: 27 MB for a workflow of 46,000 templates, and
  // as much again held while it was written.
  constexpr int kTemplates = 2000;
  json templates = json::array();
  for (int i = 0; i < kTemplates; ++i) {
    templates.push_back({{"name", "t" + std::to_string(i)},
                         {"container",
                          {{"name", "main"},
                           {"image", "trainer:1"},
                           {"resources", {{"limits", {{"nvidia.com/gpu", "4"}, {"memory", "64Gi"}}}}}}}});
  }
  const json workflow = {{"apiVersion", "argoproj.io/v1alpha1"},
                         {"kind", "Workflow"},
                         {"metadata", {{"name", "many"}, {"namespace", "team-a"}}},
                         {"spec", {{"entrypoint", "t0"}, {"templates", templates}}}};
  WebhookProcess webhook;
  const auto answer = webhook.post("/validate", workload_review(workflow).dump());
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->status, 200);
  EXPECT_EQ(json::parse(answer->body)["response"]["allowed"], false);
  ASSERT_TRUE(log_shows(webhook, "\"msg\":\"review\""));
  const std::string line = log_line_with(webhook, "\"msg\":\"review\"");
  EXPECT_LT(line.size(), 32u * 1024) << line.substr(0, 300);
  const json denials = json::parse(line)["denials"];
  ASSERT_EQ(denials.size(), 20u) << line.substr(0, 300);
  EXPECT_EQ(denials.back(), "... and " + std::to_string(2 * kTemplates - 19) + " more");
}

TEST(HostileStrings, TextLogLinesEscapeAUidHoldingANewline) {
  WebhookProcess webhook({"--log-format", "text"});
  const std::string forged = "[2026-01-01 00:00:00.000] [info] review decision=allowed uid=forged";
  const json review = admission_review(kFourGpuPod, "team-a", "CREATE", false, "uid-1\n" + forged);
  ASSERT_EQ(webhook.post("/mutate", review.dump())->status, 200);
  ASSERT_TRUE(log_shows(webhook, "uid-1"));
  const std::string log = webhook.stderr_text();
  std::istringstream lines(log);
  int review_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.rfind("[2026-01-01", 0), 0u) << "a forged line:\n" << log;
    if (contains(line, "] review ")) {
      ++review_lines;
      EXPECT_TRUE(contains(line, R"(uid="uid-1\\u000a[2026-01-01 00:00:00.000] [info] review)")) << line;
    }
  }
  EXPECT_EQ(review_lines, 1) << log;
}

TEST(HostileStrings, StatusEscapesNulAndRightToLeftOverride) {
  MetricsWebhook server;
  json pod = kFourGpuPod;
  pod["metadata"]["annotations"] = {{"gpu-sizer.io/mutate", "false"}};
  pod["spec"]["containers"][0]["name"] = "train" + kRlo + std::string(1, '\0') + "er";
  const std::string ns = "team" + kRlo + std::string(1, '\0') + "a";
  const json denied = server.webhook().review("/validate", admission_review(pod, ns));
  EXPECT_EQ(denied["response"]["allowed"], false);
  const std::string message = denied["response"]["status"]["message"];
  EXPECT_TRUE(message.starts_with(R"(pod "team\u202e\u0000a"/train-x container "train\u202e\u0000er": )")) << message;

  const std::string status = server.get("/status");
  EXPECT_TRUE(contains(status, R"(&quot;team\u202e\u0000a&quot;/train-x)"));
  EXPECT_TRUE(contains(status, R"(container &quot;train\u202e\u0000er&quot;: 4 GPUs need memory)"));
  EXPECT_FALSE(contains(status, kRlo));
  EXPECT_EQ(status.find('\0'), std::string::npos);
  const std::string metrics = server.get("/metrics");
  EXPECT_TRUE(contains(metrics, R"(namespace="invalid")"));
  EXPECT_FALSE(contains(metrics, kRlo));
}

}  // namespace
}  // namespace gpusizer::testing::hostile_strings_test
