// Reloading the policy file: what a poll reports, and that a bad file
// never replaces a good policy.
#include "gpusizer/server/policy_store.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace gpusizer::policy_store_test {
namespace {

struct PolicyFile {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("gpu-sizer-policy-store-" + std::to_string(::getpid()) + ".yaml");
  ~PolicyFile() { std::filesystem::remove(path); }
  void write(const std::string& text) const { std::ofstream(path, std::ios::trunc) << text; }
};

TEST(PolicyStore, AReloadSaysWhetherThePolicyChangedAndWhyNot) {
  PolicyFile file;
  file.write("mode: enforce\n");
  auto store = PolicyStore::open(file.path.string());
  ASSERT_TRUE(store.ok()) << store.error();
  PolicyStore& policy = *store.value();
  EXPECT_FALSE(policy.reload_if_changed().value()) << "unchanged";

  file.write("mode: audit\n");
  EXPECT_TRUE(policy.reload_if_changed().value());
  EXPECT_EQ(policy.current()->mode, Mode::kAudit);

  file.write("mode: sometimes\n");
  auto rejected = policy.reload_if_changed();
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), ProblemCode::kBadValue);
  EXPECT_NE(rejected.error().find("must be mutate, enforce or audit"), std::string::npos) << rejected.error();
  EXPECT_NE(rejected.error().find("keeping the previous policy"), std::string::npos) << rejected.error();
  EXPECT_EQ(policy.current()->mode, Mode::kAudit) << "the bad file replaced nothing";
  EXPECT_FALSE(policy.reload_if_changed().value()) << "each bad content is reported once";

  std::filesystem::remove(file.path);
  auto unreadable = policy.reload_if_changed();
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.status().code(), ProblemCode::kIo);
  EXPECT_EQ(policy.current()->mode, Mode::kAudit);
}

TEST(PolicyStore, TheEmbeddedDefaultNeverReloads) {
  auto store = PolicyStore::open("");
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE(store.value()->reload_if_changed().value());
}

}  // namespace
}  // namespace gpusizer::policy_store_test
