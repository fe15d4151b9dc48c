#include "gpusizer/server/kube_client.h"

#include <cstdlib>
#include <filesystem>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include "gpusizer/server/openssl_error.h"
#include "gpusizer/util/base64.h"
#include "gpusizer/util/files.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// "https://host:port/path" -> host, port and path prefix; fails on
// anything else.
Status split_server(const std::string& server, ApiServerConfig& config) {
  constexpr std::string_view kScheme = "https://";
  if (!std::string_view(server).starts_with(kScheme)) {
    return Status::invalid_argument("server " + in_quotes(server) + " is not an https:// URL");
  }
  std::string rest = server.substr(kScheme.size());
  if (rest.find_first_of("?#") != std::string::npos) {
    return Status::invalid_argument("server " + in_quotes(server) + " has a query or fragment; give only a path");
  }
  std::string path;
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash);
    rest.resize(slash);
  }
  while (path.ends_with('/')) path.pop_back();
  std::string host = rest;
  std::string port = "443";
  if (rest.starts_with('[')) {  // [IPv6]:port
    const auto close = rest.find(']');
    if (close == std::string::npos) return Status::invalid_argument("server " + in_quotes(server) + " has no ']'");
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  char* end = nullptr;
  const long number = std::strtol(port.c_str(), &end, 10);
  if (host.empty() || port.empty() || *end != '\0' || number < 1 || number > 65535) {
    return Status::invalid_argument("server " + in_quotes(server) + " has no valid host and port");
  }
  config.host = host;
  config.port = static_cast<int>(number);
  config.path_prefix = path;
  return {};
}

// "https://host:port", where a request goes.
std::string origin(const ApiServerConfig& config) {
  const bool ipv6 = config.host.find(':') != std::string::npos;
  return "https://" + (ipv6 ? "[" + config.host + "]" : config.host) + ":" + std::to_string(config.port);
}

// The server as the kubeconfig wrote it, for the description.
std::string server_url(const ApiServerConfig& config) { return origin(config) + config.path_prefix; }

// A kubeconfig entry's inline data (base64) or file (relative to the
// kubeconfig's folder); empty when it has neither.
Result<std::string> data_or_file(const YAML::Node& entry, const std::string& key, const std::string& where,
                                 const std::filesystem::path& folder) {
  if (const YAML::Node data = entry[key + "-data"]; data && data.IsScalar()) {
    auto decoded = base64_decode(data.Scalar());
    if (!decoded) return Status::invalid_argument(where + "." + key + "-data " + decoded.error());
    return decoded;
  }
  if (const YAML::Node file = entry[key]; file && file.IsScalar()) {
    std::filesystem::path path = file.Scalar();
    if (path.is_relative()) path = folder / path;
    return read_file(path.string());
  }
  return std::string();
}

// The entry of list `key` (clusters, users, contexts) named `name`, as
// `{name, <kind>: {...}}`; its index for errors.
Result<std::pair<YAML::Node, std::string>> named(const YAML::Node& root, const std::string& key,
                                                 const std::string& kind, const std::string& name) {
  const YAML::Node list = root[key];
  for (std::size_t i = 0; list && list.IsSequence() && i < list.size(); ++i) {
    const YAML::Node item = list[i];
    if (item.IsMap() && item["name"] && item["name"].Scalar() == name && item[kind] && item[kind].IsMap()) {
      return std::pair{item[kind], key + "[" + std::to_string(i) + "]." + kind};
    }
  }
  return Status::invalid_argument(key + " has no entry named " + in_quotes(name));
}

