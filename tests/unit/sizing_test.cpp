// The sizing engine must reproduce the seed tables exactly (seed 000,
// docs/sources.md): required_resources, the OSMO hints people copy into their
// submit commands, profile selection and the glob matcher rules use.

#include "gpusizer/sizing/sizing.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer::sizing_test {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

Quantity cores(int64_t n) { return Quantity::from_milli(n * 1000); }
Quantity gibibytes(int64_t n) { return Quantity::from_bytes(n * kGi); }

const Profile& profile(const std::string& name) {
  const Profile* found = default_policy().find_profile(name);
  EXPECT_NE(found, nullptr) << name;
  static const Profile kEmpty;
  return found ? *found : kEmpty;
}

// ---------------------------------------------------------------------------
// required_resources against the closed forms, GPU counts 1..16.

struct ClosedForm {
  std::string profile;
  int64_t gpus;
};

std::ostream& operator<<(std::ostream& os, const ClosedForm& c) { return os << c.profile << " x" << c.gpus; }

// The expectations come from the closed forms, not from the table, so a
// wrong interpolation cannot agree with itself.
int64_t expected_cpu(const ClosedForm& c) {
  return c.profile == "train" ? std::max<int64_t>(16, 8 * c.gpus) : 4 * c.gpus;
}
int64_t expected_memory_gi(const ClosedForm& c) { return std::max<int64_t>(64, 48 * c.gpus); }
int64_t expected_storage_gi(const ClosedForm& c) { return c.profile == "train" ? 300 : 200; }

class ClosedFormTest : public ::testing::TestWithParam<ClosedForm> {};

TEST_P(ClosedFormTest, RequiredResourcesEqualTheClosedForm) {
  const ClosedForm& c = GetParam();
  const auto need = required_resources(profile(c.profile), c.gpus);
  ASSERT_TRUE(need.has_value());
  EXPECT_EQ(need->cpu, cores(expected_cpu(c))) << need->cpu.to_string();
  EXPECT_EQ(need->cpu.to_string(), std::to_string(expected_cpu(c)));
  EXPECT_EQ(need->memory, gibibytes(expected_memory_gi(c))) << need->memory.to_string();
  EXPECT_EQ(need->memory.to_string(), std::to_string(expected_memory_gi(c)) + "Gi");
  ASSERT_TRUE(need->storage.has_value());
  EXPECT_EQ(*need->storage, gibibytes(expected_storage_gi(c)));
  EXPECT_EQ(need->storage->to_string(), std::to_string(expected_storage_gi(c)) + "Gi");
}

TEST_P(ClosedFormTest, SetHintCarriesTheSameNumbers) {
  const ClosedForm& c = GetParam();
  EXPECT_EQ(set_hint(profile(c.profile), c.gpus), c.profile + "_gpu=" + std::to_string(c.gpus) + " " + c.profile +
                                                      "_cpu=" + std::to_string(expected_cpu(c)) + " " + c.profile +
                                                      "_memory=" + std::to_string(expected_memory_gi(c)) + "Gi");
}

