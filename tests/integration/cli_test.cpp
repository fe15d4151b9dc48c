// The command line as a person or a CI job runs it: output and exit codes.
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "gpusizer/check/manifests.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing {
namespace {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs gpu-sizer with args through the shell; stderr joins stdout unless
// the args redirect it themselves.
CommandResult run(const std::string& args, bool merge_stderr = true) {
  const std::string command = std::string(GPU_SIZER_BINARY) + " " + args + (merge_stderr ? " 2>&1" : "");
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(Cli, VersionAndHelp) {
  const auto version = run("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.output.rfind("gpu-sizer ", 0), 0u) << version.output;
  const auto help = run("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* part :
       {"gpu-sizer serve", "--tls-cert", "gpu-sizer table", "gpu-sizer policy", "gpu-sizer explain"}) {
    EXPECT_NE(help.output.find(part), std::string::npos) << part;
  }
}

TEST(Cli, TableForAGpuCountPrintsTheSetLine) {
  const auto four = run("table --profile train --gpus 4");
  EXPECT_EQ(four.exit_code, 0);
  EXPECT_NE(four.output.find("cpu 32, memory 192Gi, ephemeral-storage 300Gi"), std::string::npos) << four.output;
  EXPECT_NE(four.output.find("--set train_gpu=4 train_cpu=32 train_memory=192Gi"), std::string::npos) << four.output;

  const auto infer = run("table --profile infer --gpus 16");
  EXPECT_NE(infer.output.find("--set infer_gpu=16 infer_cpu=64 infer_memory=768Gi"), std::string::npos) << infer.output;

  const auto render = run("table --profile render --gpus 2");
  EXPECT_EQ(render.exit_code, 0);
  EXPECT_NE(render.output.find("at most 1 GPU"), std::string::npos) << render.output;
}

TEST(Cli, TableListsEveryRowAndTheRulePastTheLast) {
  const auto table = run("table --profile train");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.output.find("3      24       144Gi       (per-GPU rule)"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("past 8 GPUs: +8 CPU and +48Gi memory per GPU"), std::string::npos) << table.output;
}

TEST(Cli, UsageErrorsExitTwoAndSayWhatIsWrong) {
  const auto unknown_flag = run("table --gpu 4");
  EXPECT_EQ(unknown_flag.exit_code, 2);
  EXPECT_NE(unknown_flag.output.find("unknown flag --gpu"), std::string::npos) << unknown_flag.output;
  const auto bad_number = run("table --gpus four");
  EXPECT_EQ(bad_number.exit_code, 2);
  EXPECT_NE(bad_number.output.find("--gpus must be a whole number"), std::string::npos) << bad_number.output;
  const auto unknown_command = run("sizes");
  EXPECT_EQ(unknown_command.exit_code, 2);
  const auto unknown_profile = run("table --profile training");
  EXPECT_EQ(unknown_profile.exit_code, 2);
  EXPECT_NE(unknown_profile.output.find("no profile \"training\""), std::string::npos) << unknown_profile.output;
}

TEST(Cli, PolicyPrintsTheDefaultAndChecksFiles) {
  const auto printed = run("policy");
  EXPECT_EQ(printed.exit_code, 0);
  EXPECT_NE(printed.output.find("{gpus: 4, cpu: \"32\", memory: 192Gi}"), std::string::npos);

  TempDir dir;
  const std::string good = dir.path() + "/good.yaml";
  std::ofstream(good) << printed.output;
  EXPECT_EQ(run("policy --check " + good).exit_code, 0);

  const std::string bad = dir.path() + "/bad.yaml";
  std::ofstream(bad) << "mode: mutate\nprofiles:\n  train:\n    table: [{gpus: 1, cpu: \"16\", memory: 64GB}]\n"
                        "    perExtraGpu: {cpu: \"8\", memory: 48Gi}\n";
  const auto checked = run("policy --check " + bad);
  EXPECT_EQ(checked.exit_code, 1);
  EXPECT_NE(checked.output.find("profiles.train.table[0].memory"), std::string::npos) << checked.output;
  EXPECT_NE(checked.output.find("64GB"), std::string::npos) << checked.output;
}

TEST(Cli, ServeRefusesHalfATlsPair) {
  const auto result = run("serve --listen 127.0.0.1:0 --tls-cert /nonexistent.crt");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--tls-cert and --tls-key go together"), std::string::npos) << result.output;
}

TEST(Cli, ServeWithUnreadableCertificateSaysWhich) {
  const auto result = run("serve --listen 127.0.0.1:0 --tls-cert /nonexistent.crt --tls-key /nonexistent.key");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("/nonexistent.crt"), std::string::npos) << result.output;
}

TEST(Cli, ServeWithUnreadableClientCaSaysWhich) {
  const auto result = run("serve --listen 127.0.0.1:0 --cert-dir /tmp/gpu-sizer-cli-test --client-ca /etc/hostname");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("--client-ca /etc/hostname: no PEM CA certificate could be read"), std::string::npos)
      << result.output;
}

const std::string kWorkloads = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/workloads/";

TEST(CliCheck, ExitZeroWhenEverythingWouldBeAdmittedUnchanged) {
  const auto result = run("check " + kWorkloads + "mixed/already-sized.yaml " + kWorkloads + "mixed/cpu-and-rbac.yaml");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("0 would be changed, 0 denied, 2 admitted unchanged"), std::string::npos)
      << result.output;
}

