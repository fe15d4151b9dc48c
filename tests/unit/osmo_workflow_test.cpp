// `gpu-sizer check` on NVIDIA OSMO workflow specs: rendering with
// default-values and --set as OSMO does, per resource block sizing against
// the seed tables (seed 000, docs/sources.md), and the complete --set line
// users copy into `osmo workflow submit`.

#include "gpusizer/check/osmo_workflow.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "support/osmo_workflow_support.h"

namespace gpusizer::osmo_workflow_test {
namespace {

using namespace osmo_workflow_test;  // NOLINT(google-build-using-namespace)

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

}  // namespace
}  // namespace gpusizer::osmo_workflow_test
