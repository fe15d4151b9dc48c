// The load test's requests (tests/load): the mix of reviews (0 to 8 GPU
// pods, a Job, a PyTorchJob; mutated, allowed and denied), each answer
// expected from handle_review in-process, and the connections that send
// the mix on a fixed schedule and compare every answer with it.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>

#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/policy.h"
#include "load/loadtest.h"
#include "support/review_support.h"

namespace gpusizer::testing {
namespace {

constexpr const char* kExpectedUid = "expected-uid";
constexpr const char* kUidMarker = "@@UID@@";

std::string body_with_uid(const Case& c, const std::string& uid) { return c.body_before_uid + uid + c.body_after_uid; }

// Compares an answer with the case's expected one; "" when it matches.
std::string difference(const Case& c, const std::string& uid, int status, const std::string& body) {
  if (status != c.expected_status)
    return "status " + std::to_string(status) + ", expected " + std::to_string(c.expected_status) + ": " +
           body.substr(0, 300);
  json answer = json::parse(body, nullptr, false);
  if (!answer.is_object()) return "answer is not a JSON object: " + body.substr(0, 300);
  json& response = answer["response"];
  if (!response.is_object() || response.value("uid", "") != uid)
    return "answer has another uid: " + body.substr(0, 300);
  response["uid"] = kExpectedUid;
  if (answer != c.expected)
    return "answer differs: " + body.substr(0, 300) + " expected " + c.expected.dump().substr(0, 300);
  return "";
}

std::unique_ptr<httplib::SSLClient> load_client(const LoadPlan& plan) {
  auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", plan.port);
  client->set_ca_cert_path(plan.ca_bundle);
  client->enable_server_certificate_verification(true);
  client->set_keep_alive(true);
  // As Go's net/http (the API server) does: without it the body, written
  // after the headers, waits for the server's delayed ACK (40 ms).
  client->set_tcp_nodelay(true);
  client->set_connection_timeout(5);
  client->set_read_timeout(10);  // the API server's webhook timeout at most
  return client;
}

}  // namespace

std::vector<Case> mixed_cases(const std::string& fixtures) {
  const json no_gpu = {{"requests", {{"cpu", "2"}, {"memory", "4Gi"}}}, {"limits", {{"memory", "4Gi"}}}};
  const json one_gpu_small = {{"limits", {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", "1"}}}};
  const json two_gpu_sized = {{"requests", {{"cpu", "16"}, {"memory", "96Gi"}, {"ephemeral-storage", "300Gi"}}},
                              {"limits", {{"cpu", "16"}, {"memory", "96Gi"}, {"nvidia.com/gpu", "2"}}}};
  const json four_gpu_small = {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}};
  const json eight_gpu_small = {{"requests", {{"cpu", "8"}, {"memory", "64Gi"}}},
                                {"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "8"}}}};
  const json eight_gpu_sized = {{"requests", {{"cpu", "64"}, {"memory", "384Gi"}, {"ephemeral-storage", "300Gi"}}},
                                {"limits", {{"cpu", "64"}, {"memory", "400Gi"}, {"nvidia.com/gpu", "8"}}}};
  const json opted_out = {{"gpu-sizer.io/mutate", "false"}};
  const json job = first_manifest_object(fixtures + "job.yaml");
  const json pytorchjob = first_manifest_object(fixtures + "pytorchjob.yaml");

  struct Spec {
    std::string name;
    Endpoint endpoint;
    Decision intended;
    json review;
  };
  const std::vector<Spec> specs = {
      {"pod 0 GPUs", Endpoint::kMutate, Decision::kAllowed, admission_review(gpu_pod("web-0", no_gpu))},
      {"pod 1 GPU undersized", Endpoint::kMutate, Decision::kMutated,
       admission_review(gpu_pod("train-1", one_gpu_small))},
      {"pod 2 GPUs sized", Endpoint::kMutate, Decision::kAllowed, admission_review(gpu_pod("train-2", two_gpu_sized))},
      {"pod 2 GPUs sized", Endpoint::kValidate, Decision::kAllowed,
       admission_review(gpu_pod("train-2", two_gpu_sized))},
      {"pod 4 GPUs undersized", Endpoint::kMutate, Decision::kMutated,
       admission_review(gpu_pod("train-4", four_gpu_small))},
      {"pod 4 GPUs undersized, dry run", Endpoint::kMutate, Decision::kMutated,
       admission_review(gpu_pod("train-4", four_gpu_small), "team-a", "CREATE", true)},
      {"pod 4 GPUs opted out", Endpoint::kValidate, Decision::kDenied,
       admission_review(gpu_pod("train-4-opt-out", four_gpu_small, opted_out))},
      {"pod 8 GPUs undersized", Endpoint::kMutate, Decision::kMutated,
       admission_review(gpu_pod("train-8", eight_gpu_small))},
      {"pod 8 GPUs sized", Endpoint::kValidate, Decision::kAllowed,
       admission_review(gpu_pod("train-8", eight_gpu_sized))},
      {"Job 2 GPUs undersized", Endpoint::kMutate, Decision::kMutated, workload_review(job)},
      {"PyTorchJob 8 GPUs undersized", Endpoint::kMutate, Decision::kMutated, workload_review(pytorchjob)},
      {"PyTorchJob 8 GPUs undersized", Endpoint::kValidate, Decision::kDenied, workload_review(pytorchjob)},
  };

  std::vector<Case> cases;
  for (const Spec& spec : specs) {
    json review = spec.review;
    review["request"]["uid"] = kUidMarker;
    const std::string body = review.dump();
    const auto marker = body.find(kUidMarker);
    Case c{spec.name,
           spec.endpoint,
           spec.intended,
           spec.endpoint == Endpoint::kMutate ? "/mutate" : "/validate",
           body.substr(0, marker),
           body.substr(marker + std::string(kUidMarker).size())};
    cases.push_back(std::move(c));
  }
  return cases;
}

// Fills each case's expected answer from the policy the server starts on,
// and checks that the other valid policy texts answer the same and that
// the invalid one is refused: otherwise the run could not tell a wrong
// answer from a policy change.
std::optional<std::string> expect_answers(std::vector<Case>& cases, const std::string& policy_path) {
  auto policy = parse_policy(valid_policy_text(0), policy_path);
  if (!policy) return "the load test's policy does not parse: " + policy.error();
  for (Case& c : cases) {
    const HttpReply reply = handle_review(policy.value(), c.endpoint, body_with_uid(c, kExpectedUid));
    if (reply.outcome.decision != c.intended) {
      return "case \"" + c.name + "\" is meant to be " + std::string(to_string(c.intended)) +
             " but the policy answers " + std::string(to_string(reply.outcome.decision)) + ": " + reply.body;
    }
    c.expected_status = reply.status;
    c.expected = json::parse(reply.body);
  }
  for (int replacement : {1, 2}) {
    auto other = parse_policy(valid_policy_text(replacement), policy_path);
    if (!other) return "replacement policy " + std::to_string(replacement) + " does not parse: " + other.error();
    for (const Case& c : cases) {
      if (json::parse(handle_review(other.value(), c.endpoint, body_with_uid(c, kExpectedUid)).body) != c.expected) {
        return "replacement policy " + std::to_string(replacement) + " answers case \"" + c.name + "\" differently";
      }
    }
  }
  if (parse_policy(invalid_policy_text(), policy_path)) return "the invalid policy text parses";
  return std::nullopt;
}

// Sends this connection's share of the load on a fixed schedule (request k
// at start + (k + index / connections) * interval): a request that is late
// leaves at once, so a slow answer does not lower the rate it is measured at.
void run_connection(const LoadPlan& plan, int index, ConnectionLog& log) {
  const auto& cases = *plan.cases;
  auto client = load_client(plan);
  const double offset = plan.interval_seconds * index / plan.connections;
  auto reconnect_at = plan.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                       plan.reconnect_seconds * (index + 1) / plan.connections));
  for (uint64_t k = 0;; ++k) {
    const auto scheduled = plan.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                            offset + static_cast<double>(k) * plan.interval_seconds));
    if (scheduled >= plan.end) break;
    std::this_thread::sleep_until(scheduled);
    auto now = Clock::now();
    if (now >= reconnect_at) {
      client->stop();
      ++log.connections_opened;
      reconnect_at =
          now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(plan.reconnect_seconds));
    }
    const uint64_t sequence = k * plan.connections + index;
    const std::size_t case_index = sequence % cases.size();
    const Case& c = cases[case_index];
    const std::string uid = "load-" + std::to_string(index) + "-" + std::to_string(k);
    const std::string body = body_with_uid(c, uid);

    const auto sent = Clock::now();
    auto result = client->Post(c.path, body, "application/json");
    const auto answered = Clock::now();

    Request request{seconds_between(plan.start, sent), seconds_between(sent, answered) * 1e3, case_index};
    log.max_lag_ms = std::max(log.max_lag_ms, seconds_between(scheduled, sent) * 1e3);
    std::string problem;
    if (!result) {
      request.result = Request::Result::kFailed;
      problem = "no answer: " + httplib::to_string(result.error());
    } else if (problem = difference(c, uid, result->status, result->body); !problem.empty()) {
      request.result = Request::Result::kWrong;
    }
    if (!problem.empty())
      log.problems.push_back({request.sent_seconds, request.result, c.name + " " + c.path + ": " + problem});
    log.requests.push_back(request);
  }
}

}  // namespace gpusizer::testing
