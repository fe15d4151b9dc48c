// The API server applies our patches with RFC 6902 semantics and rejects the
// whole answer when one operation does not apply (the VPA GPU-path bug), so
// every test here also applies what the builder produced.

#include "gpusizer/json/json_patch.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpusizer::json_patch_test {
namespace {

using nlohmann::json;

TEST(EscapePointerToken, Rfc6901) {
  EXPECT_EQ(escape_pointer_token(""), "");
  EXPECT_EQ(escape_pointer_token("cpu"), "cpu");
  EXPECT_EQ(escape_pointer_token("nvidia.com/gpu"), "nvidia.com~1gpu");
  EXPECT_EQ(escape_pointer_token("a~b"), "a~0b");
  EXPECT_EQ(escape_pointer_token("a~/b"), "a~0~1b");
  EXPECT_EQ(escape_pointer_token("a/~b"), "a~1~0b");
  EXPECT_EQ(escape_pointer_token("~1"), "~01");  // not mistaken for an escape
  EXPECT_EQ(escape_pointer_token("//~~"), "~1~1~0~0");
}

TEST(EscapePointerToken, RoundTripsThroughNlohmannPointer) {
  for (const std::string token : {"nvidia.com/gpu", "a~/b", "~1", "x~0y", "gpu-sizer.io/sized"}) {
    const json doc = {{token, 7}};
    EXPECT_EQ(doc.at(json::json_pointer("/" + escape_pointer_token(token))), 7) << token;
  }
}

TEST(JsonPointer, JoinsEscapedTokens) {
  EXPECT_EQ(json_pointer({}), "");
  EXPECT_EQ(json_pointer({"spec", "containers", "0", "resources", "limits", "nvidia.com/gpu"}),
            "/spec/containers/0/resources/limits/nvidia.com~1gpu");
  EXPECT_EQ(json_pointer({"metadata", "annotations", "gpu-sizer.io/sized"}),
            "/metadata/annotations/gpu-sizer.io~1sized");
}

json container_doc(json resources) {
  json c = {{"name", "trainer"}};
  if (!resources.is_discarded()) c["resources"] = std::move(resources);
  return json{{"spec", {{"containers", json::array({c})}}}};
}

const std::vector<std::string> kContainer = {"spec", "containers", "0"};

std::vector<std::string> at(std::initializer_list<std::string> more) {
  std::vector<std::string> tokens = kContainer;
  tokens.insert(tokens.end(), more);
  return tokens;
}

// Applies ops to doc; fails the test (and returns doc) when they do not apply.
json apply_ops(const json& doc, const json& ops) {
  try {
    return doc.patch(ops);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "patch does not apply: " << e.what() << "\nops: " << ops.dump() << "\ndoc: " << doc.dump();
    return doc;
  }
}

TEST(PatchBuilder, NewBuilderIsEmpty) {
  const json doc = json::object();
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  EXPECT_TRUE(patch.empty());
  EXPECT_EQ(patch.operations(), json::array());
}

TEST(PatchBuilder, PastItsByteLimitItWritesNothingMoreAndSaysSo) {
  const json doc = container_doc({{"requests", {{"cpu", "4"}}}});
  JsonReader reader;
  // Room for the first operation and its brackets, not for a second.
  PatchBuilder patch(reader.view_of(doc), 120);
  patch.set(at({"resources", "requests", "memory"}), "64Gi");
  EXPECT_FALSE(patch.overflowed());
  const std::string first = patch.text();
  EXPECT_LE(first.size(), 120u);
  patch.set(at({"resources", "requests", "ephemeral-storage"}), "300Gi");
  EXPECT_TRUE(patch.overflowed());
  EXPECT_EQ(patch.text(), first) << "a cut operation is not half written";
  patch.set(at({"resources", "requests", "cpu"}), "8");  // short enough to fit, but after the overflow
  EXPECT_EQ(patch.text(), first);
}

TEST(PatchBuilder, KeyUnderExistingMapIsOneAdd) {
  const json doc = container_doc({{"requests", {{"cpu", "4"}}}});
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "requests", "memory"}), "64Gi");
  EXPECT_FALSE(patch.empty());
  EXPECT_EQ(patch.operations(),
            json::parse(R"([{"op":"add","path":"/spec/containers/0/resources/requests/memory","value":"64Gi"}])"));
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["resources"]["requests"], json({{"cpu", "4"}, {"memory", "64Gi"}}));
}

