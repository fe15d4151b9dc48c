// `gpu-sizer check` on NVIDIA OSMO workflow specs: rendering with
// default-values and --set as OSMO does, per resource block sizing against
// the seed tables (seed 000, docs/sources.md), and the complete --set line
// users copy into `osmo workflow submit`.

#include "gpusizer/check/osmo_workflow.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {
namespace {

using Sets = std::map<std::string, std::string>;

constexpr int64_t kGi = int64_t{1} << 30;

Quantity cores(int64_t n) { return Quantity::from_milli(n * 1000); }
Quantity gibibytes(int64_t n) { return Quantity::from_bytes(n * kGi); }

std::filesystem::path source_dir() {
#ifdef GPU_SIZER_SOURCE_DIR
  return GPU_SIZER_SOURCE_DIR;
#else
  // tests/unit/<this file> -> the source tree (relative when __FILE__ is).
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
#endif
}

std::string fixture(const std::string& name) {
  const auto path = source_dir() / "tests" / "data" / "osmo" / name;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

OsmoReport check(const std::string& text, const Sets& sets = {}) {
  auto result = check_osmo_workflow(default_policy(), text, sets);
  EXPECT_TRUE(result.ok()) << result.error();
  return result.ok() ? result.value() : OsmoReport{};
}

std::string check_error(const std::string& text, const Sets& sets = {}) {
  auto result = check_osmo_workflow(default_policy(), text, sets);
  EXPECT_FALSE(result.ok()) << osmo_report_text("spec", result.value());
  return result.ok() ? "" : result.error();
}

const OsmoBlockReport* find_block(const OsmoReport& report, const std::string& name) {
  for (const OsmoBlockReport& block : report.blocks) {
    if (block.block == name) return &block;
  }
  ADD_FAILURE() << "no block " << name;
  return nullptr;
}

// "a=1 b=2" -> {a: 1, b: 2}, as the shell would pass them to --set.
Sets parse_set_line(const std::string& line) {
  Sets sets;
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    const auto equals = word.find('=');
    if (equals != std::string::npos) sets[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return sets;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The 1-based line of the first line containing `part`.
int line_of(const std::string& text, const std::string& part) {
  const auto at = text.find(part);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no " << part;
    return 0;
  }
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// ---------------------------------------------------------------------------
// Recognising OSMO files.

TEST(IsOsmoWorkflow, TrueForTheOsmoFixtures) {
  for (const char* name : {"finetune.yaml", "day0.yaml", "finetune-expression.yaml", "jinja-conditional.yaml"}) {
    EXPECT_TRUE(is_osmo_workflow(fixture(name))) << name;
  }
}

TEST(IsOsmoWorkflow, FalseForKubernetesManifests) {
  EXPECT_FALSE(is_osmo_workflow(R"(apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: trainer
      image: nvcr.io/nvidia/pytorch:24.05-py3
)"));
  // An Argo object whose spec mentions a workflow is still a Kubernetes object.
  EXPECT_FALSE(is_osmo_workflow("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nworkflow:\n  x: 1\n"));
  EXPECT_FALSE(is_osmo_workflow("spec:\n  workflow:\n    name: x\n"));
  EXPECT_FALSE(is_osmo_workflow(""));
}

// ---------------------------------------------------------------------------
// finetune.yaml: one block, train.

TEST(OsmoFinetune, DefaultsFit) {
  const OsmoReport report = check(fixture("finetune.yaml"));
  ASSERT_EQ(report.blocks.size(), 1u);
  const OsmoBlockReport& train = report.blocks[0];
  EXPECT_EQ(train.block, "train");
  ASSERT_EQ(train.tasks.size(), 1u);
  EXPECT_EQ(train.tasks[0].task, "finetune");
  EXPECT_EQ(train.tasks[0].group, "finetune-job");
  EXPECT_EQ(train.profile, "train");
  EXPECT_TRUE(contains(train.profile_reason, "finetune-job")) << train.profile_reason;
  EXPECT_EQ(train.gpus, 1);
  ASSERT_TRUE(train.cpu && train.memory && train.storage);
  EXPECT_EQ(*train.cpu, cores(16));
  EXPECT_EQ(*train.memory, gibibytes(64));
  EXPECT_EQ(*train.storage, gibibytes(300));
  EXPECT_EQ(train.cpu_source.kind, OsmoFieldSource::Kind::kVariable);
  EXPECT_EQ(train.cpu_source.variable, "train_cpu");
  EXPECT_EQ(train.cpu_source.line, line_of(fixture("finetune.yaml"), "cpu: \"{{train_cpu}}\""));
  EXPECT_TRUE(report.fits()) << osmo_report_text("finetune.yaml", report);
  EXPECT_EQ(report.set_line, "train_gpu=1 train_cpu=16 train_memory=64Gi");
  EXPECT_TRUE(contains(osmo_report_text("finetune.yaml", report), "all resource blocks fit"));
}

struct SetLineCase {
  int64_t gpus;
  int64_t cpu;
  int64_t memory_gi;
};

std::ostream& operator<<(std::ostream& os, const SetLineCase& c) { return os << c.gpus << " GPUs"; }

class OsmoSetLineTest : public ::testing::TestWithParam<SetLineCase> {};

TEST_P(OsmoSetLineTest, TrainGpuAloneGivesTheCompleteSetLine) {
  const SetLineCase& c = GetParam();
  const std::string gpus = std::to_string(c.gpus);
  const OsmoReport report = check(fixture("finetune.yaml"), {{"train_gpu", gpus}});
  const std::string expected = "train_gpu=" + gpus + " train_cpu=" + std::to_string(c.cpu) +
                               " train_memory=" + std::to_string(c.memory_gi) + "Gi";
  EXPECT_EQ(report.set_line, expected);
  ASSERT_EQ(report.blocks.size(), 1u);
  const OsmoBlockReport& train = report.blocks[0];
  EXPECT_EQ(train.gpus, c.gpus);
  ASSERT_TRUE(train.need.has_value());
  EXPECT_EQ(train.need->cpu, cores(c.cpu));
  EXPECT_EQ(train.need->memory, gibibytes(c.memory_gi));
  // Only the 1-GPU row equals the defaults (16 CPU, 64Gi).
  EXPECT_EQ(report.fits(), c.gpus == 1) << osmo_report_text("finetune.yaml", report);
  if (c.gpus > 1) {
    EXPECT_TRUE(contains(osmo_report_text("finetune.yaml", report), "--set " + expected));
  }

  // Submitting with that line fits and asks for nothing more.
  const OsmoReport again = check(fixture("finetune.yaml"), parse_set_line(report.set_line));
  EXPECT_TRUE(again.fits()) << osmo_report_text("finetune.yaml", again);
  EXPECT_EQ(again.set_line, expected);
}

INSTANTIATE_TEST_SUITE_P(TrainTable, OsmoSetLineTest,
                         ::testing::Values(SetLineCase{1, 16, 64}, SetLineCase{2, 16, 96}, SetLineCase{3, 24, 144},
                                           SetLineCase{4, 32, 192}, SetLineCase{8, 64, 384},
                                           SetLineCase{16, 128, 768}));

TEST(OsmoFinetune, FindingsNameFieldValueNeedAndProfile) {
  const OsmoReport report = check(fixture("finetune.yaml"), {{"train_gpu", "4"}});
  ASSERT_EQ(report.blocks.size(), 1u);
  const std::vector<std::string> expected = {"cpu 16 is below 32 for 4 GPUs (train profile)",
                                             "memory 64Gi is below 192Gi for 4 GPUs (train profile)"};
  EXPECT_EQ(report.blocks[0].findings, expected);
  EXPECT_EQ(report.blocks[0].set_values,
            (std::vector<std::string>{"train_gpu=4", "train_cpu=32", "train_memory=192Gi"}));
}

TEST(OsmoFinetune, UserValuesAboveTheTableAreKept) {
  const OsmoReport report = check(fixture("finetune.yaml"), {{"train_gpu", "4"}, {"train_memory", "500Gi"}});
  EXPECT_EQ(report.set_line, "train_gpu=4 train_cpu=32 train_memory=500Gi");
  ASSERT_EQ(report.blocks.size(), 1u);
  ASSERT_EQ(report.blocks[0].findings.size(), 1u);
  EXPECT_TRUE(contains(report.blocks[0].findings[0], "cpu 16 is below 32")) << report.blocks[0].findings[0];

  const OsmoReport generous = check(fixture("finetune.yaml"), {{"train_gpu", "2"}, {"train_cpu", "48"}});
  EXPECT_EQ(generous.set_line, "train_gpu=2 train_cpu=48 train_memory=96Gi");
}

TEST(OsmoFinetune, UsersOtherSetValuesStayOnTheLine) {
  const OsmoReport report = check(fixture("finetune.yaml"), {{"train_gpu", "4"}, {"name", "my run"}});
  EXPECT_EQ(report.set_line, "train_gpu=4 train_cpu=32 train_memory=192Gi name='my run'");
}

TEST(OsmoFinetune, ShortStorageAddsTheStorageVariable) {
  const OsmoReport report = check(fixture("finetune.yaml"), {{"train_storage", "100Gi"}});
  ASSERT_EQ(report.blocks.size(), 1u);
  EXPECT_EQ(report.blocks[0].findings, (std::vector<std::string>{"storage 100Gi is below 300Gi (train profile)"}));
  EXPECT_EQ(report.set_line, "train_gpu=1 train_cpu=16 train_memory=64Gi train_storage=300Gi");
}

TEST(OsmoFinetune, MissingVariableIsAnErrorNamingItAndItsLine) {
  std::string text = fixture("finetune.yaml");
  const std::string line = "  train_cpu: \"16\"\n";
  ASSERT_TRUE(contains(text, line));
  text.erase(text.find(line), line.size());
  const std::string error = check_error(text);
  EXPECT_TRUE(contains(error, "train_cpu")) << error;
  EXPECT_TRUE(contains(error, "line " + std::to_string(line_of(text, "{{train_cpu}}")))) << error;
  EXPECT_TRUE(contains(error, "--set train_cpu=")) << error;
  // A --set value supplies it.
  EXPECT_TRUE(check_osmo_workflow(default_policy(), text, {{"train_cpu", "16"}}).ok());
}

TEST(OsmoFinetune, TextReportShowsTheTableAndTheSetLine) {
  const OsmoReport report = check(fixture("finetune.yaml"), {{"train_gpu", "8"}});
  const std::string text = osmo_report_text("finetune.yaml", report);
  EXPECT_TRUE(contains(text, "resources.train: UNDERSIZED")) << text;
  EXPECT_TRUE(contains(text, "finetune (group finetune-job)")) << text;
  EXPECT_TRUE(contains(text, "memory 64Gi is below 384Gi for 8 GPUs (train profile)")) << text;
  const std::string last = "--set train_gpu=8 train_cpu=64 train_memory=384Gi\n";
  ASSERT_GE(text.size(), last.size());
  EXPECT_EQ(text.substr(text.size() - last.size()), last) << text;
}

TEST(OsmoFinetune, JsonReportCarriesTheSameData) {
  const OsmoReport report = check(fixture("finetune.yaml"), {{"train_gpu", "4"}});
  const nlohmann::json json = osmo_report_json("finetune.yaml", report);
  EXPECT_EQ(json["file"], "finetune.yaml");
  EXPECT_EQ(json["format"], "osmo-workflow");
  EXPECT_EQ(json["fits"], false);
  EXPECT_EQ(json["set"], "train_gpu=4 train_cpu=32 train_memory=192Gi");
  ASSERT_EQ(json["blocks"].size(), 1u);
  const nlohmann::json& train = json["blocks"][0];
  EXPECT_EQ(train["block"], "train");
  EXPECT_EQ(train["gpus"], 4);
  EXPECT_EQ(train["cpu"]["found"], "16");
  EXPECT_EQ(train["cpu"]["needed"], "32");
  EXPECT_EQ(train["memory"]["needed"], "192Gi");
  EXPECT_EQ(train["memory"]["source"]["variable"], "train_memory");
  EXPECT_EQ(train["findings"].size(), 2u);
  EXPECT_EQ(train["tasks"][0]["group"], "finetune-job");
}

// ---------------------------------------------------------------------------
// day0.yaml: render, augment, finetune and infer groups.

TEST(OsmoDay0, DefaultsFitInFileOrder) {
  const OsmoReport report = check(fixture("day0.yaml"));
  std::vector<std::string> names;
  for (const OsmoBlockReport& block : report.blocks) names.push_back(block.block);
  EXPECT_EQ(names, (std::vector<std::string>{"render", "augment", "train", "infer"}));
  EXPECT_TRUE(report.fits()) << osmo_report_text("day0.yaml", report);
  const OsmoBlockReport* render = find_block(report, "render");
  ASSERT_NE(render, nullptr);
  EXPECT_EQ(render->profile, "render");
  EXPECT_EQ(render->cpu_source.kind, OsmoFieldSource::Kind::kLiteral);
  EXPECT_TRUE(render->set_values.empty());
  const OsmoBlockReport* infer = find_block(report, "infer");
  ASSERT_NE(infer, nullptr);
  EXPECT_EQ(infer->profile, "infer");
  EXPECT_EQ(infer->tasks[0].task, "infer-all-defects");
  EXPECT_EQ(report.set_line, "train_gpu=1 train_cpu=16 train_memory=64Gi infer_gpu=1 infer_cpu=4 infer_memory=64Gi");
}

TEST(OsmoDay0, InferTwoGpusNeedsEightCpuAnd96Gi) {
  const OsmoReport report = check(fixture("day0.yaml"), {{"infer_gpu", "2"}});
  const OsmoBlockReport* infer = find_block(report, "infer");
  ASSERT_NE(infer, nullptr);
  EXPECT_EQ(infer->set_values, (std::vector<std::string>{"infer_gpu=2", "infer_cpu=8", "infer_memory=96Gi"}));
  EXPECT_EQ(infer->findings, (std::vector<std::string>{"cpu 4 is below 8 for 2 GPUs (infer profile)",
                                                       "memory 64Gi is below 96Gi for 2 GPUs (infer profile)"}));
  EXPECT_TRUE(find_block(report, "train")->fits());
  EXPECT_TRUE(contains(report.set_line, "infer_gpu=2 infer_cpu=8 infer_memory=96Gi")) << report.set_line;
}

TEST(OsmoDay0, TrainAndInferTogether) {
  const OsmoReport report = check(fixture("day0.yaml"), {{"train_gpu", "8"}, {"infer_gpu", "2"}});
  EXPECT_EQ(report.set_line, "train_gpu=8 train_cpu=64 train_memory=384Gi infer_gpu=2 infer_cpu=8 infer_memory=96Gi");
  EXPECT_FALSE(report.fits());
}

TEST(OsmoDay0, RenderStaysAtOneGpu) {
  const OsmoReport report = check(fixture("day0.yaml"), {{"render_gpu", "2"}});
  const OsmoBlockReport* render = find_block(report, "render");
  ASSERT_NE(render, nullptr);
  EXPECT_EQ(render->findings, (std::vector<std::string>{"render profile allows at most 1 GPU, found 2"}));
  EXPECT_EQ(render->set_values, (std::vector<std::string>{"render_gpu=1"}));
  EXPECT_TRUE(report.set_line.starts_with("render_gpu=1 ")) << report.set_line;
  EXPECT_TRUE(find_block(report, "augment")->fits());
}

// ---------------------------------------------------------------------------
// Expressions and control blocks.

TEST(OsmoExpressions, MemoryComputedFromTheGpuCountFitsAnyCount) {
  for (int64_t gpus : {1, 2, 3, 4, 8, 16}) {
    const OsmoReport report = check(fixture("finetune-expression.yaml"), {{"train_gpu", std::to_string(gpus)}});
    ASSERT_EQ(report.blocks.size(), 1u);
    const OsmoBlockReport& train = report.blocks[0];
    EXPECT_TRUE(report.fits()) << gpus << "\n" << osmo_report_text("finetune-expression.yaml", report);
    ASSERT_TRUE(train.memory.has_value());
    EXPECT_EQ(*train.memory, gibibytes(std::max<int64_t>(64, 48 * gpus)));
    EXPECT_EQ(*train.cpu, cores(std::max<int64_t>(16, 8 * gpus)));
    EXPECT_EQ(train.memory_source.kind, OsmoFieldSource::Kind::kExpression);
    EXPECT_EQ(train.memory_source.expression, "{{ [64, train_gpu|int * 48]|max }}Gi");
    // Nothing to set but the GPU count: the spec scales the rest.
    EXPECT_EQ(report.set_line, "train_gpu=" + std::to_string(gpus));
  }
}

TEST(OsmoExpressions, AnUndersizedExpressionSaysWhatToEdit) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    train:
      gpu: "{{train_gpu}}"
      cpu: "{{ train_gpu|int * 4 }}"
      memory: "{{ [64, train_gpu|int * 48]|max }}Gi"
      storage: 300Gi
  groups:
    - name: finetune-job
      tasks:
        - {name: finetune, lead: true, image: x, command: [bash], resource: train}
default-values:
  train_gpu: "4"
)";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 1u);
  ASSERT_EQ(report.blocks[0].findings.size(), 1u);
  const std::string& finding = report.blocks[0].findings[0];
  EXPECT_TRUE(contains(finding, "cpu 16 is below 32 for 4 GPUs")) << finding;
  EXPECT_TRUE(contains(finding, "{{ train_gpu|int * 4 }}")) << finding;
  EXPECT_TRUE(contains(finding, "line 6")) << finding;
  EXPECT_EQ(report.set_line, "train_gpu=4");
}

TEST(OsmoExpressions, TextTimesNumberIsNotEvaluatedButAnIntFromSetIs) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    train: {gpu: "{{train_gpu}}", cpu: 64, memory: "{{ train_gpu * 48 }}Gi", storage: 300Gi}
  groups:
    - name: finetune-job
      tasks:
        - {name: finetune, image: x, command: [bash], resource: train}
default-values:
  train_gpu: "4"
)";
  // The default is text: Jinja would repeat it, so check refuses to guess.
  const OsmoReport text_default = check(spec);
  ASSERT_EQ(text_default.blocks.size(), 1u);
  ASSERT_EQ(text_default.blocks[0].findings.size(), 1u);
  EXPECT_TRUE(contains(text_default.blocks[0].findings[0], "cannot evaluate")) << text_default.blocks[0].findings[0];
  EXPECT_TRUE(contains(text_default.blocks[0].findings[0], "|int")) << text_default.blocks[0].findings[0];
  // --set types "8" as an int, as `osmo workflow submit` does.
  const OsmoReport set_int = check(spec, {{"train_gpu", "8"}});
  ASSERT_EQ(set_int.blocks.size(), 1u);
  ASSERT_TRUE(set_int.blocks[0].memory.has_value());
  EXPECT_EQ(*set_int.blocks[0].memory, gibibytes(384));
  EXPECT_TRUE(set_int.fits()) << osmo_report_text("spec", set_int);
}

TEST(OsmoExpressions, UnsupportedExpressionInAResourceFieldIsAFinding) {
  const std::string spec = R"(workflow:
  name: "{{ name.upper() }}"
  resources:
    train: {gpu: 2, cpu: "{{ sizes.cpu }}", memory: 96Gi, storage: 300Gi}
  tasks:
    - {name: finetune, image: x, command: [bash], resource: train}
default-values:
  name: wf
  sizes: {cpu: 16}
)";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 1u);
  ASSERT_EQ(report.blocks[0].findings.size(), 1u) << osmo_report_text("spec", report);
  EXPECT_TRUE(contains(report.blocks[0].findings[0], "resources.train.cpu is computed by `{{ sizes.cpu }}`"))
      << report.blocks[0].findings[0];
  EXPECT_TRUE(contains(report.blocks[0].findings[0], "cannot evaluate")) << report.blocks[0].findings[0];
}

