// The rules beyond the table (/dev/shm, data loader, GPU memory, node fit)
// as the command line reports them: `explain` naming every rule and the
// binding one, `check` finding and fixing a missing /dev/shm, and `check
// --output json` at, just under and just over each rule's threshold.
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "integration/cli_support.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::cli_rules_test {
namespace {

using namespace cli_test;  // NOLINT(google-build-using-namespace)

const std::string kBeyond = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/beyond/";

TEST(CliCheck, TrainingPodWithoutShmIsReportedAndFixed) {
  const auto result = run("check " + kBeyond + "training-without-shm.yaml");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("/dev/shm: added 32Gi memory-backed emptyDir \"gpu-sizer-shm\" to \"trainer\""),
            std::string::npos)
      << result.output;

  TempDir dir;
  const std::string copy = dir.path() + "/pod.yaml";
  std::filesystem::copy_file(kBeyond + "training-without-shm.yaml", copy);
  EXPECT_EQ(run("check --fix --in-place " + copy).exit_code, 1);
  const auto again = run("check " + copy);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  std::ifstream fixed(copy);
  const std::string text((std::istreambuf_iterator<char>(fixed)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("mountPath: \"/dev/shm\""), std::string::npos) << text;
  EXPECT_NE(text.find("medium: \"Memory\""), std::string::npos) << text;
}

TEST(CliExplain, TableNamesEveryRuleAndTheBindingOne) {
  const auto result = run("explain " + kBeyond + "llama-7b-sft.yaml");
  EXPECT_EQ(result.exit_code, 0) << "explain reports; check is the gate";
  for (const char* part :
       {"Pod ml-team/llama-7b-sft: DENIED (mode mutate)", "pod ml-team/llama-7b-sft: 2 GPUs, train profile",
        "table        cpu 16, memory 96Gi, ephemeral-storage 300Gi", "/dev/shm     /dev/shm 32Gi",
        "data loader  memory 122Gi", "GPU memory   127.0 GB per GPU", "node fit     -",
        "      weights            13.04 GiB/GPU certain                 7B params x 2 bytes (bf16)",
        "      certain            104.31 GiB/GPU", "      capacity           ",
        "binding      memory 122Gi                                  data loader: 2 x (32 workers x 8 prefetch",
        "container \"trainer\" cpu 16, memory 122Gi, ephemeral-storage 300Gi requests it runs with (2 GPUs)",
        "change   container \"trainer\": memory request 64Gi->122Gi", "deny     pod ml-team/llama-7b-sft: model"}) {
    EXPECT_NE(result.output.find(part), std::string::npos) << part << "\n" << result.output;
  }
}

TEST(CliExplain, JsonOutputListsTheRules) {
  const auto result = run("explain --output json " + kBeyond + "llama-7b-sft.yaml", false);
  EXPECT_EQ(result.exit_code, 0);
  const auto report = nlohmann::json::parse(result.output);
  const auto& pod = report["files"][0]["objects"][0]["pods"][0];
  EXPECT_EQ(pod["gpus"], 2);
  EXPECT_EQ(pod["profile"], "train");
  std::vector<std::string> rules;
  for (const auto& rule : pod["rules"]) rules.push_back(rule["rule"]);
  // The demand model's asks first, then the rules.
  EXPECT_EQ(rules,
            (std::vector<std::string>{"ask", "table", "/dev/shm", "data loader", "history", "offload", "node caps",
                                      "GPU memory", "node fit", "binding", "container \"trainer\""}));
  EXPECT_EQ(pod["rules"][0]["floor"], "container \"trainer\": 2 nvidia.com/gpu");
  EXPECT_EQ(pod["rules"][9]["floor"], "memory 122Gi");
  EXPECT_EQ(pod["denials"].size(), 1u);
  // The GPU memory rule's arithmetic as numbers: each component in bytes
  // per GPU, the sums, and the GPU.
  const auto& parts = pod["rules"][7]["parts"];
  std::map<std::string, int64_t> bytes;
  for (const auto& part : parts) {
    ASSERT_TRUE(part["bytes"].is_number_integer()) << part;
    ASSERT_TRUE(part["gib"].is_number()) << part;
    EXPECT_FALSE(part["formula"].get<std::string>().empty()) << part;
    bytes[part["name"]] = part["bytes"];
  }
  EXPECT_EQ(bytes.at("weights"), 14'000'000'000);  // params=7B x 2 bytes (bf16)
  EXPECT_EQ(bytes.at("certain"), bytes.at("weights") + bytes.at("gradients") + bytes.at("optimizer"));
  EXPECT_GT(bytes.at("certain"), bytes.at("capacity"));  // why it is denied
  EXPECT_TRUE(pod["rules"][1]["parts"].empty());         // the table rule shows no parts
}

TEST(CliExplain, ReadsStdinAndExitsTwoOnUnreadableInput) {
  const auto piped = run("explain - < " + kBeyond + "training-without-shm.yaml");
  EXPECT_EQ(piped.exit_code, 0);
  EXPECT_NE(piped.output.find("stdin:"), std::string::npos) << piped.output;
  EXPECT_NE(piped.output.find("none found: gpu-sizer sets 32Gi"), std::string::npos) << piped.output;
  const auto missing = run("explain /nonexistent/x.yaml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("/nonexistent/x.yaml"), std::string::npos);
  EXPECT_EQ(run("explain --fix " + kBeyond + "llama-7b-sft.yaml").exit_code, 2);
}

TEST(CliExplain, WorkloadPrintsOneBlockPerTemplate) {
  const auto result = run("explain " + kWorkloads + "pytorchjob.yaml");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.output.find("Master"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("Worker"), std::string::npos) << result.output;
}

// Each rule beyond the table at, just under and just over its threshold,
// through `gpu-sizer check --output json` as a CI job runs it.
struct Threshold {
  std::string name;
  int gpus;
  std::string profile;      // train or infer
  std::string shm;          // the /dev/shm sizeLimit
  std::string annotations;  // YAML flow mapping, or empty
  std::string policy;       // policy file text, or empty
  std::string result;       // unchanged | changed | denied
  std::string expect;       // in a change, warning or denial; empty: no findings at all
};
void PrintTo(const Threshold& t, std::ostream* out) { *out << t.name; }

class CliThresholds : public ::testing::TestWithParam<Threshold> {};

TEST_P(CliThresholds, CheckReportsTheRuleAtItsThreshold) {
  const Threshold& t = GetParam();
  const bool infer = t.profile == "infer";
  // Sized to the profile's row, so only the rule under test can report.
  const int row = t.gpus == 1 ? 0 : t.gpus == 4 ? 1 : 2;
  const std::string cpu = infer ? std::to_string(4 * t.gpus) : std::array{"16", "32", "64"}[row];
  const std::string memory = std::array{"64Gi", "192Gi", "384Gi"}[row];
  const std::string storage = infer ? "200Gi" : "300Gi";
  TempDir dir;
  std::ofstream(dir.path() + "/pod.yaml")
      << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ml\n"
      << "  labels: {gpu-sizer.io/profile: " << t.profile << "}\n"
      << (t.annotations.empty() ? "" : "  annotations: " + t.annotations + "\n")
      << "spec:\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-GeForce-RTX-4090}\n"
      << "  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: " << t.shm << "}}]\n"
      << "  containers:\n    - name: main\n      volumeMounts: [{name: dshm, mountPath: /dev/shm}]\n"
      << "      resources:\n        limits: {nvidia.com/gpu: " << t.gpus << ", cpu: \"" << cpu
      << "\", memory: " << memory << ", ephemeral-storage: " << storage << "}\n";
  std::string policy;
  if (!t.policy.empty()) {
    std::ofstream(dir.path() + "/policy.yaml") << t.policy;
    policy = "--policy " + dir.path() + "/policy.yaml ";
  }
  const auto result = run("check --output json " + policy + dir.path() + "/pod.yaml", false);
  const auto report = nlohmann::json::parse(result.output);
  const auto& object = report["files"][0]["objects"][0];
  EXPECT_EQ(object["result"], t.result) << object.dump(1);
  std::string findings;
  for (const char* key : {"changes", "warnings", "denials"}) {
    for (const auto& line : object[key]) findings += line.get<std::string>() + "\n";
  }
  if (t.expect.empty()) {
    EXPECT_EQ(findings, "");
  } else {
    EXPECT_NE(findings.find(t.expect), std::string::npos) << t.expect << "\n" << findings;
  }
}

const std::string kLoader = "{gpu-sizer.io/dataloader: \"workers=4,prefetch=2,sample=1024x1024,dtype=uint8,batch=";
const std::string kNodeFit =
    "nodeFit:\n  action: deny\n  pools:\n    - name: a100\n      nodes: [{name: dgx, gpus: 8, cpu: ";

// The GPU memory thresholds on a GPU of 24 GB exactly (usable 20.4 GB at
// 0.85), replacing the built-in RTX-4090's 24564 MiB by name, so each
// threshold falls on a round figure.
const std::string kGpu24GB = "gpuMemory:\n  gpus:\n    - {name: RTX-4090, memory: 24G, match: [\"*RTX-4090\"]}\n";

INSTANTIATE_TEST_SUITE_P(
    BeyondTheTable, CliThresholds,
    ::testing::Values(
        Threshold{"shm_at_minimum", 4, "train", "16Gi", "", "", "unchanged", ""},
        Threshold{"shm_just_under", 4, "train", "16383Mi", "", "", "changed", "sizeLimit 16383Mi->32Gi"},
        Threshold{"shm_just_over", 4, "train", "16385Mi", "", "", "unchanged", ""},
        Threshold{"shm_at_table_includes", 4, "train", "32Gi", "", "", "unchanged", ""},
        Threshold{"shm_over_table_includes", 4, "train", "33Gi", "", "", "changed", "memory request unset->193Gi"},
        Threshold{"loader_under_table", 1, "train", "32Gi", kLoader + "4700\"}", "", "unchanged", ""},
        Threshold{"loader_at_table", 1, "train", "32Gi", kLoader + "4800\"}", "", "unchanged", ""},
        Threshold{"loader_over_table", 1, "train", "32Gi", kLoader + "4900\"}", "", "changed",
                  "memory request unset->65Gi"},
        Threshold{"vram_at_margin", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=9.5B,context=400\"}", kGpu24GB,
                  "unchanged", ""},
        Threshold{"vram_under_margin", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=9.5B,context=300\"}",
                  kGpu24GB, "unchanged", ""},
        Threshold{"vram_over_margin", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=9.5B,context=500\"}", kGpu24GB,
                  "unchanged", "20.5 GB/GPU"},
        Threshold{"vram_at_capacity", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=12B\"}", kGpu24GB, "unchanged",
                  "25.0 GB/GPU"},
        Threshold{"vram_over_capacity", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=12.1B\"}", kGpu24GB,
                  "denied", "needs 25.2 GB per GPU"},
        // 2B x 16 bytes (fp32 weights, gradients, two moments) = 29.8Gi over the 1-GPU table's 64Gi.
        Threshold{"offload_adds_host_memory", 1, "train", "32Gi",
                  "{gpu-sizer.io/model: \"params=2B,zero=1,offload=optimizer\"}", "", "changed",
                  "memory request unset->94Gi"},
        Threshold{"offload_to_nvme_adds_none", 1, "train", "32Gi",
                  "{gpu-sizer.io/model: \"params=2B,zero=3,offload=nvme\"}", "", "unchanged", ""},
        Threshold{"node_equal", 8, "train", "32Gi", "", kNodeFit + "\"64\", memory: 384Gi, ephemeralStorage: 300Gi}]\n",
                  "unchanged", ""},
        Threshold{"node_one_milli_cpu_more", 8, "train", "32Gi", "",
                  kNodeFit + "\"64001m\", memory: 384Gi, ephemeralStorage: 300Gi}]\n", "unchanged", ""},
        Threshold{"node_one_milli_cpu_less", 8, "train", "32Gi", "",
                  kNodeFit + "\"63999m\", memory: 384Gi, ephemeralStorage: 300Gi}]\n", "denied", "dgx"}),
    [](const auto& info) { return info.param.name; });

TEST(CliExplain, DataLoaderAtUnderAndOverTheTable) {
  TempDir dir;
  for (const char* batch : {"4700", "4800", "4900"}) {
    std::ofstream(dir.path() + "/pod-" + batch + ".yaml")
        << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p" << batch << "\n  namespace: ml\n"
        << "  annotations: " << kLoader << batch << "\"}\n"
        << "spec:\n  containers:\n    - name: main\n      resources: {limits: {nvidia.com/gpu: 1}}\n";
  }
  const auto result = run("explain " + dir.path());
  EXPECT_EQ(result.exit_code, 0);
  // One line holding every part.
  auto has_row = [&](std::initializer_list<std::string> parts) {
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
      if (std::all_of(parts.begin(), parts.end(),
                      [&](const std::string& p) { return line.find(p) != std::string::npos; })) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(has_row({"data loader  memory 63Gi"})) << result.output;
  EXPECT_TRUE(has_row({"binding      memory 64Gi", "train profile"})) << result.output;
  EXPECT_TRUE(has_row({"data loader  memory 65Gi"})) << result.output;
  EXPECT_TRUE(has_row({"binding      memory 65Gi", "data loader: 1 x (4 workers x 2 prefetch"})) << result.output;
}

}  // namespace
}  // namespace gpusizer::testing::cli_rules_test
