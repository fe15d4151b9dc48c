// Reading a pod of a review into the facts the rules see: containers and
// their GPUs, volumes and their sizes, scheduling, and what is wrong.
#include "gpusizer/admission/pod_reader.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpusizer {
namespace {

using nlohmann::json;

struct Read {
  JsonReader reader;  // the facts point into its document
  PodReading reading;
};

void read(Read& out, const json& pod, PodShape shape = PodShape::kPod, const json& workflow_spec = nullptr) {
  JsonReader& reader = out.reader;
  json document = {{"pod", pod}, {"spec", workflow_spec}};
  const JsonView root = reader.view_of(document);
  PodTemplateRef ref{root["pod"], shape, {"pod"}};
  if (shape == PodShape::kArgoTemplate) {
    ref.workflow_spec = root["spec"];
    ref.workflow_spec_path = {"spec"};
  }
  out.reading = read_pod(default_policy(), PodTarget{ref, "pod default/x", Mode::kMutate});
}

json gpu_container(const json& mounts = json::array()) {
  return {{"name", "trainer"},
          {"resources", {{"limits", {{"nvidia.com/gpu", 2}, {"memory", "96Gi"}}}}},
          {"volumeMounts", mounts}};
}

TEST(PodReader, ReadsTheVolumesOfAGpuPod) {
  const json pod = {{"metadata", {{"name", "x"}}},
                    {"spec",
                     {{"containers", {gpu_container({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}})}},
                      {"volumes",
                       {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "d"}}}},
                        {{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "64Gi"}}}},
                        {{"name", "bad"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "lots"}}}},
                        {{"name", "scratch"}, {"emptyDir", {{"sizeLimit", "lots"}}}}}}}}};
  Read r;
  read(r, pod);
  const PodFacts& facts = r.reading.facts;
  ASSERT_EQ(facts.app.size(), 1u);
  EXPECT_EQ(facts.app[0].gpus, 2);
  EXPECT_EQ(facts.app[0].shm_volume, "dshm");
  EXPECT_EQ(facts.volume_lists, (std::vector<std::vector<std::string>>{{"pod", "spec", "volumes"}}));
  ASSERT_EQ(facts.volumes.size(), 4u);
  EXPECT_FALSE(facts.volumes[0].memory_backed);
  EXPECT_TRUE(facts.volumes[1].memory_backed);
  EXPECT_EQ(facts.volumes[1].size_limit->to_string(), "64Gi");
  EXPECT_EQ(facts.volume_path(facts.volumes[1]), (std::vector<std::string>{"pod", "spec", "volumes", "1"}));
  EXPECT_FALSE(facts.volumes[2].size_limit_error.empty());
  // A disk-backed emptyDir's size is not the /dev/shm rule's: not read.
  EXPECT_TRUE(facts.volumes[3].size_limit_error.empty());
  EXPECT_EQ(facts.find_volume("dshm"), &facts.volumes[1]);
  EXPECT_TRUE(r.reading.problems.empty());
}

TEST(PodReader, APodWithoutGpusHasItsVolumesAndSchedulingLeftUnread) {
  const json pod = {{"spec",
                     {{"containers", {{{"name", "web"}}}},
                      {"nodeSelector", {{"pool", "cpu"}}},
                      {"volumes", {{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}}}}}};
  Read r;
  read(r, pod);
  EXPECT_TRUE(r.reading.facts.volumes.empty());
  EXPECT_TRUE(r.reading.facts.node_selector.empty());
}

TEST(PodReader, ArgoTemplatesListTheirVolumesBeforeTheWorkflows) {
  const json argo_template = {{"name", "t"}, {"container", gpu_container()}, {"volumes", {{{"name", "a"}}}}};
  const json spec = {{"volumes", {{{"name", "b"}}}}, {"nodeSelector", {{"zone", "z"}}}};
  Read r;
  read(r, argo_template, PodShape::kArgoTemplate, spec);
  const PodFacts& facts = r.reading.facts;
  EXPECT_EQ(facts.volume_lists, (std::vector<std::vector<std::string>>{{"pod", "volumes"}, {"spec", "volumes"}}));
  ASSERT_EQ(facts.volumes.size(), 2u);
  EXPECT_EQ(facts.volumes[0].name, "a");
  EXPECT_EQ(facts.volumes[1].list, 1u);
  EXPECT_EQ(facts.node_selector.at("zone"), "z");
}

TEST(PodReader, AffinityNamesTheGpuOnlyWhenEveryTermDoes) {
  auto term = [](const json& values) {
    return json{{"matchExpressions", {{{"key", "nvidia.com/gpu.product"}, {"operator", "In"}, {"values", values}}}}};
  };
  auto pod_with = [&](const json& terms) {
    return json{
        {"spec",
         {{"containers", {gpu_container()}},
          {"affinity",
           {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}}}}}};
  };
  Read both;
  read(both, pod_with({term({"A"}), term({"B"})}));
  EXPECT_EQ(both.reading.facts.affinity_products, (std::vector<std::string>{"A", "B"}));
  Read one;
  read(one, pod_with({term({"A"}), json{{"matchExpressions", json::array()}}}));
  EXPECT_TRUE(one.reading.facts.affinity_products.empty());
}

TEST(PodReader, FieldsOfTheWrongTypeAreProblemsNamedByTheirPath) {
  const json pod = {{"spec", {{"containers", {gpu_container(), "not a container"}}, {"volumes", "none"}}}};
  Read r;
  read(r, pod);
  EXPECT_EQ(r.reading.problems, (std::vector<std::string>{"pod default/x: pod.spec.containers[1] is not an object",
                                                          "pod default/x: pod.spec.volumes is not a list"}));
  EXPECT_FALSE(r.reading.gpu_problem);
}

TEST(PodReader, TheOptOutAnnotationIsRead) {
  json pod = {{"metadata", {{"annotations", {{"gpu-sizer.io/mutate", "false"}}}}},
              {"spec", {{"containers", {gpu_container()}}}}};
  Read r;
  read(r, pod);
  EXPECT_TRUE(r.reading.facts.opted_out);
}

}  // namespace
}  // namespace gpusizer
