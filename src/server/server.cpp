#include "gpusizer/server/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include <httplib.h>
#include <malloc.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpusizer/server/certificates.h"
#include "gpusizer/server/log.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/server/node_watcher.h"
#include "gpusizer/server/openssl_error.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/server/self_signed.h"
#include "gpusizer/server/status_page.h"
#include "gpusizer/server/webhook_routes.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

Result<ListenAddress> parse_listen_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos)
    return Status::invalid_argument("listen address \"" + text + "\" needs a port: HOST:PORT");
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  auto port = read_whole(port_text, 0, 65535);
  if (!port) return Status::invalid_argument("listen address \"" + text + "\": port " + port.error());
  return ListenAddress{host, static_cast<int>(port.value())};
}

std::optional<int> cpus_of_cgroup_limit(std::string_view cpu_max) {
  // "QUOTA PERIOD" in microseconds; QUOTA is "max" when there is no limit.
  long long quota = 0;
  long long period = 0;
  const std::string text(cpu_max);
  if (std::sscanf(text.c_str(), "%lld %lld", &quota, &period) != 2 || quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<int>((quota + period - 1) / period);
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                         : static_cast<int>(std::thread::hardware_concurrency());
  // A Kubernetes CPU limit leaves the affinity mask at every CPU of the
  // node; threads past the limit would only be throttled.
  std::ifstream cpu_max("/sys/fs/cgroup/cpu.max");
  std::string line;
  if (std::getline(cpu_max, line)) {
    if (const auto limit = cpus_of_cgroup_limit(line)) cpus = std::min(cpus, *limit);
  }
  return std::max(1, cpus);
}

int default_threads(std::string_view transport) { return transport == "asio" ? available_cpus() : 32; }

namespace {

// TLS 1.2 ciphers with forward secrecy and AEAD only; TLS 1.3 suites are
// OpenSSL's defaults, all modern.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// Blocks SIGTERM and SIGINT in this thread and every thread it starts, so
// one watcher thread receives them with sigwait instead of a handler that
// could run anywhere.
sigset_t block_shutdown_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

}  // namespace

Status configure_tls(SSL_CTX& context, CertificateStore& certificates, const std::string& client_ca) {
  SSL_CTX_set_min_proto_version(&context, TLS1_2_VERSION);
  SSL_CTX_set_options(&context, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_cipher_list(&context, kTls12Ciphers) != 1) return Status::io_error(openssl_error("cipher list"));
  certificates.serve_from(context);
  if (!client_ca.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca.c_str());
    if (!names || SSL_CTX_load_verify_locations(&context, client_ca.c_str(), nullptr) != 1) {
      if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
      return Status::invalid_argument(
          openssl_error("--client-ca " + client_ca + ": no PEM CA certificate could be read"));
    }
    SSL_CTX_set_client_CA_list(&context, names);
    // A certificate that is presented must verify, or the handshake fails;
    // none at all is allowed here so the kubelet's probes reach /healthz
    // and /readyz, and the review routes refuse such connections.
    SSL_CTX_set_verify(&context, SSL_VERIFY_PEER, nullptr);
  }
  return {};
}

namespace {

// The node watch the options ask for: none (off, or auto outside a pod
// without --kubeconfig), or one started; fails on a bad flag or config.
Result<std::unique_ptr<NodeWatcher>> start_node_watch(const ServerOptions& options, const Policy& policy,
                                                      Metrics& metrics) {
  if (options.node_watch != "auto" && options.node_watch != "on" && options.node_watch != "off") {
    return Status::invalid_argument("--node-watch must be auto, on or off, found " + in_quotes(options.node_watch));
  }
  if (options.node_watch == "off") return std::unique_ptr<NodeWatcher>();
  const bool in_pod = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (options.kubeconfig.empty() && !in_pod) {
    if (options.node_watch == "on") {
      return Status::invalid_argument(
          "--node-watch on needs --kubeconfig FILE, or a pod's service account (KUBERNETES_SERVICE_HOST is not set)");
    }
    log_event(spdlog::level::info, "not watching nodes: no --kubeconfig and not in a pod",
              {{"nodes", policy.node_fit.pools.empty() ? "none: nothing is capped" : "the policy's nodeFit.pools"}});
    return std::unique_ptr<NodeWatcher>();
  }
  auto config = options.kubeconfig.empty() ? in_cluster_config() : kubeconfig_config(options.kubeconfig);
  if (!config) return Status::invalid_argument("node watch: " + config.error());
  NodeWatchOptions watch;
  watch.gpu_resources = policy.gpu_resources;
  log_event(spdlog::level::info, "watching nodes", {{"api_server", config.value().description}});
  auto watcher = std::make_unique<NodeWatcher>(std::move(config).value(), std::move(watch), &metrics);
  watcher->start();
  return watcher;
}

}  // namespace

