#include "gpusizer/sizing/rules/node_caps_rule.h"

#include <algorithm>
#include <array>
#include <functional>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/sizing/shares.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// The resources in the order a cut weighs: memory first (what the memory
// cgroup kills for), then cpu, then ephemeral storage.
constexpr std::array<std::string_view, 3> kByWeight = {kMemory, kCpu, kEphemeralStorage};

std::optional<Quantity> allocatable(const NodeClass& node, std::string_view resource) {
  if (resource == kCpu) return node.cpu;
  if (resource == kMemory) return node.memory;
  return node.ephemeral_storage;
}

Quantity reserved(const NodeCapsPolicy& caps, std::string_view resource) {
  if (resource == kCpu) return caps.reserve_cpu;
  if (resource == kMemory) return caps.reserve_memory;
  return caps.reserve_ephemeral_storage;
}

class Capper {
 public:
  explicit Capper(const RuleInput& input)
      : input_(input),
        candidates_(*input.candidates),
        written_(pod_request(input.pod, input.phases.gpus, [](const ContainerFacts& c, std::string_view resource) {
          return c.effective_request(resource);
        })) {
    for (std::size_t i = 0; i < kByWeight.size(); ++i) {
      reserve_[i] =
          resource_units(reserved(input.policy.rule_settings.get<NodeCapsPolicy>(), kByWeight[i]), kByWeight[i]);
    }
    add_app_others();
  }

  RuleResult run() const {
    RuleResult result;
    const std::string_view stale = candidates_.stale;
    if (!stale.empty()) result.findings.push_back(warning("node caps: " + std::string(stale)));
    if (!candidates_.known()) {
      explain(result, "-", "no nodes known (no node inventory, no nodeFit.pools): nothing is capped");
      return result;
    }
    if (candidates_.nodes.empty()) {
      explain(result, "-",
              "no candidate node (" + candidates_.why_none + "): nothing is capped" +
                  (candidates_.stood_in.empty() ? "" : "; " + candidates_.stood_in));
      return result;
    }
    const NodeClass& best = best_node();
    const NodeClass& disk = smallest_disk_keeping(best);
    std::vector<std::string> capped;
    bool capped_on_best = false;
    const NodeClass* storage_node = nullptr;  // storage capped to another of the candidates
    for (std::size_t p = 0; p < input_.phases.phases.size(); ++p) {
      for (std::string_view resource : kByWeight) {
        const Floor* floor = input_.binding(p, resource);
        const Phase& phase = input_.phases.phases[p];
        // A phase whose holders each ask for their share is raised by no one: no cap.
        if (!floor || !someone_short(phase, *floor)) continue;
        const NodeClass& node = resource == kEphemeralStorage ? disk : best;
        const Quantity most = cap(node, p, resource);
        if (floor->amount > most || raised_past(phase, *floor, most)) {
          if (&node == &best) {
            capped_on_best = true;
          } else {
            storage_node = &node;
          }
        }
        if (floor->amount > most) {
          result.ceilings.push_back({p, resource, most, floor->basis + ", node cap"});
          result.findings.push_back(warning(cap_text(node, p, *floor, most)));
          capped.push_back(std::string(resource) + " " + most.to_string());
        } else if (raised_past(phase, *floor, most)) {
          // The floor fits, but holders above their share leave the others
          // less than theirs: they are raised only into the room left.
          result.ceilings.push_back({p, resource, most, floor->basis + ", node cap"});
          result.findings.push_back(warning(room_text(node, p, resource, most)));
          capped.push_back(std::string(resource) + " " + most.to_string() + " in all");
        }
      }
    }
    // Capped to a node that takes no pod now: it is coming back (issue 28),
    // and the pod waits for it; said once, after the caps it explains. (A
    // pod whose storage alone is capped to a smaller node fits the best.)
    if (capped_on_best) {
      if (const std::string now = best.unavailable_now(); !now.empty()) {
        result.findings.push_back(
            warning("node cap: " + best.shape + " is " + now + " now; sized for it, the pod waits until it is back"));
      }
    }
    if (input_.explain) {
      std::string detail = capped_on_best ? "capped to " + best.describe()
                           : storage_node ? "memory and cpu fit " + best.describe()
                                          : "the floors fit " + best.describe();
      if (storage_node) {
        detail += "; ephemeral-storage capped to " + storage_node->describe() +
                  ", the least disk of the nodes that hold its memory and cpu (storage does not choose its node)";
      }
      if (!capped.empty()) detail += reserve_text();
      if (!candidates_.stood_in.empty()) detail += "; " + candidates_.stood_in;
      result.row = RuleRow{RuleKind::kNodeCaps, capped.empty() ? "-" : join(capped, ", "), std::move(detail)};
    }
    return result;
  }

