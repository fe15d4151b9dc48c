// DRA claims: ResourceClaimTemplates, ResourceClaims and DeviceClasses read
// (nodes/claim_reader.h), a claim's requests as accelerator asks
// (claim_asks), and decide_pod on pods whose containers use claims, with
// the DRA objects known and without them.

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/json/json_patch.h"
#include "gpusizer/nodes/claim_reader.h"
#include "gpusizer/nodes/node_reader.h"
#include "gpusizer/sizing/accelerator_asks.h"
#include "support/pod_decision_support.h"

namespace gpusizer::device_claims_test {
namespace {

using namespace pod_decision_test;  // NOLINT(google-build-using-namespace)

Result<std::optional<DraObject>> read(const json& object) {
  JsonReader reader;
  return read_dra_object(reader.view_of(object));
}

json claim_template(const std::string& name, json requests, const std::string& version = "resource.k8s.io/v1") {
  return {{"apiVersion", version},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"spec", {{"devices", {{"requests", std::move(requests)}}}}}}}};
}

json exactly(const std::string& name, const std::string& device_class, json count = nullptr) {
  json fields = {{"deviceClassName", device_class}};
  if (!count.is_null()) fields["count"] = std::move(count);
  return {{"name", name}, {"exactly", fields}};
}

// Builds an inventory of the objects, each read as the reader reads it.
std::shared_ptr<const ClaimInventory> inventory_of(const std::vector<json>& objects) {
  ClaimInventoryBuilder builder("test");
  for (const json& object : objects) {
    auto read_object = read(object);
    EXPECT_TRUE(read_object.ok()) << (read_object.ok() ? "" : read_object.error());
    if (read_object.ok() && read_object.value()) builder.upsert(std::move(*read_object.value()));
  }
  return builder.build();
}

TEST(ReadDraObject, ReadsEachApiVersionsRequests) {
  // v1: exactly, with the API's default count of 1.
  auto v1 = read(claim_template("two", json::array({exactly("a", "gpu.nvidia.com", 2), exactly("b", "x.com")})));
  ASSERT_TRUE(v1.ok() && v1.value());
  const ClaimSpec& spec = v1.value()->spec;
  ASSERT_EQ(spec.requests.size(), 2U);
  EXPECT_EQ(spec.requests[0].name, "a");
  EXPECT_EQ(spec.requests[0].alternatives[0].device_class, "gpu.nvidia.com");
  EXPECT_EQ(spec.requests[0].alternatives[0].count, 2);
  EXPECT_EQ(spec.requests[1].alternatives[0].count, 1);
  // v1beta1: the request's own fields; allocationMode All.
  auto beta = read(claim_template(
      "all", json::array({{{"name", "g"}, {"deviceClassName", "gpu.nvidia.com"}, {"allocationMode", "All"}}}),
      "resource.k8s.io/v1beta1"));
  ASSERT_TRUE(beta.ok() && beta.value());
  EXPECT_TRUE(beta.value()->spec.requests[0].alternatives[0].all);
  // firstAvailable, in order, with the model a CEL selector compares to.
  json first = {{"name", "gpu"},
                {"firstAvailable",
                 json::array({{{"name", "h100"},
                               {"deviceClassName", "gpu.nvidia.com"},
                               {"count", 4},
                               {"selectors", json::array({{{"cel",
                                                            {{"expression",
                                                              "device.attributes['gpu.nvidia.com'].productName == "
                                                              "'NVIDIA H100 80GB HBM3'"}}}}})}},
                              {{"name", "any"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 8}}})}};
  auto ordered = read(claim_template("first", json::array({first})));
  ASSERT_TRUE(ordered.ok() && ordered.value());
  const auto& alternatives = ordered.value()->spec.requests[0].alternatives;
  ASSERT_EQ(alternatives.size(), 2U);
  EXPECT_EQ(alternatives[0].name, "h100");
  EXPECT_EQ(alternatives[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(alternatives[1].count, 8);
}

TEST(ReadDraObject, SkipsWhatGivesThePodNoDevicesAndOtherKinds) {
  // Admin access (monitoring) allocates nothing.
  json admin = exactly("monitor", "gpu.nvidia.com");
  admin["exactly"]["adminAccess"] = true;
  auto read_admin = read(claim_template("admin", json::array({admin})));
  ASSERT_TRUE(read_admin.ok() && read_admin.value());
  EXPECT_TRUE(read_admin.value()->spec.requests.empty());
  // A claim the API server made for one pod from a template.
  const json generated = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata",
       {{"name", "pod-gpus-x7k2"}, {"ownerReferences", json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}}})}}},
      {"spec", {{"devices", {{"requests", json::array({exactly("g", "gpu.nvidia.com")})}}}}}};
  auto read_generated = read(generated);
  ASSERT_TRUE(read_generated.ok());
  EXPECT_FALSE(read_generated.value());
  auto pod = read({{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}});
  ASSERT_TRUE(pod.ok());
  EXPECT_FALSE(pod.value());
  // A DeviceClass keeps its extended resource name (KEP-5004).
  auto device_class = read({{"apiVersion", "resource.k8s.io/v1"},
                            {"kind", "DeviceClass"},
                            {"metadata", {{"name", "gpu.example.com"}}},
                            {"spec", {{"extendedResourceName", "example.com/gpu"}}}});
  ASSERT_TRUE(device_class.ok() && device_class.value());
  ClaimInventoryBuilder builder("test");
  builder.upsert(std::move(*device_class.value()));
  EXPECT_EQ(builder.build()->extended_resources.at("example.com/gpu"), "gpu.example.com");
}

