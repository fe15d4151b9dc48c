// handle_review is the contract with the API server (Kubernetes "Dynamic
// Admission Control", docs/sources.md): it must echo apiVersion, kind and
// uid, always set `allowed`, send patches only from /mutate as base64
// JSONPatch that applies to the object, and keep its warnings within the
// API server's limits (cap_warnings). Malformed reviews, answered 400 with a
// JSON error: review_malformed_test.cpp.

#include "gpusizer/admission/review.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/sizing/policy.h"
#include "support/handle_review_support.h"
#include "support/review_support.h"

namespace gpusizer::review_test {
namespace {

using nlohmann::json;
using namespace review_test;  // NOLINT(google-build-using-namespace)

struct Answer {
  HttpReply reply;
  json body;
  json response;
};

Answer handle(const json& request, Endpoint endpoint = Endpoint::kMutate, const Policy& policy = default_policy()) {
  Answer a{handle_review(policy, endpoint, request.dump()), {}, {}};
  EXPECT_EQ(a.reply.status, 200) << a.reply.body;
  a.body = json::parse(a.reply.body);
  a.response = a.body.value("response", json::object());
  return a;
}

// The answer is well formed as the API server checks it.
void expect_envelope(Answer a, const std::string& uid = "705ab4f5-6393-11e8-b7cc-42010a800002") {
  EXPECT_EQ(a.body["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(a.body["kind"], "AdmissionReview");
  EXPECT_EQ(a.response["uid"], uid);
  ASSERT_TRUE(a.response.contains("allowed")) << a.reply.body;
  EXPECT_TRUE(a.response["allowed"].is_boolean());
  // patch and patchType come together or not at all
  EXPECT_EQ(a.response.contains("patch"), a.response.contains("patchType")) << a.reply.body;
  if (a.response.contains("warnings")) {
    std::size_t total = 0;
    for (const auto& w : a.response["warnings"]) {
      EXPECT_LT(w.get<std::string>().size(), 120u) << w;
      total += w.get<std::string>().size();
    }
    EXPECT_LT(total, 4096u);
  }
}

void expect_unchanged(Answer a) {
  expect_envelope(a);
  EXPECT_EQ(a.response["allowed"], true) << a.reply.body;
  EXPECT_FALSE(a.response.contains("patch")) << a.reply.body;
  EXPECT_FALSE(a.response.contains("status")) << a.reply.body;
  EXPECT_FALSE(a.response.contains("warnings")) << a.reply.body;
  EXPECT_EQ(a.reply.outcome.decision, ReviewOutcome::Decision::kAllowed);
}

json patched(const json& object, Answer a) {
  if (!a.response.contains("patch")) {
    ADD_FAILURE() << "no patch in " << a.reply.body;
    return object;
  }
  const json ops = json::parse(testing::decode_base64(a.response["patch"].get<std::string>()));
  EXPECT_TRUE(ops.is_array()) << ops;
  try {
    return object.patch(ops);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "patch does not apply: " << e.what() << "\n" << ops.dump(1);
    return object;
  }
}

// ---------------------------------------------------------------------------

TEST(HandleReview, MutateAnswersWithAnApplicableJsonPatch) {
  const json object = pod();
  Answer a = handle(review(object));
  expect_envelope(a);
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_EQ(a.response["patchType"], "JSONPatch");
  json result = patched(object, a);
  json res = result["spec"]["containers"][0]["resources"];
  EXPECT_EQ(res["requests"],
            json({{"nvidia.com/gpu", "4"}, {"cpu", "32"}, {"memory", "192Gi"}, {"ephemeral-storage", "300Gi"}}));
  EXPECT_EQ(res["limits"], json({{"nvidia.com/gpu", "4"}, {"cpu", "32"}, {"memory", "192Gi"}}));
  EXPECT_TRUE(result["metadata"]["annotations"].contains(kSizedKey)) << result.dump();
  EXPECT_EQ(a.reply.outcome.decision, ReviewOutcome::Decision::kMutated);
  EXPECT_EQ(a.reply.outcome.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(a.reply.outcome.kind, "Pod");
  EXPECT_EQ(a.reply.outcome.operation, "CREATE");
  EXPECT_EQ(a.reply.outcome.namespace_name, "team-a");
  EXPECT_EQ(a.reply.outcome.name, "train-x");
  ASSERT_EQ(a.reply.outcome.pods.size(), 1u);
  EXPECT_EQ(a.reply.outcome.pods[0].gpus, 4);
  // What changed is visible to the user and in the audit log.
  ASSERT_TRUE(a.response.contains("warnings"));
  EXPECT_FALSE(a.response["warnings"].empty());
  EXPECT_TRUE(contains(a.response["auditAnnotations"].value("sized", ""), "trainer: ")) << a.reply.body;
}

TEST(HandleReview, UidIsEchoedVerbatim) {
  json r = review(pod("1", "16", "64Gi"));
  r["request"]["uid"] = "a-Ü-uid";
  Answer a = handle(r);
  expect_envelope(a, "a-Ü-uid");
}

TEST(HandleReview, AllowedIsPresentOnEveryAnswer) {
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    for (const json& object : {pod("4", "32", "192Gi"), pod("4", "8", "64Gi"), pod("1", "1", "1Gi")}) {
      Answer a = handle(review(object), endpoint);
      expect_envelope(a);
    }
    expect_envelope(handle(review(pod(), "DELETE"), endpoint));
  }
}

TEST(HandleReview, ValidateNeverReturnsAPatch) {
  for (const json& object : {pod("1", "1", "1Gi"), pod("4", "8", "64Gi"), pod("4", "8", "256Gi")}) {
    Answer a = handle(review(object), Endpoint::kValidate);
    expect_envelope(a);
    EXPECT_FALSE(a.response.contains("patch")) << a.reply.body;
    EXPECT_FALSE(a.response.contains("patchType")) << a.reply.body;
    EXPECT_NE(a.reply.outcome.decision, ReviewOutcome::Decision::kMutated);
  }
  // the 1-GPU pod is allowed with warnings
  Answer small = handle(review(pod("1", "1", "1Gi")), Endpoint::kValidate);
  EXPECT_EQ(small.response["allowed"], true);
  EXPECT_FALSE(small.response["warnings"].empty());
}

TEST(HandleReview, DenialHas403AndTheMessage) {
  Answer a = handle(review(pod("4", "8", "64Gi")), Endpoint::kValidate);
  expect_envelope(a);
  EXPECT_EQ(a.response["allowed"], false);
  ASSERT_TRUE(a.response.contains("status")) << a.reply.body;
  EXPECT_EQ(a.response["status"]["code"], 403);
  const std::string message = a.response["status"].value("message", "");
  for (const char* part : {"pod team-a/train-x", "container \"trainer\"", "4 GPUs", "192Gi", "64Gi",
                           "set memory to 192Gi and cpu to 32"}) {
    EXPECT_TRUE(contains(message, part)) << "missing \"" << part << "\" in " << message;
  }
  EXPECT_EQ(a.reply.outcome.decision, ReviewOutcome::Decision::kDenied);
}

TEST(HandleReview, EnforceModeDeniesOnValidateAndNeverPatches) {
  const Policy enforce = parse_policy("mode: enforce\n", "t").value();
  Answer m = handle(review(pod()), Endpoint::kMutate, enforce);
  expect_envelope(m);
  EXPECT_EQ(m.response["allowed"], true);
  EXPECT_FALSE(m.response.contains("patch"));
  Answer v = handle(review(pod()), Endpoint::kValidate, enforce);
  EXPECT_EQ(v.response["allowed"], false);
}

TEST(HandleReview, NamespaceModeAppliesByRequestNamespace) {
  const Policy p = parse_policy("namespaceModes: {team-a: audit}\n", "t").value();
  Answer a = handle(review(pod()), Endpoint::kValidate, p);
  EXPECT_EQ(a.response["allowed"], true) << a.reply.body;
  ASSERT_TRUE(a.response.contains("warnings"));
  Answer b = handle(review(pod(), "CREATE", "team-b"), Endpoint::kValidate, p);
  EXPECT_EQ(b.response["allowed"], false) << b.reply.body;
}

TEST(HandleReview, DryRunGetsTheSameDecisionAndPatch) {
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    for (const json& object : {pod("4", "8", "64Gi"), pod("1", "1", "1Gi")}) {
      json wet = review(object);
      json dry = review(object);
      dry["request"]["dryRun"] = true;
      Answer w = handle(wet, endpoint);
      Answer d = handle(dry, endpoint);
      EXPECT_EQ(d.response, w.response);
      EXPECT_TRUE(d.reply.outcome.dry_run);
      EXPECT_FALSE(w.reply.outcome.dry_run);
      EXPECT_EQ(d.reply.outcome.decision, w.reply.outcome.decision);
    }
  }
}

TEST(HandleReview, UpdatesAndDeletesAreAllowedUnchanged) {
  for (const char* operation : {"UPDATE", "DELETE", "CONNECT"}) {
    for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
      Answer a = handle(review(pod("4", "8", "64Gi"), operation), endpoint);
      expect_unchanged(a);
    }
  }
  // A DELETE carries no object at all.
  json del = review(nullptr, "DELETE");
  del["request"].erase("object");
  expect_unchanged(handle(del));
}

TEST(HandleReview, OtherKindsAndSubresourcesAreAllowedUnchanged) {
  const json cm_kind = {{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}};
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    expect_unchanged(handle(review({{"data", {{"a", "b"}}}}, "CREATE", "team-a", cm_kind), endpoint));
    for (const char* sub : {"status", "binding", "ephemeralcontainers"}) {
      json r = review(pod());
      r["request"]["subResource"] = sub;
      expect_unchanged(handle(r, endpoint));
    }
  }
}

// A kind's pods are where its table row says; GPU asks elsewhere in it are
// not sized but said (by /validate), and a kind no table names is searched.
TEST(HandleReview, GpuAsksOutsideTheKindsTemplatesAreWarnedAboutNotSized) {
  const json deployment_kind = {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}};
  expect_unchanged(handle(review(pod(), "CREATE", "team-a", deployment_kind), Endpoint::kMutate));
  const Answer validated = handle(review(pod(), "CREATE", "team-a", deployment_kind), Endpoint::kValidate);
  EXPECT_TRUE(validated.response["allowed"].get<bool>());
  EXPECT_FALSE(validated.response.contains("patch"));
  EXPECT_NE(validated.response["warnings"].dump().find(
                "Deployment team-a/train-x: size by hand or name in policy workloads: GPUs no pod holds at "
                "...limits.nvidia.com/gpu (+1)\""),
            std::string::npos)
      << validated.response.dump();

