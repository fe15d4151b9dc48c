// The command line as a person or a CI job runs it: output and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "integration/webhook_process.h"

namespace gpusizer::testing {
namespace {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

CommandResult run(const std::string& args) {
  const std::string command = std::string(GPU_SIZER_BINARY) + " " + args + " 2>&1";
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
  for (const char* part : {"gpu-sizer serve", "--tls-cert", "gpu-sizer table", "gpu-sizer policy"}) {
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

}  // namespace
}  // namespace gpusizer::testing
