// Reading a pod of a review into the facts the rules see: containers and
// their GPUs, volumes and their sizes, scheduling, owners, and what is wrong.
#include "gpusizer/admission/pod_reader.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/serving_flags.h"

namespace gpusizer::pod_reader_test {
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
  out.reading = read_pod(default_policy(), PodTarget{ref, {"pod default/x", Mode::kMutate}});
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
  EXPECT_EQ(find_volume(facts, VolumeIndex(facts.volumes), "dshm"), &facts.volumes[1]);
  EXPECT_TRUE(r.reading.problems.empty());
}

// vLLM's --gpu-memory-utilization, as its manifests pass it: an args
// pair, an = form, or inside a shell line; a value vLLM would expand from
// the environment is not a share.
TEST(PodReader, ReadsVllmsGpuMemoryUtilizationFromCommandAndArgs) {
  const auto share_of = [](const json& command, const json& args) {
    json container = gpu_container();
    if (!command.is_null()) container["command"] = command;
    if (!args.is_null()) container["args"] = args;
    Read r;
    read(r, {{"metadata", {{"name", "x"}}}, {"spec", {{"containers", {container}}}}});
    return r.reading.facts.app.at(0).gpu_memory_utilization;
  };
  EXPECT_EQ(share_of(nullptr, {"--model", "m", "--gpu-memory-utilization", "0.95"}), 950);
  EXPECT_EQ(share_of({"vllm", "serve", "m", "--gpu-memory-utilization=0.8"}, nullptr), 800);
  EXPECT_EQ(
      share_of({"/bin/sh", "-c"}, {"vllm serve m --tensor-parallel-size 2 --gpu-memory-utilization '0.9' --port 8000"}),
      900);
  EXPECT_EQ(share_of(nullptr, {"--gpu-memory-utilization", "$(GPU_UTIL)"}), 0);
  EXPECT_EQ(share_of(nullptr, {"--gpu-memory-utilization", "1.5"}), 0);
  EXPECT_EQ(share_of(nullptr, {"--gpu-memory-utilization"}), 0);
  EXPECT_EQ(share_of(nullptr, {"--model", "m"}), 0);
  // The flag's name ends the command and its value starts the args: one
  // command line.
  EXPECT_EQ(share_of({"vllm", "serve", "m", "--gpu-memory-utilization"}, {"0.7"}), 700);
}

// What a profile rule `on: command` matches: each GPU container's command
// and args as one line, capped; a container without GPUs is not read.
TEST(PodReader, KeepsEachGpuContainersCommandLineForTheProfileRules) {
  json server = gpu_container();
  server["command"] = {"python3", "-m", "sglang.launch_server"};
  server["args"] = {"--tp", "8"};
  json sidecar = {{"name", "proxy"}, {"image", "envoy"}, {"command", {"envoy", "-c", "/etc/envoy.yaml"}}};
  json long_script = gpu_container();
  long_script["args"] = {std::string(10000, 'x')};
  Read r;
  read(r, {{"metadata", {{"name", "x"}}}, {"spec", {{"containers", {server, sidecar, long_script}}}}});
  const std::vector<std::string>& commands = r.reading.facts.selection.commands;
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0], "python3 -m sglang.launch_server --tp 8");
  EXPECT_EQ(commands[1].size(), kCommandLineBytes);
}

