// Every way a pod asks for a GPU, through the real webhook and the command
// line: pod-level resources sized at the pod level (and still accepted by
// the API server's checks), and MIG slices, shared replicas, fractions and
// other vendors' devices warned, never passed with no word.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/check/manifests.h"
#include "gpusizer/util/files.h"
#include "integration/cli_support.h"
#include "integration/shared_webhook.h"
#include "integration/webhook_process.h"
#include "support/api_validation.h"
#include "support/review_support.h"

namespace gpusizer::testing::accelerators_test {
namespace {

const std::string kAccelerators = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/accelerators/";

std::vector<json> objects_of(const std::string& file) {
  auto text = read_file(kAccelerators + file);
  if (!text) throw std::runtime_error(text.error());
  auto manifests = read_manifests(text.value(), file);
  if (!manifests) throw std::runtime_error(manifests.error());
  std::vector<json> out;
  for (const auto& document : manifests.value().documents) out.push_back(document.object);
  return out;
}

class AcceleratorsWebhook : public SharedWebhookTest {};

TEST_F(AcceleratorsWebhook, APodLevelPodIsSizedAtThePodLevelAndStaysValid) {
  const json pod = objects_of("pod-level-4gpu.yaml").at(0);
  const json patched = apply_response(pod, webhook_->review("/mutate", admission_review(pod)));
  EXPECT_EQ(patched["spec"]["resources"]["requests"], json({{"cpu", "33"}, {"memory", "193Gi"}})) << patched.dump();
  EXPECT_EQ(patched["spec"]["resources"]["limits"], json({{"cpu", "33"}, {"memory", "193Gi"}}));
  EXPECT_EQ(api_resource_errors(patched), std::vector<std::string>{});
  const json validated = webhook_->review("/validate", admission_review(patched));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
  EXPECT_FALSE(webhook_->review("/mutate", admission_review(patched))["response"].contains("patch"));
}

TEST_F(AcceleratorsWebhook, SlicesSharesFractionsAndTpusAreWarnedAndNotPatched) {
  const std::vector<std::string> expected = {
      "container \"server\": 2 nvidia.com/mig-3g.40gb (MIG slice) not sized; as 2 GPUs, train: cpu 16, memory 96Gi",
      "container \"jupyter\": 1 nvidia.com/gpu.shared (shared GPU replica) not sized; as 1 GPU, train: cpu 16, "
      "memory 64Gi",
      "annotation gpu-fraction=0.5 (fraction of a GPU) not sized; as 1 GPU, train: cpu 16, memory 64Gi",
      "spec.template container \"jax\": 4 google.com/tpu (TPU chip) not sized; as 4 GPUs, train: cpu 32, memory "
      "192Gi"};
  const std::vector<json> objects = objects_of("shared-and-sliced.yaml");
  ASSERT_EQ(objects.size(), expected.size());
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const json review = objects[i]["kind"] == "Pod" ? admission_review(objects[i]) : workload_review(objects[i]);
    EXPECT_FALSE(webhook_->review("/mutate", review)["response"].contains("patch")) << objects[i].dump();
    const json validated = webhook_->review("/validate", review);
    EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
    EXPECT_EQ(validated["response"].value("warnings", json::array()), json::array({expected[i]}));
  }
}

TEST_F(AcceleratorsWebhook, ADraPodIsWarnedNamingItsClaim) {
  const json pod = objects_of("dra-4gpu-template.yaml").at(1);
  EXPECT_FALSE(webhook_->review("/mutate", admission_review(pod))["response"].contains("patch"));
  const json validated = webhook_->review("/validate", admission_review(pod));
  EXPECT_TRUE(validated["response"]["allowed"].get<bool>()) << validated.dump();
  EXPECT_EQ(validated["response"]["warnings"],
            json::array({"container \"trainer\": DRA claim \"gpus\" (template \"four-gpus\") is not sized; set its cpu "
                         "and memory"}));
}

TEST(CliAccelerators, CheckFixesThePodLevelAndDraPodsAndWarnsOfTheRest) {
  const auto result = cli_test::run("check " + kAccelerators);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  for (const char* part :
       {"change   spec.resources: memory request 64Gi->193Gi, limit 64Gi->193Gi (4 GPUs, train profile)",
        "warning  container \"server\": 2 nvidia.com/mig-3g.40gb (MIG slice) not sized",
        "warning  annotation gpu-fraction=0.5 (fraction of a GPU) not sized",
        "change   container \"trainer\": memory request 64Gi->192Gi, limit 64Gi->192Gi (4 GPUs, train profile)",
        "6 objects with pods checked: 2 would be changed, 0 denied, 4 admitted unchanged"}) {
    EXPECT_NE(result.output.find(part), std::string::npos) << part << "\n" << result.output;
  }
}

// The done-when of issue 27: the 4-GPU DRA pod is sized as 4 GPUs by
// `check --fix`, its template read from the same file or from another file
// of the same check; without it, the claim is said.
TEST(CliAccelerators, CheckResolvesAClaimTemplateFromAnyFileItReads) {
  const auto objects = objects_of("dra-4gpu-template.yaml");
  TempDir dir;
  std::ofstream(dir.path() + "/template.yaml") << objects.at(0).dump();
  std::ofstream(dir.path() + "/pod.json") << objects.at(1).dump();
  const auto fix = cli_test::run("check --fix --output json " + dir.path() + " 2>/dev/null", false);
  EXPECT_EQ(fix.exit_code, 1) << fix.output;
  // pod.json comes first (files in name order), written back as JSON.
  const json fixed = json::parse(fix.output.substr(0, fix.output.find("---\n")));
  const json& trainer = fixed["spec"]["containers"][0]["resources"];
  EXPECT_EQ(trainer["requests"]["memory"], "192Gi") << fixed.dump();
  EXPECT_EQ(trainer["limits"]["cpu"], "32");
  EXPECT_EQ(api_resource_errors(fixed), std::vector<std::string>{});
  const auto alone = cli_test::run("check " + dir.path() + "/pod.json");
  EXPECT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_NE(alone.output.find("warning  container \"trainer\": DRA claim \"gpus\" (template \"four-gpus\") is not "
                              "sized; set its cpu and memory"),
            std::string::npos)
      << alone.output;
}

// GKE's GB200/GB300 NCCL tests: a ComputeDomain beside pods that claim its
// IMEX channel and ask nvidia.com/gpu. The channel's template is the
// controller's, not in any file: read from the ComputeDomain, it is known
// to hold no GPUs, so check does not ask for CPU and memory for it.
TEST(CliAccelerators, CheckReadsAComputeDomainsChannelTemplateFromItsFile) {
  TempDir dir;
  std::ofstream(dir.path() + "/nccl.yaml") << R"(apiVersion: resource.nvidia.com/v1beta1
kind: ComputeDomain
metadata: {name: nccl}
spec:
  channel:
    resourceClaimTemplate: {name: nccl-channel}
---
apiVersion: v1
kind: Pod
metadata: {name: nccl-test-host-1}
spec:
  resourceClaims:
  - {name: channel, resourceClaimTemplateName: nccl-channel}
  containers:
  - name: test
    image: nccl
    resources:
      limits: {nvidia.com/gpu: 4}
      claims: [{name: channel}]
)";
  const auto checked = cli_test::run("check " + dir.path() + "/nccl.yaml", false);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("cpu request unset->32 (4 GPUs, train profile)"), std::string::npos) << checked.output;
  EXPECT_EQ(checked.output.find("is not sized"), std::string::npos) << checked.output;
}

