// The flood test (issue 25): the real binary, run as deploy/ runs it (two
// event loops, the default limits, metrics on), gets one flood after
// another from clients that try to take it down, while a probe sends a
// normal review every 50 ms on a new connection and the server's RSS is
// sampled every 50 ms. Each flood is what one client can send:
//   connections   3000 bare TCP connections, held (past --max-connections)
//   ffdhe         TLS 1.3 ClientHellos asking for ffdhe8192, replayed
//   namespaces    reviews whose namespace is 4 MB long
//   containers    a pod of 20,000 one-GPU containers, over and over
//   workflow      an Argo Workflow of 4-GPU templates as large as a body may be,
//                 to /mutate and /validate in turn (every template denied)
//   large-bodies  64 connections announcing 8 MB bodies and sending them slowly
//   slow-metrics  4 clients sending a scrape a byte a second, while Prometheus scrapes
//   sighup        SIGHUP ten times a second
// Exit 0 when the server's RSS stayed under the chart's 256 MiB limit, every
// probe review and every scrape was answered correctly, the probe's
// slowest answer took under 100 ms, and the server exited 0 on SIGTERM.
// Sanitizer builds (kSanitized) are checked for their own findings, for
// answering probes at all and for the exit code, not for RSS, latency or
// probes lost to the connection flood (their handshakes are many times
// slower).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>

#include "integration/raw_client.h"
#include "support/review_support.h"

namespace gpusizer::testing {
namespace {

using Milliseconds = std::chrono::duration<double, std::milli>;

// The chart's and deploy/'s memory limit.
constexpr long kMemoryLimitKib = 256L * 1024;
constexpr double kProbeLatencyLimitMs = 100;

const json kFourGpuPod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});

// Runs `body` on `threads` threads until `seconds` pass (each call is one
// attempt; it checks the clock itself when it waits).
void for_seconds(double seconds, int threads, const std::function<void(Clock::time_point end)>& body) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      while (Clock::now() < end) body(end);
    });
  }
  for (auto& worker : workers) worker.join();
}

std::unique_ptr<httplib::SSLClient> tls_client(const WebhookProcess& webhook) {
  auto client = webhook.client();
  client->set_tcp_nodelay(true);
  client->set_read_timeout(60);
  return client;
}

// A normal review every 50 ms, each on a new connection so that over time
// every event loop answers some.
class Probe {
 public:
  explicit Probe(const WebhookProcess& webhook)
      : webhook_(webhook), body_(admission_review(kFourGpuPod).dump()), thread_([this] { run(); }) {}
  ~Probe() {
    stop_ = true;
    thread_.join();
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  struct Tally {
    int answered = 0;
    int failed = 0;
    double max_ms = 0;
    std::string first_failure;
  };
  // What it saw since the last call.
  Tally take() {
    std::lock_guard lock(mutex_);
    return std::exchange(tally_, Tally{});
  }

 private:
  void run() {
    while (!stop_) {
      const auto started = Clock::now();
      auto client = webhook_.client();
      client->set_connection_timeout(5);
      client->set_read_timeout(5);
      client->set_keep_alive(false);
      // As the API server's Go client: without it the body waits for the
      // server's delayed ACK (40 ms).
      client->set_tcp_nodelay(true);
      auto result = client->Post("/mutate", body_, "application/json");
      const double ms = Milliseconds(Clock::now() - started).count();
      std::string failure;
      if (!result) {
        failure = "no answer: " + httplib::to_string(result.error());
      } else if (result->status != 200 || !contains(result->body, "192Gi")) {
        failure = "status " + std::to_string(result->status) + ": " + result->body.substr(0, 200);
      }
      {
        std::lock_guard lock(mutex_);
        if (failure.empty()) {
          ++tally_.answered;
          tally_.max_ms = std::max(tally_.max_ms, ms);
        } else {
          if (tally_.failed++ == 0) tally_.first_failure = failure;
        }
      }
      std::this_thread::sleep_until(started + std::chrono::milliseconds(50));
    }
  }

  const WebhookProcess& webhook_;
  const std::string body_;
  std::mutex mutex_;
  Tally tally_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: it starts in the constructor
};

// The server's RSS every 50 ms; the most since the last call.
class RssSampler {
 public:
  explicit RssSampler(pid_t pid) : pid_(pid), thread_([this] { run(); }) {}
  ~RssSampler() {
    stop_ = true;
    thread_.join();
  }
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;
  long take_max_kib() { return max_kib_.exchange(0); }