TEST(PatchBuilder, ExistingKeyIsReplacedByAdd) {
  const json doc = container_doc({{"limits", {{"cpu", "4"}, {"nvidia.com/gpu", "2"}}}});
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "limits", "cpu"}), "16");
  ASSERT_EQ(patch.operations().size(), 1u);
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["resources"]["limits"], json({{"cpu", "16"}, {"nvidia.com/gpu", "2"}}));
}

TEST(PatchBuilder, SlashInKeyIsEscaped) {
  const json doc = container_doc({{"limits", {{"cpu", "4"}}}});
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "limits", "nvidia.com/gpu"}), "2");
  ASSERT_EQ(patch.operations().size(), 1u);
  EXPECT_EQ(patch.operations()[0]["path"], "/spec/containers/0/resources/limits/nvidia.com~1gpu");
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(result["spec"]["containers"][0]["resources"]["limits"].size(), 2u);
}

TEST(PatchBuilder, MissingResourcesIsOneAddOfTheNestedObject) {
  const json doc = container_doc(json(json::value_t::discarded));
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "requests", "cpu"}), "16");
  EXPECT_EQ(patch.operations(),
            json::parse(R"([{"op":"add","path":"/spec/containers/0/resources","value":{"requests":{"cpu":"16"}}}])"));
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0],
            json::parse(R"({"name":"trainer","resources":{"requests":{"cpu":"16"}}})"));
}

TEST(PatchBuilder, TwoKeysUnderTheSameMissingParent) {
  const json doc = container_doc({{"limits", {{"nvidia.com/gpu", "4"}}}});
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "requests", "cpu"}), "32");
  patch.set(at({"resources", "requests", "memory"}), "192Gi");
  EXPECT_EQ(patch.operations(), json::parse(R"([
    {"op":"add","path":"/spec/containers/0/resources/requests","value":{"cpu":"32"}},
    {"op":"add","path":"/spec/containers/0/resources/requests/memory","value":"192Gi"}])"));
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["resources"],
            json::parse(R"({"limits":{"nvidia.com/gpu":"4"},"requests":{"cpu":"32","memory":"192Gi"}})"));
}

TEST(PatchBuilder, KeysUnderSiblingsOfACreatedMap) {
  // resources is missing: the first set creates it; the second set adds a
  // sibling map (limits) inside the created one; the third adds to it.
  const json doc = container_doc(json(json::value_t::discarded));
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "requests", "cpu"}), "16");
  patch.set(at({"resources", "limits", "cpu"}), "16");
  patch.set(at({"resources", "limits", "memory"}), "64Gi");
  patch.set(at({"resources", "requests", "memory"}), "64Gi");
  ASSERT_EQ(patch.operations().size(), 4u);
  EXPECT_EQ(patch.operations()[0]["path"], "/spec/containers/0/resources");
  EXPECT_EQ(patch.operations()[1]["path"], "/spec/containers/0/resources/limits");
  EXPECT_EQ(patch.operations()[2]["path"], "/spec/containers/0/resources/limits/memory");
  EXPECT_EQ(patch.operations()[3]["path"], "/spec/containers/0/resources/requests/memory");
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["resources"],
            json::parse(R"({"requests":{"cpu":"16","memory":"64Gi"},"limits":{"cpu":"16","memory":"64Gi"}})"));
}

