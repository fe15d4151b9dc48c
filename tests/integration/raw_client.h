// Clients for the transport tests: RawClient does at the socket level what
// well-behaved clients do not (plain HTTP on the TLS port, one byte a
// second, pipelined or malformed requests, nothing at all).
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <latch>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "integration/webhook_process.h"
#include "support/text_support.h"

namespace gpusizer::testing {

using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("cannot connect to port " + std::to_string(port));
    }
  }
  ~RawClient() {
    if (ssl_) SSL_free(ssl_);
    if (context_) SSL_CTX_free(context_);
    ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // Completes a TLS handshake, verifying the webhook's certificate; then
  // send and receive go through TLS.
  void handshake(const std::string& ca_file) {
    context_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(context_, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(context_);
    SSL_set_fd(ssl_, fd_);
    if (SSL_connect(ssl_) != 1) throw std::runtime_error("TLS handshake failed");
    // Non-blocking from here, so receive() can wait with a timeout even
    // when what arrives is only a TLS session ticket.
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }

  // The bytes a TLS client sends first (its ClientHello), to send by hand.
  static std::string client_hello() {
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    SSL* ssl = SSL_new(context);
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, BIO_new(BIO_s_mem()), out);
    SSL_connect(ssl);  // writes the ClientHello to `out`, then wants the answer
    char* data = nullptr;
    const long size = BIO_get_mem_data(out, &data);
    std::string hello(data, static_cast<std::size_t>(size));
    SSL_free(ssl);
    SSL_CTX_free(context);
    ERR_clear_error();
    return hello;
  }

  // False when the server has closed the connection.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const int sent = ssl_ ? SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()))
                            : static_cast<int>(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL));
      if (sent > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(sent));
        continue;
      }
      if (!ssl_ || SSL_get_error(ssl_, sent) != SSL_ERROR_WANT_WRITE) return false;
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 1000);
    }
    return true;
  }

  // Sends what it can of `bytes` within `timeout` and returns how much
  // went: a server that is not reading leaves the rest unsent once the
  // socket buffers are full.
  std::size_t send_within(std::string_view bytes, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::size_t sent_total = 0;
    while (sent_total < bytes.size()) {
      const std::size_t chunk = std::min<std::size_t>(16384, bytes.size() - sent_total);
      const int sent =
          ssl_ ? SSL_write(ssl_, bytes.data() + sent_total, static_cast<int>(chunk))
               : static_cast<int>(::send(fd_, bytes.data() + sent_total, chunk, MSG_NOSIGNAL | MSG_DONTWAIT));
      if (sent > 0) {
        sent_total += static_cast<std::size_t>(sent);
        continue;
      }
      const bool would_block =
          ssl_ ? SSL_get_error(ssl_, sent) == SSL_ERROR_WANT_WRITE : (errno == EAGAIN || errno == EWOULDBLOCK);
      if (!would_block || Clock::now() >= deadline) break;
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 50);
    }
    return sent_total;
  }

  struct Received {
    std::string bytes;
    bool closed = false;  // the server closed the connection
  };

  // What arrives within `timeout`, stopping early when the server closes.
  Received receive(std::chrono::milliseconds timeout) { return read(timeout, Wait::kWholeTimeout); }

  // The bytes that have come once some have (or `timeout` passed, or the
  // server closed): for callers that loop until an answer is whole, without
  // waiting out each call's timeout.
  Received receive_some(std::chrono::milliseconds timeout) { return read(timeout, Wait::kFirstBytes); }

 private:
  enum class Wait { kWholeTimeout, kFirstBytes };

  Received read(std::chrono::milliseconds timeout, Wait wait) {
    Received received;
    auto deadline = Clock::now() + timeout;
    char buffer[4096];
    while (true) {
      if (!ssl_ || SSL_pending(ssl_) == 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(std::max<long>(left, 0))) == 0) return received;
      }
      const int n =
          ssl_ ? SSL_read(ssl_, buffer, sizeof buffer) : static_cast<int>(::recv(fd_, buffer, sizeof buffer, 0));
      if (n > 0) {
        received.bytes.append(buffer, static_cast<std::size_t>(n));
        if (wait == Wait::kFirstBytes) deadline = Clock::now();  // what else has come, without waiting
      } else if (!ssl_ || SSL_get_error(ssl_, n) != SSL_ERROR_WANT_READ) {
        received.closed = true;
        ERR_clear_error();
        return received;
      }
    }
  }

  int fd_ = -1;
  SSL_CTX* context_ = nullptr;
  SSL* ssl_ = nullptr;
};

// A review with a padded header, long enough that sending it one byte a
// second would take minutes.
inline const std::string kSlowRequest =
    "POST /mutate HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: application/json\r\n"
    "X-Padding: " +
    std::string(200, 'p') + "\r\nContent-Length: 2\r\n\r\n{}";

struct Trickle {
  std::size_t sent = 0;   // bytes sent before the server closed
  bool cut = false;       // the server closed the connection
  bool answered = false;  // the whole request went through and was answered
  double seconds = 0;     // from the first byte to the close
};

// Sends `bytes` one a second (waiting for the server to close in between)
// until the server closes or a minute has passed. `started` counts down
// after the first byte.
inline Trickle trickle(RawClient& client, const std::string& bytes, std::latch& started) {
  Trickle result;
  const auto begin = Clock::now();
  bool first = true;
  while (result.sent < bytes.size() && Clock::now() - begin < seconds(60)) {
    if (!client.send(bytes.substr(result.sent, 1))) {
      result.cut = true;
      break;
    }
    ++result.sent;
    if (first) started.count_down();
    first = false;
    const RawClient::Received received = client.receive(seconds(1));
    result.answered = contains(received.bytes, "HTTP/1.1 ");
    if (received.closed || result.answered) {
      result.cut = received.closed;
      break;
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  if (first) started.count_down();
  return result;
}

// The server's log past its first `offset` bytes, once that part holds
// `text` (or after 60 s).
inline std::string log_past(const WebhookProcess& webhook, std::size_t offset, const std::string& text) {
  const auto deadline = Clock::now() + seconds(60);
  while (true) {
    const std::string log = webhook.stderr_text();
    std::string past = log.size() > offset ? log.substr(offset) : std::string();
    if (contains(past, text) || Clock::now() > deadline) return past;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Waits up to a minute for a line containing `text` in the server's log.
inline bool log_shows(const WebhookProcess& webhook, const std::string& text) {
  return contains(log_past(webhook, 0, text), text);
}

// The last line of the server's log holding `text`; empty when none does.
inline std::string log_line_with(const WebhookProcess& webhook, const std::string& text) {
  std::istringstream lines(webhook.stderr_text());
  std::string found;
  for (std::string line; std::getline(lines, line);) {
    if (contains(line, text)) found = line;
  }
  return found;
}

inline const std::string kCutLine = "closed a connection that did not send a whole request in time";

}  // namespace gpusizer::testing
