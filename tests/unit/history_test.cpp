// History (docs/history.md): the policy block, the advice's arithmetic,
// Prometheus answers joined into a snapshot, the history rule through
// handle_review (stamps, raises, warnings), and the report's renderings.
// The same against a real Prometheus: tests/integration/history_prometheus_test.cpp.

#include "gpusizer/sizing/history.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/history/prometheus_history.h"
#include "gpusizer/history/report.h"
#include "gpusizer/sizing/policy.h"
#include "support/handle_review_support.h"
#include "support/nodes_support.h"
#include "support/review_support.h"

namespace gpusizer::history_test {
namespace {

using nlohmann::json;

constexpr int64_t kGi = int64_t{1} << 30;

Policy policy_from(const std::string& yaml) {
  auto policy = parse_policy(yaml, "test");
  if (!policy) throw std::runtime_error(policy.error());
  return std::move(policy).value();
}

Quantity gib(int64_t n) { return Quantity::from_bytes(n * kGi); }

RunUsage run(const std::string& name, int64_t peak_gib, int64_t limit_gib, bool oom) {
  return {name, name + "-pod", gib(peak_gib), gib(limit_gib), gib(limit_gib), oom};
}

// A container's history as join_history totals it.
ContainerHistory history_of(std::vector<RunUsage> runs) {
  ContainerHistory history;
  history.runs = std::move(runs);
  for (const RunUsage& each : history.runs) {
    history.peak_memory = std::max(history.peak_memory, each.peak_memory);
    history.memory_request = each.memory_request;
    history.memory_limit = each.memory_limit;
    if (each.oom_killed) {
      ++history.oom_kills;
      history.oom_limit = each.memory_limit;
    }
  }
  return history;
}

// ---- The policy block --------------------------------------------------------

TEST(HistoryPolicy, DefaultIsOffWithTheVpaBump) {
  const HistoryPolicy& history = default_policy().rule_settings.get<HistoryPolicy>();
  EXPECT_EQ(history.mode, HistoryPolicy::Mode::kOff);
  EXPECT_EQ(history.bump_ratio, 1200);
  EXPECT_EQ(history.bump_minimum, Quantity::from_bytes(int64_t{100} << 20));
  EXPECT_EQ(history.window, "14d");
  EXPECT_EQ(history.window_seconds, 14 * 86400);
  EXPECT_EQ(history.series.at("memory"), "container_memory_working_set_bytes");
}

TEST(HistoryPolicy, ReadsAFileOverTheDefault) {
  const Policy policy = policy_from("history:\n  mode: raise\n  window: 7d\n  series: {memory: my_memory}\n");
  const HistoryPolicy& history = policy.rule_settings.get<HistoryPolicy>();
  EXPECT_EQ(history.mode, HistoryPolicy::Mode::kRaise);
  EXPECT_EQ(history.window_seconds, 7 * 86400);
  EXPECT_EQ(history.series.at("memory"), "my_memory");
  EXPECT_EQ(history.series.at("cpu"), "container_cpu_usage_seconds_total");  // kept
}

TEST(HistoryPolicy, RefusesWhatCannotBeQueriedNamingTheField) {
  for (const auto& [yaml, expected] : std::vector<std::pair<std::string, std::string>>{
           {"history: {mode: always}", "history.mode"},
           {"history: {window: 14 days}", "history.window"},
           {"history: {window: 0d}", "history.window"},
           {"history: {bumpRatio: 0.5}", "history.bumpRatio"},
           {"history: {series: {memory: 'x{job=\"a\"}'}}", "history.series.memory"},
           {"history: {series: {gpu: DCGM}}", "history.series"},
       }) {
    const auto policy = parse_policy(yaml, "test");
    ASSERT_FALSE(policy.ok()) << yaml;
    EXPECT_NE(policy.error().find(expected), std::string::npos) << policy.error();
  }
}

TEST(HistoryPolicy, WindowsAreWholeUnitsAsPromqlWritesThem) {
  EXPECT_EQ(window_seconds("90m").value(), 5400);
  EXPECT_EQ(window_seconds("36h").value(), 36 * 3600);
  EXPECT_EQ(window_seconds("2w").value(), 14 * 86400);
  for (const char* bad : {"", "d", "14", "1.5d", "-1d", "14D", "999999d"})
    EXPECT_FALSE(window_seconds(bad).ok()) << bad;
}

// ---- The advice -----------------------------------------------------------------

TEST(MemoryAdvice, AfterOomKillsBumpsTheLimitTheyWereKilledAt) {
  // The last scrape before a kill saw 61Gi; the cgroup was full at 64Gi.
  const MemoryAdvice advice =
      memory_advice(default_policy().rule_settings.get<HistoryPolicy>(),
                    history_of({run("a", 61, 64, true), run("b", 40, 64, false), run("c", 60, 64, true)}));
  EXPECT_EQ(advice.kind, MemoryAdvice::Kind::kOomKilled);
  // max(64Gi x 1.2, 64Gi + 100Mi) = 76.8Gi, rounded up to a whole Mi.
  EXPECT_EQ(advice.recommended, Quantity::from_bytes(int64_t{78644} << 20));
  EXPECT_EQ(advice.evidence, "OOM-killed 2 times in 3 runs at 64Gi");
  EXPECT_EQ(advice.arithmetic, "max(limit 64Gi x 1.2, 64Gi + 100Mi) = 78644Mi");
}

TEST(MemoryAdvice, TheMinimumBumpWinsForSmallContainers) {
  const MemoryAdvice advice =
      memory_advice(default_policy().rule_settings.get<HistoryPolicy>(),
                    history_of({{"a", "a-pod", Quantity::from_bytes(int64_t{256} << 20), std::nullopt,
                                 Quantity::from_bytes(int64_t{256} << 20), true}}));
  // max(256Mi x 1.2 = 307.2Mi -> 308Mi, 256Mi + 100Mi = 356Mi)
  EXPECT_EQ(advice.recommended, Quantity::from_bytes(int64_t{356} << 20));
}

TEST(MemoryAdvice, NearTheLimitWarnsFarBelowTheRequestRecommendsLowering) {
  const HistoryPolicy& policy = default_policy().rule_settings.get<HistoryPolicy>();
  const MemoryAdvice near = memory_advice(policy, history_of({run("a", 180, 192, false)}));
  EXPECT_EQ(near.kind, MemoryAdvice::Kind::kNearLimit);
  EXPECT_EQ(near.evidence, "peaked at 180Gi of its 192Gi limit in 1 run");
  const MemoryAdvice lower = memory_advice(policy, history_of({run("a", 20, 192, false), run("b", 18, 192, false)}));
  EXPECT_EQ(lower.kind, MemoryAdvice::Kind::kOversized);
  EXPECT_EQ(lower.recommended, gib(24));
  const MemoryAdvice fits = memory_advice(policy, history_of({run("a", 150, 192, false)}));
  EXPECT_EQ(fits.kind, MemoryAdvice::Kind::kFits);
  EXPECT_EQ(memory_advice(policy, ContainerHistory{}).kind, MemoryAdvice::Kind::kNone);
}

// ---- Prometheus answers -----------------------------------------------------------

std::string vector_answer(const json& samples) {
  return json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", samples}}}}.dump();
}

json sample(json labels, const std::string& value) { return {{"metric", labels}, {"value", {1700000000.5, value}}}; }

TEST(PrometheusAnswers, ParsesAVectorAndSaysWhatIsWrongWithAnythingElse) {
  const auto parsed =
      parse_vector_answer(vector_answer(json::array({sample({{"pod", "p"}}, "12.5"), sample(json::object(), "NaN")})));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  ASSERT_EQ(parsed.value().size(), 2u);
  EXPECT_EQ(parsed.value()[0].labels.at("pod"), "p");
  EXPECT_EQ(parsed.value()[0].value, 12.5);
  for (const auto& [body, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"status":"error","errorType":"bad_data","error":"parse error at char 4"})",
            "bad_data: parse error at char 4"},
           {"<html>proxy error</html>", "not JSON"},
           {R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "not an instant vector"},
           {vector_answer(json::array({sample(json::object(), "twelve")})), "\"twelve\" is not a number"},
           {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})", "a sample is not"},
       }) {
    const auto failed = parse_vector_answer(body);
    ASSERT_FALSE(failed.ok()) << body;
    EXPECT_NE(failed.error().find(expected), std::string::npos) << failed.error();
  }
}

