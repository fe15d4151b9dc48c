// The policy file is what an operator edits in a ConfigMap: the embedded
// default must equal the seed tables, a partial file must inherit the rest,
// and every mistake must be reported with its field path and line so the
// webhook can refuse it with a message a person can act on.

#include "gpusizer/sizing/policy.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/util/digest.h"

namespace gpusizer {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

const std::string kDefaultProfiles = R"(
profiles:
  train:
    setPrefix: train
    storage: 300Gi
    table:
      - {gpus: 1, cpu: "16", memory: 64Gi}
      - {gpus: 2, cpu: "16", memory: 96Gi}
      - {gpus: 4, cpu: "32", memory: 192Gi}
      - {gpus: 8, cpu: "64", memory: 384Gi}
    perExtraGpu: {cpu: "8", memory: 48Gi}
  infer:
    setPrefix: infer
    storage: 200Gi
    table:
      - {gpus: 1, cpu: "4", memory: 64Gi}
    perExtraGpu: {cpu: "4", memory: 48Gi}
  render: {maxGpus: 1}
  augment: {maxGpus: 1}
)";

Policy parse_ok(const std::string& yaml) {
  auto parsed = parse_policy(yaml, "test.yaml");
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error()) << "\n" << yaml;
  return parsed.ok() ? parsed.value() : Policy{};
}

std::string rows_text(const Profile& p) {
  std::string out;
  for (const TableRow& row : p.table) {
    out += std::to_string(row.gpus) + ":" + row.cpu.to_string() + "/" + row.memory.to_string() + " ";
  }
  return out;
}

// ---------------------------------------------------------------------------
// The embedded default.

TEST(DefaultPolicy, ParsesAndEqualsTheSeed) {
  const Policy& p = default_policy();
  EXPECT_EQ(p.source, "embedded default");
  EXPECT_EQ(p.mode, Mode::kMutate);
  EXPECT_TRUE(p.namespace_modes.empty());
  EXPECT_EQ(p.exemptions.namespaces, (std::vector<std::string>{"kube-system", "kube-public"}));
  EXPECT_TRUE(p.exemptions.users.empty());
  EXPECT_TRUE(p.exemptions.groups.empty());
  EXPECT_EQ(p.gpu_resources, (std::vector<std::string>{"nvidia.com/gpu", "amd.com/gpu"}));
  EXPECT_EQ(p.deny_from_gpus, 2);
  EXPECT_EQ(p.default_profile, "train");

  ASSERT_EQ(p.profiles.size(), 4u);
  const Profile* train = p.find_profile("train");
  const Profile* infer = p.find_profile("infer");
  const Profile* render = p.find_profile("render");
  const Profile* augment = p.find_profile("augment");
  ASSERT_TRUE(train && infer && render && augment);
  EXPECT_EQ(rows_text(*train), "1:16/64Gi 2:16/96Gi 4:32/192Gi 8:64/384Gi ");
  EXPECT_EQ(rows_text(*infer), "1:4/64Gi 2:8/96Gi 4:16/192Gi 8:32/384Gi ");
  EXPECT_EQ(train->extra_gpu_cpu.to_string(), "8");
  EXPECT_EQ(train->extra_gpu_memory.to_string(), "48Gi");
  EXPECT_EQ(infer->extra_gpu_cpu.to_string(), "4");
  EXPECT_EQ(infer->extra_gpu_memory.to_string(), "48Gi");
  ASSERT_TRUE(train->storage && infer->storage);
  EXPECT_EQ(train->storage->to_string(), "300Gi");
  EXPECT_EQ(infer->storage->to_string(), "200Gi");
  EXPECT_EQ(train->set_prefix, "train");
  EXPECT_EQ(infer->set_prefix, "infer");
  EXPECT_EQ(render->set_prefix, "render");
  EXPECT_EQ(augment->set_prefix, "augment");
  EXPECT_TRUE(render->table.empty());
  EXPECT_TRUE(augment->table.empty());
  EXPECT_EQ(render->max_gpus, std::optional<int64_t>(1));
  EXPECT_EQ(augment->max_gpus, std::optional<int64_t>(1));
  EXPECT_FALSE(train->max_gpus);
  EXPECT_FALSE(infer->max_gpus);
  EXPECT_EQ(p.find_profile("nope"), nullptr);

  ASSERT_EQ(p.profile_rules.size(), 9u);
  using S = ProfileRule::Subject;
  using M = ProfileRule::Match;
  struct Want {
    S subject;
    const char* key;
    M match;
    const char* value;
    const char* profile;
  };
  const std::vector<Want> want = {
      {S::kLabel, "osmo.group_name", M::kEquals, "finetune-job", "train"},
      {S::kLabel, "osmo.group_name", M::kEquals, "anomaly-infer", "infer"},
      {S::kLabel, "osmo.group_name", M::kContains, "render", "render"},
      {S::kLabel, "osmo.group_name", M::kContains, "augment", "augment"},
      {S::kName, "", M::kContains, "render", "render"},
      {S::kName, "", M::kContains, "augment", "augment"},
      {S::kTemplate, "", M::kContains, "render", "render"},
      {S::kTemplate, "", M::kContains, "augment", "augment"},
      {S::kTemplate, "", M::kContains, "infer", "infer"},
  };
  for (std::size_t i = 0; i < want.size(); ++i) {
    const ProfileRule& r = p.profile_rules[i];
    EXPECT_EQ(r.subject, want[i].subject) << i;
    EXPECT_EQ(r.key, want[i].key) << i;
    EXPECT_EQ(r.match, want[i].match) << i;
    EXPECT_EQ(r.value, want[i].value) << i;
    EXPECT_EQ(r.profile, want[i].profile) << i;
  }
  EXPECT_EQ(p.profile_rules[0].text, "label osmo.group_name equals \"finetune-job\"");
  EXPECT_EQ(p.profile_rules[4].text, "name contains \"render\"");
}