  const json foreign_pod_kind = {{"group", "example.com"}, {"version", "v1"}, {"kind", "Pod"}};
  const Answer mutated = handle(review(pod(), "CREATE", "team-a", foreign_pod_kind), Endpoint::kMutate);
  EXPECT_TRUE(mutated.response.contains("patch")) << "its pod spec is found by its shape and sized";
  const Answer warned = handle(review(pod(), "CREATE", "team-a", foreign_pod_kind), Endpoint::kValidate);
  EXPECT_NE(warned.response["warnings"].dump().find("Pod team-a/train-x: unknown kind, sized by shape: spec;"),
            std::string::npos)
      << warned.response.dump();
}

// A GPU through a DRA claim no pod gpu-sizer reads holds (a NIMService's
// draResources) is not passed with no word: whether the claim holds a GPU
// is not known there, so it is said, never denied.
TEST(HandleReview, DraClaimsOutsideTheKindsPodsAreSaid) {
  const json nim_kind = {{"group", "apps.nvidia.com"}, {"version", "v1alpha1"}, {"kind", "NIMService"}};
  const json service = {{"apiVersion", "apps.nvidia.com/v1alpha1"},
                        {"kind", "NIMService"},
                        {"metadata", {{"name", "llm"}, {"namespace", "team-a"}}},
                        {"spec",
                         {{"image", {{"repository", "nvcr.io/nim/meta/llama-3.2-1b-instruct"}}},
                          {"resources", {{"limits", {{"memory", "8Gi"}}}}},
                          {"draResources", {{{"resourceClaimTemplateName", "gpu-resourceclaimtemplate"}}}}}}};
  expect_unchanged(handle(review(service, "CREATE", "team-a", nim_kind), Endpoint::kMutate));
  const Answer validated = handle(review(service, "CREATE", "team-a", nim_kind), Endpoint::kValidate);
  EXPECT_TRUE(validated.response["allowed"].get<bool>());
  EXPECT_NE(validated.response["warnings"].dump().find(
                "NIMService team-a/train-x: if its DRA claims hold GPUs, set CPU and memory for them here"),
            std::string::npos)
      << validated.response.dump();
}

