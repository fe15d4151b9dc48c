#include "gpusizer/sizing/pod_sizing.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <utility>

#include <boost/container/small_vector.hpp>

#include "gpusizer/sizing/accelerator_asks.h"
#include "gpusizer/sizing/catalogue_candidates.h"
#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/shortfalls.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/contract.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// Before what a template's Pods get when created (policy longLived).
constexpr const char* kAtCreation = "at pod creation: ";

// More GPUs than this in one pod (one node) is a typo, not a machine;
// refusing it keeps all arithmetic far from overflow.
constexpr int64_t kMaxGpusPerPod = 1 << 20;

// A finding as the report orders it.
struct Entry {
  DenialReason reason;
  bool denial;
  std::string text;
};

class PodSizer {
 public:
  PodSizer(const Policy& policy, const PodFacts& pod, const PodPhases& phases, const SizingOptions& options)
      : policy_(policy), pod_(pod), phases_(phases), options_(options) {}

  PodSizing size(std::span<const Problem> problems) {
    for (const Problem& problem : problems) {
      findings_.push_back({DenialReason::kInvalid, true, problem.message, problem.message});
    }
    auto choice = select_profile(policy_, pod_.selection);
    if (!choice) {
      const std::string problem = pod_.description + ": " + choice.error();
      findings_.push_back({DenialReason::kUnknownProfile, true, problem, problem});
    } else if (phases_.gpus > 0) {
      sizing_.profile = choice.value().profile;
      sizing_.profile_reason = choice.value().reason;
      choose_candidates();
      run_floor_rules();
    }
    // Input a patch cannot fix stops mutation; the check rules change no
    // patch, so what they find never does.
    sizing_.blocked = std::any_of(findings_.begin(), findings_.end(), [](const Finding& finding) {
      return finding.reason == DenialReason::kInvalid || finding.reason == DenialReason::kUnknownProfile;
    });
    if (sizing_.profile && (options_.report || options_.explain)) run_check_rules();
    if (sizing_.profile && options_.explain) explain();
    if (options_.report) report();
    // A shared replica is a share of a GPU: the tables' rows are for whole
    // ones, so it is said, not raised or denied (as nvidia.com/gpu.shared).
    if (options_.fix && pod_.mode == Mode::kMutate && !pod_.opted_out && !pod_.sized_at_creation && !sizing_.blocked &&
        shared_.empty()) {
      fix();
    }
    return std::move(sizing_);
  }

 private:
  const Profile& profile() const { return *sizing_.profile; }

  RuleInput rule_input() const {
    return {policy_,          pod_,         phases_, profile(), sizing_.profile_reason,
            options_.explain, &candidates_, {},      {},        options_.history};
  }

