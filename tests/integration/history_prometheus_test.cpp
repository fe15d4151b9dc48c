// History on a real Prometheus (issue 29, docs/history.md): the test writes
// the series cAdvisor and kube-state-metrics would have exported for a few
// runs of GPU workloads (an OOM-killed fine-tune, an inference server far
// below its request), loads them with `promtool tsdb create-blocks-from
// openmetrics` (Debian package `prometheus`), and runs Prometheus on them.
// Then:
//   - `gpu-sizer report` prints what the data implies, in text, JSON and
//     HTML, with the exit code CI reads;
//   - `serve --prometheus` with history.mode raise raises the next run of
//     the OOM-killed workload and stamps it;
//   - Prometheus stopped changes no admission answer, and /status and the
//     metrics say history could not be read.
// The arithmetic on its own: tests/unit/history_test.cpp.

#include <chrono>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/prometheus_support.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::history_prometheus_test {
namespace {

using namespace prometheus_test;  // NOLINT(google-build-using-namespace)

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int kStep = 60;  // seconds between samples, as a 1m scrape
const std::string kTrainKey = "PyTorchJob/llama-ft gpus=4 profile=train";
const std::string kServeKey = "Deployment/vllm gpus=1 profile=infer";

// The series of one run of one container, as OpenMetrics families.
struct RunSeries {
  std::string ns, pod, workload, run, container;  // run: the Pod's controller
  std::string owner_kind;
  int64_t peak_bytes = 0;
  int64_t limit_bytes = 0;
  bool oom_killed = false;
  int64_t start = 0;  // Unix seconds
  int64_t seconds = int64_t{2} * 3600;
};

// OpenMetrics text for runs: every family's samples together, each series
// in time order, "# EOF" last (promtool's input rules).
std::string openmetrics(const std::vector<RunSeries>& runs) {
  std::map<std::string, std::vector<std::string>> families;  // name -> sample lines
  std::map<std::string, std::string> types;
  const auto add = [&](const std::string& name, const char* type, const std::string& labels, int64_t at, double value) {
    types[name] = type;
    char number[64];
    std::snprintf(number, sizeof(number), "%.17g", value);
    families[name].push_back(name + "{" + labels + "} " + number + " " + std::to_string(at));
  };
  for (const RunSeries& r : runs) {
    const std::string pod = "namespace=\"" + r.ns + "\",pod=\"" + r.pod + "\"";
    const std::string container = pod + ",container=\"" + r.container + "\"";
    const int64_t samples = r.seconds / kStep;
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t at = r.start + i * kStep;
      add("kube_pod_annotations", "gauge", pod + ",annotation_gpu_sizer_io_workload=\"" + r.workload + "\"", at, 1);
      add("kube_pod_owner", "gauge",
          pod + ",owner_kind=\"" + r.owner_kind + "\",owner_name=\"" + r.run + "\",owner_is_controller=\"true\"", at,
          1);
      // Memory climbs to its peak at the last sample.
      add("container_memory_working_set_bytes", "gauge", container, at,
          static_cast<double>(r.peak_bytes) * (0.5 + 0.5 * static_cast<double>(i) / static_cast<double>(samples - 1)));
      add("kube_pod_container_resource_requests", "gauge", container + ",resource=\"memory\",unit=\"byte\"", at,
          static_cast<double>(r.limit_bytes));
      add("kube_pod_container_resource_limits", "gauge", container + ",resource=\"memory\",unit=\"byte\"", at,
          static_cast<double>(r.limit_bytes));
      add("kube_pod_container_resource_requests", "gauge", container + ",resource=\"cpu\",unit=\"core\"", at, 8);
      // Two cores busy.
      add("container_cpu_usage_seconds_total", "counter", container, at, 2.0 * static_cast<double>(i * kStep));
    }
    if (r.oom_killed) {
      // restartPolicy Never: the container's last state, for as long as the Pod exists.
      const int64_t end = r.start + samples * kStep;
      for (int64_t at = end; at < end + int64_t{10} * kStep; at += kStep) {
        add("kube_pod_container_status_terminated_reason", "gauge", container + ",reason=\"OOMKilled\"", at, 1);
      }
    }
  }
  std::string out;
  for (const auto& [name, lines] : families) {
    out += "# TYPE " + name + " " + types[name] + "\n";
    // Series stay in time order: each run's lines were added in order.
    for (const std::string& line : lines) out += line + "\n";
  }
  return out + "# EOF\n";
}