TEST(PrometheusAnswers, QueriesUseThePolicysSeriesAndWindow) {
  HistoryPolicy policy =
      policy_from("history: {window: 7d, series: {memory: renamed_ws}}").rule_settings.get<HistoryPolicy>();
  const auto queries = history_queries(policy);
  ASSERT_EQ(queries.size(), 11u);
  EXPECT_EQ(queries[0].promql,
            "max by (namespace, pod, annotation_gpu_sizer_io_workload) "
            "(max_over_time(kube_pod_annotations{annotation_gpu_sizer_io_workload!=\"\"}[7d]))");
  EXPECT_NE(queries[1].promql.find("max_over_time(kube_pod_owner{owner_is_controller=\"true\"}[7d])"),
            std::string::npos)
      << queries[1].promql;
  EXPECT_NE(queries[2].promql.find("max_over_time(renamed_ws{container!=\"\",container!=\"POD\"}[7d])"),
            std::string::npos)
      << queries[2].promql;
  EXPECT_NE(queries[2].promql.find(" and on (namespace, pod) "), std::string::npos);
}

// Answers in history_queries() order: stamped pods, pod owners, memory peak, OOM kills,
// memory request, memory limit, CPU p95, CPU request, GPU memory used,
// capacity, restarts.
std::vector<std::vector<Sample>> answers_for_two_runs() {
  const auto at = [](const std::string& pod, double value, std::map<std::string, std::string, std::less<>> more = {}) {
    Sample s{{{"namespace", "ml"}, {"pod", pod}, {"container", "trainer"}}, value};
    s.labels.insert(more.begin(), more.end());
    return s;
  };
  const std::string key = "PyTorchJob/llama-ft gpus=4 profile=train";
  return {
      {{{{"namespace", "ml"}, {"pod", "llama-a-worker-0"}, {"annotation_gpu_sizer_io_workload", key}}, 1},
       {{{"namespace", "ml"}, {"pod", "llama-b-worker-0"}, {"annotation_gpu_sizer_io_workload", key}}, 1}},
      {{{{"namespace", "ml"}, {"pod", "llama-a-worker-0"}, {"owner_name", "llama-a"}}, 1},
       {{{"namespace", "ml"}, {"pod", "not-stamped"}, {"owner_name", "other"}}, 1}},
      {at("llama-a-worker-0", 190.0 * kGi), at("llama-b-worker-0", 150.0 * kGi), at("unstamped", 1e12)},
      {at("llama-a-worker-0", 1)},
      {at("llama-a-worker-0", 192.0 * kGi), at("llama-b-worker-0", 192.0 * kGi)},
      {at("llama-a-worker-0", 192.0 * kGi), at("llama-b-worker-0", 192.0 * kGi)},
      {at("llama-a-worker-0", 3.5)},
      {at("llama-a-worker-0", 8)},
      {at("llama-a-worker-0", 70000)},
      {at("llama-a-worker-0", 81559)},
      {at("llama-a-worker-0", 0), at("llama-b-worker-0", 2)},
  };
}

