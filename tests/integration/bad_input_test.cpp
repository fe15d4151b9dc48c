// Bad input against the real binary over TLS, one test per row of the
// docs/bad-input.md table: each asserts the exact answer a caller gets
// (status, `allowed`, a message that names what is wrong and where) and
// that the server still answers a normal review afterwards.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <latch>
#include <thread>

#include <gtest/gtest.h>

#include "integration/raw_client.h"
#include "integration/shared_webhook.h"
#include "support/review_support.h"

namespace gpusizer::testing::bad_input_test {
namespace {

// The `error` of a 4xx answer; fails the test when the body is not a JSON
// object holding one (nlohmann refuses invalid UTF-8, so this also checks
// the answer is valid JSON).
std::string error_of(const httplib::Result& result) {
  if (!result) {
    ADD_FAILURE() << "no answer: " << httplib::to_string(result.error());
    return "";
  }
  const json body = json::parse(result->body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("error") || !body["error"].is_string()) {
    ADD_FAILURE() << "not a JSON {\"error\": ...}: " << result->body;
    return "";
  }
  return body["error"].get<std::string>();
}

// The `response` of a 200 answer.
json response_of(const httplib::Result& result) {
  if (!result) {
    ADD_FAILURE() << "no answer: " << httplib::to_string(result.error());
    return json::object();
  }
  EXPECT_EQ(result->status, 200) << result->body;
  const json body = json::parse(result->body, nullptr, false);
  if (body.is_discarded() || !body.contains("response")) {
    ADD_FAILURE() << "not an AdmissionReview: " << result->body;
    return json::object();
  }
  return body["response"];
}

const json kFourGpuPod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});

// A 4-GPU pod at 64Gi, on a new connection, is raised to 192Gi: the server
// is up and deciding. `timeout` bounds the handshake and the answer each.
void expect_serves_a_normal_review(const WebhookProcess& webhook, int timeout = 10) {
  auto client = webhook.client();
  client->set_connection_timeout(timeout);
  client->set_read_timeout(timeout);
  auto result = client->Post("/mutate", admission_review(kFourGpuPod).dump(), "application/json");
  ASSERT_TRUE(result) << "a normal review failed: " << httplib::to_string(result.error());
  ASSERT_EQ(result->status, 200) << result->body;
  const json patched = apply_response(kFourGpuPod, json::parse(result->body));
  EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["requests"]["memory"], "192Gi");
}

// `"key":value,` inserted first in a JSON object's text.
std::string with_member_first(const std::string& object_text, const std::string& key, const std::string& value) {
  return "{\"" + key + "\":" + value + "," + object_text.substr(1);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("no \"" + from + "\" in the body");
  return text.replace(at, from.size(), to);
}

std::string nested_arrays(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

class BadInputTest : public SharedWebhookTest {
 protected:
  void TearDown() override { expect_serves_a_normal_review(*webhook_); }
};

TEST_F(BadInputTest, MalformedOrTruncatedJsonIs400WithLineAndColumn) {
  const std::string full = admission_review(kFourGpuPod).dump();
  for (const std::string& body : {std::string("{\"apiVersion\": "), full.substr(0, full.size() / 2),
                                  std::string("{\"a\": 1} trailing"), std::string()}) {
    auto result = webhook_->post("/mutate", body);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 400) << body;
    const std::string error = error_of(result);
    EXPECT_TRUE(contains(error, "request body is not valid JSON: ")) << error;
    EXPECT_TRUE(contains(error, "parse error at line 1, column ")) << error;
  }
  // Cut inside a string: the error says where, never what was read.
  auto inside_secret = webhook_->post("/validate", R"({"request":{"object":{"env":[{"value":"hunter2-secret)");
  EXPECT_FALSE(contains(error_of(inside_secret), "hunter2"));
}

