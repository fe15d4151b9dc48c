#include "gpusizer/sizing/node_fit.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

using StringMap = std::map<std::string, std::string, std::less<>>;

// Warnings go into one short line of kubectl output.
constexpr std::size_t kMaxBrief = 109;

bool fits(const PodRequest& request, const NodeShape& shape) {
  return request.gpus <= shape.gpus && request.cpu <= shape.cpu && request.memory <= shape.memory &&
         request.ephemeral_storage <= shape.ephemeral_storage;
}

// The node a pod too large for every node comes closest to: most GPUs, then
// memory, then cpu.
bool larger(const NodeShape& a, const NodeShape& b) {
  return std::tie(a.gpus, a.memory, a.cpu) > std::tie(b.gpus, b.memory, b.cpu);
}

}  // namespace

const NodePool* pod_pool(const NodeFitPolicy& policy, const StringMap& pod_labels, const StringMap& node_selector) {
  if (auto label = pod_labels.find(policy.pool_label); label != pod_labels.end()) {
    for (const NodePool& pool : policy.pools) {
      if (pool.name == label->second) return &pool;
    }
  }
  for (const NodePool& pool : policy.pools) {
    // An empty selector is a subset of every pod's; it would take them all.
    if (pool.node_selector.empty()) continue;
    const bool subset = std::all_of(pool.node_selector.begin(), pool.node_selector.end(), [&](const auto& entry) {
      auto found = node_selector.find(entry.first);
      return found != node_selector.end() && found->second == entry.second;
    });
    if (subset) return &pool;
  }
  return nullptr;
}

NodeFit check_node_fit(const NodeFitPolicy& policy, const PodRequest& request, const StringMap& pod_labels,
                       const StringMap& node_selector) {
  NodeFit fit;
  fit.pool = pod_pool(policy, pod_labels, node_selector);
  const NodePool* largest_pool = nullptr;
  bool any_fits = false;
  for (const NodePool& pool : policy.pools) {
    if (fit.pool && fit.pool != &pool) continue;
    for (const NodeShape& shape : pool.nodes) {
      any_fits = any_fits || fits(request, shape);
      if (!fit.largest || larger(shape, *fit.largest)) {
        fit.largest = &shape;
        largest_pool = &pool;
      }
    }
  }
  // No pools (the default), or pools without shapes (which the policy
  // parser refuses): nothing to check against.
  if (!fit.largest) return fit;
  if (any_fits) {
    fit.verdict = NodeFit::Verdict::kFits;
    return fit;
  }
  fit.verdict = NodeFit::Verdict::kNoFit;
  const NodeShape& largest = *fit.largest;

  // Each resource the largest node lacks, as the pod asks for it ("cpu
  // 253"), as the node has it ("cpu 252") and compared ("cpu 253 > 252").
  std::vector<std::string> short_found, short_has, short_compared;
  auto compare = [&](const std::string& name, const Quantity& found, const Quantity& has) {
    if (found <= has) return;
    short_found.push_back(name + " " + found.to_string());
    short_has.push_back(name + " " + has.to_string());
    short_compared.push_back(name + " " + found.to_string() + " > " + has.to_string());
  };
  const bool short_of_gpus = request.gpus > largest.gpus;
  if (short_of_gpus) {
    short_found.push_back(gpus_text(request.gpus));
    short_has.push_back(gpus_text(largest.gpus));
    short_compared.push_back("GPUs " + std::to_string(request.gpus) + " > " + std::to_string(largest.gpus));
  }
  compare("cpu", request.cpu, largest.cpu);
  compare("memory", request.memory, largest.memory);
  compare("ephemeral-storage", request.ephemeral_storage, largest.ephemeral_storage);

  const std::string where = fit.pool ? "pool " + in_quotes(fit.pool->name) : "any pool";
  const std::string pod =
      gpus_text(request.gpus) + ", cpu " + request.cpu.to_string() + ", memory " + request.memory.to_string();
  const std::string storage = ", ephemeral-storage " + request.ephemeral_storage.to_string();
  const std::string tail =
      " fit no node of " + where + "; largest " + in_quotes(largest.name) + " has " + join(short_has, ", ");
  // The brief shows the pod as its GPUs, cpu and memory, as people size
  // it; when ephemeral storage is short (not in that list) or the line is
  // too long, only what is short; cut as a last resort (long names).
  const bool short_of_storage = request.ephemeral_storage > largest.ephemeral_storage;
  fit.brief = "node fit: " + pod + tail;
  if (short_of_storage || fit.brief.size() > kMaxBrief) fit.brief = "node fit: " + join(short_found, ", ") + tail;
  fit.brief = truncate_utf8(fit.brief, kMaxBrief);

  // GPUs cannot be lowered without changing the job, and the tables size
  // cpu and memory per GPU: fewer GPUs per pod is the way out. Otherwise
  // the pod asks for more than the node has of a resource it can lower.
  std::string remedy;
  if (short_of_gpus && largest.gpus > 0) {
    remedy = "split the job into pods of at most " + gpus_text(largest.gpus);
  } else if (short_of_gpus) {
    remedy = "choose a pool with GPU nodes";
  } else {
    // The cpu and memory are gpu-sizer's own floors for the GPU count (or
    // above them): lowering them is undone or denied; fewer GPUs per pod
    // or larger nodes fit.
    remedy = "run fewer GPUs per pod (cpu and memory follow the GPU count) or choose a pool with larger nodes";
  }
  const std::string largest_where = fit.pool ? "" : " (pool " + in_quotes(largest_pool->name) + ")";
  fit.message = "node fit: " + pod + storage + " fit no node of " + where + "; the largest, " +
                in_quotes(largest.name) + largest_where + ", has " + gpus_text(largest.gpus) + ", cpu " +
                largest.cpu.to_string() + ", memory " + largest.memory.to_string() + ", ephemeral-storage " +
                largest.ephemeral_storage.to_string() + " (short: " + join(short_compared, ", ") + "); " + remedy;
  return fit;
}

}  // namespace gpusizer
