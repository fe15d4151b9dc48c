#include "gpusizer/admission/pod_decision.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <unordered_map>

#include "gpusizer/json/json_text.h"
#include "gpusizer/json/paths.h"
#include "gpusizer/sizing/accelerator_asks.h"
#include "gpusizer/sizing/messages.h"
#include "gpusizer/util/contract.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// The gpu-sizer.io/sized annotation stays far below the API server's 256 KiB
// for all annotations of an object, whatever the number of containers.
constexpr std::size_t kSizedAnnotationBytes = 4096;

// Some templates can only be decided once their Pod exists: a GPU count or
// resource that is an expression filled in at run time, or an Argo
// podSpecPatch that may change resources. The reason, or empty.
std::string left_for_the_pod(const PodReading& reading, int64_t gpus) {
  const bool gpus_known_or_named = gpus > 0 || reading.unresolved_gpu || reading.spec_patch_names_gpu;
  if (reading.unresolved_gpu || (gpus > 0 && !reading.unresolved.empty())) {
    return reading.unresolved.front() + " until it is filled in";
  }
  if (reading.spec_patched && gpus_known_or_named) return "podSpecPatch may change its resources";
  return "";
}

// The edits of a fix's containers, one overlay per container (or pod
// spec, for spec.resources), in the order first edited: each is written
// as one JSON Patch operation.
class ContainerEdits {
 public:
  PatchOverlay& of(const ContainerFacts* container) {
    // A few containers are looked for in order; a pod of hundreds through
    // an index.
    if (edits_.size() < kScanned) {
      for (auto& [facts, overlay] : edits_) {
        if (facts == container) return overlay;
      }
    } else {
      if (index_.empty()) {
        for (std::size_t i = 0; i < edits_.size(); ++i) index_.emplace(edits_[i].first, i);
      }
      if (const auto found = index_.find(container); found != index_.end()) return edits_[found->second].second;
      index_.emplace(container, edits_.size());
    }
    return edits_.emplace_back(container, PatchOverlay{}).second;
  }
  void write(PatchBuilder& patch) const {
    for (const auto& [container, overlay] : edits_) patch.merge(container->path, overlay);
  }

 private:
  static constexpr std::size_t kScanned = 8;
  std::vector<std::pair<const ContainerFacts*, PatchOverlay>> edits_;
  std::unordered_map<const ContainerFacts*, std::size_t> index_;  // once there are kScanned
};

// One change to the pod: container edits go to their container's
// overlay, the others straight to the patch.
void write_edit(const PodEdit& edit, PatchBuilder& patch, ContainerEdits& containers) {
  if (const auto* set = std::get_if<SetResource>(&edit)) {
    const ContainerFacts& container = *set->container;
    PatchOverlay& overlay = containers.of(&container);
    if (const ComponentFields* fields = container.fields) {
      // Sizing raises only what the component has a field for.
      const std::string& field = fields->field_for(set->resource, set->limit);
      GPU_SIZER_REQUIRE(!field.empty());
      const std::vector<std::string_view> tokens = location_parts(field);
      overlay.set(tokens, set->value);
    } else {
      const std::array<std::string_view, 3> tokens = {container.resources_key, set->limit ? "limits" : "requests",
                                                      set->resource};
      overlay.set(tokens, set->value);
    }
  } else if (const auto* set = std::get_if<SetString>(&edit)) {
    patch.set(set->path, set->value);
  } else if (const auto* volume = std::get_if<AddMemoryVolume>(&edit)) {
    std::string json = R"({"name":)";
    append_json_string(json, volume->name);
    json += R"(,"emptyDir":{"medium":"Memory","sizeLimit":)";
    append_json_string(json, volume->size_limit.to_string());
    json += "}}";
    patch.append_json(volume->list_path, json);
  } else if (const auto* mount = std::get_if<MountVolume>(&edit)) {
    std::string json = R"({"name":)";
    append_json_string(json, mount->name);
    json += R"(,"mountPath":)";
    append_json_string(json, mount->mount_path);
    json += "}";
    static constexpr std::array<std::string_view, 1> kMounts = {"volumeMounts"};
    containers.of(mount->container).append_json(kMounts, std::move(json));
  }
}