TEST(OsmoExpressions, UnevaluatedGpuCountIsUnknownNotZero) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    train: {gpu: "{{ layout.gpus }}", cpu: 16, memory: 64Gi, storage: 300Gi}
  tasks:
    - {name: finetune, image: x, command: [bash], resource: train}
default-values:
  layout: {gpus: 4}
)";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 1u);
  ASSERT_EQ(report.blocks[0].findings.size(), 1u);
  EXPECT_TRUE(contains(report.blocks[0].findings[0], "the GPU count is unknown")) << report.blocks[0].findings[0];
  EXPECT_FALSE(report.fits());
  EXPECT_TRUE(osmo_report_json("spec", report)["blocks"][0]["gpus"].is_null());
  EXPECT_FALSE(contains(osmo_report_text("spec", report), "nothing to size"));
}

TEST(OsmoExpressions, ControlBlocksAreAClearError) {
  const std::string error = check_error(fixture("jinja-conditional.yaml"));
  EXPECT_TRUE(contains(error, "control blocks")) << error;
  EXPECT_TRUE(contains(error, "line 13")) << error;
}

TEST(OsmoExpressions, SpecialTokensAreKeptAndSpacedOnesAreVariables) {
  const std::string spec = R"(workflow:
  name: wf
  tasks:
    - name: copy
      image: x
      command: ["bash", "-c", "cp {{input:0}}/a {{output}}/b {{uuid}} {{workflow_id}} {{host:copy}}"]
      args: ["{{ output }}"]
)";
  const std::string error = check_error(spec);
  EXPECT_TRUE(contains(error, "output (line 7)")) << error;
  EXPECT_TRUE(contains(error, "without spaces")) << error;
  std::string fixed = spec;
  fixed.replace(fixed.find("{{ output }}"), 12, "{{output}}");
  EXPECT_TRUE(check_osmo_workflow(default_policy(), fixed, {}).ok());
}