  // The nodes known (the caller's), else the policy's pools, also when no
  // known node is a candidate, else the catalogue's machines the pod
  // selects (an instance type, a GPU model: a pool scaled to zero shows
  // none until the pod waits), also when no pool may run it; why the known
  // ones may be out of date carries over either way.
  void choose_candidates() {
    const NodeInventory& known = options_.nodes ? *options_.nodes : *NodeInventory::none();
    const std::shared_ptr<const NodeInventory>& pools = policy_.rule_settings.get<NodeFitPolicy>().pool_nodes;
    const bool pools_first = known.source == InventorySource::kNone && pools;
    candidates_ = candidate_nodes(pools_first ? *pools : known, policy_, pod_, phases_.gpus);
    if (candidates_.nodes.empty()) {
      // No node the cluster has now may run the pod: it may be waiting
      // for the autoscaler to add one of the pools' shapes, or a machine
      // it selects. (The words only when said: most pods with no node
      // known select none.)
      const bool known_none = !pools_first && candidates_.known();
      const auto why = [&] {
        return known_none ? "none of " + known.origin + " may run it now: " + candidates_.why_none
                          : std::string("no node is known");
      };
      if (known_none && pools) {
        std::string stood_in = "of nodeFit.pools, as " + why();
        if (Candidates in_pools = candidate_nodes(*pools, policy_, pod_, phases_.gpus); !in_pools.nodes.empty()) {
          candidates_ = std::move(in_pools);
          candidates_.stood_in = std::move(stood_in);
        }
      }
      if (candidates_.nodes.empty()) {
        if (Candidates machines = catalogue_candidates(policy_, pod_, phases_.gpus); !machines.nodes.empty()) {
          std::string stood_in = "of the instance catalogue, as " + why();
          candidates_ = std::move(machines);
          candidates_.stood_in = std::move(stood_in);
        }
      }
    }
    candidates_.stale = known.stale;
    if (const std::string share = gpu_share(policy_, pod_); !share.empty()) {
      shared_ = "a share of a GPU (" + share + " beside it)";
    }
    if (!candidates_.known()) return;
    if (const std::string replicas = shared_replicas(candidates_); shared_.empty() && !replicas.empty()) {
      shared_ = "a shared replica on its nodes (" + replicas + ")";
    }
    written_ = pod_request(pod_, phases_.gpus, [](const ContainerFacts& c, std::string_view resource) {
      return c.effective_request(resource);
    });
    sizing_.nodes_holding = static_cast<std::size_t>(
        std::count_if(candidates_.nodes.begin(), candidates_.nodes.end(),
                      [&](const NodeClass* node) { return holds(*node, written_, candidates_.gpu_resource); }));
  }

  void run_floor_rules() {
    GPU_SIZER_REQUIRE(phases_.gpus > 0);  // Rule::evaluate's
    const RuleInput input = rule_input();
    for (const Rule* rule : sizing_rules()) {
      if (rule->stage() == Rule::Stage::kFloor) keep(rule->evaluate(input));
    }
    bind_floors();
    // Before any cap replaces the floor's basis.
    const Floor* memory = phases_.app() ? binding(0, kMemory) : nullptr;
    sizing_.history_binds = memory && memory->basis == "history";
    run_cap_rules();
    shortfalls_.find(pod_, phases_, binding_);
  }

  // Each ceiling replaces its binding floor with a copy that holds it, and
  // is lowered to it when above it.
  void run_cap_rules() {
    RuleInput input = rule_input();
    input.binding = [this](std::size_t phase, std::string_view resource) { return binding(phase, resource); };
    for (const Rule* rule : sizing_rules()) {
      if (rule->stage() != Rule::Stage::kCap) continue;
      keep(rule->evaluate(input));
      for (const Ceiling& ceiling : results_.back().ceilings) {
        const Floor*& slot = binding_[ceiling.phase][sized_resource_index(ceiling.resource)];
        if (!slot) continue;
        // At most one per slot: reserved once, the vector never moves the
        // floors the slots point at.
        if (capped_.empty()) capped_.reserve(std::size(kSizedResources) * phases_.phases.size());
        Floor held = *slot;
        held.most = ceiling.amount;
        held.basis = ceiling.basis;
        if (held.amount > ceiling.amount) {
          held.amount = ceiling.amount;
          sizing_.capped.push_back(ceiling.resource);
        }
        capped_.push_back(std::move(held));
        slot = &capped_.back();
      }
    }
  }

  void run_check_rules() {
    RuleInput input = rule_input();
    input.sized = [this] { return sized_pod(); };
    for (const Rule* rule : sizing_rules()) {
      if (rule->stage() == Rule::Stage::kCheck) keep(rule->evaluate(input));
    }
  }

  void keep(RuleResult result) {
    for (Finding& finding : result.findings) {
      // What a patch fixes is fixed in the Pods of a template that is not patched.
      if (pod_.sized_at_creation && result.fix && finding.deny) {
        finding = {finding.reason, false, "", fit(std::string(kAtCreation) + finding.brief)};
      }
      findings_.push_back(std::move(finding));
    }
    results_.push_back(std::move(result));
  }