// The pod's accelerator asks as explain shows them.
std::vector<AskRow> ask_rows(const Policy& policy, const PodFacts& pod, const std::vector<std::string>& pod_path) {
  std::vector<AskRow> rows;
  const auto row = [&](const AcceleratorAsk& ask, std::string holder, const std::string& at) {
    std::string detail = ask.of->unit + ", " + ask.vendor();
    if (const auto mig = ask.mig()) {
      detail += ", " + mig->profile + ", " + std::to_string(mig->memory_gb) + " GB GPU memory each";
    }
    switch (ask.sizing()) {
      case AcceleratorSizing::kGpus: detail += "; counted as GPUs"; break;
      case AcceleratorSizing::kWarn: detail += "; warned, not sized (policy accelerators)"; break;
      case AcceleratorSizing::kDetail: detail += "; describes the container's devices"; break;
    }
    rows.push_back({std::move(holder), ask.amount_text() + " " + std::string(ask.name), detail + "; at " + at});
  };
  for (const AcceleratorAsk& ask : annotation_asks(policy, pod)) {
    std::vector<std::string> path = pod_path;
    path.insert(path.end(), {"metadata", "annotations", std::string(ask.name)});
    row(ask, "pod", field_path(path));
  }
  for (const ClaimUse& use : pod.claim_uses) {
    const std::string source =
        use.source_kind.empty() ? "not in spec.resourceClaims" : use.source_kind + " " + use.source;
    const std::string holder = "container " + in_quotes(use.container);
    const std::string claim = "claim " + use.claim + (use.request.empty() ? "" : "/" + use.request);
    if (!use.known) {
      rows.push_back({holder, claim + " (" + source + ")",
                      "DRA claim; its " + std::string(use.source_kind.empty() ? "source" : use.source_kind) +
                          " is not known: not sized; at " + use.field});
      continue;
    }
    if (use.asks.empty())
      rows.push_back({holder, claim + " (" + source + ")",
                      "DRA claim of no accelerator class (admin access allocates none); at " + use.field});
    for (const AcceleratorAsk& ask : use.asks) {
      std::string at = source + " request " + std::string(ask.field) + ", used at " + use.field;
      if (ask.all_devices) at = "allocationMode All: every matching device of a node; " + at;
      if (ask.up_to > 0) at = "firstAvailable: up to " + std::to_string(ask.up_to) + "; " + at;
      if (!ask.model.empty()) at = "model " + std::string(ask.model) + "; " + at;
      if (ask.sizing() == AcceleratorSizing::kGpus && use.gpus == 0 && ask.amount.value_ceil() > 0)
        at = "counted at another container that uses the claim; " + at;
      row(ask, holder, at);
    }
  }
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      for (const AcceleratorAsk& ask : container_asks(policy, c)) {
        // A component's GPU count is its own field (resources_key holds its path).
        row(ask, "container " + in_quotes(c.name),
            field_path(c.path) + "." + c.resources_key + (c.fields ? "" : "." + std::string(ask.field)));
      }
    }
  }
  return rows;
}

// Moves src's items to the end of dst.
template <typename T>
void append(std::vector<T>& dst, std::vector<T>&& src) {
  if (dst.empty()) {
    dst = std::move(src);
  } else {
    dst.insert(dst.end(), std::make_move_iterator(src.begin()), std::make_move_iterator(src.end()));
  }
}

// Applies mutate mode's fixes and records them in the gpu-sizer.io/sized
// annotation.
void apply_fixes(const PodTarget& target, PodSizing& sizing, PodDecision& decision, PatchBuilder& patch) {
  ContainerEdits containers;
  for (Fix& fix : sizing.fixes) {
    for (const PodEdit& edit : fix.edits) write_edit(edit, patch, containers);
    append(decision.warnings, std::move(fix.warnings));
    append(decision.raised, std::move(fix.raised));
    append(decision.changes, std::move(fix.changes));
  }
  containers.write(patch);
  // A pod spec or container without metadata of its own has nowhere to
  // keep the annotation (the object's may hold several pods).
  if (decision.changes.empty() || !has_own_metadata(target.ref.shape)) return;
  const std::string sized = profile_text(*sizing.profile) + ", " + gpus_text(decision.gpus) + ": " +
                            join_capped(decision.changes, "; ", kSizedAnnotationBytes, "containers");
  std::vector<std::string> path = target.ref.path;
  path.insert(path.end(), {"metadata", "annotations", kSizedKey});
  patch.set(path, sized);
}

