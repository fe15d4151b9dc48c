#include "gpusizer/server/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>
#include <utility>

#include <malloc.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include "gpusizer/server/certificates.h"
#include "gpusizer/server/claim_watcher.h"
#include "gpusizer/server/file_reloader.h"
#include "gpusizer/server/history_refresher.h"
#include "gpusizer/server/log.h"
#include "gpusizer/server/metrics.h"
#include "gpusizer/server/metrics_endpoint.h"
#include "gpusizer/server/node_watcher.h"
#include "gpusizer/server/openssl_error.h"
#include "gpusizer/server/policy_store.h"
#include "gpusizer/server/pool_watcher.h"
#include "gpusizer/server/self_signed.h"
#include "gpusizer/server/signal_watcher.h"
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

// What serve watches of the cluster.
struct ClusterWatch {
  std::unique_ptr<NodeWatcher> nodes;
  std::unique_ptr<ClaimWatcher> claims;
  std::unique_ptr<PoolWatcher> pools;  // after nodes: it feeds them
};

// The watches the options ask for: none (off, or auto outside a pod
// without --kubeconfig), or the nodes' and (unless --dra-watch off) the
// DRA objects' and (unless --pool-watch off) the autoscaler pools',
// started; fails on a bad flag or config.
Result<ClusterWatch> start_cluster_watch(const ServerOptions& options, const Policy& policy, Metrics& metrics) {
  if (options.node_watch != "auto" && options.node_watch != "on" && options.node_watch != "off") {
    return Status::invalid_argument("--node-watch must be auto, on or off, found " + in_quotes(options.node_watch));
  }
  if (options.dra_watch != "auto" && options.dra_watch != "off") {
    return Status::invalid_argument("--dra-watch must be auto or off, found " + in_quotes(options.dra_watch));
  }
  if (options.pool_watch != "auto" && options.pool_watch != "off") {
    return Status::invalid_argument("--pool-watch must be auto or off, found " + in_quotes(options.pool_watch));
  }
  if (options.node_watch == "off") return ClusterWatch{};
  const bool in_pod = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (options.kubeconfig.empty() && !in_pod) {
    if (options.node_watch == "on") {
      return Status::invalid_argument(
          "--node-watch on needs --kubeconfig FILE, or a pod's service account (KUBERNETES_SERVICE_HOST is not set)");
    }
    log_event(spdlog::level::info, "not watching nodes: no --kubeconfig and not in a pod",
              {{"nodes", policy.rule_settings.get<NodeFitPolicy>().pools.empty() ? "none: nothing is capped"
                                                                                 : "the policy's nodeFit.pools"}});
    return ClusterWatch{};
  }
  auto config = options.kubeconfig.empty() ? in_cluster_config() : kubeconfig_config(options.kubeconfig);
  if (!config) return Status::invalid_argument("node watch: " + config.error());
  ClusterWatch watch;
  if (options.dra_watch == "auto") {
    log_event(spdlog::level::info, "watching DRA objects", {{"api_server", config.value().description}});
    watch.claims = std::make_unique<ClaimWatcher>(config.value(), ListWatchOptions{}, &metrics);
    watch.claims->start();
  }
  NodeWatchOptions node_options;
  node_options.gpu_resources = policy.gpu_resources;
  log_event(spdlog::level::info, "watching nodes", {{"api_server", config.value().description}});
  watch.nodes = std::make_unique<NodeWatcher>(config.value(), std::move(node_options), &metrics);
  watch.nodes->start();
  if (options.pool_watch == "auto") {
    log_event(spdlog::level::info, "looking for autoscaler pools", {{"api_server", config.value().description}});
    watch.pools = std::make_unique<PoolWatcher>(std::move(config).value(), PoolWatchOptions{}, *watch.nodes);
    watch.pools->start();
  }
  return watch;
}

}  // namespace