class HistoryPrometheus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kPromtool)) return;
    dir_ = new TempDir();
    // Two days back, well inside the default 15-day retention, which counts
    // from the newest block (docs/research/history-sources.md).
    const int64_t start = static_cast<int64_t>(std::time(nullptr)) - int64_t{2} * 86400;
    std::vector<RunSeries> runs;
    for (const auto& [suffix, peak, oom] : std::vector<std::tuple<std::string, int64_t, bool>>{
             {"x7k2p", 190, true}, {"q4z9t", 150, false}, {"m2n8s", 191, true}}) {
      runs.push_back({"ml", "llama-ft-" + suffix + "-worker-0", kTrainKey, "llama-ft-" + suffix, "pytorch",
                      "PyTorchJob", peak * kGi, 192 * kGi, oom, start + static_cast<int64_t>(runs.size()) * 4 * 3600});
    }
    runs.push_back({"serve", "vllm-5d8f7c6b9-x2m4q", kServeKey, "vllm-5d8f7c6b9", "server", "ReplicaSet", 20 * kGi,
                    64 * kGi, false, start});
    const std::string data = dir_->path() + "/history.om";
    replace_file(data, openmetrics(runs));
    const CommandResult blocks =
        run_command({kPromtool, "tsdb", "create-blocks-from", "openmetrics", data, dir_->path() + "/data"});
    ASSERT_EQ(blocks.exit_code, 0) << blocks.output;
    replace_file(dir_->path() + "/prometheus.yml", "global:\n  scrape_interval: 1m\n");
    prometheus_ = new PrometheusServer(dir_->path(), dir_->path() + "/prometheus.yml");
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kPromtool)) << kPromtool << kMissingPrometheus;
    ASSERT_NE(prometheus_, nullptr);
  }

  static std::string policy_file(const std::string& yaml) {
    std::string path = dir_->path() + "/policy.yaml";
    replace_file(path, yaml);
    return path;
  }

  static TempDir* dir_;
  static PrometheusServer* prometheus_;
};

TempDir* HistoryPrometheus::dir_ = nullptr;
PrometheusServer* HistoryPrometheus::prometheus_ = nullptr;

// The next run of the fine-tune, as its operator creates the worker.
nlohmann::json next_run_pod() {
  nlohmann::json pod = gpu_pod("llama-ft-b9zq4-worker-0", {{"limits", {{"nvidia.com/gpu", "4"}, {"memory", "64Gi"}}}});
  pod["metadata"]["namespace"] = "ml";
  pod["metadata"]["ownerReferences"] = {
      {{"apiVersion", "kubeflow.org/v1"}, {"kind", "PyTorchJob"}, {"name", "llama-ft-b9zq4"}, {"controller", true}}};
  pod["spec"]["containers"][0]["name"] = "pytorch";
  return pod;
}

TEST_F(HistoryPrometheus, ReportPrintsWhatTheDataImplies) {
  const CommandResult json_report =
      run_command({GPU_SIZER_BINARY, "report", "--prometheus", prometheus_->url(), "--output", "json"});
  // OOM kills: something to act on.
  EXPECT_EQ(json_report.exit_code, 1) << json_report.output;
  const auto parsed = nlohmann::json::parse(json_report.output, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json_report.output;
  ASSERT_EQ(parsed["containers"].size(), 2u) << json_report.output;
  const nlohmann::json& train = parsed["containers"][0];
  EXPECT_EQ(train["namespace"], "ml");
  EXPECT_EQ(train["workload"], kTrainKey);
  EXPECT_EQ(train["runs"], 3);
  EXPECT_EQ(train["perRun"][0]["run"], "llama-ft-m2n8s");  // its controller, from kube_pod_owner
  EXPECT_EQ(train["oomKills"], 2);
  EXPECT_EQ(train["memoryLimit"], "192Gi");
  EXPECT_EQ(train["tableMemory"], "192Gi");
  // The peak is the last scrape's, below the limit the kills came at:
  // max(192Gi x 1.2, 192Gi + 100Mi) = 230.4Gi.
  EXPECT_EQ(train["advice"], "oom_killed");
  EXPECT_EQ(train["recommendedMemory"], "235930Mi");
  EXPECT_EQ(train["cpuP95"], "2");
  const nlohmann::json& serve = parsed["containers"][1];
  EXPECT_EQ(serve["workload"], kServeKey);
  EXPECT_EQ(serve["advice"], "oversized");
  EXPECT_EQ(serve["recommendedMemory"], "24Gi");

  const CommandResult text = run_command({GPU_SIZER_BINARY, "report", "--prometheus", prometheus_->url()});
  EXPECT_NE(text.output.find("raise memory to 235930Mi: OOM-killed 2 times in 3 runs at 192Gi"), std::string::npos)
      << text.output;
  const CommandResult html =
      run_command({GPU_SIZER_BINARY, "report", "--prometheus", prometheus_->url(), "--output", "html"});
  EXPECT_NE(html.output.find("<rect class=\"oom\""), std::string::npos);

  // A window that ends before the runs: nothing, nothing to act on.
  const CommandResult recent =
      run_command({GPU_SIZER_BINARY, "report", "--prometheus", prometheus_->url(), "--since", "30m"});
  EXPECT_EQ(recent.exit_code, 0) << recent.output;
  EXPECT_NE(recent.output.find("0 containers"), std::string::npos) << recent.output;
}

TEST_F(HistoryPrometheus, ReportOnAPrometheusThatIsNotThereSaysWhere) {
  const std::string url = "http://127.0.0.1:" + std::to_string(free_port());
  const CommandResult result = run_command({GPU_SIZER_BINARY, "report", "--prometheus", url, "--timeout", "2"});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(url + " (stamped pods)"), std::string::npos) << result.output;
}