// Stamps a GPU Pod with its workload key for history to join on
// (sizing/history.h), whatever the sizing changed: mutate mode only, and
// never on a Pod that opted out.
void stamp_workload(const PodTarget& target, const PodFacts& pod, const PodSizing& sizing, int64_t gpus,
                    PatchBuilder& patch) {
  if (pod.workload.empty() || !sizing.profile || pod.mode != Mode::kMutate || pod.opted_out) return;
  std::vector<std::string> path = target.ref.path;
  path.insert(path.end(), {"metadata", "annotations", kWorkloadKey});
  patch.set(path, history_key(pod.workload, gpus, sizing.profile->name));
}

}  // namespace

PodDecision decide_pod(const Policy& policy, Endpoint endpoint, const PodTarget& target, PatchBuilder& patch) {
  PodDecision decision;
  decision.description = target.context.description;
  PodReading reading = read_pod(policy, target);
  const PodPhases phases = pod_phases(reading.facts);
  decision.gpus = phases.gpus;
  if (phases.too_many_gpus) {
    reading.problems.push_back(*phases.too_many_gpus);
    reading.accelerator_problem = true;
  }
  if (const std::string why = left_for_the_pod(reading, decision.gpus); !why.empty()) {
    // Said once, by the validating endpoint, which always runs; the Pod is
    // decided when it is created.
    decision.undecided = true;
    if (endpoint == Endpoint::kValidate) {
      decision.warnings.push_back(fit(target.context.description + ": " + why + "; its Pod is checked when created"));
      append(decision.warnings, std::move(reading.notes));
    }
    return decision;
  }
  if (decision.gpus == 0 && !reading.accelerator_problem) {
    // Said by the validating endpoint, which always runs.
    if (endpoint == Endpoint::kValidate && asks_other_accelerators(reading.facts)) {
      decision.warnings = unsized_ask_warnings(policy, reading.facts);
    }
    if (target.explain) decision.explanation.asks = ask_rows(policy, reading.facts, target.ref.path);
    return decision;
  }

  SizingOptions options;
  options.report = endpoint == Endpoint::kValidate;
  options.fix = endpoint == Endpoint::kMutate;
  options.explain = target.explain;
  options.nodes = target.cluster.nodes;
  options.history = target.cluster.history;
  PodSizing sizing = size_pod(policy, reading.facts, phases, reading.problems, options);
  decision.problems = std::move(reading.problems);
  if (sizing.profile) {
    decision.profile = sizing.profile->name;
    decision.profile_reason = sizing.profile_reason;
  }
  decision.capped.assign(sizing.capped.begin(), sizing.capped.end());
  decision.nodes_holding = sizing.nodes_holding;
  decision.explanation = std::move(sizing.explanation);
  if (target.explain) decision.explanation.asks = ask_rows(policy, reading.facts, target.ref.path);
  if (endpoint == Endpoint::kMutate) {
    apply_fixes(target, sizing, decision, patch);
    decision.history_raised =
        sizing.history_binds && std::any_of(decision.raised.begin(), decision.raised.end(),
                                            [](const Raise& raise) { return raise.resource == kMemory; });
    stamp_workload(target, reading.facts, sizing, decision.gpus, patch);
  } else {
    decision.denials = std::move(sizing.report.denials);
    decision.denial_reasons = std::move(sizing.report.denial_reasons);
    decision.warnings = std::move(sizing.report.warnings);
    if (asks_other_accelerators(reading.facts)) append(decision.warnings, unsized_ask_warnings(policy, reading.facts));
    append(decision.warnings, std::move(reading.notes));
  }
  return decision;
}

}  // namespace gpusizer