TEST(PrometheusAnswers, JoinsEachContainerRunOnTheStampedPods) {
  const HistorySnapshot snapshot =
      join_history(default_policy().rule_settings.get<HistoryPolicy>(), answers_for_two_runs(), 1700000000);
  ASSERT_EQ(snapshot.containers.size(), 1u);
  const ContainerHistory* history = snapshot.find({"ml", "PyTorchJob/llama-ft gpus=4 profile=train", "trainer"});
  ASSERT_NE(history, nullptr);
  ASSERT_EQ(history->runs.size(), 2u);
  EXPECT_EQ(history->run_count(), 2);
  EXPECT_EQ(history->runs[0].run, "llama-a");
  EXPECT_EQ(history->runs[1].run, "llama-b-worker-0");  // no controller: the pod
  EXPECT_EQ(history->oom_kills, 1);
  EXPECT_EQ(history->peak_memory, gib(190));
  EXPECT_EQ(history->oom_limit, gib(192));
  EXPECT_EQ(history->cpu_p95, Quantity::from_milli(3500));
  EXPECT_EQ(history->gpu_memory_peak_mib, 70000);
  EXPECT_EQ(history->gpu_memory_capacity_mib, 81559);
  EXPECT_EQ(history->restarts, 2);
}

// ---- The rule, through handle_review -------------------------------------------------

HistorySnapshot llama_history() {
  return join_history(default_policy().rule_settings.get<HistoryPolicy>(), answers_for_two_runs(), 1700000000);
}

// The next run of the PyTorchJob: a worker pod its operator makes.
json next_llama_pod(const std::string& memory = "64Gi") {
  json pod = review_test::pod("4", "32", memory);
  pod["metadata"] = {{"name", "llama-c-worker-0"},
                     {"namespace", "ml"},
                     {"ownerReferences",
                      {{{"apiVersion", "kubeflow.org/v1"},
                        {"kind", "PyTorchJob"},
                        {"name", "llama-ft-b9zq4"},
                        {"controller", true}}}}};
  pod["spec"]["containers"][0]["name"] = "trainer";
  return pod;
}

