// The handler with history on (docs/history.md): the policy's history.mode
// raise and a snapshot of 10,000 workload containers, the reviewed pod's
// among them with OOM kills, so the history rule looks up, bumps and
// raises. Compared with handler/ on the same files (micro_bench.cpp):
// docs/performance.md "History".
#include <fstream>
#include <iterator>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/history.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/base64.h"

namespace {

using gpusizer::Endpoint;
using gpusizer::HistorySnapshot;
using gpusizer::Quantity;

constexpr int kOtherContainers = 10000;

std::string read_bench_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const gpusizer::Policy& history_policy() {
  static const gpusizer::Policy policy = [] {
    auto parsed = gpusizer::parse_policy("history: {mode: raise}\n", "history bench");
    if (!parsed) throw std::runtime_error(parsed.error());
    return std::move(parsed).value();
  }();
  return policy;
}

// The JSON Patch of an answer, decoded; empty when there is none.
std::string patch_of(const gpusizer::HttpReply& reply) {
  const auto answer = nlohmann::json::parse(reply.body);
  const auto patch = gpusizer::base64_decode(answer["response"].value("patch", ""));
  return patch ? patch.value() : "";
}

// The workload key the webhook stamps on the review's pod.
std::string stamped_key(const std::string& body) {
  const std::string patch = patch_of(gpusizer::handle_review(history_policy(), Endpoint::kMutate, body));
  if (patch.empty()) return "";
  for (const auto& op : nlohmann::json::parse(patch)) {
    if (op.value("path", "").find("gpu-sizer.io~1workload") != std::string::npos) return op["value"];
  }
  return "";
}

// 10,000 other workloads' containers, and (when `known`) the review's
// pod's containers OOM-killed twice at 192Gi.
HistorySnapshot snapshot_for(const std::string& body, bool known) {
  HistorySnapshot snapshot;
  const auto review = nlohmann::json::parse(body)["request"];
  const std::string ns = review.value("namespace", "");
  const std::string key = stamped_key(body);
  const Quantity limit = Quantity::from_bytes(int64_t{192} << 30);
  gpusizer::ContainerHistory killed;
  killed.runs = {{"a", "a-0", limit, limit, limit, true}, {"b", "b-0", limit, limit, limit, true}};
  killed.oom_kills = 2;
  killed.peak_memory = limit;
  killed.memory_limit = limit;
  killed.oom_limit = limit;
  for (const auto& container : review["object"]["spec"]["containers"]) {
    if (known) snapshot.containers[{ns, key, container.value("name", "")}] = killed;
  }
  for (int i = 0; i < kOtherContainers; ++i) {
    snapshot.containers[{"team-" + std::to_string(i % 100), "Job/other-" + std::to_string(i) + " gpus=4 profile=train",
                         "trainer"}] = killed;
  }
  gpusizer::advise(snapshot, history_policy().rule_settings.get<gpusizer::HistoryPolicy>());
  return snapshot;
}

// known: the pod's workload was OOM-killed, and history raises it; else
// the pod is stamped and looked up, and the table sizes it. The body is
// read in place, as the handler benchmark's (micro_bench.cpp).
void handler_history(benchmark::State& state, const std::string& file, bool known) {
  std::string body = read_bench_file(std::string(GPU_SIZER_SOURCE_DIR) + "/bench/workloads/" + file);
  body.reserve(body.size() + gpusizer::kJsonPadding);
  const HistorySnapshot snapshot = snapshot_for(body, known);
  const gpusizer::ClusterView cluster{nullptr, nullptr, &snapshot};
  // max(192Gi x 1.2, 192Gi + 100Mi): the rule raised the pod.
  const std::string patch = patch_of(gpusizer::handle_review(history_policy(), Endpoint::kMutate, body, cluster));
  if ((patch.find("235930Mi") != std::string::npos) != known ||
      patch.find("gpu-sizer.io~1workload") == std::string::npos) {
    state.SkipWithError("history did not do what the benchmark measures");
    return;
  }
  for (auto _ : state) {
    auto reply = gpusizer::handle_review(history_policy(), Endpoint::kMutate, body, cluster, body.capacity());
    benchmark::DoNotOptimize(reply);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

BENCHMARK_CAPTURE(handler_history, pod_3k, std::string("pod-3k-mutated.json"), true)
    ->Name("handler_history/pod-3k-mutated.json")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(handler_history, pod_12k, std::string("pod-12k-mutated.json"), true)
    ->Name("handler_history/pod-12k-mutated.json")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(handler_history, pod_3k_unknown, std::string("pod-3k-mutated.json"), false)
    ->Name("handler_history_unknown/pod-3k-mutated.json")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(handler_history, pod_12k_unknown, std::string("pod-12k-mutated.json"), false)
    ->Name("handler_history_unknown/pod-12k-mutated.json")
    ->Unit(benchmark::kMicrosecond);

}  // namespace
