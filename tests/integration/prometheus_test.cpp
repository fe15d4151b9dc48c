// The monitoring deliverables against a real Prometheus (Debian package
// `prometheus`, which also brings promtool): the binary's /metrics scraped
// after a known mix of AdmissionReviews, every Grafana panel query and every
// alert expression evaluated by Prometheus itself, the rule file loaded and
// unit-tested with promtool.
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
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr const char* kPromtool = "/usr/bin/promtool";
constexpr const char* kMissingPrometheus =
    " not found: install the Debian package `prometheus` (server and promtool); `make test` installs it, "
    "it is in the Makefile's PACKAGES";

constexpr double kGi = 1024.0 * 1024.0 * 1024.0;

std::string repo_file(const std::string& relative) { return std::string(GPU_SIZER_SOURCE_DIR) + "/" + relative; }
std::string dashboard_file() { return repo_file("deploy/monitoring/grafana-dashboard.json"); }
std::string alerts_file() { return repo_file("deploy/monitoring/alerts.yaml"); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& text) {
  // Write then rename, as a ConfigMap update swaps files.
  std::ofstream(path + ".tmp") << text;
  std::filesystem::rename(path + ".tmp", path);
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// A port that was free a moment ago: bind 127.0.0.1:0, read it, close.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind 127.0.0.1:0");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult run_command(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    std::vector<std::string> copy = argv;
    std::vector<char*> raw;
    for (auto& a : copy) raw.push_back(a.data());
    raw.push_back(nullptr);
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  ::close(out[1]);
  CommandResult result;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(out[0], buffer, sizeof(buffer))) > 0) result.output.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

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

// Grafana's variables as this test evaluates them; ${datasource} only appears
// in datasource references, never in an expression.
std::string substitute_grafana_variables(std::string expr) {
  for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
           {"$__rate_interval", "1m"}, {"$__range", "5m"}, {"$__interval", "1m"}}) {
    for (std::size_t at; (at = expr.find(variable)) != std::string::npos;) expr.replace(at, variable.size(), value);
  }
  return expr;
}

struct PanelQuery {
  std::string panel;
  std::string ref_id;
  std::string expr;
};

void collect_panels(const json& panels, std::vector<json>& out) {
  for (const auto& panel : panels) {
    out.push_back(panel);
    if (panel.contains("panels")) collect_panels(panel["panels"], out);  // collapsed rows hold their panels
  }
}

std::vector<json> dashboard_panels() {
  std::ifstream in(dashboard_file());
  if (!in) throw std::runtime_error("cannot read " + dashboard_file());
  const json dashboard = json::parse(in);
  std::vector<json> panels;
  collect_panels(dashboard.at("panels"), panels);
  return panels;
}

std::vector<PanelQuery> dashboard_queries() {
  std::vector<PanelQuery> queries;
  for (const auto& panel : dashboard_panels()) {
    for (const auto& target : panel.value("targets", json::array())) {
      queries.push_back({panel.value("title", ""), target.value("refId", ""), target.value("expr", "")});
    }
  }
  return queries;
}

struct Rule {
  std::string group;
  std::string name;  // alert or record name
  bool alert = false;
  YAML::Node node;
};

std::vector<Rule> alert_file_rules() {
  const YAML::Node root = YAML::LoadFile(alerts_file());
  std::vector<Rule> rules;
  for (const auto& group : root["groups"]) {
    for (const auto& rule : group["rules"]) {
      const bool alert = static_cast<bool>(rule["alert"]);
      rules.push_back({group["name"].as<std::string>(),
                       alert ? rule["alert"].as<std::string>() : rule["record"].as<std::string>(), alert, rule});
    }
  }
  return rules;
}

const std::vector<std::string> kRequiredAlerts = {
    "GpuSizerWebhookErrors",      "GpuSizerLatencyNearTimeout", "GpuSizerCertificateExpiringSoon",
    "GpuSizerPolicyReloadFailed", "GpuSizerDenialSpike",        "GpuSizerDown"};