TEST(CliCheck, ExitOneNamesEachChangeAndDenial) {
  const auto result = run("check " + kWorkloads + "pod.yaml");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("CHANGED  " + kWorkloads + "pod.yaml:1 (document 1) Pod ml-team/llama-finetune-4gpu"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("container \"trainer\": memory request 64Gi->192Gi"), std::string::npos)
      << result.output;

  // In enforce mode nothing is patched, so the same pod is denied.
  TempDir dir;
  std::ofstream(dir.path() + "/enforce.yaml") << "mode: enforce\n";
  const auto enforced = run("check --policy " + dir.path() + "/enforce.yaml " + kWorkloads + "pod.yaml");
  EXPECT_EQ(enforced.exit_code, 1);
  EXPECT_NE(enforced.output.find("DENIED"), std::string::npos) << enforced.output;
  EXPECT_NE(enforced.output.find("--set train_gpu=4 train_cpu=32 train_memory=192Gi"), std::string::npos);
}

TEST(CliCheck, ExitTwoOnUnreadableInputNamingFileDocumentAndLine) {
  const auto missing = run("check /nonexistent/manifest.yaml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("/nonexistent/manifest.yaml"), std::string::npos) << missing.output;

  TempDir dir;
  const std::string broken = dir.path() + "/broken.yaml";
  std::ofstream(broken) << "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: x\n";
  const auto parsed = run("check " + broken);
  EXPECT_EQ(parsed.exit_code, 2);
  EXPECT_NE(parsed.output.find(broken + ": document 2, line"), std::string::npos) << parsed.output;
}

TEST(CliCheck, JsonOutputForMachines) {
  const auto result = run("check --output json " + kWorkloads + "pytorchjob.yaml");
  EXPECT_EQ(result.exit_code, 1);
  const auto report = nlohmann::json::parse(result.output);
  const auto& object = report["files"][0]["objects"][0];
  EXPECT_EQ(object["kind"], "PyTorchJob");
  EXPECT_EQ(object["result"], "changed");
  EXPECT_EQ(object["changes"].size(), 6u) << object.dump(1);
}

// BUG (found by tests/fuzz/manifests_fuzz): a byte that is not UTF-8 went
// through the YAML reader into the decisions and --fix, and a JSON file's
// parse error quoting it made --output json abort (nlohmann throws on
// invalid UTF-8). Such files are now unreadable, and the report stays JSON.
TEST(CliCheck, BytesThatAreNotUtf8AreUnreadableAndTheJsonReportStaysJson) {
  TempDir dir;
  const std::string yaml = dir.path() + "/latin1.yaml";
  std::ofstream(yaml) << "apiVersion: v1\nkind: Pod\nmetadata: {name: caf\xe9}\n";
  const auto text = run("check " + yaml);
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_NE(text.output.find(yaml + ": document 1, line 3: not UTF-8 text at byte 0xe9"), std::string::npos)
      << text.output;
  const std::string json_file = dir.path() + "/latin1.json";
  std::ofstream(json_file) << "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"caf\xe9\"}}\n";
  const auto report = run("check --output json " + yaml + " " + json_file);
  EXPECT_EQ(report.exit_code, 2);
  ASSERT_TRUE(nlohmann::json::accept(report.output)) << report.output;
  const auto files = nlohmann::json::parse(report.output)["files"];
  EXPECT_NE(files[1]["error"].get<std::string>().find("latin1.json: document 1, line 1"), std::string::npos);
}

// BUG (found by tests/fuzz/manifests_fuzz): --fix wrote a plain scalar that
// spans lines as a literal block, adding a final newline to the value, and
// an empty tagged value (null) as "".
TEST(CliCheck, FixKeepsMultiLineAndEmptyTaggedValues) {
  TempDir dir;
  const std::string file = dir.path() + "/pod.yaml";
  std::ofstream(file) << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
                         "    note: first part\n      continued\n\n      second line\nspec:\n  containers:\n"
                         "    - name: t\n      resources: {limits: {nvidia.com/gpu: \"4\", memory: 64Gi}}\n"
                         "x-unset: !unknown\n";
  const auto fixed = run("check --fix " + file + " 2>/dev/null", false);
  EXPECT_EQ(fixed.exit_code, 1);
  const auto manifests = read_manifests(fixed.output, "fixed");
  ASSERT_TRUE(manifests.ok()) << manifests.error() << "\n" << fixed.output;
  nlohmann::json pod = manifests.value().documents.at(0).object;
  EXPECT_EQ(pod["metadata"]["annotations"]["note"], std::string("first part continued\nsecond line")) << fixed.output;
  EXPECT_TRUE(pod["x-unset"].is_null()) << fixed.output;
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["memory"], "192Gi") << fixed.output;
}

