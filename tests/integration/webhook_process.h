// Starts the real gpu-sizer binary on an ephemeral port and talks to it over
// TLS, verifying its certificate as the API server does. No GoogleTest here:
// the load generator (tests/load) drives the binary with the same code.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gpusizer::testing {

// A fresh directory under /tmp, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/gpu-sizer-test-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A build with ASan or TSan: several times slower, its shadow memory counts
// in RSS and its allocator keeps what is freed (ASan's quarantine), so
// timings and resident memory are measured in the ordinary build only.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// VmRSS of a process in KiB, or nothing once it is gone.
inline std::optional<long> resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return std::nullopt;
}

// The transport the webhook under test serves with: GPU_SIZER_TEST_TRANSPORT
// (CTest runs the transport suites once per transport), else the default.
inline std::string test_transport() {
  const char* transport = std::getenv("GPU_SIZER_TEST_TRANSPORT");
  return transport && *transport ? transport : "asio";
}

class WebhookProcess {
 public:
  // Runs `gpu-sizer serve --listen 127.0.0.1:0 --cert-dir TMP ARGS...` and
  // waits until it prints its address.
  explicit WebhookProcess(const std::vector<std::string>& args = {}) {
    // A keep-alive connection the server closed while idle (after
    // --keep-alive-timeout) must fail the next write with EPIPE, which
    // httplib handles, not kill the test process with SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    std::vector<std::string> argv = {GPU_SIZER_BINARY, "serve", "--listen", "127.0.0.1:0", "--cert-dir", dir()};
    argv.insert(argv.end(), {"--transport", test_transport()});
    argv.insert(argv.end(), args.begin(), args.end());
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      const int err = ::open((dir() + "/stderr.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(err, STDERR_FILENO);
      ::close(out[0]);
      std::vector<char*> raw;
      for (auto& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_fd_ = out[0];
    const std::string line = read_line_with("listening on https://", std::chrono::seconds(20));
    port_ = std::stoi(line.substr(line.rfind(':') + 1));
  }

  ~WebhookProcess() {
    if (pid_ > 0) stop();
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
  }

  WebhookProcess(const WebhookProcess&) = delete;
  WebhookProcess& operator=(const WebhookProcess&) = delete;

  int port() const { return port_; }
  // The metrics port it printed (with --metrics-listen HOST:0 too); 0
  // without --metrics-listen.
  int metrics_port() const { return metrics_port_; }
  const std::string& dir() const { return dir_.path(); }
  std::string ca_file() const { return dir() + "/ca.crt"; }
  std::string stderr_text() const {
    std::ifstream in(dir() + "/stderr.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Sends SIGTERM without waiting.
  void terminate() const { ::kill(pid_, SIGTERM); }

  // Sends SIGTERM and returns the exit status (or -1 if killed by a signal).
  int stop() {
    client_.reset();  // an idle keep-alive connection would hold shutdown for the keep-alive timeout
    terminate();
    int status = 0;
    ::waitpid(pid_, &status, 0);
    return reaped(status);
  }

  // Waits up to `timeout` for the process to exit (after terminate()):
  // its exit status, -1 if a signal killed it, nothing if it still runs.
  std::optional<int> wait_for(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) return reaped(status);
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // The server's process id (for /proc/PID and signals); -1 once it exited.
  pid_t pid() const { return pid_; }

  std::unique_ptr<httplib::SSLClient> client() const {
    auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    client->set_ca_cert_path(ca_file());
    client->enable_server_certificate_verification(true);
    client->set_connection_timeout(5);
    // Generous: a 5000-container review takes seconds under TSan on a
    // loaded machine.
    client->set_read_timeout(30);
    client->set_keep_alive(true);
    return client;
  }

  // POSTs a review body to /mutate or /validate; fails the caller's
  // expectations by throwing when the transport fails.
  httplib::Result post(const std::string& path, const std::string& body,
                       const std::string& content_type = "application/json") {
    if (!client_) client_ = client();
    return client_->Post(path, body, content_type);
  }

  // A 200 answer parsed; throws on anything else.
  nlohmann::json review(const std::string& path, const nlohmann::json& review_request) {
    auto result = post(path, review_request.dump());
    if (!result) throw std::runtime_error("request failed: " + httplib::to_string(result.error()));
    if (result->status != 200) {
      throw std::runtime_error("status " + std::to_string(result->status) + ": " + result->body);
    }
    return nlohmann::json::parse(result->body);
  }

 private:
  int reaped(int status) {
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string read_line_with(const std::string& marker, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string buffer;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{stdout_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char c;
      if (::read(stdout_fd_, &c, 1) != 1) break;
      if (c != '\n') {
        buffer += c;
        continue;
      }
      if (buffer.find(marker) != std::string::npos) return buffer;
      // "metrics on http://127.0.0.1:PORT/metrics", printed before the marker.
      if (const auto at = buffer.find("metrics on http://"); at != std::string::npos) {
        const auto path = buffer.rfind("/metrics");
        const auto colon = buffer.rfind(':', path);
        metrics_port_ = std::stoi(buffer.substr(colon + 1, path - colon - 1));
      }
      buffer.clear();
    }
    throw std::runtime_error("gpu-sizer did not print \"" + marker + "\"; stderr:\n" + stderr_text());
  }

  TempDir dir_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<httplib::SSLClient> client_;
};

// GET /metrics from a webhook's metrics port; empty when it fails.
inline std::string scrape_metrics(const WebhookProcess& webhook) {
  httplib::Client client("127.0.0.1", webhook.metrics_port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto result = client.Get("/metrics");
  return result && result->status == 200 ? result->body : "";
}

// The value of an unlabelled metric in Prometheus' text format; nothing
// when it is not there.
inline std::optional<double> metric_value(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return std::nullopt;
}

// True when GET /healthz on a fresh connection answers 200 with the server
// certificate verified against ca_file: what a new handshake sees.
inline bool answers_with_ca(int port, const std::string& ca_file) {
  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path(ca_file);
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(2);
  auto result = client.Get("/healthz");
  return result && result->status == 200;
}

}  // namespace gpusizer::testing