json answer(const Policy& policy, Endpoint endpoint, const json& pod, const HistorySnapshot* history,
            const NodeInventory* nodes = nullptr) {
  const HttpReply reply = handle_review(policy, endpoint, review_test::review(pod, "CREATE", "ml").dump(),
                                        ClusterView{nodes, nullptr, history});
  return json::parse(reply.body);
}

// What the default train table gives 4 GPUs (192Gi) killed a run: history
// asks max(192Gi x 1.2, 192Gi + 100Mi) = 235930Mi.
const Quantity kRecommended = Quantity::from_bytes(int64_t{235930} << 20);

TEST(HistoryRule, OffChangesNothingNotEvenAnAnnotation) {
  const HistorySnapshot history = llama_history();
  const json patched = testing::apply_response(next_llama_pod(),
                                               answer(default_policy(), Endpoint::kMutate, next_llama_pod(), &history));
  EXPECT_FALSE(patched["metadata"]["annotations"].contains("gpu-sizer.io/workload")) << patched.dump();
  EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["requests"]["memory"], "192Gi");
}

TEST(HistoryRule, RaiseSetsTheFloorAboveWhatKilledTheLastRunsAndStampsTheKey) {
  const HistorySnapshot history = llama_history();
  const Policy policy = policy_from("history: {mode: raise}\n");
  const json patched =
      testing::apply_response(next_llama_pod(), answer(policy, Endpoint::kMutate, next_llama_pod(), &history));
  const json& resources = patched["spec"]["containers"][0]["resources"];
  EXPECT_EQ(resources["requests"]["memory"], kRecommended.to_string()) << resources.dump();
  EXPECT_EQ(resources["limits"]["memory"], kRecommended.to_string()) << resources.dump();
  EXPECT_EQ(patched["metadata"]["annotations"]["gpu-sizer.io/workload"], "PyTorchJob/llama-ft gpus=4 profile=train");
  // The raised pod passes; the pod as submitted is told why.
  EXPECT_TRUE(answer(policy, Endpoint::kValidate, patched, &history)["response"]["allowed"].get<bool>());
  const json told = answer(policy, Endpoint::kValidate, next_llama_pod(), &history);
  const std::string warnings = told["response"].value("warnings", json::array()).dump();
  EXPECT_NE(warnings.find("OOM-killed 1 time in 2 runs at 192Gi"), std::string::npos) << warnings;
}

TEST(HistoryRule, NodeCapsStillApplyToTheHistoryFloor) {
  const HistorySnapshot history = llama_history();
  const Policy policy = policy_from("history: {mode: raise}\n");
  // A 4-GPU node with 220Gi allocatable: 235930Mi does not fit, 219Gi does
  // (the policy's nodeCaps reserve keeps 1Gi for its DaemonSets).
  const auto nodes = testing::one_node_inventory("gpu-box", 4, "64", "220Gi", "1Ti");
  const json patched = testing::apply_response(
      next_llama_pod(), answer(policy, Endpoint::kMutate, next_llama_pod(), &history, nodes.get()));
  EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["requests"]["memory"], "219Gi") << patched.dump();
}

TEST(HistoryRule, AnotherWorkloadOrGpuCountHasNoHistory) {
  const HistorySnapshot history = llama_history();
  const Policy policy = policy_from("history: {mode: raise}\n");
  json other = next_llama_pod();
  other["metadata"]["ownerReferences"][0]["name"] = "qwen-ft-x7k2p";
  EXPECT_EQ(
      testing::apply_response(other, answer(policy, Endpoint::kMutate, other,
                                            &history))["spec"]["containers"][0]["resources"]["requests"]["memory"],
      "192Gi");
  json two_gpus = next_llama_pod();
  two_gpus["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2";
  two_gpus["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2";
  const json patched = testing::apply_response(two_gpus, answer(policy, Endpoint::kMutate, two_gpus, &history));
  EXPECT_EQ(patched["metadata"]["annotations"]["gpu-sizer.io/workload"], "PyTorchJob/llama-ft gpus=2 profile=train");
  EXPECT_NE(patched["spec"]["containers"][0]["resources"]["requests"]["memory"], kRecommended.to_string());
}

TEST(HistoryRule, RecommendWarnsWithTheArithmeticAndRaisesNothing) {
  const HistorySnapshot history = llama_history();
  const Policy policy = policy_from("history: {mode: recommend}\n");
  const json patched =
      testing::apply_response(next_llama_pod(), answer(policy, Endpoint::kMutate, next_llama_pod(), &history));
  EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["requests"]["memory"], "192Gi");
  EXPECT_EQ(patched["metadata"]["annotations"]["gpu-sizer.io/workload"], "PyTorchJob/llama-ft gpus=4 profile=train");
  const json validated = answer(policy, Endpoint::kValidate, patched, &history);
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>());
  const std::string warnings = validated["response"].value("warnings", json::array()).dump();
  EXPECT_NE(warnings.find("memory " + kRecommended.to_string() + " recommended"), std::string::npos) << warnings;
}

