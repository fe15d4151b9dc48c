// Hostile files and streams given to `check`, `explain`, `--nodes` and
// `--policy` (issue 25): each bound stops the input with exit 2 and a line
// naming the file, the limit and the flag that raises it. Every command runs
// within 1 GiB of address space and 60 s of CPU (run_bounded), so the input
// that once took all memory fails here instead of exhausting the machine.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "integration/cli_support.h"
#include "integration/webhook_process.h"
#include "support/text_support.h"

namespace gpusizer::testing::cli_limits_test {
namespace {

using namespace cli_test;  // NOLINT(google-build-using-namespace)

// "Billion laughs": l0 is one scalar, each level a list of nine aliases of
// the level below, so l9 alone expands to 9^9 (387 million) scalars.
std::string laughs(int levels, const std::string& indent) {
  std::string text = indent + "l0: &l0 \"lol\"\n";
  for (int level = 1; level <= levels; ++level) {
    const std::string below = "*l" + std::to_string(level - 1);
    text += indent + "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [" + below;
    for (int i = 1; i < 9; ++i) text += "," + below;
    text += "]\n";
  }
  return text;
}

std::string laughs_configmap(int levels) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n" + laughs(levels, "  ");
}

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// `count` documents, each a ConfigMap of its own.
std::string documents(int count) {
  std::string text;
  for (int i = 0; i < count; ++i)
    text += "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c" + std::to_string(i) + "}\n---\n";
  return text;
}

const char* const kNodeFile = GPU_SIZER_SOURCE_DIR "/docs/examples/l4-node.yaml";
const char* const kPod = GPU_SIZER_SOURCE_DIR "/docs/examples/vllm-server-pod.yaml";

TEST(CliLimits, BillionLaughsStopsBeforeExpandingWithinAGigabyte) {
  TempDir dir;
  const std::string file = write(dir, "laughs.yaml", laughs_configmap(9));
  for (const char* command : {"check ", "explain ", "check --fix "}) {
    const auto result = run_bounded(command + file);
    EXPECT_EQ(result.exit_code, 2) << command << result.output;
    EXPECT_TRUE(contains(result.output, file + ": document 1, line 12: holds more than 2000000 YAML nodes, an alias "
                                               "counting as every node it repeats (--max-yaml-nodes)"))
        << command << result.output;
  }
}

TEST(CliLimits, MaxYamlNodesRaisesAndLowersTheAliasBound) {
  TempDir dir;
  // 5 levels: 74750 nodes with aliases expanded (l5 alone is 66430).
  const std::string file = write(dir, "laughs5.yaml", laughs_configmap(5));
  EXPECT_EQ(run_bounded("check " + file).exit_code, 0);
  const auto lowered = run_bounded("check --max-yaml-nodes 74749 " + file);
  EXPECT_EQ(lowered.exit_code, 2) << lowered.output;
  EXPECT_TRUE(contains(lowered.output, "holds more than 74749 YAML nodes")) << lowered.output;
  EXPECT_EQ(run_bounded("check --max-yaml-nodes 74750 " + file).exit_code, 0);
}

TEST(CliLimits, DevZeroAsAFileAndAsStdinIsReadOnlyToTheSizeLimit) {
  const auto file = run_bounded("check /dev/zero");
  EXPECT_EQ(file.exit_code, 2) << file.output;
  EXPECT_TRUE(contains(file.output, "error    /dev/zero: larger than 67108864 bytes (--max-file-bytes)"))
      << file.output;
  const auto stdin_zero = run_bounded("check - < /dev/zero");
  EXPECT_EQ(stdin_zero.exit_code, 2) << stdin_zero.output;
  EXPECT_TRUE(contains(stdin_zero.output, "error    stdin: larger than 67108864 bytes (--max-file-bytes)"))
      << stdin_zero.output;
  const auto fix = run_bounded("check --fix - < /dev/zero");
  EXPECT_EQ(fix.exit_code, 2) << fix.output.substr(0, 200);
}

TEST(CliLimits, AFileOverMaxFileBytesIsRefusedAndTheFlagRaisesIt) {
  TempDir dir;
  const std::string pod = write(dir, "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n");
  const auto size = std::to_string(std::filesystem::file_size(pod));
  const auto over = run_bounded("check --max-file-bytes " + std::to_string(std::stoi(size) - 1) + " " + pod);
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_TRUE(
      contains(over.output, pod + ": larger than " + std::to_string(std::stoi(size) - 1) + " bytes (--max-file-bytes)"))
      << over.output;
  EXPECT_EQ(run_bounded("check --max-file-bytes " + size + " " + pod).exit_code, 0);

  // The default: a sparse file one byte past 64 MiB is refused by its size,
  // unread.
  const std::string big = dir.path() + "/big.yaml";
  std::ofstream(big).close();
  std::filesystem::resize_file(big, (std::uintmax_t{64} << 20) + 1);
  const auto refused = run_bounded("check " + big);
  EXPECT_EQ(refused.exit_code, 2) << refused.output.substr(0, 300);
  EXPECT_TRUE(contains(refused.output, big + ": larger than 67108864 bytes (--max-file-bytes)"))
      << refused.output.substr(0, 300);
}

// BUG (issue 25): every input was first split into an index of its lines
// (16 bytes a line) to see whether it is an OSMO workflow: a file of
// 64 MiB of newlines took 2.2 GB. A file at the size limit costs a small
// multiple of it.
TEST(CliLimits, AFileAtTheSizeLimitIsReadWithinAGigabyte) {
  TempDir dir;
  const auto result = run_bounded("check " + write(dir, "newlines.yaml", std::string(std::size_t{64} << 20, '\n')));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(CliLimits, TooManyDocumentsAreRefusedAndTheFlagRaisesIt) {
  TempDir dir;
  const std::string many = write(dir, "many.yaml", documents(10'001));
  const auto refused = run_bounded("check " + many);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(contains(refused.output, many + ": more than 10000 documents (--max-documents)")) << refused.output;
  EXPECT_EQ(run_bounded("check --max-documents 10001 " + many).exit_code, 0);
  // 10000 documents and a final separator are within the default.
  EXPECT_EQ(run_bounded("check " + write(dir, "limit.yaml", documents(10'000))).exit_code, 0);
}

TEST(CliLimits, NodesFileHasTheSameBounds) {
  TempDir dir;
  const std::string laughs_file = write(dir, "laughs.yaml", laughs_configmap(9));
  const std::string many = write(dir, "many.yaml", documents(10'001));
  struct Case {
    std::string nodes;
    std::string flags;
    std::string message;
  };
  const Case cases[] = {
      {laughs_file, "",
       "gpu-sizer: --nodes " + laughs_file + ": document 1, line 12: holds more than 2000000 YAML nodes"},
      {"/dev/zero", "", "gpu-sizer: --nodes /dev/zero: larger than 67108864 bytes (--max-file-bytes)"},
      {many, "", "gpu-sizer: --nodes " + many + ": more than 10000 documents (--max-documents)"},
      {kNodeFile, "--max-file-bytes 100 ",
       std::string("gpu-sizer: --nodes ") + kNodeFile + ": larger than 100 bytes (--max-file-bytes)"},
  };
  for (const Case& c : cases) {
    const auto result = run_bounded("check " + c.flags + "--nodes " + c.nodes + " " + kPod);
    EXPECT_EQ(result.exit_code, 2) << c.nodes << ": " << result.output;
    EXPECT_TRUE(contains(result.output, c.message)) << result.output;
  }
  EXPECT_EQ(run_bounded(std::string("check --nodes ") + kNodeFile + " " + kPod).exit_code, 1);
}

TEST(CliLimits, OsmoDefaultValuesAndRenderingsAreBoundedToo) {
  TempDir dir;
  const std::string workflow =
      "workflow:\n  name: lol\n  resources:\n    train: {cpu: \"16\", gpu: \"1\", memory: 64Gi, storage: 300Gi}\n"
      "  tasks:\n    - name: t\n      image: x\n      resource: train\n";
  const std::string defaults = write(dir, "defaults.yaml", workflow + "default-values:\n" + laughs(9, "  "));
  const auto result = run_bounded("check " + defaults);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_TRUE(contains(result.output, "YAML error in default-values: holds more than 2000000 YAML nodes"))
      << result.output;
  EXPECT_TRUE(contains(result.output, "(--max-yaml-nodes)")) << result.output;
}

// BUG (issue 25): check's JSON reader had no depth bound, so printing or
// comparing a file nested a million deep overflowed the stack (SIGSEGV);
// yaml-cpp refused deep YAML with a bare "bad file".
TEST(CliLimits, DeepNestingExitsTwoNamingTheLimit) {
  TempDir dir;
  const int depth = 1'000'000;
  const std::string json =
      write(dir, "deep.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"data\": {\"a\": " + std::string(depth, '[') +
                std::string(depth, ']') + "}}");
  const auto from_json = run_bounded("check " + json);
  EXPECT_EQ(from_json.exit_code, 2) << from_json.output;
  EXPECT_TRUE(contains(from_json.output, json + ": document 1: nests deeper than 400 levels")) << from_json.output;

  const std::string yaml =
      write(dir, "deep.yaml",
            "apiVersion: v1\nkind: ConfigMap\ndata: {a: " + std::string(600, '[') + std::string(600, ']') + "}\n");
  const auto from_yaml = run_bounded("check " + yaml);
  EXPECT_EQ(from_yaml.exit_code, 2) << from_yaml.output;
  EXPECT_TRUE(contains(from_yaml.output, yaml + ": document 1, line 3: nests deeper than 400 levels"))
      << from_yaml.output;

  // 400 levels are read: the document, data, and 398 lists.
  const std::string deepest =
      write(dir, "deepest.yaml",
            "apiVersion: v1\nkind: ConfigMap\ndata: {a: " + std::string(398, '[') + std::string(398, ']') + "}\n");
  EXPECT_EQ(run_bounded("check " + deepest).exit_code, 0);
}

// BUG (issue 25): copying a mapping looked each key up among those before
// it, so a ConfigMap of 40,000 keys (1 MB) took 200 s; 100,000 would take
// over 20 minutes and now take seconds. The 60 s CPU bound is the test.
TEST(CliLimits, AMappingOfManyKeysIsReadInLinearTime) {
  TempDir dir;
  std::string text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n";
  for (int i = 0; i < 100'000; ++i) text += "  key" + std::to_string(i) + ": v\n";
  const auto result = run_bounded("check " + write(dir, "keys.yaml", text));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

// BUG (issue 25): a JSON file's syntax error quoted the token it stopped
// at, however long: an unclosed string of 5 MB made a 5 MB error line.
TEST(CliLimits, ErrorsQuoteAShortPrefixOfTheInputAtMost) {
  TempDir dir;
  const auto result = run_bounded("check " + write(dir, "open.json", "{\"a\": \"" + std::string(5'000'000, 'x')));
  EXPECT_EQ(result.exit_code, 2) << result.output.substr(0, 300);
  EXPECT_LT(result.output.size(), 400u) << result.output.substr(0, 300);
  EXPECT_TRUE(contains(result.output, "missing closing quote; last read: '\"" + std::string(60, 'x') + "...'"))
      << result.output.substr(0, 300);
  const auto cycle =
      run_bounded("check " + write(dir, "cycle.yaml",
                                   "a: &" + std::string(1'000'000, 'n') + " [*" + std::string(1'000'000, 'n') + "]\n"));
  EXPECT_EQ(cycle.exit_code, 2) << cycle.output.substr(0, 300);
  EXPECT_LT(cycle.output.size(), 400u) << cycle.output.substr(0, 300);
}

// The policy is read by the same bounded reader (64 MiB, no flag: a
// ConfigMap holds 1 MiB), and its aliases are bounded as manifests' are:
// its readers walk every table row an alias repeats.
TEST(CliLimits, PolicyFileIsBoundedToo) {
  const auto zero = run_bounded(std::string("check --policy /dev/zero ") + kPod);
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_TRUE(contains(zero.output, "gpu-sizer: /dev/zero: larger than 67108864 bytes")) << zero.output;

  TempDir dir;
  std::string policy =
      "mode: mutate\ndefaultProfile: p0\nprofiles:\n  p0:\n    perExtraGpu: {cpu: 1m, memory: 1}\n"
      "    table: &rows\n";
  for (int gpus = 1; gpus <= 5000; ++gpus) {
    const std::string n = std::to_string(gpus);
    policy += "      - {gpus: " + n + ", cpu: \"" + n + "\", memory: " + n + "Gi}\n";
  }
  for (int profile = 1; profile < 5000; ++profile) {
    policy += "  p" + std::to_string(profile) + ": {perExtraGpu: {cpu: 1m, memory: 1}, table: *rows}\n";
  }
  const auto aliased = run_bounded("policy --check " + write(dir, "policy.yaml", policy));
  EXPECT_EQ(aliased.exit_code, 1) << aliased.output;
  EXPECT_TRUE(
      contains(aliased.output, "holds more than 1000000 YAML nodes, an alias counting as every node it repeats"))
      << aliased.output;
}

}  // namespace
}  // namespace gpusizer::testing::cli_limits_test
