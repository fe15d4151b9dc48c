// read_manifests (manifests.h) within its input limits, and what its copy
// of each document keeps: the tests of the files as check reads them are
// in tests/integration/cli_test.cpp and cli_limits_test.cpp.
#include "gpusizer/check/manifests.h"

#include <string>

#include <gtest/gtest.h>

namespace gpusizer::manifests_test {
namespace {

InputLimits limits(std::size_t max_documents, std::size_t max_yaml_nodes) {
  InputLimits limits;
  limits.max_documents = max_documents;
  limits.max_yaml_nodes = max_yaml_nodes;
  return limits;
}

TEST(ReadManifests, DocumentsPastMaxDocumentsFailNamingTheFlag) {
  const InputLimits two = limits(2, 1000);
  EXPECT_TRUE(read_manifests("a: 1\n---\nb: 1\n", "x.yaml", two).ok());
  // A final separator, and comments between separators, start no document.
  EXPECT_TRUE(read_manifests("a: 1\n---\n# only a comment\n---\nb: 1\n---\n", "x.yaml", two).ok());
  const auto three = read_manifests("a: 1\n---\nb: 1\n---\nc: 1\n", "x.yaml", two);
  EXPECT_EQ(three.problem().code, ProblemCode::kTooLarge);
  EXPECT_EQ(three.error(), "x.yaml: more than 2 documents (--max-documents)");
}

TEST(ReadManifests, TheDocumentsOfAFileShareMaxYamlNodes) {
  // Each document is a mapping, a key and a value.
  EXPECT_TRUE(read_manifests("a: 1\n---\nb: 1\n", "x.yaml", limits(10, 6)).ok());
  EXPECT_EQ(read_manifests("a: 1\n---\nb: 1\n---\nc: 1\n", "x.yaml", limits(10, 6)).problem().code,
            ProblemCode::kTooLarge);
  EXPECT_EQ(read_manifests("a: 1\n---\nb: 1\n---\nc: 1\n", "x.yaml", limits(10, 6)).error(),
            "x.yaml: document 3, line 5: holds more than 6 YAML nodes, an alias counting as every node it repeats "
            "(--max-yaml-nodes)");
}

TEST(ReadManifests, JsonIsBoundedAsYamlIs) {
  // The object, two keys, a list and its two numbers, a string.
  const std::string json = R"({"a": [1, 2], "b": "c"})";
  EXPECT_TRUE(read_manifests(json, "x.json", limits(10, 7)).ok());
  EXPECT_EQ(read_manifests(json, "x.json", limits(10, 6)).error(),
            "x.json: document 1: holds more than 6 YAML nodes, an alias counting as every node it repeats "
            "(--max-yaml-nodes)");
  const auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(read_manifests(nested(kMaxManifestDepth), "x.json").ok());
  EXPECT_EQ(read_manifests(nested(kMaxManifestDepth + 1), "x.json").error(),
            "x.json: document 1: nests deeper than 400 levels");
  EXPECT_EQ(read_manifests(nested(kMaxManifestDepth + 1), "x.json").problem().code, ProblemCode::kTooLarge);
}

TEST(ReadManifests, TextThatDoesNotParseIsASyntaxProblemNamingItsDocumentAndLine) {
  const auto broken = read_manifests("a: 1\n---\nb: [1,\n", "x.yaml");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.problem().code, ProblemCode::kSyntax) << broken.error();
  EXPECT_EQ(broken.error().rfind("x.yaml: document 2, line ", 0), 0u) << broken.error();
  const auto not_utf8 = read_manifests("a: \xff\n", "x.yaml");
  EXPECT_EQ(not_utf8.problem().code, ProblemCode::kSyntax) << not_utf8.error();
}

TEST(ReadManifests, AHelmTemplateThatDoesNotParseIsToldToBeRenderedFirst) {
  // As Helm charts write them: a template action on a line of its own, or
  // first in the file (which reads as JSON's opening brace).
  for (const char* text : {"apiVersion: apps/v1\nkind: Deployment\nspec:\n{{- if .Values.gpu }}\n  - a\n{{- end }}\n",
                           "{{- if .Values.dra }}\nkind: ResourceClaimTemplate\n{{- end }}\n"}) {
    const auto read = read_manifests(text, "deployment.yaml");
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_EQ(read.problem().code, ProblemCode::kSyntax) << read.error();
    EXPECT_NE(read.error().find("the file holds template actions ({{ ... }}): if it is a Helm chart's template, check "
                                "the rendered chart (helm template ... | gpu-sizer check -)"),
              std::string::npos)
        << read.error();
  }
  // Broken YAML with no template action says nothing of templates.
  EXPECT_EQ(read_manifests("b: [1,\n", "x.yaml").error().find("template"), std::string::npos);
}

TEST(ReadManifests, ARepeatedKeyKeepsItsFirstPlaceAndItsLastValue) {
  auto file = read_manifests("a: 1\nb: 2\na: 3\n", "x.yaml");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file.value().documents[0].object, nlohmann::json({{"a", 3}, {"b", 2}}));
  EXPECT_EQ(write_manifests(file.value()), "a: 3\nb: 2\n");
}

}  // namespace
}  // namespace gpusizer::manifests_test
