// Micro benchmarks (Google Benchmark): quantity parsing, the sizing
// decision, and the whole handler (request bytes in, answer bytes out) for
// every file of the workload set (bench/workloads/index.json).
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"

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
void handler(benchmark::State& state, const std::string& body, Endpoint endpoint, const std::string& expected) {
  const gpusizer::Policy& policy = gpusizer::default_policy();
  const auto first = gpusizer::handle_review(policy, endpoint, body);
  if (first.status != 200 || gpusizer::to_string(first.outcome.decision) != expected) {
    state.SkipWithError(("answer is not " + expected).c_str());
    return;
  }
  for (auto _ : state) {
    auto reply = gpusizer::handle_review(policy, endpoint, body);
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

}  // namespace

// bench/node_bench.cpp: the generated 5,000-node list, for the RSS run
// (bench/node_rss.py).
const std::string& generated_node_list();

int main(int argc, char** argv) {
  std::string dir = GPU_SIZER_SOURCE_DIR "/bench/workloads";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--workloads=", 0) == 0) dir = arg.substr(12);
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