  // The binding floor of each resource of each phase: the largest, the
  // first in rule order among equals.
  void bind_floors() {
    binding_.assign(phases_.phases.size(), {});
    for (const RuleResult& result : results_) {
      for (const Floor& floor : result.floors) {
        auto& slot = binding_[floor.phase][sized_resource_index(floor.resource)];
        if (!slot || floor.amount > slot->amount) slot = &floor;
      }
    }
  }

  const Floor* binding(std::size_t phase, std::string_view resource) const {
    return binding_[phase][sized_resource_index(resource)];
  }

  // What the phase needs in all, as OSMO's --set line gives it.
  Requirement phase_need(const Phase& phase) const {
    const std::size_t index = static_cast<std::size_t>(&phase - phases_.phases.data());
    Requirement need;
    if (const Floor* cpu = binding(index, kCpu)) need.cpu = cpu->amount;
    if (const Floor* memory = binding(index, kMemory)) need.memory = memory->amount;
    if (const Floor* storage = binding(index, kEphemeralStorage)) need.storage = storage->amount;
    return need;
  }

  std::optional<Quantity> sized_request(const ContainerFacts& c, std::string_view resource) const {
    return shortfalls_.sized_request(c, resource);
  }
  const Shortfall* shortfall(const ContainerFacts& c, std::string_view resource) const {
    return shortfalls_.of(c, resource);
  }

  // The scheduler's view of the sized pod: its app containers and sidecars
  // together, or its largest init container.
  // What the pod asks once sized: summed once, when the floors are bound
  // (the node fit rule and the larger-machine check both read it).
  const PodRequest& sized_pod() const {
    if (!sized_) {
      sized_ = pod_request(pod_, phases_.gpus, [this](const ContainerFacts& c, std::string_view resource) {
        return sized_request(c, resource);
      });
    }
    return *sized_;
  }

  bool is_pod_level(const ContainerFacts& c) const { return pod_.pod_level && &c == &*pod_.pod_level; }

  // Sizing that moves the pod to a larger machine than its own request
  // fits costs more per pod (issue 28): "node fit: smallest fitting
  // instance now g6e.4xlarge (was g6e.2xlarge)"; empty when the same
  // machine holds both, or the candidates are all one shape.
  std::string larger_machine() const {
    if (candidates_.shapes.size() < 2) return {};
    const NodeClass* before = smallest_holding(candidates_, written_);
    // Sizing only raises: a machine that holds the sized pod holds it as
    // written, so when the smallest for the written one holds it, it is
    // the smallest for both.
    if (!before || holds(*before, sized_pod(), candidates_.gpu_resource)) return {};
    const NodeClass* after = smallest_holding(candidates_, sized_pod());
    if (!after || before->shape == after->shape) return {};
    // The instance it now needs first: a long label cuts the end.
    return fit(pod_.label + "node fit: smallest fitting instance now " + after->shape + " (was " + before->shape + ")");
  }

  std::string holder_gpus(const Shortfall& s) const {
    if (is_pod_level(*s.container)) return gpus_text(phases_.gpus);
    return s.container->gpus == s.phase->gpus ? gpus_text(s.phase->gpus)
                                              : std::to_string(s.container->gpus) + " of " + gpus_text(s.phase->gpus);
  }

  // A warning about a container, or about the pod's spec.resources.
  std::string warning(const std::string& prefix, const ContainerFacts& c, const std::string& rest) const {
    return is_pod_level(c) ? fit(prefix + "spec.resources: " + rest) : fit_warning(prefix, c.name, rest);
  }

  bool denies_memory(const Shortfall& s) const {
    return s.floor->resource == kMemory && s.phase->gpus >= policy_.deny_from_gpus;
  }

