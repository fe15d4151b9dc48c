// The HTTPS transports of the webhook port: they read requests, hand them
// to WebhookRoutes and write the answers. Two implementations, chosen with
// `serve --transport`:
//  - asio (the default): Boost.Asio/Beast event loops, one per thread
//    (default: the CPUs the process may use); any number of connections,
//    requests answered in arrival order.
//  - httplib: cpp-httplib, one pool thread per connection (--threads,
//    default 32); connections past that wait for a thread.
// Both give every connection the same deadlines: its TLS handshake and its
// first request within keep-alive + read timeout of accepting it, each
// later request within that allowance of the previous answer, an idle
// connection closed after the keep-alive timeout.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "gpusizer/result.h"
#include "gpusizer/webhook_routes.h"

namespace gpusizer {

struct ListenAddress {
  std::string host;
  int port = 0;
};

// Sets the certificate, protocols, ciphers and client CA on a server
// context; false with `error` set when it cannot.
using TlsSetup = std::function<bool(SSL_CTX& context, std::string& error)>;

struct TransportOptions {
  ListenAddress address;  // port 0 picks a free port
  int threads = 1;        // asio: event loops; httplib: connections served at once
  std::size_t max_body_bytes = 8u << 20;
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds keep_alive_timeout{5};
};

class Transport {
 public:
  virtual ~Transport() = default;
  // The port it listens on (the one picked, when 0 was asked for).
  virtual int port() const = 0;
  // Serves until stop(); returns once the requests being read or answered
  // then are answered.
  virtual void run() = 0;
  // Stops accepting and closes idle connections. Any thread, before or
  // during run(), more than once.
  virtual void stop() = 0;
};

// Both bind before returning, so a busy port fails here, naming the address.
Result<std::unique_ptr<Transport>> open_asio_transport(const TransportOptions& options, const TlsSetup& tls,
                                                       const WebhookRoutes& routes);
Result<std::unique_ptr<Transport>> open_httplib_transport(const TransportOptions& options, const TlsSetup& tls,
                                                          const WebhookRoutes& routes);

}  // namespace gpusizer