TEST(ReadDraObject, ABadFieldIsNamedWithItsValue) {
  const auto bad = [](json request) { return read(claim_template("bad", json::array({std::move(request)}))); };
  auto count = bad(exactly("gpus", "gpu.nvidia.com", "two"));
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error(),
            "spec.spec.devices.requests[0].exactly.count \"two\" must be a whole number from 1 to 1048576");
  json mode = exactly("gpus", "gpu.nvidia.com");
  mode["exactly"]["allocationMode"] = "Some";
  ASSERT_FALSE(bad(mode).ok());
  EXPECT_EQ(bad(mode).error(),
            "spec.spec.devices.requests[0].exactly.allocationMode \"Some\" is not ExactCount or All");
  auto list = read(claim_template("bad", "gpus"));
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error(), "spec.spec.devices.requests is not a list");
}

TEST(ClaimAsks, FirstAvailableCountsTheFewestAndSaysTheMost) {
  const Policy& policy = default_policy();
  json first = {
      {"name", "gpu"},
      {"firstAvailable", json::array({{{"name", "eight"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 8}},
                                      {{"name", "two"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 2}}})}};
  const auto claims = inventory_of({claim_template("t", json::array({first, exactly("nic", "net.example.com")}))});
  const ClaimSpec& spec = *claims->find("ResourceClaimTemplate", "default", "t");
  const auto asks = claim_asks(policy, spec, "");
  ASSERT_EQ(asks.size(), 1U);  // the NIC's class is no accelerator
  EXPECT_EQ(asks[0].name, "gpu.nvidia.com");
  EXPECT_EQ(asks[0].amount.value_ceil(), 2);
  EXPECT_EQ(asks[0].up_to, 8);
  EXPECT_EQ(claim_gpus(asks), 2);
  // A use naming one alternative gets that one.
  EXPECT_EQ(claim_gpus(claim_asks(policy, spec, "gpu/eight")), 8);
  EXPECT_TRUE(claim_asks(policy, spec, "nic").empty());
  // An alternative of a class not counted as GPUs (a MIG slice) gets none.
  json mixed = {
      {"name", "gpu"},
      {"firstAvailable", json::array({{{"name", "whole"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 1}},
                                      {{"name", "slice"}, {"deviceClassName", "mig.nvidia.com"}, {"count", 1}}})}};
  const auto mixed_claims = inventory_of({claim_template("m", json::array({mixed}))});
  const auto mixed_asks = claim_asks(policy, *mixed_claims->find("ResourceClaimTemplate", "default", "m"), "");
  ASSERT_EQ(mixed_asks.size(), 1U);
  EXPECT_EQ(claim_gpus(mixed_asks), 0);
  EXPECT_EQ(mixed_asks[0].up_to, 1);
}