// A GPU request without a limit is refused by the API server ("Limit must
// be set for non overcommitable resources") unless a LimitRange's default,
// or the operator that builds the pod, sets one: sized as asked, and said
// with the limit to write. Seen in Kueue's
// site/static/examples/serving-workloads/sample-leaderworkerset-tas.yaml.
TEST(HandleReview, AGpuRequestWithoutALimitIsSizedAndSaid) {
  json pod = testing::gpu_pod("train-x", {{"requests", {{"cpu", "200m"}, {"nvidia.com/gpu", "2"}}}});
  const Answer mutated = handle(review(pod));
  EXPECT_TRUE(mutated.response.contains("patch")) << mutated.response.dump();
  ASSERT_EQ(mutated.reply.outcome.pods.size(), 1u);
  EXPECT_EQ(mutated.reply.outcome.pods[0].gpus, 2);
  // The pod as written (its memory is then denied, as without the note).
  const Answer validated = handle(review(pod), Endpoint::kValidate);
  EXPECT_NE(validated.response["warnings"].dump().find(
                "pod team-a/train-x: set spec.containers[0].resources.limits.nvidia.com/gpu: 2 (a GPU request alone is "
                "refused unless"),
            std::string::npos)
      << validated.response.dump();
  // DRA's extended resource names are Kubernetes-native: a request alone
  // is valid there.
  json claimed =
      testing::gpu_pod("train-x", {{"requests", {{"deviceclass.resource.kubernetes.io/gpu.nvidia.com", "1"}}}});
  EXPECT_EQ(handle(review(claimed), Endpoint::kValidate).response["warnings"].dump().find("request alone"),
            std::string::npos);
}

