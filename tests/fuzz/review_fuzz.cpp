// handle_review on arbitrary request bytes, at /mutate and at /validate,
// with the default policy: whole request in, whole response out, checked
// the way the API server uses it.
//
//   - the body is JSON: an AdmissionReview on 200, {"error": ...} on 400;
//   - a 200 answer echoes the request's uid and sets allowed; /mutate never
//     denies, /validate never patches; warnings stay short;
//   - the patch (base64 JSON Patch) applies to request.object;
//   - it lowers no request or limit and changes no GPU count;
//   - an object whose resources the API server accepts, it still accepts
//     once patched (support/api_validation.h);
//   - reviewing the patched object again patches nothing, and /validate
//     does not deny the memory of a pod /mutate has just raised.
//
// Half of the mutations are structure-aware (LLVMFuzzerCustomMutator): the
// input is parsed, one JSON node changed, and the document written back,
// so the pod decisions see reviews that are still well formed.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/sizing/policy.h"
#include "support/api_validation.h"
#include "support/review_support.h"

namespace gpusizer::fuzz {
namespace {

using nlohmann::json;

// A 200 answer's response, after the checks every answer must pass.
json checked_response(const HttpReply& reply, const json& request, Endpoint endpoint) {
  json answer;
  try {
    answer = json::parse(reply.body);
  } catch (const json::exception& error) {
    fail("the answer is JSON", error.what());
  }
  if (reply.status != 200) {
    if (reply.status != 400 || !answer.is_object() || !answer.contains("error") || !answer["error"].is_string() ||
        answer["error"].get<std::string>().empty()) {
      fail("a rejected review gets 400 and a JSON error", reply.body);
    }
    return nullptr;
  }
  if (answer.value("apiVersion", "") != "admission.k8s.io/v1" || answer.value("kind", "") != "AdmissionReview") {
    fail("a 200 answer is an AdmissionReview", reply.body);
  }
  const json& response = answer["response"];
  if (!response.is_object() || response.value("uid", json()) != request["request"]["uid"]) {
    fail("the answer echoes the request's uid", reply.body);
  }
  if (!response.contains("allowed") || !response["allowed"].is_boolean()) fail("allowed is set", reply.body);
  if (endpoint == Endpoint::kMutate && !response["allowed"].get<bool>()) fail("/mutate never denies", reply.body);
  if (endpoint == Endpoint::kValidate && response.contains("patch")) fail("/validate never patches", reply.body);
  if (response.contains("patch") != response.contains("patchType")) fail("patch comes with patchType", reply.body);
  if (response.contains("warnings")) {
    std::size_t total = 0;
    for (const json& warning : response["warnings"]) {
      if (!warning.is_string() || warning.get<std::string>().size() >= 120) fail("each warning is short", reply.body);
      total += warning.get<std::string>().size();
    }
    if (total >= 4096) fail("the warnings fit the API server's budget", reply.body);
  }
  return response;
}

// Pointers to every request and limit under any `resources` map.
void find_quantities(const json& node, const std::string& pointer, std::vector<std::string>& out) {
  if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) find_quantities(node[i], pointer + "/" + std::to_string(i), out);
    return;
  }
  if (!node.is_object()) return;
  for (const auto& [key, value] : node.items()) {
    const std::string at = pointer + "/" + escape_pointer_token(key);
    if (key == "resources" && value.is_object()) {
      for (const char* map : {"requests", "limits"}) {
        const auto it = value.find(map);
        if (it == value.end() || !it->is_object()) continue;
        for (const auto& [resource, quantity] : it->items()) {
          out.push_back(at + "/" + map + "/" + escape_pointer_token(resource));
        }
      }
    }
    find_quantities(value, at, out);
  }
}

void check_nothing_lowered(const json& object, const json& patched) {
  std::vector<std::string> pointers;
  find_quantities(object, "", pointers);
  for (const std::string& pointer : pointers) {
    const json::json_pointer at(pointer);
    if (!patched.contains(at)) fail("the patch removes no request or limit", pointer);
    const json& before = object.at(at);
    const json& after = patched.at(at);
    const std::string resource = at.back();
    if (default_policy().is_gpu_resource(resource)) {
      if (before != after) fail("GPU counts are never changed", pointer + ": " + before.dump() + " -> " + after.dump());
      continue;
    }
    static JsonReader before_reader;  // reused: a reader allocates its buffers once
    static JsonReader after_reader;
    const auto old_value = quantity_from_json(before_reader.view_of(before));
    if (!old_value) continue;
    const auto new_value = quantity_from_json(after_reader.view_of(after));
    if (!new_value || new_value.value() < old_value.value()) {
      fail("no request or limit is lowered", pointer + ": " + before.dump() + " -> " + after.dump());
    }
  }
}

