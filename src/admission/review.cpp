#include "gpusizer/admission/review.h"

#include <algorithm>

#include "gpusizer/admission/component_fields.h"
#include "gpusizer/json/json_text.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/slice_gpus.h"
#include "gpusizer/util/base64.h"
#include "gpusizer/util/kubernetes_names.h"
#include "gpusizer/util/strings.h"
#include "gpusizer/workloads/workloads.h"

namespace gpusizer {

std::string_view to_string(ReviewOutcome::Decision decision) {
  switch (decision) {
    case ReviewOutcome::Decision::kAllowed: return "allowed";
    case ReviewOutcome::Decision::kMutated: return "mutated";
    case ReviewOutcome::Decision::kDenied: return "denied";
    case ReviewOutcome::Decision::kError: return "error";
  }
  return "error";
}

namespace {

// The API server drops warnings past 4096 characters in total; stay clear.
constexpr std::size_t kWarningBudget = 3500;
// kubectl prints each warning on a line of its own: a workflow of
// thousands of raised templates gets a screen, not pages.
constexpr std::size_t kMaxWarningLines = 20;
// A denial and the audit annotations stay readable, and bounded, for a pod
// of thousands of containers.
constexpr std::size_t kMessageBudget = 8192;
// The largest JSON Patch an answer carries: the API server's own limit on a
// request body, 3 MiB (MaxRequestBodyBytes in k8s.io/apiserver
// pkg/server/config.go, twice etcd's default 1.5 MiB request limit). A
// patch that large grows an object past what etcd stores, so the API
// server would refuse the patched object anyway; answering it would cost
// this server tens of MiB per review (an 8 MiB review of 36,000 templates
// made a 49 MiB answer and 350 MiB of RSS).
constexpr std::size_t kMaxPatchBytes = std::size_t{3} << 20;

// What a 200 answer says. Optional fields are left out when unset.
struct Response {
  std::string_view uid;
  std::optional<std::string> bypassed;  // audit annotation: why sizing was skipped
  std::optional<std::string> sized;     // audit annotation: what the patch raised
  std::optional<std::string> patch;     // base64 JSON Patch
  // Set to deny: the status message of the 403 and the "denied" audit
  // annotation.
  std::optional<std::string> denial;
  std::optional<std::vector<std::string>> warnings;
};

// Appends ,"key":"value" (or "key":"value" first in its object).
void append_member(std::string& out, std::string_view key, std::string_view value, bool& first) {
  if (!first) out += ',';
  first = false;
  append_json_string(out, key);
  out += ':';
  append_json_string(out, value);
}

// The AdmissionReview answer as compact JSON text, written directly: keys in
// sorted order and strings escaped as nlohmann's dump() writes them, the
// bytes the answers have always had, without building a JSON value first.
// Strings in answers come from parsed (valid UTF-8) input, and truncation
// never splits a character; the escaping still replaces what is not UTF-8,
// so an answer is always valid JSON.
std::string answer_text(const Response& response) {
  std::string out;
  // A large patch would otherwise be copied at every doubling of the text.
  if (response.patch) out.reserve(response.patch->size() + 4 * kMessageBudget + kWarningBudget);
  out += R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"allowed":)";
  out += response.denial ? "false" : "true";
  if (response.bypassed || response.denial || response.sized) {
    out += R"(,"auditAnnotations":{)";
    bool first = true;
    if (response.bypassed) append_member(out, "bypassed", *response.bypassed, first);
    if (response.denial) append_member(out, "denied", *response.denial, first);
    if (response.sized) append_member(out, "sized", *response.sized, first);
    out += '}';
  }
  if (response.patch) {
    // Base64 has no character JSON escapes: the text goes in as it is.
    out += R"(,"patch":")";
    out += *response.patch;
    out += R"(","patchType":"JSONPatch")";
  }
  if (response.denial) {
    out += R"(,"status":{"code":403,"message":)";
    append_json_string(out, *response.denial);
    out += R"(,"reason":"Forbidden"})";
  }
  out += R"(,"uid":)";
  append_json_string(out, response.uid);
  if (response.warnings) {
    out += R"(,"warnings":[)";
    for (std::size_t i = 0; i < response.warnings->size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, (*response.warnings)[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

HttpReply bad_request(ReviewOutcome outcome, ProblemCode code, std::string path, const std::string& message) {
  outcome.decision = ReviewOutcome::Decision::kError;
  outcome.problem = Problem{code, std::move(path), message};
  return HttpReply{400, json_error_text(message), std::move(outcome)};
}

}  // namespace

std::vector<std::string> cap_warnings(std::vector<std::string> warnings) {
  std::vector<std::string> kept;
  std::size_t total = 0;
  for (std::size_t i = 0; i < warnings.size(); ++i) {
    std::string warning = fit(std::move(warnings[i]));
    const bool last_line = kept.size() + 1 == kMaxWarningLines && i + 1 < warnings.size();
    if (total + warning.size() > kWarningBudget || last_line) {
      kept.push_back("... and " + std::to_string(warnings.size() - i) + " more warnings (see annotation " + kSizedKey +
                     ")");
      break;
    }
    total += warning.size();
    kept.push_back(std::move(warning));
  }
  return kept;
}

namespace {

// What decide_object says about an object as a whole: an unknown kind (or
// a `known` one in a shape its row does not read) whose pods were found by
// their shape, and GPU asks no pod covers. Said once, by the validating
// endpoint (which always runs).
void describe_object(const ObjectIdentity& id, const std::string& object_text, JsonView object, bool discovered,
                     bool known, const std::vector<PodTemplateRef>& refs, const IsGpuResource& is_gpu,
                     ObjectDecision& out) {
  const std::string kind = shown_kind(id.kind);
  if (discovered && !refs.empty()) {
    std::vector<std::string> paths;
    for (const PodTemplateRef& ref : refs) paths.push_back(field_path(ref.path));
    // Short: the webhook's warnings are cut at 120 characters.
    out.warnings.push_back(kind + " " + object_text + (known ? ": not in its kind's known shape" : ": unknown kind") +
                           ", sized by shape: " + join_capped(paths, ", ", 1024, "paths") +
                           "; add it to policy workloads");
  }
  // The core group's other kinds (Node capacity, LimitRange,
  // ResourceQuota) hold limits, not asks.
  if (id.group.empty() && !id.kind.empty()) return;
  // A kind no table names may write its GPU count in a field of its own.
  const UnknownKind unknown{id.group, id.kind};
  const GpuAsks asks = gpu_asks_outside(object, refs, is_gpu, discovered || id.kind.empty() ? &unknown : nullptr);
  const auto listed = [](const std::vector<std::string>& paths, std::size_t count) {
    std::string where = join(paths, ", ");
    if (count > paths.size()) where += " and " + std::to_string(count - paths.size()) + " more";
    return where;
  };
  // A claim may hold a GPU or another device (a NIC, a compute domain's
  // channel): said, never denied. Its Pods' claims are read when they are
  // created. What to do first: the webhook's warnings are cut at 120
  // characters.
  if (asks.claim_count > 0 && !id.kind.empty()) {
    out.warnings.push_back(kind + " " + object_text +
                           ": if its DRA claims hold GPUs, set CPU and memory for them here (gpu-sizer table --gpus "
                           "N; its Pods are sized when created); claims not read: " +
                           listed(asks.claim_paths, asks.claim_count));
  }
  if (asks.count == 0) return;
  const std::string where = listed(asks.paths, asks.count);
  if (id.kind.empty()) {
    // Not a workload, so not an error: a chart's values, say, next to its manifests.
    out.warnings.push_back("not a Kubernetes object (no kind), but asks for GPUs at " + where +
                           "; if it is a Helm values file, check the rendered chart (helm template ... | gpu-sizer "
                           "check -)");
    return;
  }
  const std::string what = kind + " " + object_text + ": no pod gpu-sizer can size holds the GPUs at ";
  const std::string action =
      "; set its CPU and memory by hand, or name its pod templates or GPU fields in the policy's workloads: list";
  // The webhook's brief: what to do, then the first place, cut from its
  // start (its end names the resource) to stay within the warning's size.
  const std::string head =
      kind + " " + object_text + ": size by hand or name in policy workloads: GPUs no pod holds at ";
  const std::string more = asks.count > 1 ? " (+" + std::to_string(asks.count - 1) + ")" : "";
  std::string first = asks.paths.front();
  const std::size_t width = warning_width();
  const std::size_t room = width > head.size() + more.size() ? width - head.size() - more.size() : 0;
  if (first.size() > room && room > 8) first = "..." + first.substr(first.size() - (room - 3));
  out.unsized.push_back({what + where + action, fit(head + first + more)});
}

// A component with a GPU field and none for its CPU and memory (KubeAI's
// resourceProfile, KAITO's instanceType): nothing to patch, said naming
// the field; its pods are sized when created. Nullopt when it asks for no GPU.
std::optional<ObjectDecision::Unsized> component_unsized(const std::string& kind, const std::string& object_text,
                                                         const PodTemplateRef& ref) {
  const std::string asked = asked_gpus_text(ref.pod, *ref.fields);
  if (asked.empty()) return std::nullopt;
  std::vector<std::string> path = ref.path;
  for (const std::string_view key : location_parts(ref.fields->gpu)) path.emplace_back(key);
  const std::string field = field_path(path);
  const std::string head = kind + " " + object_text + ": ";
  return ObjectDecision::Unsized{
      head + "GPUs at " + field + " (" + in_quotes(printable(asked, kQuotedBytes)) +
          ") with no field of its own for their CPU and memory: its pods are sized when created; set the CPU and "
          "memory where its operator takes them from",
      fit(head + "GPUs at " + field + " have no CPU/memory field; pods sized at creation")};
}

// The known nodes with the GPU facts of the known ResourceSlices where
// their labels lack them (slice_gpus.h), worked out once per pair of
// inventories and policy on each server thread; the nodes as they are
// when no slice adds any.
const NodeInventory* nodes_with_slice_gpus(const Policy& policy, const ClusterView& cluster) {
  if (!cluster.nodes || !cluster.claims || cluster.claims->node_slices.empty()) return cluster.nodes;
  struct Memo {
    uint64_t nodes = 0;
    uint64_t claims = 0;
    const Policy* policy = nullptr;
    std::string policy_sha256;
    std::shared_ptr<const NodeInventory> filled;
  };
  thread_local Memo memo;
  if (memo.nodes != cluster.nodes->id || memo.claims != cluster.claims->id || memo.policy != &policy ||
      memo.policy_sha256 != policy.sha256) {
    memo = {cluster.nodes->id, cluster.claims->id, &policy, policy.sha256,
            with_slice_gpus(*cluster.nodes, *cluster.claims, policy)};
  }
  return memo.filled ? memo.filled.get() : cluster.nodes;
}

}  // namespace

ObjectDecision decide_object(const Policy& policy, Endpoint endpoint, const ObjectIdentity& id, JsonView object,
                             PatchBuilder& patch, JsonView old_object, bool explain, const ClusterView& cluster) {
  // The nodes as the rules see them: with their ResourceSlices' GPU facts.
  const ClusterView with_slices{nodes_with_slice_gpus(policy, cluster), cluster.claims, cluster.history};
  const bool is_pod = id.group.empty() && id.kind == "Pod";
  // Messages name the object as Kubernetes would; a name it would refuse
  // (a forged review's megabyte namespace) is quoted short.
  const std::string object_text = shown_object(id.namespace_name, id.name);
  const std::string kind_text = shown_kind(id.kind);
  ObjectDecision decision;
  const Mode mode = policy.mode_for(id.namespace_name);
  const auto& long_lived = policy.long_lived.kinds;
  const bool sized_at_creation = !is_pod && mode == Mode::kMutate && !policy.long_lived.patch_templates &&
                                 std::find(long_lived.begin(), long_lived.end(), id.kind) != long_lived.end();
  // Every accelerator, sized or not: none may pass with no word.
  const IsGpuResource is_gpu = [&](std::string_view name) { return policy.accelerator_for(name) != nullptr; };
  const WorkloadKind* kind = find_workload_kind(id.group, id.kind, policy.workloads);
  std::vector<PodTemplateRef> refs = kind ? find_pod_templates(*kind, object) : std::vector<PodTemplateRef>();
  // A kind no table names is searched for pods by their shape, as is a
  // CRD's kind of the table with none at the places its row names (another
  // API version's shape: MPIJob v1alpha1's spec.template and spec.gpus,
  // where v2beta1 has mpiReplicaSpecs; a CRD's group has a dot, and the
  // built-in kinds' objects have the one shape the API server decodes). An
  // object without a kind (a Helm values file given to check) is not a
  // workload, nor is a core kind other than Pod (a ConfigMap, a Node).
  const bool discovered =
      refs.empty() && !id.kind.empty() && (kind ? id.group.find('.') != std::string::npos : !id.group.empty());
  if (discovered) refs = discover_pod_templates(object, is_gpu);
  // An update that leaves the spec alone (labels, finalizers) was described
  // when it was made.
  const bool spec_changed = old_object.is_absent() || !(old_object["spec"] == object["spec"]);
  if (endpoint == Endpoint::kValidate && !is_pod && spec_changed) {
    describe_object(id, object_text, object, discovered, kind != nullptr, refs, is_gpu, decision);
  }
  PathReader old_paths(old_object);
  const JsonView parent_metadata = is_pod ? JsonView() : object["metadata"];
  // What the templates take from the object, read once for all of them:
  // its metadata (as templates with metadata of their own take it, and as
  // the others do), and each Argo workflow spec.
  std::shared_ptr<const InheritedSelection> inherited[2];
  std::shared_ptr<const ArgoWorkflow> workflow;
  std::vector<std::string> workflow_path;  // of the spec `workflow` was read from
  // A pod template of the object holds GPUs (a KAITO Workspace's
  // inference.template): the GPUs of its instance type are that pod's, and
  // its CPU and memory are set there, so the type is not said as unsized.
  const std::size_t first_component_unsized = decision.unsized.size();
  bool template_holds_gpus = false;
  for (const PodTemplateRef& ref : refs) {
    if (!old_object.is_absent()) {
      const JsonView old_template = old_paths.at(ref.path);
      if (!old_template.is_absent() && old_template == ref.pod) continue;
    }
    std::string label;
    if (!ref.template_name.empty()) {
      label = "template " + in_quotes(ref.template_name) + " ";
    } else if (!ref.replica_type.empty()) {
      label = printable(ref.replica_type, kQuotedBytes) + " ";
    } else if (!is_pod && (ref.shape != PodShape::kContainer || discovered) && ref.shape != PodShape::kFields) {
      // A container or component a row names is named by its field path
      // already; one found by its shape is named by its container name,
      // which two of them may share (OME's leader and worker runners).
      label = field_path(ref.path) + " ";
    }
    const std::string description = is_pod ? "pod " + object_text : kind_text + " " + object_text + " " + label;
    std::shared_ptr<const InheritedSelection>& selection = inherited[has_own_metadata(ref.shape) ? 1 : 0];
    if (!selection && !is_pod) {
      selection = read_inherited_selection(policy, parent_metadata, has_own_metadata(ref.shape));
    }
    if (ref.shape == PodShape::kArgoTemplate && (!workflow || workflow_path != ref.workflow_spec_path)) {
      workflow = read_argo_workflow(policy, ref);
      workflow_path = ref.workflow_spec_path;
    }
    // A component with no field for its CPU and memory can only be said.
    const bool unpatchable = ref.shape == PodShape::kFields && !ref.fields->writes_resources();
    if (unpatchable && endpoint == Endpoint::kValidate) {
      if (auto unsized = component_unsized(kind_text, object_text, ref))
        decision.unsized.push_back(std::move(*unsized));
    }
    PodContext context{.description = description.substr(0, description.find_last_not_of(' ') + 1),
                       .mode = mode,
                       .label = label,
                       .sized_at_creation = sized_at_creation || unpatchable,
                       .found_by_shape = discovered,
                       .tolerations_final = is_pod && id.admitted,
                       .resize = id.resize};
    const PodTarget target{.ref = ref,
                           .context = std::move(context),
                           .parent_metadata = parent_metadata,
                           .explain = explain,
                           .cluster = with_slices,
                           .namespace_name = id.namespace_name,
                           .kind = kind_text,
                           .inherited = selection,
                           .workflow = ref.shape == PodShape::kArgoTemplate ? workflow : nullptr};
    decision.pods.push_back(decide_pod(policy, endpoint, target, patch));
    template_holds_gpus = template_holds_gpus || (ref.shape != PodShape::kFields && decision.pods.back().gpus > 0);
  }
  if (template_holds_gpus) {
    decision.unsized.erase(decision.unsized.begin() + static_cast<std::ptrdiff_t>(first_component_unsized),
                           decision.unsized.end());
  }
  return decision;
}

HttpReply handle_review(const Policy& policy, Endpoint endpoint, std::string_view body, const ClusterView& cluster,
                        std::size_t body_capacity) {
  ReviewOutcome outcome;
  // One reader per server thread: its buffers are reused, review after review.
  thread_local JsonReader reader;
  // Runs once the answer is built (locals end after the return value).
  struct ReleaseAfterAnswer {
    JsonReader& reader;
    ~ReleaseAfterAnswer() { reader.release_large_buffers(); }
  } release{reader};
  auto parsed = reader.parse(body, body_capacity);
  if (!parsed) return bad_request(std::move(outcome), ProblemCode::kSyntax, "", "request body " + parsed.error());
  const JsonView review = parsed.value();
  if (!review.is_object())
    return bad_request(std::move(outcome), ProblemCode::kWrongType, "",
                       "request body must be a JSON object (an AdmissionReview)");
  const std::string api_version = string_member(review, "apiVersion");
  if (api_version != "admission.k8s.io/v1") {
    return bad_request(std::move(outcome), ProblemCode::kBadValue, "apiVersion",
                       "apiVersion must be admission.k8s.io/v1, found " + in_quotes(api_version) +
                           " (register the webhook with admissionReviewVersions: [v1])");
  }
  if (string_member(review, "kind") != "AdmissionReview") {
    return bad_request(std::move(outcome), ProblemCode::kBadValue, "kind",
                       "kind must be AdmissionReview, found " + in_quotes(review["kind"].string()));
  }
  const JsonView request = review["request"];
  if (!request.is_object()) {
    return bad_request(std::move(outcome), ProblemCode::kWrongType, "request", "request is missing or not an object");
  }
  outcome.uid = string_member(request, "uid");
  if (outcome.uid.empty()) {
    return bad_request(std::move(outcome), ProblemCode::kWrongType, "request.uid",
                       "request.uid is missing or not a non-empty string");
  }
  const JsonView kind = request["kind"];
  outcome.kind = string_member(kind, "kind");
  outcome.operation = string_member(request, "operation");
  outcome.namespace_name = string_member(request, "namespace");
  outcome.name = string_member(request, "name");
  outcome.dry_run = request["dryRun"].is_true();

  Response response;
  std::vector<std::string> warnings;
  std::vector<std::string> denials;
  const JsonView object = request["object"];
  PatchBuilder patch(object, kMaxPatchBytes);

  // Pods are sized when created (their resources cannot change through
  // this path afterwards); workload templates when created or updated.
  // Subresources (status, scale, binding) carry no pod spec.
  const std::string group = string_member(kind, "group");
  const bool is_pod = group.empty() && outcome.kind == "Pod";
  // An in-place resize (KEP-1287, pods/resize) of a running Pod: checked
  // as when it was created, by the validating endpoint; nothing patched.
  const std::string sub_resource = string_member(request, "subResource");
  const bool resize =
      is_pod && outcome.operation == "UPDATE" && sub_resource == "resize" && endpoint == Endpoint::kValidate;
  const bool decided_operation = outcome.operation == "CREATE" || (!is_pod && outcome.operation == "UPDATE") || resize;
  // A review that does not say what it reviews decides nothing.
  const bool decide = !outcome.kind.empty() && decided_operation && (sub_resource.empty() || resize) &&
                      // An object being deleted only loses finalizers: let it go.
                      object["metadata"]["deletionTimestamp"].is_null();
  if (decide) {
    const JsonView user_info = request["userInfo"];
    std::vector<std::string> groups;
    for (const JsonView name : user_info["groups"].elements()) {
      if (name.is_string()) groups.emplace_back(name.string());
    }
    outcome.bypass = policy.exemption_for(outcome.namespace_name, string_member(user_info, "username"), groups);
  }
  if (outcome.bypass) {
    // The API server's audit log records who skipped sizing and why.
    response.bypassed = outcome.bypass->reason + " \"" + outcome.bypass->name + "\" is exempt in the gpu-sizer policy";
  } else if (decide) {
    if (!object.is_object()) {
      // Worded before the call: its arguments are evaluated in no set order.
      std::string message = "request.object must be the " + shown_kind(outcome.kind) + " being " +
                            (outcome.operation == "CREATE" ? "created" : "updated") + ", as a JSON object";
      return bad_request(std::move(outcome), ProblemCode::kWrongType, "request.object", message);
    }
    const JsonView metadata = object["metadata"];
    if (outcome.name.empty()) outcome.name = string_member(metadata, "name");
    if (outcome.name.empty()) outcome.name = string_member(metadata, "generateName") + "*";
    const ObjectIdentity id{group, outcome.kind, outcome.namespace_name, outcome.name, true, resize};
    std::vector<std::string> changes;
    const JsonView old_object = request["oldObject"];
    const JsonView unchanged_from = outcome.operation == "UPDATE" && old_object.is_object() ? old_object : JsonView();
    ObjectDecision decided = decide_object(policy, endpoint, id, object, patch, unchanged_from, false, cluster);
    if (patch.overflowed()) {
      // Nothing is raised: the object is admitted as written (and the
      // validating pass says what each pod needs), never half patched.
      std::size_t raised_pods = 0;
      for (PodDecision& pod : decided.pods) {
        raised_pods += pod.changes.empty() ? 0 : 1;
        pod.changes.clear();
        pod.raised.clear();
      }
      const std::string what = shown_kind(id.kind) + " " + shown_object(id.namespace_name, id.name);
      warnings.push_back(fit(what + ": not patched: raising it takes a JSON Patch over 3 MiB; set resources by hand"));
      response.sized = "not patched: raising its " + std::to_string(raised_pods) +
                       (raised_pods == 1 ? " pod" : " pods") +
                       " takes a JSON Patch over 3 MiB, more than the API server accepts in a "
                       "request and past the 1.5 MiB etcd stores once applied; set their resources in the manifest "
                       "(gpu-sizer check --fix writes them)";
    }
    for (std::string& note : decided.warnings) warnings.push_back(fit(std::move(note)));
    for (ObjectDecision::Unsized& unsized : decided.unsized) warnings.push_back(std::move(unsized.brief));
    for (PodDecision& pod : decided.pods) {
      warnings.insert(warnings.end(), pod.warnings.begin(), pod.warnings.end());
      denials.insert(denials.end(), pod.denials.begin(), pod.denials.end());
      for (const auto& change : pod.changes) changes.push_back(is_pod ? change : pod.description + ": " + change);
      outcome.pods.push_back(std::move(pod));
    }
    if (!changes.empty()) {
      response.sized = join_capped(changes, "; ", kMessageBudget, "containers");
    }
  }

  outcome.decision = ReviewOutcome::Decision::kAllowed;
  if (!denials.empty()) {
    outcome.decision = ReviewOutcome::Decision::kDenied;
    response.denial = join_capped(denials, "; ", kMessageBudget, "denials");
  } else if (endpoint == Endpoint::kMutate && !patch.empty() && !patch.overflowed()) {
    outcome.decision = ReviewOutcome::Decision::kMutated;
    response.patch = base64_encode(patch.text());
  }
  if (!warnings.empty()) response.warnings = cap_warnings(std::move(warnings));
  response.uid = outcome.uid;
  std::string answer = answer_text(response);
  return HttpReply{200, std::move(answer), std::move(outcome)};
}

}  // namespace gpusizer
