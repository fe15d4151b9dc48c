#include "asio_connection.h"

#include <exception>

#include <malloc.h>
#include <spdlog/spdlog.h>

#include "gpusizer/json/json_view.h"
#include "gpusizer/server/connection_deadlines.h"
#include "gpusizer/server/log.h"

namespace gpusizer::asio_transport {

namespace {

// How long a closing connection waits for the client's TLS close_notify.
constexpr std::chrono::seconds kCloseWait{1};

}  // namespace

template <class Layer>
Connection<Layer>::Connection(tcp::socket socket, Settings& settings, Loop& loop)
    : peer_(peer_address(socket.native_handle())),
      layer_(std::move(socket)),
      settings_(settings),
      loop_(loop),
      timer_(loop.context) {}

template <class Layer>
Connection<Layer>::~Connection() {
  loop_.unproven.remove(*this);
  release_lane();
  --settings_.open;
}

template <class Layer>
void Connection<Layer>::evict() {
  log_event(spdlog::level::info, "closed a connection without an answered request to make room for a new one",
            {{"peer", peer_}, {"max_connections", settings_.max_connections}});
  close();
}

// Waits, reading nothing, for the client's first byte: a connection that
// never sends one costs no TLS state.
template <class Layer>
void Connection<Layer>::start() {
  loop_.unproven.add(self());
  due_ = Clock::now() + settings_.allowance;
  close_at_due();
  layer_.tcp_stream().socket().async_wait(tcp::socket::wait_read, [self = self()](beast::error_code ec) {
    self->timer_.cancel();
    if (ec) return;  // closed at its deadline (logged there)
    // Readable with nothing to read: the client hung up, and there is no
    // TLS stream to make for it.
    beast::error_code unread;
    if (self->layer_.tcp_stream().socket().available(unread) == 0 || unread) return self->close();
    self->loop_.unproven.spoke(*self);
    self->handshake();
  });
}

template <class Layer>
void Connection<Layer>::handshake() {
  layer_.begin(settings_.tls);
  layer_.tcp_stream().expires_at(due_);
  layer_.async_handshake([self = self()](beast::error_code ec) {
    if (ec == beast::error::timeout) return self->cut();
    if (ec) return self->close();  // not TLS (plain HTTP, a port scan) or a failed certificate
    self->wait_for_request();
  });
}

// Idle until the next request's first bytes, at most the keep-alive
// timeout; bytes already read (a pipelined request) start it at once.
template <class Layer>
void Connection<Layer>::wait_for_request() {
  if (buffer_.size() > 0) return read_header();
  layer_.tcp_stream().expires_at(std::min(Clock::now() + settings_.keep_alive_timeout, due_));
  layer_.stream().async_read_some(buffer_.prepare(4096), [self = self()](beast::error_code ec, std::size_t n) {
    if (ec) return self->close();  // the client hung up or idled out
    self->buffer_.commit(n);
    self->read_header();
  });
}

template <class Layer>
void Connection<Layer>::read_header() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  // check_framing refuses a body over --max-body-bytes before it is read;
  // the parser's own limit would fail the header instead, unanswered.
  parser_->body_limit(boost::none);
  layer_.tcp_stream().expires_at(due_);
  http::async_read_header(layer_.stream(), buffer_, *parser_, [self = self()](beast::error_code ec, std::size_t) {
    if (ec) return self->read_failed(ec);
    self->check_framing();
  });
}

// Refuses, before reading it, a body that is chunked, of unknown length or
// too long; a large one waits for the lane.
template <class Layer>
void Connection<Layer>::check_framing() {
  const auto& request = parser_->get();
  const auto length = parser_->content_length();
  if (needs_length(std::string_view(request.method_string()), length.has_value(),
                   request.count(http::field::transfer_encoding) > 0)) {
    return send(settings_.handler.length_required());
  }
  const bool expects_continue = beast::iequals(request[http::field::expect], "100-continue");
  if (length && *length > settings_.max_body_bytes) {
    // A client waiting for "100 Continue" sends no body to throw away.
    if (expects_continue) return send(settings_.handler.body_too_large());
    return discard_body(*length);
  }
  if (length && *length > settings_.large_body_bytes) return wait_for_lane(expects_continue);
  read_body(expects_continue);
}

