// `gpu-sizer check` on OSMO workflow specs beyond the fixtures: resource
// expressions and control blocks, the shapes a spec takes (flat tasks,
// shared blocks, units after variables) and the errors a spec can hold.

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/check/osmo_workflow.h"
#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"
#include "support/osmo_workflow_support.h"

namespace gpusizer::osmo_workflow_shapes_test {
namespace {

using namespace osmo_workflow_test;  // NOLINT(google-build-using-namespace)

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

TEST(OsmoExpressions, IfBlocksDecideWhichBlocksAndTasksExist) {
  const OsmoReport pretrained = check(fixture("jinja-conditional.yaml"), {{"train_gpu", "4"}});
  ASSERT_EQ(pretrained.blocks.size(), 1u) << "use_pretrained_checkpoint: true leaves the train block and task out";
  EXPECT_EQ(pretrained.blocks[0].block, "infer");
  EXPECT_TRUE(pretrained.fits());
  const OsmoReport finetune =
      check(fixture("jinja-conditional.yaml"), {{"train_gpu", "4"}, {"use_pretrained_checkpoint", "false"}});
  ASSERT_EQ(finetune.blocks.size(), 2u);
  EXPECT_EQ(finetune.blocks[0].block, "train");
  EXPECT_TRUE(contains(finetune.set_line, "train_gpu=4 train_cpu=32 train_memory=192Gi")) << finetune.set_line;
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
  const std::string error = check_error(spec, {}, true);
  EXPECT_TRUE(contains(error, "output (line 7)")) << error;
  EXPECT_TRUE(contains(error, "without spaces")) << error;
  const OsmoReport report = check(spec);
  ASSERT_EQ(report.warnings.size(), 1u) << "sizing does not read args, so only --strict fails on it";
  EXPECT_TRUE(contains(report.warnings[0], "without spaces")) << report.warnings[0];
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
}  // namespace gpusizer::osmo_workflow_shapes_test