// BUG (found by tests/fuzz/manifests_fuzz): a file starting with `{` was
// read as JSON only, so YAML in flow style (which kubectl reads, and which
// --fix writes back when the author used it) was unreadable.
TEST(CliCheck, FlowStyleYamlIsReadAndFixedAsYaml) {
  TempDir dir;
  const std::string file = dir.path() + "/flow.yaml";
  std::ofstream(file) << "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
                         "[{name: t, resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}}]}}\n";
  EXPECT_EQ(run("check --fix --in-place " + file).exit_code, 1);
  const auto again = run("check " + file);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  // A JSON file with a typo is still reported as JSON.
  std::ofstream(file) << "{\"apiVersion\": \"v1\", \"kind\": \"Pod\"\n";
  const auto broken = run("check " + file);
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.output.find("document 1, line 2: [json.exception.parse_error"), std::string::npos) << broken.output;
}

// BUG (found reviewing the reader for tests/fuzz/manifests_fuzz, whose
// inputs are too short to reach it): plain scalars were typed with
// std::regex, which recurses once per character, so a long number crashed
// check with SIGSEGV.
TEST(CliCheck, LongPlainScalarsDoNotOverflowTheStack) {
  TempDir dir;
  const std::string file = dir.path() + "/configmap.yaml";
  std::ofstream(file) << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  digits: "
                      << std::string(1'000'000, '7') << "\n";
  const auto result = run("check " + file);
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(CliCheck, FixFromStdinRoundTripsWithNoFindings) {
  TempDir dir;
  const std::string fixed = dir.path() + "/fixed.yaml";
  const std::string report = dir.path() + "/report.txt";
  const auto fix = run("check --fix - < " + kWorkloads + "argo-workflow.yaml > " + fixed + " 2> " + report, false);
  EXPECT_EQ(fix.exit_code, 1);
  std::stringstream report_text;
  report_text << std::ifstream(report).rdbuf();
  EXPECT_NE(report_text.str().find("CHANGED  stdin:1 (document 1) Workflow"), std::string::npos) << report_text.str();
  const auto again = run("check " + fixed);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST(CliCheck, FixInPlaceOnAFolderOfMixedManifests) {
  TempDir dir;
  std::filesystem::copy(kWorkloads, dir.path(), std::filesystem::copy_options::recursive);
  const auto fix = run("check --fix --in-place " + dir.path());
  EXPECT_EQ(fix.exit_code, 1) << fix.output;
  const auto again = run("check " + dir.path());
  EXPECT_EQ(again.exit_code, 0) << again.output;
  // Every other field is kept: the fixed JSON file is still JSON with its env.
  const auto pod = nlohmann::json::parse(std::ifstream(dir.path() + "/mixed/debug-pod.json"));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["memory"], "64Gi");
  EXPECT_EQ(pod["metadata"]["name"], "notebook-debug");
}

struct OsmoCase {
  int gpus;
  const char* set_line;
};

class CliCheckOsmo : public ::testing::TestWithParam<OsmoCase> {};

TEST_P(CliCheckOsmo, PrintsTheCompleteSetLineForTheGpuCount) {
  const std::string workflow = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/osmo/finetune.yaml";
  const auto result = run("check " + workflow + " --set train_gpu=" + std::to_string(GetParam().gpus));
  EXPECT_EQ(result.exit_code, GetParam().gpus == 1 ? 0 : 1) << result.output;
  if (GetParam().gpus > 1) {
    EXPECT_NE(result.output.find(std::string("--set ") + GetParam().set_line), std::string::npos) << result.output;
    // Submitting with that line fits.
    const auto fixed = run("check " + workflow + " --set " + GetParam().set_line);
    EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  }
}

INSTANTIATE_TEST_SUITE_P(SeedTable, CliCheckOsmo,
                         ::testing::Values(OsmoCase{1, "train_gpu=1 train_cpu=16 train_memory=64Gi"},
                                           OsmoCase{2, "train_gpu=2 train_cpu=16 train_memory=96Gi"},
                                           OsmoCase{3, "train_gpu=3 train_cpu=24 train_memory=144Gi"},
                                           OsmoCase{4, "train_gpu=4 train_cpu=32 train_memory=192Gi"},
                                           OsmoCase{8, "train_gpu=8 train_cpu=64 train_memory=384Gi"},
                                           OsmoCase{16, "train_gpu=16 train_cpu=128 train_memory=768Gi"}),
                         [](const auto& info) { return std::to_string(info.param.gpus) + "Gpus"; });

TEST(CliCheck, OsmoWorkflowWithMissingVariableIsUnreadable) {
  TempDir dir;
  const std::string workflow = dir.path() + "/wf.yaml";
  std::ofstream(workflow)
      << "workflow:\n  name: x\n  resources:\n    default: {cpu: 1, gpu: \"{{gpus}}\", memory: 1Gi}\n"
         "  tasks:\n    - {name: t, image: i, command: [c]}\n";
  const auto result = run("check " + workflow);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("gpus"), std::string::npos) << result.output;
}

