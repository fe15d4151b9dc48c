// Shared by the Prometheus tests (prometheus_dashboard_test.cpp and
// prometheus_live_test.cpp): the Debian package's binaries, the monitoring
// files under deploy/monitoring read as Grafana and Prometheus read them,
// and a Prometheus server run as a child process.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "integration/commands.h"

namespace gpusizer::testing::prometheus_test {

using nlohmann::json;
using namespace std::chrono_literals;

inline constexpr const char* kPrometheus = "/usr/bin/prometheus";
inline constexpr const char* kPromtool = "/usr/bin/promtool";
inline constexpr const char* kMissingPrometheus =
    " not found: install the Debian package `prometheus` (server and promtool); `make test` installs it, "
    "it is in the Makefile's PACKAGES";

inline std::string repo_file(const std::string& relative) { return std::string(GPU_SIZER_SOURCE_DIR) + "/" + relative; }
inline std::string dashboard_file() { return repo_file("deploy/monitoring/grafana-dashboard.json"); }
inline std::string alerts_file() { return repo_file("deploy/monitoring/alerts.yaml"); }

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A port that was free a moment ago: bind 127.0.0.1:0, read it, close.
inline int free_port() {
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

// Grafana's variables as this test evaluates them; ${datasource} only appears
// in datasource references, never in an expression.
inline std::string substitute_grafana_variables(std::string expr) {
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

inline void collect_panels(const json& panels, std::vector<json>& out) {
  for (const auto& panel : panels) {
    out.push_back(panel);
    if (panel.contains("panels")) collect_panels(panel["panels"], out);  // collapsed rows hold their panels
  }
}

inline std::vector<json> dashboard_panels() {
  std::ifstream in(dashboard_file());
  if (!in) throw std::runtime_error("cannot read " + dashboard_file());
  const json dashboard = json::parse(in);
  std::vector<json> panels;
  collect_panels(dashboard.at("panels"), panels);
  return panels;
}

inline std::vector<PanelQuery> dashboard_queries() {
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

inline std::vector<Rule> alert_file_rules() {
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
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // GET an API path; the parsed body ({"status": "error", ...} when it is not JSON).
  json get(const std::string& path) {
    auto result = client().Get(path);
    return parse(result);
  }

  // SIGTERM, then SIGKILL after 10 s; idempotent.
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
      exec_or_exit(argv);
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

}  // namespace gpusizer::testing::prometheus_test
