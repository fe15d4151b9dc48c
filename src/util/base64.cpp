#include "gpusizer/util/base64.h"

#include <openssl/evp.h>

namespace gpusizer {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int written =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    const bool alphabet =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
    if (!alphabet) return Status::invalid_argument("is not base64: it holds the character '" + std::string(1, c) + "'");
    compact += c;
  }
  if (compact.size() % 4 != 0) {
    return Status::invalid_argument("is not base64: its length is not a multiple of 4 characters");
  }
  std::string out(3 * (compact.size() / 4), '\0');
  const int written =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(compact.data()), static_cast<int>(compact.size()));
  if (written < 0) return Status::invalid_argument("is not base64");
  // EVP_DecodeBlock counts the bytes the padding stands for.
  std::size_t size = static_cast<std::size_t>(written);
  for (std::size_t i = compact.size(); i > 0 && compact[i - 1] == '=' && size > 0; --i) --size;
  out.resize(size);
  return out;
}

}  // namespace gpusizer
