// `gpu-sizer check` on OSMO specs as NVIDIA writes them (issue 19 item 4):
// variables sizing does not read may have no value (a warning), {% if %} and
// {% for %} blocks are rendered, a block check cannot decide is an error only
// when it changes a task's resources, and strict keeps every gap an error.
// The fixtures under tests/data/osmo/nvidia-shapes reproduce each construct.

#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/check/osmo_workflow.h"
#include "support/osmo_workflow_support.h"

namespace gpusizer::osmo_workflow_gaps_test {
namespace {

using namespace osmo_workflow_test;  // NOLINT(google-build-using-namespace)

std::string without(std::string text, const std::string& line) {
  const auto at = text.find(line);
  EXPECT_NE(at, std::string::npos) << line;
  if (at != std::string::npos) text.erase(at, line.size());
  return text;
}

bool has_block(const OsmoReport& report, const std::string& name) {
  return std::any_of(report.blocks.begin(), report.blocks.end(), [&](const auto& b) { return b.block == name; });
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
  EXPECT_EQ(files, 4);
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

TEST(OsmoNvidiaShapes, ABlockNoTaskUsesIsCheckedWhenASetValueItReadsIsGiven) {
  const std::string text = fixture("nvidia-shapes/pretrained-default.yaml");
  const OsmoReport report = check(text, {{"train_gpu", "4"}});
  const OsmoBlockReport* train = find_block(report, "gpu-train");
  ASSERT_NE(train, nullptr) << "the finetune group is left out, but --set train_gpu sizes its block";
  EXPECT_FALSE(train->used);
  EXPECT_EQ(train->profile, "train") << "the train_ prefix names it";
  ASSERT_EQ(train->tasks.size(), 1u);
  EXPECT_EQ(train->tasks[0].task, "finetune");
  EXPECT_EQ(train->tasks[0].group, "finetune-job");
  EXPECT_FALSE(report.fits());
  EXPECT_TRUE(contains(report.set_line, "train_gpu=4 train_cpu=32 train_memory=192Gi")) << report.set_line;
  const int gate = line_of(text, "{% if use_pretrained_checkpoint|string|lower not in");
  const std::string warnings = joined(report.warnings);
  EXPECT_TRUE(contains(warnings,
                       "resources.gpu-train is used by no task at these values (`{% if "
                       "use_pretrained_checkpoint|string|lower not in [\"true\", \"1\", \"yes\"] %}` at line " +
                           std::to_string(gate) +
                           " leaves task finetune (group finetune-job) out); checked because --set "
                           "train_gpu was given"))
      << warnings;
  EXPECT_FALSE(contains(warnings, "sizes nothing")) << warnings;
  EXPECT_FALSE(has_block(report, "gpu-spare")) << "no task and no --set value: unchecked as before";
  const std::string shown = osmo_report_text("spec.yaml", report);
  EXPECT_TRUE(contains(shown, "1 resource block used by tasks, 1 used by none but read by --set values")) << shown;
  EXPECT_TRUE(contains(shown, "tasks:    none at these values (left out: finetune (group finetune-job))")) << shown;
  EXPECT_EQ(osmo_report_json("spec.yaml", report)["blocks"][0]["used"], false);
}

TEST(OsmoNvidiaShapes, ABlockNoTaskUsesStaysUncheckedWithoutASetValue) {
  const OsmoReport report = check(fixture("nvidia-shapes/pretrained-default.yaml"));
  EXPECT_FALSE(has_block(report, "gpu-train"));
  EXPECT_FALSE(has_block(report, "gpu-spare"));
  EXPECT_TRUE(report.fits());
  EXPECT_FALSE(contains(joined(report.warnings), "used by no task")) << joined(report.warnings);
  const OsmoReport both = check(fixture("nvidia-shapes/gated-groups.yaml"), {{"train_gpu", "4"}});
  EXPECT_TRUE(find_block(both, "gpu-train")->used) << "a used block is checked as before";
}

TEST(OsmoNvidiaShapes, TheSetPrefixNamesTheProfileOfABlockNoTaskUses) {
  // The left-out task would get the default (train) profile by its name;
  // --set infer_gpu names the infer profile.
  const std::string text =
      "workflow:\n  name: x\n  resources:\n    serve:\n      gpu: \"{{ infer_gpu }}\"\n"
      "      memory: \"{{ infer_memory }}\"\n    small: {}\n  tasks:\n{% if run %}\n    - name: job\n"
      "      image: i\n      resource: serve\n{% else %}\n    - name: other\n      image: i\n"
      "      resource: small\n{% endif %}\n"
      "default-values:\n  run: true\n  infer_gpu: 1\n  infer_memory: 8Gi\n";
  const OsmoReport report = check(text, {{"infer_gpu", "2"}, {"run", "0"}});
  const OsmoBlockReport* serve = find_block(report, "serve");
  ASSERT_NE(serve, nullptr);
  EXPECT_EQ(serve->profile, "infer");
  EXPECT_TRUE(contains(serve->profile_reason, "setPrefix infer")) << serve->profile_reason;
  EXPECT_TRUE(contains(joined(report.warnings), "(`{% if run %}` at line 9 leaves task job out)"))
      << joined(report.warnings);
  // The else branch is left out by the if taken before it.
  std::string flipped = text;
  const std::string job = "    - name: job\n      image: i\n      resource: serve\n";
  const std::string other_task = "    - name: other\n      image: i\n      resource: small\n";
  flipped.replace(flipped.find(job), job.size(), "@");
  flipped.replace(flipped.find(other_task), other_task.size(), job);
  flipped.replace(flipped.find('@'), 1, other_task);
  const OsmoReport other = check(flipped, {{"infer_gpu", "2"}});
  EXPECT_TRUE(contains(joined(other.warnings), "(`{% if run %}` at line 9 leaves task job out)"))
      << joined(other.warnings);
}

TEST(OsmoNvidiaShapes, ABlockNoTaskNamesIsCheckedWithoutACause) {
  const std::string fixed =
      "workflow:\n  name: x\n  resources:\n    spare:\n      gpu: \"{{ train_gpu }}\"\n"
      "      memory: 8Gi\n    other: {}\n  tasks:\n    - name: job\n      image: i\n"
      "      resource: other\ndefault-values:\n  train_gpu: 1\n";
  const OsmoReport report = check(fixed, {{"train_gpu", "2"}});
  EXPECT_TRUE(contains(joined(report.warnings),
                       "resources.spare is used by no task at these values; checked because --set train_gpu was given"))
      << joined(report.warnings);
  ASSERT_NE(find_block(report, "spare"), nullptr);
  EXPECT_TRUE(find_block(report, "spare")->tasks.empty());
  EXPECT_FALSE(report.fits()) << "8Gi is short for 2 train GPUs";
  EXPECT_TRUE(contains(osmo_report_text("spec.yaml", report), "tasks:    none at these values\n"));
}

TEST(OsmoNvidiaShapes, OnlyLiteralEditsFixABlockAndTheSetLineDoesNotPoseAsAFix) {
  const std::string text =
      "workflow:\n  name: x\n  resources:\n    train:\n      gpu: \"{{ train_gpu }}\"\n      cpu: 32\n"
      "      memory: 64Gi\n  groups:\n    - name: finetune-job\n      tasks:\n        - name: finetune\n"
      "          image: i\n          resource: train\ndefault-values:\n  train_gpu: 1\n";
  const OsmoReport report = check(text, {{"train_gpu", "4"}});
  EXPECT_FALSE(report.fits());
  EXPECT_FALSE(report.set_fixes) << report.set_line;
  const std::string shown = osmo_report_text("spec.yaml", report);
  EXPECT_TRUE(shown.ends_with("no --set value fixes this: edit the resource blocks as the findings say (line 7)\n"))
      << shown;
  EXPECT_FALSE(contains(shown, "--set train_gpu=4")) << shown;
  EXPECT_EQ(osmo_report_json("spec.yaml", report)["setFixes"], false);
  // When the line changes a value, it is the fix.
  EXPECT_TRUE(check(fixture("nvidia-shapes/gated-groups.yaml"), {{"train_gpu", "4"}}).set_fixes);
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
}  // namespace gpusizer::osmo_workflow_gaps_test
