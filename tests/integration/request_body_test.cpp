// The asio transport reads a body into a buffer with kJsonPadding to spare
// past it, so the JSON reader reads a review in place instead of copying
// it first (docs/performance.md): small bodies on the event loop and
// large ones on the lane alike. The transport runs in this process with a
// handler that records what it was given.
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/json/json_view.h"
#include "gpusizer/server/transport.h"
#include "integration/raw_client.h"

namespace gpusizer::testing::request_body_test {
namespace {

struct SeenBody {
  std::size_t size = 0;
  std::size_t capacity = 0;
};

class RecordingHandler : public HttpHandler {
 public:
  HttpAnswer answer(const HttpRequestView& request) const override {
    const std::lock_guard lock(mutex_);
    seen_.push_back({request.body.size(), request.body_capacity});
    return {200, "application/json", "{}"};
  }
  HttpAnswer body_too_large() const override { return json_error(413, "too large"); }
  HttpAnswer length_required() const override { return json_error(411, "length required"); }

  std::vector<SeenBody> seen() const {
    const std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<SeenBody> seen_;
};

TEST(RequestBody, TheAsioTransportLeavesRoomForTheJsonReaderPastEachBody) {
  RecordingHandler handler;
  TransportOptions options;
  options.address = {"127.0.0.1", 0};
  auto opened = open_plain_http_transport(options, handler);
  ASSERT_TRUE(opened) << opened.error();
  Transport& transport = *opened.value();
  std::thread serving([&] { transport.run(); });
  // 3 KB on the event loop, 100 KB past large_body_bytes on the lane.
  const std::vector<std::size_t> sizes = {2, 3000, 100000};
  for (const std::size_t size : sizes) {
    RawClient client(transport.port());
    const std::string body = "[" + std::string(size - 2, ' ') + "]";
    client.send("POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
    RawClient::Received answer;
    while (!contains(answer.bytes, "\r\n\r\n{}") && !answer.closed) {
      const RawClient::Received more = client.receive_some(std::chrono::milliseconds(5000));
      if (more.bytes.empty() && !more.closed) break;
      answer.bytes += more.bytes;
      answer.closed = more.closed;
    }
    EXPECT_TRUE(contains(answer.bytes, "HTTP/1.1 200")) << answer.bytes;
  }
  transport.stop();
  serving.join();
  const std::vector<SeenBody> seen = handler.seen();
  ASSERT_EQ(seen.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(seen[i].size, sizes[i]);
    EXPECT_GE(seen[i].capacity, seen[i].size + kJsonPadding) << "body of " << sizes[i] << " bytes";
  }
}

}  // namespace
}  // namespace gpusizer::testing::request_body_test