TEST(HistoryRule, APeakNearTheLimitIsWarnedAboutInEitherModeAndRaisesNothing) {
  HistorySnapshot history;
  history.containers[{"ml", "PyTorchJob/llama-ft gpus=4 profile=train", "trainer"}] =
      history_of({run("llama-ft-x7k2p", 180, 192, false)});
  for (const char* mode : {"recommend", "raise"}) {
    SCOPED_TRACE(mode);
    const Policy policy = policy_from(std::string("history: {mode: ") + mode + "}\n");
    const json patched =
        testing::apply_response(next_llama_pod(), answer(policy, Endpoint::kMutate, next_llama_pod(), &history));
    EXPECT_EQ(patched["spec"]["containers"][0]["resources"]["requests"]["memory"], "192Gi");
    const std::string warnings =
        answer(policy, Endpoint::kValidate, patched, &history)["response"].value("warnings", json::array()).dump();
    EXPECT_NE(warnings.find("peaked at 180Gi of its 192Gi limit in 1 run: history recommends memory 216Gi"),
              std::string::npos)
        << warnings;
  }
}

TEST(HistoryRule, APodThatOptedOutIsNeitherStampedNorRaised) {
  const HistorySnapshot history = llama_history();
  const Policy policy = policy_from("history: {mode: raise}\n");
  json pod = next_llama_pod();
  pod["metadata"]["annotations"] = {{"gpu-sizer.io/mutate", "false"}};
  const json patched = testing::apply_response(pod, answer(policy, Endpoint::kMutate, pod, &history));
  EXPECT_EQ(patched["metadata"]["annotations"].size(), 1u) << patched.dump();
}

TEST(HistoryRule, WithoutHistoryTheTableAloneSizes) {
  const Policy with_history = policy_from("history: {mode: raise}\n");
  const json with =
      testing::apply_response(next_llama_pod(), answer(with_history, Endpoint::kMutate, next_llama_pod(), nullptr));
  const json without =
      testing::apply_response(next_llama_pod(), answer(default_policy(), Endpoint::kMutate, next_llama_pod(), nullptr));
  EXPECT_EQ(with["spec"], without["spec"]);
}

// ---- The report ----------------------------------------------------------------------------

TEST(HistoryReport, SaysWhatTheDataImpliesInEachFormat) {
  const HistoryReport report = build_report(default_policy(), llama_history());
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_TRUE(report.needs_action());
  EXPECT_EQ(report.rows[0].table_memory, gib(192));  // the default train table, 4 GPUs
  const std::string text = report_text(report);
  EXPECT_NE(text.find("raise memory to 235930Mi: OOM-killed 1 time in 2 runs at 192Gi"), std::string::npos) << text;
  const json parsed = json::parse(report_json(report));
  EXPECT_EQ(parsed["containers"][0]["oomKills"], 1);
  EXPECT_EQ(parsed["containers"][0]["recommendedMemory"], "235930Mi");
  EXPECT_EQ(parsed["containers"][0]["perRun"].size(), 2u);
  const std::string html = report_html(report);
  EXPECT_NE(html.find("<rect class=\"oom\""), std::string::npos);
  EXPECT_NE(html.find("<rect class=\"peak\""), std::string::npos);
}

TEST(HistoryReport, EscapesWhatPrometheusSaid) {
  HistorySnapshot snapshot;
  snapshot.containers[{"ns", "<script>alert(1)</script> gpus=1 profile=train", "c\"><img>"}] =
      history_of({run("<b>", 1, 2, false)});
  const std::string html = report_html(build_report(default_policy(), snapshot));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<img>"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
}

}  // namespace
}  // namespace gpusizer::history_test