// Applies a JSON Patch as the API server does (evanphx/json-patch), which is
// stricter than nlohmann's patch(): an `add` needs an existing parent that
// is an object, or an array and an index; a `replace` needs the value it
// replaces (a member, or an element by index).
json apply_as_the_api_server(const json& object, const json& operations, const std::string& answer) {
  json result = object;
  if (!operations.is_array()) fail("the patch is a list of operations", answer);
  for (const json& operation : operations) {
    const std::string text = operation.dump();
    const std::string op = operation.is_object() ? operation.value("op", "") : "";
    if ((op != "add" && op != "replace") || !operation.contains("value")) {
      fail("the patch only adds and replaces", text + "\n" + answer);
    }
    try {
      const json::json_pointer path(operation.value("path", ""));
      if (path.empty()) fail("the patch never replaces the whole object", text);
      json& parent = result.at(path.parent_pointer());
      const std::string& key = path.back();
      const bool index = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      if (op == "replace") {
        if (parent.is_object() && parent.contains(key)) {
          parent[key] = operation["value"];
        } else if (parent.is_array() && index && std::stoull(key) < parent.size()) {
          parent[std::stoull(key)] = operation["value"];
        } else {
          fail("each replace names a value that exists", text + "\n" + answer);
        }
      } else if (parent.is_object()) {
        parent[key] = operation["value"];
      } else if (parent.is_array() && key == "-") {
        parent.push_back(operation["value"]);
      } else if (parent.is_array() && index && std::stoull(key) <= parent.size()) {
        parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(std::stoull(key)), operation["value"]);
      } else {
        fail("each add's parent is an object, or an array and an index", text + "\n" + answer);
      }
    } catch (const std::exception& error) {
      fail("each operation's parent exists", text + ": " + error.what() + "\n" + answer);
    }
  }
  return result;
}

// DRA objects the reviews' claims may name (tests/fuzz/corpus/review/
// dra-*.json): templates of 4 GPUs, of a MIG slice and of every device,
// in the namespaces the seeds use, so that claims are resolved too.
const ClusterView& known_claims() {
  static const std::shared_ptr<const ClaimInventory> claims = [] {
    ClaimInventoryBuilder builder("fuzz");
    for (const char* namespace_name : {"default", "team-a", "ml-team"}) {
      DeviceAlternative all{"", "gpu.nvidia.com", 1, true, ""};
      builder.upsert({DraKind::kClaimTemplate, namespace_name, "four-gpus",
                      ClaimSpec{{DeviceRequest{"gpus", {DeviceAlternative{"", "gpu.nvidia.com", 4, false, ""}}}}}, ""});
      builder.upsert({DraKind::kClaimTemplate, namespace_name, "slice",
                      ClaimSpec{{DeviceRequest{"mig", {DeviceAlternative{"", "mig.nvidia.com", 1, false, "1g.5gb"}}}}},
                      ""});
      builder.upsert({DraKind::kClaim, namespace_name, "every-gpu", ClaimSpec{{DeviceRequest{"all", {all}}}}, ""});
    }
    return builder.build();
  }();
  static const ClusterView view{nullptr, claims.get()};
  return view;
}

void check_review(std::string_view body) {
  const Policy& policy = default_policy();
  const ClusterView& cluster = known_claims();
  const HttpReply mutated = handle_review(policy, Endpoint::kMutate, body, cluster);
  // 200 means the body parsed as a JSON object with a request.
  const json request = mutated.status == 200 ? json::parse(body) : json();
  const json response = checked_response(mutated, request, Endpoint::kMutate);
  const HttpReply validated = handle_review(policy, Endpoint::kValidate, body, cluster);
  if (validated.status != mutated.status) fail("both endpoints accept the same reviews", validated.body);
  checked_response(validated, request, Endpoint::kValidate);
  if (response.is_null() || !response.contains("patch")) return;

  if (response["patchType"] != "JSONPatch") fail("the patch type is JSONPatch", response.dump());
  const json& object = request["request"]["object"];
  json operations;
  try {
    operations = json::parse(testing::decode_base64(response["patch"].get<std::string>()));
  } catch (const std::exception& error) {
    fail("the patch is base64 JSON", std::string(error.what()) + "\n" + mutated.body);
  }
  const json patched = apply_as_the_api_server(object, operations, mutated.body);
  check_nothing_lowered(object, patched);
  // A pod the API server would accept is still accepted once patched.
  if (testing::api_resource_errors(object).empty()) {
    const std::vector<std::string> refused = testing::api_resource_errors(patched);
    if (!refused.empty()) fail("the patched object passes the API server's resource validation", refused.front());
  }

  json again = request;
  again["request"]["object"] = patched;
  const std::string again_body = again.dump();
  const HttpReply remutated = handle_review(policy, Endpoint::kMutate, again_body, cluster);
  const json second = checked_response(remutated, again, Endpoint::kMutate);
  if (second.is_null() || second.contains("patch")) fail("a second pass patches nothing", remutated.body);

  const HttpReply revalidated = handle_review(policy, Endpoint::kValidate, again_body, cluster);
  checked_response(revalidated, again, Endpoint::kValidate);
  const auto& raised = mutated.outcome.pods;
  const auto& checked = revalidated.outcome.pods;
  if (raised.size() != checked.size()) fail("the patch keeps the pod templates", revalidated.body);
  for (std::size_t i = 0; i < raised.size(); ++i) {
    if (raised[i].changes.empty()) continue;
    for (const DenialReason reason : checked[i].denial_reasons) {
      if (reason == DenialReason::kMemory) fail("a pod /mutate raised is not denied for memory", revalidated.body);
    }
  }
}

}  // namespace
}  // namespace gpusizer::fuzz

