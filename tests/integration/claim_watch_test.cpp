// The DRA watch (server/claim_watcher.h) against a loopback API server
// (fake_api_server.h), as the node watch is tested: ResourceClaimTemplates,
// ResourceClaims, DeviceClasses and ResourceSlices listed and watched into the inventory
// decisions read; and through `gpu-sizer serve`, the 4-GPU DRA pod of
// tests/data/accelerators sized with its template watched, warned without it.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/check/manifests.h"
#include "gpusizer/server/claim_watcher.h"
#include "gpusizer/util/base64.h"
#include "gpusizer/util/files.h"
#include "integration/fake_api_server.h"
#include "integration/webhook_process.h"
#include "support/review_support.h"

namespace gpusizer::testing::claim_watch_test {
namespace {

using nlohmann::json;

constexpr const char* kTemplates = "/apis/resource.k8s.io/v1/resourceclaimtemplates";
constexpr const char* kClaims = "/apis/resource.k8s.io/v1/resourceclaims";
constexpr const char* kClasses = "/apis/resource.k8s.io/v1/deviceclasses";
constexpr const char* kSlices = "/apis/resource.k8s.io/v1/resourceslices";

// The fixture's template and pod (tests/data/accelerators/dra-4gpu-template.yaml).
std::vector<json> dra_fixture() {
  const std::string path = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/accelerators/dra-4gpu-template.yaml";
  auto text = read_file(path);
  if (!text) throw std::runtime_error(text.error());
  auto manifests = read_manifests(text.value(), path);
  if (!manifests) throw std::runtime_error(manifests.error());
  return {manifests.value().documents.at(0).object, manifests.value().documents.at(1).object};
}

ListWatchOptions quick() {
  ListWatchOptions options;
  options.backoff_min = std::chrono::milliseconds(20);
  options.backoff_max = std::chrono::milliseconds(100);
  options.watch_seconds = 5;
  options.shortest_watch = std::chrono::milliseconds(0);
  return options;
}

class ClaimWatch : public ::testing::Test {
 protected:
  ClaimWatch() {
    api_.set_items(kTemplates, {dra_fixture().at(0)}, "7");
    api_.set_items(kClaims, {}, "7");
    api_.set_items(kClasses, {}, "7");
    api_.set_items(kSlices, {}, "7");
  }

  // The answer of /mutate for the fixture's pod with what the watcher knows now.
  json mutate(const ClaimWatcher& watcher) {
    const auto claims = watcher.inventory();
    return json::parse(handle_review(default_policy(), Endpoint::kMutate,
                                     admission_review(dra_fixture().at(1), "ml-team").dump(),
                                     ClusterView{nullptr, claims.get()})
                           .body);
  }

  TempDir dir_;
  FakeApiServer api_{dir_.path() + "/api"};
};

TEST_F(ClaimWatch, AListedTemplateSizesThePodAndItsDeletionLeavesTheClaimWarned) {
  ClaimWatcher watcher(api_.config(), quick(), nullptr);
  // Before the first list nothing is known, and the inventory says so.
  EXPECT_FALSE(watcher.inventory()->stale.empty());
  watcher.start();
  ASSERT_TRUE(eventually([&] { return api_.streaming(kTemplates) && api_.streaming(kClasses); }));
  ASSERT_TRUE(eventually([&] { return watcher.inventory()->templates.size() == 1; }));
  EXPECT_TRUE(mutate(watcher)["response"].contains("patch"));
  for (const DraWatchStatus& kind : watcher.status()) {
    EXPECT_EQ(kind.state, WatchStatus::State::kSynced) << to_string(kind.kind) << ": " << kind.last_error;
  }
  EXPECT_TRUE(watcher.inventory()->stale.empty());

  api_.push_event("DELETED", dra_fixture().at(0), kTemplates);
  ASSERT_TRUE(eventually([&] { return watcher.inventory()->templates.empty(); }));
  const json answer = mutate(watcher);
  EXPECT_FALSE(answer["response"].contains("patch")) << answer.dump();
}

TEST_F(ClaimWatch, AClaimAPodOwnsIsNotKeptAndAnEventAddsAClass) {
  ClaimWatcher watcher(api_.config(), quick(), nullptr);
  watcher.start();
  ASSERT_TRUE(eventually([&] { return api_.streaming(kClaims) && api_.streaming(kClasses); }));
  json owned = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata",
       {{"name", "torchrun-dra-gpus-x7k"},
        {"namespace", "ml-team"},
        {"ownerReferences", json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "torchrun-dra"}}})}}},
      {"spec", dra_fixture().at(0)["spec"]["spec"]}};
  json shared = owned;
  shared["metadata"].erase("ownerReferences");
  shared["metadata"]["name"] = "shared-gpus";
  api_.push_event("ADDED", owned, kClaims);
  api_.push_event("ADDED", shared, kClaims);
  api_.push_event("ADDED",
                  {{"apiVersion", "resource.k8s.io/v1"},
                   {"kind", "DeviceClass"},
                   {"metadata", {{"name", "gpu.example.com"}}},
                   {"spec", {{"extendedResourceName", "example.com/gpu"}}}},
                  kClasses);
  ASSERT_TRUE(eventually([&] { return watcher.inventory()->device_classes == 1; }));
  ASSERT_TRUE(eventually([&] { return watcher.inventory()->claims.size() == 1; }));
  EXPECT_NE(watcher.inventory()->find("ResourceClaim", "ml-team", "shared-gpus"), nullptr);
  EXPECT_EQ(watcher.inventory()->extended_resources.at("example.com/gpu"), "gpu.example.com");
}