TEST(HandleReview, ExemptNamespacesAreAllowedUnchangedAndRecorded) {
  for (const char* ns : {"kube-system", "kube-public"}) {
    for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
      Answer a = handle(review(pod("4", "8", "64Gi"), "CREATE", ns), endpoint);
      expect_unchanged(a);
      ASSERT_TRUE(a.reply.outcome.bypass);
      EXPECT_EQ(a.reply.outcome.bypass->reason, "namespace");
      EXPECT_EQ(a.response["auditAnnotations"]["bypassed"],
                std::string("namespace \"") + ns + "\" is exempt in the gpu-sizer policy");
    }
  }
}

TEST(HandleReview, ExemptUsersAndGroupsSkipSizingOthersDoNot) {
  const auto policy = parse_policy("exemptions:\n  users: [platform-admin]\n  groups: [gpu-platform]\n", "test");
  ASSERT_TRUE(policy) << policy.error();
  auto from = [](const std::string& user, const json& groups) {
    json r = review(pod("4", "8", "64Gi"));
    r["request"]["userInfo"] = {{"username", user}, {"groups", groups}};
    return r;
  };
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    Answer by_user = handle(from("platform-admin", json::array({"system:authenticated"})), endpoint, policy.value());
    expect_unchanged(by_user);
    EXPECT_EQ(by_user.response["auditAnnotations"]["bypassed"],
              "user \"platform-admin\" is exempt in the gpu-sizer policy");

    Answer by_group =
        handle(from("bob", json::array({"system:authenticated", "gpu-platform"})), endpoint, policy.value());
    expect_unchanged(by_group);
    ASSERT_TRUE(by_group.reply.outcome.bypass);
    EXPECT_EQ(by_group.reply.outcome.bypass->reason + " " + by_group.reply.outcome.bypass->name, "group gpu-platform");
  }
  // Anyone else, a group given as a string instead of a list, or an exempt
  // name in the wrong field is sized as usual.
  for (const json& r : {from("bob", json::array({"system:authenticated"})), from("bob", "gpu-platform"),
                        from("gpu-platform", json::array())}) {
    Answer a = handle(r, Endpoint::kMutate, policy.value());
    EXPECT_FALSE(a.reply.outcome.bypass) << r["request"]["userInfo"];
    EXPECT_TRUE(a.response.contains("patch")) << r["request"]["userInfo"];
    EXPECT_FALSE(a.response["auditAnnotations"].contains("bypassed"));
  }
}