// One /mutate answer's patched pod.
nlohmann::json mutated(WebhookProcess& webhook, const nlohmann::json& pod) {
  return apply_response(pod, webhook.review("/mutate", admission_review(pod, "ml")));
}

std::string metrics_text(const WebhookProcess& webhook) {
  httplib::Client client("127.0.0.1", webhook.metrics_port());
  auto result = client.Get("/metrics");
  return result ? result->body : std::string();
}

TEST_F(HistoryPrometheus, ServeRaisesTheNextRunAndKeepsItsAnswersWhenPrometheusStops) {
  WebhookProcess webhook({"--prometheus", prometheus_->url(), "--history-refresh", "1", "--metrics-listen",
                          "127.0.0.1:0", "--policy", policy_file("history: {mode: raise}\n")});
  // The first read happens at start, off the admission path: wait for it.
  for (int i = 0; i < 100 && metrics_text(webhook).find("gpu_sizer_history_containers 2") == std::string::npos; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_NE(metrics_text(webhook).find("gpu_sizer_history_containers 2"), std::string::npos) << metrics_text(webhook);

  const nlohmann::json raised = mutated(webhook, next_run_pod());
  const nlohmann::json& resources = raised["spec"]["containers"][0]["resources"];
  EXPECT_EQ(resources["requests"]["memory"], "235930Mi") << raised.dump();
  EXPECT_EQ(resources["limits"]["memory"], "235930Mi");
  EXPECT_EQ(raised["metadata"]["annotations"]["gpu-sizer.io/workload"], kTrainKey);
  EXPECT_EQ(raised["metadata"]["annotations"].size(), 2u) << raised.dump();  // the key, and what was sized
  const nlohmann::json told = webhook.review("/validate", admission_review(next_run_pod(), "ml"));
  EXPECT_NE(told["response"]["warnings"].dump().find("OOM-killed 2 times in 3 runs at 192Gi"), std::string::npos)
      << told.dump();

  nlohmann::json other = next_run_pod();
  other["metadata"]["ownerReferences"][0]["name"] = "qwen-ft-t7b2x";
  const nlohmann::json table_sized = mutated(webhook, other);
  EXPECT_EQ(table_sized["spec"]["containers"][0]["resources"]["requests"]["memory"], "192Gi");

  prometheus_->stop();
  for (int i = 0; i < 100 && metrics_text(webhook).find("gpu_sizer_history_refreshes_total{result=\"error\"} 0") !=
                                 std::string::npos;
       ++i) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(metrics_text(webhook).find("gpu_sizer_history_refreshes_total{result=\"error\"} 0"), std::string::npos)
      << "no refresh failed after Prometheus stopped";
  EXPECT_EQ(mutated(webhook, next_run_pod()), raised);
  EXPECT_EQ(mutated(webhook, other), table_sized);
  httplib::Client client("127.0.0.1", webhook.metrics_port());
  const auto status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_NE(status->body.find("decisions keep the snapshot in use"), std::string::npos);
  // Logged once for the outage, however many refreshes failed.
  const std::string log = webhook.stderr_text();
  const std::string message = "cannot read history from Prometheus";
  const std::size_t first = log.find(message);
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(message, first + 1), std::string::npos) << log;
}

}  // namespace
}  // namespace gpusizer::testing::history_prometheus_test