TEST_F(ClaimWatch, ANodesResourceSliceIsKeptByItsNodeAndItsDeletionForgetsIt) {
  ClaimWatcher watcher(api_.config(), quick(), nullptr);
  watcher.start();
  ASSERT_TRUE(eventually([&] { return api_.streaming(kSlices); }));
  const json slice = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", "gpu-node-1-gpu.nvidia.com-7k2p"}}},
      {"spec",
       {{"driver", "gpu.nvidia.com"},
        {"nodeName", "gpu-node-1"},
        {"pool", {{"name", "gpu-node-1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices",
         json::array(
             {{{"name", "gpu-0"},
               {"attributes", {{"type", {{"string", "gpu"}}}, {"productName", {{"string", "NVIDIA A100-SXM4-80GB"}}}}},
               {"capacity", {{"memory", {{"value", "80Gi"}}}}}}})}}}};
  api_.push_event("ADDED", slice, kSlices);
  ASSERT_TRUE(eventually([&] { return watcher.inventory()->node_slices.contains("gpu-node-1"); }));
  const auto& devices = watcher.inventory()->node_slices.at("gpu-node-1").front()->devices;
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].product, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(devices[0].memory_bytes, int64_t{80} << 30);
  api_.push_event("DELETED", slice, kSlices);
  ASSERT_TRUE(eventually([&] { return watcher.inventory()->node_slices.empty(); }));
}

TEST_F(ClaimWatch, AnApiServerWithoutDraKeepsTryingAndSaysSo) {
  TempDir dir;
  FakeApiServer old_api(dir.path() + "/api");  // serves nodes only: every DRA list is 404
  ClaimWatcher watcher(old_api.config(), quick(), nullptr);
  watcher.start();
  ASSERT_TRUE(eventually([&] { return old_api.count(false) >= 8; }));  // each kind listed twice
  for (const DraWatchStatus& kind : watcher.status()) {
    EXPECT_EQ(kind.state, WatchStatus::State::kStarting);
    EXPECT_NE(kind.last_error.find("404"), std::string::npos) << kind.last_error;
  }
  EXPECT_NE(watcher.inventory()->stale.find("not listed yet"), std::string::npos) << watcher.inventory()->stale;
  EXPECT_FALSE(mutate(watcher)["response"].contains("patch"));
}

// The done-when of issue 27, through the real server: with the template
// watched, the 4-GPU DRA pod is sized; --dra-watch off leaves it warned.
TEST_F(ClaimWatch, ServeSizesTheDraPodFromTheWatchedTemplate) {
  const std::string kubeconfig = dir_.path() + "/kubeconfig";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: fake\n"
                               "  cluster:\n    server: https://127.0.0.1:"
                            << api_.port()
                            << "\n    certificate-authority-data: " << base64_encode(api_.config().ca_pem)
                            << "\ncontexts:\n- name: test\n  context:\n    cluster: fake\n    user: u\nusers:\n"
                               "- name: u\n  user:\n    token: t\n";
  const json review = admission_review(dra_fixture().at(1), "ml-team");
  WebhookProcess watching({"--kubeconfig", kubeconfig});
  json patched;
  ASSERT_TRUE(eventually([&] {
    patched = watching.review("/mutate", review);
    return patched["response"].contains("patch");
  })) << patched.dump();
  const json pod = apply_response(dra_fixture().at(1), patched);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["memory"], "192Gi") << pod.dump();

  WebhookProcess not_watching({"--kubeconfig", kubeconfig, "--dra-watch", "off"});
  EXPECT_FALSE(not_watching.review("/mutate", review)["response"].contains("patch"));
  const json validated = not_watching.review("/validate", review);
  EXPECT_EQ(validated["response"]["warnings"],
            json::array({"container \"trainer\": DRA claim \"gpus\" (template \"four-gpus\") is not sized; set its cpu "
                         "and memory"}))
      << validated.dump();
}

}  // namespace
}  // namespace gpusizer::testing::claim_watch_test
