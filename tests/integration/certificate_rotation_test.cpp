// A renewed certificate is served to new connections without a restart and
// without failing a request, as when cert-manager renews a Secret and the
// kubelet swaps the volume's ..data symlink.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "gpusizer/server/self_signed.h"
#include "integration/volume_files.h"
#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing {
namespace {

namespace fs = std::filesystem;

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

}  // namespace
}  // namespace gpusizer::testing