// The beyond-the-table coefficients equal the seeds (docs/sources.md, seeds
// 000-004): a change to the embedded default must be deliberate.
TEST(DefaultPolicy, BeyondTheTableBlocksEqualTheSeeds) {
  const Policy& policy = default_policy();
  EXPECT_EQ(policy.shared_memory.profiles, std::vector<std::string>{"train"});
  EXPECT_EQ(policy.shared_memory.minimum, Quantity::from_bytes(16 * kGi));
  EXPECT_EQ(policy.shared_memory.size, Quantity::from_bytes(32 * kGi));
  EXPECT_EQ(policy.shared_memory.table_includes, Quantity::from_bytes(32 * kGi));
  EXPECT_EQ(policy.shared_memory.volume_name, "gpu-sizer-shm");
  EXPECT_EQ(policy.data_loader.overhead_factor, 1560);
  EXPECT_EQ(policy.data_loader.per_gpu_base, Quantity::from_bytes(2 * kGi));
  EXPECT_EQ(policy.data_loader.pod_base, Quantity::from_bytes(3 * kGi));
  EXPECT_EQ(policy.data_loader.dtype_bytes.at("float32"), 4);
  EXPECT_EQ(policy.gpu_memory.action, CheckAction::kDeny);
  EXPECT_EQ(policy.gpu_memory.safety_margin, 850);
  EXPECT_EQ(policy.gpu_memory.precision_bytes.at("int4"), 500);
  EXPECT_EQ(policy.gpu_memory.precision_bytes.at("fp16"), 2000);
  EXPECT_EQ(policy.gpu_memory.bytes_per_param, 40000);
  EXPECT_EQ(policy.gpu_memory.context_bytes_per_token, Quantity::from_bytes(1000000));
  EXPECT_EQ(policy.gpu_memory.shares.at("full").optimizer, 16000);
  EXPECT_EQ(policy.gpu_memory.shares.at("qlora").weights, 2000);
  ASSERT_EQ(policy.gpu_memory.gpus.size(), 12u);
  const GpuModel* rtx4090 = policy.gpu_memory.find_gpu("NVIDIA-GeForce-RTX-4090");
  ASSERT_NE(rtx4090, nullptr);
  EXPECT_EQ(rtx4090->name, "RTX-4090");
  EXPECT_EQ(rtx4090->memory, Quantity::from_bytes(24'000'000'000));
  EXPECT_EQ(policy.gpu_memory.find_gpu("A100-80GB"), policy.gpu_memory.find_gpu("NVIDIA-A100-SXM4-80GB"));
  EXPECT_EQ(policy.gpu_memory.find_gpu("NVIDIA-B200"), nullptr);
  EXPECT_EQ(policy.node_fit.action, CheckAction::kWarn);
  EXPECT_EQ(policy.node_fit.pool_label, "osmo.pool");
  EXPECT_TRUE(policy.node_fit.pools.empty());
}

TEST(ParsePolicy, NewBlocksMergeKeyByKey) {
  const auto parsed = parse_policy(
      "sharedMemory:\n  size: 64Gi\n"
      "dataLoader:\n  overheadFactor: 2\n"
      "gpuMemory:\n  safetyMargin: 0.75\n  training:\n    bytesPerParam: 18\n",
      "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Policy& policy = parsed.value();
  EXPECT_EQ(policy.shared_memory.size, Quantity::from_bytes(64 * kGi));
  EXPECT_EQ(policy.shared_memory.minimum, Quantity::from_bytes(16 * kGi));  // kept from the default
  EXPECT_EQ(policy.data_loader.overhead_factor, 2000);
  EXPECT_EQ(policy.data_loader.pod_base, Quantity::from_bytes(3 * kGi));
  EXPECT_EQ(policy.gpu_memory.safety_margin, 750);
  EXPECT_EQ(policy.gpu_memory.bytes_per_param, 18000);
  EXPECT_EQ(policy.gpu_memory.shares.at("full").optimizer, 16000);  // training.shares kept
}

TEST(ParsePolicy, GpuEntriesExtendAndReplaceBuiltInsByName) {
  const auto parsed = parse_policy(
      "gpuMemory:\n  gpus:\n"
      "    - {name: L4, memory: 24G, match: [\"*L4\"]}\n"
      "    - {name: RTX-4090, memory: 25G, match: [\"*RTX-4090*\"]}\n",
      "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const GpuMemoryPolicy& gpus = parsed.value().gpu_memory;
  EXPECT_EQ(gpus.gpus.size(), 13u);
  EXPECT_EQ(gpus.gpus.front().name, "L4");
  ASSERT_NE(gpus.find_gpu("NVIDIA-L4"), nullptr);
  EXPECT_EQ(gpus.find_gpu("NVIDIA-GeForce-RTX-4090-D")->memory, Quantity::from_bytes(25'000'000'000));
  ASSERT_NE(gpus.find_gpu("H100-80GB"), nullptr);  // built-ins not named stay
}

TEST(ParsePolicy, NodePoolsParse) {
  const auto parsed = parse_policy(
      "nodeFit:\n  action: deny\n  pools:\n"
      "    - name: a100\n      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
      "      gpuProduct: NVIDIA-A100-SXM4-80GB\n"
      "      nodes: [{name: dgx-a100, gpus: 8, cpu: \"252\", memory: 1960Gi, ephemeralStorage: 28Ti}]\n",
      "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const NodeFitPolicy& fit = parsed.value().node_fit;
  EXPECT_EQ(fit.action, CheckAction::kDeny);
  ASSERT_EQ(fit.pools.size(), 1u);
  EXPECT_EQ(fit.pools[0].node_selector.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
  ASSERT_EQ(fit.pools[0].nodes.size(), 1u);
  EXPECT_EQ(fit.pools[0].nodes[0].gpus, 8);
  EXPECT_EQ(fit.pools[0].nodes[0].memory, Quantity::from_bytes(1960 * kGi));
}

TEST(DefaultPolicy, Sha256IsOfTheEmbeddedText) {
  const Policy& p = default_policy();
  EXPECT_EQ(p.sha256.size(), 64u);
  EXPECT_EQ(p.sha256, sha256_hex(default_policy_yaml()));
  EXPECT_EQ(p.sha256.find_first_not_of("0123456789abcdef"), std::string::npos) << p.sha256;
}

TEST(DefaultPolicy, EmbeddedTextReparsesToTheSamePolicy) {
  const Policy again = parse_ok(default_policy_yaml());
  EXPECT_EQ(again.source, "test.yaml");
  EXPECT_EQ(again.sha256, default_policy().sha256);
  EXPECT_EQ(again.profile_rules.size(), default_policy().profile_rules.size());
  EXPECT_EQ(rows_text(*again.find_profile("train")), rows_text(*default_policy().find_profile("train")));
}

TEST(Sha256, KnownVectorsAndSensitivity) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const Policy a = parse_ok("mode: enforce\n");
  const Policy b = parse_ok("mode: enforce\n# a comment changes the text\n");
  EXPECT_EQ(a.sha256, sha256_hex("mode: enforce\n"));
  EXPECT_NE(a.sha256, b.sha256);
  EXPECT_NE(a.sha256, default_policy().sha256);
}

TEST(ModeNames, ToString) {
  EXPECT_EQ(to_string(Mode::kMutate), "mutate");
  EXPECT_EQ(to_string(Mode::kEnforce), "enforce");
  EXPECT_EQ(to_string(Mode::kAudit), "audit");
}

// ---------------------------------------------------------------------------
// Partial files inherit the default.

TEST(ParsePolicy, MinimalFileInheritsEverythingElse) {
  const Policy p = parse_ok("mode: enforce\n");
  const Policy& d = default_policy();
  EXPECT_EQ(p.mode, Mode::kEnforce);
  EXPECT_EQ(p.source, "test.yaml");
  EXPECT_EQ(p.namespace_modes, d.namespace_modes);
  EXPECT_EQ(p.exemptions.namespaces, d.exemptions.namespaces);
  EXPECT_EQ(p.gpu_resources, d.gpu_resources);
  EXPECT_EQ(p.deny_from_gpus, d.deny_from_gpus);
  EXPECT_EQ(p.default_profile, d.default_profile);
  ASSERT_EQ(p.profile_rules.size(), d.profile_rules.size());
  for (std::size_t i = 0; i < d.profile_rules.size(); ++i) {
    EXPECT_EQ(p.profile_rules[i].text, d.profile_rules[i].text);
    EXPECT_EQ(p.profile_rules[i].profile, d.profile_rules[i].profile);
  }
  ASSERT_EQ(p.profiles.size(), d.profiles.size());
  for (const auto& [name, profile] : d.profiles) {
    const Profile* mine = p.find_profile(name);
    ASSERT_NE(mine, nullptr) << name;
    EXPECT_EQ(rows_text(*mine), rows_text(profile)) << name;
    EXPECT_EQ(mine->storage, profile.storage) << name;
    EXPECT_EQ(mine->max_gpus, profile.max_gpus) << name;
    EXPECT_EQ(mine->set_prefix, profile.set_prefix) << name;
  }
}

TEST(ParsePolicy, EachModeParses) {
  EXPECT_EQ(parse_ok("mode: mutate").mode, Mode::kMutate);
  EXPECT_EQ(parse_ok("mode: enforce").mode, Mode::kEnforce);
  EXPECT_EQ(parse_ok("mode: audit").mode, Mode::kAudit);
}

TEST(ParsePolicy, NamespaceModesAndModeFor) {
  const Policy p = parse_ok("mode: enforce\nnamespaceModes: {research: audit, prod: mutate}\n");
  ASSERT_EQ(p.namespace_modes.size(), 2u);
  EXPECT_EQ(p.mode_for("research"), Mode::kAudit);
  EXPECT_EQ(p.mode_for("prod"), Mode::kMutate);
  EXPECT_EQ(p.mode_for("default"), Mode::kEnforce);
  EXPECT_EQ(p.mode_for(""), Mode::kEnforce);
  EXPECT_EQ(p.mode_for("Research"), Mode::kEnforce);  // namespace names are exact
  EXPECT_EQ(default_policy().mode_for("research"), Mode::kMutate);
}

std::string exemption_text(const std::optional<Exemption>& exemption) {
  return exemption ? exemption->reason + " " + exemption->name : "none";
}

TEST(ParsePolicy, DefaultExemptsOnlyTheControlPlaneNamespaces) {
  const Policy& d = default_policy();
  EXPECT_EQ(exemption_text(d.exemption_for("kube-system")), "namespace kube-system");
  EXPECT_EQ(exemption_text(d.exemption_for("kube-public")), "namespace kube-public");
  for (const char* ns : {"default", "kube-node-lease", "kube-system-2", ""}) {
    EXPECT_EQ(exemption_text(d.exemption_for(ns, "system:admin", {"system:masters"})), "none") << ns;
  }
}

TEST(ParsePolicy, ExemptionsByNamespaceUserAndGroup) {
  const Policy p = parse_ok("exemptions:\n  users: [alice@example.com]\n  groups: [platform-admins]\n");
  // Absent lists keep the default's; given lists replace it.
  EXPECT_EQ(exemption_text(p.exemption_for("kube-system")), "namespace kube-system");
  EXPECT_EQ(exemption_text(p.exemption_for("team-a", "alice@example.com")), "user alice@example.com");
  EXPECT_EQ(exemption_text(p.exemption_for("team-a", "bob", {"system:authenticated", "platform-admins"})),
            "group platform-admins");
  // Names are exact: no prefixes, no case folding.
  EXPECT_EQ(exemption_text(p.exemption_for("team-a", "alice")), "none");
  EXPECT_EQ(exemption_text(p.exemption_for("team-a", "ALICE@example.com", {"Platform-Admins"})), "none");
  // The namespace is named first when several apply.
  EXPECT_EQ(exemption_text(p.exemption_for("kube-system", "alice@example.com")), "namespace kube-system");

  const Policy none = parse_ok("exemptions: {namespaces: []}\n");
  EXPECT_EQ(exemption_text(none.exemption_for("kube-system")), "none");
  const Policy custom = parse_ok("exemptions: {namespaces: [gpu-operator]}\n");
  EXPECT_EQ(exemption_text(custom.exemption_for("gpu-operator")), "namespace gpu-operator");
  EXPECT_EQ(exemption_text(custom.exemption_for("kube-system")), "none");
}

TEST(ParsePolicy, GpuResourcesAndDenyFromGpus) {
  const Policy& d = default_policy();
  EXPECT_TRUE(d.is_gpu_resource("nvidia.com/gpu"));
  EXPECT_TRUE(d.is_gpu_resource("amd.com/gpu"));
  EXPECT_FALSE(d.is_gpu_resource("cpu"));
  EXPECT_FALSE(d.is_gpu_resource("nvidia.com/mig-1g.5gb"));
  const Policy p = parse_ok("gpuResources: [nvidia.com/mig-1g.5gb]\ndenyFromGpus: 4\n");
  EXPECT_TRUE(p.is_gpu_resource("nvidia.com/mig-1g.5gb"));
  EXPECT_FALSE(p.is_gpu_resource("nvidia.com/gpu"));
  EXPECT_EQ(p.deny_from_gpus, 4);
}

TEST(ParsePolicy, CustomProfilesReplaceTheDefaultOnes) {
  const Policy p = parse_ok(kDefaultProfiles + "defaultProfile: infer\n");
  EXPECT_EQ(p.profiles.size(), 4u);
  EXPECT_EQ(rows_text(*p.find_profile("infer")), "1:4/64Gi ");
  EXPECT_EQ(p.find_profile("render")->set_prefix, "render");  // setPrefix defaults to the name
  EXPECT_EQ(p.default_profile, "infer");
}

TEST(ParsePolicy, FileMayNameAProfileOnlyTheDefaultDefines) {
  const Policy p = parse_ok("profileRules: [{on: \"label:team\", glob: \"cv-*\", profile: infer}]\n");
  ASSERT_EQ(p.profile_rules.size(), 1u);
  EXPECT_EQ(p.profile_rules[0].subject, ProfileRule::Subject::kLabel);
  EXPECT_EQ(p.profile_rules[0].key, "team");
  EXPECT_EQ(p.profile_rules[0].match, ProfileRule::Match::kGlob);
  EXPECT_EQ(p.profile_rules[0].text, "label team glob \"cv-*\"");
  const Policy q = parse_ok("profileRules: [{on: \"annotation:x/y\", contains: z, profile: render}]\n");
  EXPECT_EQ(q.profile_rules[0].subject, ProfileRule::Subject::kAnnotation);
  EXPECT_EQ(q.profile_rules[0].key, "x/y");
}

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
        Invalid{"shares_missing_activations",
                "gpuMemory:\n  training:\n    shares:\n      full: {weights: 8, optimizer: 16, gradients: 8, "
                "activations: 4}\n"
                "      lora: {weights: 8, optimizer: 1, gradients: 1}\n"
                "      qlora: {weights: 2, optimizer: 4, gradients: 2, activations: 2}\n",
                {"gpuMemory.training.shares.lora (line 5)", "missing field activations"}},
        Invalid{"shares_all_zero",
                "gpuMemory:\n  training:\n    shares:\n      full: {weights: 0, optimizer: 0, gradients: 0, "
                "activations: 0}\n"
                "      lora: {weights: 8, optimizer: 1, gradients: 1, activations: 2}\n"
                "      qlora: {weights: 2, optimizer: 4, gradients: 2, activations: 2}\n",
                {"gpuMemory.training.shares.full (line 4)", "must not all be 0"}},
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
                "nodeFit:\n  pools:\n    - name: a\n      gpuProduct: NVIDIA-B200\n      nodes:\n"
                "        - {name: n, gpus: 8, cpu: \"64\", memory: 1Ti, ephemeralStorage: 1Ti}\n",
                {"nodeFit.pools[0].gpuProduct (line 4)", "NVIDIA-B200", "matches no entry of gpuMemory.gpus"}},
        Invalid{"empty_file", "", {"empty"}}, Invalid{"only_comments", "# nothing here\n\n", {"empty"}},
        Invalid{"list_file", "- mode: mutate\n", {"mapping", "line 1"}},
        Invalid{"scalar_file", "mutate\n", {"mapping"}},
        Invalid{"yaml_syntax_error", "mode: mutate\nprofiles: {train: [\n", {"error at line"}},
        Invalid{"yaml_syntax_error_mid_file", "mode: mutate\n- x\ndenyFromGpus: 2\n", {"line 2"}},
        Invalid{"yaml_bad_indentation", "mode: mutate\n  denyFromGpus: 2\n", {"line 2"}}),
    [](const auto& info) { return info.param.what; });

}  // namespace
}  // namespace gpusizer