// `kubectl get nodes,resourceslices -o yaml` as --nodes: the slice shows
// the GPUs on a node without GPU labels, so the DRA pod's caps come from
// it, not from the larger CPU node.
TEST(CliAccelerators, ResourceSlicesInTheNodeFileTellWhichNodesHoldClaimedGpus) {
  TempDir dir;
  const auto node = [](const std::string& name, const std::string& cpu, const std::string& memory) {
    return json{{"apiVersion", "v1"},
                {"kind", "Node"},
                {"metadata", {{"name", name}, {"labels", {{"node.kubernetes.io/instance-type", name}}}}},
                {"status", {{"allocatable", {{"cpu", cpu}, {"memory", memory}, {"ephemeral-storage", "500Gi"}}}}}};
  };
  json gpu = {{"name", "gpu-0"},
              {"attributes", {{"type", {{"string", "gpu"}}}, {"productName", {{"string", "NVIDIA L40S"}}}}},
              {"capacity", {{"memory", {{"value", "46068Mi"}}}}}};
  json devices = json::array();
  for (const char* name : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) {
    gpu["name"] = name;
    devices.push_back(gpu);
  }
  const json slice = {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceSlice"},
                      {"metadata", {{"name", "l40s-node-gpu.nvidia.com-x1"}}},
                      {"spec", {{"driver", "gpu.nvidia.com"}, {"nodeName", "l40s-node"}, {"devices", devices}}}};
  const json cluster = {
      {"apiVersion", "v1"},
      {"kind", "List"},
      {"items", json::array({node("l40s-node", "48", "180Gi"), node("cpu-node", "190", "700Gi"), slice})}};
  std::ofstream(dir.path() + "/cluster.json") << cluster.dump();
  const auto capped =
      cli_test::run("check --nodes " + dir.path() + "/cluster.json " + kAccelerators + "dra-4gpu-template.yaml");
  EXPECT_NE(capped.output.find("capped to 179Gi: l40s-node has 180Gi"), std::string::npos) << capped.output;
  // A slice that cannot be read is an error naming the file and the slice.
  json broken = cluster;
  broken["items"][2]["metadata"].erase("name");
  std::ofstream(dir.path() + "/broken.json") << broken.dump();
  const auto refused =
      cli_test::run("check --nodes " + dir.path() + "/broken.json " + kAccelerators + "dra-4gpu-template.yaml");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("broken.json: document 1: items[2] (ResourceSlice \"\"): metadata.name is missing"),
            std::string::npos)
      << refused.output;
}