 private:
  Finding warning(std::string text) const {
    return {DenialReason::kNodeCap, false, "", fit(input_.pod.label + std::move(text))};
  }

  void explain(RuleResult& result, std::string floor, std::string detail) const {
    if (input_.explain) result.row = RuleRow{RuleKind::kNodeCaps, std::move(floor), std::move(detail)};
  }

  // The node's GPUs of the pod's GPU resource.
  int64_t node_gpus(const NodeClass& node) const { return node.count(candidates_.gpu_resource); }

  // Some GPU holder of the phase asks for less than its share of the
  // floor, so the floor would raise it.
  static bool someone_short(const Phase& phase, const Floor& floor) {
    return std::any_of(phase.holders.begin(), phase.holders.end(), [&](const ContainerFacts* holder) {
      const auto request = holder->effective_request(floor.resource);
      return !request || *request < holder_share(floor.amount, *holder, phase, floor.resource);
    });
  }

  // Each holder raised to its share of the floor (none lowered), the phase
  // would ask for more than `most` in all.
  static bool raised_past(const Phase& phase, const Floor& floor, const Quantity& most) {
    int128 total = 0;
    for (const ContainerFacts* holder : phase.holders) {
      const Quantity share = holder_share(floor.amount, *holder, phase, floor.resource);
      const auto request = holder->effective_request(floor.resource);
      total += resource_units(request ? std::max(*request, share) : share, floor.resource);
    }
    return total > resource_units(most, floor.resource);
  }

  // What the app containers that hold no GPU already ask, in units.
  void add_app_others() {
    std::vector<const ContainerFacts*> holders;
    if (const Phase* app = input_.phases.app()) holders = app->holders;
    std::sort(holders.begin(), holders.end(), std::less<>());
    std::array<int128, 3> totals{};
    for (const ContainerFacts& c : input_.pod.app) {
      if (std::binary_search(holders.begin(), holders.end(), &c, std::less<>())) continue;
      for (std::size_t i = 0; i < kByWeight.size(); ++i) {
        if (auto request = c.effective_request(kByWeight[i])) totals[i] += resource_units(*request, kByWeight[i]);
      }
    }
    for (std::size_t i = 0; i < kByWeight.size(); ++i) app_others_[i] = clamp_to_int64(totals[i]);
  }

  // What the sidecars listed before an init phase's container ask once
  // sized, in units: they run beside it. A sidecar holding GPUs is raised
  // with the app phase, to at most its share of the app's floor as capped
  // on this node.
  int128 sidecars_before(const NodeClass& node, const Phase& phase, std::string_view resource) const {
    const int before = phase.holders.empty() ? -1 : phase.holders.front()->init_index;
    const SidecarSums& sums = sidecar_sums(node, resource);
    const auto beside =
        std::partition_point(sums.init_index.begin(), sums.init_index.end(), [&](int index) { return index < before; });
    return sums.before[static_cast<std::size_t>(beside - sums.init_index.begin())];
  }

