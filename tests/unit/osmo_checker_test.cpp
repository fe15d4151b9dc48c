// The OSMO checker on one resource block: the need of its tasks' profile,
// the findings, the --set values, and the --set line of several blocks.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo/checker.h"
#include "gpusizer/check/osmo/fields.h"

namespace gpusizer::osmo::osmo_checker_test {
namespace {

struct Block {
  Variables variables;
  Rendered rendered;
  YAML::Node root;
  YAML::Node marked;
  std::vector<SetPair> pairs;

  // Checks resources.train of `workflow`, used by task `task` of group `group`.
  Result<OsmoBlockReport> check(const std::string& workflow, const std::string& group = "finetune-job",
                                const std::string& task = "finetune") {
    auto out = render(workflow, variables);
    EXPECT_TRUE(out.ok()) << out.error();
    rendered = out.value();
    root = YAML::Load(rendered.text);
    marked = YAML::Load(rendered.marked);
    const SpecLines spec{&rendered};
    BlockInput input{
        default_policy(), variables, spec, "train", root["resources"]["train"], marked["resources"]["train"]};
    input.tasks.push_back({task, group, "train", 1, YAML::Node()});
    return check_block(input, pairs);
  }
};

TEST(CheckBlock, VariablesGetTheSetValuesThatFit) {
  Block b;
  b.variables = {
      {"gpu", {Value::integer(4), "4"}}, {"cpu", {Value::integer(8), "8"}}, {"mem", {Value::integer(64), "64"}}};
  auto report = b.check("resources:\n  train:\n    gpu: {{gpu}}\n    cpu: {{cpu}}\n    memory: {{mem}}Gi\n");
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().gpus, 4);
  EXPECT_EQ(report.value().profile, "train");
  EXPECT_EQ(report.value().memory_source.kind, OsmoFieldSource::Kind::kVariable);
  EXPECT_EQ(report.value().memory_source.unit, "Gi");
  EXPECT_EQ(report.value().set_values, (std::vector<std::string>{"gpu=4", "cpu=32", "mem=192"}));
  EXPECT_EQ(report.value().findings,
            (std::vector<std::string>{
                "cpu 8 is below 32 for 4 GPUs (train profile)", "memory 64Gi is below 192Gi for 4 GPUs (train profile)",
                "storage is not set; 300Gi needed (train profile): add storage to resources.train"}));
  EXPECT_EQ(b.pairs.size(), 3u);
}

TEST(CheckBlock, ALiteralIsToldWhereToEdit) {
  Block b;
  auto report = b.check("resources:\n  train:\n    gpu: 2\n    cpu: 16\n    memory: 64Gi\n    storage: 300Gi\n");
  ASSERT_TRUE(report.ok()) << report.error();
  ASSERT_EQ(report.value().findings.size(), 1u);
  EXPECT_EQ(report.value().findings[0],
            "memory 64Gi is below 96Gi for 2 GPUs (train profile): resources.train.memory is written in the file (line "
            "5), edit it to 96Gi");
  EXPECT_TRUE(b.pairs.empty());
}

TEST(CheckBlock, ASinglePodStageCapsTheGpus) {
  Block b;
  b.variables = {{"gpu", {Value::integer(2), "2"}}};
  auto report = b.check("resources:\n  train:\n    gpu: {{gpu}}\n", "render-frames", "render");
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().profile, "render");
  EXPECT_EQ(report.value().findings, std::vector<std::string>{"render profile allows at most 1 GPU, found 2"});
  EXPECT_EQ(report.value().set_values, std::vector<std::string>{"gpu=1"});
}

TEST(CheckBlock, ValuesOsmoRejectsFailNamingTheLine) {
  Block b;
  EXPECT_EQ(b.check("resources:\n  train:\n    gpu: 2\n    memory: 64GB\n").error(),
            "line 4: resources.train.memory: \"64GB\" is not an amount OSMO takes: use binary units (Ki, Mi, Gi, Ti), "
            "not GB or G");
  EXPECT_EQ(b.check("resources:\n  train:\n    gpu: two\n").error(),
            "line 3: resources.train.gpu: \"two\" is not a whole number of GPUs");
  EXPECT_TRUE(b.check("resources:\n  train:\n    gpus: 2\n")
                  .error()
                  .starts_with("line 3: resources.train.gpus is not a resource field"));
}

TEST(SetLine, OneValuePerVariableTheLargerWins) {
  std::vector<OsmoBlockReport> blocks(2);
  blocks[0].block = "a";
  blocks[1].block = "b";
  const std::string line = set_line({{"mem", "96Gi", "a"}, {"mem", "192Gi", "b"}, {"cpu", "16", "a"}},
                                    {{"name", "my run"}, {"cpu", "8"}}, blocks);
  EXPECT_EQ(line, "mem=192Gi cpu=16 name='my run'");
}

TEST(SetLine, BlocksNeedingDifferentGpuCountsFromOneVariableAreTold) {
  std::vector<OsmoBlockReport> blocks(2);
  blocks[0].block = "a";
  blocks[1].block = "b";
  set_line({{"gpu", "4", "a", true}, {"gpu", "1", "b", true}}, {}, blocks);
  EXPECT_TRUE(blocks[0].findings.empty());
  ASSERT_EQ(blocks[1].findings.size(), 1u);
  EXPECT_EQ(blocks[1].findings[0],
            "variable gpu is shared with resources.a, which needs gpu=4 while this block needs 1: give the blocks "
            "separate variables");
}

TEST(FieldSource, TellsALiteralAVariableAndAnExpressionApart) {
  auto rendered = render("a: {{x}}\nb: {{ x * 2 }}Gi\nc: {{ x }}Gi", {{"x", {Value::integer(2), "2"}}});
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(field_source("64Gi", rendered.value(), true).kind, OsmoFieldSource::Kind::kLiteral);
  EXPECT_EQ(field_source("zzgpusizerexpr0zz", rendered.value(), false).variable, "x");
  const OsmoFieldSource with_unit = field_source("zzgpusizerexpr2zzGi", rendered.value(), true);
  EXPECT_EQ(with_unit.kind, OsmoFieldSource::Kind::kVariable);
  EXPECT_EQ(with_unit.unit, "Gi");
  EXPECT_EQ(field_source("zzgpusizerexpr2zzGi", rendered.value(), false).kind, OsmoFieldSource::Kind::kExpression)
      << "cpu takes no unit";
  const OsmoFieldSource computed = field_source("zzgpusizerexpr1zzGi", rendered.value(), true);
  EXPECT_EQ(computed.kind, OsmoFieldSource::Kind::kExpression);
  EXPECT_EQ(computed.expression, "{{ x * 2 }}Gi");
  EXPECT_EQ(shell_pair("n", "a b"), "n='a b'");
  EXPECT_EQ(shell_pair("n", "it's"), "n='it'\\''s'");
  EXPECT_EQ(unit_bytes("Gi"), int64_t{1} << 30);
  EXPECT_EQ(unit_bytes("GB"), 0);
}

}  // namespace
}  // namespace gpusizer::osmo::osmo_checker_test
