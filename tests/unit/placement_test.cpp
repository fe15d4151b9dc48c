// An Argo template's pod takes what its template does not set from its
// workflow (PodFacts::workflow), and Placement works out what the
// workflow's tolerations and affinity say of each class once per workflow
// (issue 25). Its candidates must be those of the same pod with the
// workflow's fields written into it.
#include "gpusizer/sizing/placement.h"

#include <random>

#include <gtest/gtest.h>

#include "gpusizer/sizing/candidates.h"
#include "support/nodes_support.h"

namespace gpusizer::placement_test {
namespace {

using testing::inventory_of;

class Random {
 public:
  explicit Random(uint32_t seed) : engine_(seed) {}
  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(engine_); }
  bool coin() { return below(2) == 1; }
  template <typename T>
  const T& one_of(const std::vector<T>& items) {
    return items[below(items.size())];
  }

 private:
  std::mt19937 engine_;
};

const std::vector<std::string> kKeys = {"a", "b", "c", std::string(kHostnameLabel)};
const std::vector<std::string> kValues = {"x", "y", "1", "5"};
const std::vector<std::string> kNames = {"n1", "n2", "n3", "n4"};

NodeClass random_class(Random& random) {
  NodeClass node;
  node.shape = "shape";
  for (const char* key : {"a", "b", "c"}) {
    if (random.coin()) node.labels.emplace_back(key, random.one_of(kValues));
  }
  node.hostname_is_name = random.coin();
  if (!node.hostname_is_name && random.coin()) {
    node.labels.emplace_back(std::string(kHostnameLabel), random.one_of(kNames));
  }
  std::sort(node.labels.begin(), node.labels.end());
  for (const auto& name : kNames) {
    if (random.coin()) node.names.push_back(name);
  }
  const std::vector<Taint> taints = {{"t1", "v", TaintEffect::kNoSchedule},
                                     {"t2", "", TaintEffect::kNoExecute},
                                     {"t3", "v", TaintEffect::kPreferNoSchedule},
                                     {"node.kubernetes.io/not-ready", "", TaintEffect::kNoExecute}};
  for (const Taint& taint : taints) {
    if (random.coin()) node.taints.push_back(taint);
  }
  node.unschedulable = random.below(4) == 0;
  node.extended = {{"nvidia.com/gpu", static_cast<int64_t>(random.below(3))}};
  return node;
}

NodeRequirement random_requirement(Random& random) {
  NodeRequirement requirement;
  requirement.field = random.below(5) == 0;
  requirement.key = requirement.field ? "metadata.name" : random.one_of(kKeys);
  requirement.op = static_cast<NodeRequirement::Op>(random.below(6));
  const std::size_t values =
      requirement.op == NodeRequirement::Op::kExists || requirement.op == NodeRequirement::Op::kDoesNotExist
          ? 0
          : 1 + random.below(2);
  for (std::size_t i = 0; i < values; ++i) {
    requirement.values.push_back(random.coin() ? random.one_of(kNames) : random.one_of(kValues));
  }
  return requirement;
}

// Scheduling fields as one spec writes them, each written or not.
void random_scheduling(Random& random, PodFacts& spec) {
  for (std::size_t i = random.below(3); i > 0; --i) {
    const std::string& key = random.one_of(kKeys);
    spec.node_selector[key] = key == kHostnameLabel ? random.one_of(kNames) : random.one_of(kValues);
  }
  if (random.below(3) == 0) spec.node_name = random.one_of(kNames);
  for (std::size_t i = random.below(3); i > 0; --i) {
    Toleration toleration;
    toleration.key = random.below(4) == 0 ? "" : random.one_of(std::vector<std::string>{"t1", "t2", "t3"});
    toleration.exists = random.coin();
    toleration.value = random.coin() ? "v" : "";
    if (random.coin()) toleration.effect = random.one_of(std::vector<std::string>{"NoSchedule", "NoExecute", ""});
    spec.tolerations.push_back(toleration);
  }
  if (random.coin()) {
    spec.has_affinity = true;
    for (std::size_t t = random.below(3); t > 0; --t) {
      NodeSelectorTerm term;
      for (std::size_t r = random.below(3); r > 0; --r) term.requirements.push_back(random_requirement(random));
      spec.affinity_terms.push_back(term);
    }
  }
}

// The template's pod with its workflow's fields written into it, as the
// reader read Argo templates before workflows were read once.
PodFacts written_out(const PodFacts& layered) {
  PodFacts pod = layered;
  pod.workflow = nullptr;
  const PodFacts& workflow = layered.workflow->spec;
  for (const auto& [key, value] : workflow.node_selector) pod.node_selector.emplace(key, value);
  if (pod.node_name.empty()) pod.node_name = workflow.node_name;
  if (pod.tolerations.empty()) pod.tolerations = workflow.tolerations;
  if (!pod.has_affinity && workflow.has_affinity) {
    pod.has_affinity = true;
    pod.affinity_terms = workflow.affinity_terms;
    pod.affinity_products = workflow.affinity_products;
  }
  return pod;
}

TEST(Placement, AWorkflowsFieldsPlaceATemplateAsIfWrittenInIt) {
  Random random(25);
  const Policy& policy = default_policy();
  std::size_t placed = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<NodeClass> classes;
    for (std::size_t i = 0; i < 6; ++i) classes.push_back(random_class(random));
    const NodeInventory inventory = inventory_of(classes);
    PodFacts workflow;
    random_scheduling(random, workflow);
    const auto fields = std::make_shared<const WorkflowFields>(workflow);
    // Templates of one workflow, one after another, as a review places them.
    for (int each = 0; each < 8; ++each) {
      PodFacts pod;
      ContainerFacts gpu;
      gpu.name = "main";
      gpu.gpus = 1;
      gpu.gpu_resource = "nvidia.com/gpu";
      pod.app.push_back(gpu);
      random_scheduling(random, pod);
      pod.workflow = fields;
      const PodFacts written = written_out(pod);
      const Candidates layered = candidate_nodes(inventory, policy, pod, 1);
      const Candidates expected = candidate_nodes(inventory, policy, written, 1);
      ASSERT_EQ(layered.placeable, expected.placeable) << "round " << round << " template " << each;
      ASSERT_EQ(layered.nodes, expected.nodes) << "round " << round << " template " << each;
      ASSERT_EQ(layered.why_none, expected.why_none) << "round " << round << " template " << each;
      placed += expected.placeable.size();
    }
  }
  // Not every pod was kept off every class: the rounds weighed both answers.
  EXPECT_GT(placed, 500u);
}

}  // namespace
}  // namespace gpusizer::placement_test