TEST(ClaimAsks, APartitionOfAGpuByItsTypeIsAPartNotAGpu) {
  // ROCm/k8s-gpu-dra-driver example/example-partitions-same-parent.yaml:
  // gpu.amd.com serves whole GPUs and their partitions; a selector on the
  // device's type asks for a partition, warned as a MIG slice is.
  json partition = exactly("p0", "gpu.amd.com");
  partition["exactly"]["selectors"] =
      json::array({{{"cel", {{"expression", R"(device.attributes["gpu.amd.com"].type == "amdgpu-partition")"}}}}});
  const auto claims = inventory_of({claim_template("p", json::array({partition, exactly("g", "gpu.amd.com")}))});
  const auto asks = claim_asks(default_policy(), *claims->find("ResourceClaimTemplate", "default", "p"), "");
  ASSERT_EQ(asks.size(), 2U);
  EXPECT_EQ(asks[0].form(), AcceleratorForm::kMigSlice);
  EXPECT_EQ(asks[0].sizing(), AcceleratorSizing::kWarn);
  EXPECT_EQ(claim_gpus(asks), 1) << "the whole GPU of the second request only";
}

// A pod whose containers use claims named by the pod's spec.resourceClaims.
json pod_with_claims(json containers, json claims) {
  json pod = pod_of(std::move(containers));
  pod["spec"]["resourceClaims"] = std::move(claims);
  return pod;
}

json claim_user(const std::string& name, const std::string& claim, json requests = json::object()) {
  return {{"name", name},
          {"image", "pytorch"},
          {"resources", {{"requests", std::move(requests)}, {"claims", json::array({{{"name", claim}}})}}}};
}