TEST(PodReader, ReadsVllmsParallelismFromCommandAndArgs) {
  const auto facts_of = [](const json& args) {
    json container = gpu_container();
    container["args"] = args;
    Read r;
    read(r, {{"metadata", {{"name", "x"}}}, {"spec", {{"containers", {container}}}}});
    const ContainerFacts& app = r.reading.facts.app.at(0);
    return std::to_string(app.tensor_parallel) + "/" + std::to_string(app.pipeline_parallel);
  };
  EXPECT_EQ(facts_of({"--tensor-parallel-size", "8", "--pipeline-parallel-size=2"}), "8/2");
  EXPECT_EQ(facts_of({"vllm serve m -tp 4"}), "4/0");
  EXPECT_EQ(facts_of({"--tensor-parallel-size", "$(TP)"}), "0/0");
  // The first occurrence counts, in either spelling, as the old list scan read it.
  EXPECT_EQ(facts_of({"-tp", "2", "--tensor-parallel-size=4", "-pp=3", "--pipeline-parallel-size", "5"}), "2/3");
  EXPECT_EQ(facts_of({"--tensor-parallel-size", "$(TP)", "-tp", "4"}), "0/0");
  // A flag's name as the value of another is still read as a flag.
  EXPECT_EQ(facts_of({"--gpu-memory-utilization", "-tp", "8"}), "8/0");
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
  // The template's own volumes, and its workflow's, read once for all of its templates.
  ASSERT_EQ(facts.volumes.size(), 1u);
  EXPECT_EQ(facts.volumes[0].name, "a");
  ASSERT_TRUE(facts.workflow);
  ASSERT_EQ(facts.workflow->spec.volumes.size(), 1u);
  EXPECT_EQ(facts.workflow->spec.volumes[0].list, 1u);
  const VolumeIndex own(facts.volumes);
  EXPECT_EQ(find_volume(facts, own, "a"), &facts.volumes[0]);
  EXPECT_EQ(find_volume(facts, own, "b"), &facts.workflow->spec.volumes[0]);
  EXPECT_EQ(facts.volume_path(*find_volume(facts, own, "b")), (std::vector<std::string>{"spec", "volumes", "0"}));
  ASSERT_TRUE(facts.node_selector_value("zone"));
  EXPECT_EQ(*facts.node_selector_value("zone"), "z");
}