// Reads a body too long to keep and throws it away before answering 413,
// as cpp-httplib does: a client still sending its body reads no answer
// from a connection closed under it. The request's deadline still holds.
template <class Layer>
void Connection<Layer>::discard_body(std::uint64_t length) {
  const std::size_t buffered = buffer_.size();
  discard_left_ = length - std::min<std::uint64_t>(length, buffered);
  buffer_.consume(buffered);
  discard_more();
}

template <class Layer>
void Connection<Layer>::discard_more() {
  if (discard_left_ == 0) return send(settings_.handler.body_too_large());
  const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(discard_left_, kReadBufferBytes));
  layer_.stream().async_read_some(buffer_.prepare(chunk), [self = self()](beast::error_code ec, std::size_t n) {
    if (ec) return self->read_failed(ec);
    self->discard_left_ -= n;  // never committed: the next read overwrites it
    self->discard_more();
  });
}

// Waits, within the request's deadline, for its turn on the large-request
// lane. The lane holds only a weak reference: a connection closed while it
// waits is passed over.
template <class Layer>
void Connection<Layer>::wait_for_lane(bool expects_continue) {
  lane_ = LaneState::kWaiting;
  close_at_due();
  std::weak_ptr<Connection> weak = self();
  settings_.lane.enter([weak, expects_continue] {
    const auto waiter = weak.lock();
    if (!waiter) return false;
    net::post(waiter->loop_.context, [waiter, expects_continue] { waiter->lane_granted(expects_continue); });
    return true;
  });
}

template <class Layer>
void Connection<Layer>::lane_granted(bool expects_continue) {
  if (lane_ == LaneState::kAbandoned) return settings_.lane.leave();
  lane_ = LaneState::kHolding;
  timer_.cancel();
  read_body(expects_continue);
}

template <class Layer>
void Connection<Layer>::release_lane() {
  if (lane_ != LaneState::kHolding) return;
  lane_ = LaneState::kNone;
  settings_.lane.leave();
  // A large review's answer can take tens of MiB in small blocks, which
  // glibc keeps in its arenas once freed: hand them back to the system,
  // on the lane's thread so that no event loop waits for it.
  settings_.lane.run([] { malloc_trim(0); });
}

// Tells a client waiting for "100 Continue" to send its body, then reads it.
template <class Layer>
void Connection<Layer>::read_body(bool expects_continue) {
  if (expects_continue) {
    continue_.emplace(http::status::continue_, parser_->get().version());
    http::async_write(layer_.stream(), *continue_, [self = self()](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      self->read_body(false);
    });
    return;
  }
  // Room past the body for the JSON reader to read it in place (Beast's
  // own reserve is the body's length: a smaller reserve keeps this one).
  if (const auto length = parser_->content_length()) parser_->get().body().reserve(*length + kJsonPadding);
  http::async_read(layer_.stream(), buffer_, *parser_, [self = self()](beast::error_code ec, std::size_t) {
    if (ec) return self->read_failed(ec);
    self->answer();
  });
}

// A large request is decided on the lane's worker, so this loop goes on
// serving its other connections meanwhile; the work guard keeps the loop
// running until the answer is back on it.
template <class Layer>
void Connection<Layer>::answer() {
  if (lane_ != LaneState::kHolding) return send(answer_now());
  settings_.lane.run([self = self(), guard = net::make_work_guard(loop_.context)] {
    HttpAnswer answer = self->answer_now();
    net::post(self->loop_.context, [self, answer = std::move(answer)]() mutable { self->send(std::move(answer)); });
  });
}