TEST(DraPods, AKnownTemplateIsSizedAsItsGpus) {
  const auto claims = inventory_of({claim_template("four-gpus", json::array({exactly("gpus", "gpu.nvidia.com", 4)}))});
  const json pod = pod_with_claims(json::array({claim_user("trainer", "gpus", {{"cpu", "8"}, {"memory", "64Gi"}})}),
                                   json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", "four-gpus"}}}));
  const Outcome m = run(pod, Endpoint::kMutate, Mode::kMutate, default_policy(), {nullptr, claims.get()});
  EXPECT_EQ(m.decision.gpus, 4);
  EXPECT_EQ(resources_of(m.patched)["requests"]["memory"], "192Gi");
  EXPECT_EQ(resources_of(m.patched)["requests"]["cpu"], "32");
  // Sized, nothing is left to say; below the floors in enforce mode is denied.
  EXPECT_TRUE(validate(m.patched, Mode::kEnforce, default_policy(), {nullptr, claims.get()}).decision.warnings.empty());
  EXPECT_FALSE(validate(pod, Mode::kEnforce, default_policy(), {nullptr, claims.get()}).decision.denials.empty());
  // Without the template (another namespace's, or none known): said, not sized.
  const Outcome unknown = validate(pod, Mode::kEnforce, default_policy(), {nullptr, inventory_of({}).get()});
  EXPECT_EQ(unknown.decision.gpus, 0);
  EXPECT_TRUE(unknown.decision.denials.empty());
  EXPECT_TRUE(has_line(unknown.decision.warnings, {"DRA claim \"gpus\" (template \"four-gpus\") is not sized"}));
}

// NVIDIA's ComputeDomain (k8s-dra-driver-gpu): its controller makes the
// template a multi-node NVLink job's pods claim an IMEX channel with. Read
// from the same files, the channel is known for no GPU: nothing to warn.
TEST(DraPods, AComputeDomainsChannelTemplateIsKnownToHoldNoGpus) {
  const json domain = {
      {"apiVersion", "resource.nvidia.com/v1beta1"},
      {"kind", "ComputeDomain"},
      {"metadata", {{"name", "nccl"}, {"namespace", "default"}}},
      {"spec", {{"numNodes", 2}, {"channel", {{"resourceClaimTemplate", {{"name", "nccl-channel"}}}}}}}};
  auto made = read(domain);
  ASSERT_TRUE(made.ok() && made.value());
  EXPECT_EQ(made.value()->kind, DraKind::kClaimTemplate);
  EXPECT_EQ(made.value()->name, "nccl-channel");
  EXPECT_EQ(made.value()->spec.requests.at(0).alternatives.at(0).device_class,
            "compute-domain-default-channel.nvidia.com");
  json pod = pod_with_claims(json::array({claim_user("test", "channel")}),
                             json::array({{{"name", "channel"}, {"resourceClaimTemplateName", "nccl-channel"}}}));
  const auto unknown = inventory_of({});
  EXPECT_TRUE(has_line(validate(pod, Mode::kEnforce, default_policy(), {nullptr, unknown.get()}).decision.warnings,
                       {"DRA claim \"channel\" (template \"nccl-channel\") is not sized"}));
  const auto known = inventory_of({domain});
  const Outcome v = validate(pod, Mode::kEnforce, default_policy(), {nullptr, known.get()});
  EXPECT_TRUE(v.decision.warnings.empty()) << all(v.decision.warnings);
  // Every channel (allocationMode All) holds no GPU either: not warned.
  json every = domain;
  every["spec"]["channel"]["allocationMode"] = "All";
  const auto all_known = inventory_of({every});
  const Outcome v_all = validate(pod, Mode::kEnforce, default_policy(), {nullptr, all_known.get()});
  EXPECT_TRUE(v_all.decision.warnings.empty()) << all(v_all.decision.warnings);
  // A ComputeDomain naming no channel template gives none, and no error
  // that would stop the file's other objects from being checked.
  json no_name = domain;
  no_name["spec"]["channel"] = json::object();
  ASSERT_TRUE(read(no_name).ok());
  EXPECT_FALSE(read(no_name).value());
}

TEST(DraPods, AnArgoTemplatesPodGetsItsOwnClaimsElseTheWorkflows) {
  // argo-workflows examples/resource-claims.yaml: spec.resourceClaims
  // applies to every template that sets none of its own.
  const auto claims = inventory_of({claim_template("four-gpus", json::array({exactly("gpus", "gpu.nvidia.com", 4)})),
                                    claim_template("one-gpu", json::array({exactly("gpu", "gpu.nvidia.com", 1)}))});
  const json user = claim_user("main", "accelerator");
  const json workflow = {
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Workflow"},
      {"metadata", {{"name", "claims"}, {"namespace", "default"}}},
      {"spec",
       {{"entrypoint", "both"},
        {"resourceClaims", json::array({{{"name", "accelerator"}, {"resourceClaimTemplateName", "four-gpus"}}})},
        {"templates",
         json::array({{{"name", "inherits"}, {"container", user}},
                      {{"name", "own"},
                       {"container", user},
                       {"resourceClaims",
                        json::array({{{"name", "accelerator"}, {"resourceClaimTemplateName", "one-gpu"}}})}}})}}}};
  JsonReader reader;
  const JsonView object = reader.view_of(workflow);
  PatchBuilder patch(object);
  const ObjectIdentity id{"argoproj.io", "Workflow", "default", "claims"};
  const ObjectDecision decided =
      decide_object(default_policy(), Endpoint::kValidate, id, object, patch, {}, false, {nullptr, claims.get()});
  ASSERT_EQ(decided.pods.size(), 2u);
  EXPECT_EQ(decided.pods[0].gpus, 4);
  EXPECT_EQ(decided.pods[1].gpus, 1);
  // Read, so not said as claims no pod gets.
  for (const std::string& warning : decided.warnings) EXPECT_EQ(warning.find("DRA claims"), std::string::npos);
}

TEST(DraPods, AClaimSharedByContainersCountsOnceAmongThemAndOnceInEachInitContainer) {
  const auto claims = inventory_of({claim_template("two", json::array({exactly("gpus", "gpu.nvidia.com", 2)}))});
  json pod = pod_with_claims(json::array({claim_user("a", "gpus"), claim_user("b", "gpus")}),
                             json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", "two"}}}));
  EXPECT_EQ(run(pod, Endpoint::kMutate, Mode::kMutate, default_policy(), {nullptr, claims.get()}).decision.gpus, 2);
  // An init container runs before them, with the claim's devices alone.
  pod["spec"]["initContainers"] = json::array({claim_user("warmup", "gpus")});
  JsonReader reader;
  PodTarget target{{reader.view_of(pod)}, {kDescription, Mode::kMutate}};
  target.cluster.claims = claims.get();
  target.namespace_name = "default";
  const PodReading reading = read_pod(default_policy(), target);
  ASSERT_EQ(reading.facts.app.size(), 2U);
  ASSERT_EQ(reading.facts.init.size(), 1U);
  EXPECT_EQ(reading.facts.app[0].gpus + reading.facts.app[1].gpus, 2);
  EXPECT_EQ(reading.facts.init[0].gpus, 2);
}

TEST(DraPods, WhatTheTablesDoNotSizeIsSaidWithTheArithmetic) {
  json every = exactly("all", "gpu.nvidia.com");
  every["exactly"]["allocationMode"] = "All";
  json first = {{"name", "gpu"},
                {"firstAvailable", json::array({{{"name", "four"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 4}},
                                                {{"name", "one"}, {"deviceClassName", "gpu.nvidia.com"}}})}};
  const auto claims =
      inventory_of({claim_template("slices", json::array({exactly("s", "mig.nvidia.com", 2)})),
                    claim_template("all", json::array({every})), claim_template("first", json::array({first})),
                    claim_template("odd", json::array({exactly("o", "tpu-gpu.example.com")}))});
  const json pod =
      pod_with_claims(json::array({claim_user("a", "slices"), claim_user("b", "all"), claim_user("c", "first")}),
                      json::array({{{"name", "slices"}, {"resourceClaimTemplateName", "slices"}},
                                   {{"name", "all"}, {"resourceClaimTemplateName", "all"}},
                                   {{"name", "first"}, {"resourceClaimTemplateName", "first"}}}));
  const Outcome v = validate(pod, Mode::kEnforce, default_policy(), {nullptr, claims.get()});
  EXPECT_EQ(v.decision.gpus, 1);  // the fewest firstAvailable gets
  for (const char* line :
       {"container \"a\": DRA claim \"slices\": 2 mig.nvidia.com (MIG slice) not sized; as 2 GPUs, train: cpu 16, "
        "memory 96Gi",
        "container \"b\": DRA claim \"all\": all gpu.nvidia.com of a node (allocationMode All) not sized; set its cpu "
        "and memory",
        "container \"c\": DRA claim \"first\": sized as 1 GPU, its fewest alternative (firstAvailable); may get 4 "
        "gpu.nvidia.com"}) {
    EXPECT_NE(std::find(v.decision.warnings.begin(), v.decision.warnings.end(), line), v.decision.warnings.end())
        << line << "\n"
        << all(v.decision.warnings);
  }
  // A class the policy does not list, named for GPUs: warned as unknown.
  const json odd = pod_with_claims(json::array({claim_user("d", "odd")}),
                                   json::array({{{"name", "odd"}, {"resourceClaimTemplateName", "odd"}}}));
  EXPECT_TRUE(has_line(validate(odd, Mode::kMutate, default_policy(), {nullptr, claims.get()}).decision.warnings,
                       {"1 tpu-gpu.example.com (device of a DRA class) not sized"}));
}

TEST(DraPods, ADraExtendedResourceIsAnAskOfItsDeviceClass) {
  // KEP-5004: deviceclass.resource.kubernetes.io/<class>, by the policy's
  // entry for the class.
  const json implicit = pod_of(
      json::array({gpu_container("trainer", 2, "8", "64Gi", "deviceclass.resource.kubernetes.io/gpu.nvidia.com")}));
  const Outcome sized = run(implicit);
  EXPECT_EQ(sized.decision.gpus, 2);
  EXPECT_EQ(resources_of(sized.patched)["requests"]["memory"], "96Gi");
  EXPECT_TRUE(validate(sized.patched).decision.warnings.empty()) << all(validate(sized.patched).decision.warnings);
  // A class the policy does not count: said, not sized.
  const json example = pod_of(
      json::array({gpu_container("trainer", 1, "8", "64Gi", "deviceclass.resource.kubernetes.io/gpu.example.com")}));
  EXPECT_EQ(run(example).decision.gpus, 0);
  EXPECT_TRUE(has_line(validate(example).decision.warnings,
                       {"1 deviceclass.resource.kubernetes.io/gpu.example.com (device of a DRA class) not sized"}));
  // A DeviceClass's own extendedResourceName, known from the DRA objects.
  const Policy policy = policy_from("accelerators:\n  - {deviceClass: gpu.example.com, form: device, sizing: gpus}\n");
  const auto classes = inventory_of({{{"apiVersion", "resource.k8s.io/v1"},
                                      {"kind", "DeviceClass"},
                                      {"metadata", {{"name", "gpu.example.com"}}},
                                      {"spec", {{"extendedResourceName", "example.com/gpu"}}}}});
  const json named = pod_of(json::array({gpu_container("trainer", 4, "8", "64Gi", "example.com/gpu")}));
  const Outcome by_name = run(named, Endpoint::kMutate, Mode::kMutate, policy, {nullptr, classes.get()});
  EXPECT_EQ(by_name.decision.gpus, 4);
  EXPECT_TRUE(validate(by_name.patched, Mode::kMutate, policy, {nullptr, classes.get()}).decision.warnings.empty());
  // Without the class known, the name is only named for GPUs: said.
  EXPECT_EQ(run(named, Endpoint::kMutate, Mode::kMutate, policy).decision.gpus, 0);
  EXPECT_TRUE(
      has_line(validate(named, Mode::kMutate, policy).decision.warnings, {"4 example.com/gpu (device) not sized"}));
}

TEST(DraPods, AnExtendedResourceOfAClassThatIsNoGpuKeepsItsOwnClass) {
  // Gaudi's device plugin resource, served by a DRA class the policy does
  // not list and whose name does not say gpu: still the policy's Gaudi
  // ask, warned; and a class claiming a core resource's name is ignored.
  const auto classes = inventory_of({{{"apiVersion", "resource.k8s.io/v1"},
                                      {"kind", "DeviceClass"},
                                      {"metadata", {{"name", "gaudi.habana.ai"}}},
                                      {"spec", {{"extendedResourceName", "habana.ai/gaudi"}}}},
                                     {{"apiVersion", "resource.k8s.io/v1"},
                                      {"kind", "DeviceClass"},
                                      {"metadata", {{"name", "gpu.nvidia.com"}}},
                                      {"spec", {{"extendedResourceName", "memory"}}}}});
  const json pod = pod_of(json::array({gpu_container("trainer", 2, "8", "64Gi", "habana.ai/gaudi")}));
  const Outcome v = validate(pod, Mode::kEnforce, default_policy(), {nullptr, classes.get()});
  EXPECT_EQ(v.decision.gpus, 0);
  EXPECT_TRUE(v.decision.denials.empty()) << all(v.decision.denials);
  EXPECT_TRUE(has_line(v.decision.warnings, {"2 habana.ai/gaudi (Gaudi device) not sized"}))
      << all(v.decision.warnings);
}

TEST(DraPods, NodeFitAndCapsUseTheNodesLabelledWithGpus) {
  // Neither node reports DRA GPUs as allocatable; the L4 node's labels
  // name its GPU, the other is a CPU node larger than it.
  const char* nodes_yaml = R"({"kind": "List", "items": [
    {"kind": "Node", "metadata": {"name": "l4", "labels": {"nvidia.com/gpu.product": "NVIDIA-L4"}},
     "status": {"allocatable": {"cpu": "7910m", "memory": "27Gi", "ephemeral-storage": "200Gi"}}},
    {"kind": "Node", "metadata": {"name": "cpu"},
     "status": {"allocatable": {"cpu": "95", "memory": "700Gi", "ephemeral-storage": "900Gi"}}}]})";
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  JsonReader reader;
  ASSERT_TRUE(add_nodes(reader.parse(nodes_yaml).value(), "nodes.yaml", builder).ok());
  const auto nodes = builder.build();
  const auto claims = inventory_of({claim_template("one", json::array({exactly("gpu", "gpu.nvidia.com")}))});
  const json pod = pod_with_claims(json::array({claim_user("server", "gpu")}),
                                   json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "one"}}}));
  const Policy deny = policy_from("nodeFit:\n  action: deny\n");
  const Outcome m = run(pod, Endpoint::kMutate, Mode::kMutate, deny, {nodes.get(), claims.get()});
  EXPECT_EQ(m.decision.gpus, 1);
  // Capped to the L4 node, not the CPU node; and never denied for GPUs no
  // node reports.
  EXPECT_EQ(resources_of(m.patched)["requests"]["cpu"], "7400m");
  const Outcome v = validate(m.patched, Mode::kEnforce, deny, {nodes.get(), claims.get()});
  EXPECT_TRUE(v.decision.denials.empty()) << all(v.decision.denials) << m.patched.dump();
}