TEST(PatchBuilder, NullParentIsTreatedAsMissing) {
  const json doc = container_doc({{"requests", nullptr}, {"limits", {{"nvidia.com/gpu", "1"}}}});
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "requests", "cpu"}), "16");
  patch.set(at({"resources", "requests", "nvidia.com/gpu"}), "1");
  EXPECT_EQ(patch.operations(), json::parse(R"([
    {"op":"add","path":"/spec/containers/0/resources/requests","value":{"cpu":"16"}},
    {"op":"add","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu","value":"1"}])"));
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["resources"]["requests"], json({{"cpu", "16"}, {"nvidia.com/gpu", "1"}}));
}

TEST(PatchBuilder, NullResourcesIsTreatedAsMissing) {
  const json doc = container_doc(nullptr);
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "limits", "memory"}), "64Gi");
  ASSERT_EQ(patch.operations().size(), 1u);
  EXPECT_EQ(patch.operations()[0]["path"], "/spec/containers/0/resources");
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["resources"], json::parse(R"({"limits":{"memory":"64Gi"}})"));
}

TEST(PatchBuilder, MissingMetadataAndAnnotationsFromTheRoot) {
  const json doc = json::parse(R"({"spec":{}})");
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set({"metadata", "annotations", "gpu-sizer.io/sized"}, "x");
  patch.set({"metadata", "annotations", "a~b"}, "y");
  ASSERT_EQ(patch.operations().size(), 2u);
  EXPECT_EQ(patch.operations()[0]["path"], "/metadata");
  EXPECT_EQ(patch.operations()[1]["path"], "/metadata/annotations/a~0b");
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["metadata"], json::parse(R"({"annotations":{"gpu-sizer.io/sized":"x","a~b":"y"}})"));
}

TEST(PatchBuilder, ExistingAnnotationsKeepTheirKeys) {
  const json doc = json::parse(R"({"metadata":{"name":"p","annotations":{"team":"cv"}}})");
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set({"metadata", "annotations", "gpu-sizer.io/sized"}, "x");
  EXPECT_EQ(patch.operations(),
            json::parse(R"([{"op":"add","path":"/metadata/annotations/gpu-sizer.io~1sized","value":"x"}])"));
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["metadata"]["annotations"], json({{"team", "cv"}, {"gpu-sizer.io/sized", "x"}}));
  EXPECT_EQ(result["metadata"]["name"], "p");
}

TEST(PatchBuilder, SecondContainerOfAnArray) {
  const json doc = json::parse(R"({"spec":{"containers":[{"name":"a"},{"name":"b","resources":{}}]}})");
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set({"spec", "containers", "1", "resources", "requests", "cpu"}, "8");
  patch.set({"spec", "containers", "0", "resources", "requests", "cpu"}, "4");
  ASSERT_EQ(patch.operations().size(), 2u);
  EXPECT_EQ(patch.operations()[0]["path"], "/spec/containers/1/resources/requests");
  EXPECT_EQ(patch.operations()[1]["path"], "/spec/containers/0/resources");
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result, json::parse(R"({"spec":{"containers":[
      {"name":"a","resources":{"requests":{"cpu":"4"}}},
      {"name":"b","resources":{"requests":{"cpu":"8"}}}]}})"));
}

TEST(PatchBuilder, PathBelowANestedTemplate) {
  // Pod templates sit deep inside other objects (Job spec.template).
  const json doc = json::parse(R"({"spec":{"template":{"spec":{"containers":[{"name":"t"}]}}}})");
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set({"spec", "template", "metadata", "annotations", "gpu-sizer.io/sized"}, "yes");
  patch.set({"spec", "template", "spec", "containers", "0", "resources", "limits", "nvidia.com/gpu"}, "1");
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["template"]["metadata"]["annotations"]["gpu-sizer.io/sized"], "yes");
  EXPECT_EQ(result["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
}

TEST(PatchBuilder, AppendAddsTheArrayOnceThenDashes) {
  const json doc = container_doc(json(json::value_t::discarded));
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.append_json({"spec", "volumes"}, R"({"name":"a"})");
  patch.append_json({"spec", "volumes"}, R"({"name":"b"})");
  EXPECT_EQ(patch.operations(), json::parse(R"([
    {"op":"add","path":"/spec/volumes","value":[{"name":"a"}]},
    {"op":"add","path":"/spec/volumes/-","value":{"name":"b"}}])"));
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["volumes"], json::parse(R"([{"name":"a"},{"name":"b"}])"));
}

