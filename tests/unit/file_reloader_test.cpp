// The file poller serve() runs (file_reloader.h), on its own: a changed
// policy is read when asked and on its poll, a bad one is counted as
// rejected and replaces nothing.
#include "gpusizer/server/file_reloader.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "gpusizer/server/self_signed.h"

namespace gpusizer::file_reloader_test {
namespace {

using namespace std::chrono_literals;

struct Served {
  std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("gpu-sizer-file-reloader-" + std::to_string(::getpid()));
  std::filesystem::path policy_file = directory / "policy.yaml";
  std::unique_ptr<PolicyStore> policy;
  std::unique_ptr<CertificateStore> certificates;
  std::string cert_file;
  Metrics metrics{"test", 10};
  StatusCounters counters;

  Served() {
    std::filesystem::create_directories(directory);
    write_policy("mode: enforce\n");
    auto store = PolicyStore::open(policy_file.string());
    EXPECT_TRUE(store.ok()) << store.error();
    policy = std::move(store).value();
    auto generated = write_self_signed(directory.string(), {"localhost"});
    EXPECT_TRUE(generated.ok()) << generated.error();
    cert_file = generated.value().cert_file;
    auto opened = CertificateStore::open(cert_file, generated.value().key_file);
    EXPECT_TRUE(opened.ok()) << opened.error();
    certificates = std::move(opened).value();
  }
  ~Served() { std::filesystem::remove_all(directory); }
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;

  void write_policy(const std::string& text) const { std::ofstream(policy_file, std::ios::trunc) << text; }
};

// Whether `done` becomes true within 10 s.
bool within_seconds(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

TEST(FileReloader, AChangedPolicyIsReadWhenAskedAndABadOneIsCountedAndReplacesNothing) {
  Served served;
  FileReloader reloader(*served.policy, *served.certificates, served.cert_file, served.metrics, served.counters,
                        std::chrono::hours(1));

  served.write_policy("mode: audit\n");
  reloader.reload_now();
  ASSERT_TRUE(within_seconds([&] { return served.policy->current()->mode == Mode::kAudit; }))
      << "asked, the poller read the changed policy long before its hour";
  EXPECT_TRUE(within_seconds([&] { return served.counters.snapshot().reloads == 1; }));

  served.write_policy("mode: sometimes\n");
  reloader.reload_now();
  EXPECT_TRUE(within_seconds([&] { return served.counters.snapshot().rejected_reloads == 1; }));
  EXPECT_EQ(served.policy->current()->mode, Mode::kAudit) << "the bad file replaced nothing";
  EXPECT_EQ(served.counters.snapshot().reloads, 1u);
}

TEST(FileReloader, AChangedPolicyIsReadOnTheNextPollUnasked) {
  Served served;
  const FileReloader reloader(*served.policy, *served.certificates, served.cert_file, served.metrics, served.counters,
                              std::chrono::seconds(1));
  served.write_policy("mode: audit\n");
  EXPECT_TRUE(within_seconds([&] { return served.policy->current()->mode == Mode::kAudit; }));
}

}  // namespace
}  // namespace gpusizer::file_reloader_test
