// The served TLS certificate, reloaded from its files when they change
// (a Kubernetes Secret update swaps a `..data` symlink) and picked per
// handshake, so new connections get the new certificate while connections
// already open finish on the old one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <openssl/ssl.h>

#include "gpusizer/util/result.h"
#include "gpusizer/util/snapshot.h"

namespace gpusizer {

// What one look at the certificate files found; the names are the
// `result` label of gpu_sizer_tls_certificate_reloads_total.
struct CertificateReload {
  enum class Result {
    kUnchanged,    // the same files as last time
    kReloaded,     // a changed, valid pair is served from now on
    kInvalid,      // unreadable, not PEM, a key that does not match (half-written, mismatched)
    kExpired,      // notAfter is past
    kNotYetValid,  // notBefore is ahead: served once it comes, if the files stay
  };
  Result result = Result::kUnchanged;
  // Why a changed pair was refused, naming the file (and, for the dates,
  // notBefore and notAfter); empty otherwise.
  std::string message;
};

std::string_view to_string(CertificateReload::Result result);

class CertificateStore {
 public:
  using Clock = std::chrono::system_clock;

  // Loads the PEM certificate chain and key; fails naming the file and what
  // is wrong (unreadable, not PEM, key does not match). A certificate
  // outside its validity period is loaded (see validity_problem).
  static Result<std::unique_ptr<CertificateStore>> open(const std::string& cert_path, const std::string& key_path);

  // Re-reads both files. A changed pair replaces the served one only when
  // it is valid and `now` is within its notBefore..notAfter: a rotation to
  // an expired or not-yet-valid certificate would make every API server
  // call fail its handshake, so the old one stays and the refusal says why,
  // once per distinct content. A pair refused as not yet valid is served
  // by the first call at or after its notBefore (a renewal signed by a
  // clock a little ahead of this one).
  CertificateReload reload_if_changed(Clock::time_point now = Clock::now());

  // Why the served certificate is not valid at `now` (expired, not yet
  // valid; naming the file and the dates), or empty when it is.
  std::string validity_problem(Clock::time_point now = Clock::now()) const;

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
  // The pair of seen_ when it was refused only for being not yet valid.
  std::shared_ptr<const Identity> not_yet_valid_;
};

}  // namespace gpusizer
