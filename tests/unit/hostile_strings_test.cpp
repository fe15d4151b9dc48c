// What a forged review's strings become where they are kept or read raw:
// the /status record (bounded, control and bidi characters escaped) and
// log lines (one line whatever the bytes, valid JSON in JSON format).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/server/log.h"
#include "gpusizer/server/status_page.h"
#include "support/review_support.h"

namespace gpusizer::hostile_strings_test {
namespace {

using nlohmann::json;

const std::string kNul("\0", 1);
const std::string kRlo = "\xe2\x80\xae";  // U+202E RIGHT-TO-LEFT OVERRIDE

HttpReply review(Endpoint endpoint, const json& pod, const std::string& ns, const std::string& uid = "uid-1") {
  return handle_review(default_policy(), endpoint, testing::admission_review(pod, ns, "CREATE", false, uid).dump());
}

json four_gpu_pod(const std::string& container) {
  json pod = testing::gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}},
                              {{"gpu-sizer.io/mutate", "false"}});
  pod["spec"]["containers"][0]["name"] = container;
  return pod;
}

std::size_t bytes_of(const DecisionRecord& r) {
  std::size_t total = r.kind.size() + r.operation.size() + r.object.size();
  for (const std::string& detail : r.details) total += detail.size();
  return total;
}

TEST(HostileStatusRecord, AMegabyteNamespaceIsQuotedShortEverywhere) {
  const std::string huge(4 << 20, 'n');
  const HttpReply reply = review(Endpoint::kValidate, four_gpu_pod("trainer"), huge);
  ASSERT_EQ(reply.outcome.decision, ReviewOutcome::Decision::kDenied);
  const DecisionRecord r = make_decision_record(Endpoint::kValidate, reply.outcome);
  EXPECT_EQ(r.object, "\"" + std::string(64, 'n') + "\"... (4194304 bytes)/train-x");
  EXPECT_LT(bytes_of(r), 4096u);
  // The answer names the pod the same way.
  EXPECT_NE(reply.body.find(R"(pod \")" + std::string(64, 'n') + R"(\"... (4194304 bytes)/train-x container)"),
            std::string::npos)
      << reply.body.substr(0, 300);
  EXPECT_LT(reply.body.size(), 4096u);
}

TEST(HostileStatusRecord, NulAndRightToLeftOverrideAreEscaped) {
  const HttpReply reply = review(Endpoint::kValidate, four_gpu_pod("train" + kRlo + kNul + "er"), "team" + kNul);
  const DecisionRecord r = make_decision_record(Endpoint::kValidate, reply.outcome);
  EXPECT_EQ(r.object, R"("team\u0000"/train-x)");
  ASSERT_FALSE(r.details.empty());
  EXPECT_NE(r.details[0].find(R"(container "train\u202e\u0000er")"), std::string::npos) << r.details[0];
  for (const std::string& text : {r.object, r.details[0]}) {
    EXPECT_EQ(text.find(kRlo), std::string::npos);
    EXPECT_EQ(text.find('\0'), std::string::npos);
  }
}

TEST(HostileStatusRecord, EachDetailIsBounded) {
  ReviewOutcome o;
  o.decision = ReviewOutcome::Decision::kError;
  o.problem = Problem{ProblemCode::kSyntax, "", std::string(1 << 20, 'e') + "\n"};
  o.kind = std::string(100, 'K');
  o.operation = "CREATE\n";
  const DecisionRecord r = make_decision_record(Endpoint::kMutate, o);
  ASSERT_EQ(r.details.size(), 1u);
  EXPECT_EQ(r.details[0].size(), kMaxShownMessageBytes);
  EXPECT_TRUE(r.details[0].ends_with("...")) << r.details[0].substr(1000);
  EXPECT_EQ(r.kind, "\"" + std::string(64, 'K') + "\"... (100 bytes)");
  EXPECT_EQ(r.operation, R"("CREATE\u000a")");
}

nlohmann::json review_fields(const std::string& uid) {
  return {{"uid", uid}, {"object", "team-a/train-x"}, {"changes", {"a\nb", "c"}}, {"dry_run", false}};
}

TEST(LogLine, TextFormatEscapesEveryValueSoNoneForgesALine) {
  const std::string forged = "abc\n[2026-01-01 00:00:00.000] [info] review uid=forged object=\"x\"";
  const std::string line = log_line(LogFormat::kText, "review", review_fields(forged));
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  EXPECT_EQ(line, R"(review changes="[\"a\\nb\",\"c\"]" dry_run=false object=team-a/train-x )"
                  R"(uid="abc\u000a[2026-01-01 00:00:00.000] [info] review uid=forged object=\"x\"")");
  const std::string hostile =
      log_line(LogFormat::kText, "msg\rhere", {{"k", "a\\b" + kNul + kRlo + "\xff"}, {"e", ""}});
  EXPECT_EQ(hostile, R"(msg\u000dhere e="" k="a\\b\u0000\u202e\xff")");
}

TEST(LogLine, JsonFormatIsValidJsonForAnyBytes) {
  const std::string bytes = "uid\n\"\\" + kNul + kRlo + "\xff\xc3";
  const std::string line = log_line(LogFormat::kJson, "review\xfe", review_fields(bytes));
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  const json parsed = json::parse("{" + line + "}", nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << line;
  EXPECT_EQ(parsed["msg"], "review\xef\xbf\xbd");
  EXPECT_EQ(parsed["uid"], "uid\n\"\\" + kNul + kRlo + "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(LogLine, FieldsAreWrittenInTheOrderAddedEachAsItsKind) {
  const std::vector<std::string> changes = {"a\nb", "c"};
  const auto build = [&](LogFormat format) {
    LogLine line(format, "review");
    line.add_json("bypass", R"({"name":"x","reason":"y z"})");
    line.add_strings("changes", changes);
    line.add_bool("dry_run", true);
    line.add_int("duration_us", -42);
    line.add_string("empty", "");
    line.add_string("uid", kNul + "\xff");
    return line.text();
  };
  const std::string json_line = build(LogFormat::kJson);
  EXPECT_EQ(json_line, R"("msg":"review","bypass":{"name":"x","reason":"y z"},"changes":["a\nb","c"],"dry_run":true,)"
                       R"("duration_us":-42,"empty":"","uid":"\u0000)"
                       "\xef\xbf\xbd\"");
  const json parsed = json::parse("{" + json_line + "}", nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json_line;
  EXPECT_EQ(parsed["changes"], json(changes));
  EXPECT_EQ(build(LogFormat::kText),
            R"(review bypass="{\"name\":\"x\",\"reason\":\"y z\"}" changes="[\"a\\nb\",\"c\"]" dry_run=true )"
            R"(duration_us=-42 empty="" uid="\u0000\xff")");
}

}  // namespace
}  // namespace gpusizer::hostile_strings_test