TEST(OsmoExpressions, UnclosedJinjaCommentFromShellIsAnError) {
  const std::string spec =
      "workflow:\n  name: wf\n  tasks:\n    - name: a\n      image: x\n"
      "      command: [\"bash\", \"-c\", \"echo ${#ARR[@]}\"]\n";
  const std::string error = check_error(spec);
  EXPECT_TRUE(contains(error, "line 6")) << error;
  EXPECT_TRUE(contains(error, "{#")) << error;
}

// ---------------------------------------------------------------------------
// Shapes of specs: flat tasks, literals, shared blocks, errors.

TEST(OsmoShapes, FlatTasksGetTaskGroupAndDefaultResource) {
  const std::string spec = R"(version: 2
workflow:
  name: wf
  resources:
    default: {cpu: 1, memory: 16Gi, storage: 1Gi}
    frames: {cpu: 16, gpu: "{{frames_gpu}}", memory: 64Gi}
  tasks:
    - {name: prepare, image: x, command: [bash]}
    - {name: render-frames, image: x, command: [bash], resource: frames}
default-values:
  frames_gpu: 2
)";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 2u);
  EXPECT_EQ(report.blocks[0].block, "default");
  EXPECT_EQ(report.blocks[0].tasks[0].group, "prepare-group");
  EXPECT_EQ(report.blocks[0].gpus, 0);
  EXPECT_TRUE(report.blocks[0].fits());
  const OsmoBlockReport& frames = report.blocks[1];
  EXPECT_EQ(frames.tasks[0].group, "render-frames-group");
  EXPECT_EQ(frames.profile, "render");  // osmo.group_name contains "render"
  EXPECT_EQ(frames.findings, (std::vector<std::string>{"render profile allows at most 1 GPU, found 2"}));
  EXPECT_EQ(report.set_line, "frames_gpu=1");
}