std::vector<ClosedForm> all_counts() {
  std::vector<ClosedForm> cases;
  for (const char* name : {"train", "infer"}) {
    for (int64_t g = 1; g <= 16; ++g) cases.push_back({name, g});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(DefaultPolicy, ClosedFormTest, ::testing::ValuesIn(all_counts()), [](const auto& info) {
  return info.param.profile + "_" + std::to_string(info.param.gpus) + "gpu";
});

TEST(RequiredResources, SpotValuesFromTheReference) {
  // Written out literally, as seed 000 states them (docs/sources.md).
  const auto three = required_resources(profile("train"), 3);
  ASSERT_TRUE(three);
  EXPECT_EQ(three->cpu.to_string(), "24");
  EXPECT_EQ(three->memory.to_string(), "144Gi");
  const auto sixteen = required_resources(profile("train"), 16);
  ASSERT_TRUE(sixteen);
  EXPECT_EQ(sixteen->cpu.to_string(), "128");
  EXPECT_EQ(sixteen->memory.to_string(), "768Gi");
  const auto infer16 = required_resources(profile("infer"), 16);
  ASSERT_TRUE(infer16);
  EXPECT_EQ(infer16->cpu.to_string(), "64");
  EXPECT_EQ(infer16->memory.to_string(), "768Gi");
}

TEST(RequiredResources, BelowTheFirstRowIsTheFirstRow) {
  Profile p;
  p.name = "big";
  p.set_prefix = "big";
  p.table = {{4, cores(10), gibibytes(100)}, {8, cores(20), gibibytes(200)}};
  p.extra_gpu_cpu = cores(1);
  p.extra_gpu_memory = gibibytes(10);
  for (int64_t g : {1, 2, 3, 4}) {
    const auto need = required_resources(p, g);
    ASSERT_TRUE(need) << g;
    EXPECT_EQ(need->cpu, cores(10)) << g;
    EXPECT_EQ(need->memory, gibibytes(100)) << g;
    EXPECT_FALSE(need->storage.has_value()) << g;
  }
  // Between rows: the row below plus perExtraGpu; past the last row likewise.
  const auto six = required_resources(p, 6);
  ASSERT_TRUE(six);
  EXPECT_EQ(six->cpu, cores(12));
  EXPECT_EQ(six->memory, gibibytes(120));
  const auto ten = required_resources(p, 10);
  ASSERT_TRUE(ten);
  EXPECT_EQ(ten->cpu, cores(22));
  EXPECT_EQ(ten->memory, gibibytes(220));
}

// ---------------------------------------------------------------------------
// The default profiles' data.

struct Row {
  int64_t gpus;
  const char* cpu;
  const char* memory;
};

void expect_table(const Profile& p, const std::vector<Row>& rows) {
  ASSERT_EQ(p.table.size(), rows.size()) << p.name;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(p.table[i].gpus, rows[i].gpus) << p.name << " row " << i;
    EXPECT_EQ(p.table[i].cpu.to_string(), rows[i].cpu) << p.name << " row " << i;
    EXPECT_EQ(p.table[i].memory.to_string(), rows[i].memory) << p.name << " row " << i;
  }
}

TEST(DefaultProfiles, TablesAreTheSeedRows) {
  expect_table(profile("train"), {{1, "16", "64Gi"}, {2, "16", "96Gi"}, {4, "32", "192Gi"}, {8, "64", "384Gi"}});
  expect_table(profile("infer"), {{1, "4", "64Gi"}, {2, "8", "96Gi"}, {4, "16", "192Gi"}, {8, "32", "384Gi"}});
  EXPECT_EQ(profile("train").extra_gpu_cpu, cores(8));
  EXPECT_EQ(profile("train").extra_gpu_memory, gibibytes(48));
  EXPECT_EQ(profile("infer").extra_gpu_cpu, cores(4));
  EXPECT_EQ(profile("infer").extra_gpu_memory, gibibytes(48));
  EXPECT_FALSE(profile("train").max_gpus.has_value());
  EXPECT_FALSE(profile("infer").max_gpus.has_value());
}

TEST(DefaultProfiles, RenderAndAugmentSizeNothingAndAllowOneGpu) {
  for (const char* name : {"render", "augment"}) {
    const Profile& p = profile(name);
    EXPECT_TRUE(p.table.empty()) << name;
    EXPECT_FALSE(p.storage.has_value()) << name;
    ASSERT_TRUE(p.max_gpus.has_value()) << name;
    EXPECT_EQ(*p.max_gpus, 1) << name;
    for (int64_t g : {1, 2, 8}) EXPECT_FALSE(required_resources(p, g).has_value()) << name << " " << g;
  }
}

TEST(SetHint, LiteralExamples) {
  EXPECT_EQ(set_hint(profile("train"), 4), "train_gpu=4 train_cpu=32 train_memory=192Gi");
  EXPECT_EQ(set_hint(profile("train"), 1), "train_gpu=1 train_cpu=16 train_memory=64Gi");
  EXPECT_EQ(set_hint(profile("infer"), 16), "infer_gpu=16 infer_cpu=64 infer_memory=768Gi");
  EXPECT_EQ(set_hint(profile("render"), 1), "render_gpu=1");
  EXPECT_EQ(set_hint(profile("augment"), 1), "augment_gpu=1");
}

TEST(SetHint, UsesSetPrefixNotProfileName) {
  Profile p = profile("train");
  p.name = "training-large";
  p.set_prefix = "big";
  EXPECT_EQ(set_hint(p, 2), "big_gpu=2 big_cpu=16 big_memory=96Gi");
}

// ---------------------------------------------------------------------------
// select_profile

struct Selection {
  std::string what;
  SelectionInput input;
  std::string profile;
  std::string reason_contains;
};

std::ostream& operator<<(std::ostream& os, const Selection& s) { return os << s.what; }

class SelectProfileTest : public ::testing::TestWithParam<Selection> {};

TEST_P(SelectProfileTest, ChoosesTheExpectedProfile) {
  const Selection& s = GetParam();
  const auto choice = select_profile(default_policy(), s.input);
  ASSERT_TRUE(choice.ok()) << choice.error();
  ASSERT_NE(choice.value().profile, nullptr);
  EXPECT_EQ(choice.value().profile->name, s.profile);
  EXPECT_NE(choice.value().reason.find(s.reason_contains), std::string::npos) << choice.value().reason;
}

const std::string kGroup = "osmo.group_name";

INSTANTIATE_TEST_SUITE_P(
    DefaultPolicy, SelectProfileTest,
    ::testing::Values(
        Selection{"nothing_is_default", {}, "train", "defaultProfile"},
        Selection{"osmo_finetune_job", {{{kGroup, "finetune-job"}}, {}, "x"}, "train", "finetune-job"},
        Selection{"osmo_anomaly_infer", {{{kGroup, "anomaly-infer"}}, {}, "x"}, "infer", "anomaly-infer"},
        Selection{"osmo_render_stage", {{{kGroup, "render-stage"}}, {}, "x"}, "render", "render"},
        Selection{"osmo_group_prerender", {{{kGroup, "prerender"}}, {}, "x"}, "render", "render"},
        Selection{"osmo_augment_stage", {{{kGroup, "data-augment-2"}}, {}, "x"}, "augment", "augment"},
        Selection{"name_contains_render", {{}, {}, "scene-render-0"}, "render", "name"},
        Selection{"name_contains_augment", {{}, {}, "augment-abc"}, "augment", "name"},
        // equals, not contains: a similar group name falls through to the default
        Selection{"finetune_job_2_is_default", {{{kGroup, "finetune-job-2"}}, {}, "x"}, "train", "defaultProfile"},
        Selection{"anomaly_infer_x_is_default", {{{kGroup, "anomaly-infer-x"}}, {}, "x"}, "train", "defaultProfile"},
        // rules before the name: group finetune-job wins over a name with render
        Selection{"group_rule_before_name_rule", {{{kGroup, "finetune-job"}}, {}, "render-x"}, "train", "finetune-job"},
        Selection{"label_beats_rules",
                  {{{kGroup, "finetune-job"}, {kProfileKey, "infer"}}, {}, "x"},
                  "infer",
                  "label gpu-sizer.io/profile"},
        Selection{"label_beats_annotation",
                  {{{kProfileKey, "render"}}, {{kProfileKey, "infer"}}, "x"},
                  "render",
                  "label gpu-sizer.io/profile"},
        Selection{"annotation_beats_rules",
                  {{{kGroup, "anomaly-infer"}}, {{kProfileKey, "augment"}}, "x"},
                  "augment",
                  "annotation gpu-sizer.io/profile"},
        Selection{"annotation_beats_name_rule",
                  {{}, {{kProfileKey, "infer"}}, "render-1"},
                  "infer",
                  "annotation gpu-sizer.io/profile"},
        Selection{"rules_beat_default", {{}, {}, "render"}, "render", "policy rule"}),
    [](const auto& info) { return info.param.what; });

TEST(SelectProfile, UnknownProfileInLabelFailsNamingItAndTheKnownOnes) {
  SelectionInput input;
  input.labels = {{kProfileKey, "trainn"}};
  const auto choice = select_profile(default_policy(), input);
  ASSERT_FALSE(choice.ok());
  const std::string& e = choice.error();
  EXPECT_NE(e.find("trainn"), std::string::npos) << e;
  EXPECT_NE(e.find("label"), std::string::npos) << e;
  EXPECT_NE(e.find("augment, infer, render, train"), std::string::npos) << e;
}

TEST(SelectProfile, UnknownProfileInAnnotationFails) {
  SelectionInput input;
  input.annotations = {{kProfileKey, "bogus"}};
  const auto choice = select_profile(default_policy(), input);
  ASSERT_FALSE(choice.ok());
  EXPECT_NE(choice.error().find("bogus"), std::string::npos) << choice.error();
  EXPECT_NE(choice.error().find("annotation"), std::string::npos) << choice.error();
  EXPECT_NE(choice.error().find("augment, infer, render, train"), std::string::npos) << choice.error();
}

Policy custom_rules_policy() {
  auto parsed = parse_policy(R"(
profileRules:
  - {on: "annotation:team", equals: vision, profile: infer}
  - {on: "label:job", glob: "finetune*", profile: train}
  - {on: "label:job", glob: "*-render-*", profile: render}
  - {on: name, glob: "*", profile: augment}
defaultProfile: infer
)",
                             "custom");
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? parsed.value() : default_policy();
}

