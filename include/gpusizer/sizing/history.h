// History (issue 29, docs/history.md): what the earlier runs of a workload
// used and how they ended, read from Prometheus by the history layer, and
// the memory the history rule recommends from it. Pure: plain structs in
// and out, no I/O.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/result.h"

namespace YAML {
class Node;
}

namespace gpusizer {

// The annotation the webhook stamps on the GPU Pods it sees when history
// is on, for kube-state-metrics to export and history to join on: the
// workload's key. A run is the Pod's owner, read from kube-state-metrics'
// kube_pod_owner.
inline constexpr const char* kWorkloadKey = "gpu-sizer.io/workload";

// The policy block `history`.
struct HistoryPolicy {
  enum class Mode {
    kOff,        // no annotation, no rule
    kRecommend,  // stamp, and warn with what history recommends
    kRaise,      // stamp, and raise the memory floor after OOM kills
  };
  Mode mode = Mode::kOff;
  // After an OOM kill the floor is max(usage x bumpRatio, usage +
  // bumpMinimum), as the Vertical Pod Autoscaler's recommender bumps.
  Milli bump_ratio = 1200;
  Quantity bump_minimum = Quantity::from_bytes(int64_t{100} << 20);
  // A peak at or above this share of the memory limit is warned about.
  Milli near_limit = 900;
  // How far back history reads ("14d"), in seconds, and the text as
  // PromQL takes it.
  int64_t window_seconds = int64_t{14} * 24 * 3600;
  std::string window = "14d";
  // The series history reads, by role, for renamed setups: memory,
  // cpu, lastTerminatedReason, terminatedReason, restarts, annotations,
  // owners, requests, limits, gpuMemoryUsed, gpuMemoryFree.
  std::map<std::string, std::string, std::less<>> series;

  static constexpr std::string_view kKey = "history";
  void read(const YAML::Node& node, bool complete);
};
std::string_view to_string(HistoryPolicy::Mode mode);

// A window as PromQL writes it in one unit ("90m", "36h", "14d", "2w"), in
// seconds. Fails naming what it found.
Result<int64_t> window_seconds(std::string_view text);

// The workload key of a pod, as the annotation gpu-sizer.io/workload holds
// it: "PyTorchJob/llama-ft gpus=4 profile=train".
std::string history_key(std::string_view workload, int64_t gpus, std::string_view profile);
// The GPU count and profile a key ends with; nullopt when it is not one
// history_key() writes.
std::optional<std::pair<int64_t, std::string>> history_key_gpus_and_profile(std::string_view key);

// What history says about one container's memory, with its arithmetic.
struct MemoryAdvice {
  enum class Kind {
    kNone,       // too little to say (no runs)
    kOomKilled,  // raise: OOM kills
    kNearLimit,  // warn: peaks close to its limit
    kOversized,  // recommend lowering: given at least twice the recommendation
    kFits,       // nothing to do
  };
  Kind kind = Kind::kNone;
  Quantity recommended;    // the memory history asks for (kOomKilled, kNearLimit, kOversized)
  std::string evidence;    // "OOM-killed 3 times in 14d at 61Gi"
  std::string arithmetic;  // "max(64Gi x 1.2, 64Gi + 100Mi) = 76.8Gi"
};

// One run of one container of a workload (a pod's container).
struct RunUsage {
  std::string run;  // the Pod's controller (kube_pod_owner), else the pod's name
  std::string pod;
  Quantity peak_memory;  // working set, highest sample
  std::optional<Quantity> memory_request;
  std::optional<Quantity> memory_limit;
  bool oom_killed = false;
  int64_t restarts = 0;  // the container's restarts in the pod
};

// What history holds for one container of one workload key in one
// namespace, over the window.
struct ContainerHistory {
  std::vector<RunUsage> runs;              // one per pod, by pod name
  int64_t oom_kills = 0;                   // pods whose container was OOM-killed
  int64_t restarts = 0;                    // the runs' container restarts, summed
  Quantity peak_memory;                    // the highest of the runs'
  std::optional<Quantity> memory_request;  // the largest of the runs'
  std::optional<Quantity> memory_limit;
  // The highest memory limit among OOM-killed runs: the cgroup was full
  // there, whatever the last scrape before the kill saw.
  std::optional<Quantity> oom_limit;
  std::optional<Quantity> cpu_p95;  // cores, as milli
  std::optional<Quantity> cpu_request;
  std::optional<int64_t> gpu_memory_peak_mib;      // DCGM_FI_DEV_FB_USED, highest
  std::optional<int64_t> gpu_memory_capacity_mib;  // used + free at that GPU
  int64_t run_count() const;                       // distinct runs
  // memory_advice() under the policy the snapshot was advised with
  // (HistorySnapshot::advised), worked out once per refresh rather than
  // per decision.
  MemoryAdvice advice;
};

struct HistoryKey {
  std::string namespace_name;
  std::string workload;  // history_key()
  std::string container;
  auto operator<=>(const HistoryKey&) const = default;
};

// A key's parts as views, so that a decision looks a container up without
// copying them.
struct HistoryKeyView {
  std::string_view namespace_name;
  std::string_view workload;
  std::string_view container;
};

// Orders keys and views alike: namespace, workload, container.
struct HistoryKeyLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return parts(a) < parts(b);
  }
  template <class Key>
  static std::tuple<std::string_view, std::string_view, std::string_view> parts(const Key& key) {
    return {key.namespace_name, key.workload, key.container};
  }
};

// What the last refresh read. Immutable once built; the webhook swaps it
// whole.
struct HistorySnapshot {
  std::map<HistoryKey, ContainerHistory, HistoryKeyLess> containers;
  std::string window;      // "14d"
  int64_t fetched_at = 0;  // Unix seconds

  // The bump settings each container's advice was worked out with
  // (advise()); none: not advised.
  std::optional<HistoryPolicy> advised;

  const ContainerHistory* find(const HistoryKeyView& key) const {
    const auto found = containers.find(key);
    return found == containers.end() ? nullptr : &found->second;
  }
  // The container's advice under `policy`: the one kept when the snapshot
  // was advised with the same bump settings, else worked out now into
  // `scratch` (the policy changed since the refresh).
  const MemoryAdvice& advice_for(const HistoryPolicy& policy, const ContainerHistory& history,
                                 MemoryAdvice& scratch) const;
};

// Works out every container's advice under `policy` and records it.
void advise(HistorySnapshot& snapshot, const HistoryPolicy& policy);

// The advice for a container's memory from its history. A kill's usage is
// the higher of the OOM-killed runs' limit and the peak; the
// recommendation is max(usage x bumpRatio, usage + bumpMinimum) rounded
// up to a whole Mi.
MemoryAdvice memory_advice(const HistoryPolicy& policy, const ContainerHistory& history);

}  // namespace gpusizer