TEST(CliCheck, FixOfSeveralFilesToStdoutIsOneValidStream) {
  TempDir dir;
  const std::string fixed = dir.path() + "/all.yaml";
  run("check --fix " + kWorkloads + "job.yaml " + kWorkloads + "mixed/cpu-and-rbac.yaml " + kWorkloads + "pod.yaml > " +
          fixed + " 2> /dev/null",
      false);
  const auto again = run("check " + fixed);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  // Both GPU objects survive as objects of their own, not merged into a neighbour.
  EXPECT_NE(again.output.find("(document 1) Job ml-team/"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("Pod ml-team/llama-finetune-4gpu"), std::string::npos) << again.output;
}

TEST(CliCheck, FixDoesNotWriteThroughYamlAliases) {
  TempDir dir;
  const std::string workflow = dir.path() + "/aliased.yaml";
  std::ofstream(workflow) << "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w, namespace: t}\n"
                             "spec:\n  templates:\n"
                             "  - name: train\n    container:\n      image: x\n"
                             "      resources: &gpu2 {limits: {nvidia.com/gpu: 2}}\n"
                             "  - name: infer\n    container:\n      image: x\n      resources: *gpu2\n";
  EXPECT_EQ(run("check --fix --in-place " + workflow).exit_code, 1);
  const auto again = run("check " + workflow);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST(CliCheck, FixKeepsJsonNumbersAndKeyOrder) {
  TempDir dir;
  const std::string pod = dir.path() + "/pod.json";
  std::ofstream(pod) << R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "t"},)"
                        R"( "spec": {"priority": 12345678901234567890, "containers": [{"name": "c", "image": "x",)"
                        R"( "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "1Gi"}}}]}})";
  EXPECT_EQ(run("check --fix --in-place " + pod).exit_code, 1);
  std::stringstream text;
  text << std::ifstream(pod).rdbuf();
  EXPECT_NE(text.str().find("\"priority\": 12345678901234567890"), std::string::npos) << text.str();
  EXPECT_LT(text.str().find("\"apiVersion\""), text.str().find("\"kind\"")) << "key order kept";
  EXPECT_EQ(run("check " + pod).exit_code, 0);
}

