// Where the node watch finds its API server (server/kube_client.h): the
// current context of a kubeconfig file, and a pod's service account; and
// that an ApiClient made from them reaches an API server (fake_api_server.h)
// over TLS checked against the CA, or not checked when insecure.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/server/kube_client.h"
#include "gpusizer/server/node_watcher.h"
#include "gpusizer/util/base64.h"
#include "integration/fake_api_server.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::kube_config_test {
namespace {

// Sets (or unsets, for nullptr) an environment variable until it goes out of scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// A kubeconfig whose current context "kind" uses cluster "kind-cluster" and
// user "kind-user", with the given fields under each.
std::string kubeconfig(const std::string& cluster, const std::string& user, const std::string& current_context = "kind",
                       const std::string& context_cluster = "kind-cluster") {
  return "apiVersion: v1\nkind: Config\n" +
         (current_context.empty() ? std::string() : "current-context: " + current_context + "\n") +
         "clusters:\n- name: kind-cluster\n  cluster:\n" + cluster +
         "contexts:\n- name: kind\n  context:\n    cluster: " + context_cluster +
         "\n    user: kind-user\nusers:\n- name: kind-user\n  user:\n" + user;
}

class NodeWatchKubeconfig : public ::testing::Test {
 protected:
  // Writes the kubeconfig at DIR/kube/config and reads it.
  Result<ApiServerConfig> read(const std::string& text) {
    write(path(), text);
    return kubeconfig_config(path());
  }
  std::string path() const { return dir_.path() + "/kube/config"; }

  TempDir dir_;
};

TEST_F(NodeWatchKubeconfig, TokenAndCertificateAuthorityFile) {
  write(dir_.path() + "/kube/pki/ca.crt", "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  auto config = read(kubeconfig("    server: https://127.0.0.1:6443\n    certificate-authority: pki/ca.crt\n",
                                "    token: abc.def\n"));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config.value().host, "127.0.0.1");
  EXPECT_EQ(config.value().port, 6443);
  EXPECT_EQ(config.value().ca_pem, "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  EXPECT_FALSE(config.value().insecure);
  EXPECT_EQ(config.value().token, "abc.def");
  EXPECT_EQ(config.value().token_file, "");
  EXPECT_EQ(config.value().description, "kubeconfig " + path() + ", context kind (https://127.0.0.1:6443)");
}

TEST_F(NodeWatchKubeconfig, TokenFileIsResolvedAgainstTheKubeconfigFolder) {
  auto config = read(
      kubeconfig("    server: https://api.example.com\n    certificate-authority-data: " + base64_encode("PEM") + "\n",
                 "    tokenFile: tokens/reader\n"));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config.value().host, "api.example.com");
  EXPECT_EQ(config.value().port, 443);
  EXPECT_EQ(config.value().ca_pem, "PEM");
  EXPECT_EQ(config.value().token_file, dir_.path() + "/kube/tokens/reader");
  EXPECT_EQ(config.value().token, "");
}

TEST_F(NodeWatchKubeconfig, ClientCertificateDataReachesTheApiServer) {
  FakeApiServer api(dir_.path() + "/api");
  auto identity = write_self_signed(dir_.path() + "/client", {"gpu-sizer"});
  ASSERT_TRUE(identity) << identity.error();
  const std::string cert = read_file(identity.value().cert_file).value();
  const std::string key = read_file(identity.value().key_file).value();
  auto config = read(kubeconfig(
      "    server: https://127.0.0.1:" + std::to_string(api.port()) +
          "/\n    certificate-authority-data: " + base64_encode(api.config().ca_pem) + "\n",
      "    client-certificate-data: " + base64_encode(cert) + "\n    client-key-data: " + base64_encode(key) + "\n"));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config.value().client_cert_pem, cert);
  EXPECT_EQ(config.value().client_key_pem, key);
  EXPECT_EQ(config.value().ca_pem, api.config().ca_pem);

  ApiClient client(config.value());
  auto list = client.get("/api/v1/nodes", 5);
  ASSERT_TRUE(list) << list.error();
  EXPECT_NE(list.value().find("\"NodeList\""), std::string::npos);
  EXPECT_EQ(api.last(false).authorization, "");  // a certificate, no token
}

