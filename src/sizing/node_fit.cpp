#include "gpusizer/sizing/node_fit.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// Warnings go into one short line of kubectl output: the brief leaves 10
// bytes of the warning's width for what goes before it (a template's name).
std::size_t max_brief() { return warning_width() - 10; }

// A resource the node does not report is none, as the scheduler counts it.
bool within(const Quantity& asked, const std::optional<Quantity>& has) {
  return has ? asked <= *has : asked <= Quantity();
}

std::string shown(const std::optional<Quantity>& value) { return value ? value->to_string() : "unreported"; }

}  // namespace

const NodePool* pod_pool(const NodeFitPolicy& policy, const PodFacts& pod) {
  if (const std::string* label = pod.selection.label(policy.pool_label)) {
    for (const NodePool& pool : policy.pools) {
      if (pool.name == *label) return &pool;
    }
  }
  for (const NodePool& pool : policy.pools) {
    // An empty selector is a subset of every pod's; it would take them all.
    if (pool.node_selector.empty()) continue;
    const bool subset = std::all_of(pool.node_selector.begin(), pool.node_selector.end(), [&](const auto& entry) {
      const std::string* value = pod.node_selector_value(entry.first);
      return value && *value == entry.second;
    });
    if (subset) return &pool;
  }
  return nullptr;
}

bool holds(const NodeClass& node, const PodRequest& request, std::string_view gpu_resource) {
  // GPUs by DRA claim are no node's allocatable: the candidates are the
  // nodes that may have them.
  const bool gpus_held = gpu_resource == kClaimedGpus || request.gpus <= node.count(gpu_resource);
  return gpus_held && within(request.cpu, node.cpu) && within(request.memory, node.memory) &&
         within(request.ephemeral_storage, node.ephemeral_storage);
}

const NodeClass* smallest_holding(const Candidates& candidates, const PodRequest& request) {
  const std::string_view resource = candidates.gpu_resource;
  const Quantity none;
  const auto size = [&](const NodeClass& node) {
    return std::make_tuple(node.count(resource), node.cpu.value_or(none), node.memory.value_or(none));
  };
  const NodeClass* smallest = nullptr;
  // One of each shape: classes that differ only in labels hold a pod alike.
  for (const NodeClass* node : candidates.shapes) {
    if (holds(*node, request, resource) && (!smallest || size(*node) < size(*smallest))) smallest = node;
  }
  return smallest;
}

NodeFit check_node_fit(const PodRequest& request, const Candidates& candidates) {
  NodeFit fit;
  if (!candidates.known()) return fit;
  const bool pools = candidates.inventory->source == InventorySource::kPools;
  // "... fit no node of pool "a100"", "... fit none of the nodes it may run on".
  const std::string none_of =
      pools ? "no node of " + (candidates.pool ? "pool " + in_quotes(candidates.pool->name) : std::string("any pool"))
            : "none of the nodes it may run on";
  const std::string pod =
      gpus_text(request.gpus) + ", cpu " + request.cpu.to_string() + ", memory " + request.memory.to_string();
  const std::string_view resource = candidates.gpu_resource;
  const bool by_claim = resource == kClaimedGpus;
  // A claim's pod may also have no candidate among the nodes it may be
  // placed on: all have another vendor's GPUs.
  if (candidates.placeable.empty() || (by_claim && candidates.nodes.empty())) {
    fit.verdict = NodeFit::Verdict::kNoCandidates;
    fit.message = "node fit: no node of " + candidates.inventory->origin + " may run it: " + candidates.why_none +
                  (candidates.placeable.empty() ? "; check its nodeSelector, node affinity and tolerations"
                                                : "; check the device classes of its DRA claims");
    fit.brief = truncate_utf8("node fit: no node may run it; " + candidates.why_none, max_brief());
    return fit;
  }
  auto larger = [&](const NodeClass& a, const NodeClass& b) {
    const Quantity none;
    return std::make_tuple(a.count(resource), a.memory.value_or(none), a.cpu.value_or(none)) >
           std::make_tuple(b.count(resource), b.memory.value_or(none), b.cpu.value_or(none));
  };
  bool any_fits = false;
  for (const NodeClass* node : by_claim ? candidates.nodes : candidates.placeable) {
    any_fits = any_fits || holds(*node, request, resource);
    if (!fit.largest || larger(*node, *fit.largest)) fit.largest = node;
  }
  if (any_fits) {
    fit.verdict = NodeFit::Verdict::kFits;
    return fit;
  }
  fit.verdict = NodeFit::Verdict::kNoFit;
  const NodeClass& largest = *fit.largest;
  const int64_t largest_gpus = largest.count(resource);

  // Each resource the largest node lacks, as the pod asks for it ("cpu
  // 253"), as the node has it ("cpu 252") and compared ("cpu 253 > 252").
  std::vector<std::string> short_found, short_has, short_compared;
  auto compare = [&](const std::string& name, const Quantity& found, const std::optional<Quantity>& has) {
    if (within(found, has)) return;
    short_found.push_back(name + " " + found.to_string());
    short_has.push_back(name + " " + has->to_string());
    short_compared.push_back(name + " " + found.to_string() + " > " + has->to_string());
  };
  const bool short_of_gpus = !by_claim && request.gpus > largest_gpus;
  if (short_of_gpus) {
    short_found.push_back(gpus_text(request.gpus));
    // None at all: the node's GPUs are another vendor's, or it has none.
    short_has.push_back(largest_gpus == 0 ? "no " + std::string(resource) : gpus_text(largest_gpus));
    short_compared.push_back("GPUs " + std::to_string(request.gpus) + " > " + std::to_string(largest_gpus));
  }
  compare("cpu", request.cpu, largest.cpu);
  compare("memory", request.memory, largest.memory);
  compare("ephemeral-storage", request.ephemeral_storage, largest.ephemeral_storage);

  const std::string storage = ", ephemeral-storage " + request.ephemeral_storage.to_string();
  const std::string tail =
      " fit " + none_of + "; largest " + in_quotes(largest.shape) + " has " + join(short_has, ", ");
  // The brief shows the pod as its GPUs, cpu and memory, as people size
  // it; when ephemeral storage is short (not in that list) or the line is
  // too long, only what is short; cut as a last resort (long names).
  const bool short_of_storage = !within(request.ephemeral_storage, largest.ephemeral_storage);
  fit.brief = "node fit: " + pod + tail;
  if (short_of_storage || fit.brief.size() > max_brief()) fit.brief = "node fit: " + join(short_found, ", ") + tail;
  fit.brief = truncate_utf8(fit.brief, max_brief());

  // GPUs cannot be lowered without changing the job, and the tables size
  // cpu and memory per GPU: fewer GPUs per pod is the way out. Otherwise
  // the pod asks for more than the node has of a resource it can lower.
  const std::string larger_nodes = pools ? "choose a pool with larger nodes" : "choose larger nodes";
  std::string remedy;
  if (short_of_gpus && largest_gpus > 0) {
    remedy = "split the job into pods of at most " + gpus_text(largest_gpus);
  } else if (short_of_gpus) {
    remedy = pools ? "choose a pool with GPU nodes" : "choose GPU nodes";
  } else {
    // The cpu and memory are at or above gpu-sizer's floors for the GPU
    // count, which node caps keep within the nodes: what is written is too
    // large for them; fewer GPUs per pod or larger nodes fit.
    remedy = "run fewer GPUs per pod (cpu and memory follow the GPU count) or " + larger_nodes;
  }
  const std::string largest_where =
      pools && !candidates.pool && !largest.pool.empty() ? " (pool " + in_quotes(largest.pool) + ")" : "";
  fit.message = "node fit: " + pod + storage + " fit " + none_of + "; the largest, " + in_quotes(largest.shape) +
                largest_where + ", has " + gpus_text(largest_gpus) + ", cpu " + shown(largest.cpu) + ", memory " +
                shown(largest.memory) + ", ephemeral-storage " + shown(largest.ephemeral_storage) +
                " (short: " + join(short_compared, ", ") + "); " + remedy;
  return fit;
}