TEST(OsmoShapes, LiteralValuesSayWhichFieldToEdit) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    train:
      cpu: 16
      gpu: 4
      memory: 64Gi
      storage: 300Gi
  groups:
    - name: finetune-job
      tasks:
        - {name: finetune, image: x, command: [bash], resource: train}
)";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 1u);
  const auto& findings = report.blocks[0].findings;
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0],
            "cpu 16 is below 32 for 4 GPUs (train profile): resources.train.cpu is written in "
            "the file (line 5), edit it to 32");
  EXPECT_TRUE(contains(findings[1], "resources.train.memory is written in the file (line 7), edit it to 192Gi"))
      << findings[1];
  EXPECT_TRUE(report.blocks[0].set_values.empty());
  EXPECT_EQ(report.set_line, "");
  EXPECT_TRUE(contains(osmo_report_text("spec", report), "no --set value fixes this"))
      << osmo_report_text("spec", report);
}

TEST(OsmoShapes, BlockSharedByTrainAndInferTakesTheLargestNeed) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    gpu4: {gpu: "{{n}}", cpu: "{{cpu}}", memory: "{{mem}}", storage: 250Gi}
  groups:
    - name: finetune-job
      tasks:
        - {name: finetune, image: x, command: [bash], resource: gpu4}
    - name: anomaly-infer
      tasks:
        - {name: infer-all-defects, image: x, command: [bash], resource: gpu4}
