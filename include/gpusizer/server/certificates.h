// The served TLS certificate, reloaded from its files when they change
// (a Kubernetes Secret update swaps a `..data` symlink) and picked per
// handshake, so new connections get the new certificate while connections
// already open finish on the old one.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "gpusizer/util/result.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

class CertificateStore {
 public:
  enum class Reload { kUnchanged, kReloaded, kRejected };

  // Loads the PEM certificate chain and key; fails naming the file and what
  // is wrong (unreadable, not PEM, key does not match).
  static Result<std::unique_ptr<CertificateStore>> open(const std::string& cert_path, const std::string& key_path);

  // Re-reads both files. A changed, valid pair replaces the served one; a
  // changed, invalid pair (half-written, mismatched) keeps the old one and
  // `error` says why, once per distinct content.
  Reload reload_if_changed(std::string& error);

  // Makes every handshake on this context use the current certificate.
  // REQUIRES: the store outlives the context.
  void serve_from(SSL_CTX& context);

  // notAfter of the served certificate, in Unix seconds.
  int64_t not_after() const;

  struct Identity;  // certificate, chain and key, immutable once loaded

 private:
  CertificateStore(std::string cert_path, std::string key_path, std::shared_ptr<const Identity> identity,
                   std::string seen);

  std::string cert_path_;
  std::string key_path_;
  Snapshot<Identity> current_;
  std::string seen_;  // hash of the last pair of texts read, valid or not
};

}  // namespace gpusizer
