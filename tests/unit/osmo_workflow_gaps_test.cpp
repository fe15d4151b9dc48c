// `gpu-sizer check` on OSMO specs as NVIDIA writes them (issue 19 item 4):
// variables sizing does not read may have no value (a warning), {% if %} and
// {% for %} blocks are rendered, a block check cannot decide is an error only
// when it changes a task's resources, and strict keeps every gap an error.
// The fixtures under tests/data/osmo/nvidia-shapes reproduce each construct.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/check/osmo_workflow.h"
#include "support/osmo_workflow_support.h"

namespace gpusizer {
namespace {

using namespace osmo_workflow_test;  // NOLINT(google-build-using-namespace)

std::string without(std::string text, const std::string& line) {
  const auto at = text.find(line);
  EXPECT_NE(at, std::string::npos) << line;
  if (at != std::string::npos) text.erase(at, line.size());
  return text;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST(OsmoNvidiaShapes, EveryFixtureIsCheckedWithOnlyTheSizingValueSet) {
  const auto dir = source_dir() / "tests" / "data" / "osmo" / "nvidia-shapes";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = "nvidia-shapes/" + entry.path().filename().string();
    const std::string text = fixture(name);
    auto result = check_osmo_workflow(default_policy(), text, {{"train_gpu", "4"}});
    ASSERT_TRUE(result.ok()) << name << ": " << result.error();
    if (contains(text, "{{ train_gpu }}")) {
      EXPECT_TRUE(contains(result.value().set_line, "train_memory=192Gi")) << name << ": " << result.value().set_line;
    }
    ++files;
  }
  EXPECT_EQ(files, 3);
}

TEST(OsmoNvidiaShapes, UnsetNamesAreOneWarningWithTheirLinesAndSizingRuns) {
  const std::string text = fixture("nvidia-shapes/unset-names.yaml");
  const OsmoReport report = check(text, {{"train_gpu", "4"}});
  ASSERT_EQ(report.warnings.size(), 1u) << joined(report.warnings);
  const std::string& warning = report.warnings[0];
  for (const char* name : {"dataset", "gpu_platform", "skills_dir", "storage_url", "run_id"}) {
    EXPECT_TRUE(contains(warning, name)) << warning;
  }
  EXPECT_TRUE(contains(warning, "dataset (line " + std::to_string(line_of(text, "{{dataset}}")) + ")")) << warning;
  EXPECT_TRUE(contains(warning, "sizing does not read them")) << warning;
  EXPECT_EQ(report.set_line, "train_gpu=4 train_cpu=32 train_memory=192Gi");
  EXPECT_FALSE(report.fits());
  const std::string shown = osmo_report_text("unset-names.yaml", report);
  EXPECT_TRUE(contains(shown, "warning: variables dataset (line ")) << shown;
  EXPECT_EQ(osmo_report_json("unset-names.yaml", report)["warnings"].size(), 1u);
}

TEST(OsmoNvidiaShapes, StrictKeepsEveryUnsetVariableAnError) {
  const std::string text = fixture("nvidia-shapes/unset-names.yaml");
  const std::string error = check_error(text, {{"train_gpu", "4"}}, true);
  EXPECT_TRUE(contains(error, "variables dataset (line ")) << error;
  EXPECT_TRUE(contains(error, "OSMO fails the submit")) << error;
  const Sets all = {{"train_gpu", "4"},  {"dataset", "d"},     {"gpu_platform", "p"},
                    {"skills_dir", "s"}, {"storage_url", "u"}, {"run_id", "r"}};
  EXPECT_TRUE(check(text, all, true).warnings.empty());
}

TEST(OsmoNvidiaShapes, AnUnsetSizingValueStillBlocks) {
  const std::string text = without(fixture("nvidia-shapes/unset-names.yaml"), "  train_memory: 64Gi\n");
  const std::string error = check_error(text, {{"train_gpu", "4"}});
  EXPECT_TRUE(contains(error, "variable train_memory (line " + std::to_string(line_of(text, "{{ train_memory }}"))))
      << error;
  EXPECT_FALSE(contains(error, "dataset")) << "only what sizing reads is named: " << error;
}

TEST(OsmoNvidiaShapes, AnUnsetResourceNameBlocksNamingTheVariable) {
  std::string text = fixture("nvidia-shapes/unset-names.yaml");
  text.replace(text.find("resource: render"), 16, "resource: \"{{ render_block }}\"");
  const std::string error = check_error(text);
  EXPECT_TRUE(contains(error, "variable render_block (line " + std::to_string(line_of(text, "{{ render_block }}"))))
      << error;
}

TEST(OsmoNvidiaShapes, GatedGroupsRenderWithTheirDefaults) {
  const std::string text = fixture("nvidia-shapes/gated-groups.yaml");
  const OsmoReport report = check(text, {{"train_gpu", "4"}});
  ASSERT_EQ(report.blocks.size(), 2u);
  EXPECT_EQ(report.blocks[0].block, "gpu-train");
  EXPECT_EQ(report.blocks[0].tasks[0].task, "finetune");
  EXPECT_TRUE(contains(report.set_line, "train_gpu=4 train_cpu=32 train_memory=192Gi")) << report.set_line;
  ASSERT_EQ(report.warnings.size(), 1u) << joined(report.warnings);
  EXPECT_TRUE(contains(report.warnings[0], "variable name (line ")) << report.warnings[0];
}

TEST(OsmoNvidiaShapes, ASetValueOnlyAnOmittedBlockReadsIsAWarning) {
  const OsmoReport report =
      check(fixture("nvidia-shapes/gated-groups.yaml"), {{"train_gpu", "4"}, {"use_pretrained_checkpoint", "true"}});
  ASSERT_EQ(report.blocks.size(), 1u) << "the finetune group is left out";
  EXPECT_TRUE(report.fits());
  EXPECT_TRUE(contains(joined(report.warnings), "--set train_gpu: only resources.gpu-train reads it"))
      << joined(report.warnings);
}

TEST(OsmoNvidiaShapes, AnUnknownGateOfATaskGroupIsAnErrorNamingItsLine) {
  const std::string text =
      without(fixture("nvidia-shapes/gated-groups.yaml"), "  use_pretrained_checkpoint: \"false\"\n");
  const std::string error = check_error(text, {{"train_gpu", "4"}});
  const int gate = line_of(text, "{% if use_pretrained_checkpoint|string|lower not in");
  EXPECT_TRUE(contains(error, "line " + std::to_string(gate) + ": `{% if use_pretrained_checkpoint")) << error;
  EXPECT_TRUE(contains(error, "decides which resources tasks get")) << error;
  EXPECT_TRUE(contains(error, "variable use_pretrained_checkpoint has no value")) << error;
  EXPECT_TRUE(contains(error, "--set use_pretrained_checkpoint=VALUE")) << error;
}

TEST(OsmoNvidiaShapes, AnUnknownConditionThatSizesNothingIsAWarning) {
  const std::string text = without(fixture("nvidia-shapes/gated-groups.yaml"), "  usecase: pcb\n");
  const OsmoReport report = check(text, {{"train_gpu", "4"}});
  const std::string warnings = joined(report.warnings);
  const int chain = line_of(text, "{% if usecase == \"glass\"");
  EXPECT_TRUE(contains(warnings, "line " + std::to_string(chain) + ": `{% if usecase == \"glass\" and")) << warnings;
  EXPECT_TRUE(contains(warnings, "none of its branches changes a task's resources")) << warnings;
  EXPECT_TRUE(contains(warnings, "usecase (line ")) << warnings;
  EXPECT_EQ(report.blocks.size(), 2u);
  EXPECT_TRUE(contains(check_error(text, {{"train_gpu", "4"}}, true), "usecase")) << "strict";
}

TEST(OsmoNvidiaShapes, AnUnknownConditionAroundAResourceFieldIsAnError) {
  std::string text = fixture("nvidia-shapes/unset-names.yaml");
  const std::string memory = "      memory: \"{{ train_memory }}\"\n";
  text.replace(text.find(memory), memory.size(),
               "      {% if big %}\n      memory: 512Gi\n      {% else %}\n" + memory + "      {% endif %}\n");
  const std::string error = check_error(text, {{"train_gpu", "4"}});
  EXPECT_TRUE(contains(error, "line " + std::to_string(line_of(text, "{% if big %}")) + ": `{% if big %}` decides"))
      << error;
  const OsmoReport report = check(text, {{"train_gpu", "4"}, {"big", "1"}});
  ASSERT_FALSE(report.blocks.empty());
  EXPECT_EQ(report.blocks[0].memory, gibibytes(512)) << "with a value it renders";
}

TEST(OsmoNvidiaShapes, AnUndecidedBlockWhoseRenderingFailsIsNamed) {
  const std::string error = check_error(
      "workflow:\n  name: x\n  tasks:\n{% for t in ts %}\n    - name: \"{{ t }}\"\n      image: i\n"
      "{% endfor %}\ndefault-values:\n  ts: 5\n");
  EXPECT_TRUE(error.starts_with("line 4: `{% for t in ts %}`: check cannot evaluate it (a loop over the number 5)"))
      << error;
  EXPECT_TRUE(contains(error, "workflow.tasks must be a list")) << error;
}

TEST(OsmoNvidiaShapes, LoopsMakeOneTaskPerItem) {
  const OsmoReport report = check(fixture("nvidia-shapes/looped-tasks.yaml"));
  ASSERT_EQ(report.blocks.size(), 1u);
  ASSERT_EQ(report.blocks[0].tasks.size(), 3u);
  EXPECT_EQ(report.blocks[0].tasks[1].task, "render-warehouse-a");
  EXPECT_TRUE(report.warnings.empty()) << joined(report.warnings);
  EXPECT_TRUE(report.fits());
}

TEST(OsmoNvidiaShapes, BadStatementsAreErrorsNamingTheLine) {
  std::string text = fixture("nvidia-shapes/looped-tasks.yaml");
  text.replace(text.find("{% endfor %}"), 12, "{% endif %}");
  const std::string error = check_error(text);
  EXPECT_TRUE(contains(error, "line " + std::to_string(line_of(text, "{% endif %}")) + ": `{% endif %}` closes no"))
      << error;
  EXPECT_TRUE(contains(check_error("workflow:\n  name: x\n  {% set a = 1 %}\n"), "line 3: `{% set a = 1 %}`"));
}

}  // namespace
}  // namespace gpusizer
