// How gpu-sizer reaches the Kubernetes API server, and the GETs it makes
// there (the node watch, node_watcher.h). In a pod it uses its service
// account (KUBERNETES_SERVICE_HOST and _PORT, the token and CA the kubelet
// mounts); elsewhere a kubeconfig file (`serve --kubeconfig FILE`).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "gpusizer/util/result.h"

namespace httplib {
class SSLClient;
}

namespace gpusizer {

// Where the kubelet mounts a pod's service account.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct ApiServerConfig {
  std::string host;
  int port = 443;
  // The server URL's path without its last '/', which every request's path
  // starts with: "/k8s/clusters/c-abc" for a cluster behind Rancher's
  // proxy; empty for an API server of its own.
  std::string path_prefix;
  std::string ca_pem;     // the CAs the API server's certificate must chain to
  bool insecure = false;  // kubeconfig insecure-skip-tls-verify: no check at all
  std::string token;      // a bearer token given once
  // A bearer token read again for every connection: projected service
  // account tokens expire (about an hour) and the kubelet rewrites the file.
  std::string token_file;
  std::string client_cert_pem;  // client certificate authentication
  std::string client_key_pem;
  // Where it came from, for logs and /status: "service account
  // (https://10.96.0.1:443)", "kubeconfig /root/.kube/config, context kind
  // (https://127.0.0.1:6443)".
  std::string description;
};

// The service account of the pod gpu-sizer runs in. Fails when it does not
// run in a pod (no KUBERNETES_SERVICE_HOST) or the files are unreadable,
// saying which.
Result<ApiServerConfig> in_cluster_config(const std::string& account_dir = kServiceAccountDir);

// The current context of a kubeconfig file: its cluster's server and CA
// (certificate-authority or -data, or insecure-skip-tls-verify) and its
// user's token, tokenFile or client certificate and key (-data or files;
// relative paths are the file's folder's). Fails naming the field, e.g.
// `users[0].user: exec and auth-provider credential plugins are not
// supported; use a token, tokenFile or client certificate`.
Result<ApiServerConfig> kubeconfig_config(const std::string& path);

// GETs against one API server, one connection each. A target is the API
// path and query ("/api/v1/nodes?limit=500"); the config's path_prefix goes
// before it. Thread-compatible, except stop(), which any thread may call to
// end the request in flight.
class ApiClient {
 public:
  explicit ApiClient(ApiServerConfig config);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  const ApiServerConfig& config() const { return config_; }

  // One response, whole. A status other than 200 fails with kIoError:
  // "GET /api/v1/nodes: 403 Forbidden: nodes is forbidden: User ...", the
  // API server's own message, so RBAC mistakes read as such; a 404 (an
  // API the server does not serve) fails with kUnknownName.
  Result<std::string> get(const std::string& target, int timeout_seconds);

  // A streamed response, one line at a time (a watch sends one JSON event
  // per line) until the server ends it, on_line returns false, or stop().
  // on_open (may be empty) runs once when the server answers 200, before
  // any line: an idle watch sends nothing else for minutes. Waits at most
  // read_timeout_seconds for each chunk. Fails as get() does.
  Status stream_lines(const std::string& target, int read_timeout_seconds, const std::function<void()>& on_open,
                      const std::function<bool(std::string_view line)>& on_line);

  // Ends the request in flight, from another thread; later calls fail at
  // once. A stop() that lands after a request's connection is set up and
  // before it is sent is missed by that request (the TLS client has no
  // socket to shut yet): call it again until the caller's thread is done.
  void stop();

  // Runs on the requesting thread in that window, after the connection is
  // set up and before the request is sent. For tests, to land a stop() there.
  void set_before_send(std::function<void()> hook) { before_send_ = std::move(hook); }

 private:
  // A connection with the CA, the client certificate and the token read now.
  Result<std::shared_ptr<httplib::SSLClient>> connect(int read_timeout_seconds);

  ApiServerConfig config_;
  std::function<void()> before_send_;
  std::mutex mutex_;
  std::shared_ptr<httplib::SSLClient> active_;  // the request in flight
  bool stopped_ = false;
};

}  // namespace gpusizer