TEST_F(BadInputTest, JsonNestedThousandsDeepIs400PastTheApiServersLimit) {
  // The same 2 million levels in the template of an UPDATE's object and
  // oldObject (8 MB, within the body limit): comparing them recursed once
  // per level and overflowed the server thread's stack.
  json deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "serve"}, {"namespace", "team-a"}}},
      {"spec", {{"template", {{"spec", {{"x", "DEEP"}, {"containers", kFourGpuPod["spec"]["containers"]}}}}}}}};
  json update = workload_review(deployment, "UPDATE");
  update["request"]["oldObject"] = deployment;
  const std::string update_text = update.dump();
  const std::string deep_update =
      replaced(replaced(update_text, "\"DEEP\"", nested_arrays(2000000)), "\"DEEP\"", nested_arrays(2000000));
  const std::string deep_update_error = error_of(webhook_->post("/mutate", deep_update));
  EXPECT_EQ(deep_update_error,
            "request body nests JSON deeper than 10000 levels at "
            "request.object.spec.template.spec.x[0][0][0][0][0][0][0][0][0][0]...");

  // Elsewhere in the review: 100000 objects under an unknown top-level key.
  std::string deep_objects;
  for (int i = 0; i < 100000; ++i) deep_objects += "{\"a\":";
  deep_objects += "1" + std::string(100000, '}');
  const std::string review_text = admission_review(kFourGpuPod).dump();
  EXPECT_EQ(error_of(webhook_->post("/validate", with_member_first(review_text, "x", deep_objects))),
            "request body nests JSON deeper than 10000 levels at x.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a...");

  // The limit is Go's, so the API server never sends more: 10000 levels
  // (the review's object and 9999 arrays) are read, 10001 are not.
  auto at_limit = webhook_->post("/mutate", with_member_first(review_text, "x", nested_arrays(9999)));
  EXPECT_TRUE(response_of(at_limit).contains("patch")) << at_limit->body.substr(0, 300);
  auto past_limit = webhook_->post("/mutate", with_member_first(review_text, "x", nested_arrays(10000)));
  EXPECT_EQ(past_limit->status, 400);
  EXPECT_TRUE(contains(error_of(past_limit), "deeper than 10000 levels at x[0][0]")) << past_limit->body;

  // Within the limit, an UPDATE comparing deep templates is answered.
  const std::string within =
      replaced(replaced(update_text, "\"DEEP\"", nested_arrays(9990)), "\"DEEP\"", nested_arrays(9990));
  const json unchanged = response_of(webhook_->post("/validate", within));
  EXPECT_EQ(unchanged["allowed"], true);
}

TEST_F(BadInputTest, BodyOverTheSizeLimitIs413) {
  auto too_big = webhook_->post("/mutate", std::string((8u << 20) + 1, ' '));
  ASSERT_TRUE(too_big);
  EXPECT_EQ(too_big->status, 413);
  EXPECT_EQ(error_of(too_big), "request body exceeds the size limit of 8388608 bytes (--max-body-bytes)");
}

TEST_F(BadInputTest, LargeReviewsLeaveNoLastingMemory) {
  // Each server thread keeps a reader whose buffers grow to the largest
  // body it read (several times its size): a few 7 MB reviews pinned tens
  // of megabytes for good until large buffers were given back after each
  // answer.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer's allocator holds freed memory (quarantine) and ignores mallopt: "
                  "resident memory is measured in the ordinary build";
#endif
  json pod = kFourGpuPod;
  pod["metadata"]["annotations"]["big"] = std::string(7u << 20, 'x');
  const std::string body = admission_review(pod).dump();
  ASSERT_TRUE(webhook_->post("/mutate", admission_review(kFourGpuPod).dump()));
  const std::optional<long> before = resident_kib(webhook_->pid());
  ASSERT_TRUE(before);
  for (int i = 0; i < 4; ++i) {
    // A new connection each time, so several server threads read one.
    auto client = webhook_->client();
    auto answer = client->Post("/mutate", body, "application/json");
    ASSERT_TRUE(answer);
    EXPECT_TRUE(response_of(answer).contains("patch"));
  }
  const std::optional<long> after = resident_kib(webhook_->pid());
  ASSERT_TRUE(after);
  EXPECT_LT(*after - *before, 12 * 1024) << "KiB resident before " << *before << ", after " << *after;
}

