// The monitoring deliverables against a real Prometheus (Debian package
// `prometheus`): the binary's /metrics scraped after a known mix of
// AdmissionReviews, every Grafana panel query and every alert expression
// evaluated by Prometheus itself, the rule file loaded and its alerts in the
// states that traffic must put them in.
//
// The live test starts the webhook with --metrics-listen on a port picked
// here and Prometheus scraping it every second, then drives:
//   phase 1: 1 mutated pod, 1 allowed pod, 1 denied pod, 1 malformed review,
//            and a valid policy change (reloaded)
//   phase 2: 2 mutated pods, 1 allowed, 1 denied, 1 malformed, 1 dry-run
//            mutated pod, and an invalid policy change (rejected)
// Two phases with a scrape in between, so that every series exists in
// Prometheus before it grows again: rate() and increase() then see real
// increases, as they do in production, and the error and reload alerts go
// pending / firing.
//
// Also here: the namespace label's cap, read straight from /metrics. The
// dashboard and rule files on their own: prometheus_dashboard_test.cpp.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "integration/prometheus_support.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::prometheus_live_test {
namespace {

using namespace std::chrono_literals;
using namespace prometheus_test;  // NOLINT(google-build-using-namespace)

// ---- The real binary scraped by a real Prometheus --------------------------

constexpr double kGi = 1024.0 * 1024.0 * 1024.0;

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// notAfter of a PEM certificate, unix seconds.
double certificate_not_after(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (!file) throw std::runtime_error("cannot open " + path);
  X509* cert = PEM_read_X509(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  if (!cert) throw std::runtime_error("no certificate in " + path);
  std::tm tm{};
  const int ok = ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm);
  X509_free(cert);
  if (!ok) throw std::runtime_error("bad notAfter in " + path);
  return static_cast<double>(::timegm(&tm));
}

json undersized_pod(const std::string& name, json annotations = json::object()) {
  // 4 GPUs at the 1-GPU values: the train table wants 32 CPU, 192Gi, 300Gi.
  return gpu_pod(
      name,
      {{"requests", {{"cpu", "8"}, {"memory", "64Gi"}}}, {"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}},
      std::move(annotations));
}
constexpr double kCpuAddedPerPod = 32 - 8;
constexpr double kMemoryAddedPerPod = (192 - 64) * kGi;

json cpu_only_pod(const std::string& name) { return gpu_pod(name, {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}); }

class PrometheusLive : public ::testing::Test {
 protected:
  // The single value of an instant vector query; NaN (and a failure naming
  // the query) when the query fails or does not return exactly one series.
  double value(const std::string& expr) {
    const json answer = prometheus_->query(expr);
    if (answer.value("status", "") != "success") {
      ADD_FAILURE() << "query failed: " << expr << "\n" << answer.dump();
      return std::nan("");
    }
    const json& result = answer["data"]["result"];
    if (answer["data"].value("resultType", "") == "scalar") return std::stod(result[1].get<std::string>());
    if (result.size() != 1) {
      ADD_FAILURE() << "expected one series from " << expr << ", got " << result.dump();
      return std::nan("");
    }
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  // The value, or nullopt while there is none: for polling.
  std::optional<double> try_value(const std::string& expr) {
    const json answer = prometheus_->query(expr);
    if (answer.value("status", "") != "success") return std::nullopt;
    const json& result = answer["data"]["result"];
    if (!result.is_array() || result.size() != 1) return std::nullopt;
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  void expect_value(const std::string& expr, double expected, double tolerance = 0) {
    const double got = value(expr);
    if (std::isnan(got)) return;  // already reported
    EXPECT_NEAR(got, expected, tolerance) << expr;
  }

  // Timestamp (unix seconds) of the last scrape of the webhook.
  double last_scrape() { return try_value("timestamp(up{job=\"gpu-sizer\"})").value_or(0); }

  // Waits until Prometheus has scraped the webhook after `t` (unix seconds):
  // every counter incremented before `t` is then in its TSDB. Returns the
  // scrape's timestamp (0 on timeout, with a failure).
  double wait_for_scrape_after(double t) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      const double scraped = last_scrape();
      if (scraped > t) return scraped;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "Prometheus did not scrape the webhook in 10 s; its log:\n" << prometheus_->log_text();
    return 0;
  }

  // The last line of the webhook's log containing `word` (the log format is
  // not this test's business: only that a reload says "reloaded" and a
  // rejection "rejected"); "" with a failure after 10 s.
  std::string wait_for_log(const std::string& word) {
    for (int i = 0; i < 100; ++i) {
      std::istringstream log(webhook_->stderr_text());
      std::string found;
      for (std::string line; std::getline(log, line);) {
        if (line.find(word) != std::string::npos) found = line;
      }
      if (!found.empty()) return found;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "the webhook did not log \"" << word << "\"; stderr:\n" << webhook_->stderr_text();
    return "";
  }

  void mutate(const json& pod, const std::string& expected, bool dry_run = false) {
    const json answer = webhook_->review("/mutate", admission_review(pod, "team-a", "CREATE", dry_run));
    EXPECT_EQ(answer["response"].contains("patch"), expected == "mutated") << answer.dump();
  }
  void validate_denied(const json& pod) {
    const json answer = webhook_->review("/validate", admission_review(pod));
    EXPECT_FALSE(answer["response"]["allowed"].get<bool>()) << answer.dump();
  }
  void malformed() {
    auto result = webhook_->post("/mutate", "{\"apiVersion\": ");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 400);
  }

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<WebhookProcess> webhook_;
  std::unique_ptr<PrometheusServer> prometheus_;
};

TEST_F(PrometheusLive, ScrapesTheWebhookAndEvaluatesTheDashboardAndTheAlerts) {
  ASSERT_TRUE(std::filesystem::exists(kPrometheus)) << kPrometheus << kMissingPrometheus;
  const auto started = std::chrono::steady_clock::now();
  dir_ = std::make_unique<TempDir>();
  const std::string policy = dir_->path() + "/policy.yaml";
  replace_file(policy, "mode: mutate\n");
  const int metrics_port = free_port();
  webhook_ = std::make_unique<WebhookProcess>(std::vector<std::string>{
      "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port), "--policy", policy, "--policy-poll", "1"});

  const std::string config = dir_->path() + "/prometheus.yml";
  replace_file(config,
               "global:\n"
               "  scrape_interval: 1s\n"
               "  scrape_timeout: 1s\n"
               "  evaluation_interval: 1s\n"
               "rule_files:\n"
               "  - " +
                   alerts_file() +
                   "\n"
                   "scrape_configs:\n"
                   "  - job_name: gpu-sizer\n"
                   "    static_configs:\n"
                   "      - targets: ['127.0.0.1:" +
                   std::to_string(metrics_port) + "']\n");
  prometheus_ = std::make_unique<PrometheusServer>(dir_->path(), config);

  // The target is up before any traffic: every series the webhook creates
  // at start (and pre-initialised counters) has a first sample.
  {
    std::optional<double> up;
    for (int i = 0; i < 100 && up.value_or(0) != 1; ++i) {
      std::this_thread::sleep_for(100ms);
      up = try_value("up{job=\"gpu-sizer\"}");
    }
    ASSERT_EQ(up.value_or(0), 1) << "Prometheus never scraped 127.0.0.1:" << metrics_port
                                 << "/metrics successfully; its log:\n"
                                 << prometheus_->log_text();
  }

  // Phase 1, and a valid policy change (a namespace no request uses).
  mutate(undersized_pod("train-1"), "mutated");
  mutate(cpu_only_pod("web-1"), "allowed");
  validate_denied(undersized_pod("train-opted-out-1", {{"gpu-sizer.io/mutate", "false"}}));
  malformed();
  replace_file(policy, "mode: mutate\nexemptions: {namespaces: [kube-system, kube-public, monitoring]}\n");
  const std::string reloaded = wait_for_log("reloaded");
  std::smatch match;
  std::string active_sha256;
  if (std::regex_search(reloaded, match, std::regex("[0-9a-f]{64}"))) active_sha256 = match[0];
  EXPECT_FALSE(active_sha256.empty()) << "no sha256 in \"" << reloaded << "\"";
  wait_for_scrape_after(unix_now());

  // Phase 2, and an invalid policy change (rejected; the previous stays).
  replace_file(policy, "mode: mutate\ndenyFromGPUs: 2\n");
  mutate(undersized_pod("train-2"), "mutated");
  mutate(undersized_pod("train-3"), "mutated");
  mutate(cpu_only_pod("web-2"), "allowed");
  validate_denied(undersized_pod("train-opted-out-2", {{"gpu-sizer.io/mutate", "false"}}));
  malformed();
  mutate(undersized_pod("train-dry-run"), "mutated", /*dry_run=*/true);
  wait_for_log("rejected");
  // Two scrapes after the last request: the final values, and a second
  // sample of every series born in phase 2 (rate() needs two).
  const double final_scrape = wait_for_scrape_after(unix_now() + 0.05);
  wait_for_scrape_after(final_scrape);
  // Should the counting lag the response, give it up to 5 s more.
  for (int i = 0; i < 50 && try_value("sum(gpu_sizer_reviews_total)").value_or(0) != 10; ++i) {
    std::this_thread::sleep_for(100ms);
  }

  {
    SCOPED_TRACE("the target");
    expect_value("up{job=\"gpu-sizer\"}", 1);
  }
  {
    SCOPED_TRACE("gpu_sizer_reviews_total");
    expect_value("sum(gpu_sizer_reviews_total)", 10);
    expect_value("sum(gpu_sizer_reviews_total{decision=\"mutated\",dry_run=\"false\"})", 3);
    expect_value("sum(gpu_sizer_reviews_total{decision=\"mutated\",dry_run=\"true\"})", 1);
    expect_value("sum(gpu_sizer_reviews_total{decision=\"allowed\"})", 2);
    expect_value("sum(gpu_sizer_reviews_total{decision=\"denied\"})", 2);
    expect_value("sum(gpu_sizer_reviews_total{decision=\"error\"})", 2);
    expect_value(
        "sum(gpu_sizer_reviews_total{kind=\"Pod\",operation=\"CREATE\",endpoint=\"mutate\",dry_run=\"false\"})", 5);
    expect_value(
        "sum(gpu_sizer_reviews_total{kind=\"Pod\",operation=\"CREATE\",endpoint=\"validate\",decision=\"denied\"})", 2);
    expect_value(
        "sum(gpu_sizer_reviews_total{kind=\"unknown\",operation=\"unknown\",endpoint=\"mutate\",decision=\"error\"})",
        2);
  }
  {
    SCOPED_TRACE("corrections and resources added (dry-run not counted)");
    for (const char* resource : {"cpu", "memory", "ephemeral-storage"}) {
      expect_value(std::string("sum(gpu_sizer_corrections_total{profile=\"train\",namespace=\"team-a\",resource=\"") +
                       resource + "\"})",
                   3);
    }
    expect_value("sum(gpu_sizer_corrections_total)", 9);
    expect_value("sum(gpu_sizer_cpu_cores_added_total{profile=\"train\",namespace=\"team-a\"})", 3 * kCpuAddedPerPod,
                 1e-9);
    expect_value("sum(gpu_sizer_cpu_cores_added_total)", 3 * kCpuAddedPerPod, 1e-9);
    // 412316860416 bytes: exact in a double, and in the text format.
    expect_value("sum(gpu_sizer_memory_bytes_added_total{profile=\"train\",namespace=\"team-a\"})",
                 3 * kMemoryAddedPerPod);
    expect_value("sum(gpu_sizer_memory_bytes_added_total)", 3 * kMemoryAddedPerPod);
  }
  {
    SCOPED_TRACE("denials (one memory message per opted-out pod)");
    expect_value("sum(gpu_sizer_denials_total{profile=\"train\",namespace=\"team-a\",reason=\"memory\"})", 2);
    expect_value("sum(gpu_sizer_denials_total)", 2);
  }
  {
    SCOPED_TRACE("histograms");
    // Three non-dry-run 4-GPU pods through /mutate; whether GPU-less pods
    // are observed (as 0) is left open, so the sum and the (2, 4] bucket.
    expect_value("sum(gpu_sizer_pod_gpus_sum)", 12);
    expect_value(
        "sum(gpu_sizer_pod_gpus_bucket{le=~\"4(\\\\.0*)?\"}) - sum(gpu_sizer_pod_gpus_bucket{le=~\"2(\\\\.0*)?\"})", 3);
    expect_value("sum(gpu_sizer_review_duration_seconds_count{endpoint=\"validate\"})", 2);
    // 6 well-formed reviews on /mutate, plus the 2 malformed if they are timed.
    const double mutate_count = value("sum(gpu_sizer_review_duration_seconds_count{endpoint=\"mutate\"})");
    EXPECT_TRUE(mutate_count >= 6 && mutate_count <= 8) << mutate_count;
    expect_value("count(count by (le) (gpu_sizer_review_duration_seconds_bucket{le=~\"0?\\\\.0001|1e-0?4\"}))", 1);
    expect_value("count(count by (le) (gpu_sizer_review_duration_seconds_bucket{le=~\"10(\\\\.0*)?|1e\\\\+0?1\"}))", 1);
  }
  {
    SCOPED_TRACE("policy, certificate and build gauges");
    expect_value("sum(gpu_sizer_policy_reloads_total{result=\"reloaded\"})", 1);
    expect_value("sum(gpu_sizer_policy_reloads_total{result=\"rejected\"})", 1);
    expect_value("count(gpu_sizer_policy_info == 1)", 1);
    if (!active_sha256.empty()) {
      expect_value("gpu_sizer_policy_info{sha256=\"" + active_sha256 + "\"}",
                   1);  // the valid one, not the rejected one
    }
    const double not_after = certificate_not_after(webhook_->dir() + "/tls.crt");
    expect_value("gpu_sizer_tls_certificate_expiry_timestamp_seconds", not_after);
    EXPECT_GT(not_after, unix_now());
    expect_value("gpu_sizer_build_info", 1);
    // Not watching nodes (no cluster here): the node gauges say none.
    expect_value("gpu_sizer_node_inventory_nodes", 0);
    expect_value("gpu_sizer_node_inventory_gpu_shapes", 0);
    const CommandResult version = run_command({GPU_SIZER_BINARY, "--version"});
    const json build = prometheus_->query("gpu_sizer_build_info");
    if (build["data"]["result"].size() == 1) {
      const std::string label = build["data"]["result"][0]["metric"].value("version", "");
      EXPECT_FALSE(label.empty());
      EXPECT_NE(version.output.find(label), std::string::npos) << "version label " << label << " vs " << version.output;
    }
  }

  {
    // Every panel query parses, and every one has data: the traffic above
    // feeds all of them, reloads included (one reloaded, one rejected).
    // Panels allowed to be empty, with the reason: the outcome panels read
    // kube-state-metrics' and cAdvisor's series through the outcome rules,
    // which this Prometheus does not scrape (promtool tests the rules on
    // such series: PrometheusRules.OutcomesJoinOomKillsToWhatGpuSizerDid).
    const std::set<std::string> may_be_empty = {"OOM-killed GPU pods by outcome", "Memory given and used by profile"};
    std::vector<PanelQuery> queries;
    ASSERT_NO_THROW(queries = dashboard_queries());
    ASSERT_FALSE(queries.empty());
    for (const auto& q : queries) {
      SCOPED_TRACE("dashboard panel \"" + q.panel + "\" " + q.ref_id);
      const std::string expr = substitute_grafana_variables(q.expr);
      const json answer = prometheus_->query(expr);
      if (answer.value("status", "") != "success") {
        ADD_FAILURE() << "does not evaluate: " << expr << "\n" << answer.dump();
        continue;
      }
      if (may_be_empty.count(q.panel)) continue;
      const json& data = answer["data"];
      EXPECT_TRUE(data["resultType"] == "scalar" || !data["result"].empty()) << "no data from " << expr;
    }
  }

  std::vector<Rule> rules;
  ASSERT_NO_THROW(rules = alert_file_rules());
  for (const auto& rule : rules) {
    SCOPED_TRACE("rule " + rule.name);
    const std::string expr = rule.node["expr"].as<std::string>();
    const json answer = prometheus_->query(expr);
    EXPECT_EQ(answer.value("status", ""), "success") << expr << "\n" << answer.dump();
  }

  // The rule file as Prometheus loaded it: every rule there and healthy, and
  // the alerts this traffic must trigger pending or firing, the others not.
  // Rules evaluate every second; give the evaluation after the last scrape
  // up to 10 s.
  const std::map<std::string, std::set<std::string>> expected_states = {
      {"GpuSizerWebhookErrors", {"pending", "firing"}},  // 2 errors in 10 reviews, over 1% (for: 5m)
      {"GpuSizerPolicyReloadFailed", {"firing"}},        // the invalid policy (for: 0m)
      {"GpuSizerLatencyNearTimeout", {"inactive"}},
      {"GpuSizerCertificateExpiringSoon", {"inactive"}},  // a fresh one-year certificate
      {"GpuSizerDenialSpike", {"inactive"}},              // 2 denials: far below 0.1/s
      {"GpuSizerDown", {"inactive"}},
      {"GpuSizerNodeWatchStale", {"inactive"}},   // this webhook does not watch nodes
      {"GpuSizerConnectionLimit", {"inactive"}},  // a few connections, far below the limit
  };
  std::map<std::string, json> loaded;
  const auto evaluated_deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    loaded.clear();
    const json answer = prometheus_->get("/api/v1/rules");
    ASSERT_EQ(answer.value("status", ""), "success") << answer.dump();
    for (const auto& group : answer["data"]["groups"]) {
      for (const auto& rule : group["rules"]) loaded[rule.value("name", "")] = rule;
    }
    bool settled = true;
    for (const auto& [name, states] : expected_states) {
      settled = settled && loaded.count(name) && states.count(loaded[name].value("state", ""));
    }
    for (const auto& [name, rule] : loaded) settled = settled && rule.value("health", "") == "ok";
    if (settled || std::chrono::steady_clock::now() > evaluated_deadline) break;
    std::this_thread::sleep_for(200ms);
  }
  for (const auto& rule : rules) {
    SCOPED_TRACE("loaded rule " + rule.name);
    ASSERT_TRUE(loaded.count(rule.name)) << "Prometheus did not load it; its log:\n" << prometheus_->log_text();
    const std::string health = loaded[rule.name].value("health", "");
    EXPECT_TRUE(health == "ok" || health == "unknown") << health << ": " << loaded[rule.name].value("lastError", "");
  }
  for (const auto& [name, states] : expected_states) {
    if (!loaded.count(name)) continue;  // reported above
    const std::string state = loaded[name].value("state", "");
    EXPECT_TRUE(states.count(state)) << name << " is " << state << ": " << loaded[name].dump();
  }

  const auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(took, 40) << "the live test should stay well under 40 s";
  RecordProperty("seconds", std::to_string(took));
}

// The namespace label is capped: past --metrics-namespace-cap distinct
// namespaces, corrections are counted under "other". Read straight from
// /metrics, no Prometheus needed.
TEST(PrometheusMetrics, NamespacesBeyondTheCapAreCountedAsOther) {
  const int metrics_port = free_port();
  WebhookProcess webhook(
      {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port), "--metrics-namespace-cap", "2"});
  const json pod = undersized_pod("train-x");
  for (const char* ns : {"ns-1", "ns-2", "ns-3", "ns-4"}) {
    json in_ns = pod;
    in_ns["metadata"]["namespace"] = ns;
    ASSERT_TRUE(webhook.review("/mutate", admission_review(in_ns, ns))["response"].contains("patch"));
  }
  httplib::Client client("127.0.0.1", metrics_port);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  std::map<std::string, double> memory_by_namespace;
  std::istringstream lines(metrics->body);
  const std::regex line_pattern(R"(^gpu_sizer_corrections_total\{(.*)\} (\S+)$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_match(line, match, line_pattern)) continue;
    const std::string labels = match[1];
    if (labels.find("resource=\"memory\"") == std::string::npos) continue;
    std::smatch ns;
    if (std::regex_search(labels, ns, std::regex("namespace=\"([^\"]*)\""))) {
      memory_by_namespace[ns[1]] += std::stod(match[2]);
    }
  }
  const std::map<std::string, double> expected = {{"ns-1", 1}, {"ns-2", 1}, {"other", 2}};
  EXPECT_EQ(memory_by_namespace, expected) << metrics->body;
}

}  // namespace
}  // namespace gpusizer::testing::prometheus_live_test