 private:
  void run() {
    while (!stop_) {
      const long kib = resident_kib(pid_).value_or(0);
      long seen = max_kib_.load();
      while (kib > seen && !max_kib_.compare_exchange_weak(seen, kib)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  const pid_t pid_;
  std::atomic<long> max_kib_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The bytes of a TLS 1.3 ClientHello offering only `groups`, made once and
// replayed: an attacker does no key-exchange work of its own.
std::string client_hello(const char* groups) {
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(context, TLS1_3_VERSION);
  SSL_CTX_set1_groups_list(context, groups);
  SSL* ssl = SSL_new(context);
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, BIO_new(BIO_s_mem()), out);
  SSL_connect(ssl);
  char* data = nullptr;
  const long size = BIO_get_mem_data(out, &data);
  std::string hello(data, static_cast<std::size_t>(size));
  SSL_free(ssl);
  SSL_CTX_free(context);
  ERR_clear_error();
  return hello;
}

// Sends `body` over and over on one connection, to each of `paths` in
// turn; counts answers.
void send_repeatedly(const WebhookProcess& webhook, const std::vector<std::string>& paths, const std::string& body,
                     Clock::time_point end, std::string& report) {
  auto client = tls_client(webhook);
  int answered = 0;
  int other = 0;
  for (std::size_t sent = 0; Clock::now() < end; ++sent) {
    auto result = client->Post(paths[sent % paths.size()], body, "application/json");
    (result && result->status == 200 ? answered : other)++;
  }
  report = std::to_string(answered) + " answered 200, " + std::to_string(other) + " not";
}

// An Argo Workflow of 4-GPU templates whose review is just under `bytes`.
std::string largest_workflow_review(std::size_t bytes) {
  const json templ = {{"name", "t"},
                      {"container",
                       {{"image", "trainer:1"},
                        {"command", {"torchrun", "--nproc-per-node=4", "train.py"}},
                        {"resources", {{"limits", {{"nvidia.com/gpu", "4"}, {"memory", "64Gi"}, {"cpu", "8"}}}}}}}};
  json workflow = {{"apiVersion", "argoproj.io/v1alpha1"},
                   {"kind", "Workflow"},
                   {"metadata", {{"name", "flood"}, {"namespace", "team-a"}}},
                   {"spec", {{"entrypoint", "t0"}, {"templates", json::array()}}}};
  json review = admission_review(workflow);
  review["request"]["kind"] = {{"group", "argoproj.io"}, {"version", "v1alpha1"}, {"kind", "Workflow"}};
  review["request"]["resource"] = {{"group", "argoproj.io"}, {"version", "v1alpha1"}, {"resource", "workflows"}};
  const std::size_t envelope = review.dump().size();
  const std::size_t each = templ.dump().size() + 8;  // a name of up to 7 digits and a comma
  json& templates = review["request"]["object"]["spec"]["templates"];
  for (std::size_t i = 0; envelope + (i + 1) * each < bytes; ++i) {
    json t = templ;
    t["name"] = "t" + std::to_string(i);
    templates.push_back(std::move(t));
  }
  return review.dump();
}

struct Flood {
  std::string name;
  std::function<std::string(WebhookProcess&, double seconds)> run;  // what it did, one line
};

std::vector<Flood> floods() {
  return {
      {"connections",
       [](WebhookProcess& webhook, double seconds) {
         std::vector<std::unique_ptr<RawClient>> held;
         int refused = 0;
         for (int i = 0; i < 3000; ++i) {
           try {
             held.push_back(std::make_unique<RawClient>(webhook.port()));
           } catch (const std::exception&) {
             ++refused;
           }
         }
         std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
         return std::to_string(held.size()) + " connections held, " + std::to_string(refused) + " refused";
       }},
      {"ffdhe",
       [](WebhookProcess& webhook, double seconds) {
         const std::string hello = client_hello("ffdhe8192");
         std::atomic<int> sent{0};
         for_seconds(seconds, 2, [&](Clock::time_point) {
           RawClient client(webhook.port());
           client.send(hello);
           client.receive(std::chrono::milliseconds(500));  // the server's alert, or its close
           ++sent;
         });
         return std::to_string(sent.load()) + " ffdhe8192 ClientHellos replayed";
       }},
      {"namespaces",
       [](WebhookProcess& webhook, double seconds) {
         json review = admission_review(kFourGpuPod);
         review["request"]["namespace"] = std::string(4u << 20, 'n');
         std::string report;
         for_seconds(seconds, 1,
                     [&](Clock::time_point end) { send_repeatedly(webhook, {"/mutate"}, review.dump(), end, report); });
         return "4 MB namespaces: " + report;
       }},
      {"containers",
       [](WebhookProcess& webhook, double seconds) {
         const std::string body =
             admission_review(pod_with_containers(20000, {{"limits", {{"nvidia.com/gpu", "1"}, {"memory", "1Gi"}}}}))
                 .dump();
         std::string report;
         for_seconds(seconds, 1,
                     [&](Clock::time_point end) { send_repeatedly(webhook, {"/validate"}, body, end, report); });
         return "20,000-container pods: " + report;
       }},
      {"workflow",
       [](WebhookProcess& webhook, double seconds) {
         const std::string body = largest_workflow_review((8u << 20) - 1024);
         std::string report;
         for_seconds(seconds, 1, [&](Clock::time_point end) {
           send_repeatedly(webhook, {"/mutate", "/validate"}, body, end, report);
         });
         return std::to_string(body.size()) + "-byte workflows: " + report;
       }},
      {"large-bodies",
       [](WebhookProcess& webhook, double seconds) {
         const std::string headers =
             "POST /mutate HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: application/json\r\nContent-Length: "
             "8000000\r\n\r\n";
         const std::string chunk(std::size_t{64} << 10, ' ');
         std::vector<std::unique_ptr<RawClient>> clients;
         const auto end =
             Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
         while (Clock::now() < end) {
           // New ones as the server cuts the old at their deadline.
           clients.erase(std::remove_if(clients.begin(), clients.end(),
                                        [](auto& c) { return c->receive(std::chrono::milliseconds(0)).closed; }),
                         clients.end());
           while (clients.size() < 64) {
             clients.push_back(std::make_unique<RawClient>(webhook.port()));
             clients.back()->handshake(webhook.ca_file());
             clients.back()->send(headers);
           }
           for (auto& client : clients) client->send_within(chunk, std::chrono::milliseconds(5));
           std::this_thread::sleep_for(std::chrono::milliseconds(500));
         }
         return "64 connections sending 8 MB bodies slowly";
       }},
      {"slow-metrics",
       [](WebhookProcess& webhook, double seconds) {
         std::atomic<int> scrapes{0};
         std::atomic<int> failed{0};
         std::latch started(4);
         std::vector<std::thread> slow;
         for (int i = 0; i < 4; ++i) {
           slow.emplace_back([&] {
             RawClient client(webhook.metrics_port());
             trickle(client, "GET /metrics HTTP/1.1\r\nX-Padding: " + std::string(200, 'p') + "\r\n\r\n", started);
           });
         }
         started.wait();
         for_seconds(seconds, 1, [&](Clock::time_point) {
           (scrape_metrics(webhook).empty() ? failed : scrapes)++;
           std::this_thread::sleep_for(std::chrono::milliseconds(200));
         });
         for (auto& thread : slow) thread.join();
         if (failed > 0) throw std::runtime_error(std::to_string(failed.load()) + " scrapes failed");
         return std::to_string(scrapes.load()) + " scrapes answered beside 4 slow clients";
       }},
      {"sighup",
       [](WebhookProcess& webhook, double seconds) {
         int sent = 0;
         for_seconds(seconds, 1, [&](Clock::time_point) {
           ::kill(webhook.pid(), SIGHUP);
           ++sent;
           std::this_thread::sleep_for(std::chrono::milliseconds(100));
         });
         return std::to_string(sent) + " SIGHUPs";
       }},
  };
}

int run(double seconds, const std::string& only) {
  ::signal(SIGPIPE, SIG_IGN);
  WebhookProcess webhook({"--threads", "2", "--metrics-listen", "127.0.0.1:0"});
  RssSampler rss(webhook.pid());
  Probe probe(webhook);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  probe.take();
  bool passed = true;
  std::printf("%-13s %10s %8s %8s %10s  %s\n", "flood", "max RSS", "probes", "failed", "slowest", "what it sent");
  for (const Flood& flood : floods()) {
    if (!only.empty() && flood.name != only) continue;
    rss.take_max_kib();
    std::string what;
    try {
      what = flood.run(webhook, seconds);
    } catch (const std::exception& e) {
      what = std::string("FAILED: ") + e.what();
      passed = false;
    }
    // The probe's answers in the second after the flood count too: a loop
    // still busy with it would show there.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const long max_kib = rss.take_max_kib();
    const Probe::Tally tally = probe.take();
    // A sanitizer build is checked for what it finds (its errors end the
    // server, failing the run) and for answering at all: its handshakes are
    // slow enough that the connection flood can evict a probe still in one.
    const bool ok =
        tally.answered > 0 &&
        (kSanitized || (max_kib < kMemoryLimitKib && tally.failed == 0 && tally.max_ms < kProbeLatencyLimitMs));
    passed = passed && ok;
    std::printf("%-13s %7ld MiB %8d %8d %8.1f ms  %s%s\n", flood.name.c_str(), max_kib / 1024, tally.answered,
                tally.failed, tally.max_ms, what.c_str(), ok ? "" : "  <- FAILED");
    if (!tally.first_failure.empty()) std::printf("  first probe failure: %s\n", tally.first_failure.c_str());
    std::fflush(stdout);
  }
  webhook.terminate();
  const auto exited = webhook.wait_for(std::chrono::seconds(30));
  if (exited != std::optional<int>(0)) {
    std::printf("the server did not exit 0 after SIGTERM\n%s\n", webhook.stderr_text().substr(0, 2000).c_str());
    passed = false;
  }
  if (kSanitized) {
    std::printf("%s: probes answered, no sanitizer finding (RSS, latency and lost probes not checked)\n",
                passed ? "PASS" : "FAIL");
  } else {
    std::printf("%s: RSS under %ld MiB, every probe and scrape answered, slowest under 100 ms\n",
                passed ? "PASS" : "FAIL", kMemoryLimitKib / 1024);
  }
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace gpusizer::testing

int main(int argc, char** argv) try {
  double seconds = 10;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--seconds" && i + 1 < argc) {
      seconds = std::stod(argv[++i]);
    } else if (flag == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: gpu-sizer-floodtest [--seconds PER_FLOOD] [--only NAME]\n");
      return 2;
    }
  }
  return gpusizer::testing::run(seconds, only);
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpu-sizer-floodtest: %s\n", e.what());
  return 2;
}
