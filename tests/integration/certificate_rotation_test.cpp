// A renewed certificate is served to new connections without a restart and
// without failing a request, as when cert-manager renews a Secret and the
// kubelet swaps the volume's ..data symlink.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gpusizer/server/self_signed.h"
#include "integration/prometheus_support.h"
#include "integration/raw_client.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::certificate_rotation_test {
namespace {

namespace fs = std::filesystem;

// A certificate's serial number in hex; empty for none.
std::string serial_of(X509* cert) {
  if (!cert) return "";
  BIGNUM* number = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  char* hex = BN_bn2hex(number);
  std::string serial = hex;
  OPENSSL_free(hex);
  BN_free(number);
  return serial;
}

TEST(CertificateRotation, NewHandshakesGetTheRenewedCertificateAndNoRequestFails) {
  TempDir dir;
  const fs::path root = dir.path();
  auto first = write_self_signed((root / "gen-1").string(), {"127.0.0.1", "localhost"});
  auto second = write_self_signed((root / "gen-2").string(), {"127.0.0.1", "localhost"});
  ASSERT_TRUE(first && second);
  const fs::path secret = root / "secret";
  publish_secret(secret, first.value(), "..v1");
  const std::string both_cas = (root / "both-ca.crt").string();
  {
    std::ofstream bundle(both_cas);
    bundle << std::ifstream(first.value().ca_file).rdbuf() << std::ifstream(second.value().ca_file).rdbuf();
  }
  WebhookProcess webhook(
      {"--tls-cert", (secret / "tls.crt").string(), "--tls-key", (secret / "tls.key").string(), "--policy-poll", "1"});
  ASSERT_TRUE(answers_with_ca(webhook.port(), first.value().ca_file));

  // Load during the rotation: keep-alive clients (connections opened before
  // the swap go on) and clients that handshake for every request.
  const std::string body =
      admission_review(gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}})).dump();
  std::atomic<bool> done{false};
  std::atomic<int> sent{0}, failed{0};
  std::vector<std::thread> load;
  for (int i = 0; i < 4; ++i) {
    load.emplace_back([&, keep_alive = i % 2 == 0] {
      httplib::SSLClient client("127.0.0.1", webhook.port());
      client.set_ca_cert_path(both_cas);
      client.enable_server_certificate_verification(true);
      client.set_keep_alive(keep_alive);
      while (!done) {
        auto result = client.Post("/mutate", body, "application/json");
        ++sent;
        if (!result || result->status != 200) ++failed;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  publish_secret(secret, second.value(), "..v2");
  bool rotated = false;
  for (int i = 0; i < 100 && !rotated; ++i) {
    rotated = answers_with_ca(webhook.port(), second.value().ca_file);
    if (!rotated) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  done = true;
  for (auto& thread : load) thread.join();

  EXPECT_TRUE(rotated) << "new handshakes never saw the renewed certificate";
  EXPECT_FALSE(answers_with_ca(webhook.port(), first.value().ca_file)) << "the old certificate is still served";
  EXPECT_GT(sent.load(), 20);
  EXPECT_EQ(failed.load(), 0) << "of " << sent.load() << " requests";
  EXPECT_NE(webhook.stderr_text().find("TLS certificate reloaded"), std::string::npos);
}

TEST(CertificateRotation, AMismatchedPairKeepsTheServedCertificate) {
  TempDir dir;
  const fs::path root = dir.path();
  auto first = write_self_signed((root / "gen-1").string(), {"127.0.0.1"});
  auto second = write_self_signed((root / "gen-2").string(), {"127.0.0.1"});
  ASSERT_TRUE(first && second);
  const fs::path secret = root / "secret";
  publish_secret(secret, first.value(), "..v1");
  WebhookProcess webhook(
      {"--tls-cert", (secret / "tls.crt").string(), "--tls-key", (secret / "tls.key").string(), "--policy-poll", "1"});
  // A half-updated volume: the new certificate with the old key.
  fs::create_directories(secret / "..v2");
  fs::copy_file(second.value().cert_file, secret / "..v2" / "tls.crt");
  fs::copy_file(first.value().key_file, secret / "..v2" / "tls.key");
  fs::create_directory_symlink("..v2", secret / "..data_tmp");
  fs::rename(secret / "..data_tmp", secret / "..data");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_TRUE(answers_with_ca(webhook.port(), first.value().ca_file));
  EXPECT_NE(webhook.stderr_text().find("does not match"), std::string::npos) << webhook.stderr_text();
}

// The serial number of the certificate a new handshake is served, in hex,
// read without verifying it (an expired one must be seen too).
std::string served_serial(int port) {
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  BIO* connection = BIO_new_ssl_connect(context);
  BIO_set_conn_hostname(connection, ("127.0.0.1:" + std::to_string(port)).c_str());
  std::string serial;
  SSL* ssl = nullptr;
  BIO_get_ssl(connection, &ssl);
  if (BIO_do_connect(connection) == 1) {
    X509* served = SSL_get1_peer_certificate(ssl);
    serial = serial_of(served);
    X509_free(served);
  }
  BIO_free_all(connection);
  SSL_CTX_free(context);
  return serial;
}

// The serial number of the certificate in a PEM file, in hex.
std::string file_serial(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  X509* cert = file ? PEM_read_X509(file, nullptr, nullptr, nullptr) : nullptr;
  if (file) std::fclose(file);
  std::string serial = serial_of(cert);
  X509_free(cert);
  return serial;
}

// A webhook serving `served` from a Secret volume, polling it every second,
// with its metrics on a port of its own.
struct RotatingWebhook {
  RotatingWebhook(const fs::path& secret, const GeneratedCertificates& served)
      : metrics_port(prometheus_test::free_port()), webhook(start(secret, served, metrics_port)) {}

  static std::vector<std::string> start(const fs::path& secret, const GeneratedCertificates& served, int port) {
    publish_secret(secret, served, "..v1");
    return {"--tls-cert",       (secret / "tls.crt").string(),
            "--tls-key",        (secret / "tls.key").string(),
            "--policy-poll",    "1",
            "--metrics-listen", "127.0.0.1:" + std::to_string(port)};
  }
  std::string metrics() const {
    auto result = httplib::Client("127.0.0.1", metrics_port).Get("/metrics");
    return result ? result->body : "";
  }

  int metrics_port;
  WebhookProcess webhook;
};

// Rotates to a certificate valid from `not_before` to `not_after` (from
// now): it is refused with `why` in the log and counted as `result`, and
// the served certificate stays.
void expect_rotation_refused(std::chrono::seconds not_before, std::chrono::seconds not_after, const std::string& why,
                             const std::string& result) {
  TempDir dir;
  const fs::path root = dir.path();
  auto first = write_self_signed((root / "gen-1").string(), {"127.0.0.1"});
  auto refused = write_self_signed((root / "gen-2").string(), {"127.0.0.1"}, {not_before, not_after});
  ASSERT_TRUE(first && refused);
  const fs::path secret = root / "secret";
  RotatingWebhook server(secret, first.value());
  const std::string first_serial = file_serial(first.value().cert_file);
  ASSERT_EQ(served_serial(server.webhook.port()), first_serial);

  publish_secret(secret, refused.value(), "..v2");
  ASSERT_TRUE(log_shows(server.webhook, "TLS certificate reload rejected")) << server.webhook.stderr_text();
  const std::string line = log_line_with(server.webhook, "TLS certificate reload rejected");
  EXPECT_TRUE(contains(line, "TLS certificate " + (secret / "tls.crt").string() + why + " (notBefore 20")) << line;
  EXPECT_TRUE(contains(line, ", notAfter 20")) << line;
  EXPECT_TRUE(contains(line, "\"result\":\"" + result + "\"")) << line;
  // Polled twice more: still the first certificate, refused once.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(served_serial(server.webhook.port()), first_serial);
  EXPECT_NE(served_serial(server.webhook.port()), file_serial(refused.value().cert_file));
  EXPECT_TRUE(answers_with_ca(server.webhook.port(), first.value().ca_file));
  const std::string metrics = server.metrics();
  EXPECT_TRUE(contains(metrics, "gpu_sizer_tls_certificate_reloads_total{result=\"" + result + "\"} 1\n")) << metrics;
  EXPECT_TRUE(contains(metrics, "gpu_sizer_tls_certificate_reloads_total{result=\"reloaded\"} 0\n")) << metrics;
}

TEST(CertificateRotation, AnExpiredCertificateIsRefusedAndTheServedOneKept) {
  expect_rotation_refused(std::chrono::hours(-48), std::chrono::hours(-24), " has expired", "expired");
}

TEST(CertificateRotation, ANotYetValidCertificateIsRefusedAndTheServedOneKept) {
  expect_rotation_refused(std::chrono::hours(24), std::chrono::hours(48), " is not valid yet", "not_yet_valid");
}

TEST(CertificateRotation, AnExpiredCertificateAtStartIsServedAndLogged) {
  // The webhooks fail open: a server that refused to start would admit
  // pods unsized all the same, and could not pick up the renewal.
  TempDir dir;
  auto expired =
      write_self_signed((dir.path() + "/gen-1"), {"127.0.0.1"}, {std::chrono::hours(-48), std::chrono::hours(-24)});
  ASSERT_TRUE(expired);
  WebhookProcess webhook({"--tls-cert", expired.value().cert_file, "--tls-key", expired.value().key_file});
  EXPECT_EQ(served_serial(webhook.port()), file_serial(expired.value().cert_file));
  const std::string line = log_line_with(webhook, " has expired");
  EXPECT_TRUE(contains(line, "\"level\":\"error\"")) << webhook.stderr_text();
  EXPECT_TRUE(contains(line, "; serving it until a valid one is written")) << line;
}

}  // namespace
}  // namespace gpusizer::testing::certificate_rotation_test