TEST_F(BadInputTest, BodyWithoutContentLengthIs411AndTheConnectionCloses) {
  // cpp-httplib checks the size limit only against a Content-Length: it
  // read a chunked body of any size whole into memory.
  const std::string chunked =
      "POST /mutate HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n100000\r\n" +
      std::string(1 << 20, ' ') + "\r\n";
  const std::string unframed = "POST /validate HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: application/json\r\n\r\n{}";
  for (const std::string& request : {chunked, unframed}) {
    RawClient client(webhook_->port());
    client.handshake(webhook_->ca_file());
    client.send(request);
    const RawClient::Received received = client.receive(seconds(30));
    EXPECT_EQ(received.bytes.rfind("HTTP/1.1 411 Length Required\r\n", 0), 0u) << received.bytes.substr(0, 200);
    EXPECT_TRUE(contains(received.bytes,
                         "{\"error\":\"a request body needs a Content-Length header, at most "
                         "8388608 bytes (--max-body-bytes); chunked transfer encoding is not "
                         "accepted\"}"))
        << received.bytes;
    EXPECT_TRUE(received.closed) << "the unread body cannot be taken for the next request";
  }
}

TEST_F(BadInputTest, WrongContentTypeIs415NamingIt) {
  auto text = webhook_->post("/mutate", admission_review(kFourGpuPod).dump(), "text/plain");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 415);
  EXPECT_EQ(error_of(text), "Content-Type must be application/json, found \"text/plain\"");
  auto yaml = webhook_->post("/validate", "request: {}", "application/yaml");
  EXPECT_EQ(yaml->status, 415);
  EXPECT_EQ(error_of(yaml), "Content-Type must be application/json, found \"application/yaml\"");
  // The log line says what kind of problem it was, for alerts that tell a
  // broken client from a probe; a body that is not JSON is a syntax problem.
  EXPECT_EQ(webhook_->post("/mutate", "{not json")->status, 400);
  const std::string log = webhook_->stderr_text();
  EXPECT_TRUE(contains(log, "\"error_code\":\"bad_value\"")) << log;
  EXPECT_TRUE(contains(log, "\"error_code\":\"syntax\"")) << log;
}

TEST_F(BadInputTest, MissingRequestOrUidIs400NamingTheField) {
  json no_request = admission_review(kFourGpuPod);
  no_request.erase("request");
  json request_string = admission_review(kFourGpuPod);
  request_string["request"] = "pod";
  for (const json& review : {no_request, request_string}) {
    auto result = webhook_->post("/mutate", review.dump());
    EXPECT_EQ(result->status, 400);
    EXPECT_EQ(error_of(result), "request is missing or not an object");
  }
  json no_uid = admission_review(kFourGpuPod);
  no_uid["request"].erase("uid");
  json numeric_uid = admission_review(kFourGpuPod);
  numeric_uid["request"]["uid"] = 7;
  for (const json& review : {no_uid, numeric_uid}) {
    auto result = webhook_->post("/validate", review.dump());
    EXPECT_EQ(result->status, 400);
    EXPECT_EQ(error_of(result), "request.uid is missing or not a non-empty string");
  }
}

TEST_F(BadInputTest, ObjectOfTheWrongTypeIs400) {
  for (const json& object : {json("pod"), json::array({kFourGpuPod}), json(nullptr), json(4)}) {
    json review = admission_review(kFourGpuPod);
    review["request"]["object"] = object;
    auto result = webhook_->post("/mutate", review.dump());
    EXPECT_EQ(result->status, 400) << object;
    EXPECT_EQ(error_of(result), "request.object must be the Pod being created, as a JSON object");
  }
  json update = workload_review(kFourGpuPod);
  update["request"]["kind"] = {{"group", "batch"}, {"version", "v1"}, {"kind", "Job"}};
  update["request"]["operation"] = "UPDATE";
  update["request"]["object"] = json::array();
  EXPECT_EQ(error_of(webhook_->post("/validate", update.dump())),
            "request.object must be the Job being updated, as a JSON object");
}