TEST(HandleReview, ExemptionsApplyOnlyToReviewsThatWouldBeDecided) {
  // A pod UPDATE or an object without pods is no bypass: nothing was skipped.
  json update = review(pod("4", "8", "64Gi"), "UPDATE", "kube-system");
  EXPECT_FALSE(handle(update).reply.outcome.bypass);
}

TEST(HandleReview, PodsWithoutGpusAreAllowedUnchanged) {
  json object = pod();
  object["spec"]["containers"][0] = {{"name", "web"}, {"resources", {{"requests", {{"cpu", "100m"}}}}}};
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) expect_unchanged(handle(review(object), endpoint));
}

TEST(HandleReview, GenerateNameDescribesThePod) {
  json object = pod("4", "8", "64Gi");
  object["metadata"].erase("name");
  object["metadata"]["generateName"] = "train-";
  json r = review(object);
  r["request"].erase("name");
  Answer a = handle(r, Endpoint::kValidate);
  EXPECT_EQ(a.response["allowed"], false);
  EXPECT_TRUE(contains(a.response["status"].value("message", ""), "pod team-a/train-")) << a.reply.body;
}

// Every message about each of an object's pods starts with its name: one
// longer than Kubernetes allows (253 bytes) is cut, not copied whole into
// each (issue 25).
TEST(HandleReview, ANameLongerThanKubernetesAllowsIsCutInMessages) {
  json object = pod("4", "8", "64Gi");
  const std::string name(300, 'n');
  object["metadata"]["name"] = name;
  json r = review(object);
  r["request"]["name"] = name;
  Answer a = handle(r, Endpoint::kValidate);
  EXPECT_EQ(a.response["allowed"], false);
  const std::string message = a.response["status"].value("message", "");
  // Quoted short (shown_name): Kubernetes allows names of 253 bytes at most.
  EXPECT_TRUE(contains(message, "pod team-a/\"" + std::string(64, 'n') + "\"... (300 bytes) container \"trainer\""))
      << message;
  EXPECT_FALSE(contains(message, std::string(65, 'n'))) << message;
}

TEST(HandleReview, MalformedPodFieldIsDeniedOnValidateWithItsPath) {
  json object = pod("2", "16", "96Gi");
  object["spec"]["containers"][0]["resources"]["limits"]["memory"] = "1KB";
  Answer v = handle(review(object), Endpoint::kValidate);
  EXPECT_EQ(v.response["allowed"], false);
  EXPECT_TRUE(contains(v.response["status"].value("message", ""), "spec.containers[0].resources.limits.memory"))
      << v.reply.body;
  Answer m = handle(review(object), Endpoint::kMutate);
  EXPECT_EQ(m.response["allowed"], true);
  EXPECT_FALSE(m.response.contains("patch"));
}

TEST(HandleReview, WarningsAreValidUtf8WithMultibyteNames) {
  json object = pod("4", "8", "64Gi");
  std::string name;
  for (int i = 0; i < 60; ++i) name += "\xE2\x82\xAC";  // €
  object["spec"]["containers"][0]["name"] = name;
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    const HttpReply reply = handle_review(default_policy(), endpoint, review(object).dump());
    ASSERT_EQ(reply.status, 200);
    json body;
    ASSERT_NO_THROW(body = json::parse(reply.body));
    for (const auto& w : body["response"].value("warnings", json::array())) {
      EXPECT_LT(w.get<std::string>().size(), 120u);
      EXPECT_NO_THROW((void)w.dump(-1, ' ', false, json::error_handler_t::strict)) << w;
    }
  }
}