TEST(SelectProfile, CustomRulesInOrderWithAnnotationAndGlob) {
  const Policy policy = custom_rules_policy();
  auto pick = [&](const SelectionInput& input) {
    auto choice = select_profile(policy, input);
    EXPECT_TRUE(choice.ok());
    return choice.ok() && choice.value().profile ? choice.value().profile->name : std::string("?");
  };
  EXPECT_EQ(pick({{{"job", "finetune-llama"}}, {{"team", "vision"}}, "n"}), "infer");  // first rule first
  EXPECT_EQ(pick({{{"job", "finetune-llama"}}, {}, "n"}), "train");
  EXPECT_EQ(pick({{{"job", "a-render-b"}}, {}, "n"}), "render");
  EXPECT_EQ(pick({{{"job", "render-b"}}, {}, "n"}), "augment");  // glob is anchored; name rule matches
  EXPECT_EQ(pick({{}, {{"team", "Vision"}}, "n"}), "augment");   // equals is case-sensitive
  // A rule on a label the object lacks does not match, not even a glob "*".
  const auto reason = select_profile(policy, {{}, {}, "anything"});
  ASSERT_TRUE(reason.ok());
  EXPECT_NE(reason.value().reason.find("name glob \"*\""), std::string::npos) << reason.value().reason;
}