// Rancher (and other proxies) serve a cluster's API under a path of their
// own: every request, the list and the watch, goes under it.
TEST_F(NodeWatchKubeconfig, AServerPathPrefixesEveryRequest) {
  const std::string prefix = "/k8s/clusters/c-abc";
  FakeApiServer api(dir_.path() + "/api", prefix);
  api.set_nodes({fake_node("gpu-0", "a2-highgpu-8g", 96, 8)}, "7");
  const std::string server = "https://127.0.0.1:" + std::to_string(api.port()) + prefix;
  auto config = read(kubeconfig(
      "    server: " + server + "/\n    certificate-authority-data: " + base64_encode(api.config().ca_pem) + "\n",
      "    token: t0\n"));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config.value().path_prefix, prefix);
  EXPECT_EQ(config.value().description, "kubeconfig " + path() + ", context kind (" + server + ")");

  ApiClient client(config.value());
  auto list = client.get("/api/v1/nodes?limit=500", 5);
  ASSERT_TRUE(list) << list.error();
  EXPECT_NE(list.value().find("gpu-0"), std::string::npos);
  EXPECT_EQ(api.last(false).path, prefix + "/api/v1/nodes");

  NodeWatchOptions options;
  options.watch_seconds = 5;
  NodeWatcher watcher(config.value(), options, nullptr);
  watcher.start();
  ASSERT_TRUE(eventually([&] { return watcher.status().state == NodeWatchStatus::State::kSynced && api.streaming(); }))
      << watcher.status().last_error;
  EXPECT_EQ(watcher.inventory()->node_count, 1U);
  EXPECT_EQ(api.last(true).path, prefix + "/api/v1/nodes");
  watcher.stop();

  // A failure names the whole path.
  api.fail_lists(403, R"({"kind":"Status","message":"forbidden"})");
  auto refused = client.get("/api/v1/nodes", 5);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "GET " + prefix + "/api/v1/nodes: 403 Forbidden: forbidden");
}

TEST_F(NodeWatchKubeconfig, AServerWithAQueryIsAnError) {
  auto config = read(kubeconfig(
      "    server: https://127.0.0.1:6443/k8s?cluster=a\n    insecure-skip-tls-verify: true\n", "    token: t\n"));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("has a query or fragment"), std::string::npos) << config.error();
}

TEST_F(NodeWatchKubeconfig, InsecureSkipTlsVerifyNeedsNoCa) {
  FakeApiServer api(dir_.path() + "/api");
  auto config = read(kubeconfig(
      "    server: https://127.0.0.1:" + std::to_string(api.port()) + "\n    insecure-skip-tls-verify: true\n",
      "    token: t0\n"));
  ASSERT_TRUE(config) << config.error();
  EXPECT_TRUE(config.value().insecure);
  EXPECT_EQ(config.value().ca_pem, "");
  ApiClient client(config.value());
  auto list = client.get("/api/v1/nodes", 5);
  ASSERT_TRUE(list) << list.error();
  EXPECT_EQ(api.last(false).authorization, "Bearer t0");
}

TEST_F(NodeWatchKubeconfig, AnotherCaFailsTheHandshake) {
  FakeApiServer api(dir_.path() + "/api");
  FakeApiServer other(dir_.path() + "/other");
  ApiServerConfig config = api.config();
  config.ca_pem = other.config().ca_pem;
  ApiClient client(config);
  auto list = client.get("/api/v1/nodes", 5);
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().find("GET /api/v1/nodes from https://127.0.0.1:" + std::to_string(api.port()) + ": "),
            std::string::npos)
      << list.error();
  EXPECT_EQ(api.requests().size(), 0U);
}

