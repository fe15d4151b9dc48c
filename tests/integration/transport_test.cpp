// How requests reach the webhook, at the byte level: query strings,
// pipelining, Expect: 100-continue, HEAD, malformed requests, many
// connections and shutdown. CTest runs this suite against both transports
// (serve --transport asio, and again as httplib.Transport.* with
// --transport httplib); where they differ, each test says how and why.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "integration/raw_client.h"
#include "integration/shared_webhook.h"
#include "support/review_support.h"

namespace gpusizer::testing::transport_test {
namespace {

const json kFourGpuPod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});

std::string post_request(const std::string& target, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + target + " HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

// Reads until `count` answers have arrived whole (each has a
// Content-Length), the server closes, or 30 s pass.
RawClient::Received receive_answers(RawClient& client, int count) {
  RawClient::Received all;
  const auto deadline = Clock::now() + seconds(30);
  auto answers_in = [](const std::string& bytes) {
    int answers = 0;
    for (std::size_t at = 0; (at = bytes.find("HTTP/1.1 ", at)) != std::string::npos; ++at) {
      const auto length_at = bytes.find("Content-Length: ", at);
      const auto body_at = bytes.find("\r\n\r\n", at);
      if (length_at == std::string::npos || body_at == std::string::npos) break;
      const auto length = std::stoul(bytes.substr(length_at + 16));
      if (bytes.size() < body_at + 4 + length) break;
      ++answers;
    }
    return answers;
  };
  while (answers_in(all.bytes) < count && !all.closed && Clock::now() < deadline) {
    const RawClient::Received more = client.receive_some(std::chrono::milliseconds(200));
    all.bytes += more.bytes;
    all.closed = more.closed;
  }
  return all;
}

// Whether the server closes the connection after the answers `received`
// holds: receive_answers returns once they are whole, and the close may
// come a moment later.
bool closes(RawClient& client, const RawClient::Received& received) {
  return received.closed || client.receive(seconds(5)).closed;
}

// Reads until `marker` has arrived, the server closes, or 30 s pass.
RawClient::Received receive_until(RawClient& client, const std::string& marker) {
  RawClient::Received all;
  const auto deadline = Clock::now() + seconds(30);
  while (!contains(all.bytes, marker) && !all.closed && Clock::now() < deadline) {
    const RawClient::Received more = client.receive_some(std::chrono::milliseconds(100));
    all.bytes += more.bytes;
    all.closed = more.closed;
  }
  return all;
}

bool httplib_transport() { return test_transport() == "httplib"; }

class Transport : public SharedWebhookTest {};

TEST_F(Transport, PipelinedRequestsAreAnsweredInOrderAndTheQueryIsNotPartOfTheRoute) {
  if (httplib_transport()) {
    GTEST_SKIP() << "cpp-httplib answers only the first of pipelined requests: the others wait in OpenSSL's "
                    "buffer, unseen by its poll of the socket, until the keep-alive timeout";
  }
  // The API server calls https://SERVICE/mutate?timeout=3s.
  RawClient client(webhook_->port());
  client.handshake(webhook_->ca_file());
  ASSERT_TRUE(client.send("GET /healthz HTTP/1.1\r\nHost: gpu-sizer\r\n\r\n" +
                          post_request("/mutate?timeout=3s", admission_review(kFourGpuPod).dump()) +
                          "GET /readyz HTTP/1.1\r\nHost: gpu-sizer\r\nConnection: close\r\n\r\n"));
  const RawClient::Received received = receive_answers(client, 3);
  const auto health = received.bytes.find("\r\n\r\nok\n");
  const auto review = received.bytes.find("\"patch\":");
  const auto ready = received.bytes.find("\r\n\r\nready\n");
  ASSERT_NE(health, std::string::npos) << received.bytes;
  ASSERT_NE(review, std::string::npos) << received.bytes;
  ASSERT_NE(ready, std::string::npos) << received.bytes;
  EXPECT_LT(health, review);
  EXPECT_LT(review, ready);
  EXPECT_TRUE(closes(client, received)) << "Connection: close on the last request";
}

TEST_F(Transport, ExpectContinueGetsContinueBeforeTheBodyIsSent) {
  // curl sends Expect: 100-continue with bodies over 1 MB and waits up to
  // a second for it.
  RawClient client(webhook_->port());
  client.handshake(webhook_->ca_file());
  const std::string body = admission_review(kFourGpuPod).dump();
  const std::string request = post_request("/mutate", body, "Expect: 100-continue\r\n");
  ASSERT_TRUE(client.send(request.substr(0, request.size() - body.size())));
  const RawClient::Received interim = receive_until(client, "\r\n\r\n");
  EXPECT_EQ(interim.bytes.rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << interim.bytes;
  ASSERT_TRUE(client.send(body));
  const RawClient::Received answer = receive_answers(client, 1);
  EXPECT_EQ(answer.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer.bytes.substr(0, 200);
  EXPECT_TRUE(contains(answer.bytes, "\"patch\":"));
}

TEST_F(Transport, ExpectContinueOverTheBodyLimitGets413AtOnce) {
  // The client waits for "100 Continue" before it sends its body, so a
  // server that reads the body before refusing it waits until the
  // request's deadline, and the client until its own timeout.
  RawClient client(webhook_->port());
  client.handshake(webhook_->ca_file());
  ASSERT_TRUE(
      client.send("POST /mutate HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: application/json\r\n"
                  "Content-Length: 8388609\r\nExpect: 100-continue\r\n\r\n"));
  const auto sent = Clock::now();
  const RawClient::Received answer = receive_answers(client, 1);
  EXPECT_LT(Clock::now() - sent, seconds(5));
  EXPECT_EQ(answer.bytes.rfind("HTTP/1.1 413 ", 0), 0u) << answer.bytes.substr(0, 200);
  EXPECT_FALSE(contains(answer.bytes, "100 Continue")) << answer.bytes.substr(0, 200);
  EXPECT_TRUE(contains(answer.bytes, "request body exceeds the size limit of 8388608 bytes (--max-body-bytes)"))
      << answer.bytes.substr(0, 300);
}

TEST_F(Transport, HeadGetsTheLengthOfTheAnswerWithoutTheBody) {
  RawClient client(webhook_->port());
  client.handshake(webhook_->ca_file());
  ASSERT_TRUE(client.send("HEAD /healthz HTTP/1.1\r\nHost: gpu-sizer\r\n\r\n"));
  const std::string head_answer = receive_until(client, "\r\n\r\n").bytes;
  EXPECT_EQ(head_answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head_answer;
  EXPECT_TRUE(contains(head_answer, "Content-Length: 3\r\n")) << head_answer;
  EXPECT_TRUE(head_answer.ends_with("\r\n\r\n")) << "no body after the header: " << head_answer;
  // The connection goes on: the next answer is the GET's, whole.
  ASSERT_TRUE(client.send("GET /healthz HTTP/1.1\r\nHost: gpu-sizer\r\n\r\n"));
  const std::string get_answer = receive_answers(client, 1).bytes;
  EXPECT_EQ(get_answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << get_answer;
  EXPECT_TRUE(get_answer.ends_with("\r\n\r\nok\n")) << get_answer;
}

TEST_F(Transport, RequestsThatAreNotHttpAre400AndOverLongHeaders431) {
  {
    RawClient client(webhook_->port());
    client.handshake(webhook_->ca_file());
    ASSERT_TRUE(client.send("this is not HTTP\r\n\r\n"));
    const RawClient::Received received = receive_answers(client, 1);
    EXPECT_EQ(received.bytes.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << received.bytes;
    if (!httplib_transport()) {  // cpp-httplib keeps the connection open for its keep-alive timeout
      EXPECT_TRUE(contains(received.bytes, "{\"error\":\"malformed HTTP request: ")) << received.bytes;
      EXPECT_TRUE(closes(client, received));
    }
  }
  {
    RawClient client(webhook_->port());
    client.handshake(webhook_->ca_file());
    ASSERT_TRUE(
        client.send("GET /healthz HTTP/1.1\r\nHost: gpu-sizer\r\nX-Padding: " + std::string(9000, 'p') + "\r\n\r\n"));
    const RawClient::Received received = receive_answers(client, 1);
    if (httplib_transport()) {
      // cpp-httplib reads each header line into a fixed 8 KiB buffer and
      // answers 400 or nothing.
      EXPECT_FALSE(contains(received.bytes, "200 OK")) << received.bytes;
    } else {
      EXPECT_EQ(received.bytes.rfind("HTTP/1.1 431 ", 0), 0u) << received.bytes.substr(0, 200);
      EXPECT_TRUE(contains(received.bytes, "{\"error\":\"request line and headers exceed 8192 bytes\"}"))
          << received.bytes;
      EXPECT_TRUE(closes(client, received));
    }
  }
}

TEST(TransportConnections, HundredsOfConnectionsAreServedAtOnce) {
  if (httplib_transport()) {
    GTEST_SKIP() << "cpp-httplib serves --threads connections at once; the others wait "
                    "(BadInputTransport.SlowClientsHoldingEveryThreadDelayOthersOnlyUnderHttplib)";
  }
  // Two event loops; every connection sends its review before any answer
  // is read, so all of them are open and waiting at once. Long timeouts:
  // under a sanitizer, answering all 200 takes longer than the default
  // keep-alive timeout, and a connection whose request the busy loops have
  // not yet read when it ends is closed like an idle one.
  WebhookProcess webhook({"--threads", "2", "--keep-alive-timeout", "120", "--read-timeout", "60"});
  constexpr int kConnections = 200;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(std::make_unique<RawClient>(webhook.port()));
    clients.back()->handshake(webhook.ca_file());
  }
  const std::string request = post_request("/mutate", admission_review(kFourGpuPod).dump());
  for (auto& client : clients) ASSERT_TRUE(client->send(request));
  int answered = 0;
  for (auto& client : clients) {
    const RawClient::Received received = receive_answers(*client, 1);
    if (received.bytes.rfind("HTTP/1.1 200 OK\r\n", 0) == 0 && contains(received.bytes, "\"patch\":")) ++answered;
  }
  EXPECT_EQ(answered, kConnections);
}

TEST(TransportShutdown, SigtermAnswersTheRequestsInFlightOnEveryConnection) {
  // The API server keeps idle keep-alive connections and does not retry a
  // POST that a closing connection lost, so none is closed under a request
  // it may have sent: an idle connection still gets its next request
  // answered (and closed after it), or closes at its keep-alive timeout.
  WebhookProcess webhook({"--keep-alive-timeout", "3"});
  const std::string request = post_request("/validate", admission_review(kFourGpuPod).dump());
  auto idle_connection = [&] {
    auto client = std::make_unique<RawClient>(webhook.port());
    client->handshake(webhook.ca_file());
    EXPECT_TRUE(client->send("GET /healthz HTTP/1.1\r\nHost: gpu-sizer\r\n\r\n"));
    EXPECT_TRUE(contains(receive_answers(*client, 1).bytes, "\r\n\r\nok\n"));
    return client;
  };
  auto reused = idle_connection();
  auto left_idle = idle_connection();
  // One halfway through sending a review when SIGTERM arrives.
  RawClient sending(webhook.port());
  sending.handshake(webhook.ca_file());
  const std::size_t half = request.size() / 2;
  ASSERT_TRUE(sending.send(request.substr(0, half)));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // read by the server

  webhook.terminate();
  const auto terminated = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(reused->send(request));
  const RawClient::Received reused_answer = receive_answers(*reused, 1);
  EXPECT_EQ(reused_answer.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reused_answer.bytes.substr(0, 200);
  EXPECT_TRUE(contains(reused_answer.bytes, "\"allowed\":false")) << "the review was decided";
  EXPECT_TRUE(contains(reused_answer.bytes, "Connection: close\r\n")) << reused_answer.bytes.substr(0, 300);
  EXPECT_TRUE(reused->receive(seconds(5)).closed);

  ASSERT_TRUE(sending.send(request.substr(half)));
  const RawClient::Received answer = receive_answers(sending, 1);
  EXPECT_EQ(answer.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer.bytes.substr(0, 200);
  EXPECT_TRUE(contains(answer.bytes, "\"allowed\":false")) << "the review was decided";

  // The connection left idle closes at its keep-alive timeout, not before,
  // and then the process ends.
  EXPECT_TRUE(left_idle->receive(seconds(10)).closed);
  const double idle_closed_after = std::chrono::duration<double>(Clock::now() - terminated).count();
  EXPECT_GT(idle_closed_after, 1.5) << "an idle connection was closed at SIGTERM";
  EXPECT_LT(idle_closed_after, 7.0);
  EXPECT_EQ(webhook.wait_for(std::chrono::seconds(10)), std::optional<int>(0));
}

TEST(TransportShutdown, DuringTheShutdownDelayEveryAnswerClosesItsConnection) {
  // So the API server reconnects, through the Service, to a replica that
  // is not stopping.
  WebhookProcess webhook({"--shutdown-delay", "3"});
  RawClient client(webhook.port());
  client.handshake(webhook.ca_file());
  ASSERT_TRUE(client.send("GET /healthz HTTP/1.1\r\nHost: gpu-sizer\r\n\r\n"));
  const std::string before = receive_answers(client, 1).bytes;
  EXPECT_FALSE(contains(before, "Connection: close")) << before;
  webhook.terminate();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(client.send(post_request("/mutate", admission_review(kFourGpuPod).dump())));
  const RawClient::Received during = receive_answers(client, 1);
  EXPECT_EQ(during.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << during.bytes.substr(0, 200);
  EXPECT_TRUE(contains(during.bytes, "\"patch\":")) << "still sizing during the delay";
  EXPECT_TRUE(contains(during.bytes, "Connection: close\r\n")) << during.bytes.substr(0, 300);
  auto probe = webhook.client();
  const auto ready = probe->Get("/readyz");
  ASSERT_TRUE(ready) << httplib::to_string(ready.error());
  EXPECT_EQ(ready->status, 503) << "out of the Service's endpoints during the delay";
  EXPECT_EQ(webhook.wait_for(std::chrono::seconds(15)), std::optional<int>(0));
}

}  // namespace
}  // namespace gpusizer::testing::transport_test