// libFuzzer's own byte-level mutation.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace gpusizer::fuzz {
namespace {

// Values the decisions branch on: GPU counts, quantities of every form,
// expressions, the annotation and label values that change a decision,
// and every JSON type.
const json& interesting_values() {
  static const json values = json::parse(R"json([
    "0", "1", "2", "3", "4", "8", "16", "0.5", "1e3", "1000m", "-1", "64Gi", "96Gi", "192Gi", "300Gi", "1Ei", "8Ei",
    "9223372036854775807", "100000000", "32", "1500m", "1n", "64GB", "", "{{inputs.parameters.gpus}}", "$(GPUS)",
    "false", "true", "Always", "infer", "render", "augment", "train", "unknown", "CREATE", "UPDATE", "Pod",
    "nvidia.com/gpu", "amd.com/gpu", "cpu", "memory", "ephemeral-storage", "kube-system",
    0, 1, 4, 8, -1, 1.5, 1e300, 9223372036854775807, 18446744073709551615, null, true, false, {}, [], [{}]
  ])json");
  return values;
}

const std::vector<std::string>& interesting_keys() {
  static const std::vector<std::string> keys = {"nvidia.com/gpu",
                                                "amd.com/gpu",
                                                "cpu",
                                                "memory",
                                                "ephemeral-storage",
                                                "requests",
                                                "limits",
                                                "resources",
                                                "containers",
                                                "initContainers",
                                                "restartPolicy",
                                                "metadata",
                                                "annotations",
                                                "labels",
                                                "name",
                                                "generateName",
                                                "gpu-sizer.io/profile",
                                                "gpu-sizer.io/mutate",
                                                "gpu-sizer.io/sized",
                                                "osmo.group_name",
                                                "podSpecPatch",
                                                "templateDefaults",
                                                "container",
                                                "script",
                                                "containerSet",
                                                "sidecars",
                                                "template",
                                                "spec",
                                                "oldObject",
                                                "deletionTimestamp",
                                                "subResource",
                                                "dryRun",
                                                "namespace",
                                                "operation"};
  return keys;
}

void collect(json& node, std::vector<json*>& out) {
  out.push_back(&node);
  if (node.is_structured()) {
    for (json& child : node) collect(child, out);
  }
}

// One structural change at a random node; false when none applied.
bool mutate_json(json& document, std::minstd_rand& random) {
  std::vector<json*> nodes;
  collect(document, nodes);
  json& node = *nodes[random() % nodes.size()];
  const json& values = interesting_values();
  const auto& keys = interesting_keys();
  switch (random() % 6) {
    case 0: node = values[random() % values.size()]; return true;
    case 1:
      if (!node.is_object() || node.empty()) return false;
      node.erase(std::next(node.begin(), static_cast<std::ptrdiff_t>(random() % node.size())).key());
      return true;
    case 2:
      if (!node.is_object()) return false;
      node[keys[random() % keys.size()]] = values[random() % values.size()];
      return true;
    case 3:
      if (!node.is_array() || node.empty()) return false;
      node.push_back(json(node[random() % node.size()]));
      return true;
    case 4: {
      json copy = *nodes[random() % nodes.size()];  // may contain node itself: copied first
      node = std::move(copy);
      return true;
    }
    default: {
      if (!node.is_string()) return false;
      std::string text = node.get<std::string>();
      const std::size_t capacity = text.size() + 16;
      text.resize(capacity);
      text.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(text.data()), node.get<std::string>().size(), capacity));
      node = std::move(text);
      return true;
    }
  }
}

}  // namespace
}  // namespace gpusizer::fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand random(seed);
  if (random() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr, false);
  if (document.is_discarded()) return LLVMFuzzerMutate(data, size, max_size);
  for (int tries = 0; tries < 8 && !gpusizer::fuzz::mutate_json(document, random); ++tries) {
  }
  const std::string text = document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpusizer::fuzz::check_review(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