// A review without a kind decides nothing; a kind no table names is
// searched for pods by their shape, sized, and never denied on that guess.
TEST_F(BadInputTest, KindlessReviewsAreAllowedUnchangedAndUnknownKindsNeverDenied) {
  json no_kind = admission_review(kFourGpuPod, "team-a", "CREATE", false, "uid-widget");
  no_kind["request"].erase("kind");
  for (const char* endpoint : {"/mutate", "/validate"}) {
    const json response = response_of(webhook_->post(endpoint, no_kind.dump()));
    EXPECT_EQ(response, json({{"uid", "uid-widget"}, {"allowed", true}})) << endpoint;
  }
  json widget = admission_review(kFourGpuPod, "team-a", "CREATE", false, "uid-widget");
  widget["request"]["kind"] = {{"group", "example.com"}, {"version", "v1"}, {"kind", "GpuWidget"}};
  EXPECT_TRUE(response_of(webhook_->post("/mutate", widget.dump())).contains("patch"));
  const json validated = response_of(webhook_->post("/validate", widget.dump()));
  EXPECT_TRUE(validated["allowed"].get<bool>()) << validated.dump();
  const std::string warnings = validated["warnings"].dump();
  EXPECT_NE(warnings.find("GpuWidget team-a/train-x: unknown kind, sized by shape: spec;"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("would deny: spec container \\\"trainer\\\""), std::string::npos) << warnings;
}

TEST_F(BadInputTest, PodWithThousandsOfContainersIsAnsweredWithBoundedMessages) {
  // 5000 containers of 1 GPU each: each gets its share of 5000 GPUs' needs.
  const json many = pod_with_containers(5000, {{"limits", {{"nvidia.com/gpu", "1"}}}});
  auto mutated = webhook_->post("/mutate", admission_review(many).dump());
  // Answered in time: patching it once walked the container list from the
  // start for every container (quadratic; the TSan build timed out).
  ASSERT_TRUE(mutated) << httplib::to_string(mutated.error());
  const json response = response_of(mutated);
  ASSERT_TRUE(response.contains("patch"));
  const json patched = apply_response(many, json::parse(mutated->body));
  EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["requests"]["memory"], "48Gi");
  EXPECT_EQ(patched["spec"]["containers"][4999]["resources"]["requests"]["memory"], "48Gi");
  // The annotation and audit record were 480 KB, past the API server's
  // 256 KiB for all annotations of an object: the patched pod was invalid.
  const std::string sized = patched["metadata"]["annotations"]["gpu-sizer.io/sized"];
  EXPECT_LE(sized.size(), 4200u);
  EXPECT_TRUE(sized.starts_with("train profile, 5000 GPUs: c0: cpu request unset->8, memory request unset->48Gi"))
      << sized.substr(0, 200);
  EXPECT_TRUE(sized.ends_with(" more containers")) << sized.substr(sized.size() - 100);
  EXPECT_LE(response["auditAnnotations"]["sized"].get<std::string>().size(), 8300u);
  EXPECT_LE(response["warnings"].dump().size(), 4096u);

  // Denied: the message names the first containers and counts the rest.
  json opted_out = many;
  opted_out["metadata"]["annotations"] = {{"gpu-sizer.io/mutate", "false"}};
  const json denied = response_of(webhook_->post("/validate", admission_review(opted_out).dump()));
  EXPECT_EQ(denied["allowed"], false);
  const std::string message = denied["status"]["message"];
  EXPECT_LE(message.size(), 8300u);
  EXPECT_TRUE(message.starts_with("pod team-a/many container \"c0\": 1 of 5000 GPUs need memory >= 48Gi")) << message;
  EXPECT_TRUE(message.ends_with(" more denials")) << message.substr(message.size() - 100);

  // Thousands of containers without GPUs are not touched.
  const json plain = pod_with_containers(5000, json::object());
  EXPECT_EQ(response_of(webhook_->post("/mutate", admission_review(plain).dump())),
            json({{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"}, {"allowed", true}}));
}

// /validate denies with `message`; /mutate allows without a patch.
void expect_denied_not_patched(WebhookProcess& webhook, const json& pod, const std::string& message) {
  const json validated = response_of(webhook.post("/validate", admission_review(pod).dump()));
  EXPECT_EQ(validated["allowed"], false);
  EXPECT_EQ(validated["status"]["code"], 403);
  const std::string found = validated["status"].value("message", "");
  EXPECT_TRUE(contains(found, message)) << "missing \"" << message << "\" in: " << found;
  const json mutated = response_of(webhook.post("/mutate", admission_review(pod).dump()));
  EXPECT_EQ(mutated["allowed"], true);
  EXPECT_FALSE(mutated.contains("patch")) << mutated;
}

TEST_F(BadInputTest, OverflowingOrNegativeQuantitiesAreDeniedNamingTheField) {
  auto pod = [](json limits) { return gpu_pod("train-x", {{"limits", std::move(limits)}}); };
  expect_denied_not_patched(*webhook_, pod({{"memory", "99999999999999999999999Ei"}, {"nvidia.com/gpu", "4"}}),
                            "pod team-a/train-x: spec.containers[0].resources.limits.memory quantity "
                            "\"99999999999999999999999Ei\": exceeds the maximum magnitude of 9223372036854775807 "
                            "(2^63-1) units");
  expect_denied_not_patched(*webhook_, pod({{"memory", 1e300}, {"nvidia.com/gpu", "4"}}),
                            "spec.containers[0].resources.limits.memory quantity \"1e+300\": exceeds the maximum");
  expect_denied_not_patched(*webhook_, pod({{"memory", "-192Gi"}, {"nvidia.com/gpu", "4"}}),
                            "pod team-a/train-x: spec.containers[0].resources.limits.memory must not be "
                            "negative, found -192Gi");
  expect_denied_not_patched(*webhook_, pod({{"nvidia.com/gpu", -4}}),
                            "spec.containers[0].resources.limits.nvidia.com/gpu must not be negative, found -4");
  expect_denied_not_patched(*webhook_, pod({{"nvidia.com/gpu", "9223372036854775807"}}),
                            "pod team-a/train-x: spec.containers[0].resources nvidia.com/gpu asks for "
                            "9223372036854775807 GPUs, more than any node has");
  // Each container within bounds, the sum not: 300 x 2^20 GPUs were sized
  // to a memory of 2^63-1 bytes (saturated) and patched.
  expect_denied_not_patched(*webhook_, pod_with_containers(300, {{"limits", {{"nvidia.com/gpu", "1048576"}}}}),
                            "pod team-a/many: its containers ask for 314572800 GPUs together, more than any node has");
  // A JSON number beyond a double is not JSON nlohmann reads.
  std::string review_text = admission_review(pod({{"nvidia.com/gpu", 4}})).dump();
  auto huge_number =
      webhook_->post("/mutate", replaced(review_text, "\"nvidia.com/gpu\":4", "\"nvidia.com/gpu\":1e999"));
  EXPECT_EQ(huge_number->status, 400);
  EXPECT_TRUE(contains(error_of(huge_number), "request body is not valid JSON: ")) << huge_number->body;
  EXPECT_TRUE(contains(error_of(huge_number), "number overflow")) << huge_number->body;
}

TEST_F(BadInputTest, FractionalGpuCountIsDenied) {
  expect_denied_not_patched(*webhook_, gpu_pod("train-x", {{"limits", {{"nvidia.com/gpu", "0.5"}}}}),
                            "pod team-a/train-x: spec.containers[0].resources nvidia.com/gpu must be a whole "
                            "number of GPUs, found 500m");
  expect_denied_not_patched(*webhook_, gpu_pod("train-x", {{"limits", {{"nvidia.com/gpu", 1.5}}}}),
                            "nvidia.com/gpu must be a whole number of GPUs, found 1500m");
}

TEST_F(BadInputTest, GpuRequestDifferentFromLimitIsDenied) {
  expect_denied_not_patched(*webhook_,
                            gpu_pod("train-x", {{"requests", {{"nvidia.com/gpu", "2"}}},
                                                {"limits", {{"memory", "192Gi"}, {"nvidia.com/gpu", "4"}}}}),
                            "pod team-a/train-x: spec.containers[0].resources nvidia.com/gpu request 2 and limit "
                            "4 differ; GPUs are not overcommitted: set both to the same number");
}

TEST_F(BadInputTest, DuplicateKeysAre400NamingTheKeyAndWhere) {
  const std::string review_text = admission_review(kFourGpuPod).dump();
  // Which "memory" wins would be a guess; the API server never sends two.
  auto in_limits = webhook_->post(
      "/validate", replaced(review_text, "\"memory\":\"64Gi\"", "\"memory\":\"64Gi\",\"memory\":\"192Gi\""));
  EXPECT_EQ(in_limits->status, 400);
  EXPECT_EQ(error_of(in_limits),
            "request body repeats key \"memory\" in request.object.spec.containers[0].resources.limits");
  auto at_top = webhook_->post("/mutate", with_member_first(review_text, "kind", "\"AdmissionReview\""));
  EXPECT_EQ(at_top->status, 400);
  EXPECT_EQ(error_of(at_top), "request body repeats key \"kind\" in the top level");
}

TEST_F(BadInputTest, InvalidUtf8Is400AndNoAnswerIsInvalidJson) {
  const std::string review_text = admission_review(kFourGpuPod).dump();
  for (const std::string& bad : {std::string("train\xff"
                                             "er"),
                                 std::string("train\xc3"), std::string("\\ud800")}) {
    auto result = webhook_->post("/mutate", replaced(review_text, "\"trainer\"", "\"" + bad + "\""));
    EXPECT_EQ(result->status, 400);
    const std::string error = error_of(result);
    EXPECT_TRUE(
        error.starts_with("request body is not valid JSON: [json.exception.parse_error.101] parse error "
                          "at line 1, column "))
        << error;
  }
  // Bytes that are not UTF-8 in a header or the path are quoted as \xff
  // (in_quotes): GET /%FF killed the server (an exception escaping the
  // error handler), and such a Content-Type got a 500.
  RawClient path(webhook_->port());
  path.handshake(webhook_->ca_file());
  path.send("GET /%FF HTTP/1.1\r\nHost: gpu-sizer\r\nConnection: close\r\n\r\n");
  const std::string not_found = path.receive(seconds(30)).bytes;
  EXPECT_EQ(not_found.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << not_found;
  EXPECT_TRUE(contains(not_found, "{\"error\":\"no route GET /\\\\xff (use POST /mutate")) << not_found;

  RawClient header(webhook_->port());
  header.handshake(webhook_->ca_file());
  header.send(
      "POST /mutate HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: text/\xff\r\nContent-Length: 2\r\n"
      "Connection: close\r\n\r\n{}");
  const std::string unsupported = header.receive(seconds(30)).bytes;
  EXPECT_EQ(unsupported.rfind("HTTP/1.1 415 Unsupported Media Type\r\n", 0), 0u) << unsupported;
  EXPECT_TRUE(contains(unsupported, "found \\\"text/\\\\xff\\\"\"}")) << unsupported;
}

TEST_F(BadInputTest, UnknownPathIs404NamingTheRoutes) {
  auto unknown = webhook_->client()->Get("/mutate/x");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(error_of(unknown), "no route GET /mutate/x (use POST /mutate, POST /validate, GET /healthz, GET /readyz)");
}

// The transport rows: each starts its own server, with short timeouts.

TEST(BadInputTransport, PlainHttpOnTheTlsPortIsClosedAndNotLogged) {
  WebhookProcess webhook;
  expect_serves_a_normal_review(webhook);
  ASSERT_TRUE(log_shows(webhook, "\"msg\":\"review\""));
  const std::string log_before = webhook.stderr_text();
  RawClient plain(webhook.port());
  plain.send(
      "POST /mutate HTTP/1.1\r\nHost: gpu-sizer\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  const RawClient::Received received = plain.receive(seconds(30));
  EXPECT_TRUE(received.closed);
  EXPECT_FALSE(contains(received.bytes, "HTTP/")) << "no HTTP answer in plain text";
  expect_serves_a_normal_review(webhook);
  // Only the normal review was logged since (review lines are written
  // within a second: log.h).
  const std::string logged = log_past(webhook, log_before.size(), "\"msg\":\"review\"");
  EXPECT_EQ(std::count(logged.begin(), logged.end(), '\n'), 1) << logged;
  EXPECT_TRUE(contains(logged, "\"msg\":\"review\"")) << logged;
}

TEST(BadInputTransport, SlowClientsAreCutAndOthersKeepBeingServed) {
  WebhookProcess webhook({"--threads", "4", "--read-timeout", "2", "--keep-alive-timeout", "1"});
  // Three of the four threads: two clients send a request's headers one
  // byte a second after their handshake, one its TLS ClientHello.
  RawClient headers_a(webhook.port()), headers_b(webhook.port()), hello(webhook.port());
  headers_a.handshake(webhook.ca_file());
  headers_b.handshake(webhook.ca_file());
  std::latch started(3);
  Trickle a, b, h;
  std::thread ta([&] { a = trickle(headers_a, kSlowRequest, started); });
  std::thread tb([&] { b = trickle(headers_b, kSlowRequest, started); });
  std::thread th([&] { h = trickle(hello, RawClient::client_hello(), started); });
  started.wait();
  for (int i = 0; i < 5; ++i) expect_serves_a_normal_review(webhook);
  ta.join();
  tb.join();
  th.join();
  // Each was closed once --keep-alive-timeout + --read-timeout (3 s) had
  // passed without a whole request; at a byte a second, far from done.
  for (const Trickle* t : {&a, &b, &h}) {
    EXPECT_TRUE(t->cut) << "sent " << t->sent << " bytes in " << t->seconds << " s without being closed";
    EXPECT_FALSE(t->answered);
    EXPECT_LT(t->sent, 60u);
  }
  EXPECT_TRUE(log_shows(webhook, kCutLine));
  expect_serves_a_normal_review(webhook);
}

TEST(BadInputTransport, SlowClientsHoldingEveryThreadDelayOthersOnlyUnderHttplib) {
  // cpp-httplib serves one connection per thread: with --threads slow
  // clients, a new connection waits in the queue until one is cut (3 s
  // here). The asio transport's loops wait for no client: it is answered
  // at once.
  WebhookProcess webhook({"--threads", "2", "--read-timeout", "2", "--keep-alive-timeout", "1"});
  RawClient first(webhook.port()), second(webhook.port());
  first.handshake(webhook.ca_file());
  second.handshake(webhook.ca_file());
  std::latch started(2);
  Trickle one, two;
  std::thread t1([&] { one = trickle(first, kSlowRequest, started); });
  std::thread t2([&] { two = trickle(second, kSlowRequest, started); });
  started.wait();
  const auto asked = Clock::now();
  expect_serves_a_normal_review(webhook, 30);
  const double waited = std::chrono::duration<double>(Clock::now() - asked).count();
  t1.join();
  t2.join();
  EXPECT_TRUE(one.cut && two.cut);
  EXPECT_TRUE(log_shows(webhook, kCutLine));
  if (test_transport() == "httplib") {
    EXPECT_GT(waited, 1.5) << "answered before a slow client was cut";
  } else {
    EXPECT_LT(waited, 1.5) << "waited for a slow client to be cut";
  }
  ::testing::Test::RecordProperty("normal_review_waited_seconds", std::to_string(waited));
  std::cout << "a normal review waited " << waited << " s with every thread's connection held by a slow client\n";
}

TEST(BadInputTransport, ClientsThatNeverSendAreClosedAndOthersKeepBeingServed) {
  WebhookProcess webhook({"--threads", "4", "--read-timeout", "2", "--keep-alive-timeout", "1"});
  const auto opened = Clock::now();
  RawClient tcp_only(webhook.port());
  RawClient after_handshake(webhook.port());
  after_handshake.handshake(webhook.ca_file());
  for (int i = 0; i < 5; ++i) expect_serves_a_normal_review(webhook);
  // cpp-httplib's handshake waits --read-timeout for bytes, asio's gives
  // the handshake and first request keep-alive + read timeout; an open
  // connection waits --keep-alive-timeout for its next request.
  const RawClient::Received silent_tcp = tcp_only.receive(seconds(30));
  const RawClient::Received silent_tls = after_handshake.receive(seconds(30));
  EXPECT_TRUE(silent_tcp.closed);
  EXPECT_TRUE(silent_tls.closed);
  EXPECT_EQ(silent_tcp.bytes, "");
  EXPECT_EQ(silent_tls.bytes, "");
  std::cout << "silent clients closed within " << std::chrono::duration<double>(Clock::now() - opened).count()
            << " s\n";
  expect_serves_a_normal_review(webhook);
}

}  // namespace
}  // namespace gpusizer::testing::bad_input_test