  std::string denial(const Shortfall& s) const {
    std::string found = "request " + show(s.request);
    if (s.limit) found += ", limit " + s.limit->to_string();
    const bool pod_level = is_pod_level(*s.container);
    std::string fix = std::string(pod_level      ? "set spec.resources memory to "
                                  : s.limit_only ? "set its memory limit to "
                                                 : "set memory to ") +
                      s.need.to_string();
    if (const Shortfall* cpu = shortfall(*s.container, kCpu)) fix += " and cpu to " + cpu->need.to_string();
    fix +=
        osmo_fix(pod_.selection, set_hint(profile(), s.phase->gpus, phase_need(*s.phase))) + opt_out_fix(pod_, "them");
    const std::string& why = s.floor->arithmetic.empty() ? s.floor->basis : s.floor->arithmetic;
    const std::string subject = pod_level ? " spec.resources" : " container " + in_quotes(s.container->name);
    return pod_.description + subject + ": " + holder_gpus(s) + " need memory >= " + s.need.to_string() + " (" + why +
           "), found " + found + "; " + fix;
  }

  std::string short_finding(const Shortfall& s) const {
    const std::string found = s.limit_only ? "limit " + show(s.limit) : show(s.request);
    return std::string(s.floor->resource) + " " + found + " is below " + s.need.to_string() + " for " + holder_gpus(s) +
           " (" + s.floor->basis + ")";
  }

  // The notes of the binding memory floors that some container is below
  // (a data loader's arithmetic), each once.
  std::vector<std::string> binding_notes() const {
    std::vector<std::string> notes;
    for (const Shortfall& s : shortfalls_.all()) {
      const std::string& note = s.floor->note;
      if (s.floor->resource == kMemory && !note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end()) {
        notes.push_back(note);
      }
    }
    return notes;
  }

  // The validating endpoint: deny what must not run, warn about the rest;
  // in audit mode only say what would happen. Reported in the order of
  // DenialReason, each rule's findings in rule order.
  void report() {
    const bool audit = pod_.mode == Mode::kAudit;
    // A pod found by its shape is never denied either, and says so; nor
    // is a resize in mutate mode, where the webhook would have raised it.
    const bool deny = !audit && !pod_.found_by_shape && !(pod_.resize && pod_.mode == Mode::kMutate) && shared_.empty();
    const std::string would_deny = audit ? "audit: would deny: " : "would deny: ";
    std::vector<Entry> entries;
    entries.reserve(findings_.size() + shortfalls_.all().size() + 1);
    for (Finding& finding : findings_) {
      if (!finding.deny) {
        entries.push_back({finding.reason, false, std::move(finding.brief)});
      } else if (!deny) {
        entries.push_back({finding.reason, false, fit(would_deny + finding.brief)});
      } else {
        entries.push_back({finding.reason, true, std::move(finding.message)});
      }
    }
    if (!shared_.empty()) {
      entries.push_back(
          {DenialReason::kMemory, false, pod_.label + candidates_.gpu_resource + " is " + shared_ + ": not sized"});
    }
    for (const std::string& note : binding_notes()) entries.push_back({DenialReason::kMemory, false, note});
    for (const Shortfall& s : shortfalls_.all()) {
      if (pod_.sized_at_creation) {
        entries.push_back({DenialReason::kMemory, false,
                           warning(std::string(kAtCreation) + pod_.label, *s.container, short_finding(s))});
      } else if (denies_memory(s) && deny) {
        entries.push_back({DenialReason::kMemory, true, denial(s)});
      } else {
        const std::string prefix = denies_memory(s) && !deny ? would_deny : audit ? "audit: would raise: " : "";
        entries.push_back({DenialReason::kMemory, false, warning(prefix + pod_.label, *s.container, short_finding(s))});
      }
    }
    const auto by_reason = [](const Entry& a, const Entry& b) { return a.reason < b.reason; };
    if (!std::is_sorted(entries.begin(), entries.end(), by_reason)) {
      std::stable_sort(entries.begin(), entries.end(), by_reason);
    }
    PodReport& out = sizing_.report;
    for (Entry& entry : entries) {
      if (entry.denial) {
        out.denials.push_back(std::move(entry.text));
        out.denial_reasons.push_back(entry.reason);
      } else {
        out.warnings.push_back(fit(std::move(entry.text)));
      }
    }
  }

