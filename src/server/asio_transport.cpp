// `serve --transport asio` (the default): Boost.Asio event loops reading
// HTTP/1.1 with Boost.Beast's parser. Each loop runs on its own thread and
// owns the connections accepted onto it, so a connection's steps run one
// after another on one thread and need no lock; a connection's requests are
// answered in the order they arrive.
//
// cpp-httplib (the other transport) holds a thread per connection, so 16
// busy connections on one core meant 16 threads taking turns: a third of the
// CPU went to the kernel switching them, a connection past --threads waited
// for a free one, and a burst of requests all finished near the burst's end
// (docs/performance.md).
#include <atomic>
#include <exception>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>

#include "gpusizer/server/connection_deadlines.h"
#include "gpusizer/server/log.h"
#include "gpusizer/server/transport.h"

namespace gpusizer {

namespace {

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
// How long a closing connection waits for the client's TLS close_notify.
constexpr std::chrono::seconds kCloseWait{1};

// What the transport shares with its connections.
struct Settings {
  const HttpHandler& handler;
  net::ssl::context& tls;
  std::chrono::seconds read_timeout;
  std::chrono::seconds keep_alive_timeout;
  std::chrono::milliseconds allowance;  // for a whole request: keep-alive + read timeout
  std::size_t max_body_bytes;
  std::atomic<bool> stopping{false};
};

class Connection;

// One event loop and the connections it serves; the list is touched only
// from the loop's thread.
struct Loop {
  net::io_context context{1};
  net::executor_work_guard<net::io_context::executor_type> keep_running = net::make_work_guard(context);
  std::list<Connection*> connections;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Settings& settings, Loop& loop)
      : peer_(peer_address(socket.native_handle())),
        stream_(std::move(socket), settings.tls),
        settings_(settings),
        loop_(loop),
        in_loop_(loop.connections.insert(loop.connections.end(), this)) {}
  ~Connection() { loop_.connections.erase(in_loop_); }

  // The handshake and the first request are due within the allowance.
  void start() {
    due_ = Clock::now() + settings_.allowance;
    idle_ = true;
    tcp_stream().expires_at(due_);
    stream_.async_handshake(net::ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
      self->idle_ = false;
      if (ec == beast::error::timeout) return self->cut();
      if (ec) return self->close();  // not TLS (plain HTTP, a port scan) or a failed certificate
      self->wait_for_request();
    });
  }

  // On shutdown: a connection waiting for its handshake or next request
  // closes now; one reading or answering a request closes after answering.
  void stop_if_idle() {
    if (idle_) tcp_stream().cancel();
  }

 private:
  beast::tcp_stream& tcp_stream() { return stream_.next_layer(); }

