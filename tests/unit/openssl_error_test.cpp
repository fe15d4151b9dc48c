// The one wording of what OpenSSL says went wrong.
#include "gpusizer/server/openssl_error.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>

namespace gpusizer::openssl_error_test {
namespace {

TEST(OpensslError, NamesWhatFailedAndWhyThenClearsTheQueue) {
  BIO* bio = BIO_new_mem_buf("not a certificate", -1);
  EXPECT_EQ(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr), nullptr);
  BIO_free(bio);
  const std::string message = openssl_error("TLS certificate /tmp/x.crt");
  EXPECT_TRUE(message.starts_with("TLS certificate /tmp/x.crt: error:")) << message;
  EXPECT_NE(message.find("no start line"), std::string::npos) << message;
  EXPECT_EQ(ERR_peek_error(), 0u) << "a later failure must not report this one";
  EXPECT_EQ(openssl_error("signing"), "signing: unknown OpenSSL error");
}

}  // namespace
}  // namespace gpusizer::openssl_error_test
