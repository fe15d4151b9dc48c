// Files changed the way Kubernetes volumes change them, so a reader never
// sees half of an update: a ConfigMap file replaced whole, a Secret volume
// whose `..data` symlink is swapped.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "gpusizer/server/self_signed.h"

namespace gpusizer::testing {

// Writes text beside path, then renames it over path.
inline void replace_file(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::filesystem::rename(path + ".tmp", path);
}

// Publishes a certificate and key in the layout of a Secret volume:
// tls.crt -> ..data/tls.crt, ..data -> `version` (a new directory, e.g.
// "..v2"), the ..data link swapped atomically as the kubelet does.
inline void publish_secret(const std::filesystem::path& secret, const GeneratedCertificates& files,
                           const std::string& version) {
  namespace fs = std::filesystem;
  fs::create_directories(secret / version);
  fs::copy_file(files.cert_file, secret / version / "tls.crt");
  fs::copy_file(files.key_file, secret / version / "tls.key");
  fs::create_directory_symlink(version, secret / "..data_tmp");
  fs::rename(secret / "..data_tmp", secret / "..data");
  for (const char* name : {"tls.crt", "tls.key"}) {
    if (!fs::is_symlink(secret / name)) fs::create_symlink(fs::path("..data") / name, secret / name);
  }
}

}  // namespace gpusizer::testing
