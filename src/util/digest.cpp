#include "gpusizer/util/digest.h"

#include <array>

#include <openssl/evp.h>

#include "gpusizer/util/strings.h"

namespace gpusizer {

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHexDigits[digest[i] >> 4];
    hex += kHexDigits[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace gpusizer