default-values:
  n: 4
  cpu: 16
  mem: 192Gi
)";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 1u);
  const OsmoBlockReport& block = report.blocks[0];
  ASSERT_EQ(block.tasks.size(), 2u);
  EXPECT_EQ(block.tasks[0].profile, "train");
  EXPECT_EQ(block.tasks[1].profile, "infer");
  EXPECT_EQ(block.profile, "train");
  EXPECT_TRUE(contains(block.profile_reason, "largest need")) << block.profile_reason;
  ASSERT_TRUE(block.need.has_value());
  EXPECT_EQ(block.need->cpu, cores(32));  // train 32 > infer 16
  EXPECT_EQ(block.need->memory, gibibytes(192));
  ASSERT_TRUE(block.need->storage.has_value());
  EXPECT_EQ(*block.need->storage, gibibytes(300));  // train 300Gi > infer 200Gi
  EXPECT_EQ(block.findings, (std::vector<std::string>{"cpu 16 is below 32 for 4 GPUs (train profile)",
                                                      "storage 250Gi is below 300Gi (train profile): "
                                                      "resources.gpu4.storage is written in the file (line 4), "
                                                      "edit it to 300Gi"}));
  EXPECT_EQ(report.set_line, "n=4 cpu=32 mem=192Gi");
}