// A template takes the labels, annotations and name it lacks from the
// object around it, whose rule verdicts are worked out once for all of its
// templates (issue 25): the choice is the one made on the two merged, the
// template's over the object's key by key.
TEST(SelectProfile, ATemplateTakesWhatItLacksFromTheObject) {
  const Policy policy = custom_rules_policy();
  using Map = std::map<std::string, std::string, std::less<>>;
  const std::vector<Map> label_sets = {
      {}, {{"job", "finetune-llama"}}, {{"job", "a-render-b"}}, {{kProfileKey, "render"}}, {{kProfileKey, "bogus"}}};
  const std::vector<Map> annotation_sets = {{}, {{"team", "vision"}}, {{kProfileKey, "augment"}}};
  const std::vector<std::string> names = {"", "n"};
  const auto describe = [](const Result<ProfileChoice>& choice) {
    return choice.ok() ? choice.value().profile->name + ": " + choice.value().reason : "error: " + choice.error();
  };
  std::size_t compared = 0;
  for (const Map& own_labels : label_sets) {
    for (const Map& own_annotations : annotation_sets) {
      for (const std::string& own_name : names) {
        for (const Map& labels : label_sets) {
          for (const Map& annotations : annotation_sets) {
            for (const std::string& name : names) {
              SelectionInput merged{own_labels, own_annotations, own_name.empty() ? name : own_name};
              merged.labels.insert(labels.begin(), labels.end());
              merged.annotations.insert(annotations.begin(), annotations.end());
              SelectionInput layered{own_labels, own_annotations, own_name};
              layered.inherited = inherit_selection(policy, {labels, annotations, name, {}});
              EXPECT_EQ(describe(select_profile(policy, layered)), describe(select_profile(policy, merged)))
                  << "template " << own_name << ", object " << name;
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 900u);
}

// An unknown profile's value is cut in the error (each of a workflow's
// templates says it).
TEST(SelectProfile, AnUnknownProfilesLongValueIsCut) {
  SelectionInput input;
  input.labels = {{kProfileKey, std::string(100, 'p')}};
  const auto choice = select_profile(default_policy(), input);
  ASSERT_FALSE(choice.ok());
  EXPECT_TRUE(choice.error().starts_with("label gpu-sizer.io/profile=" + std::string(61, 'p') +
                                         "... names no profile of the policy"))
      << choice.error();
}

TEST(SelectProfile, ReadsTheProfileKeyAndTheRulesKeysOnly) {
  // Pod decisions copy only these labels and annotations into a SelectionInput.
  const Policy policy = custom_rules_policy();
  using Subject = ProfileRule::Subject;
  EXPECT_TRUE(selection_reads(policy, Subject::kLabel, kProfileKey));
  EXPECT_TRUE(selection_reads(policy, Subject::kAnnotation, kProfileKey));
  EXPECT_TRUE(selection_reads(policy, Subject::kLabel, "job"));
  EXPECT_FALSE(selection_reads(policy, Subject::kAnnotation, "job"));  // a label rule
  EXPECT_TRUE(selection_reads(policy, Subject::kAnnotation, "team"));
  EXPECT_FALSE(selection_reads(policy, Subject::kLabel, "team"));
  EXPECT_FALSE(selection_reads(policy, Subject::kAnnotation, "kubectl.kubernetes.io/last-applied-configuration"));
}

TEST(SelectProfile, NoRuleMatchesGivesDefaultProfile) {
  auto parsed = parse_policy("profileRules: []\ndefaultProfile: infer\n", "t");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const auto choice = select_profile(parsed.value(), {{{kGroup, "finetune-job"}}, {}, "render"});
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice.value().profile->name, "infer");
  EXPECT_EQ(choice.value().reason, "defaultProfile");
}

// ---------------------------------------------------------------------------
// glob_match

struct Glob {
  const char* pattern;
  const char* text;
  bool matches;
};

std::ostream& operator<<(std::ostream& os, const Glob& g) {
  return os << "\"" << g.pattern << "\" vs \"" << g.text << "\"";
}

class GlobTest : public ::testing::TestWithParam<Glob> {};

TEST_P(GlobTest, Matches) { EXPECT_EQ(glob_match(GetParam().pattern, GetParam().text), GetParam().matches); }

INSTANTIATE_TEST_SUITE_P(
    Cases, GlobTest,
    ::testing::Values(Glob{"finetune*", "finetune", true}, Glob{"finetune*", "finetune-job", true},
                      Glob{"finetune*", "my-finetune-job", false}, Glob{"finetune*", "finetun", false},
                      Glob{"*", "", true}, Glob{"*", "anything at all", true}, Glob{"", "", true}, Glob{"", "a", false},
                      Glob{"a", "", false}, Glob{"abc", "abc", true}, Glob{"abc", "abd", false},
                      Glob{"abc", "abcd", false}, Glob{"*job", "finetune-job", true}, Glob{"*job", "job-x", false},
                      Glob{"*render*", "prerender-stage", true}, Glob{"a*b*c", "abc", true},
                      Glob{"a*b*c", "aXXbYYc", true}, Glob{"a*b*c", "aXXcYYb", false}, Glob{"a*b*c", "abcabc", true},
                      Glob{"a*b*c", "abcab", false}, Glob{"**", "x", true}, Glob{"a**b", "ab", true},
                      Glob{"*a*a*", "aa", true}, Glob{"*a*a*", "a", false}, Glob{"x*x", "x", false},
                      Glob{"?", "a", false},  // only * is special
                      Glob{"?", "?", true}, Glob{"[ab]", "a", false}));

TEST(GlobMatch, LongHostileInputsFinishQuickly) {
  // A backtracking matcher is exponential here; the budget is generous so a
  // slow Debug build still passes and only pathological behaviour fails.
  const std::string text(20000, 'a');
  const std::string pattern = "*a*a*a*a*a*a*a*a*a*a*a*a*b";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(glob_match(pattern, text));
  EXPECT_TRUE(glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*", text));
  EXPECT_TRUE(glob_match("a*" + std::string(1000, 'a'), text));
  EXPECT_FALSE(glob_match(std::string(1000, '*') + "b", text));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(5));
}

}  // namespace
}  // namespace gpusizer::sizing_test
