// What Kubernetes accepts as namespaces, names and kinds, and how a review's
// values are shown where they become state.
#include "gpusizer/util/kubernetes_names.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gpusizer::kubernetes_names_test {
namespace {

using Strings = std::vector<std::string>;

const std::string kRlo = "\xe2\x80\xae";  // U+202E RIGHT-TO-LEFT OVERRIDE

TEST(KubernetesNames, NamespacesAreDns1123Labels) {
  for (const std::string& ok : Strings{"a", "team-a", "0", "kube-system", std::string(63, 'n')}) {
    EXPECT_TRUE(is_dns1123_label(ok)) << ok;
  }
  for (const std::string& bad : Strings{"", "-a", "a-", "Team-a", "team.a", "team_a", "a b", std::string(64, 'n'),
                                        std::string("team\0a", 6), "team" + kRlo + "a"}) {
    EXPECT_FALSE(is_dns1123_label(bad)) << bad;
  }
}

TEST(KubernetesNames, ObjectNamesAreDns1123Subdomains) {
  for (const std::string& ok : Strings{"train-x", "a.b.c", "0", "llama-3.1-8b", std::string(253, 'p'),
                                       std::string(100, 'a') + "." + std::string(100, 'b')}) {
    EXPECT_TRUE(is_dns1123_subdomain(ok)) << ok;
  }
  for (const std::string& bad :
       Strings{"", ".a", "a.", "a..b", "a.-b", "Train", "train_x", std::string(254, 'p'), "train\nx", "x/y"}) {
    EXPECT_FALSE(is_dns1123_subdomain(bad)) << bad;
  }
}

TEST(KubernetesNames, KindsAreDns1035LabelsOfAnyCase) {
  for (const std::string& ok : Strings{"Pod", "PyTorchJob", "LLMInferenceService", "my-kind2", std::string(63, 'K')}) {
    EXPECT_TRUE(is_kind_name(ok)) << ok;
  }
  for (const std::string& bad :
       Strings{"", "2Pod", "Pod-", "Pod.v1", "Pod Job", std::string(64, 'K'), "P" + kRlo + "od"}) {
    EXPECT_FALSE(is_kind_name(bad)) << bad;
  }
}

TEST(KubernetesNames, AcceptedValuesAreShownAsReceived) {
  EXPECT_EQ(shown_namespace("team-a"), "team-a");
  EXPECT_EQ(shown_namespace(""), "");
  EXPECT_EQ(shown_name("train-x"), "train-x");
  EXPECT_EQ(shown_kind("PyTorchJob"), "PyTorchJob");
  EXPECT_EQ(shown_operation("UPDATE"), "UPDATE");
  EXPECT_EQ(shown_object("team-a", "train-x"), "team-a/train-x");
  EXPECT_EQ(shown_object("", "node-1"), "node-1");
  EXPECT_EQ(shown_object("team-a", ""), "team-a");
  // A generateName prefix, as the review's handler names it.
  EXPECT_EQ(shown_name("train-*"), "train-*");
  EXPECT_EQ(shown_name("train*"), "train*");
  EXPECT_EQ(shown_name("*"), "*");
}

TEST(KubernetesNames, RefusedValuesAreQuotedShortAndEscaped) {
  const std::string megabyte(4 << 20, 'n');
  const std::string shown = shown_namespace(megabyte);
  EXPECT_EQ(shown, "\"" + std::string(64, 'n') + "\"... (4194304 bytes)");
  EXPECT_EQ(shown_object(megabyte, "train-x"), shown + "/train-x");
  EXPECT_EQ(shown_name(std::string("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(shown_name("Bad_Name*"), R"("Bad_Name*")");
  EXPECT_EQ(shown_kind("Pod\n"), R"("Pod\u000a")");
  EXPECT_EQ(shown_operation("create"), R"("create")");
  EXPECT_EQ(shown_namespace("team-" + kRlo + "a"), R"("team-\u202ea")");
}

}  // namespace
}  // namespace gpusizer::kubernetes_names_test
