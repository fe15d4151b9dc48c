// The policy file is what an operator edits in a ConfigMap: the embedded
// default must equal the seed tables, and a partial file must inherit the
// rest. Its mistakes, each reported with its field path and line:
// policy_errors_test.cpp.

#include "gpusizer/sizing/policy.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/sizing/data_loader.h"
#include "gpusizer/sizing/gpu_memory_settings.h"
#include "gpusizer/sizing/node_fit_settings.h"
#include "gpusizer/sizing/rules/node_caps_rule.h"
#include "gpusizer/sizing/rules/shared_memory_rule.h"
#include "gpusizer/util/digest.h"

namespace gpusizer::policy_test {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

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

  // The OSMO and name rules of seed 000, then the rules by kind and owner,
  // then by the GPU containers' commands (tests/unit/profile_by_kind_test.cpp).
  ASSERT_EQ(p.profile_rules.size(), 20u);
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
  EXPECT_EQ(policy.rule_settings.get<SharedMemoryPolicy>().profiles, std::vector<std::string>{"train"});
  EXPECT_EQ(policy.rule_settings.get<SharedMemoryPolicy>().minimum, Quantity::from_bytes(16 * kGi));
  EXPECT_EQ(policy.rule_settings.get<SharedMemoryPolicy>().size, Quantity::from_bytes(32 * kGi));
  EXPECT_EQ(policy.rule_settings.get<SharedMemoryPolicy>().table_includes, Quantity::from_bytes(32 * kGi));
  EXPECT_EQ(policy.rule_settings.get<SharedMemoryPolicy>().volume_name, "gpu-sizer-shm");
  EXPECT_EQ(policy.rule_settings.get<DataLoaderPolicy>().overhead_factor, 1560);
  EXPECT_EQ(policy.rule_settings.get<DataLoaderPolicy>().per_gpu_base, Quantity::from_bytes(2 * kGi));
  EXPECT_EQ(policy.rule_settings.get<DataLoaderPolicy>().pod_base, Quantity::from_bytes(3 * kGi));
  EXPECT_EQ(policy.rule_settings.get<DataLoaderPolicy>().dtype_bytes.at("float32"), 4);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().action, CheckAction::kDeny);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().safety_margin, 850);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().precision_bytes.at("int4"), 500);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().precision_bytes.at("fp16"), 2000);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().context_bytes_per_token, Quantity::from_bytes(1000000));
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().overhead, Quantity::from_bytes(1'000'000'000));
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().optimizers.at("adamw").bytes, 12000);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().optimizers.at("adamw").pageable, 0);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().optimizers.at("paged-adamw-8bit").bytes, 6000);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().optimizers.at("paged-adamw-8bit").pageable, 2000);
  const ModelShape* llama = policy.rule_settings.get<GpuMemoryPolicy>().find_model("llama-2-7b");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->params, 6'738'415'616);
  EXPECT_EQ(llama->largest_layer, 32000 * 4096);  // the embedding, by default
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().find_model("mixtral-8x7b")->experts, 8);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().find_model("Llama-2-7B"), nullptr);  // names are exact
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().quantized_bytes, 516);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().adapter_share, 10);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().activation_bytes.at("full"), 2000);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().activation_bytes.at("qlora"), 1000);
  // Each GPU's lookups: tests/unit/gpu_table_test.cpp.
  ASSERT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().gpus.size(), 32u);
  const GpuModel* rtx4090 = policy.rule_settings.get<GpuMemoryPolicy>().find_gpu("NVIDIA-GeForce-RTX-4090");
  ASSERT_NE(rtx4090, nullptr);
  EXPECT_EQ(rtx4090->name, "RTX-4090");
  EXPECT_EQ(rtx4090->memory, Quantity::from_bytes(24564 * kMi));
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().find_gpu("A100-80GB"),
            policy.rule_settings.get<GpuMemoryPolicy>().find_gpu("NVIDIA-A100-SXM4-80GB"));
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().find_gpu("NVIDIA-GB200"), nullptr);
  EXPECT_EQ(policy.rule_settings.get<NodeFitPolicy>().action, CheckAction::kWarn);
  EXPECT_EQ(policy.rule_settings.get<NodeFitPolicy>().pool_label, "osmo.pool");
  EXPECT_TRUE(policy.rule_settings.get<NodeFitPolicy>().extended_resource_toleration);
  EXPECT_TRUE(policy.rule_settings.get<NodeFitPolicy>().pools.empty());
}