TEST(OsmoShapes, VariablesSharedByTwoBlocksAppearOnceWithTheLargerValue) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    small: {gpu: 2, cpu: "{{cpu}}", memory: "{{mem}}"}
    big: {gpu: 8, cpu: "{{cpu}}", memory: "{{mem}}"}
  groups:
    - name: finetune-job
      tasks:
        - {name: a, image: x, command: [bash], resource: small}
        - {name: b, image: x, command: [bash], resource: big}
default-values:
  cpu: 16
  mem: 64Gi
)";
  const OsmoReport report = check(spec);
  EXPECT_EQ(report.set_line, "cpu=64 mem=384Gi");
}

TEST(OsmoShapes, MemoryVariableWithUnitAfterIt) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    train: {gpu: "{{gpus}}", cpu: "{{cpus}}", memory: "{{mem_gi}}Gi"}
  groups:
    - name: finetune-job
      tasks:
        - {name: finetune, image: x, command: [bash], resource: train}
default-values:
  gpus: 1
  cpus: 16
  mem_gi: 64
)";
  const OsmoReport report = check(spec, {{"gpus", "4"}});
  ASSERT_EQ(report.blocks.size(), 1u);
  EXPECT_EQ(report.blocks[0].memory_source.unit, "Gi");
  EXPECT_EQ(report.set_line, "gpus=4 cpus=32 mem_gi=192");
}

