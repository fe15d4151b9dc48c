// Every mistake in a policy file must be reported with its field path and
// line, so the webhook can refuse it with a message a person can act on:
// unknown and repeated fields, values out of range, tables that do not
// ascend, rules naming no profile, and YAML that does not parse.

#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/sizing/policy.h"

namespace gpusizer {
namespace {

TEST(ParsePolicy, DuplicateKeysAreErrors) {
  // BUG (found by this test; src fixed since): yaml-cpp keeps duplicate
  // mapping keys and lookups return the first, so "mode: audit" followed
  // later by "mode: enforce" silently ran in audit mode. Like an unknown
  // field, a repeated field must be an error naming it and its line.
  const auto parsed = parse_policy("mode: audit\ndenyFromGpus: 2\nmode: enforce\n", "dup.yaml");
  ASSERT_FALSE(parsed.ok()) << "accepted with mode " << to_string(parsed.value().mode);
  EXPECT_NE(parsed.error().find("mode"), std::string::npos) << parsed.error();
  EXPECT_NE(parsed.error().find("line 3"), std::string::npos) << parsed.error();
}

// ---------------------------------------------------------------------------
// Every mistake names its field and line.

struct Invalid {
  std::string what;
  std::string yaml;
  std::vector<std::string> contains;  // all must appear in the error
};

std::ostream& operator<<(std::ostream& os, const Invalid& c) { return os << c.what; }

class InvalidPolicyTest : public ::testing::TestWithParam<Invalid> {};

TEST_P(InvalidPolicyTest, FailsNamingFieldAndLine) {
  const Invalid& c = GetParam();
  const auto parsed = parse_policy(c.yaml, "my-policy.yaml");
  ASSERT_FALSE(parsed.ok()) << c.yaml;
  const std::string& e = parsed.error();
  EXPECT_EQ(e.rfind("policy my-policy.yaml: ", 0), 0u) << e;
  for (const std::string& part : c.contains)
    EXPECT_NE(e.find(part), std::string::npos) << "missing \"" << part << "\" in: " << e;
}

std::string train_only(const std::string& table,
                       const std::string& extra = "    perExtraGpu: {cpu: \"8\", memory: 48Gi}\n") {
  return "profileRules: []\n"  // line 1
         "profiles:\n"         // line 2
         "  train:\n"          // line 3
         "    table:\n" +      // line 4
         table +
         extra;  // rows from line 5
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InvalidPolicyTest,
    ::testing::Values(
        Invalid{"unknown_top_level_field",
                "mode: mutate\ndenyFromGPUs: 3\n",
                {"denyFromGPUs (line 2)", "unknown field", "denyFromGpus"}},
        Invalid{"unknown_profile_field",
                "profiles:\n  train:\n    stroage: 1Gi\n",
                {"profiles.train.stroage (line 3)", "unknown field"}},
        Invalid{"unknown_row_field",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64Gi, gpu: 2}\n"),
                {"profiles.train.table[0].gpu (line 5)", "unknown field"}},
        Invalid{"bad_mode", "mode: enforcing\n", {"mode (line 1)", "enforcing", "mutate, enforce or audit"}},
        Invalid{"bad_namespace_mode",
                "namespaceModes:\n  research: Audit\n",
                {"namespaceModes.research (line 2)", "Audit"}},
        Invalid{"namespace_modes_not_a_map", "namespaceModes: [a]\n", {"namespaceModes (line 1)"}},
        Invalid{"bad_quantity_in_table",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64Gi}\n"
                           "      - {gpus: 2, cpu: \"16\", memory: 96GB}\n"),
                {"profiles.train.table[1].memory (line 6)", "96GB"}},
        Invalid{"lowercase_gi_in_table",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64gi}\n"),
                {"profiles.train.table[0].memory (line 5)", "64gi"}},
        Invalid{"rows_not_ascending",
                train_only("      - {gpus: 4, cpu: \"32\", memory: 192Gi}\n"
                           "      - {gpus: 2, cpu: \"16\", memory: 96Gi}\n"),
                {"profiles.train.table[1].gpus (line 6)", "ascending"}},
        Invalid{"rows_repeat_gpus",
                train_only("      - {gpus: 2, cpu: \"16\", memory: 96Gi}\n"
                           "      - {gpus: 2, cpu: \"16\", memory: 96Gi}\n"),
                {"profiles.train.table[1].gpus (line 6)", "ascending"}},
        Invalid{"row_cpu_below_previous_plus_extra",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64Gi}\n"
                           "      - {gpus: 4, cpu: \"20\", memory: 192Gi}\n"),
                {"profiles.train.table[1].cpu (line 6)", "perExtraGpu"}},
        Invalid{"row_memory_below_previous_plus_extra",
                train_only("      - {gpus: 2, cpu: \"16\", memory: 96Gi}\n"
                           "      - {gpus: 4, cpu: \"32\", memory: 128Gi}\n"),
                {"profiles.train.table[1].memory (line 6)", "perExtraGpu"}},
        Invalid{"row_memory_decreases",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64Gi}\n"
                           "      - {gpus: 2, cpu: \"16\", memory: 32Gi}\n"),
                {"profiles.train.table[1].memory (line 6)"}},
        Invalid{"table_without_per_extra_gpu",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64Gi}\n", ""),
                {"profiles.train (line 4)", "perExtraGpu"}},
        Invalid{"per_extra_gpu_without_table",
                "profiles:\n  train:\n    perExtraGpu: {cpu: \"8\", memory: 48Gi}\n",
                {"profiles.train.perExtraGpu (line 3)", "table"}},
        Invalid{"per_extra_gpu_missing_memory",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64Gi}\n", "    perExtraGpu: {cpu: \"8\"}\n"),
                {"profiles.train.perExtraGpu (line 6)", "memory"}},
        Invalid{"empty_table", "profiles:\n  train:\n    table: []\n", {"profiles.train.table (line 3)", "non-empty"}},
        Invalid{"row_missing_memory",
                train_only("      - {gpus: 1, cpu: \"16\"}\n"),
                {"profiles.train.table[0] (line 5)", "memory"}},
        Invalid{"row_gpus_zero",
                train_only("      - {gpus: 0, cpu: \"16\", memory: 64Gi}\n"),
                {"profiles.train.table[0].gpus (line 5)", "at least 1"}},
        Invalid{"row_gpus_fraction",
                train_only("      - {gpus: 1.5, cpu: \"16\", memory: 64Gi}\n"),
                {"profiles.train.table[0].gpus (line 5)", "whole number"}},
        Invalid{"rule_with_two_matchers",
                "profileRules:\n  - {on: name, equals: a, contains: b, profile: train}\n",
                {"profileRules[0] (line 2)", "exactly one"}},
        Invalid{"rule_with_no_matcher",
                "profileRules:\n  - {on: name, profile: train}\n",
                {"profileRules[0] (line 2)", "exactly one"}},
        Invalid{"rule_with_bad_on",
                "profileRules:\n  - {on: \"labels:x\", equals: a, profile: train}\n",
                {"profileRules[0].on (line 2)", "labels:x"}},
        Invalid{"rule_with_empty_label_key",
                "profileRules:\n  - {on: \"label:\", equals: a, profile: train}\n",
                {"profileRules[0].on (line 2)"}},
        Invalid{"rule_without_profile",
                "profileRules:\n  - {on: name, equals: a}\n",
                {"profileRules[0] (line 2)", "profile"}},
        Invalid{"rule_names_unknown_profile",
                "profileRules:\n  - {on: name, equals: a, profile: train}\n  - {on: name, equals: b, profile: trian}\n",
                {"profileRules[1].profile (line 3)", "\"trian\"", "augment, infer, render, train"}},
        Invalid{"default_profile_unknown",
                "defaultProfile: trian\n",
                {"defaultProfile (line 1)", "\"trian\"", "augment, infer, render, train"}},
        Invalid{"default_rules_name_a_removed_profile",
                "profiles:\n  train: {maxGpus: 1}\n",
                {"profileRules[1].profile", "infer"}},
        Invalid{"negative_storage",
                "profiles:\n  train:\n    storage: -1Gi\n",
                {"profiles.train.storage (line 3)", "must not be negative"}},
        Invalid{"zero_cpu_in_row",
                train_only("      - {gpus: 1, cpu: \"0\", memory: 64Gi}\n"),
                {"profiles.train.table[0].cpu (line 5)", "greater than zero"}},
        Invalid{"zero_per_extra_memory",
                train_only("      - {gpus: 1, cpu: \"16\", memory: 64Gi}\n",
                           "    perExtraGpu: {cpu: \"8\", memory: \"0\"}\n"),
                {"profiles.train.perExtraGpu.memory (line 6)", "greater than zero"}},
        Invalid{"deny_from_gpus_zero", "denyFromGpus: 0\n", {"denyFromGpus (line 1)", "at least 1"}},
        Invalid{"deny_from_gpus_negative", "denyFromGpus: -2\n", {"denyFromGpus (line 1)", "-2"}},
        Invalid{"deny_from_gpus_text", "mode: audit\ndenyFromGpus: two\n", {"denyFromGpus (line 2)", "two"}},
        Invalid{"max_gpus_zero", "profiles:\n  render: {maxGpus: 0}\n", {"profiles.render.maxGpus (line 2)"}},
        Invalid{"empty_gpu_resources", "gpuResources: []\n", {"gpuResources (line 1)", "at least one"}},
        Invalid{"gpu_resources_not_a_list", "gpuResources: nvidia.com/gpu\n", {"gpuResources (line 1)", "list"}},
        Invalid{"exempt_namespaces_with_empty_item",
                "exemptions:\n  namespaces: [a, \"\"]\n",
                {"exemptions.namespaces[1] (line 2)"}},
        Invalid{"exempt_users_not_a_list", "exemptions:\n  users: alice\n", {"exemptions.users (line 2)", "list"}},
        Invalid{"exemptions_unknown_field",
                "exemptions:\n  serviceAccounts: [x]\n",
                {"exemptions.serviceAccounts (line 2)", "unknown field (known: namespaces, users, groups)"}},
        Invalid{"exemptions_not_a_map", "exemptions: [kube-system]\n", {"exemptions (line 1)"}},
        Invalid{"old_exclude_namespaces_field",
                "excludeNamespaces: [a]\n",
                {"excludeNamespaces (line 1)", "unknown field"}},
        Invalid{"profiles_empty", "profiles: {}\n", {"profiles (line 1)"}},
        Invalid{"profile_not_a_map", "profiles:\n  train: 3\n", {"profiles.train (line 2)", "mapping"}},
        Invalid{"shm_unknown_profile",
                "sharedMemory:\n  profiles: [train, trian]\n",
                {"sharedMemory.profiles[1] (line 2)", "\"trian\"", "augment, infer, render, train"}},
        Invalid{"shm_size_below_minimum",
                "sharedMemory:\n  minimum: 16Gi\n  size: 8Gi\n",
                {"sharedMemory.size (line 3)", "below sharedMemory.minimum 16Gi"}},
        Invalid{"shm_negative_table_includes",
                "sharedMemory:\n  tableIncludes: -1Gi\n",
                {"sharedMemory.tableIncludes (line 2)", "must not be negative"}},
        Invalid{"shm_volume_name_not_dns",
                "sharedMemory:\n  volumeName: Shm_Vol\n",
                {"sharedMemory.volumeName (line 2)", "DNS-1123", "Shm_Vol"}},
        Invalid{"shm_unknown_field",
                "sharedMemory:\n  minimumSize: 1Gi\n",
                {"sharedMemory.minimumSize (line 2)", "unknown field", "tableIncludes"}},
        Invalid{"loader_factor_below_one",
                "dataLoader:\n  overheadFactor: 0.9\n",
                {"dataLoader.overheadFactor (line 2)", "from 1 to 1000", "0.9"}},
        Invalid{"loader_dtype_fraction",
                "dataLoader:\n  dtypeBytes: {float8: 0.5}\n",
                {"dataLoader.dtypeBytes.float8 (line 2)", "whole number"}},
        Invalid{"margin_percent",
                "gpuMemory:\n  safetyMargin: 85%\n",
                {"gpuMemory.safetyMargin (line 2)", "85%", "from 0.001 to 1"}},
        Invalid{"margin_above_one", "gpuMemory:\n  safetyMargin: 1.2\n", {"gpuMemory.safetyMargin (line 2)"}},
        Invalid{"margin_four_decimals",
                "gpuMemory:\n  safetyMargin: 0.8555\n",
                {"gpuMemory.safetyMargin (line 2)", "at most 3 decimals"}},
        Invalid{"max_suggested_gpus_huge",
                "gpuMemory:\n  maxSuggestedGpus: 100000\n",
                {"gpuMemory.maxSuggestedGpus (line 2)", "at most 1024"}},
        Invalid{"gpu_memory_bad_action",
                "gpuMemory:\n  action: block\n",
                {"gpuMemory.action (line 2)", "warn or deny", "block"}},
        Invalid{"infer_profiles_unknown",
                "gpuMemory:\n  inferProfiles: [inference]\n",
                {"gpuMemory.inferProfiles[0] (line 2)", "\"inference\""}},
        Invalid{"activation_bytes_missing_a_method",
                "gpuMemory:\n  training:\n    activationBytes: {full: 2, lora: 1}\n",
                {"gpuMemory.training.activationBytes (line 3)", "missing field qlora"}},
        Invalid{"adapter_share_above_one",
                "gpuMemory:\n  training:\n    adapterShare: 1.5\n",
                {"gpuMemory.training.adapterShare (line 3)", "1.5"}},
        Invalid{"retired_shares", "gpuMemory:\n  training:\n    shares: {}\n", {"gpuMemory.training.shares (line 3)"}},
        Invalid{"retired_optimizer_bytes",
                "gpuMemory:\n  training:\n    optimizerBytes: 12\n",
                {"gpuMemory.training.optimizerBytes (line 3)"}},
        Invalid{"optimizers_without_adamw",
                "gpuMemory:\n  training:\n    optimizers: {sgd: {bytes: 8}}\n",
                {"gpuMemory.training.optimizers (line 3)", "must have adamw"}},
        Invalid{"optimizer_pageable_above_bytes",
                "gpuMemory:\n  training:\n    optimizers: {adamw: {bytes: 12, pageable: 13}}\n",
                {"gpuMemory.training.optimizers.adamw.pageable (line 3)", "at most bytes"}},
        Invalid{"optimizer_without_bytes",
                "gpuMemory:\n  training:\n    optimizers: {adamw: {pageable: 1}}\n",
                {"gpuMemory.training.optimizers.adamw (line 3)", "missing field bytes"}},
        Invalid{"model_kv_heads_not_dividing",
                "gpuMemory:\n  models:\n    - {name: m, params: 7000000000, layers: 32, hidden: 4096, heads: 32,"
                " kvHeads: 5, headDim: 128, intermediate: 11008, vocab: 32000}\n",
                {"gpuMemory.models[0].kvHeads (line 3)", "must divide heads (32)"}},
        Invalid{"model_missing_vocab",
                "gpuMemory:\n  models:\n    - {name: m, params: 7000000000, layers: 32, hidden: 4096, heads: 32,"
                " kvHeads: 8, headDim: 128, intermediate: 11008}\n",
                {"gpuMemory.models[0] (line 3)", "missing field vocab"}},
        Invalid{"model_repeated",
                "gpuMemory:\n  models:\n"
                "    - {name: m, params: 7000000000, layers: 32, hidden: 4096, heads: 32, kvHeads: 8, headDim: 128,"
                " intermediate: 11008, vocab: 32000}\n"
                "    - {name: m, params: 7000000000, layers: 32, hidden: 4096, heads: 32, kvHeads: 8, headDim: 128,"
                " intermediate: 11008, vocab: 32000}\n",
                {"gpuMemory.models[1].name (line 4)", "repeats model \"m\""}},
        Invalid{"model_unknown_key",
                "gpuMemory:\n  models:\n    - {name: m, params: 7000000000, layers: 32, hidden: 4096, heads: 32,"
                " kvHeads: 8, headDim: 128, intermediate: 11008, vocab: 32000, kv_heads: 8}\n",
                {"gpuMemory.models[0].kv_heads (line 3)", "unknown field", "kvHeads"}},
        Invalid{"gpu_empty_match",
                "gpuMemory:\n  gpus:\n    - {name: L4, memory: 24G, match: []}\n",
                {"gpuMemory.gpus[0].match (line 3)", "non-empty list of glob patterns"}},
        Invalid{"gpu_zero_memory",
                "gpuMemory:\n  gpus:\n    - {name: L4, memory: \"0\", match: [\"*L4\"]}\n",
                {"gpuMemory.gpus[0].memory (line 3)", "greater than zero"}},
        Invalid{"node_fit_bad_action", "nodeFit:\n  action: block\n", {"nodeFit.action (line 2)", "warn or deny"}},
        Invalid{"node_gpus_fraction",
                "nodeFit:\n  pools:\n    - name: a100\n      nodes:\n        - {name: n, gpus: 8.5, cpu: \"64\", "
                "memory: 1Ti, "
                "ephemeralStorage: 1Ti}\n",
                {"nodeFit.pools[0].nodes[0].gpus (line 5)", "whole number", "8.5"}},
        Invalid{"node_unknown_field",
                "nodeFit:\n  pools:\n    - name: a100\n      nodes:\n        - {name: n, gpus: 8, cpu: \"64\", memory: "
                "1Ti, "
                "storage: 1Ti}\n",
                {"nodeFit.pools[0].nodes[0].storage (line 5)", "unknown field", "ephemeralStorage"}},
        Invalid{"pool_without_nodes",
                "nodeFit:\n  pools:\n    - {name: a100, nodes: []}\n",
                {"nodeFit.pools[0].nodes (line 3)", "non-empty"}},
        Invalid{"pool_gpu_product_unknown",
                "nodeFit:\n  pools:\n    - name: a\n      gpuProduct: NVIDIA-GB200\n      nodes:\n"
                "        - {name: n, gpus: 8, cpu: \"64\", memory: 1Ti, ephemeralStorage: 1Ti}\n",
                {"nodeFit.pools[0].gpuProduct (line 4)", "NVIDIA-GB200", "matches no entry of gpuMemory.gpus"}},
        Invalid{"empty_file", "", {"empty"}}, Invalid{"only_comments", "# nothing here\n\n", {"empty"}},
        Invalid{"list_file", "- mode: mutate\n", {"mapping", "line 1"}},
        Invalid{"scalar_file", "mutate\n", {"mapping"}},
        Invalid{"yaml_syntax_error", "mode: mutate\nprofiles: {train: [\n", {"error at line"}},
        Invalid{"yaml_syntax_error_mid_file", "mode: mutate\n- x\ndenyFromGpus: 2\n", {"line 2"}},
        Invalid{"yaml_bad_indentation", "mode: mutate\n  denyFromGpus: 2\n", {"line 2"}}),
    [](const auto& info) { return info.param.what; });

}  // namespace
}  // namespace gpusizer
