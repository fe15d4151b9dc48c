// The answers both transports give (webhook_routes.h), and how the asio
// transport sizes itself to the CPUs it may use (server.h).
#include "gpusizer/server/webhook_routes.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sched.h>

#include "gpusizer/server/log.h"
#include "gpusizer/server/server.h"
#include "support/captured_stderr.h"
#include "support/review_support.h"

namespace gpusizer::webhook_routes_test {
namespace {

using testing::admission_review;
using testing::gpu_pod;

class WebhookRoutesTest : public ::testing::Test {
 protected:
  WebhookRoutes routes(bool require_client_certificate = false) {
    return WebhookRoutes(
        WebhookState{*policy_, metrics_, counters_, decisions_, stopping_, require_client_certificate, 8u << 20});
  }

  std::unique_ptr<PolicyStore> policy_ = std::move(PolicyStore::open("").value());
  Metrics metrics_{"test", 100};
  StatusCounters counters_;
  RecentDecisions decisions_;
  std::atomic<bool> stopping_{false};
};

const std::string kReview =
    admission_review(gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}})).dump();

TEST_F(WebhookRoutesTest, ReviewsAreAnsweredCountedAndListed) {
  const HttpAnswer answer = routes().answer({"POST", "/mutate", "application/json", false, kReview});
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, "application/json");
  EXPECT_NE(answer.body.find("\"patch\":"), std::string::npos) << answer.body;
  EXPECT_FALSE(answer.close);
  EXPECT_EQ(decisions_.total_added(), 1u);
  EXPECT_NE(metrics_.render().find("decision=\"mutated\""), std::string::npos);
}

TEST_F(WebhookRoutesTest, RefusedReviewsNameWhatToChangeAndAreCounted) {
  const HttpAnswer text = routes().answer({"POST", "/validate", "text/plain", false, kReview});
  EXPECT_EQ(text.status, 415);
  EXPECT_EQ(text.body, "{\"error\":\"Content-Type must be application/json, found \\\"text/plain\\\"\"}");
  const HttpAnswer anonymous = routes(true).answer({"POST", "/mutate", "application/json", false, kReview});
  EXPECT_EQ(anonymous.status, 403);
  EXPECT_NE(anonymous.body.find("a client certificate signed by --client-ca is required for /mutate"),
            std::string::npos);
  EXPECT_EQ(routes(true).answer({"POST", "/mutate", "application/json", true, kReview}).status, 200);
  EXPECT_EQ(decisions_.total_added(), 3u);
}

// The last review line the routes logged, whole, once the batch is written.
std::string review_line_logged(testing::CapturedStderr& stderr_pipe) {
  log_event(spdlog::level::info, "after");  // writes the review lines' batch before it
  const std::string written = stderr_pipe.written();
  const auto at = written.rfind("review");
  if (at == std::string::npos) return "no review line in: " + written;
  const auto begin = written.rfind('\n', at);
  const auto start = begin == std::string::npos ? 0 : begin + 1;
  return written.substr(start, written.find('\n', at) - start);
}

