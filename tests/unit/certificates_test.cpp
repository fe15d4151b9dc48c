// A rotation to a certificate outside its validity period is refused and the
// served one kept: the API server's handshake would fail with it. `now` is
// passed in, so no test waits for a certificate to expire.
#include "gpusizer/server/certificates.h"

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "gpusizer/server/self_signed.h"

namespace gpusizer::certificates_test {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using Result = CertificateReload::Result;

class CertificateValidityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpu-sizer-certificates-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    auto served = write_self_signed((dir_ / "served").string(), {"127.0.0.1"});
    ASSERT_TRUE(served) << served.error();
    cert_ = (dir_ / "tls.crt").string();
    key_ = (dir_ / "tls.key").string();
    publish(served.value());
    auto opened = CertificateStore::open(cert_, key_);
    ASSERT_TRUE(opened) << opened.error();
    store_ = std::move(opened).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void publish(const GeneratedCertificates& files) {
    fs::copy_file(files.cert_file, cert_, fs::copy_options::overwrite_existing);
    fs::copy_file(files.key_file, key_, fs::copy_options::overwrite_existing);
  }

  // A new pair valid from `not_before` to `not_after` (from now), published.
  void rotate_to(std::chrono::seconds not_before, std::chrono::seconds not_after) {
    auto next = write_self_signed((dir_ / ("next-" + std::to_string(++generation_))).string(), {"127.0.0.1"},
                                  CertificateValidity{not_before, not_after});
    ASSERT_TRUE(next) << next.error();
    publish(next.value());
  }

  fs::path dir_;
  std::string cert_, key_;
  std::unique_ptr<CertificateStore> store_;
  int generation_ = 0;
};

TEST_F(CertificateValidityTest, AnExpiredCertificateIsRefusedNamingTheFileAndDates) {
  const int64_t served = store_->not_after();
  rotate_to(hours(-48), hours(-24));
  const CertificateReload reload = store_->reload_if_changed();
  EXPECT_EQ(reload.result, Result::kExpired);
  EXPECT_EQ(to_string(reload.result), "expired");
  EXPECT_EQ(reload.message.rfind("TLS certificate " + cert_ + " has expired (notBefore 20", 0), 0u) << reload.message;
  EXPECT_NE(reload.message.find(", notAfter 20"), std::string::npos) << reload.message;
  EXPECT_TRUE(reload.message.ends_with("); serving the previous certificate")) << reload.message;
  EXPECT_EQ(store_->not_after(), served);
  // Reported once: the same files again change nothing.
  EXPECT_EQ(store_->reload_if_changed().result, Result::kUnchanged);
  EXPECT_EQ(store_->not_after(), served);
}

TEST_F(CertificateValidityTest, ANotYetValidCertificateIsServedOnceItsTimeComes) {
  const int64_t served = store_->not_after();
  const auto now = std::chrono::system_clock::now();
  rotate_to(hours(24), hours(24 * 730));
  const CertificateReload early = store_->reload_if_changed(now);
  EXPECT_EQ(early.result, Result::kNotYetValid);
  EXPECT_NE(early.message.find(" is not valid yet (notBefore 20"), std::string::npos) << early.message;
  EXPECT_TRUE(early.message.ends_with("; serving the previous certificate until then")) << early.message;
  EXPECT_EQ(store_->not_after(), served);
  EXPECT_EQ(store_->reload_if_changed(now + hours(1)).result, Result::kUnchanged);
  EXPECT_EQ(store_->not_after(), served);
  // A day later the same files are valid: served without being written again.
  EXPECT_EQ(store_->reload_if_changed(now + hours(25)).result, Result::kReloaded);
  EXPECT_GT(store_->not_after(), served);
  EXPECT_EQ(store_->reload_if_changed(now + hours(26)).result, Result::kUnchanged);
}

TEST_F(CertificateValidityTest, AValidRotationIsServedAndAnInvalidPairKept) {
  const int64_t served = store_->not_after();
  rotate_to(hours(-1), hours(24 * 730));
  EXPECT_EQ(store_->reload_if_changed().result, Result::kReloaded);
  EXPECT_GT(store_->not_after(), served);
  fs::copy_file(dir_ / "served" / "tls.key", key_, fs::copy_options::overwrite_existing);
  const CertificateReload mismatched = store_->reload_if_changed();
  EXPECT_EQ(mismatched.result, Result::kInvalid);
  EXPECT_NE(mismatched.message.find("does not match"), std::string::npos) << mismatched.message;
}

TEST_F(CertificateValidityTest, TheServedCertificateSaysWhenItIsOutsideItsPeriod) {
  const auto now = std::chrono::system_clock::now();
  EXPECT_EQ(store_->validity_problem(now), "");
  EXPECT_NE(store_->validity_problem(now + hours(24 * 400)).find(" has expired (notBefore "), std::string::npos);
  EXPECT_NE(store_->validity_problem(now - hours(2)).find(" is not valid yet ("), std::string::npos);
}

}  // namespace
}  // namespace gpusizer::certificates_test