// ---------------------------------------------------------------------------
// Updates of workloads: only a changed pod template is decided.

json deployment(const std::string& memory) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "serve"}, {"namespace", "team-a"}}},
          {"spec", {{"template", {{"spec", {{"containers", json::array({container("vllm", "4", "8", memory)})}}}}}}}};
}

json deployment_update(const json& object, const json& old_object) {
  json request = review(object, "UPDATE", "team-a", {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}});
  request["request"]["oldObject"] = old_object;
  return request;
}

TEST(HandleReview, UpdatesThatLeaveTheTemplateAloneAreNotDecided) {
  // A label or finalizer change on an object created before the webhook (or
  // before the table was raised) must not be blocked or patched.
  const json old_object = deployment("64Gi");
  json labelled = old_object;
  labelled["metadata"]["labels"] = {{"team", "vision"}};
  Policy enforce = default_policy();
  enforce.mode = Mode::kEnforce;
  EXPECT_FALSE(handle(deployment_update(labelled, old_object)).response.contains("patch"));
  EXPECT_TRUE(
      handle(deployment_update(labelled, old_object), Endpoint::kValidate, enforce).response["allowed"].get<bool>());

  // Changing the template is decided like a create (where the policy
  // patches a Deployment's template: by default its Pods are sized instead).
  Policy patching = default_policy();
  patching.long_lived.patch_templates = true;
  const Answer changed = handle(deployment_update(deployment("32Gi"), old_object), Endpoint::kMutate, patching);
  EXPECT_TRUE(changed.response.contains("patch")) << changed.reply.body;
}

TEST(HandleReview, ALongLivedTemplateIsWarnedAboutNotPatched) {
  // GitOps tools would see a patched Deployment template as drift: by
  // default it is not patched, the validating endpoint warns, and its Pods
  // are sized when created.
  const json created = deployment("32Gi");
  const Answer mutated = handle(deployment_update(created, nullptr));
  EXPECT_FALSE(mutated.response.contains("patch")) << mutated.reply.body;
  const Answer validated = handle(deployment_update(created, nullptr), Endpoint::kValidate);
  EXPECT_TRUE(validated.response["allowed"].get<bool>()) << validated.reply.body;
  const std::string warnings = validated.response["warnings"].dump();
  EXPECT_NE(warnings.find("at pod creation: "), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("memory 32Gi is below"), std::string::npos) << warnings;

  // Enforce mode still denies what its Pods would lack.
  Policy enforce = default_policy();
  enforce.mode = Mode::kEnforce;
  const Answer denied = handle(deployment_update(created, nullptr), Endpoint::kValidate, enforce);
  EXPECT_FALSE(denied.response["allowed"].get<bool>()) << denied.reply.body;
}

TEST(HandleReview, ObjectsBeingDeletedAreLetGo) {
  json deleting = deployment("64Gi");
  deleting["metadata"]["deletionTimestamp"] = "2026-11-22T10:00:00Z";
  Policy enforce = default_policy();
  enforce.mode = Mode::kEnforce;
  const Answer answer = handle(deployment_update(deleting, nullptr), Endpoint::kValidate, enforce);
  EXPECT_TRUE(answer.response["allowed"].get<bool>()) << answer.reply.body;
  EXPECT_FALSE(handle(deployment_update(deleting, nullptr)).response.contains("patch"));
}

// ---------------------------------------------------------------------------
// cap_warnings

TEST(CapWarnings, FewShortWarningsAreKeptAsIs) {
  const std::vector<std::string> in = {"a", "b c", std::string(119, 'x')};
  EXPECT_EQ(cap_warnings(in), in);
  EXPECT_TRUE(cap_warnings({}).empty());
}

// A pod of `count` one-GPU containers at 1Gi: each is raised to the table.
json one_gpu_containers(std::size_t count) {
  json containers = json::array();
  for (std::size_t i = 0; i < count; ++i) {
    containers.push_back({{"name", "c" + std::to_string(i)},
                          {"image", "trainer:1"},
                          {"resources", {{"limits", {{"nvidia.com/gpu", "1"}, {"memory", "1Gi"}}}}}});
  }
  json object = pod();
  object["spec"]["containers"] = containers;
  return object;
}

