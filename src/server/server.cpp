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
#include <utility>

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
#include "gpusizer/server/metrics_routes.h"
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

// Blocks SIGTERM, SIGINT (stop) and SIGHUP (reload the files) in this
// thread and every thread it starts, so one thread receives them with
// sigwait instead of a handler that could run anywhere. SIGHUP's default
// action would end the process, losing the requests in flight.
sigset_t block_handled_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

}  // namespace

Status configure_tls(SSL_CTX& context, CertificateStore& certificates, const std::string& client_ca,
                     const std::string& groups) {
  SSL_CTX_set_min_proto_version(&context, TLS1_2_VERSION);
  SSL_CTX_set_options(&context, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // An idle connection gives its TLS record buffers back (34 KiB).
  SSL_CTX_set_mode(&context, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_cipher_list(&context, kTls12Ciphers) != 1) return Status::io_error(openssl_error("cipher list"));
  // OpenSSL 3 also offers the finite-field groups (ffdhe2048-8192) in TLS
  // 1.3: a client that asks for ffdhe8192 costs the server ~150 ms of CPU
  // per handshake, against well under 1 ms for X25519, while doing no work
  // itself (docs/security.md).
  if (SSL_CTX_set1_groups_list(&context, groups.c_str()) != 1) {
    return Status::invalid_argument(openssl_error(
        "--tls-groups " + in_quotes(groups) + ": not a list of groups OpenSSL knows, such as " + kDefaultTlsGroups));
  }
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
              {{"nodes", policy.rule_settings.get<NodeFitPolicy>().pools.empty() ? "none: nothing is capped"
                                                                                 : "the policy's nodeFit.pools"}});
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

namespace {

// Reads the policy and the certificate again when their files change:
// every --policy-poll seconds, and at once when asked (SIGHUP). They are
// polled, not watched with inotify: ConfigMap and Secret volumes update by
// swapping a ..data symlink, which inotify on the files themselves does not
// see.
class FileReloader {
 public:
  FileReloader(PolicyStore& policy, CertificateStore& certificates, std::string cert_file, Metrics& metrics,
               StatusCounters& status_counters, std::chrono::seconds poll)
      : policy_(policy),
        certificates_(certificates),
        cert_file_(std::move(cert_file)),
        metrics_(metrics),
        status_counters_(status_counters),
        poll_(poll),
        thread_([this] { run(); }) {}
  ~FileReloader() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  FileReloader(const FileReloader&) = delete;
  FileReloader& operator=(const FileReloader&) = delete;

  void reload_now() {
    {
      std::lock_guard lock(mutex_);
      reload_now_ = true;
    }
    wake_.notify_all();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait_for(lock, poll_, [this] { return stopping_ || reload_now_; });
      if (stopping_) return;
      const bool asked = std::exchange(reload_now_, false);
      lock.unlock();
      const bool certificate_changed = reload_certificate();  // both reload, whatever the first returns
      const bool changed = reload_policy() || certificate_changed;
      if (asked && !changed) {
        log_event(
            spdlog::level::info, "SIGHUP: the policy and the certificate are unchanged",
            {{"policy", policy_.path().empty() ? "embedded default" : policy_.path()}, {"certificate", cert_file_}});
      }
      lock.lock();
    }
  }

  // Each says whether a file had changed (reloaded, or rejected with the
  // old one kept).
  bool reload_certificate() {
    const CertificateReload rotated = certificates_.reload_if_changed();
    if (rotated.result == CertificateReload::Result::kUnchanged) return false;
    metrics_.count_certificate_reload(to_string(rotated.result));
    if (rotated.result == CertificateReload::Result::kReloaded) {
      metrics_.set_certificate_expiry(certificates_.not_after());
      log_event(spdlog::level::info, "TLS certificate reloaded",
                {{"file", cert_file_}, {"not_after", certificates_.not_after()}});
    } else if (!rotated.message.empty()) {
      log_event(spdlog::level::err, "TLS certificate reload rejected: " + rotated.message,
                {{"file", cert_file_}, {"result", to_string(rotated.result)}});
    }
    return true;
  }

  bool reload_policy() {
    const auto reloaded = policy_.reload_if_changed();
    const bool changed = !reloaded || reloaded.value();
    if (changed) {
      metrics_.count_reload(reloaded.ok());
      status_counters_.count_reload(reloaded.ok());
    }
    if (!reloaded) {
      log_event(spdlog::level::err, "policy reload rejected: " + reloaded.error(), {{"source", policy_.path()}});
    } else if (reloaded.value()) {
      metrics_.set_policy(*policy_.current());
      log_event(spdlog::level::info, "policy reloaded",
                {{"source", policy_.path()}, {"sha256", policy_.current()->sha256}});
    }
    return changed;
  }

  PolicyStore& policy_;
  CertificateStore& certificates_;
  const std::string cert_file_;
  Metrics& metrics_;
  StatusCounters& status_counters_;
  const std::chrono::seconds poll_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool reload_now_ = false;
  std::thread thread_;  // last: it starts in the constructor and reads every member above
};

// The certificate and key to serve: the ones given, or a self-signed pair
// generated in --cert-dir. Fails saying why.
Result<std::pair<std::string, std::string>> certificate_files(const ServerOptions& options) {
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return Status::invalid_argument(
        "--tls-cert and --tls-key go together: give both, or neither for a generated certificate");
  }
  if (!options.tls_cert.empty()) return std::pair(options.tls_cert, options.tls_key);
  auto generated = write_self_signed(options.cert_dir, {"localhost", "127.0.0.1", "::1"});
  if (!generated) return Status::io_error("generating a self-signed certificate: " + generated.error());
  log_event(spdlog::level::warn,
            "no --tls-cert given: generated a self-signed certificate; clients trust it with its CA",
            {{"ca", generated.value().ca_file}, {"example", "curl --cacert " + generated.value().ca_file}});
  return std::pair(generated.value().cert_file, generated.value().key_file);
}

