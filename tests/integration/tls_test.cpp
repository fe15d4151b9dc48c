// TLS as a client meets it: the protocol floor and cipher list, and
// --client-ca (only a client presenting a certificate from the API server's
// CA gets reviews answered; the probes still work without one).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::tls_test {
namespace {

// A CA and a client certificate it signs (extendedKeyUsage clientAuth, as
// the API server's webhook client certificate), made with the openssl CLI.
struct ClientCertificates {
  std::string ca;
  std::string cert;
  std::string key;
};

ClientCertificates make_client_certificates(const std::string& dir, const std::string& name) {
  ClientCertificates files{dir + "/" + name + "-ca.crt", dir + "/" + name + ".crt", dir + "/" + name + ".key"};
  const std::string ca_key = dir + "/" + name + "-ca.key";
  const std::string csr = dir + "/" + name + ".csr";
  const std::string ext = dir + "/" + name + ".ext";
  const std::string quiet = " 2>/dev/null";
  const std::string commands =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=" + name +
      "-ca -keyout " + ca_key + " -out " + files.ca + quiet +
      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kube-apiserver -keyout " +
      files.key + " -out " + csr + quiet + " && printf 'extendedKeyUsage=clientAuth\\n' > " + ext +
      " && openssl x509 -req -in " + csr + " -CA " + files.ca + " -CAkey " + ca_key +
      " -CAcreateserial -days 1 -extfile " + ext + " -out " + files.cert + quiet;
  if (std::system(commands.c_str()) != 0) throw std::runtime_error("openssl failed making " + name + " certificates");
  return files;
}

std::unique_ptr<httplib::SSLClient> client_with(const WebhookProcess& webhook, const ClientCertificates* identity) {
  auto client = identity
                    ? std::make_unique<httplib::SSLClient>("127.0.0.1", webhook.port(), identity->cert, identity->key)
                    : std::make_unique<httplib::SSLClient>("127.0.0.1", webhook.port());
  client->set_ca_cert_path(webhook.ca_file());
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(5);
  client->set_read_timeout(10);
  return client;
}

TEST(ClientCa, OnlyClientsWithACertificateFromTheCaGetReviewsAnswered) {
  TempDir dir;
  const ClientCertificates apiserver = make_client_certificates(dir.path(), "apiserver");
  const ClientCertificates stranger = make_client_certificates(dir.path(), "stranger");
  WebhookProcess webhook({"--client-ca", apiserver.ca});
  const std::string body =
      admission_review(gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}})).dump();

  // The API server's certificate: answered.
  auto trusted = client_with(webhook, &apiserver)->Post("/mutate", body, "application/json");
  ASSERT_TRUE(trusted) << httplib::to_string(trusted.error());
  EXPECT_EQ(trusted->status, 200);
  EXPECT_TRUE(nlohmann::json::parse(trusted->body)["response"].contains("patch")) << trusted->body;

  // No certificate: the probes answer, the review routes refuse and say why.
  auto anonymous = client_with(webhook, nullptr);
  auto health = anonymous->Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  for (const char* path : {"/mutate", "/validate"}) {
    auto refused = anonymous->Post(path, body, "application/json");
    ASSERT_TRUE(refused) << httplib::to_string(refused.error());
    EXPECT_EQ(refused->status, 403) << path;
    EXPECT_NE(refused->body.find("a client certificate signed by --client-ca is required for " + std::string(path)),
              std::string::npos)
        << refused->body;
  }

  // A certificate from another CA: the handshake fails.
  auto rejected = client_with(webhook, &stranger)->Post("/mutate", body, "application/json");
  EXPECT_FALSE(rejected);

  // Still serving the trusted client afterwards.
  auto again = client_with(webhook, &apiserver)->Post("/validate", body, "application/json");
  ASSERT_TRUE(again) << httplib::to_string(again.error());
  EXPECT_EQ(again->status, 200);
}

TEST(ClientCa, WithoutTheFlagNoClientCertificateIsNeeded) {
  WebhookProcess webhook;
  const std::string body =
      admission_review(gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}})).dump();
  auto answer = client_with(webhook, nullptr)->Post("/mutate", body, "application/json");
  ASSERT_TRUE(answer) << httplib::to_string(answer.error());
  EXPECT_EQ(answer->status, 200);
}

// Whether `openssl s_client ARGS` completes a handshake with the webhook.
bool handshake(const WebhookProcess& webhook, const std::string& args) {
  const std::string command = "openssl s_client -connect 127.0.0.1:" + std::to_string(webhook.port()) + " -CAfile " +
                              webhook.ca_file() + " -verify_return_error " + args + " </dev/null >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

TEST(Tls, Tls12IsTheFloorAndOnlyForwardSecretAeadCiphersAreOffered) {
  WebhookProcess webhook;
  EXPECT_TRUE(handshake(webhook, "-tls1_3"));
  EXPECT_TRUE(handshake(webhook, "-tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256"));
  EXPECT_TRUE(handshake(webhook, "-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305"));
  // @SECLEVEL=0 lets this client offer what the server must refuse.
  EXPECT_FALSE(handshake(webhook, "-tls1_1 -cipher 'DEFAULT:@SECLEVEL=0'"));
  EXPECT_FALSE(handshake(webhook, "-tls1 -cipher 'DEFAULT:@SECLEVEL=0'"));
  // CBC without AEAD, and no forward secrecy.
  EXPECT_FALSE(handshake(webhook, "-tls1_2 -cipher 'ECDHE-ECDSA-AES128-SHA256:@SECLEVEL=0'"));
  EXPECT_FALSE(handshake(webhook, "-tls1_2 -cipher 'AES128-GCM-SHA256:@SECLEVEL=0'"));
  EXPECT_TRUE(handshake(webhook, "-tls1_2"));  // still serving
}

TEST(Tls, OnlyX25519AndTheNistCurvesAreOffered) {
  WebhookProcess webhook;
  for (const char* group : {"X25519", "P-256", "P-384", "P-521"}) {
    EXPECT_TRUE(handshake(webhook, std::string("-tls1_3 -groups ") + group)) << group;
  }
  // OpenSSL 3's default list also has the finite-field groups: a client
  // asking for ffdhe8192 made the server spend ~150 ms of CPU on one
  // handshake (issue 25).
  for (const char* group : {"ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192"}) {
    EXPECT_FALSE(handshake(webhook, std::string("-tls1_3 -groups ") + group)) << group;
  }
  EXPECT_TRUE(handshake(webhook, "-tls1_2"));  // still serving
}

TEST(Tls, TlsGroupsIsConfigurableAndANameOpenSslDoesNotKnowStopsTheStart) {
  {
    WebhookProcess webhook({"--tls-groups", "X25519"});
    EXPECT_TRUE(handshake(webhook, "-tls1_3 -groups X25519"));
    EXPECT_FALSE(handshake(webhook, "-tls1_3 -groups P-256"));
  }
  try {
    WebhookProcess refused({"--tls-groups", "X25519:no-such-group"});
    ADD_FAILURE() << "started with a group OpenSSL does not know";
  } catch (const std::runtime_error& e) {
    // The start-up error, from the server's log, names the flag and its value.
    EXPECT_NE(std::string(e.what()).find(R"(--tls-groups \"X25519:no-such-group\")"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpusizer::testing::tls_test