namespace {

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

// The certificate store serve() answers with. A certificate that is not
// valid now is served all the same (docs/operations.md): the webhooks fail
// open, so refusing to start would admit pods unsized just the same, and a
// running server serves the renewed certificate as soon as it is written.
Result<std::unique_ptr<CertificateStore>> open_certificates(const ServerOptions& options, std::string& cert_file) {
  auto files = certificate_files(options);
  if (!files) return files.status();
  const auto& [cert, key] = files.value();
  cert_file = cert;
  auto opened = CertificateStore::open(cert, key);
  if (!opened) return opened.status();
  if (const std::string problem = opened.value()->validity_problem(); !problem.empty()) {
    log_event(spdlog::level::err, problem + "; serving it until a valid one is written", {{"file", cert}});
  }
  return opened;
}

// --threads, or its default for the transport.
int webhook_threads(const ServerOptions& options) {
  return options.threads > 0 ? options.threads : default_threads(options.transport);
}

// The webhook port: HTTPS on --transport with the options' limits and
// deadlines. Binds before returning, so a busy port fails here.
Result<std::unique_ptr<Transport>> open_webhook_listener(const ServerOptions& options, const ListenAddress& address,
                                                         CertificateStore& certificates, const HttpHandler& routes) {
  TransportOptions transport_options;
  transport_options.address = address;
  transport_options.threads = webhook_threads(options);
  transport_options.max_body_bytes = options.max_body_bytes;
  transport_options.read_timeout = std::chrono::seconds(options.read_timeout_seconds);
  transport_options.keep_alive_timeout = std::chrono::seconds(options.keep_alive_timeout_seconds);
  transport_options.max_connections = options.max_connections;
  transport_options.large_body_bytes = options.large_body_bytes;
  const TlsSetup tls = [&](SSL_CTX& context) {
    return configure_tls(context, certificates, options.client_ca, options.tls_groups);
  };
  return open_transport(options.transport, transport_options, tls, routes);
}

// serve() from its flags to its stop; fails on what keeps it from starting.
Status run_server(const ServerOptions& options, const sigset_t& handled_signals) {
  auto listen = parse_listen_address(options.listen);
  if (!listen) return listen.status();
  std::optional<ListenAddress> metrics_address;
  if (!options.metrics_listen.empty()) {
    auto address = parse_listen_address(options.metrics_listen);
    if (!address) return Status::invalid_argument("--metrics-listen: " + address.error());
    metrics_address = address.value();
  }
  auto store = PolicyStore::open(options.policy_path);
  if (!store) return store.status();
  PolicyStore& policy = *store.value();
  log_event(spdlog::level::info, "policy loaded",
            {{"source", policy.current()->source}, {"sha256", policy.current()->sha256}});
  std::string cert_file;
  auto opened_certificates = open_certificates(options, cert_file);
  if (!opened_certificates) return opened_certificates.status();
  CertificateStore& certificates = *opened_certificates.value();

  Metrics metrics(options.version, options.metrics_namespace_cap);
  metrics.set_policy(*policy.current());
  metrics.set_certificate_expiry(certificates.not_after());
  metrics.set_max_connections(options.max_connections);
  auto watcher = start_cluster_watch(options, *policy.current(), metrics);
  if (!watcher) return watcher.status();
  const NodeWatcher* nodes = watcher.value().nodes.get();
  const ClaimWatcher* claims = watcher.value().claims.get();
  const PoolWatcher* pools = watcher.value().pools.get();
  std::unique_ptr<HistoryRefresher> history;
  if (!options.prometheus.empty()) {
    PrometheusSource source;
    source.url = options.prometheus;
    history = std::make_unique<HistoryRefresher>(source, policy, options.history_refresh_seconds, &metrics);
    log_event(spdlog::level::info, "reading history from Prometheus",
              {{"prometheus", options.prometheus}, {"refresh_seconds", options.history_refresh_seconds}});
    history->start();
  }
  std::atomic<bool> stopping{false};
  StatusCounters status_counters;
  RecentDecisions recent_decisions(100);
  const WebhookRoutes routes(WebhookState{policy, metrics, status_counters, recent_decisions, stopping,
                                          !options.client_ca.empty(), options.max_body_bytes, nodes, claims,
                                          history.get()});
  auto opened_transport = open_webhook_listener(options, listen.value(), certificates, routes);
  if (!opened_transport) return opened_transport.status();
  Transport& transport = *opened_transport.value();

  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  if (metrics_address) {
    auto opened_metrics = MetricsEndpoint::open(
        *metrics_address, MetricsSources{policy, metrics, status_counters, recent_decisions, nodes, claims, pools,
                                         history.get(), transport, options.version});
    if (!opened_metrics) return opened_metrics.status();
    metrics_endpoint = std::move(opened_metrics).value();
    std::printf("metrics on http://%s:%d/metrics\n", metrics_address->host.c_str(), metrics_endpoint->port());
  }

  FileReloader reloader(policy, certificates, cert_file, metrics, status_counters,
                        std::chrono::seconds(options.policy_poll_seconds));
  {
    const SignalWatcher signals(handled_signals, reloader, [&](const char* signal) {
      log_event(spdlog::level::info, "finishing in-flight requests and stopping", {{"signal", signal}});
      stopping = true;
      // Keep answering (with /readyz failing, and each answer closing its
      // connection so clients reconnect elsewhere) while Kubernetes takes
      // the pod out of the Service's endpoints, so the API server never
      // meets a closed port on a rollout.
      transport.drain();
      std::this_thread::sleep_for(std::chrono::seconds(options.shutdown_delay_seconds));
      transport.stop();
      if (metrics_endpoint) metrics_endpoint->stop();
    });
    std::printf("listening on https://%s:%d\n", listen.value().host.c_str(), transport.port());
    std::fflush(stdout);
    log_event(spdlog::level::info, "serving /mutate and /validate",
              {{"address", "https://" + listen.value().host + ":" + std::to_string(transport.port())},
               {"transport", options.transport},
               {"threads", webhook_threads(options)},
               {"max_connections", options.max_connections}});
    // Returns on stop() from the signal watcher, or on its own if the
    // socket fails; leaving the block ends the watcher either way.
    transport.run();
  }
  if (watcher.value().pools) watcher.value().pools->stop();
  if (watcher.value().nodes) watcher.value().nodes->stop();
  if (watcher.value().claims) watcher.value().claims->stop();
  if (history) history->stop();
  metrics_endpoint.reset();
  log_event(spdlog::level::info, "stopped");
  return {};
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
  if (const Status served = run_server(options, handled_signals); !served.ok()) {
    log_event(spdlog::level::err, served.message());
    return 2;
  }
  return 0;
}

}  // namespace gpusizer
