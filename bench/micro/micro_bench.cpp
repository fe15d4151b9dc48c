// Micro benchmarks (Google Benchmark): quantity parsing, the sizing
// decision, and the whole handler (request bytes in, answer bytes out) for
// every file of the workload set (bench/workloads/index.json).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <valgrind/callgrind.h>

#include "generated_nodes.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"
#include "support/hostile_reviews.h"

namespace {

using gpusizer::Endpoint;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void quantity_parse(benchmark::State& state, const char* text) {
  for (auto _ : state) {
    auto parsed = gpusizer::Quantity::parse(text);
    benchmark::DoNotOptimize(parsed);
  }
}
BENCHMARK_CAPTURE(quantity_parse, memory_192Gi, "192Gi");
BENCHMARK_CAPTURE(quantity_parse, cpu_500m, "500m");
BENCHMARK_CAPTURE(quantity_parse, exponent_1e3, "1e3");

void sizing_required_resources(benchmark::State& state) {
  const gpusizer::Policy& policy = gpusizer::default_policy();
  const gpusizer::Profile* train = policy.find_profile("train");
  int64_t gpus = 1;
  for (auto _ : state) {
    auto requirement = gpusizer::required_resources(*train, gpus);
    benchmark::DoNotOptimize(requirement);
    gpus = gpus % 16 + 1;
  }
}
BENCHMARK(sizing_required_resources);

// The whole handler on one workload file: parse, decide, patch, serialise.
// The body is read in place, as the server's transport reserves room past
// it for the JSON reader.
void handler(benchmark::State& state, std::string body, Endpoint endpoint, const std::string& expected) {
  body.reserve(body.size() + gpusizer::kJsonPadding);
  const gpusizer::Policy& policy = gpusizer::default_policy();
  const auto first = gpusizer::handle_review(policy, endpoint, body, {}, body.capacity());
  if (first.status != 200 || gpusizer::to_string(first.outcome.decision) != expected) {
    state.SkipWithError(("answer is not " + expected).c_str());
    return;
  }
  for (auto _ : state) {
    auto reply = gpusizer::handle_review(policy, endpoint, body, {}, body.capacity());
    benchmark::DoNotOptimize(reply);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

// Registers one handler benchmark per workload file; the directory comes
// from --workloads=DIR (default: the source tree's bench/workloads).
void register_handlers(const std::string& dir) {
  const auto index = nlohmann::json::parse(read_file(dir + "/index.json"));
  for (const auto& entry : index) {
    const std::string file = entry.at("file").get<std::string>();
    const Endpoint endpoint = entry.at("endpoint") == "validate" ? Endpoint::kValidate : Endpoint::kMutate;
    benchmark::RegisterBenchmark(("handler/" + file).c_str(), handler, read_file(dir + "/" + file), endpoint,
                                 entry.at("decision").get<std::string>())
        ->Unit(benchmark::kMicrosecond);
  }
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Answers the review of one SHAPE:N:ENDPOINT[:nodes|:classes] spec, with
// the generated inventory (or one node of each of its classes) when asked,
// and prints the handler's time. Under `valgrind --instr-atstart=no`
// (bench/linear_scale.py) only the handler runs instrumented, so building
// the review and the inventory costs a fraction of the time, and its count
// is dumped under the spec's name; outside valgrind these do nothing.
void answer_hostile(const std::string& spec) {
  const std::vector<std::string> parts = split(spec, ':');
  const std::string review = gpusizer::testing::hostile_shape(parts.at(0)).review(std::stoul(parts.at(1)));
  const Endpoint endpoint = parts.at(2) == "validate" ? Endpoint::kValidate : Endpoint::kMutate;
  const std::string inventory = parts.size() > 3 ? parts[3] : "";
  const auto nodes =
      inventory == "nodes" || inventory == "classes" ? generated_inventory(inventory == "classes") : nullptr;
  const gpusizer::Policy& policy = gpusizer::default_policy();
  CALLGRIND_ZERO_STATS;
  CALLGRIND_START_INSTRUMENTATION;
  const auto started = std::chrono::steady_clock::now();
  const auto reply = gpusizer::handle_review(policy, endpoint, review, gpusizer::ClusterView{nodes.get(), nullptr});
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - started;
  CALLGRIND_STOP_INSTRUMENTATION;
  CALLGRIND_DUMP_STATS_AT(spec.c_str());
  std::printf("%s: %zu bytes, HTTP %d, %s, %zu bytes answered, %.1f ms\n", spec.c_str(), review.size(), reply.status,
              std::string(gpusizer::to_string(reply.outcome.decision)).c_str(), reply.body.size(), took.count());
}

// --hostile=SHAPE:N prints the review hostile_bench.cpp measures (for curl);
// --hostile=SPEC[,SPEC...] answers each spec's review once (answer_hostile),
// in one process so that callgrind starts once for all of them (for sizes
// too slow to repeat, and for linear_scale's counts). A first answer of
// one item, not counted, runs what the handler does once per process.
int hostile_command(const std::string& argument) {
  const std::vector<std::string> specs = split(argument, ',');
  const std::vector<std::string> first = split(specs.front(), ':');
  if (specs.size() == 1 && first.size() == 2) {
    const std::string review = gpusizer::testing::hostile_shape(first[0]).review(std::stoul(first[1]));
    std::fwrite(review.data(), 1, review.size(), stdout);
    return 0;
  }
  const Endpoint endpoint = first.at(2) == "validate" ? Endpoint::kValidate : Endpoint::kMutate;
  gpusizer::handle_review(gpusizer::default_policy(), endpoint, gpusizer::testing::hostile_shape(first[0]).review(1),
                          {});
  for (const std::string& spec : specs) answer_hostile(spec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = GPU_SIZER_SOURCE_DIR "/bench/workloads";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--workloads=", 0) == 0) dir = arg.substr(12);
    if (arg.rfind("--hostile=", 0) == 0) return hostile_command(arg.substr(10));
    if (arg == "--print-node-list") {
      std::fwrite(generated_node_list().data(), 1, generated_node_list().size(), stdout);
      return 0;
    }
  }
  try {
    register_handlers(dir);
  } catch (const std::exception& error) {
    // An unreadable workload set: say which, rather than abort.
    std::fprintf(stderr, "gpu-sizer-micro-bench: workloads in %s: %s\n", dir.c_str(), error.what());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