int serve(const ServerOptions& options) {
  const sigset_t shutdown_signals = block_shutdown_signals();
  // Blocks over 256 KiB (large bodies and the buffers reading them) come
  // from mmap and go back to the system when freed. glibc's default raises
  // this threshold as large blocks are freed, after which they stay in the
  // per-thread arenas: four 7 MB reviews kept ~100 MB resident for good.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  // A client that hangs up mid-answer must cost one failed write (EPIPE),
  // not the process.
  std::signal(SIGPIPE, SIG_IGN);

  auto listen = parse_listen_address(options.listen);
  if (!listen) {
    log_event(spdlog::level::err, listen.error());
    return 2;
  }
  auto store = PolicyStore::open(options.policy_path);
  if (!store) {
    log_event(spdlog::level::err, store.error());
    return 2;
  }
  PolicyStore& policy = *store.value();
  log_event(spdlog::level::info, "policy loaded",
            {{"source", policy.current()->source}, {"sha256", policy.current()->sha256}});

  std::string cert = options.tls_cert;
  std::string key = options.tls_key;
  if (cert.empty() != key.empty()) {
    log_event(spdlog::level::err,
              "--tls-cert and --tls-key go together: give both, or neither for a generated certificate");
    return 2;
  }
  if (cert.empty()) {
    auto generated = write_self_signed(options.cert_dir, {"localhost", "127.0.0.1", "::1"});
    if (!generated) {
      log_event(spdlog::level::err, "generating a self-signed certificate: " + generated.error());
      return 2;
    }
    cert = generated.value().cert_file;
    key = generated.value().key_file;
    log_event(spdlog::level::warn,
              "no --tls-cert given: generated a self-signed certificate; clients trust it with its CA",
              {{"ca", generated.value().ca_file}, {"example", "curl --cacert " + generated.value().ca_file}});
  }

  auto opened = CertificateStore::open(cert, key);
  if (!opened) {
    log_event(spdlog::level::err, opened.error());
    return 2;
  }
  CertificateStore& certificates = *opened.value();
  // Served all the same (docs/operations.md): the webhooks fail open, so
  // refusing to start would admit pods unsized just the same, and a
  // running server serves the renewed certificate as soon as it is written.
  if (const std::string problem = certificates.validity_problem(); !problem.empty()) {
    log_event(spdlog::level::err, problem + "; serving it until a valid one is written", {{"file", cert}});
  }

  Metrics metrics(options.version, options.metrics_namespace_cap);
  metrics.set_policy(*policy.current());
  metrics.set_certificate_expiry(certificates.not_after());
  auto watcher = start_node_watch(options, *policy.current(), metrics);
  if (!watcher) {
    log_event(spdlog::level::err, watcher.error());
    return 2;
  }
  const NodeWatcher* nodes = watcher.value().get();
  std::atomic<bool> stopping{false};
  StatusCounters status_counters;
  RecentDecisions recent_decisions(100);
  const WebhookRoutes routes(WebhookState{policy, metrics, status_counters, recent_decisions, stopping,
                                          !options.client_ca.empty(), options.max_body_bytes, nodes});

  TransportOptions transport_options{
      listen.value(),
      options.threads > 0 ? options.threads : default_threads(options.transport),
      options.max_body_bytes,
      std::chrono::seconds(options.read_timeout_seconds),
      std::chrono::seconds(options.keep_alive_timeout_seconds),
  };
  const TlsSetup tls = [&](SSL_CTX& context) { return configure_tls(context, certificates, options.client_ca); };
  auto opened_transport = open_transport(options.transport, transport_options, tls, routes);
  if (!opened_transport) {
    log_event(spdlog::level::err, opened_transport.error(), {{"listen", options.listen}});
    return 2;
  }
  Transport& transport = *opened_transport.value();
  const int port = transport.port();

  std::unique_ptr<httplib::Server> metrics_server;
  std::thread metrics_thread;
  // httplib's stop() does nothing before its listen loop runs: a signal that
  // arrives during start-up waits for the loop (or for it to have failed).
  std::atomic<bool> metrics_listen_returned{false};
  auto stop_when_running = [](httplib::Server& s, const std::atomic<bool>& returned) {
    while (!s.is_running() && !returned) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s.stop();
  };
  if (!options.metrics_listen.empty()) {
    auto address = parse_listen_address(options.metrics_listen);
    if (!address) {
      log_event(spdlog::level::err, "--metrics-listen: " + address.error());
      return 2;
    }
    metrics_server = std::make_unique<httplib::Server>();
    metrics_server->new_task_queue = [] { return new httplib::ThreadPool(2); };
    metrics_server->Get("/status", [&](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "no-store");
      res.set_header("X-Content-Type-Options", "nosniff");
      const auto node_status = nodes ? std::optional(nodes->status()) : std::nullopt;
      res.set_content(
          render_status_page(*policy.current(), status_counters, recent_decisions, node_status, options.version),
          kStatusPageContentType);
    });
    metrics_server->Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      if (nodes) metrics.set_node_sync_age(nodes->seconds_since_sync());
      res.set_content(metrics.render(), "text/plain; version=0.0.4");
    });
    int metrics_port = address.value().port;
    if (metrics_port == 0) {
      metrics_port = metrics_server->bind_to_any_port(address.value().host);
    } else if (!metrics_server->bind_to_port(address.value().host, metrics_port)) {
      metrics_port = -1;
    }
    if (metrics_port < 0) {
      log_event(spdlog::level::err, "cannot listen for metrics", {{"listen", options.metrics_listen}});
      return 2;
    }
    std::printf("metrics on http://%s:%d/metrics\n", address.value().host.c_str(), metrics_port);
    metrics_thread = std::thread([&] {
      metrics_server->listen_after_bind();
      metrics_listen_returned = true;
    });
  }

  // The policy and the certificate are polled (not watched with inotify):
  // ConfigMap and Secret volumes update by swapping a ..data symlink, which
  // inotify on the files themselves does not see.
  std::mutex wake_mutex;
  std::condition_variable wake;
  std::thread files_thread([&] {
    std::unique_lock lock(wake_mutex);
    while (!wake.wait_for(lock, std::chrono::seconds(options.policy_poll_seconds), [&] { return stopping.load(); })) {
      const CertificateReload rotated = certificates.reload_if_changed();
      if (rotated.result != CertificateReload::Result::kUnchanged) {
        metrics.count_certificate_reload(to_string(rotated.result));
      }
      if (rotated.result == CertificateReload::Result::kReloaded) {
        metrics.set_certificate_expiry(certificates.not_after());
        log_event(spdlog::level::info, "TLS certificate reloaded",
                  {{"file", cert}, {"not_after", certificates.not_after()}});
      } else if (!rotated.message.empty()) {
        log_event(spdlog::level::err, "TLS certificate reload rejected: " + rotated.message,
                  {{"file", cert}, {"result", to_string(rotated.result)}});
      }
      const auto reloaded = policy.reload_if_changed();
      const bool changed = !reloaded || reloaded.value();
      if (changed) {
        metrics.count_reload(reloaded.ok());
        status_counters.count_reload(reloaded.ok());
      }
      if (!reloaded) {
        log_event(spdlog::level::err, "policy reload rejected: " + reloaded.error(), {{"source", policy.path()}});
      } else if (reloaded.value()) {
        metrics.set_policy(*policy.current());
        log_event(spdlog::level::info, "policy reloaded",
                  {{"source", policy.path()}, {"sha256", policy.current()->sha256}});
      }
    }
  });

  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&shutdown_signals, &signal);
    log_event(spdlog::level::info, "finishing in-flight requests and stopping",
              {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"}});
    {
      std::lock_guard lock(wake_mutex);
      stopping = true;
    }
    wake.notify_all();
    // Keep answering (with /readyz failing) while Kubernetes takes the pod
    // out of the Service's endpoints, so the API server never meets a
    // closed port on a rollout.
    std::this_thread::sleep_for(std::chrono::seconds(options.shutdown_delay_seconds));
    transport.stop();
    if (metrics_server) stop_when_running(*metrics_server, metrics_listen_returned);
  });

  std::printf("listening on https://%s:%d\n", listen.value().host.c_str(), port);
  std::fflush(stdout);
  log_event(spdlog::level::info, "serving /mutate and /validate",
            {{"address", "https://" + listen.value().host + ":" + std::to_string(port)},
             {"transport", options.transport},
             {"threads", transport_options.threads}});
  transport.run();

  // run returns on stop() from the signal thread, or on its own if the
  // socket fails; make sure the helpers end either way.
  if (!stopping) kill(getpid(), SIGTERM);
  signal_thread.join();
  files_thread.join();
  if (watcher.value()) watcher.value()->stop();
  if (metrics_thread.joinable()) metrics_thread.join();
  log_event(spdlog::level::info, "stopped");
  return 0;
}

}  // namespace gpusizer
