// What OpenSSL says went wrong, for the messages of the server's TLS code.
#pragma once

#include <string>
#include <string_view>

namespace gpusizer {

// "what: " and the first error on this thread's OpenSSL error queue
// ("error:0480006C:PEM routines::no start line"), or "what: unknown
// OpenSSL error" when the queue is empty. Clears the queue, so a later
// failure does not report this one.
std::string openssl_error(std::string_view what);

}  // namespace gpusizer