// A node file of an NVIDIA node larger than an AMD one, both labelled
// with their GPUs; `with_amd` false leaves the NVIDIA node alone.
std::shared_ptr<const NodeInventory> two_vendor_nodes(bool with_amd) {
  std::string nodes_yaml = R"({"kind": "List", "items": [
    {"kind": "Node", "metadata": {"name": "h100", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
     "status": {"allocatable": {"cpu": "191", "memory": "2000Gi", "ephemeral-storage": "3000Gi"}}})";
  if (with_amd) {
    nodes_yaml += R"(,
    {"kind": "Node", "metadata": {"name": "mi210", "labels": {"amd.com/gpu.product-name": "AMD_Instinct_MI210"}},
     "status": {"allocatable": {"cpu": "30", "memory": "120Gi", "ephemeral-storage": "200Gi"}}})";
  }
  nodes_yaml += "]}";
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  JsonReader reader;
  EXPECT_TRUE(add_nodes(reader.parse(nodes_yaml).value(), "nodes.yaml", builder).ok());
  return builder.build();
}

TEST(DraPods, AClaimForOneVendorsGpusIsCappedToThatVendorsNodes) {
  const auto claims = inventory_of({claim_template("amd", json::array({exactly("gpu", "gpu.amd.com", 4)})),
                                    claim_template("nv", json::array({exactly("gpu", "gpu.nvidia.com", 4)}))});
  const auto nodes = two_vendor_nodes(true);
  const auto pod_of = [](const char* claim_template_name) {
    return pod_with_claims(json::array({claim_user("train", "gpu")}),
                           json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", claim_template_name}}}));
  };
  // AMD's GPUs only come on the AMD node: sized to what it holds, never
  // to the larger NVIDIA node no AMD claim is allocated on.
  const Outcome amd =
      run(pod_of("amd"), Endpoint::kMutate, Mode::kMutate, default_policy(), {nodes.get(), claims.get()});
  EXPECT_EQ(amd.decision.gpus, 4);
  EXPECT_EQ(resources_of(amd.patched)["requests"]["memory"], "119Gi") << amd.patched.dump();
  // The NVIDIA claim is sized by the table, which the H100 node holds.
  const Outcome nv = run(pod_of("nv"), Endpoint::kMutate, Mode::kMutate, default_policy(), {nodes.get(), claims.get()});
  EXPECT_EQ(resources_of(nv.patched)["requests"]["memory"], "192Gi") << nv.patched.dump();
}

TEST(DraPods, NoNodeOfTheClaimsVendorIsSaidNeverDenied) {
  const auto claims = inventory_of({claim_template("amd", json::array({exactly("gpu", "gpu.amd.com", 4)}))});
  const auto nodes = two_vendor_nodes(false);
  const json pod = pod_with_claims(json::array({claim_user("train", "gpu")}),
                                   json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "amd"}}}));
  const Policy deny = policy_from("nodeFit:\n  action: deny\n");
  // Not capped to the NVIDIA node: the table's row.
  const Outcome m = run(pod, Endpoint::kMutate, Mode::kMutate, deny, {nodes.get(), claims.get()});
  EXPECT_EQ(resources_of(m.patched)["requests"]["memory"], "192Gi") << m.patched.dump();
  const Outcome v = validate(m.patched, Mode::kEnforce, deny, {nodes.get(), claims.get()});
  EXPECT_TRUE(v.decision.denials.empty()) << all(v.decision.denials);
  EXPECT_TRUE(has_line(v.decision.warnings, {"node fit: no node may run it", "have NVIDIA GPUs, not AMD"}))
      << all(v.decision.warnings);
}