// A Prometheus server run as a child process on a port picked here, killed
// (SIGTERM, then SIGKILL after 10 s) when destroyed.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& dir, const std::string& config_file) : dir_(dir) {
    // The port was free when picked; another test may take it before
    // Prometheus binds it, so try again with a new one.
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = free_port();
      start(config_file);
      if (wait_ready(20s)) return;
      const std::string log = log_text();
      stop();
      if (log.find("address already in use") == std::string::npos) {
        throw std::runtime_error("prometheus did not become ready; its log:\n" + log);
      }
    }
    throw std::runtime_error("prometheus could not get a free port");
  }
  ~PrometheusServer() { stop(); }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  std::string log_text() const { return read_text(dir_ + "/prometheus.log"); }

  // GET an API path; the parsed body ({"status": "error", ...} when it is not JSON).
  json get(const std::string& path) {
    auto result = client().Get(path);
    return parse(result);
  }

  // An instant query at the current time; the parsed API answer.
  json query(const std::string& expr) {
    auto result = client().Post("/api/v1/query", httplib::Params{{"query", expr}});
    return parse(result);
  }

 private:
  void start(const std::string& config_file) {
    const std::vector<std::string> argv = {
        kPrometheus, "--config.file=" + config_file, "--storage.tsdb.path=" + dir_ + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=info"};
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Never outlive a test process that crashed.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);
      const int log = ::open((dir_ + "/prometheus.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
      std::vector<std::string> copy = argv;
      std::vector<char*> raw;
      for (auto& a : copy) raw.push_back(a.data());
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
  }

  bool wait_ready(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      auto ready = client().Get("/-/ready");
      if (ready && ready->status == 200) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
    pid_ = -1;
  }

  httplib::Client& client() {
    if (!client_) {
      client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
      client_->set_connection_timeout(2);
      client_->set_read_timeout(10);
    }
    return *client_;
  }

  static json parse(const httplib::Result& result) {
    if (!result) return {{"status", "error"}, {"error", "request failed: " + httplib::to_string(result.error())}};
    json body = json::parse(result->body, nullptr, false);
    if (body.is_discarded())
      return {{"status", "error"}, {"error", "HTTP " + std::to_string(result->status) + ": " + result->body}};
    return body;
  }

  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<httplib::Client> client_;
};

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
       {"by (profile) (rate(gpu_sizer_corrections_total", "by (namespace) (rate(gpu_sizer_corrections_total",
        "by (profile, namespace, reason) (rate(gpu_sizer_denials_total",
        "increase(gpu_sizer_cpu_cores_added_total[$__range]", "increase(gpu_sizer_memory_bytes_added_total[$__range]",
        "topk(10, sum by (namespace) (increase(gpu_sizer_corrections_total",
        "histogram_quantile(0.5, sum by (le, endpoint) (rate(gpu_sizer_review_duration_seconds_bucket",
        "histogram_quantile(0.99, sum by (le, endpoint) (rate(gpu_sizer_review_duration_seconds_bucket",
        "gpu_sizer_reviews_total{decision=\"error\"}", "gpu_sizer_tls_certificate_expiry_timestamp_seconds",
        "by (result) (increase(gpu_sizer_policy_reloads_total", "gpu_sizer_policy_info",
        "by (decision) (rate(gpu_sizer_reviews_total", "by (kind) (rate(gpu_sizer_reviews_total",
        "gpu_sizer_reviews_total{dry_run=\"true\"}", "gpu_sizer_pod_gpus_bucket", "gpu_sizer_build_info"}) {
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
TEST(PrometheusRules, AlertsFireOnlyWhenTheyShouldOnSyntheticSeries) {
  ASSERT_TRUE(std::filesystem::exists(kPromtool)) << kPromtool << kMissingPrometheus;
  TempDir dir;
  YAML::Node root = YAML::LoadFile(alerts_file());
  for (auto group : root["groups"]) {
    for (auto rule : group["rules"]) rule.remove("annotations");
  }
  YAML::Emitter stripped;
  stripped << root;
  write_file(dir.path() + "/rules.yaml", stripped.c_str());
  write_file(dir.path() + "/tests.yaml", R"(rule_files: [rules.yaml]
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
)");
  const CommandResult result = run_command({kPromtool, "test", "rules", dir.path() + "/tests.yaml"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

// ---- The real binary scraped by a real Prometheus --------------------------

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
  write_file(policy, "mode: mutate\n");
  const int metrics_port = free_port();
  webhook_ = std::make_unique<WebhookProcess>(std::vector<std::string>{
      "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port), "--policy", policy, "--policy-poll", "1"});

  const std::string config = dir_->path() + "/prometheus.yml";
  write_file(config,
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
  write_file(policy, "mode: mutate\nexemptions: {namespaces: [kube-system, kube-public, monitoring]}\n");
  const std::string reloaded = wait_for_log("reloaded");
  std::smatch match;
  std::string active_sha256;
  if (std::regex_search(reloaded, match, std::regex("[0-9a-f]{64}"))) active_sha256 = match[0];
  EXPECT_FALSE(active_sha256.empty()) << "no sha256 in \"" << reloaded << "\"";
  wait_for_scrape_after(unix_now());

  // Phase 2, and an invalid policy change (rejected; the previous stays).
  write_file(policy, "mode: mutate\ndenyFromGPUs: 2\n");
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
    // Panels allowed to be empty would be listed here with the reason;
    // there are none.
    const std::set<std::string> may_be_empty = {};
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
}  // namespace gpusizer::testing