TEST(CliCheck, ListsAreCheckedAndFixedItemByItem) {
  TempDir dir;
  const std::string list = dir.path() + "/list.yaml";
  std::ofstream(list)
      << "apiVersion: v1\nkind: List\nitems:\n"
         "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c, namespace: t}\n"
         "- apiVersion: batch/v1\n  kind: Job\n  metadata: {name: j, namespace: t}\n"
         "  spec:\n    template:\n      spec:\n        containers:\n        - name: c\n          image: x\n"
         "          resources: {limits: {nvidia.com/gpu: 8, memory: 64Gi}}\n";
  const auto checked = run("check " + list);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("Job t/j"), std::string::npos) << checked.output;
  EXPECT_EQ(run("check --fix --in-place " + list).exit_code, 1);
  const auto again = run("check " + list);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

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
        "data loader  memory 122Gi", "GPU memory   280.0 GB per GPU", "node fit     -",
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
  EXPECT_EQ(rules, (std::vector<std::string>{"table", "/dev/shm", "data loader", "GPU memory", "node fit", "binding",
                                             "container \"trainer\""}));
  EXPECT_EQ(pod["rules"][5]["floor"], "memory 122Gi");
  EXPECT_EQ(pod["denials"].size(), 1u);
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
        Threshold{"vram_at_margin", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=10B,context=400\"}", "",
                  "unchanged", ""},
        Threshold{"vram_under_margin", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=10B,context=300\"}", "",
                  "unchanged", ""},
        Threshold{"vram_over_margin", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=10B,context=500\"}", "",
                  "unchanged", "20.5 GB/GPU"},
        Threshold{"vram_at_capacity", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=12B\"}", "", "unchanged",
                  "24.0 GB/GPU"},
        Threshold{"vram_over_capacity", 1, "infer", "32Gi", "{gpu-sizer.io/model: \"params=12B,context=100\"}", "",
                  "denied", "needs 24.1 GB per GPU"},
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

TEST(CliCheck, UsageErrors) {
  EXPECT_EQ(run("check").exit_code, 2);
  EXPECT_EQ(run("check --in-place x.yaml").exit_code, 2);
  EXPECT_EQ(run("check --output yaml x.yaml").exit_code, 2);
  EXPECT_EQ(run("check --set x.yaml").exit_code, 2);
}

}  // namespace
}  // namespace gpusizer::testing