  // Mutate mode: each container's requests raised to its share (and a limit
  // below a new request with it), then each rule's fix.
  void fix() {
    Fix requests;
    // A raise of the request and of the limit at most for each.
    requests.edits.reserve(2 * shortfalls_.all().size());
    requests.warnings.reserve(shortfalls_.all().size() + 1);
    requests.raised.reserve(shortfalls_.all().size());
    const ContainerFacts* changed = nullptr;  // the container of requests.changes.back()
    for (const Shortfall& s : shortfalls_.all()) {
      const std::string_view resource = s.floor->resource;
      const bool raise_request = !s.limit_only && (!s.request || *s.request < s.need);
      const Quantity new_request = raise_request ? s.need : *s.request;
      const std::string new_text = new_request.to_string();
      std::string change;
      if (raise_request) {
        requests.edits.emplace_back(SetResource{s.container, false, resource, new_text});
        requests.raised.push_back(
            {std::string(resource), s.request ? new_request.plus(s.request->times(-1)) : new_request});
        const Quantity* written = s.container->requests.find(resource);
        change = std::string(resource) + " request " + (written ? written->to_string() : "unset") + "->" + new_text;
      }
      // A request above its limit is invalid: a limit below the new request
      // rises with it (under pod-level resources, to the container's share).
      const Quantity& new_limit = s.limit_only ? s.need : new_request;
      if (s.limit && *s.limit < new_limit) {
        const std::string limit_text = s.limit_only ? new_limit.to_string() : new_text;
        // A component's one field for both (VLLMRuntime's cpu) is written once.
        const ComponentFields* fields = s.container->fields;
        if (!fields || !raise_request || fields->field_for(resource, true) != fields->field_for(resource, false))
          requests.edits.emplace_back(SetResource{s.container, true, resource, limit_text});
        change +=
            (raise_request ? ", limit " : std::string(resource) + " limit ") + s.limit->to_string() + "->" + limit_text;
      }
      requests.warnings.push_back(
          warning(pod_.label, *s.container, change + " (" + holder_gpus(s) + ", " + s.floor->basis + ")"));
      if (changed == s.container) {
        requests.changes.back() += ", " + change;
      } else {
        requests.changes.push_back(s.container->name + ": " + change);
        changed = s.container;
      }
    }
    // The arithmetic of a floor follows the raises it explains.
    for (std::string& note : binding_notes()) requests.warnings.push_back(std::move(note));
    if (!requests.changes.empty()) {
      if (std::string moved = larger_machine(); !moved.empty()) requests.warnings.push_back(std::move(moved));
    }
    if (!requests.changes.empty()) sizing_.fixes.push_back(std::move(requests));
    for (RuleResult& result : results_) {
      if (result.fix) sizing_.fixes.push_back(std::move(*result.fix));
    }
  }