// No node shows GPUs (a DRA driver without GPU Feature Discovery): caps
// come from every node it may be placed on, but storage is not taken from
// the least disk among them, likely a CPU node's.
TEST(DraPods, WithoutGpuLabelsStorageIsNotCappedToTheSmallestDisk) {
  const auto claims = inventory_of({claim_template("four", json::array({exactly("gpu", "gpu.nvidia.com", 4)}))});
  InventoryBuilder builder(InventorySource::kFile, "nodes.yaml");
  JsonReader reader;
  ASSERT_TRUE(add_nodes(reader
                            .parse(R"({"kind": "List", "items": [
    {"kind": "Node", "metadata": {"name": "nv-dra"},
     "status": {"allocatable": {"cpu": "191", "memory": "2000Gi", "ephemeral-storage": "2000Gi"}}},
    {"kind": "Node", "metadata": {"name": "r6i"},
     "status": {"allocatable": {"cpu": "64", "memory": "500Gi", "ephemeral-storage": "18Gi"}}}]})")
                            .value(),
                        "nodes.yaml", builder)
                  .ok());
  const auto nodes = builder.build();
  const json pod = pod_with_claims(json::array({claim_user("train", "gpu")}),
                                   json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "four"}}}));
  const Outcome m = run(pod, Endpoint::kMutate, Mode::kMutate, default_policy(), {nodes.get(), claims.get()});
  EXPECT_EQ(resources_of(m.patched)["requests"]["ephemeral-storage"], "300Gi") << m.patched.dump();
}

TEST(DraPods, AClassOfNoKnownVendorMayUseAnyNodeLabelledWithGpus) {
  const Policy policy = policy_from("accelerators:\n  - {deviceClass: a100-pool, form: device, sizing: gpus}\n");
  const auto claims = inventory_of({claim_template("any", json::array({exactly("gpu", "a100-pool", 4)}))});
  const auto nodes = two_vendor_nodes(true);
  const json pod = pod_with_claims(json::array({claim_user("train", "gpu")}),
                                   json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "any"}}}));
  const Outcome m = run(pod, Endpoint::kMutate, Mode::kMutate, policy, {nodes.get(), claims.get()});
  EXPECT_EQ(m.decision.gpus, 4);
  EXPECT_EQ(resources_of(m.patched)["requests"]["memory"], "192Gi") << m.patched.dump();
}

}  // namespace
}  // namespace gpusizer::device_claims_test