template <class Layer>
HttpAnswer Connection<Layer>::answer_now() {
  auto& request = parser_->get();
  const std::string path = decoded_path(std::string_view(request.target()));
  const HttpRequestView view{std::string_view(request.method_string()),
                             path,
                             std::string_view(request[http::field::content_type]),
                             layer_.verified_client(),
                             request.body(),
                             request.body().capacity()};
  try {
    return settings_.handler.answer(view);
  } catch (const std::exception& e) {
    // Nothing a handler calls is meant to throw; one that does must cost
    // this request, not the loop's other connections.
    log_event(spdlog::level::err, "answering a request failed", {{"path", path}, {"error", e.what()}});
    return refusal(500, "internal error answering " + path);
  }
}

// A request that could not be read whole: a deadline missed, the client
// gone, or bytes that are not HTTP.
template <class Layer>
void Connection<Layer>::read_failed(beast::error_code ec) {
  if (ec == beast::error::timeout) return cut();
  if (ec == http::error::header_limit) {
    return send(refusal(431, "request line and headers exceed " + std::to_string(kHeaderLimit) + " bytes"));
  }
  if (ec.category() == http::make_error_code(http::error::bad_method).category() && ec != http::error::end_of_stream &&
      ec != http::error::partial_message) {
    return send(refusal(400, "malformed HTTP request: " + ec.message()));
  }
  close();
}

template <class Layer>
void Connection<Layer>::send(HttpAnswer answer) {
  const bool read_whole = parser_ && parser_->is_done();
  const bool head = read_whole && parser_->get().method() == http::verb::head;
  auto& response = response_.emplace(static_cast<http::status>(answer.status), 11);
  response.set(http::field::content_type, answer.content_type);
  if (answer.page) {
    response.set(http::field::cache_control, "no-store");
    response.set("X-Content-Type-Options", "nosniff");
  }
  response.body() = std::move(answer.body);
  response.keep_alive(read_whole && !answer.close && parser_->get().keep_alive() && !settings_.draining);
  response.prepare_payload();
  if (head) response.body().clear();  // the length of the GET answer, no body
  layer_.tcp_stream().expires_after(settings_.read_timeout);
  http::async_write(layer_.stream(), response,
                    [self = self()](beast::error_code ec, std::size_t) { self->written(ec); });
}

template <class Layer>
void Connection<Layer>::written(beast::error_code ec) {
  const bool keep_alive = response_->keep_alive();
  response_.reset();
  parser_.reset();
  release_lane();
  if (ec) return close();
  loop_.unproven.remove(*this);  // answered: no longer a candidate for eviction
  if (!keep_alive) return close_gracefully();
  due_ = Clock::now() + settings_.allowance;
  wait_for_request();
}

template <class Layer>
void Connection<Layer>::close_at_due() {
  timer_.expires_at(due_);
  timer_.async_wait([self = self()](beast::error_code ec) {
    if (ec) return;  // cancelled: what it waited for came in time
    if (self->lane_ == LaneState::kWaiting) self->lane_ = LaneState::kAbandoned;
    self->cut();
    self->close();
  });
}

// Missed its deadline.
template <class Layer>
void Connection<Layer>::cut() {
  log_connection_cut(peer_, settings_.allowance);
}

// Sends TLS close_notify and waits briefly for the client's, so the answer
// just written is not lost to a reset.
template <class Layer>
void Connection<Layer>::close_gracefully() {
  layer_.tcp_stream().expires_after(kCloseWait);
  layer_.async_shutdown([self = self()] { self->close(); });
}

template <class Layer>
void Connection<Layer>::close() {
  // Nothing waits on the timer once the socket is closed: the connection
  // is freed as soon as its stream operations end.
  if (lane_ == LaneState::kWaiting) lane_ = LaneState::kAbandoned;
  timer_.cancel();
  beast::error_code ignored;
  layer_.tcp_stream().socket().shutdown(tcp::socket::shutdown_both, ignored);
  layer_.tcp_stream().close();
}

template class Connection<TlsLayer>;
template class Connection<PlainLayer>;

}  // namespace gpusizer::asio_transport