Result<ApiServerConfig> read_kubeconfig(const YAML::Node& root, const std::filesystem::path& folder) {
  if (!root.IsMap()) return Status::invalid_argument("is not a YAML mapping");
  const YAML::Node current = root["current-context"];
  if (!current || !current.IsScalar() || current.Scalar().empty()) {
    return Status::invalid_argument("has no current-context");
  }
  auto context = named(root, "contexts", "context", current.Scalar());
  if (!context) return context.status();
  const YAML::Node& use = context.value().first;
  if (!use["cluster"] || !use["user"]) {
    return Status::invalid_argument(context.value().second + " needs a cluster and a user");
  }
  auto cluster = named(root, "clusters", "cluster", use["cluster"].Scalar());
  if (!cluster) return cluster.status();
  auto user = named(root, "users", "user", use["user"].Scalar());
  if (!user) return user.status();
  const auto& [cluster_node, cluster_at] = cluster.value();
  const auto& [user_node, user_at] = user.value();

  ApiServerConfig config;
  if (!cluster_node["server"]) return Status::invalid_argument(cluster_at + " has no server");
  if (Status split = split_server(cluster_node["server"].Scalar(), config); !split.ok()) {
    return Status::invalid_argument(cluster_at + ".server: " + split.message());
  }
  config.insecure = cluster_node["insecure-skip-tls-verify"] && cluster_node["insecure-skip-tls-verify"].as<bool>();
  auto ca = data_or_file(cluster_node, "certificate-authority", cluster_at, folder);
  if (!ca) return ca.status();
  config.ca_pem = ca.value();
  if (config.ca_pem.empty() && !config.insecure) {
    return Status::invalid_argument(cluster_at +
                                    " has no certificate-authority(-data) and is not insecure-skip-tls-verify");
  }
  if (user_node["exec"] || user_node["auth-provider"]) {
    return Status::invalid_argument(user_at + ": exec and auth-provider credential plugins are not supported; " +
                                    "use a token, tokenFile or client certificate");
  }
  if (user_node["token"]) config.token = user_node["token"].Scalar();
  if (user_node["tokenFile"]) {
    std::filesystem::path path = user_node["tokenFile"].Scalar();
    config.token_file = (path.is_relative() ? folder / path : path).string();
  }
  auto cert = data_or_file(user_node, "client-certificate", user_at, folder);
  if (!cert) return cert.status();
  auto key = data_or_file(user_node, "client-key", user_at, folder);
  if (!key) return key.status();
  config.client_cert_pem = cert.value();
  config.client_key_pem = key.value();
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return Status::invalid_argument(user_at + " needs both client-certificate and client-key, or neither");
  }
  if (config.token.empty() && config.token_file.empty() && config.client_cert_pem.empty()) {
    return Status::invalid_argument(user_at + " has no token, tokenFile or client certificate");
  }
  config.description = "context " + current.Scalar() + " (" + server_url(config) + ")";
  return config;
}

// PEM text as OpenSSL objects; each fails naming what.
X509_STORE* store_of(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    added += X509_STORE_add_cert(store, cert);
    X509_free(cert);
  }
  ERR_clear_error();  // the read that ends the loop leaves "no start line"
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

// "403 Forbidden: nodes is forbidden: ..." from a status and a body that
// may be a Kubernetes Status object.
std::string http_failure(int status, const std::string& body) {
  std::string message;
  const auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    message = parsed["message"].get<std::string>();
  }
  std::string text = std::to_string(status);
  for (const auto& [code, phrase] :
       {std::pair{401, "Unauthorized"}, std::pair{403, "Forbidden"}, std::pair{404, "Not Found"},
        std::pair{410, "Gone"}, std::pair{429, "Too Many Requests"}, std::pair{500, "Internal Server Error"},
        std::pair{503, "Service Unavailable"}}) {
    if (code == status) text += std::string(" ") + phrase;
  }
  return message.empty() ? text : text + ": " + message;
}

// What went wrong with a request that got no answer, as a person reads it.
std::string transport_failure(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection: return "cannot connect";
    case httplib::Error::ConnectionTimeout: return "connecting timed out";
    case httplib::Error::Read: return "the connection closed or a read timed out";
    case httplib::Error::Write: return "a write failed";
    case httplib::Error::SSLConnection: return "the TLS handshake failed";
    case httplib::Error::SSLLoadingCerts: return "the CA certificates could not be loaded";
    case httplib::Error::SSLServerVerification: return "the API server's certificate did not verify against the CA";
    default: return "request failed (" + httplib::to_string(error) + ")";
  }
}

}  // namespace

Result<ApiServerConfig> in_cluster_config(const std::string& account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host) {
    return Status::invalid_argument("not in a pod: KUBERNETES_SERVICE_HOST is not set (use --kubeconfig FILE)");
  }
  ApiServerConfig config;
  const std::string host_text = host;
  const bool ipv6 = host_text.find(':') != std::string::npos;
  const std::string server =
      "https://" + (ipv6 ? "[" + host_text + "]" : host_text) + ":" + (port && *port ? port : "443");
  if (Status split = split_server(server, config); !split.ok()) return split;
  auto ca = read_file(account_dir + "/ca.crt");
  if (!ca) return ca.status();
  config.ca_pem = ca.value();
  config.token_file = account_dir + "/token";
  if (auto token = read_file(config.token_file); !token) return token.status();
  config.description = "service account (" + server_url(config) + ")";
  return config;
}

