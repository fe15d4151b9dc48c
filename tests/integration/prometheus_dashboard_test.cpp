// The monitoring files on their own (deploy/monitoring; Debian package
// `prometheus` for promtool): the Grafana dashboard's layout, datasource and
// the views it must show; the alert rule file's required alerts, checked by
// promtool and unit-tested by it on synthetic series. The same files against
// a live Prometheus scraping the real binary: prometheus_live_test.cpp.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "integration/prometheus_support.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::prometheus_dashboard_test {
namespace {

using namespace prometheus_test;  // NOLINT(google-build-using-namespace)

const std::vector<std::string> kRequiredAlerts = {
    "GpuSizerWebhookErrors",      "GpuSizerLatencyNearTimeout", "GpuSizerCertificateExpiringSoon",
    "GpuSizerPolicyReloadFailed", "GpuSizerDenialSpike",        "GpuSizerDown",
    "GpuSizerNodeWatchStale",     "GpuSizerConnectionLimit",    "GpuSizerSizedPodsOOMKilled"};

// ---- The files on their own ------------------------------------------------

TEST(PrometheusDashboard, IsAGrafanaDashboardWithOnePrometheusDatasourceVariable) {
  std::ifstream in(dashboard_file());
  ASSERT_TRUE(in) << "cannot read " << dashboard_file();
  const json dashboard = json::parse(in, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << dashboard_file() << " is not valid JSON";
  EXPECT_EQ(dashboard.value("uid", ""), "gpu-sizer");
  EXPECT_GE(dashboard.value("schemaVersion", 0), 36);
  EXPECT_LE(dashboard.value("schemaVersion", 0), 39);
  bool has_datasource_variable = false;
  for (const auto& variable : dashboard["templating"]["list"]) {
    if (variable.value("name", "") == "datasource") {
      has_datasource_variable =
          variable.value("type", "") == "datasource" && variable.value("query", "") == "prometheus";
    }
  }
  EXPECT_TRUE(has_datasource_variable) << "templating needs a datasource variable of type prometheus";

  std::set<int> ids;
  std::vector<std::vector<bool>> grid;  // [y][x] occupied, top-level panels only
  for (const auto& panel : dashboard_panels()) {
    const std::string title = panel.value("title", "");
    SCOPED_TRACE("panel \"" + title + "\"");
    EXPECT_TRUE(ids.insert(panel.value("id", -1)).second) << "duplicate or missing panel id";
    const json& at = panel["gridPos"];
    const int x = at.value("x", -1), y = at.value("y", -1), w = at.value("w", 0), h = at.value("h", 0);
    ASSERT_TRUE(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= 24) << "gridPos " << at.dump();
    const auto bottom = static_cast<std::size_t>(y) + static_cast<std::size_t>(h);
    if (grid.size() < bottom) grid.resize(bottom, std::vector<bool>(24, false));
    for (int row = y; row < y + h; ++row) {
      for (int column = x; column < x + w; ++column) {
        EXPECT_FALSE(grid[row][column]) << "overlaps another panel at x=" << column << " y=" << row;
        grid[row][column] = true;
      }
    }
    if (panel.value("type", "") == "row") continue;
    EXPECT_FALSE(title.empty());
    EXPECT_EQ(panel["datasource"].value("uid", ""), "${datasource}");
    ASSERT_TRUE(panel.contains("targets") && !panel["targets"].empty()) << "a panel without queries";
    std::set<std::string> ref_ids;
    for (const auto& target : panel["targets"]) {
      EXPECT_TRUE(ref_ids.insert(target.value("refId", "")).second) << "duplicate refId";
      EXPECT_EQ(target["datasource"].value("uid", ""), "${datasource}");
      const std::string expr = target.value("expr", "");
      EXPECT_FALSE(expr.empty());
      // Only the variables this test substitutes (and Prometheus' own $value
      // never appears in a query): an unknown one would not parse.
      EXPECT_EQ(substitute_grafana_variables(expr).find('$'), std::string::npos) << "unknown variable in: " << expr;
    }
  }

  // Every view asked for exists.
  std::string all_exprs;
  for (const auto& q : dashboard_queries()) all_exprs += q.expr + "\n";
  for (const char* needed :
       {"by (profile) (rate(gpu_sizer_corrections_total",
        "by (namespace) (rate(gpu_sizer_corrections_total",
        "by (profile, namespace, reason) (rate(gpu_sizer_denials_total",
        "increase(gpu_sizer_cpu_cores_added_total[$__range]",
        "increase(gpu_sizer_memory_bytes_added_total[$__range]",
        "topk(10, sum by (namespace) (increase(gpu_sizer_corrections_total",
        "histogram_quantile(0.5, sum by (le, endpoint) (rate(gpu_sizer_review_duration_seconds_bucket",
        "histogram_quantile(0.99, sum by (le, endpoint) (rate(gpu_sizer_review_duration_seconds_bucket",
        "gpu_sizer_reviews_total{decision=\"error\"}",
        "gpu_sizer_tls_certificate_expiry_timestamp_seconds",
        "by (result) (increase(gpu_sizer_policy_reloads_total",
        "gpu_sizer_policy_info",
        "by (decision) (rate(gpu_sizer_reviews_total",
        "by (kind) (rate(gpu_sizer_reviews_total",
        "gpu_sizer_reviews_total{dry_run=\"true\"}",
        "gpu_sizer_pod_gpus_bucket",
        "gpu_sizer_build_info",
        "by (outcome) (gpu_sizer:gpu_pods_oom_killed:outcome)",
        "gpu_sizer:memory_requested_bytes:namespace_profile",
        "gpu_sizer:memory_working_set_bytes:namespace_profile",
        "rate(gpu_sizer_history_raises_total"}) {
    EXPECT_NE(all_exprs.find(needed), std::string::npos) << "no panel queries " << needed;
  }
}

TEST(PrometheusRules, FileHasTheRequiredAlertsEachWithSeverityAndAnnotations) {
  std::vector<Rule> rules;
  ASSERT_NO_THROW(rules = alert_file_rules()) << alerts_file();
  std::set<std::string> alerts;
  for (const auto& rule : rules) {
    SCOPED_TRACE(rule.name);
    ASSERT_TRUE(rule.node["expr"]) << "no expr";
    if (!rule.alert) continue;
    EXPECT_TRUE(alerts.insert(rule.name).second) << "duplicate alert";
    EXPECT_TRUE(rule.node["for"]) << "every alert states its `for`";
    ASSERT_TRUE(rule.node["labels"] && rule.node["labels"]["severity"]);
    const std::string severity = rule.node["labels"]["severity"].as<std::string>();
    EXPECT_TRUE(severity == "critical" || severity == "warning" || severity == "info") << severity;
    ASSERT_TRUE(rule.node["annotations"]);
    EXPECT_FALSE(rule.node["annotations"]["summary"].as<std::string>("").empty());
    EXPECT_FALSE(rule.node["annotations"]["description"].as<std::string>("").empty());
  }
  for (const auto& name : kRequiredAlerts) EXPECT_TRUE(alerts.count(name)) << "missing alert " << name;
}

TEST(PrometheusRules, PromtoolCheckRulesPasses) {
  ASSERT_TRUE(std::filesystem::exists(kPromtool)) << kPromtool << kMissingPrometheus;
  const CommandResult result = run_command({kPromtool, "check", "rules", alerts_file()});
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

// The alert logic on synthetic series (promtool test rules), including what
// the live test cannot produce in seconds: latency, expiry, a target down,
// a denial spike against the rate an hour earlier. Annotations are stripped
// from a copy of the rule file (promtool compares them verbatim); the
// expressions, `for` and labels tested are the repository's.
// promtool test rules on TESTS (a unit test file of rules.yaml): the rule
// file without its annotations.
CommandResult promtool_test_rules(const std::string& tests) {
  TempDir dir;
  YAML::Node root = YAML::LoadFile(alerts_file());
  for (auto group : root["groups"]) {
    for (auto rule : group["rules"]) rule.remove("annotations");
  }
  YAML::Emitter stripped;
  stripped << root;
  replace_file(dir.path() + "/rules.yaml", stripped.c_str());
  replace_file(dir.path() + "/tests.yaml", tests);
  return run_command({kPromtool, "test", "rules", dir.path() + "/tests.yaml"});
}

TEST(PrometheusRules, AlertsFireOnlyWhenTheyShouldOnSyntheticSeries) {
  ASSERT_TRUE(std::filesystem::exists(kPromtool)) << kPromtool << kMissingPrometheus;
  const CommandResult result = promtool_test_rules(R"(rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  # Errors: 2% of reviews fire after 5m pending; 0.5% never; no error series at all never.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_reviews_total{job="gpu-sizer",instance="a",endpoint="mutate",decision="mutated"}'
        values: '0+98x30'
      - series: 'gpu_sizer_reviews_total{job="gpu-sizer",instance="a",endpoint="mutate",decision="error"}'
        values: '0+2x30'
    alert_rule_test:
      - {eval_time: 4m, alertname: GpuSizerWebhookErrors}
      - eval_time: 12m
        alertname: GpuSizerWebhookErrors
        exp_alerts: [{exp_labels: {severity: critical}}]
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_reviews_total{job="gpu-sizer",instance="a",endpoint="mutate",decision="mutated"}'
        values: '0+199x30'
      - series: 'gpu_sizer_reviews_total{job="gpu-sizer",instance="a",endpoint="mutate",decision="error"}'
        values: '0+1x30'
    alert_rule_test:
      - {eval_time: 20m, alertname: GpuSizerWebhookErrors}
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_reviews_total{job="gpu-sizer",instance="a",endpoint="mutate",decision="mutated"}'
        values: '0+100x30'
    alert_rule_test:
      - {eval_time: 20m, alertname: GpuSizerWebhookErrors}
  # Latency: p99 in the 2.5-5 s bucket on one endpoint fires after 5m.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="mutate",le="0.001"}'
        values: '0+0x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="mutate",le="2.5"}'
        values: '0+0x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="mutate",le="5"}'
        values: '0+10x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="mutate",le="+Inf"}'
        values: '0+10x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="validate",le="0.001"}'
        values: '0+10x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="validate",le="2.5"}'
        values: '0+10x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="validate",le="5"}'
        values: '0+10x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="validate",le="+Inf"}'
        values: '0+10x30'
    alert_rule_test:
      - {eval_time: 4m, alertname: GpuSizerLatencyNearTimeout}
      - eval_time: 12m
        alertname: GpuSizerLatencyNearTimeout
        exp_alerts: [{exp_labels: {severity: warning}}]
  # Fast reviews never.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="mutate",le="0.001"}'
        values: '0+10x30'
      - series: 'gpu_sizer_review_duration_seconds_bucket{job="gpu-sizer",instance="a",endpoint="mutate",le="+Inf"}'
        values: '0+10x30'
    alert_rule_test:
      - {eval_time: 20m, alertname: GpuSizerLatencyNearTimeout}
  # Certificate: 10 days left fires after 15m; 30 days never.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_tls_certificate_expiry_timestamp_seconds{job="gpu-sizer",instance="a"}'
        values: '864000x30'
    alert_rule_test:
      - {eval_time: 10m, alertname: GpuSizerCertificateExpiringSoon}
      - eval_time: 20m
        alertname: GpuSizerCertificateExpiringSoon
        exp_alerts: [{exp_labels: {severity: warning}}]
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_tls_certificate_expiry_timestamp_seconds{job="gpu-sizer",instance="a"}'
        values: '2592000x30'
    alert_rule_test:
      - {eval_time: 20m, alertname: GpuSizerCertificateExpiringSoon}
  # A rejected reload: a pre-initialised counter going 0 -> 1 and one born
  # at 1 both fire at once and resolve after 10 minutes; reloads that succeed
  # never fire.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_policy_reloads_total{job="gpu-sizer",instance="pre",result="rejected"}'
        values: '0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1'
      - series: 'gpu_sizer_policy_reloads_total{job="gpu-sizer",instance="born",result="rejected"}'
        values: '_ _ _ 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1'
      - series: 'gpu_sizer_policy_reloads_total{job="gpu-sizer",instance="pre",result="reloaded"}'
        values: '0+1x24'
    alert_rule_test:
      - {eval_time: 2m, alertname: GpuSizerPolicyReloadFailed}
      - eval_time: 4m
        alertname: GpuSizerPolicyReloadFailed
        exp_alerts:
          - exp_labels: {severity: warning, job: gpu-sizer, instance: pre, result: rejected}
          - exp_labels: {severity: warning, job: gpu-sizer, instance: born, result: rejected}
      - {eval_time: 20m, alertname: GpuSizerPolicyReloadFailed}
  # Down: a target at up == 0 for 2m fires; so does no gpu-sizer target at all.
  - interval: 1m
    input_series:
      - series: 'up{job="gpu-sizer",instance="a"}'
        values: '1 1 0 0 0 0 0 0'
      - series: 'up{job="gpu-sizer",instance="b"}'
        values: '1 1 1 1 1 1 1 1'
    alert_rule_test:
      - {eval_time: 3m, alertname: GpuSizerDown}
      - eval_time: 5m
        alertname: GpuSizerDown
        exp_alerts: [{exp_labels: {severity: critical, job: gpu-sizer, instance: a}}]
  - interval: 1m
    input_series:
      - series: 'up{job="other"}'
        values: '1 1 1 1 1'
    alert_rule_test:
      - eval_time: 3m
        alertname: GpuSizerDown
        exp_alerts: [{exp_labels: {severity: critical, job: gpu-sizer}}]
  # Denial spike, per namespace: steady 1/s for two hours never fires (once
  # an hour of history exists); 0.05/s never; 0.2/s jumping to 1/s fires; a
  # namespace new at 1/s fires.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_denials_total{job="gpu-sizer",instance="a",namespace="steady",profile="train",reason="memory"}'
        values: '0+60x150'
      - series: 'gpu_sizer_denials_total{job="gpu-sizer",instance="a",namespace="quiet",profile="train",reason="memory"}'
        values: '0+3x150'
      - series: 'gpu_sizer_denials_total{job="gpu-sizer",instance="a",namespace="jump",profile="train",reason="memory"}'
        values: '0+12x90 1080+60x60'
      - series: 'gpu_sizer_denials_total{job="gpu-sizer",instance="a",namespace="new",profile="train",reason="memory"}'
        values: '_x120 0+60x30'
    alert_rule_test:
      - {eval_time: 80m, alertname: GpuSizerDenialSpike}
      - eval_time: 150m
        alertname: GpuSizerDenialSpike
        exp_alerts:
          - exp_labels: {severity: warning, namespace: jump}
          - exp_labels: {severity: warning, namespace: new}
  # The node watch: an age that keeps growing past 15 minutes fires 5
  # minutes later; one reset by each watch (under 5 minutes) never does.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_node_inventory_sync_age_seconds{job="gpu-sizer",instance="lost"}'
        values: '0+60x30'
      - series: 'gpu_sizer_node_inventory_sync_age_seconds{job="gpu-sizer",instance="fine"}'
        values: '0 60 120 180 240 0 60 120 180 240 0 60 120 180 240 0 60 120 180 240 0 60 120 180 240'
    alert_rule_test:
      - {eval_time: 18m, alertname: GpuSizerNodeWatchStale}
      - eval_time: 22m
        alertname: GpuSizerNodeWatchStale
        exp_alerts: [{exp_labels: {severity: warning, job: gpu-sizer, instance: lost}}]
  # The connection limit: evictions going on for over 5 minutes fire; a
  # burst of sheds that stops, and counters that stay at 0, do not.
  - interval: 1m
    input_series:
      - series: 'gpu_sizer_connections_evicted_total{job="gpu-sizer",instance="flooded"}'
        values: '0+100x30'
      - series: 'gpu_sizer_connections_shed_total{job="gpu-sizer",instance="flooded"}'
        values: '0x30'
      - series: 'gpu_sizer_connections_evicted_total{job="gpu-sizer",instance="burst"}'
        values: '0x30'
      - series: 'gpu_sizer_connections_shed_total{job="gpu-sizer",instance="burst"}'
        values: '0 0 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50 50'
    alert_rule_test:
      - {eval_time: 3m, alertname: GpuSizerConnectionLimit}
      - eval_time: 20m
        alertname: GpuSizerConnectionLimit
        exp_alerts: [{exp_labels: {severity: warning, job: gpu-sizer, instance: flooded}}]
)");
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

// The outcome rules (docs/history.md) on what kube-state-metrics and
// cAdvisor export for four GPU pods: sized and OOM-killed, stamped and left
// alone then OOM-killed, opted out and OOM-killed, and sized and healthy.
TEST(PrometheusRules, OutcomesJoinOomKillsToWhatGpuSizerDid) {
  ASSERT_TRUE(std::filesystem::exists(kPromtool)) << kPromtool << kMissingPrometheus;
  const CommandResult result = promtool_test_rules(R"(rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'kube_pod_annotations{namespace="ml",pod="a",annotation_gpu_sizer_io_workload="Job/a gpus=4 profile=train",annotation_gpu_sizer_io_sized="train profile, 4 GPUs: ..."}'
        values: '1x20'
      - series: 'kube_pod_annotations{namespace="ml",pod="b",annotation_gpu_sizer_io_workload="Job/b gpus=2 profile=train"}'
        values: '1x20'
      - series: 'kube_pod_annotations{namespace="ml",pod="c",annotation_gpu_sizer_io_mutate="false"}'
        values: '1x20'
      - series: 'kube_pod_annotations{namespace="serve",pod="d",annotation_gpu_sizer_io_workload="Deployment/d gpus=1 profile=infer",annotation_gpu_sizer_io_sized="infer profile, 1 GPU: ..."}'
        values: '1x20'
      - series: 'kube_pod_container_status_terminated_reason{namespace="ml",pod="a",container="t",reason="OOMKilled"}'
        values: '1x20'
      - series: 'kube_pod_container_status_last_terminated_reason{namespace="ml",pod="b",container="t",reason="OOMKilled"}'
        values: '1x20'
      - series: 'kube_pod_container_status_terminated_reason{namespace="ml",pod="c",container="t",reason="OOMKilled"}'
        values: '1x20'
      - series: 'kube_pod_container_resource_requests{namespace="ml",pod="a",container="t",resource="memory",unit="byte"}'
        values: '200x20'
      - series: 'kube_pod_container_resource_requests{namespace="ml",pod="b",container="t",resource="memory",unit="byte"}'
        values: '100x20'
      - series: 'kube_pod_container_resource_requests{namespace="serve",pod="d",container="s",resource="memory",unit="byte"}'
        values: '64x20'
      - series: 'container_memory_working_set_bytes{namespace="ml",pod="a",container="t"}'
        values: '190x20'
      - series: 'container_memory_working_set_bytes{namespace="ml",pod="a",container="POD"}'
        values: '1x20'
      - series: 'container_memory_working_set_bytes{namespace="serve",pod="d",container="s"}'
        values: '20x20'
    promql_expr_test:
      - expr: gpu_sizer:gpu_pods_oom_killed:outcome
        eval_time: 10m
        exp_samples:
          - {labels: 'gpu_sizer:gpu_pods_oom_killed:outcome{namespace="ml",outcome="sized"}', value: 1}
          - {labels: 'gpu_sizer:gpu_pods_oom_killed:outcome{namespace="ml",outcome="left_alone"}', value: 1}
          - {labels: 'gpu_sizer:gpu_pods_oom_killed:outcome{namespace="ml",outcome="opted_out"}', value: 1}
      - expr: gpu_sizer:memory_requested_bytes:namespace_profile
        eval_time: 10m
        exp_samples:
          - {labels: 'gpu_sizer:memory_requested_bytes:namespace_profile{namespace="ml",profile="train"}', value: 300}
          - {labels: 'gpu_sizer:memory_requested_bytes:namespace_profile{namespace="serve",profile="infer"}', value: 64}
      - expr: gpu_sizer:memory_working_set_bytes:namespace_profile
        eval_time: 10m
        exp_samples:
          - {labels: 'gpu_sizer:memory_working_set_bytes:namespace_profile{namespace="ml",profile="train"}', value: 190}
          - {labels: 'gpu_sizer:memory_working_set_bytes:namespace_profile{namespace="serve",profile="infer"}', value: 20}
    alert_rule_test:
      - {eval_time: 4m, alertname: GpuSizerSizedPodsOOMKilled}
      - eval_time: 10m
        alertname: GpuSizerSizedPodsOOMKilled
        exp_alerts:
          - exp_labels: {severity: warning, namespace: ml}
)");
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

}  // namespace
}  // namespace gpusizer::testing::prometheus_dashboard_test