  // The sidecars sized on one node, by their place in initContainers: an
  // init phase sums those before it in log time (a pod may have thousands
  // of both). Worked out once per node and resource.
  struct SidecarSums {
    const NodeClass* node = nullptr;
    std::vector<int> init_index;  // ascending
    std::vector<int128> before;   // before[k]: the first k sidecars' sum, in units
  };
  const SidecarSums& sidecar_sums(const NodeClass& node, std::string_view resource) const {
    SidecarSums& sums = sidecar_sums_[index_of(resource)];
    if (sums.node == &node) return sums;
    const Phase* app = input_.phases.app();
    const Floor* app_floor = app ? input_.binding(0, resource) : nullptr;
    const std::optional<Quantity> app_amount =
        app_floor ? std::optional(std::min(app_floor->amount, cap(node, 0, resource))) : std::nullopt;
    std::vector<std::pair<int, int128>> sized;
    for (const ContainerFacts& c : input_.pod.app) {
      if (!c.sidecar) continue;
      Quantity amount = c.effective_request(resource).value_or(Quantity());
      if (app_amount && c.gpus > 0) amount = std::max(amount, holder_share(*app_amount, c, *app, resource));
      sized.emplace_back(c.init_index, resource_units(amount, resource));
    }
    std::stable_sort(sized.begin(), sized.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    sums = {&node, {}, {0}};
    for (const auto& [index, units] : sized) {
      sums.init_index.push_back(index);
      sums.before.push_back(sums.before.back() + units);
    }
    return sums;
  }

  static std::size_t index_of(std::string_view resource) {
    return static_cast<std::size_t>(std::find(kByWeight.begin(), kByWeight.end(), resource) - kByWeight.begin());
  }

  // The most phase p may be given of a resource on the node. A resource
  // the node does not report is none, as the scheduler counts it.
  Quantity cap(const NodeClass& node, std::size_t p, std::string_view resource) const {
    const auto has = allocatable(node, resource);
    const std::size_t i = index_of(resource);
    const Phase& phase = input_.phases.phases[p];
    int128 room = std::max<int128>(0, int128(has ? resource_units(*has, resource) : 0) - reserve_[i]);
    const int64_t gpus = node_gpus(node);
    // cpu and ephemeral storage are shared by GPU: the table asks them of
    // every pod whatever the node, so a whole node's worth to each 1-GPU pod
    // would leave the node's other GPUs unusable. Memory is the node's: the
    // table's per-rank memory is what a rank needs to run at all.
    if (resource != kMemory && gpus > phase.gpus) room = room * phase.gpus / gpus;
    // Rounded down to a value people write: a tenth of a core, a whole Gi.
    const int64_t granule = resource == kCpu ? 100 : kGiB;
    room = room / granule * granule;
    // The phase's other containers take their part: the app's containers
    // without GPUs; for an init container, the sidecars beside it.
    room -= phase.app ? int128(app_others_[i]) : sidecars_before(node, phase, resource);
    return of_resource_units(clamp_to_int64(std::max<int128>(0, room)), resource);
  }

  // Of the first phase (the app's, when it holds GPUs), what each resource's
  // floor keeps on the node, heaviest first.
  std::array<Quantity, 3> kept(const NodeClass& node, const std::array<const Floor*, 3>& floors) const {
    std::array<Quantity, 3> out;
    for (std::size_t i = 0; i < kByWeight.size(); ++i) {
      if (!floors[i]) continue;
      out[i] = std::min(floors[i]->amount, cap(node, 0, kByWeight[i]));
    }
    return out;
  }

  // The candidate that holds the pod as written and keeps the most of its
  // floors; the first such in the inventory's order.
  const NodeClass& best_node() const {
    std::array<const Floor*, 3> floors{};
    for (std::size_t i = 0; i < kByWeight.size(); ++i) floors[i] = input_.binding(0, kByWeight[i]);
    const NodeClass* best = nullptr;
    std::tuple<bool, std::array<Quantity, 3>> best_score;
    // Classes that differ only in labels (a shape in each zone) score alike:
    // each shape once (found once per pod shape, with the candidates).
    for (const NodeClass* node : candidates_.shapes) {
      auto score = std::make_tuple(holds(*node, written_, candidates_.gpu_resource), kept(*node, floors));
      if (!best || score > best_score) {
        best = node;
        best_score = std::move(score);
      }
    }
    return *best;
  }

  // Of the candidates that hold the first phase's memory and cpu as capped
  // on `best` (and the pod as written, where `best` does), the one with
  // the least ephemeral storage for it (as best_node, the first phase
  // stands for the pod: once per pod, not per phase and shape). The
  // table's storage is a disk reservation, not what a rank needs to run:
  // raising it must not move the pod off a node its memory and cpu fit (a
  // 2-GPU pod off the 85Gi disks of a2-highgpu-2g onto an 8-GPU machine),
  // so it is capped to the least of them.
  const NodeClass& smallest_disk_keeping(const NodeClass& best) const {
    // Which candidate is a GPU node is not known (DRA claims, no node
    // shows GPUs): the smallest disk would likely be a CPU node's.
    if (candidates_.gpu_nodes_unknown) return best;
    constexpr std::size_t p = 0;
    std::array<std::optional<Quantity>, 2> given;  // memory, cpu
    for (std::size_t i = 0; i < given.size(); ++i) {
      if (const Floor* floor = input_.binding(p, kByWeight[i])) {
        given[i] = std::min(floor->amount, cap(best, p, kByWeight[i]));
      }
    }
    const bool best_holds_written = holds(best, written_, candidates_.gpu_resource);
    const NodeClass* smallest = &best;
    Quantity least = cap(best, p, kEphemeralStorage);
    for (const NodeClass* shape : candidates_.shapes) {
      // A shape whose storage is not known (a pool of instance-store
      // machines) is no measure of the least disk.
      if (!shape->ephemeral_storage) continue;
      if (best_holds_written && !holds(*shape, written_, candidates_.gpu_resource)) continue;
      bool keeps = true;
      for (std::size_t i = 0; i < given.size(); ++i) {
        keeps = keeps && (!given[i] || cap(*shape, p, kByWeight[i]) >= *given[i]);
      }
      if (!keeps) continue;
      if (const Quantity room = cap(*shape, p, kEphemeralStorage); room < least) {
        smallest = shape;
        least = room;
      }
    }
    return *smallest;
  }

  // "node cap: memory 64Gi (train profile) capped to 26Gi: g2-standard-8 has 27Gi"
  // "node cap: cpu 16 (train profile) capped to 11.4: 1 of 8 GPUs of p4d.24xlarge (cpu 96)"
  std::string cap_text(const NodeClass& node, std::size_t p, const Floor& floor, const Quantity& most) const {
    return "node cap: " + std::string(floor.resource) + " " + floor.amount.to_string() + " (" + floor.basis +
           ") capped to " + most.to_string() + ": " + node_text(node, p, floor.resource);
  }

  // "node cap: memory raised to at most 199Gi in all: gpu-box has 200Gi, and some containers ask over their share"
  std::string room_text(const NodeClass& node, std::size_t p, std::string_view resource, const Quantity& most) const {
    return "node cap: " + std::string(resource) + " raised to at most " + most.to_string() +
           " in all: " + node_text(node, p, resource) + ", and some containers ask over their share";
  }

  // What the node has for phase p: "g2-standard-8 has 27Gi", "1 of 8 GPUs of p4d.24xlarge (cpu 96)".
  std::string node_text(const NodeClass& node, std::size_t p, std::string_view resource) const {
    const std::string has = has_text(node, resource);
    const int64_t gpus = node_gpus(node);
    const int64_t phase_gpus = input_.phases.phases[p].gpus;
    if (resource != kMemory && gpus > phase_gpus) {
      return std::to_string(phase_gpus) + " of " + std::to_string(gpus) + " GPUs of " + node.named() + " (" +
             std::string(resource) + " " + has + ")";
    }
    return node.named() + " has " + (resource == kMemory ? "" : std::string(resource) + " ") + has;
  }

  static std::string has_text(const NodeClass& node, std::string_view resource) {
    const auto reported = allocatable(node, resource);
    return reported ? reported->to_string() : "none (unreported)";
  }

  std::string reserve_text() const {
    const NodeCapsPolicy& caps = input_.policy.rule_settings.get<NodeCapsPolicy>();
    return "; reserved for the node's DaemonSets: cpu " + caps.reserve_cpu.to_string() + ", memory " +
           caps.reserve_memory.to_string() + ", ephemeral-storage " + caps.reserve_ephemeral_storage.to_string();
  }

  const RuleInput& input_;
  const Candidates& candidates_;
  const PodRequest written_;  // the pod as given: a node that holds it could be its node
  // In units, by kByWeight: the reserve, and what the app phase's other
  // containers ask.
  std::array<int64_t, 3> reserve_{};
  std::array<int64_t, 3> app_others_{};
  mutable std::array<SidecarSums, 3> sidecar_sums_;  // by kByWeight
};

}  // namespace