TEST(PatchBuilder, AppendToAnExistingArrayDashes) {
  json doc = container_doc(json(json::value_t::discarded));
  doc["spec"]["containers"][0]["volumeMounts"] = json::parse(R"([{"name":"data","mountPath":"/data"}])");
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.append_json(at({"volumeMounts"}), R"({"name":"shm","mountPath":"/dev/shm"})");
  EXPECT_EQ(
      patch.operations(),
      json::parse(
          R"([{"op":"add","path":"/spec/containers/0/volumeMounts/-","value":{"name":"shm","mountPath":"/dev/shm"}}])"));
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["containers"][0]["volumeMounts"].size(), 2u);
}

TEST(PatchBuilder, SetJsonWritesTheValueAsJson) {
  const json doc = container_doc(json(json::value_t::discarded));
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set_json({"spec", "volumes"}, R"([{"name":"a","emptyDir":{}}])");
  json result = apply_ops(doc, patch.operations());
  EXPECT_EQ(result["spec"]["volumes"][0]["emptyDir"], json::object());
}

TEST(PatchBuilder, DoesNotModifyTheDocument) {
  json doc = container_doc(json(json::value_t::discarded));
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.set(at({"resources", "requests", "cpu"}), "16");
  EXPECT_EQ(doc, container_doc(json(json::value_t::discarded)));
}

// merge: a container's edits as one operation (issue 30).

// The resources a raised container gets: requests and limits of cpu and
// memory, as sizing sets them.
PatchOverlay raised_resources() {
  PatchOverlay overlay;
  overlay.set(std::vector<std::string_view>{"resources", "requests", "cpu"}, "32");
  overlay.set(std::vector<std::string_view>{"resources", "limits", "cpu"}, "32");
  overlay.set(std::vector<std::string_view>{"resources", "requests", "memory"}, "192Gi");
  overlay.set(std::vector<std::string_view>{"resources", "limits", "memory"}, "192Gi");
  return overlay;
}

TEST(PatchBuilderMerge, RequestsAndLimitsAreOneOperationOnResourcesKeepingWhatTheUserWrote) {
  const json doc = container_doc(json::parse(R"({"limits":{"nvidia.com/gpu":"4","cpu":8,"memory":"64Gi"},
    "requests":{"cpu":"8"},"claims":[{"name":"gpus"}]})"));
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.merge(kContainer, raised_resources());
  const json ops = patch.operations();
  ASSERT_EQ(ops.size(), 1u) << ops.dump();
  EXPECT_EQ(ops[0]["path"], "/spec/containers/0/resources");
  const json result = apply_ops(doc, ops);
  EXPECT_EQ(result["spec"]["containers"][0]["resources"], json::parse(R"({
    "limits":{"nvidia.com/gpu":"4","cpu":"32","memory":"192Gi"},
    "requests":{"cpu":"32","memory":"192Gi"},"claims":[{"name":"gpus"}]})"));
  EXPECT_EQ(result["spec"]["containers"][0]["name"], "trainer");
}

TEST(PatchBuilderMerge, AMissingResourcesMapIsAddedWhole) {
  for (const json& resources : {json(json::value_t::discarded), json(nullptr)}) {
    const json doc = container_doc(resources);
    JsonReader reader;
    PatchBuilder patch(reader.view_of(doc));
    patch.merge(kContainer, raised_resources());
    const json ops = patch.operations();
    ASSERT_EQ(ops.size(), 1u) << ops.dump();
    EXPECT_EQ(apply_ops(doc, ops)["spec"]["containers"][0]["resources"],
              json::parse(R"({"limits":{"cpu":"32","memory":"192Gi"},"requests":{"cpu":"32","memory":"192Gi"}})"));
  }
}

