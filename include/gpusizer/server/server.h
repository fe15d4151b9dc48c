// The webhook server: its flags, and serve(), which puts together the
// webhook port (transport.h, webhook_routes.h), the metrics endpoint
// (metrics_endpoint.h), the file poller (file_reloader.h), the signal
// watcher (signal_watcher.h) and the node watch (node_watcher.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "gpusizer/server/certificates.h"
#include "gpusizer/server/transport.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// X25519 and the NIST curves: what Go's crypto/tls (the API server) and
// every other client offers, without OpenSSL's finite-field groups, which
// cost the server up to ~150 ms of CPU per handshake (docs/security.md).
inline constexpr const char* kDefaultTlsGroups = "X25519:P-256:P-384:P-521";

struct ServerOptions {
  std::string listen = "127.0.0.1:8443";  // HOST:PORT; port 0 picks a free port
  std::string tls_cert;                   // PEM chain; empty: generate a self-signed CA and cert
  std::string tls_key;
  // PEM CA certificates. When set, /mutate and /validate need a client
  // certificate signed by one of them (the API server's); /healthz and
  // /readyz do not (the kubelet's probes present none).
  std::string client_ca;
  std::string cert_dir = "/tmp/gpu-sizer";  // where generated certificates are written
  std::string policy_path;                  // empty: the embedded default policy
  std::string metrics_listen;               // HOST:PORT of plain-HTTP /metrics; empty: off
  std::string transport = "asio";           // asio or httplib (transport.h)
  // asio: event-loop threads, 0 = available_cpus(); httplib: connections
  // served at once, 0 = 32.
  int threads = 0;
  std::size_t max_body_bytes = 8u << 20;  // larger bodies get 413
  // Bodies larger than this are read and answered one at a time, off the
  // event loops (asio; large_request_lane.h).
  std::size_t large_body_bytes = 64u << 10;
  // Connections open at once on the webhook port (transport.h).
  std::size_t max_connections = 1024;
  // The TLS key-exchange groups offered, in OpenSSL's list syntax.
  std::string tls_groups = kDefaultTlsGroups;
  int read_timeout_seconds = 10;       // per wait for bytes; the API server's own default timeout
  int keep_alive_timeout_seconds = 5;  // idle connections are closed after it
  // A connection must deliver each whole request within keep-alive + read
  // timeout of its handshake or previous answer, or it is closed.
  int policy_poll_seconds = 2;
  int shutdown_delay_seconds = 0;           // after SIGTERM: /readyz fails, requests still served
  std::size_t metrics_namespace_cap = 100;  // distinct namespace labels before "other"
  std::string version = "dev";              // for gpu_sizer_build_info
  // The node watch (node_watcher.h): "auto" watches when a kubeconfig is
  // given or serve runs in a pod; "on" fails to start without either;
  // "off" never watches (decisions use the policy's nodeFit.pools).
  std::string node_watch = "auto";
  // --dra-watch auto|off: auto watches the DRA objects (claim_watcher.h)
  // whenever the nodes are watched.
  std::string dra_watch = "auto";
  // --pool-watch auto|off: auto watches the autoscalers' pools
  // (pool_watcher.h: Karpenter NodePools and node classes, GKE
  // ComputeClasses, those whose CRDs are served) whenever the nodes are
  // watched.
  std::string pool_watch = "auto";
  // Where history is read (history_refresher.h): Prometheus' URL, empty
  // for none; and how often, in seconds.
  std::string prometheus;
  int history_refresh_seconds = 300;
  std::string kubeconfig;  // empty: the pod's service account
};

// "127.0.0.1:8443", "[::1]:8443", ":8443" (all interfaces). Fails naming the text.
Result<ListenAddress> parse_listen_address(const std::string& text);

// The CPUs this process may run on: its affinity mask, capped by its cgroup
// v2 CPU limit (/sys/fs/cgroup/cpu.max) rounded up. At least 1.
int available_cpus();

// --threads when not given: asio, available_cpus() event loops; httplib,
// 32 connections served at once.
int default_threads(std::string_view transport);

// The CPU limit in a cgroup v2 cpu.max text ("150000 100000" -> 2, rounded
// up); nothing for "max 100000" (no limit) or text that is not a limit.
std::optional<int> cpus_of_cgroup_limit(std::string_view cpu_max);

// TLS as the webhook port serves it: TLS 1.2 or later, forward-secret AEAD
// ciphers only, the key-exchange `groups` (kDefaultTlsGroups), the
// certificate from `certificates` per handshake, and with
// a client_ca file, client certificates requested and verified (not
// required: the kubelet's probes present none). Fails saying which part
// could not be set.
Status configure_tls(SSL_CTX& context, CertificateStore& certificates, const std::string& client_ca,
                     const std::string& groups = kDefaultTlsGroups);

// Serves /mutate, /validate, /healthz and /readyz over HTTPS until SIGTERM or
// SIGINT; then /readyz fails for shutdown_delay_seconds while requests are
// still answered (each answer closing its connection), then it stops
// accepting, answers the requests in flight on every connection
// (Transport::stop) and returns 0. SIGHUP reads the policy and the
// certificate again at once.
// Prints "listening on https://HOST:PORT" to stdout once ready. Returns
// non-zero when it cannot start (bad certificate, policy, or address).
int serve(const ServerOptions& options);

}  // namespace gpusizer