  // Idle until the next request's first bytes, at most the keep-alive
  // timeout; bytes already read (a pipelined request) start it at once.
  void wait_for_request() {
    if (settings_.stopping) return close();
    if (buffer_.size() > 0) return read_header();
    idle_ = true;
    tcp_stream().expires_at(std::min(Clock::now() + settings_.keep_alive_timeout, due_));
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->idle_ = false;
      if (ec) return self->close();  // the client hung up, idled out, or we are stopping
      self->buffer_.commit(n);
      self->read_header();
    });
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    // check_framing refuses a body over --max-body-bytes before it is read;
    // the parser's own limit would fail the header instead, unanswered.
    parser_->body_limit(boost::none);
    tcp_stream().expires_at(due_);
    http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->read_failed(ec);
      self->check_framing();
    });
  }

  // Refuses, before reading it, a body that is chunked, of unknown length
  // or too long; tells a client waiting for "100 Continue" to send it.
  void check_framing() {
    const auto& request = parser_->get();
    const auto length = parser_->content_length();
    if (needs_length(std::string_view(request.method_string()), length.has_value(),
                     request.count(http::field::transfer_encoding) > 0)) {
      return send(settings_.handler.length_required());
    }
    if (length && *length > settings_.max_body_bytes) return discard_body(*length);
    if (beast::iequals(request[http::field::expect], "100-continue")) {
      continue_.emplace(http::status::continue_, request.version());
      http::async_write(stream_, *continue_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  // Reads a body too long to keep and throws it away before answering 413,
  // as cpp-httplib does: a client still sending its body reads no answer
  // from a connection closed under it. The request's deadline still holds.
  void discard_body(std::uint64_t length) {
    const std::size_t buffered = buffer_.size();
    discard_left_ = length - std::min<std::uint64_t>(length, buffered);
    buffer_.consume(buffered);
    discard_more();
  }

  void discard_more() {
    if (discard_left_ == 0) return send(settings_.handler.body_too_large());
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(discard_left_, kReadBufferBytes));
    stream_.async_read_some(buffer_.prepare(chunk), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      if (ec) return self->read_failed(ec);
      self->discard_left_ -= n;
      self->discard_more();
    });
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->read_failed(ec);
      self->answer();
    });
  }

  void answer() {
    auto& request = parser_->get();
    const std::string path = decoded_path(std::string_view(request.target()));
    const HttpRequestView view{std::string_view(request.method_string()), path,
                               std::string_view(request[http::field::content_type]), verified_client(), request.body()};
    try {
      send(settings_.handler.answer(view));
    } catch (const std::exception& e) {
      // Nothing a handler calls is meant to throw; one that does must cost
      // this request, not the loop's other connections.
      log_event(spdlog::level::err, "answering a request failed", {{"path", path}, {"error", e.what()}});
      send(refusal(500, "internal error answering " + path));
    }
  }

  // A request that could not be read whole: a deadline missed, the client
  // gone, or bytes that are not HTTP.
  void read_failed(beast::error_code ec) {
    if (ec == beast::error::timeout) return cut();
    if (ec == http::error::header_limit) {
      return send(refusal(431, "request line and headers exceed " + std::to_string(kHeaderLimit) + " bytes"));
    }
    if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return send(refusal(400, "malformed HTTP request: " + ec.message()));
    }
    close();
  }

  void send(HttpAnswer answer) {
    const bool read_whole = parser_ && parser_->is_done();
    const bool head = read_whole && parser_->get().method() == http::verb::head;
    auto& response = response_.emplace(static_cast<http::status>(answer.status), 11);
    response.set(http::field::content_type, answer.content_type);
    response.body() = std::move(answer.body);
    response.keep_alive(read_whole && !answer.close && parser_->get().keep_alive() && !settings_.stopping);
    response.prepare_payload();
    if (head) response.body().clear();  // the length of the GET answer, no body
    tcp_stream().expires_after(settings_.read_timeout);
    http::async_write(stream_, response,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->written(ec); });
  }

  void written(beast::error_code ec) {
    if (ec) return close();
    if (!response_->keep_alive()) return close_tls();
    due_ = Clock::now() + settings_.allowance;
    response_.reset();
    parser_.reset();
    wait_for_request();
  }

  bool verified_client() {
    SSL* ssl = stream_.native_handle();
    return SSL_get0_peer_certificate(ssl) && SSL_get_verify_result(ssl) == X509_V_OK;
  }

  // Missed its deadline: the stream has closed the socket already.
  void cut() { log_connection_cut(peer_, settings_.allowance); }

  // Sends close_notify and waits briefly for the client's, so the answer
  // just written is not lost to a reset.
  void close_tls() {
    tcp_stream().expires_after(kCloseWait);
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->close(); });
  }

  void close() {
    beast::error_code ignored;
    tcp_stream().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_stream().close();
  }

  const std::string peer_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  Settings& settings_;
  Loop& loop_;
  const std::list<Connection*>::iterator in_loop_;
  beast::flat_buffer buffer_{kReadBufferBytes};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  std::optional<http::response<http::empty_body>> continue_;
  std::uint64_t discard_left_ = 0;  // bytes of a refused body still to read
  Clock::time_point due_;           // the next request must have arrived whole by then
  bool idle_ = false;               // waiting for the handshake or the next request's first bytes
};