TEST(PatchBuilderMerge, ResourcesAndAMountReplaceTheContainerInPlace) {
  json doc = container_doc(json::parse(R"({"limits":{"nvidia.com/gpu":"4"}})"));
  json& trainer = doc["spec"]["containers"][0];
  trainer["env"] = json::parse(R"([{"name":"A","value":"1"},{"name":"N","value":"1.5e3"}])");
  trainer["ports"] = json::parse(R"([{"containerPort":9090}])");
  trainer["volumeMounts"] = json::parse(R"([{"name":"data","mountPath":"/data"}])");
  doc["spec"]["containers"].push_back({{"name", "sidecar"}});
  PatchOverlay overlay = raised_resources();
  overlay.append_json(std::vector<std::string_view>{"volumeMounts"}, R"({"name":"shm","mountPath":"/dev/shm"})");
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.merge(kContainer, overlay);
  const json ops = patch.operations();
  ASSERT_EQ(ops.size(), 1u) << ops.dump();
  // `add` at an array index would insert a copy before the container.
  EXPECT_EQ(ops[0]["op"], "replace");
  const json result = apply_ops(doc, ops);
  ASSERT_EQ(result["spec"]["containers"].size(), 2u);
  json expected = doc["spec"]["containers"][0];
  expected["resources"] = json::parse(
      R"({"limits":{"nvidia.com/gpu":"4","cpu":"32","memory":"192Gi"},"requests":{"cpu":"32","memory":"192Gi"}})");
  expected["volumeMounts"].push_back({{"name", "shm"}, {"mountPath", "/dev/shm"}});
  EXPECT_EQ(result["spec"]["containers"][0], expected);
  EXPECT_EQ(result["spec"]["containers"][1], doc["spec"]["containers"][1]);
}

TEST(PatchBuilderMerge, ALoneEditIsWrittenAsSetAndAppendWriteIt) {
  const json doc = container_doc(json::parse(R"({"requests":{"cpu":"4"}})"));
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  PatchOverlay memory;
  memory.set(std::vector<std::string_view>{"resources", "requests", "memory"}, "64Gi");
  patch.merge(kContainer, memory);
  PatchOverlay mount;
  mount.append_json(std::vector<std::string_view>{"volumeMounts"}, R"({"name":"shm"})");
  patch.merge({"spec", "containers", "0"}, mount);
  patch.merge(kContainer, PatchOverlay{});  // nothing to write
  EXPECT_EQ(patch.operations(), json::parse(R"([
    {"op":"add","path":"/spec/containers/0/resources/requests/memory","value":"64Gi"},
    {"op":"add","path":"/spec/containers/0/volumeMounts","value":[{"name":"shm"}]}])"));
}

TEST(PatchBuilderMerge, SeveralAppendedElementsAreOneOperationOnTheArray) {
  json doc = container_doc(json(json::value_t::discarded));
  doc["spec"]["volumes"] = json::parse(R"([{"name":"data","hostPath":{"path":"/x"}}])");
  PatchOverlay overlay;
  overlay.append_json(std::vector<std::string_view>{"volumes"}, R"({"name":"a"})");
  overlay.append_json(std::vector<std::string_view>{"volumes"}, R"({"name":"b"})");
  JsonReader reader;
  PatchBuilder patch(reader.view_of(doc));
  patch.merge({"spec"}, overlay);
  const json ops = patch.operations();
  ASSERT_EQ(ops.size(), 1u) << ops.dump();
  EXPECT_EQ(apply_ops(doc, ops)["spec"]["volumes"],
            json::parse(R"([{"name":"data","hostPath":{"path":"/x"}},{"name":"a"},{"name":"b"}])"));
}

}  // namespace
}  // namespace gpusizer::json_patch_test