  void explain() {
    Explanation& out = sizing_.explanation;
    const Phase* app = phases_.app();
    // A pod whose profile sizes nothing (no table, no floor) shows no floor
    // rows: nothing binds.
    const Floor* memory = app ? binding(0, kMemory) : nullptr;
    for (const RuleResult& result : results_) {
      if (!result.row) continue;
      const bool floor_stage = rule_stage(result.row->rule) == Rule::Stage::kFloor;
      if (!floor_stage || memory) out.rules.push_back(*result.row);
    }
    if (memory) {
      out.binding = BindingRow{"memory " + memory->amount.to_string(),
                               memory->arithmetic.empty() ? memory->basis : memory->arithmetic};
    }
    // In mutate mode the pod runs with these; otherwise it is denied or
    // warned until its author sets them.
    const std::string requests_word =
        pod_.mode == Mode::kMutate && !pod_.opted_out ? "requests it runs with" : "requests it needs";
    for (const Phase& phase : phases_.phases) {
      for (const ContainerFacts* holder : phase.holders) {
        std::vector<std::string> values;
        for (std::string_view resource : kSizedResources) {
          if (auto value = sized_request(*holder, resource))
            values.push_back(std::string(resource) + " " + value->to_string());
        }
        const std::string share = holder->gpus == phase.gpus
                                      ? gpus_text(phase.gpus)
                                      : std::to_string(holder->gpus) + " of " + gpus_text(phase.gpus);
        out.containers.push_back({holder->name, values.empty() ? "-" : join(values, ", "),
                                  requests_word + " (" + share + (phase.app ? "" : ", init container") + ")"});
      }
    }
    std::vector<std::string> pod_level;
    for (std::string_view resource : {kCpu, kMemory}) {
      if (!pod_.sized_at_pod_level(resource)) continue;
      if (auto value = sized_request(*pod_.pod_level, resource))
        pod_level.push_back(std::string(resource) + " " + value->to_string());
    }
    if (!pod_level.empty()) {
      out.containers.push_back({pod_.pod_level->name, join(pod_level, ", "),
                                "pod-level " + requests_word + " (" + gpus_text(phases_.gpus) + ", all containers)",
                                true});
    }
  }

  static Rule::Stage rule_stage(RuleKind kind) {
    for (const Rule* rule : sizing_rules()) {
      if (rule->kind() == kind) return rule->stage();
    }
    return Rule::Stage::kFloor;
  }

  const Policy& policy_;
  const PodFacts& pod_;
  const PodPhases& phases_;
  const SizingOptions& options_;
  PodSizing sizing_;
  std::vector<Finding> findings_;  // in the order found: input, then each rule's

  // Each rule's, in the order run, in place: no allocation per result (a
  // deque took one per rule), and no vector's block of every rule's result
  // (over 1 KiB, which makes glibc consolidate every small block freed
  // before it: a tenth of a decision's time, docs/performance.md). Room for
  // the 8 rules of sizing_rules() and two more; past it, one allocation.
  static constexpr std::size_t kResultsInPlace = 10;
  boost::container::small_vector<RuleResult, kResultsInPlace> results_;
  Candidates candidates_;
  PodRequest written_;                       // the pod's request as written, once candidates are known
  mutable std::optional<PodRequest> sized_;  // sized_pod(), once summed
  std::string shared_;         // why the GPUs are shares of GPUs (gpu_share, shared_replicas); empty: whole
  std::vector<Floor> capped_;  // binding floors lowered by a ceiling; binding_ points at them
  // Per phase, per resource (kSizedResources order), the binding floor.
  BindingFloors binding_;
  Shortfalls shortfalls_;
};

}  // namespace

PodPhases pod_phases(const PodFacts& facts) {
  PodPhases result;
  Phase app;
  app.app = true;
  for (const ContainerFacts& c : facts.app) {
    if (c.gpus == 0) continue;
    app.holders.push_back(&c);
    app.gpus += c.gpus;
  }
  const int64_t app_gpus = app.gpus;
  result.gpus = app_gpus;
  if (app_gpus > kMaxGpusPerPod) {
    result.too_many_gpus = Problem{
        ProblemCode::kTooLarge, "",
        facts.description + ": its containers ask for " + gpus_text(app_gpus) + " together, more than any node has"};
  } else if (app_gpus > 0) {
    result.phases.push_back(std::move(app));
  }
  for (const ContainerFacts& c : facts.init) {
    if (c.gpus > app_gpus) result.phases.push_back(Phase{{&c}, c.gpus, false});
    result.gpus = std::max(result.gpus, c.gpus);
  }
  return result;
}

PodSizing size_pod(const Policy& policy, const PodFacts& pod, const PodPhases& phases,
                   std::span<const Problem> problems, const SizingOptions& options) {
  return PodSizer(policy, pod, phases, options).size(problems);
}

}  // namespace gpusizer