PodRequest pod_request(
    const PodFacts& pod, int64_t gpus,
    const std::function<std::optional<Quantity>(const ContainerFacts&, std::string_view resource)>& request) {
  auto add = [&](PodRequest& total, const ContainerFacts& c) {
    for (auto [sum, resource] :
         {std::pair{&total.cpu, kCpu}, {&total.memory, kMemory}, {&total.ephemeral_storage, kEphemeralStorage}}) {
      if (auto value = request(c, resource)) *sum = sum->plus(*value);
    }
  };
  PodRequest app{gpus};
  for (const ContainerFacts& c : pod.app) add(app, c);
  // Pod-level resources replace the containers' sum for what they set
  // (k8s.io/component-helpers/resource PodRequests).
  const auto pod_level = [&](PodRequest total) {
    for (auto [sum, resource] : {std::pair{&total.cpu, kCpu}, {&total.memory, kMemory}}) {
      if (!pod.sized_at_pod_level(resource)) continue;
      if (auto value = request(*pod.pod_level, resource)) *sum = *value;
    }
    return total;
  };
  if (pod.init.empty()) return pod_level(app);  // most pods: nothing runs before them
  // An init container runs beside the sidecars listed before it: the
  // sidecars in initContainers order, each with what it and those before
  // it ask, so that each init container finds its sum in log time (a pod
  // may have thousands of both).
  std::vector<const ContainerFacts*> sidecars;
  for (const ContainerFacts& c : pod.app) {
    if (c.sidecar) sidecars.push_back(&c);
  }
  std::stable_sort(sidecars.begin(), sidecars.end(),
                   [](const ContainerFacts* a, const ContainerFacts* b) { return a->init_index < b->init_index; });
  std::vector<PodRequest> before(sidecars.size() + 1);  // before[k]: the first k sidecars' sum
  for (std::size_t k = 0; k < sidecars.size(); ++k) {
    before[k + 1] = before[k];
    add(before[k + 1], *sidecars[k]);
  }
  PodRequest largest_init;
  for (const ContainerFacts& c : pod.init) {
    const auto beside = std::partition_point(sidecars.begin(), sidecars.end(),
                                             [&](const ContainerFacts* s) { return s->init_index < c.init_index; });
    PodRequest one = before[static_cast<std::size_t>(beside - sidecars.begin())];
    add(one, c);
    largest_init.cpu = std::max(largest_init.cpu, one.cpu);
    largest_init.memory = std::max(largest_init.memory, one.memory);
    largest_init.ephemeral_storage = std::max(largest_init.ephemeral_storage, one.ephemeral_storage);
  }
  return pod_level({app.gpus, std::max(app.cpu, largest_init.cpu), std::max(app.memory, largest_init.memory),
                    std::max(app.ephemeral_storage, largest_init.ephemeral_storage)});
}

}  // namespace gpusizer
