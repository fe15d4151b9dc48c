// The served TLS certificate, reloaded from its files when they change
// (a Kubernetes Secret update swaps a `..data` symlink) and picked per
// handshake, so new connections get the new certificate while connections
// already open finish on the old one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <openssl/ssl.h>

#include "gpusizer/util/result.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

class CertificateStore {
 public:
  // Loads the PEM certificate chain and key; fails naming the file and what
  // is wrong (unreadable, not PEM, key does not match).
  static Result<std::unique_ptr<CertificateStore>> open(const std::string& cert_path, const std::string& key_path);

  // Re-reads both files. True when a changed, valid pair replaced the
  // served one, false when they are unchanged; fails, saying why, when a
  // changed pair is unreadable or invalid (half-written, mismatched): the
  // old one stays, and the failure is reported once per distinct content.
  Result<bool> reload_if_changed();

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
