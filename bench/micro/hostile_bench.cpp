// The handler on the reviews that cost it the most per byte (issue 25,
// docs/performance.md "Hostile reviews"): each shape of hostile_reviews.h
// at the body sizes the transport decides on (16, 64 and 256 KiB, and the
// 8 MiB --max-body-bytes default) on both endpoints, with the generated
// 5,000-node inventory a cluster's webhook has; and the issue's own cases
// by count: pods of 20,000 to 80,000 one-GPU containers, workflows of 1,000
// to 10,000 templates.
#include <cstddef>
#include <string>
#include <utility>

#include <benchmark/benchmark.h>

#include "generated_nodes.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/policy.h"
#include "support/hostile_reviews.h"

namespace {

using gpusizer::Endpoint;
using gpusizer::testing::HostileShape;

struct Size {
  const char* label;
  std::size_t bytes;
};
constexpr Size kSizes[] = {{"16KiB", std::size_t{16} << 10},
                           {"64KiB", std::size_t{64} << 10},
                           {"256KiB", std::size_t{256} << 10},
                           {"8MiB", std::size_t{8} << 20}};

// The handler on one generated review; n items, or as many as max_bytes holds.
void hostile(benchmark::State& state, const HostileShape* shape, Endpoint endpoint, std::size_t n,
             std::size_t max_bytes, bool with_nodes) {
  if (max_bytes > 0) n = gpusizer::testing::items_for_bytes(*shape, max_bytes);
  const std::string body = shape->review(n);
  const auto inventory = with_nodes ? generated_inventory() : gpusizer::NodeInventory::none();
  const gpusizer::Policy& policy = gpusizer::default_policy();
  const auto first = gpusizer::handle_review(policy, endpoint, body, gpusizer::ClusterView{inventory.get(), nullptr});
  if (first.status != 200) {
    state.SkipWithError(("answered " + std::to_string(first.status) + ": " + first.body.substr(0, 200)).c_str());
    return;
  }
  for (auto _ : state) {
    auto reply = gpusizer::handle_review(policy, endpoint, body, gpusizer::ClusterView{inventory.get(), nullptr});
    benchmark::DoNotOptimize(reply);
  }
  state.counters["items"] = static_cast<double>(n);
  state.counters["body_KiB"] = static_cast<double>(body.size()) / 1024;
  state.counters["decision"] = static_cast<double>(first.outcome.decision);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void register_one(const std::string& name, const HostileShape& shape, Endpoint endpoint, std::size_t n,
                  std::size_t max_bytes, bool with_nodes) {
  benchmark::RegisterBenchmark(name.c_str(), hostile, &shape, endpoint, n, max_bytes, with_nodes)
      ->Unit(benchmark::kMillisecond)
      ->MeasureProcessCPUTime()
      ->UseRealTime();
}

bool register_hostile() {
  for (const HostileShape& shape : gpusizer::testing::hostile_shapes()) {
    for (const auto& [endpoint, path] : {std::pair{Endpoint::kMutate, "mutate"}, {Endpoint::kValidate, "validate"}}) {
      for (const Size& size : kSizes) {
        register_one("hostile/" + shape.name + "/" + path + "/" + size.label, shape, endpoint, 0, size.bytes, true);
      }
    }
  }
  // The cases, as it measured them (no node inventory).
  struct Counts {
    const char* shape;
    int counts[3];
  };
  for (const Counts& cases :
       {Counts{"pod-gpu-containers", {20000, 40000, 80000}}, Counts{"workflow-templates", {1000, 3000, 10000}},
        Counts{"workflow-4gpu-templates", {1000, 3000, 10000}}}) {
    for (const auto& [endpoint, path] : {std::pair{Endpoint::kMutate, "mutate"}, {Endpoint::kValidate, "validate"}}) {
      for (const int n : cases.counts) {
        register_one(std::string("hostile_n/") + cases.shape + "/" + path + "/" + std::to_string(n),
                     gpusizer::testing::hostile_shape(cases.shape), endpoint, static_cast<std::size_t>(n), 0, false);
      }
    }
  }
  return true;
}

const bool registered = register_hostile();

}  // namespace