TEST_F(WebhookRoutesTest, EachReviewIsLoggedWithWhoWhatAndTheDecision) {
  testing::CapturedStderr stderr_pipe;
  configure_logging(LogFormat::kJson, spdlog::level::info, std::chrono::hours(1));
  stderr_pipe.written();  // what an earlier configuration's batch held
  ASSERT_EQ(routes().answer({"POST", "/mutate", "application/json", false, kReview}).status, 200);
  const std::string line = review_line_logged(stderr_pipe);
  const nlohmann::json logged = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(logged.is_object()) << line;
  EXPECT_EQ(logged["msg"], "review");
  EXPECT_EQ(logged["level"], "info");
  EXPECT_EQ(logged["endpoint"], "mutate");
  EXPECT_EQ(logged["decision"], "mutated");
  EXPECT_EQ(logged["kind"], "Pod");
  EXPECT_EQ(logged["operation"], "CREATE");
  EXPECT_EQ(logged["object"], "team-a/train-x");
  EXPECT_EQ(logged["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(logged["dry_run"], false);
  EXPECT_TRUE(logged["duration_us"].is_number_integer()) << line;
  ASSERT_TRUE(logged["changes"].is_array()) << line;
  EXPECT_NE(logged["changes"][0].get<std::string>().find("memory"), std::string::npos) << line;
  EXPECT_FALSE(logged.contains("error")) << line;

  // In text, the same fields as key=value in sorted order.
  configure_logging(LogFormat::kText, spdlog::level::info, std::chrono::hours(1));
  stderr_pipe.written();
  const std::string refused = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":7})";
  ASSERT_EQ(routes().answer({"POST", "/validate", "application/json", false, refused}).status, 400);
  const std::string text = review_line_logged(stderr_pipe);
  EXPECT_NE(text.find("[warning] review decision=error dry_run=false duration_us="), std::string::npos) << text;
  EXPECT_NE(text.find(" endpoint=validate error=\""), std::string::npos) << text;
  EXPECT_NE(text.find("\" error_code="), std::string::npos) << text;
}

TEST_F(WebhookRoutesTest, ProbesAndUnknownRoutes) {
  EXPECT_EQ(routes().answer({"GET", "/healthz", "", false, ""}).body, "ok\n");
  EXPECT_EQ(routes().answer({"HEAD", "/readyz", "", false, ""}).status, 200);
  stopping_ = true;
  const HttpAnswer stopping = routes().answer({"GET", "/readyz", "", false, ""});
  EXPECT_EQ(stopping.status, 503);
  EXPECT_EQ(routes().answer({"GET", "/healthz", "", false, ""}).status, 200) << "alive while stopping";
  const HttpAnswer wrong_method = routes().answer({"GET", "/mutate", "", false, ""});
  EXPECT_EQ(wrong_method.status, 404);
  EXPECT_EQ(wrong_method.body,
            "{\"error\":\"no route GET /mutate (use POST /mutate, POST /validate, GET /healthz, GET /readyz)\"}");
}

TEST_F(WebhookRoutesTest, RefusalsBeforeTheBodyCloseTheConnection) {
  const HttpAnswer too_long = routes().body_too_large();
  EXPECT_EQ(too_long.status, 413);
  EXPECT_TRUE(too_long.close);
  EXPECT_EQ(too_long.body, "{\"error\":\"request body exceeds the size limit of 8388608 bytes (--max-body-bytes)\"}");
  EXPECT_EQ(routes().length_required().status, 411);
  EXPECT_TRUE(routes().length_required().close);
  EXPECT_TRUE(needs_length("POST", false, false));
  EXPECT_TRUE(needs_length("POST", true, true)) << "chunked, whatever the length says";
  EXPECT_TRUE(needs_length("GET", false, true));
  EXPECT_FALSE(needs_length("POST", true, false));
  EXPECT_FALSE(needs_length("GET", false, false));
}

TEST(DecodedPath, DropsTheQueryAndDecodesPercentEscapes) {
  EXPECT_EQ(decoded_path("/mutate?timeout=3s"), "/mutate");
  EXPECT_EQ(decoded_path("/%6Dutate"), "/mutate");
  EXPECT_EQ(decoded_path("/%FF"), "/\xff");
  EXPECT_EQ(decoded_path("/100%"), "/100%");
  EXPECT_EQ(decoded_path("/%zz%4"), "/%zz%4");
  EXPECT_EQ(decoded_path(""), "");
}

TEST(AvailableCpus, CgroupLimitsRoundUpAndNoLimitIsNothing) {
  EXPECT_EQ(cpus_of_cgroup_limit("max 100000"), std::nullopt);
  EXPECT_EQ(cpus_of_cgroup_limit("200000 100000"), 2);
  EXPECT_EQ(cpus_of_cgroup_limit("150000 100000"), 2);
  EXPECT_EQ(cpus_of_cgroup_limit("50000 100000"), 1);
  EXPECT_EQ(cpus_of_cgroup_limit(""), std::nullopt);
  EXPECT_EQ(cpus_of_cgroup_limit("0 100000"), std::nullopt);
}

TEST(AvailableCpus, NeverMoreThanTheAffinityMaskAllows) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_GE(available_cpus(), 1);
  EXPECT_LE(available_cpus(), CPU_COUNT(&set));
}

}  // namespace
}  // namespace gpusizer::webhook_routes_test