TEST_F(NodeWatchKubeconfig, ExecPluginsAreRefused) {
  auto config = read(kubeconfig("    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\n",
                                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("kubeconfig " + path() + ": users[0].user: "), std::string::npos) << config.error();
  EXPECT_NE(config.error().find("credential plugins are not supported"), std::string::npos) << config.error();
}

TEST_F(NodeWatchKubeconfig, NoCurrentContextIsAnError) {
  auto config = read(
      kubeconfig("    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\n", "    token: t\n", ""));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error(), "kubeconfig " + path() + ": has no current-context");
}

TEST_F(NodeWatchKubeconfig, AnUnknownClusterIsAnError) {
  auto config = read(kubeconfig("    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\n",
                                "    token: t\n", "kind", "prod"));
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error(), "kubeconfig " + path() + ": clusters has no entry named \"prod\"");
}

TEST_F(NodeWatchKubeconfig, AServerThatIsNotHttpsIsAnError) {
  auto config =
      read(kubeconfig("    server: http://127.0.0.1:8080\n    insecure-skip-tls-verify: true\n", "    token: t\n"));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("clusters[0].cluster.server: "), std::string::npos) << config.error();
  EXPECT_NE(config.error().find("is not an https:// URL"), std::string::npos) << config.error();
}

TEST_F(NodeWatchKubeconfig, NoCredentialsOrAMissingFileIsAnError) {
  auto none = read(kubeconfig("    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\n", "    {}\n"));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("has no token, tokenFile or client certificate"), std::string::npos) << none.error();
  auto missing = kubeconfig_config(dir_.path() + "/no-such-config");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("no-such-config"), std::string::npos) << missing.error();
}

TEST(NodeWatchInCluster, ReadsTheServiceAccount) {
  TempDir account;
  write(account.path() + "/ca.crt", "CA PEM");
  write(account.path() + "/token", "projected-token\n");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  auto config = in_cluster_config(account.path());
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config.value().host, "10.96.0.1");
  EXPECT_EQ(config.value().port, 6443);
  EXPECT_EQ(config.value().ca_pem, "CA PEM");
  EXPECT_EQ(config.value().token_file, account.path() + "/token");  // read again for every connection
  EXPECT_EQ(config.value().token, "");
  EXPECT_EQ(config.value().description, "service account (https://10.96.0.1:6443)");

  ScopedEnv ipv6("KUBERNETES_SERVICE_HOST", "fd00:10:96::1");
  ScopedEnv no_port("KUBERNETES_SERVICE_PORT", nullptr);
  auto v6 = in_cluster_config(account.path());
  ASSERT_TRUE(v6) << v6.error();
  EXPECT_EQ(v6.value().host, "fd00:10:96::1");
  EXPECT_EQ(v6.value().port, 443);
  EXPECT_EQ(v6.value().description, "service account (https://[fd00:10:96::1]:443)");
}

TEST(NodeWatchInCluster, FailsOutsideAPodOrWithoutTheAccountFiles) {
  TempDir account;
  ScopedEnv no_host("KUBERNETES_SERVICE_HOST", nullptr);
  auto outside = in_cluster_config(account.path());
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().find("KUBERNETES_SERVICE_HOST is not set"), std::string::npos) << outside.error();

  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  auto no_files = in_cluster_config(account.path());
  ASSERT_FALSE(no_files);
  EXPECT_NE(no_files.error().find("ca.crt"), std::string::npos) << no_files.error();
  write(account.path() + "/ca.crt", "CA PEM");
  auto no_token = in_cluster_config(account.path());
  ASSERT_FALSE(no_token);
  EXPECT_NE(no_token.error().find("token"), std::string::npos) << no_token.error();
}

}  // namespace
}  // namespace gpusizer::testing::kube_config_test