class AsioTransport final : public Transport {
 public:
  AsioTransport(const TransportOptions& options, const HttpHandler& handler)
      : settings_{handler,
                  tls_,
                  options.read_timeout,
                  options.keep_alive_timeout,
                  options.keep_alive_timeout + options.read_timeout,
                  options.max_body_bytes},
        loops_(make_loops(options.threads)) {}

  Status open(const ListenAddress& address, const TlsSetup& tls) {
    if (Status set_up = tls(*tls_.native_handle()); !set_up.ok()) return set_up;
    beast::error_code ec;
    tcp::resolver resolver(loops_[0]->context);
    const auto resolved = resolver.resolve(address.host, std::to_string(address.port),
                                           tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || resolved.empty()) {
      return Status::io_error("cannot listen on " + address.host + ": " + (ec ? ec.message() : "no address"));
    }
    const tcp::endpoint endpoint = resolved.begin()->endpoint();
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status::io_error("cannot listen on " + address.host + ":" + std::to_string(address.port) + ": " +
                              ec.message());
    }
    accept();
    return {};
  }

  int port() const override { return acceptor_.local_endpoint().port(); }

  void run() override {
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < loops_.size(); ++i) threads.emplace_back([this, i] { loops_[i]->context.run(); });
    loops_[0]->context.run();
    for (auto& thread : threads) thread.join();
  }

  void stop() override {
    if (settings_.stopping.exchange(true)) return;
    net::post(loops_[0]->context, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
      retry_.cancel();
    });
    for (auto& loop : loops_) {
      net::post(loop->context, [&loop = *loop] {
        for (Connection* connection : loop.connections) connection->stop_if_idle();
      });
      // Each loop returns once its connections are gone.
      loop->keep_running.reset();
    }
  }

 private:
  static std::vector<std::unique_ptr<Loop>> make_loops(int threads) {
    std::vector<std::unique_ptr<Loop>> loops;
    for (int i = 0; i < std::max(1, threads); ++i) loops.push_back(std::make_unique<Loop>());
    return loops;
  }

  // New connections go to the loops in turn.
  void accept() {
    Loop& loop = *loops_[next_loop_++ % loops_.size()];
    acceptor_.async_accept(loop.context, [this, &loop](beast::error_code ec, tcp::socket socket) {
      if (settings_.stopping || ec == net::error::operation_aborted) return;
      if (ec) {
        // Out of file descriptors, most likely: try again shortly rather
        // than spin.
        log_event(spdlog::level::warn, "accepting a connection failed", {{"error", ec.message()}});
        retry_.expires_after(std::chrono::milliseconds(100));
        retry_.async_wait([this](beast::error_code waited) {
          if (!waited) accept();
        });
        return;
      }
      socket.set_option(tcp::no_delay(true), ec);
      net::post(loop.context, [this, &loop, socket = std::move(socket)]() mutable {
        std::make_shared<Connection>(std::move(socket), settings_, loop)->start();
      });
      accept();
    });
  }

  net::ssl::context tls_{net::ssl::context::tls_server};
  Settings settings_;
  std::vector<std::unique_ptr<Loop>> loops_;  // before the acceptor: it runs on loops_[0]
  tcp::acceptor acceptor_{loops_.at(0)->context};
  net::steady_timer retry_{loops_.at(0)->context};
  std::size_t next_loop_ = 0;
};

}  // namespace

Result<std::unique_ptr<Transport>> open_asio_transport(const TransportOptions& options, const TlsSetup& tls,
                                                       const HttpHandler& handler) {
  auto transport = std::make_unique<AsioTransport>(options, handler);
  if (Status opened = transport->open(options.address, tls); !opened.ok()) return opened;
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace gpusizer