TEST(ParsePolicy, NewBlocksMergeKeyByKey) {
  const auto parsed = parse_policy(
      "sharedMemory:\n  size: 64Gi\n"
      "dataLoader:\n  overheadFactor: 2\n"
      "gpuMemory:\n  safetyMargin: 0.75\n  training:\n    optimizers: {adamw: {bytes: 8}}\n",
      "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Policy& policy = parsed.value();
  EXPECT_EQ(policy.rule_settings.get<SharedMemoryPolicy>().size, Quantity::from_bytes(64 * kGi));
  EXPECT_EQ(policy.rule_settings.get<SharedMemoryPolicy>().minimum,
            Quantity::from_bytes(16 * kGi));  // kept from the default
  EXPECT_EQ(policy.rule_settings.get<DataLoaderPolicy>().overhead_factor, 2000);
  EXPECT_EQ(policy.rule_settings.get<DataLoaderPolicy>().pod_base, Quantity::from_bytes(3 * kGi));
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().safety_margin, 750);
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().optimizers.at("adamw").bytes, 8000);
  EXPECT_FALSE(policy.rule_settings.get<GpuMemoryPolicy>().optimizers.contains("sgd"));  // the map is replaced whole
  EXPECT_EQ(policy.rule_settings.get<GpuMemoryPolicy>().adapter_share, 10);              // the rest of training kept
}

TEST(ParsePolicy, ModelEntriesExtendAndReplaceBuiltInsByName) {
  const auto parsed = parse_policy(
      "gpuMemory:\n  models:\n"
      "    - {name: our-13b, params: 13000000000, layers: 40, hidden: 5120, heads: 40, kvHeads: 8, headDim: 128,"
      " intermediate: 13824, vocab: 64000, largestLayer: 400000000}\n"
      "    - {name: llama-2-7b, params: 7000000000, layers: 32, hidden: 4096, heads: 32, kvHeads: 32, headDim: 128,"
      " intermediate: 11008, vocab: 32000}\n",
      "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const GpuMemoryPolicy& rule = parsed.value().rule_settings.get<GpuMemoryPolicy>();
  EXPECT_EQ(rule.models.front().name, "our-13b");
  EXPECT_EQ(rule.find_model("our-13b")->largest_layer, 400'000'000);
  EXPECT_EQ(rule.find_model("llama-2-7b")->params, 7'000'000'000);  // replaced
  ASSERT_NE(rule.find_model("llama-3-70b"), nullptr);               // the other built-ins stay
}

TEST(ParsePolicy, GpuEntriesExtendAndReplaceBuiltInsByName) {
  const auto parsed = parse_policy(
      "gpuMemory:\n  gpus:\n"
      "    - {name: RTX-PRO-6000, memory: 96G, match: [\"*-RTX-PRO-6000-Blackwell-*\"]}\n"
      "    - {name: RTX-4090, memory: 25G, match: [\"*RTX-4090*\"]}\n",
      "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const GpuMemoryPolicy& gpus = parsed.value().rule_settings.get<GpuMemoryPolicy>();
  EXPECT_EQ(gpus.gpus.size(), default_policy().rule_settings.get<GpuMemoryPolicy>().gpus.size() + 1);
  EXPECT_EQ(gpus.gpus.front().name, "RTX-PRO-6000");
  ASSERT_NE(gpus.find_gpu("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"), nullptr);
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
  const NodeFitPolicy& fit = parsed.value().rule_settings.get<NodeFitPolicy>();
  EXPECT_EQ(fit.action, CheckAction::kDeny);
  EXPECT_TRUE(fit.extended_resource_toleration);  // kept from the default
  ASSERT_EQ(fit.pools.size(), 1u);
  EXPECT_EQ(fit.pools[0].node_selector.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
  ASSERT_EQ(fit.pools[0].nodes.size(), 1u);
  EXPECT_EQ(fit.pools[0].nodes[0].gpus, 8);
  EXPECT_EQ(fit.pools[0].nodes[0].memory, Quantity::from_bytes(1960 * kGi));
}

TEST(ParsePolicy, AClusterWithoutTheExtendedResourceTolerationPlugin) {
  const auto parsed = parse_policy("nodeFit:\n  extendedResourceToleration: false\n", "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_FALSE(parsed.value().rule_settings.get<NodeFitPolicy>().extended_resource_toleration);
  const auto wrong = parse_policy("nodeFit:\n  extendedResourceToleration: maybe\n", "test");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().find("nodeFit.extendedResourceToleration"), std::string::npos) << wrong.error();
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

}  // namespace
}  // namespace gpusizer::policy_test