// The metrics port's transport: one event loop, short deadlines (a scrape
// is one small GET), a handful of connections. Its deadlines bound how long
// it can hold up shutdown: keep-alive + read timeout, 5 s.
TransportOptions metrics_transport_options(const ListenAddress& address) {
  TransportOptions options;
  options.address = address;
  options.threads = 1;
  options.max_body_bytes = 0;
  options.read_timeout = std::chrono::seconds(3);
  options.keep_alive_timeout = std::chrono::seconds(2);
  options.max_connections = 64;
  return options;
}

// Waits for SIGTERM or SIGINT, reloading the files on each SIGHUP
// meanwhile; returns the name of the signal that stops the server.
const char* wait_for_stop_signal(const sigset_t& signals, FileReloader& reloader) {
  while (true) {
    int signal = 0;
    sigwait(&signals, &signal);
    if (signal != SIGHUP) return signal == SIGTERM ? "SIGTERM" : "SIGINT";
    log_event(spdlog::level::info, "SIGHUP: reading the policy and the certificate again");
    reloader.reload_now();
  }
}

}  // namespace

int serve(const ServerOptions& options) {
  const sigset_t handled_signals = block_handled_signals();
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
  std::optional<ListenAddress> metrics_address;
  if (!options.metrics_listen.empty()) {
    auto address = parse_listen_address(options.metrics_listen);
    if (!address) {
      log_event(spdlog::level::err, "--metrics-listen: " + address.error());
      return 2;
    }
    metrics_address = address.value();
  }
  auto store = PolicyStore::open(options.policy_path);
  if (!store) {
    log_event(spdlog::level::err, store.error());
    return 2;
  }
  PolicyStore& policy = *store.value();
  log_event(spdlog::level::info, "policy loaded",
            {{"source", policy.current()->source}, {"sha256", policy.current()->sha256}});

  auto files = certificate_files(options);
  if (!files) {
    log_event(spdlog::level::err, files.error());
    return 2;
  }
  const auto& [cert, key] = files.value();
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
  metrics.set_max_connections(options.max_connections);
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

  TransportOptions transport_options;
  transport_options.address = listen.value();
  transport_options.threads = options.threads > 0 ? options.threads : default_threads(options.transport);
  transport_options.max_body_bytes = options.max_body_bytes;
  transport_options.read_timeout = std::chrono::seconds(options.read_timeout_seconds);
  transport_options.keep_alive_timeout = std::chrono::seconds(options.keep_alive_timeout_seconds);
  transport_options.max_connections = options.max_connections;
  transport_options.large_body_bytes = options.large_body_bytes;
  const TlsSetup tls = [&](SSL_CTX& context) {
    return configure_tls(context, certificates, options.client_ca, options.tls_groups);
  };
  auto opened_transport = open_transport(options.transport, transport_options, tls, routes);
  if (!opened_transport) {
    log_event(spdlog::level::err, opened_transport.error(), {{"listen", options.listen}});
    return 2;
  }
  Transport& transport = *opened_transport.value();
  const int port = transport.port();

  std::optional<MetricsRoutes> metrics_routes;
  std::unique_ptr<Transport> metrics_transport;
  std::thread metrics_thread;
  if (metrics_address) {
    metrics_routes.emplace(
        MetricsSources{policy, metrics, status_counters, recent_decisions, nodes, transport, options.version});
    auto opened_metrics = open_plain_http_transport(metrics_transport_options(*metrics_address), *metrics_routes);
    if (!opened_metrics) {
      log_event(spdlog::level::err, "cannot listen for metrics: " + opened_metrics.error(),
                {{"listen", options.metrics_listen}});
      return 2;
    }
    metrics_transport = std::move(opened_metrics).value();
    std::printf("metrics on http://%s:%d/metrics\n", metrics_address->host.c_str(), metrics_transport->port());
    metrics_thread = std::thread([&] { metrics_transport->run(); });
  }

  FileReloader reloader(policy, certificates, cert, metrics, status_counters,
                        std::chrono::seconds(options.policy_poll_seconds));
  std::thread signal_thread([&] {
    const char* signal = wait_for_stop_signal(handled_signals, reloader);
    log_event(spdlog::level::info, "finishing in-flight requests and stopping", {{"signal", signal}});
    stopping = true;
    // Keep answering (with /readyz failing, and each answer closing its
    // connection so clients reconnect elsewhere) while Kubernetes takes the
    // pod out of the Service's endpoints, so the API server never meets a
    // closed port on a rollout.
    transport.drain();
    std::this_thread::sleep_for(std::chrono::seconds(options.shutdown_delay_seconds));
    transport.stop();
    if (metrics_transport) metrics_transport->stop();
  });

  std::printf("listening on https://%s:%d\n", listen.value().host.c_str(), port);
  std::fflush(stdout);
  log_event(spdlog::level::info, "serving /mutate and /validate",
            {{"address", "https://" + listen.value().host + ":" + std::to_string(port)},
             {"transport", options.transport},
             {"threads", transport_options.threads},
             {"max_connections", options.max_connections}});
  transport.run();

  // run returns on stop() from the signal thread, or on its own if the
  // socket fails; make sure the helpers end either way.
  if (!stopping) kill(getpid(), SIGTERM);
  signal_thread.join();
  if (watcher.value()) watcher.value()->stop();
  if (metrics_thread.joinable()) metrics_thread.join();
  log_event(spdlog::level::info, "stopped");
  return 0;
}

}  // namespace gpusizer