RuleResult NodeCapsRule::evaluate(const RuleInput& input) const {
  if (!input.candidates || input.phases.phases.empty()) {
    RuleResult result;
    if (input.explain) result.row = RuleRow{RuleKind::kNodeCaps, "-", "no nodes known: nothing is capped"};
    return result;
  }
  return Capper(input).run();
}

void NodeCapsPolicy::read(const YAML::Node& node, bool complete) {
  using namespace policy_fields;  // NOLINT(google-build-using-namespace)
  NodeCapsPolicy& out = *this;
  const Block block(node, "nodeCaps", complete, {"reserve"});
  block.read("reserve", [&](const auto& value, const auto& path) {
    const Block reserve(value, path, complete, {"cpu", "memory", "ephemeralStorage"});
    reserve.read("cpu", [&](const auto& v, const auto& at) { out.reserve_cpu = read_quantity(v, at, Zero::kAllowed); });
    reserve.read("memory",
                 [&](const auto& v, const auto& at) { out.reserve_memory = read_quantity(v, at, Zero::kAllowed); });
    reserve.read("ephemeralStorage", [&](const auto& v, const auto& at) {
      out.reserve_ephemeral_storage = read_quantity(v, at, Zero::kAllowed);
    });
  });
}

const SettingsBlock* NodeCapsRule::settings() const {
  static const SettingsBlockOf<NodeCapsPolicy> block;
  return &block;
}

}  // namespace gpusizer
