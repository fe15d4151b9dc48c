#include "gpusizer/server/openssl_error.h"

#include <openssl/err.h>

namespace gpusizer {

std::string openssl_error(std::string_view what) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return std::string(what) + ": unknown OpenSSL error";
  char buffer[256] = {0};
  ERR_error_string_n(code, buffer, sizeof buffer);
  return std::string(what) + ": " + buffer;
}

}  // namespace gpusizer