TEST(HandleReview, APatchOver3MiBIsNotSentAndTheAnswerSaysWhy) {
  // 20000 containers raised take a JSON Patch of about 4 MiB (one
  // operation of about 200 bytes each): more than the API server accepts
  // in a request, and an object past what etcd stores once applied.
  // Before, the answer carried it whole (an 8 MiB review made a 49 MiB
  // answer).
  const Answer a = handle(review(one_gpu_containers(20000)));
  expect_envelope(a);
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_FALSE(a.response.contains("patch")) << a.reply.body.substr(0, 300);
  EXPECT_LT(a.reply.body.size(), 16384u);
  EXPECT_EQ(a.reply.outcome.decision, ReviewOutcome::Decision::kAllowed);
  for (const PodDecision& decided : a.reply.outcome.pods) EXPECT_TRUE(decided.raised.empty()) << "counted as raised";
  ASSERT_TRUE(a.response.contains("warnings"));
  EXPECT_EQ(a.response["warnings"][0],
            "Pod team-a/train-x: not patched: raising it takes a JSON Patch over 3 MiB; set resources by hand");
  EXPECT_EQ(a.response["auditAnnotations"]["sized"].get<std::string>().rfind(
                "not patched: raising its 1 pod takes a JSON Patch over 3 MiB", 0),
            0u)
      << a.response["auditAnnotations"];
  // One that fits is patched as before.
  const Answer fits = handle(review(one_gpu_containers(1000)));
  EXPECT_TRUE(fits.response.contains("patch"));
  EXPECT_EQ(fits.reply.outcome.decision, ReviewOutcome::Decision::kMutated);
}

TEST(CapWarnings, LongWarningsAreCutUnder120) {
  const auto out = cap_warnings({std::string(500, 'y'), std::string(120, 'z')});
  ASSERT_EQ(out.size(), 2u);
  for (const auto& w : out) {
    EXPECT_LT(w.size(), 120u);
    EXPECT_EQ(w.substr(w.size() - 3), "...");
  }
}

TEST(CapWarnings, ManyWarningsStayUnderTheTotalWithASummary) {
  std::vector<std::string> in;
  for (int i = 0; i < 200; ++i) in.push_back("warning " + std::to_string(i) + " " + std::string(150, 'w'));
  const auto out = cap_warnings(in);
  ASSERT_GT(out.size(), 1u);
  ASSERT_LT(out.size(), in.size());
  std::size_t total = 0;
  for (const auto& w : out) {
    EXPECT_LT(w.size(), 120u) << w;
    total += w.size();
  }
  EXPECT_LT(total, 4096u);
  const std::string& last = out.back();
  const std::size_t kept = out.size() - 1;
  EXPECT_TRUE(contains(last, std::to_string(in.size() - kept) + " more")) << last;
  // what was kept is the first warnings, in order
  for (std::size_t i = 0; i < kept; ++i) EXPECT_EQ(out[i].rfind("warning " + std::to_string(i) + " ", 0), 0u) << out[i];
}

TEST(CapWarnings, AtMostTwentyLinesTheLastOfThemASummary) {
  std::vector<std::string> twenty;
  for (int i = 0; i < 20; ++i) twenty.push_back("w" + std::to_string(i));
  EXPECT_EQ(cap_warnings(twenty), twenty) << "twenty fit as they are";
  std::vector<std::string> more = twenty;
  more.emplace_back("w20");
  const auto out = cap_warnings(more);
  ASSERT_EQ(out.size(), 20u);
  EXPECT_EQ(out[18], "w18");
  EXPECT_EQ(out[19].rfind("... and 2 more warnings", 0), 0u) << out[19];
}

TEST(CapWarnings, ManyShortWarningsAlsoCapped) {
  std::vector<std::string> in(2000, "short warning text");
  const auto out = cap_warnings(in);
  std::size_t total = 0;
  for (const auto& w : out) total += w.size();
  EXPECT_LT(total, 4096u);
  EXPECT_TRUE(contains(out.back(), "more")) << out.back();
}

}  // namespace
}  // namespace gpusizer::review_test
