// The command line as a person or a CI job runs it: output and exit codes
// of version, help, table, policy and serve's flag checks, and check (with
// --fix) on manifests and OSMO workflows. The rules beyond the table through
// explain and check: cli_rules_test.cpp.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/check/manifests.h"
#include "integration/cli_support.h"
#include "integration/webhook_process.h"

namespace gpusizer::testing::cli_test {
namespace {

using namespace cli_test;  // NOLINT(google-build-using-namespace)

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
  EXPECT_NE(enforced.output.find("set memory to 192Gi and cpu to 32"), std::string::npos) << enforced.output;
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

// A container raised and given /dev/shm is one `replace` of the whole
// container (issue 30): --fix writes only what changed, so its port stays
// a number (not the quoted "9090" the API server refuses), its flow lists stay
// as written, and the user's fields are all kept.
TEST(CliCheck, FixOfAReplacedContainerKeepsWhatTheUserWrote) {
  TempDir dir;
  const std::string file = dir.path() + "/pod.yaml";
  std::ofstream(file) << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
                         "    - name: t\n      image: trainer:1\n      ports:\n        - containerPort: 9090\n"
                         "      command: [torchrun, --nproc_per_node=4]\n"
                         "      resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}\n"
                         "      volumeMounts:\n        - {name: data, mountPath: /data}\n"
                         "  volumes:\n    - {name: data, emptyDir: {}}\n";
  const auto fixed = run("check --fix " + file + " 2>/dev/null", false);
  EXPECT_EQ(fixed.exit_code, 1);
  EXPECT_NE(fixed.output.find("containerPort: 9090\n"), std::string::npos) << fixed.output;
  EXPECT_NE(fixed.output.find("command: [torchrun, --nproc_per_node=4]"), std::string::npos) << fixed.output;
  const auto manifests = read_manifests(fixed.output, "fixed");
  ASSERT_TRUE(manifests.ok()) << manifests.error() << "\n" << fixed.output;
  const nlohmann::json& container = manifests.value().documents.at(0).object["spec"]["containers"][0];
  EXPECT_EQ(container["ports"][0]["containerPort"], 9090);
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], 4);
  EXPECT_EQ(container["resources"]["limits"]["memory"], "192Gi");
  ASSERT_EQ(container["volumeMounts"].size(), 2u) << fixed.output;
  EXPECT_EQ(container["volumeMounts"][0]["name"], "data");
  EXPECT_EQ(container["volumeMounts"][1]["mountPath"], "/dev/shm");
}

// The webhook cuts a warning at 120 characters (kubectl may cut it); check
// prints it whole, or its end, which says what is wrong, is lost.
TEST(CliCheck, WarningsArePrintedWholeNotCutAsTheWebhooksAre) {
  TempDir dir;
  const std::string file = dir.path() + "/long.yaml";
  std::ofstream(file) << "apiVersion: example.com/v1\nkind: DistributedTrainer\nmetadata: {name: llama}\n"
                         "spec:\n  workers:\n  - template:\n      spec:\n        containers:\n        - name: t\n"
                         "          image: x\n          resources:\n            limits:\n"
                         "              nvidia.com/gpu: $GPUS\n";
  const auto result = run("check " + file);
  EXPECT_NE(result.output.find("would deny: DistributedTrainer default/llama spec.workers[0].template: "
                               "spec.workers[0].template.spec.containers[0].resources.limits.nvidia.com/gpu "
                               "quantity \"$GPUS\": no number before the suffix"),
            std::string::npos)
      << result.output;
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

TEST(CliCheck, AnAliasInsideItsOwnAnchorIsAnErrorNotACrash) {
  // yaml-cpp loads `&x {d: *x}` as a cycle: expanding aliases must stop,
  // not recurse until the stack runs out.
  TempDir dir;
  const std::string file = dir.path() + "/cycle.yaml";
  std::ofstream(file) << "apiVersion: v1\nkind: Pod\nmetadata: &x\n  name: p\n  again: *x\n";
  const auto result = run("check " + file);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(file + ": document 1, line 5: the alias *x is inside the node its anchor &x names, so "
                                      "it repeats without end"),
            std::string::npos)
      << result.output;
}

// kubernetes-engine-samples ai-ml/llm-serving-llama/vllm: a Secret's
// `hf_api_token: {{HF_TOKEN}}` is a map whose key is a map; yaml-cpp said
// only "bad conversion".
TEST(CliCheck, AMapUsedAsAKeyIsNamedWithItsLikelyCause) {
  TempDir dir;
  const std::string file = dir.path() + "/template.yaml";
  std::ofstream(file) << "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n"
                         "  hf_api_token: {{HF_TOKEN}}\n";
  const auto result = run("check " + file);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(file + ": document 1, line 5: a mapping or list used as a key, which no Kubernetes "
                                      "object has (an unquoted {{...}} template is read as one)"),
            std::string::npos)
      << result.output;
  // A null key is a scalar: read as before.
  std::ofstream(file) << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  null: x\n  ~: y\n";
  const auto null_keys = run("check " + file);
  EXPECT_EQ(null_keys.exit_code, 0) << null_keys.output;
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
  // Objects with no field for their pods' CPU and memory stay UNSIZED
  // (exit 2), fixed or not (cli_kinds_test.cpp).
  for (const char* unpatchable : {"kubeai-model.yaml", "kaito-workspace.yaml"}) {
    std::filesystem::remove(dir.path() + "/" + unpatchable);
  }
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

TEST(CliCheck, OsmoVariableSizingDoesNotReadWarnsUnlessStrict) {
  const std::string workflow = std::string(GPU_SIZER_SOURCE_DIR) + "/tests/data/osmo/nvidia-shapes/unset-names.yaml";
  const auto lenient = run("check " + workflow + " --set train_gpu=4");
  EXPECT_EQ(lenient.exit_code, 1) << lenient.output;
  EXPECT_NE(lenient.output.find("warning: variables dataset (line "), std::string::npos) << lenient.output;
  EXPECT_NE(lenient.output.find("--set train_gpu=4 train_cpu=32 train_memory=192Gi"), std::string::npos)
      << lenient.output;
  const auto strict = run("check --strict " + workflow + " --set train_gpu=4");
  EXPECT_EQ(strict.exit_code, 2) << strict.output;
  EXPECT_NE(strict.output.find("variables dataset (line "), std::string::npos) << strict.output;
  EXPECT_EQ(run("explain --strict " + workflow).exit_code, 2) << "--strict belongs to check";
}

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

TEST(CliCheck, UsageErrors) {
  EXPECT_EQ(run("check").exit_code, 2);
  EXPECT_EQ(run("check --in-place x.yaml").exit_code, 2);
  EXPECT_EQ(run("check --output yaml x.yaml").exit_code, 2);
  EXPECT_EQ(run("check --set x.yaml").exit_code, 2);
}

}  // namespace
}  // namespace gpusizer::testing::cli_test