TEST(OsmoShapes, NoGpuMeansNothingToSize) {
  const std::string spec =
      "workflow:\n  name: wf\n  resources:\n    default: {cpu: 1, memory: 1Gi}\n"
      "  tasks:\n    - {name: a, image: x, command: [bash]}\n";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 1u);
  EXPECT_EQ(report.blocks[0].gpus, 0);
  EXPECT_TRUE(report.fits());
  EXPECT_EQ(report.set_line, "");
  EXPECT_TRUE(contains(osmo_report_text("spec", report), "nothing to size"));
}

TEST(OsmoShapes, WorkflowLabelsReachProfileSelection) {
  const std::string spec = R"(workflow:
  name: wf
  labels: {gpu-sizer.io/profile: infer}
  resources:
    main: {gpu: 2, cpu: 8, memory: 96Gi, storage: 200Gi}
  tasks:
    - {name: serve, image: x, command: [bash], resource: main}
)";
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.blocks.size(), 1u);
  EXPECT_EQ(report.blocks[0].profile, "infer");
  EXPECT_TRUE(report.fits()) << osmo_report_text("spec", report);
}

TEST(OsmoErrors, YamlErrorsNameTheLine) {
  const std::string spec = "workflow:\n  name: wf\n  resources:\n    train: {gpu: 1\n  tasks: []\n";
  const std::string error = check_error(spec);
  EXPECT_TRUE(contains(error, "line ")) << error;
  EXPECT_TRUE(contains(error, "YAML")) << error;

  const std::string indented = "workflow:\n  name: wf\n  tasks:\n    - name: a\n   image: x\n";
  const std::string error2 = check_error(indented);
  EXPECT_TRUE(contains(error2, "line 5")) << error2;

  const std::string bad_defaults = "workflow:\n  name: wf\ndefault-values:\n  a: [1\n  b: 2\n";
  const std::string error3 = check_error(bad_defaults);
  EXPECT_TRUE(contains(error3, "default-values")) << error3;
  EXPECT_TRUE(contains(error3, "line ")) << error3;
}

