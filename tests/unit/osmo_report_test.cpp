// The report of an OSMO check, as people and CI read it.
#include <gtest/gtest.h>

#include "gpusizer/check/osmo_workflow.h"

namespace gpusizer::osmo_report_test {
namespace {

OsmoReport undersized() {
  OsmoBlockReport block;
  block.block = "train";
  block.tasks = {{"finetune", "finetune-job", "train"}};
  block.profile = "train";
  block.profile_reason = "policy rule: label osmo.group_name equals \"finetune-job\"";
  block.gpus = 4;
  block.gpu_source = {OsmoFieldSource::Kind::kVariable, "train_gpu", "", "", true, "", 3};
  block.memory = Quantity::parse("64Gi").value();
  block.memory_source = {OsmoFieldSource::Kind::kVariable, "train_memory", "Gi", "", true, "", 5};
  block.need =
      Requirement{Quantity::parse("32").value(), Quantity::parse("192Gi").value(), Quantity::parse("300Gi").value()};
  block.findings = {"memory 64Gi is below 192Gi for 4 GPUs (train profile)"};
  block.set_values = {"train_gpu=4", "train_memory=192"};
  OsmoReport report;
  report.blocks.push_back(block);
  report.set_line = "train_gpu=4 train_memory=192";
  return report;
}

TEST(OsmoReport, TextEndsWithTheSetLine) {
  const std::string text = osmo_report_text("spec.yaml", undersized());
  EXPECT_EQ(text,
            "spec.yaml: OSMO workflow, 1 resource block used by tasks\n"
            "\n"
            "resources.train: UNDERSIZED\n"
            "  tasks:    finetune (group finetune-job)\n"
            "  profile:  train (policy rule: label osmo.group_name equals \"finetune-job\")\n"
            "  GPUs:     4  from {{train_gpu}}\n"
            "            found     needed    from\n"
            "  cpu       -         32        not set\n"
            "  memory    64Gi      192Gi     {{train_memory}}Gi\n"
            "  storage   -         300Gi     not set\n"
            "  - memory 64Gi is below 192Gi for 4 GPUs (train profile)\n"
            "\n"
            "--set train_gpu=4 train_memory=192\n");
}

TEST(OsmoReport, JsonCarriesTheSameFacts) {
  const nlohmann::json json = osmo_report_json("spec.yaml", undersized());
  EXPECT_EQ(json["format"], "osmo-workflow");
  EXPECT_EQ(json["fits"], false);
  EXPECT_EQ(json["set"], "train_gpu=4 train_memory=192");
  const nlohmann::json& block = json["blocks"][0];
  EXPECT_EQ(block["memory"]["found"], "64Gi");
  EXPECT_EQ(block["memory"]["needed"], "192Gi");
  EXPECT_EQ(block["memory"]["source"]["unit"], "Gi");
  EXPECT_EQ(block["cpu"]["found"], nullptr);
  EXPECT_EQ(block["gpus"], 4);
}

TEST(OsmoReport, AllFitSaysSo) {
  OsmoReport report;
  EXPECT_TRUE(report.fits());
  EXPECT_EQ(osmo_report_text("f.yaml", report),
            "f.yaml: OSMO workflow, 0 resource blocks used by tasks\n\nall resource blocks fit\n");
}

}  // namespace
}  // namespace gpusizer::osmo_report_test
