#include "gpusizer/server/self_signed.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpusizer/server/openssl_error.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509, X509_free>>;

bool is_ip_address(const std::string& host) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 || inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

bool add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  if (!extension) return false;
  const bool added = X509_add_ext(cert, extension, -1) == 1;
  X509_EXTENSION_free(extension);
  return added;
}

// A certificate for `subject_key` named `common_name`, signed by the issuer
// (itself when issuer is null).
Result<CertPtr> make_certificate(EVP_PKEY* subject_key, const std::string& common_name, X509* issuer,
                                 EVP_PKEY* issuer_key, const std::vector<std::pair<int, std::string>>& extensions,
                                 const CertificateValidity& validity) {
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;  // a positive serial number
  BIGNUM* serial_number = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(serial_number, X509_get_serialNumber(cert.get()));
  BN_free(serial_number);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(validity.not_before.count()));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity.not_after.count()));
  X509_set_pubkey(cert.get(), subject_key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("gpu-sizer"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  for (const auto& [nid, value] : extensions) {
    if (!add_extension(cert.get(), issuer ? issuer : cert.get(), nid, value)) {
      return Status::io_error(openssl_error("certificate extension " + value));
    }
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0)
    return Status::io_error(openssl_error("signing " + common_name));
  return cert;
}

Result<bool> write_pem(const std::string& path, mode_t mode, const std::function<int(FILE*)>& write) {
  // open(2) with the mode, so a key is never readable by others, not even briefly.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::io_error("cannot write " + path + ": " + std::strerror(errno));
  ::fchmod(fd, mode);
  FILE* file = ::fdopen(fd, "w");
  if (!file) {
    ::close(fd);
    return Status::io_error("cannot write " + path + ": " + std::strerror(errno));
  }
  const bool ok = write(file) == 1;
  std::fclose(file);
  if (!ok) return Status::io_error(openssl_error("writing " + path));
  return true;
}

}  // namespace

Result<GeneratedCertificates> write_self_signed(const std::string& directory, const std::vector<std::string>& hosts,
                                                const CertificateValidity& validity) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return Status::io_error("cannot create " + directory + ": " + error.message());

  KeyPtr ca_key(EVP_EC_gen("P-256"));
  KeyPtr server_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key) return Status::io_error(openssl_error("generating P-256 keys"));

  auto ca = make_certificate(ca_key.get(), "gpu-sizer local CA", nullptr, ca_key.get(),
                             {{NID_basic_constraints, "critical,CA:TRUE"},
                              {NID_key_usage, "critical,keyCertSign,cRLSign"},
                              {NID_subject_key_identifier, "hash"}},
                             CertificateValidity{});
  if (!ca) return ca.status();

  std::vector<std::string> names;
  for (const auto& host : hosts) names.push_back((is_ip_address(host) ? "IP:" : "DNS:") + host);
  auto server =
      make_certificate(server_key.get(), hosts.empty() ? "localhost" : hosts.front(), ca.value().get(), ca_key.get(),
                       {{NID_basic_constraints, "critical,CA:FALSE"},
                        {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                        {NID_ext_key_usage, "serverAuth"},
                        {NID_subject_alt_name, join(names, ",")},
                        {NID_authority_key_identifier, "keyid:always"}},
                       validity);
  if (!server) return server.status();

  GeneratedCertificates files{directory + "/ca.crt", directory + "/tls.crt", directory + "/tls.key"};
  for (const auto& written : {
           write_pem(files.ca_file, 0644, [&](FILE* f) { return PEM_write_X509(f, ca.value().get()); }),
           write_pem(files.cert_file, 0644, [&](FILE* f) { return PEM_write_X509(f, server.value().get()); }),
           write_pem(files.key_file, 0600,
                     [&](FILE* f) {
                       return PEM_write_PrivateKey(f, server_key.get(), nullptr, nullptr, 0, nullptr, nullptr);
                     }),
       }) {
    if (!written) return written.status();
  }
  return files;
}

}  // namespace gpusizer