TEST(OsmoErrors, UnquotedTemplatesParseAfterRendering) {
  const std::string spec = R"(workflow:
  name: {{ name }}
  resources:
    train:
      gpu: {{ train_gpu }}
      cpu: {{ train_cpu }}
      memory: {{ train_memory }}
  tasks:
    - {name: finetune, image: x, command: [bash], resource: train}
default-values:
  name: wf
  train_gpu: 1
  train_cpu: 16
  train_memory: 64Gi
)";
  const OsmoReport report = check(spec, {{"train_gpu", "4"}});
  EXPECT_EQ(report.set_line, "train_gpu=4 train_cpu=32 train_memory=192Gi");
}

TEST(OsmoErrors, UnknownResourceReferenceIsNamed) {
  const std::string spec = R"(workflow:
  name: wf
  resources:
    train: {gpu: 1, cpu: 16, memory: 64Gi}
  tasks:
    - {name: finetune, image: x, command: [bash], resource: trian}
)";
  const std::string error = check_error(spec);
  EXPECT_TRUE(contains(error, "finetune")) << error;
  EXPECT_TRUE(contains(error, "trian")) << error;
  EXPECT_TRUE(contains(error, "defined: train")) << error;
  EXPECT_TRUE(contains(error, "line 6")) << error;
}

TEST(OsmoErrors, ValuesOsmoRejects) {
  auto spec_with = [](const std::string& block) {
    return "workflow:\n  name: wf\n  resources:\n    train: " + block +
           "\n  tasks:\n    - {name: t, image: x, command: [bash], resource: train}\n";
  };
  EXPECT_TRUE(contains(check_error(spec_with("{gpus: 4, cpu: 16}")), "gpus is not a resource field"));
  EXPECT_TRUE(contains(check_error(spec_with("{gpu: 1, memory: 64GB}")), "binary units"));
  EXPECT_TRUE(contains(check_error(spec_with("{gpu: four}")), "not a whole number of GPUs"));
  EXPECT_TRUE(contains(check_error(spec_with("{gpu: 1, cpu: 500m}")), "not a number of cores"));
  EXPECT_TRUE(contains(check_error("version: 3\n" + spec_with("{gpu: 1}")), "version 3"));
  EXPECT_TRUE(contains(check_error(spec_with("{gpu: 1}") + "extra: 1\n"), "unknown top-level key extra"));
  // A bare number is Ki in OSMO: far below the table, not 64Gi.
  const OsmoReport bare = check(spec_with("{gpu: 1, cpu: 16, memory: 64}"));
  ASSERT_EQ(bare.blocks.size(), 1u);
  ASSERT_TRUE(bare.blocks[0].memory.has_value());
  EXPECT_EQ(*bare.blocks[0].memory, Quantity::from_bytes(int64_t{64} * 1024));
  EXPECT_FALSE(bare.fits());
}

TEST(OsmoErrors, TasksAndGroupsTogetherOrNeither) {
  EXPECT_TRUE(contains(check_error("workflow:\n  name: wf\n  tasks: []\n  groups: []\n"), "both tasks and groups"));
  EXPECT_TRUE(contains(check_error("workflow:\n  name: wf\n"), "neither tasks nor groups"));
}

}  // namespace
}  // namespace gpusizer