// A template's nodeSelector entries win over its workflow's, key by key;
// both are walked in key order, the template's where both have a key.
TEST(PodReader, AnArgoTemplatesNodeSelectorWinsKeyByKey) {
  json argo_template = {{"name", "t"}, {"container", gpu_container()}};
  argo_template["nodeSelector"] = {{"b", "template"}, {"d", "template"}};
  const json spec = {{"nodeSelector", {{"a", "workflow"}, {"b", "workflow"}, {"c", "workflow"}}}};
  Read r;
  read(r, argo_template, PodShape::kArgoTemplate, spec);
  const PodFacts& facts = r.reading.facts;
  std::vector<std::string> entries;
  facts.every_node_selector_entry([&](const std::string& key, const std::string& value) {
    entries.push_back(key + "=" + value);
    return true;
  });
  EXPECT_EQ(entries, (std::vector<std::string>{"a=workflow", "b=template", "c=workflow", "d=template"}));
  // A visit that returns false stops the walk.
  std::size_t visited = 0;
  facts.every_node_selector_entry([&](const std::string&, const std::string&) { return ++visited < 2; });
  EXPECT_EQ(visited, 2u);
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

json gpu_pod_spec(const json& spec) {
  json pod = {{"spec", spec}};
  pod["spec"]["containers"] = json::array({gpu_container()});
  return pod;
}

json required_affinity(const json& terms) {
  return {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
}

TEST(PodReader, TolerationsAreReadAsWritten) {
  const json tolerations = {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                            {{"key", "sku"}, {"operator", "Equal"}, {"value", "gpu"}},
                            {{"key", "tier"}, {"value", "batch"}, {"effect", ""}},
                            {{"operator", "Exists"}}};
  Read r;
  read(r, gpu_pod_spec({{"tolerations", tolerations}}));
  const std::vector<Toleration>& read_back = r.reading.facts.tolerations;
  ASSERT_EQ(read_back.size(), 4u);
  EXPECT_EQ(read_back[0].key, "nvidia.com/gpu");
  EXPECT_TRUE(read_back[0].exists);
  EXPECT_EQ(read_back[0].effect, std::optional<std::string>("NoSchedule"));
  EXPECT_EQ(read_back[1].key, "sku");
  EXPECT_FALSE(read_back[1].exists);
  EXPECT_EQ(read_back[1].value, "gpu");
  EXPECT_EQ(read_back[1].effect, std::nullopt) << "no effect: every effect";
  EXPECT_FALSE(read_back[2].exists) << "no operator is Equal";
  EXPECT_EQ(read_back[2].effect, std::optional<std::string>(""));
  EXPECT_EQ(read_back[3].key, "");
  EXPECT_TRUE(read_back[3].exists);
}

TEST(PodReader, RequiredAffinityTermsKeepEveryOperatorAndMatchFields) {
  using Op = NodeRequirement::Op;
  const json expressions = {{{"key", "zone"}, {"operator", "In"}, {"values", {"a", "b"}}},
                            {{"key", "pool"}, {"operator", "NotIn"}, {"values", {"cpu"}}},
                            {{"key", "gpu"}, {"operator", "Exists"}},
                            {{"key", "spot"}, {"operator", "DoesNotExist"}},
                            {{"key", "gpu.count"}, {"operator", "Gt"}, {"values", {"3"}}},
                            {{"key", "gpu.count"}, {"operator", "Lt"}, {"values", {"9"}}},
                            {{"key", "odd"}, {"operator", "Near"}, {"values", {"x"}}}};
  const json fields = {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"gpu-a"}}}};
  const json terms = {{{"matchExpressions", expressions}, {"matchFields", fields}}, {{"matchFields", fields}}};
  Read r;
  read(r, gpu_pod_spec({{"affinity", required_affinity(terms)}}));
  const PodFacts& facts = r.reading.facts;
  EXPECT_TRUE(facts.has_affinity);
  ASSERT_EQ(facts.affinity_terms.size(), 2u);
  const std::vector<NodeRequirement>& first = facts.affinity_terms[0].requirements;
  // An operator the API server refuses is not kept.
  ASSERT_EQ(first.size(), 7u);
  const std::vector<Op> ops = {Op::kIn, Op::kNotIn, Op::kExists, Op::kDoesNotExist, Op::kGt, Op::kLt, Op::kIn};
  for (std::size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(first[i].op, ops[i]) << i;
  EXPECT_EQ(first[0].values, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(first[4].key, "gpu.count");
  EXPECT_EQ(first[4].values, std::vector<std::string>{"3"});
  EXPECT_FALSE(first[5].field);
  EXPECT_TRUE(first[6].field);
  EXPECT_EQ(first[6].key, "metadata.name");
  EXPECT_EQ(first[6].values, std::vector<std::string>{"gpu-a"});
  ASSERT_EQ(facts.affinity_terms[1].requirements.size(), 1u);
  EXPECT_TRUE(facts.affinity_terms[1].requirements[0].field);
}

TEST(PodReader, WithoutRequiredAffinityAnyNodeAndNoName) {
  Read r;
  read(r, gpu_pod_spec(json::object()));
  EXPECT_FALSE(r.reading.facts.has_affinity);
  EXPECT_TRUE(r.reading.facts.affinity_terms.empty());
  EXPECT_TRUE(r.reading.facts.tolerations.empty());
  EXPECT_EQ(r.reading.facts.node_name, "");
}

TEST(PodReader, SpecNodeNameIsRead) {
  Read r;
  read(r, gpu_pod_spec({{"nodeName", "gke-l4-0"}}));
  EXPECT_EQ(r.reading.facts.node_name, "gke-l4-0");
}

TEST(PodReader, AnArgoTemplatesSchedulingWinsOverItsWorkflowsAsAWhole) {
  const json term = {{"matchExpressions", {{{"key", "zone"}, {"operator", "In"}, {"values", {"w"}}}}}};
  const json workflow = {{"tolerations", {{{"key", "workflow"}, {"operator", "Exists"}}}},
                         {"affinity", required_affinity(json::array({term}))}};
  const json argo_template = {
      {"name", "t"}, {"container", gpu_container()}, {"tolerations", {{{"key", "template"}, {"operator", "Exists"}}}}};
  Read r;
  read(r, argo_template, PodShape::kArgoTemplate, workflow);
  const PodFacts& facts = r.reading.facts;
  ASSERT_EQ(facts.tolerations.size(), 1u);
  EXPECT_EQ(facts.tolerations[0].key, "template");
  EXPECT_EQ(&facts.effective_tolerations(), &facts.tolerations);
  // The template names no affinity: the workflow's applies.
  EXPECT_TRUE(facts.affinity_terms.empty());
  const PodFacts& affinity = facts.affinity_source();
  ASSERT_EQ(affinity.affinity_terms.size(), 1u);
  EXPECT_EQ(affinity.affinity_terms[0].requirements[0].values, std::vector<std::string>{"w"});
}

TEST(PodReader, EachContainerKnowsItsGpuResource) {
  json amd = gpu_container();
  amd["name"] = "amd";
  amd["resources"]["limits"] = {{"amd.com/gpu", 1}};
  const json pod = {{"spec", {{"containers", {gpu_container(), amd, {{"name", "web"}}}}}}};
  Read r;
  read(r, pod);
  const PodFacts& facts = r.reading.facts;
  ASSERT_EQ(facts.app.size(), 3u);
  EXPECT_EQ(facts.app[0].gpu_resource, "nvidia.com/gpu");
  EXPECT_EQ(facts.app[1].gpu_resource, "amd.com/gpu");
  EXPECT_EQ(facts.app[2].gpu_resource, "");
}

TEST(PodReader, TheOwnerKindIsTheControllersElseTheFirstOwners) {
  auto owned_by = [](const json& owners) {
    json pod = {{"metadata", {{"ownerReferences", owners}}}, {"spec", {{"containers", {gpu_container()}}}}};
    Read r;
    read(r, pod);
    return r.reading.facts.selection.owner_kind;
  };
  EXPECT_EQ(
      owned_by({{{"kind", "Workflow"}, {"name", "w"}}, {{"kind", "ReplicaSet"}, {"name", "r"}, {"controller", true}}}),
      "ReplicaSet");
  EXPECT_EQ(owned_by({{{"kind", "Workflow"}}, {{"kind", "ReplicaSet"}, {"controller", false}}}), "Workflow");
  EXPECT_EQ(owned_by(json::array()), "");
}

TEST(PodReader, FieldsOfTheWrongTypeAreProblemsNamedByTheirPath) {
  const json pod = {{"spec", {{"containers", {gpu_container(), "not a container"}}, {"volumes", "none"}}}};
  Read r;
  read(r, pod);
  ASSERT_EQ(r.reading.problems.size(), 2u);
  EXPECT_EQ(r.reading.problems[0].code, ProblemCode::kWrongType);
  EXPECT_EQ(r.reading.problems[0].path, "pod.spec.containers[1]");
  EXPECT_EQ(r.reading.problems[0].message, "pod default/x: pod.spec.containers[1] is not an object");
  EXPECT_EQ(r.reading.problems[1].code, ProblemCode::kWrongType);
  EXPECT_EQ(r.reading.problems[1].path, "pod.spec.volumes");
  EXPECT_EQ(r.reading.problems[1].message, "pod default/x: pod.spec.volumes is not a list");
  EXPECT_FALSE(r.reading.accelerator_problem);
}

TEST(PodReader, TheOptOutAnnotationIsRead) {
  json pod = {{"metadata", {{"annotations", {{"gpu-sizer.io/mutate", "false"}}}}},
              {"spec", {{"containers", {gpu_container()}}}}};
  Read r;
  read(r, pod);
  EXPECT_TRUE(r.reading.facts.opted_out);
}

}  // namespace
}  // namespace gpusizer::pod_reader_test