TEST(CliAccelerators, ADraObjectThatCannotBeReadIsAnErrorNamingItsField) {
  json broken = objects_of("dra-4gpu-template.yaml").at(0);
  broken["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = "four";
  TempDir dir;
  std::ofstream(dir.path() + "/broken.json") << broken.dump();
  const auto result = cli_test::run("check " + dir.path() + "/broken.json");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("broken.json: document 1, line 1 (ResourceClaimTemplate four-gpus): "
                               "spec.spec.devices.requests[0].exactly.count \"four\" must be a whole number from 1 "
                               "to 1048576"),
            std::string::npos)
      << result.output;
}

TEST(CliAccelerators, ExplainPrintsTheDemandModel) {
  const auto result = cli_test::run("explain " + kAccelerators + "shared-and-sliced.yaml");
  for (const char* part :
       {"ask          container \"server\": 2 nvidia.com/mig-3g.40gb  MIG slice, NVIDIA, 3g.40gb, 40 GB GPU memory "
        "each; warned, not sized (policy accelerators); at spec.containers[0].resources.limits",
        "ask          pod: 0.5 gpu-fraction", "at metadata.annotations.gpu-fraction",
        "ask          container \"jax\": 4 google.com/tpu             TPU chip, Google"}) {
    EXPECT_NE(result.output.find(part), std::string::npos) << part << "\n" << result.output;
  }
  const auto dra = cli_test::run("explain " + kAccelerators + "dra-4gpu-template.yaml");
  for (const char* part : {"ask          container \"trainer\": 4 gpu.nvidia.com         GPU, NVIDIA; counted as GPUs; "
                           "at ResourceClaimTemplate four-gpus request gpus, used at "
                           "spec.containers[0].resources.claims[0]",
                           "pod ml-team/torchrun-dra: 4 GPUs, train profile"}) {
    EXPECT_NE(dra.output.find(part), std::string::npos) << part << "\n" << dra.output;
  }
}

}  // namespace
}  // namespace gpusizer::testing::accelerators_test
