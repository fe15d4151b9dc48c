// One HTTP/1.1 connection of the asio transport, over TLS (the webhook
// port) or plain TCP (the metrics port). Its steps run one after another on
// the event loop that accepted it, so they need no lock; its requests are
// answered in the order they arrive.
//
// What a connection costs, and when:
//  - accepted, nothing sent yet: the socket, this object and its timers,
//    about 2 KiB. The TLS stream (asio's engine buffers and OpenSSL's BIO
//    pair, ~70 KiB) is made only when the client's first byte arrives.
//  - every request: its headers (at most kHeaderLimit) and its body; a body
//    over --large-body-bytes is read only while the connection holds the
//    large-request lane, so one such body is held at a time.
// Every wait has a deadline: the handshake and each whole request within
// the allowance (keep-alive + read timeout) of accepting the connection or
// of the previous answer, an idle connection the keep-alive timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "gpusizer/server/large_request_lane.h"
#include "gpusizer/server/transport.h"
#include "unproven_connections.h"

namespace gpusizer::asio_transport {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

// As cpp-httplib: request line and headers together, in bytes.
constexpr std::uint32_t kHeaderLimit = 8192;
// Each connection's read buffer: room for the headers (kHeaderLimit) and a
// TLS record of body at a time, which the parser moves into the request as
// it reads. Unbounded, Beast grows it to 64 KiB+ per busy connection.
constexpr std::size_t kReadBufferBytes = std::size_t{16} * 1024;

// What a transport shares with its connections.
struct Settings {
  const HttpHandler& handler;
  net::ssl::context* tls;  // null: plain HTTP
  std::chrono::seconds read_timeout;
  std::chrono::seconds keep_alive_timeout;
  std::chrono::milliseconds allowance;  // for a whole request: keep-alive + read timeout
  std::size_t max_body_bytes;
  std::size_t large_body_bytes;
  std::size_t max_connections;
  std::atomic<bool> draining{false};      // every answer closes its connection
  std::atomic<std::size_t> open{0};       // counted at accept, uncounted when a Connection is freed
  std::atomic<std::size_t> starting{0};   // accepted, not yet on its loop's lists
  std::atomic<std::uint64_t> shed{0};     // closed at accept, past max_connections
  std::atomic<std::uint64_t> evicted{0};  // closed to make room for a new one
  LargeRequestLane lane;
};

// One event loop and the connections it serves.
struct Loop {
  net::io_context context{1};
  net::executor_work_guard<net::io_context::executor_type> keep_running = net::make_work_guard(context);
  UnprovenConnections unproven;
};

// The webhook port: TLS, set up when the client's first byte arrives.
class TlsLayer {
 public:
  using Stream = beast::ssl_stream<beast::tcp_stream>;
  explicit TlsLayer(tcp::socket socket) : tcp_(std::move(socket)) {}
  beast::tcp_stream& tcp_stream() { return tls_ ? tls_->next_layer() : tcp_; }
  Stream& stream() { return *tls_; }
  void begin(net::ssl::context* context) { tls_.emplace(std::move(tcp_), *context); }
  template <class Handler>
  void async_handshake(Handler&& done) {
    tls_->async_handshake(net::ssl::stream_base::server, std::forward<Handler>(done));
  }
  // Sends close_notify; `done` runs once the client's has come, or the
  // stream's deadline has passed.
  template <class Handler>
  void async_shutdown(Handler&& done) {
    if (!tls_) return done();
    tls_->async_shutdown([done = std::forward<Handler>(done)](beast::error_code) mutable { done(); });
  }
  bool verified_client() {
    SSL* ssl = tls_->native_handle();
    return SSL_get0_peer_certificate(ssl) && SSL_get_verify_result(ssl) == X509_V_OK;
  }

 private:
  beast::tcp_stream tcp_;  // until begin() moves it into the TLS stream
  std::optional<Stream> tls_;
};

// The metrics port: plain HTTP, nothing to set up.
class PlainLayer {
 public:
  using Stream = beast::tcp_stream;
  explicit PlainLayer(tcp::socket socket) : tcp_(std::move(socket)) {}
  beast::tcp_stream& tcp_stream() { return tcp_; }
  Stream& stream() { return tcp_; }
  void begin(net::ssl::context*) {}
  template <class Handler>
  void async_handshake(Handler&& done) {
    done(beast::error_code{});
  }
  template <class Handler>
  void async_shutdown(Handler&& done) {
    done();
  }
  static bool verified_client() { return false; }

 private:
  beast::tcp_stream tcp_;
};

template <class Layer>
class Connection final : public Unproven, public std::enable_shared_from_this<Connection<Layer>> {
 public:
  // REQUIRES: settings.open already counts this connection (the acceptor
  // counts it, so a burst of accepts cannot pass the cap before the
  // connections are made on their loops).
  Connection(tcp::socket socket, Settings& settings, Loop& loop);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  void evict() override;

 private:
  enum class LaneState { kNone, kWaiting, kHolding, kAbandoned };

  void handshake();
  void wait_for_request();
  void read_header();
  void check_framing();
  void discard_body(std::uint64_t length);
  void discard_more();
  void wait_for_lane(bool expects_continue);
  void lane_granted(bool expects_continue);
  void release_lane();
  void read_body(bool expects_continue);
  void answer();
  HttpAnswer answer_now();
  void read_failed(beast::error_code ec);
  void send(HttpAnswer answer);
  void written(beast::error_code ec);
  // Closes the connection when `due_` passes while it waits on timer_.
  void close_at_due();
  void cut();
  void close_gracefully();
  void close();

  std::shared_ptr<Connection> self() { return this->shared_from_this(); }

  const std::string peer_;
  Layer layer_;
  Settings& settings_;
  Loop& loop_;
  // Waits that are not reads or writes of the stream (which have their
  // own deadline): the client's first byte, and a turn on the lane.
  net::steady_timer timer_;
  beast::flat_buffer buffer_{kReadBufferBytes};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  std::optional<http::response<http::empty_body>> continue_;
  std::uint64_t discard_left_ = 0;  // bytes of a refused body still to read
  Clock::time_point due_;           // the next request must have arrived whole by then
  LaneState lane_ = LaneState::kNone;
};

extern template class Connection<TlsLayer>;
extern template class Connection<PlainLayer>;

}  // namespace gpusizer::asio_transport
