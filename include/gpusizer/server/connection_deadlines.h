// A deadline per TLS connection for delivering a whole request.
// cpp-httplib's read timeout bounds each wait for bytes, and restarts with
// every byte: a client sending one byte a second would hold a server thread
// for as long as it likes. Every connection gets `allowance` from the start
// of its TLS handshake, and again from each answer, to deliver the next
// request's headers and body; one that misses it is shut down, which ends
// the read its thread is blocked in.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <openssl/ssl.h>

namespace gpusizer {

// "10.0.0.7:51234": the peer of a connected socket, for log lines.
std::string peer_address(int fd);

// The log line of a connection closed for not sending a whole request
// within `allowance`, the same for both transports.
void log_connection_cut(const std::string& peer, std::chrono::milliseconds allowance);

class ConnectionDeadlines {
 public:
  explicit ConnectionDeadlines(std::chrono::milliseconds allowance);
  // REQUIRES: every connection of the tracked contexts has been freed
  // (the server has stopped).
  ~ConnectionDeadlines();
  ConnectionDeadlines(const ConnectionDeadlines&) = delete;
  ConnectionDeadlines& operator=(const ConnectionDeadlines&) = delete;

  // Tracks every connection made with `context`, from the start of its
  // handshake until SSL_free. Call once per context, before it serves.
  void track(SSL_CTX& context);

  // The connection's request has arrived whole: no deadline while it is
  // answered. Unknown connections are ignored.
  void request_arrived(const SSL* ssl);

  // Its answer has been written: the next request is due within the
  // allowance.
  void answered(const SSL* ssl);

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    int fd = -1;
    Clock::time_point due;
  };

  static int connection_index();
  static void on_info(const SSL* ssl, int where, int ret);
  static void on_free(void* parent, void* data, CRYPTO_EX_DATA* ad, int index, long argl, void* argp);
  void start(const SSL* ssl);
  void forget(const SSL* ssl);
  void watch();

  const std::chrono::milliseconds allowance_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<const SSL*, Connection> connections_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace gpusizer
