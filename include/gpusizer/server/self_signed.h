// A throwaway CA and server certificate, so `gpu-sizer serve` runs over
// HTTPS with no files at all (make run, local tests).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gpusizer/util/result.h"

namespace gpusizer {

struct GeneratedCertificates {
  std::string ca_file;    // PEM CA certificate: give it to clients (curl --cacert)
  std::string cert_file;  // PEM server certificate signed by the CA
  std::string key_file;   // PEM private key, mode 0600
};

// When the server certificate is valid, from now: an hour ago (clocks
// differ) to a year ahead by default.
struct CertificateValidity {
  std::chrono::seconds not_before = std::chrono::hours(-1);
  std::chrono::seconds not_after = std::chrono::hours(365 * 24);
};

// Creates `directory` if needed and writes ca.crt, tls.crt and tls.key there:
// an ECDSA P-256 CA (valid by default) and a server certificate for `hosts`
// (DNS names or IP addresses, as subjectAltName), valid for `validity`.
Result<GeneratedCertificates> write_self_signed(const std::string& directory, const std::vector<std::string>& hosts,
                                                const CertificateValidity& validity = {});

}  // namespace gpusizer
