#include "gpusizer/server/certificates.h"

#include <chrono>
#include <ctime>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "gpusizer/server/openssl_error.h"
#include "gpusizer/server/status_page.h"
#include "gpusizer/util/digest.h"
#include "gpusizer/util/files.h"

namespace gpusizer {

struct CertificateStore::Identity {
  X509* leaf = nullptr;
  STACK_OF(X509) * chain = nullptr;  // intermediates after the leaf
  EVP_PKEY* key = nullptr;
  int64_t not_before = 0;  // Unix seconds
  int64_t not_after = 0;

  ~Identity() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
  }
};

std::string_view to_string(CertificateReload::Result result) {
  using enum CertificateReload::Result;
  switch (result) {
    case kUnchanged: return "unchanged";
    case kReloaded: return "reloaded";
    case kInvalid: return "invalid";
    case kExpired: return "expired";
    case kNotYetValid: return "not_yet_valid";
  }
  return "invalid";
}

namespace {

// 0 when OpenSSL cannot read the time (it parsed the certificate, so never).
int64_t unix_seconds(const ASN1_TIME* time) {
  std::tm tm{};
  return ASN1_TIME_to_tm(time, &tm) == 1 ? timegm(&tm) : 0;
}

Result<std::shared_ptr<const CertificateStore::Identity>> parse_identity(const std::string& cert_path,
                                                                         const std::string& cert_text,
                                                                         const std::string& key_path,
                                                                         const std::string& key_text) {
  auto identity = std::make_shared<CertificateStore::Identity>();
  BIO* certs = BIO_new_mem_buf(cert_text.data(), static_cast<int>(cert_text.size()));
  identity->leaf = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr);
  identity->chain = sk_X509_new_null();
  while (X509* extra = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr)) sk_X509_push(identity->chain, extra);
  BIO_free(certs);
  ERR_clear_error();  // the loop ends on a "no start line" error
  if (!identity->leaf) return Status::invalid_argument("TLS certificate " + cert_path + ": no PEM certificate");
  BIO* key = BIO_new_mem_buf(key_text.data(), static_cast<int>(key_text.size()));
  identity->key = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
  BIO_free(key);
  if (!identity->key) return Status::invalid_argument(openssl_error("TLS key " + key_path));
  if (X509_check_private_key(identity->leaf, identity->key) != 1) {
    ERR_clear_error();
    return Status::invalid_argument("TLS key " + key_path + " does not match certificate " + cert_path);
  }
  identity->not_before = unix_seconds(X509_get0_notBefore(identity->leaf));
  identity->not_after = unix_seconds(X509_get0_notAfter(identity->leaf));
  return std::shared_ptr<const CertificateStore::Identity>(std::move(identity));
}

std::string utc_text(int64_t unix_seconds) {
  return format_utc(std::chrono::system_clock::from_time_t(static_cast<std::time_t>(unix_seconds)));
}

// kReloaded when identity is valid at `now`, else kExpired or
// kNotYetValid with the file and the dates.
CertificateReload check_validity(const std::string& cert_path, const CertificateStore::Identity& identity,
                                 std::chrono::system_clock::time_point now) {
  using enum CertificateReload::Result;
  const int64_t at = std::chrono::system_clock::to_time_t(now);
  const std::string period =
      "notBefore " + utc_text(identity.not_before) + ", notAfter " + utc_text(identity.not_after);
  if (at > identity.not_after) {
    return {kExpired, "TLS certificate " + cert_path + " has expired (" + period + ")"};
  }
  if (at < identity.not_before) {
    return {kNotYetValid,
            "TLS certificate " + cert_path + " is not valid yet (" + period + ", now " + utc_text(at) + ")"};
  }
  return {kReloaded, ""};
}

}  // namespace

CertificateStore::CertificateStore(std::string cert_path, std::string key_path,
                                   std::shared_ptr<const Identity> identity, std::string seen)
    : cert_path_(std::move(cert_path)),
      key_path_(std::move(key_path)),
      current_(std::move(identity)),
      seen_(std::move(seen)) {}

Result<std::unique_ptr<CertificateStore>> CertificateStore::open(const std::string& cert_path,
                                                                 const std::string& key_path) {
  auto cert = read_file(cert_path);
  if (!cert) return Status::io_error("TLS certificate: " + cert.error());
  auto key = read_file(key_path);
  if (!key) return Status::io_error("TLS key: " + key.error());
  auto identity = parse_identity(cert_path, cert.value(), key_path, key.value());
  if (!identity) return identity.status();
  return std::unique_ptr<CertificateStore>(
      new CertificateStore(cert_path, key_path, std::move(identity).value(), sha256_hex(cert.value() + key.value())));
}

CertificateReload CertificateStore::reload_if_changed(Clock::time_point now) {
  using enum CertificateReload::Result;
  auto cert = read_file(cert_path_);
  auto key = read_file(key_path_);
  // A Secret update swaps both files at once through ..data; a read in
  // between can still see a mismatched pair, which is rejected and read
  // again on the next poll.
  const std::string seen = cert && key ? sha256_hex(cert.value() + key.value()) : "unreadable";
  if (seen == seen_) {
    if (not_yet_valid_ && check_validity(cert_path_, *not_yet_valid_, now).result == kReloaded) {
      current_.store(std::move(not_yet_valid_));
      not_yet_valid_.reset();
      return {kReloaded, ""};
    }
    return {};
  }
  seen_ = seen;
  not_yet_valid_.reset();
  const std::string keeping = "; serving the previous certificate";
  if (!cert) return {kInvalid, cert.error() + keeping};
  if (!key) return {kInvalid, key.error() + keeping};
  auto identity = parse_identity(cert_path_, cert.value(), key_path_, key.value());
  if (!identity) return {kInvalid, identity.error() + keeping};
  CertificateReload checked = check_validity(cert_path_, *identity.value(), now);
  if (checked.result == kNotYetValid) {
    not_yet_valid_ = identity.value();
    checked.message += keeping + " until then";
  } else if (checked.result == kExpired) {
    checked.message += keeping;
  } else {
    current_.store(std::move(identity).value());
  }
  return checked;
}

std::string CertificateStore::validity_problem(Clock::time_point now) const {
  return check_validity(cert_path_, *current_.load(), now).message;
}

void CertificateStore::serve_from(SSL_CTX& context) {
  SSL_CTX_set_cert_cb(
      &context,
      [](SSL* ssl, void* argument) -> int {
        const auto identity = static_cast<CertificateStore*>(argument)->current_.load();
        // up_ref (last argument 1): the connection keeps its own references,
        // so a reload while it is open frees nothing it uses.
        return SSL_use_cert_and_key(ssl, identity->leaf, identity->key, identity->chain, 1);
      },
      this);
}

int64_t CertificateStore::not_after() const { return current_.load()->not_after; }

}  // namespace gpusizer