Result<ApiServerConfig> kubeconfig_config(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.status();
  try {
    auto config = read_kubeconfig(YAML::Load(text.value()), std::filesystem::path(path).parent_path());
    if (!config) return Status::invalid_argument("kubeconfig " + path + ": " + config.error());
    config.value().description = "kubeconfig " + path + ", " + config.value().description;
    return config;
  } catch (const YAML::Exception& error) {
    return Status::invalid_argument("kubeconfig " + path + ": " + error.what());
  }
}

ApiClient::ApiClient(ApiServerConfig config) : config_(std::move(config)) {}
ApiClient::~ApiClient() = default;

Result<std::shared_ptr<httplib::SSLClient>> ApiClient::connect(int read_timeout_seconds) {
  std::shared_ptr<httplib::SSLClient> client;
  if (!config_.client_cert_pem.empty()) {
    std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
        BIO_new_mem_buf(config_.client_cert_pem.data(), static_cast<int>(config_.client_cert_pem.size())), BIO_free);
    std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
        BIO_new_mem_buf(config_.client_key_pem.data(), static_cast<int>(config_.client_key_pem.size())), BIO_free);
    std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr),
                                                     X509_free);
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
        PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
    if (!cert || !key) return Status::invalid_argument(openssl_error("the client certificate or key"));
    client = std::make_shared<httplib::SSLClient>(config_.host, config_.port, cert.get(), key.get());
  } else {
    client = std::make_shared<httplib::SSLClient>(config_.host, config_.port);
  }
  if (!client->is_valid()) return Status::io_error(openssl_error("TLS client setup"));
  if (config_.insecure) {
    client->enable_server_certificate_verification(false);
  } else {
    X509_STORE* store = store_of(config_.ca_pem);
    if (!store) return Status::invalid_argument("the API server's CA holds no PEM certificate");
    client->set_ca_cert_store(store);  // the client owns it now
    client->enable_server_certificate_verification(true);
  }
  std::string token = config_.token;
  if (!config_.token_file.empty()) {
    auto read = read_file(config_.token_file);
    if (!read) return read.status();
    token = std::string(trim(read.value()));
  }
  if (!token.empty()) client->set_bearer_token_auth(token);
  client->set_connection_timeout(5);
  client->set_read_timeout(read_timeout_seconds);
  client->set_keep_alive(false);
  std::lock_guard lock(mutex_);
  if (stopped_) return Status::io_error("stopped");
  active_ = client;
  return client;
}

Result<std::string> ApiClient::get(const std::string& target, int timeout_seconds) {
  auto client = connect(timeout_seconds);
  if (!client) return client.status();
  const std::string path = config_.path_prefix + target;
  if (before_send_) before_send_();
  auto response = client.value()->Get(path);
  if (!response) {
    return Status::io_error("GET " + path + " from " + origin(config_) + ": " + transport_failure(response.error()));
  }
  if (response->status == 404) {  // what discovery asks: is the API served
    return Status::failure(ProblemCode::kUnknownName, "",
                           "GET " + path + ": " + http_failure(response->status, response->body));
  }
  if (response->status != 200)
    return Status::io_error("GET " + path + ": " + http_failure(response->status, response->body));
  return std::move(response->body);
}

Status ApiClient::stream_lines(const std::string& target, int read_timeout_seconds,
                               const std::function<void()>& on_open,
                               const std::function<bool(std::string_view line)>& on_line) {
  auto client = connect(read_timeout_seconds);
  if (!client) return client.status();
  const std::string path = config_.path_prefix + target;
  int status = 0;
  std::string pending;  // a line not yet ended; for a failure, its body
  if (before_send_) before_send_();
  auto response = client.value()->Get(
      path, httplib::Headers{},
      [&](const httplib::Response& head) {
        status = head.status;
        if (status == 200 && on_open) on_open();
        return true;
      },
      [&](const char* data, std::size_t length) {
        pending.append(data, length);
        if (status != 200) return pending.size() < 65536;  // keep the error body, boundedly
        std::size_t start = 0;
        for (std::size_t end = pending.find('\n'); end != std::string::npos; end = pending.find('\n', start)) {
          const std::string_view line(pending.data() + start, end - start);
          start = end + 1;
          if (!line.empty() && !on_line(line)) return false;
        }
        pending.erase(0, start);
        return true;
      });
  if (status != 0 && status != 200) return Status::io_error("GET " + path + ": " + http_failure(status, pending));
  if (!response && response.error() != httplib::Error::Canceled) {
    return Status::io_error("GET " + path + " from " + origin(config_) + ": " + transport_failure(response.error()));
  }
  return {};
}

void ApiClient::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  if (active_) active_->stop();
}

}  // namespace gpusizer
