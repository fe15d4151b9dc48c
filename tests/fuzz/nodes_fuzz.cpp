// Node objects on arbitrary JSON (what the watch and `check --nodes` read):
// a clear error or an inventory, never a crash; and with that inventory,
// the promise node caps make: a pod that some node holds as written is held
// by some node once the webhook has sized it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/nodes/autoscaler_reader.h"
#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/util/base64.h"

namespace gpusizer::fuzz {
namespace {

// A 1-GPU server pod asking little (it fits most nodes as written), owned by
// a ReplicaSet so the infer profile sizes it, with a nodeSelector and a
// toleration for fuzzed nodes to match or not.
nlohmann::json sample_review() {
  return nlohmann::json::parse(R"({
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
      "operation": "CREATE", "namespace": "serving", "name": "vllm-0",
      "object": {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "vllm-0", "namespace": "serving",
          "ownerReferences": [{"kind": "ReplicaSet", "name": "vllm", "controller": true}]},
        "spec": {"nodeSelector": {"pool": "gpu"},
          "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
          "containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "8Gi"}}}]}}}})");
}

// The validating pass's view of the pod: how many node shapes hold it.
std::optional<std::size_t> shapes_holding(const nlohmann::json& review, const NodeInventory& nodes) {
  const HttpReply reply =
      handle_review(default_policy(), Endpoint::kValidate, review.dump(), ClusterView{&nodes, nullptr});
  if (reply.status != 200) fail("a review of the sample pod is answered 200", reply.body);
  if (reply.outcome.pods.size() != 1) fail("the sample pod is decided");
  return reply.outcome.pods.front().nodes_holding;
}

}  // namespace
}  // namespace gpusizer::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpusizer;  // NOLINT(google-build-using-namespace)
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  JsonReader reader;
  auto document = reader.parse(text);
  if (!document) return 0;
  InventoryBuilder builder(InventorySource::kFile, "fuzz.json");
  if (Status added = add_nodes(document.value(), "fuzz.json", builder); !added.ok()) {
    if (added.message().empty()) fuzz::fail("an error says what is wrong");
    return 0;
  }
  // The autoscalers' objects beside them (a NodePool, its node class, a
  // ComputeClass), as `check --nodes` reads them: their machines join the
  // nodes.
  AutoscalerObjects pools;
  const auto add_pool = [&](JsonView object) {
    if (autoscaler_kind(object).empty()) return;
    if (Status read = add_autoscaler_object(object, pools); !read.ok() && read.message().empty())
      fuzz::fail("an error says what is wrong");
  };
  add_pool(document.value());
  document.value()["items"].for_each_element(add_pool);
  builder.set_launchable(launchable_machines(pools));
  const auto nodes = builder.build();
  if (nodes->node_count != builder.size()) fuzz::fail("every node is in a class");

  const nlohmann::json review = fuzz::sample_review();
  const auto before = fuzz::shapes_holding(review, *nodes);
  const HttpReply mutated =
      handle_review(default_policy(), Endpoint::kMutate, review.dump(), gpusizer::ClusterView{nodes.get(), nullptr});
  if (mutated.status != 200) fuzz::fail("the mutating answer is 200", mutated.body);
  nlohmann::json patched = review;
  const auto answer = nlohmann::json::parse(mutated.body);
  if (answer["response"].contains("patch")) {
    auto decoded = base64_decode(answer["response"]["patch"].get<std::string>());
    if (!decoded) fuzz::fail("the patch is base64", decoded.error());
    patched["request"]["object"] = review["request"]["object"].patch(nlohmann::json::parse(decoded.value()));
  }
  const auto after = fuzz::shapes_holding(patched, *nodes);
  if (before && *before > 0 && (!after || *after == 0)) {
    fuzz::fail("a pod some node holds as written is held by some node as sized", mutated.body);
  }
  return 0;
}
