// Node fit (design issue-8 sections 3.D and 5): a sized pod is checked
// against the node shapes of its pool, and a pod no node holds is named with
// the largest node and what is short.

#include "gpusizer/sizing/node_fit.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/candidates.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy.h"
#include "support/pod_facts_support.h"
#include "support/text_support.h"

namespace gpusizer::node_fit_test {
namespace {

using StringMap = std::map<std::string, std::string, std::less<>>;

constexpr int64_t kMi = int64_t{1} << 20;
constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kTi = int64_t{1} << 40;

constexpr const char* kA100 = "NVIDIA-A100-SXM4-80GB";
constexpr const char* kH100 = "NVIDIA-H100-80GB-HBM3";

// Two pools. Their largest shapes differ so each test can tell which pool
// was checked: dgx-a100 has more cpu, dgx-h100 more memory.
const NodeFitPolicy& two_pools() {
  static const Policy policy = [] {
    auto parsed = parse_policy(
        "nodeFit:\n"
        "  pools:\n"
        "    - name: a100\n"
        "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "      nodes:\n"
        "        - {name: a100-half, gpus: 4, cpu: \"126\", memory: 980Gi, ephemeralStorage: 14Ti}\n"
        "        - {name: dgx-a100, gpus: 8, cpu: \"252\", memory: 1960Gi, ephemeralStorage: 28Ti}\n"
        "    - name: h100\n"
        "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
        "      nodes:\n"
        "        - {name: dgx-h100, gpus: 8, cpu: \"224\", memory: 2000Gi, ephemeralStorage: 28Ti}\n",
        "test");
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    return parsed.ok() ? parsed.value() : Policy{};
  }();
  return policy.rule_settings.get<NodeFitPolicy>();
}

PodRequest pod(int64_t gpus, int64_t cpu_milli, int64_t memory_bytes, int64_t storage_bytes = 300 * kGi) {
  return PodRequest{gpus, Quantity::from_milli(cpu_milli), Quantity::from_bytes(memory_bytes),
                    Quantity::from_bytes(storage_bytes)};
}

// Exactly dgx-a100's allocatable.
PodRequest dgx_a100() { return pod(8, 252000, 1960 * kGi, 28 * kTi); }

StringMap in_pool(const std::string& name) { return {{"osmo.pool", name}}; }

// Node fit as a decision runs it on a policy with these pools: the pod's
// candidates (candidates.h), then the check.
struct PoolFit : NodeFit {
  const NodePool* pool = nullptr;              // the pod's pool, in the caller's NodeFitPolicy
  std::shared_ptr<const NodeInventory> nodes;  // what largest points into
};

PoolFit check_node_fit(const NodeFitPolicy& pools, const PodRequest& request, const StringMap& pod_labels,
                       const StringMap& node_selector) {
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>() = pools;
  PoolFit out;
  out.nodes = pool_inventory(policy);
  PodFacts pod;
  pod.selection.labels = pod_labels;
  pod.node_selector = node_selector;
  ContainerFacts trainer;
  trainer.gpus = request.gpus;
  trainer.gpu_resource = "nvidia.com/gpu";
  pod.app.push_back(trainer);
  const Candidates candidates = candidate_nodes(*out.nodes, policy, pod, request.gpus);
  static_cast<NodeFit&>(out) = check_node_fit(request, candidates);
  for (const NodePool& pool : pools.pools) {
    if (candidates.pool && pool.name == candidates.pool->name) out.pool = &pool;
  }
  return out;
}

using testing::contains;

TEST(NodeFit, PodEqualToTheLargestNodeFits) {
  const PoolFit fit = check_node_fit(two_pools(), dgx_a100(), in_pool("a100"), {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kFits);
  ASSERT_NE(fit.pool, nullptr);
  EXPECT_EQ(fit.pool->name, "a100");
  ASSERT_NE(fit.largest, nullptr);
  EXPECT_EQ(fit.largest->shape, "dgx-a100");
  EXPECT_EQ(fit.message, "");

  PodRequest under = dgx_a100();
  under.cpu = Quantity::from_milli(251999);
  EXPECT_EQ(check_node_fit(two_pools(), under, in_pool("a100"), {}).verdict, NodeFit::Verdict::kFits);
}

TEST(NodeFit, OneMilliCpuOverFitsNoNodeAndNamesTheLargest) {
  PodRequest over = dgx_a100();
  over.cpu = Quantity::from_milli(252001);
  const PoolFit fit = check_node_fit(two_pools(), over, in_pool("a100"), {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kNoFit);
  ASSERT_NE(fit.largest, nullptr);
  EXPECT_EQ(fit.largest->shape, "dgx-a100");
  EXPECT_EQ(
      fit.brief,
      "node fit: 8 GPUs, cpu 252001m, memory 1960Gi fit no node of pool \"a100\"; largest \"dgx-a100\" has cpu 252");
  EXPECT_EQ(fit.message,
            "node fit: 8 GPUs, cpu 252001m, memory 1960Gi, ephemeral-storage 28Ti fit no node of pool \"a100\"; "
            "the largest, \"dgx-a100\", has 8 GPUs, cpu 252, memory 1960Gi, ephemeral-storage 28Ti "
            "(short: cpu 252001m > 252); run fewer GPUs per pod (cpu and memory follow the GPU count) or choose a pool "
            "with larger nodes");
}

TEST(NodeFit, KnownNodesAreNamedAsTheNodesItMayRunOn) {
  // The same shapes as the cluster's nodes (or check --nodes) rather than
  // as pools: the message names no pool.
  Policy policy = default_policy();
  policy.rule_settings.edit<NodeFitPolicy>() = two_pools();
  auto nodes = std::make_shared<NodeInventory>(*pool_inventory(policy));
  nodes->source = InventorySource::kCluster;
  nodes->id = NodeInventory::next_id();
  PodFacts facts;
  ContainerFacts trainer;
  trainer.gpus = 16;
  trainer.gpu_resource = "nvidia.com/gpu";
  facts.app.push_back(trainer);
  const NodeFit fit = check_node_fit(pod(16, 128000, 768 * kGi), candidate_nodes(*nodes, policy, facts, 16));
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kNoFit);
  EXPECT_EQ(fit.brief,
            "node fit: 16 GPUs, cpu 128, memory 768Gi fit none of the nodes it may run on; largest "
            "\"dgx-h100\" has 8 GPUs");
}

TEST(NodeFit, OneMebibyteOverInMemoryOrStorageFitsNoNode) {
  PodRequest memory = dgx_a100();
  memory.memory = Quantity::from_bytes(1960 * kGi + kMi);
  const PoolFit fit = check_node_fit(two_pools(), memory, in_pool("a100"), {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kNoFit);
  EXPECT_TRUE(contains(fit.message, "(short: memory 2007041Mi > 1960Gi)")) << fit.message;

  PodRequest storage = dgx_a100();
  storage.ephemeral_storage = Quantity::from_bytes(28 * kTi + kMi);
  const PoolFit storage_fit = check_node_fit(two_pools(), storage, in_pool("a100"), {});
  EXPECT_EQ(storage_fit.verdict, NodeFit::Verdict::kNoFit);
  EXPECT_TRUE(contains(storage_fit.message, "(short: ephemeral-storage 29360129Mi > 28Ti)")) << storage_fit.message;

  // Storage is not among the GPUs, cpu and memory the brief usually shows:
  // it shows what is short.
  storage.ephemeral_storage = Quantity::from_bytes(30 * kTi);
  EXPECT_EQ(
      check_node_fit(two_pools(), storage, in_pool("a100"), {}).brief,
      "node fit: ephemeral-storage 30Ti fit no node of pool \"a100\"; largest \"dgx-a100\" has ephemeral-storage 28Ti");
}

TEST(NodeFit, OneGpuOverFitsNoNode) {
  PodRequest over = dgx_a100();
  over.gpus = 9;
  const PoolFit fit = check_node_fit(two_pools(), over, in_pool("a100"), {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kNoFit);
  EXPECT_TRUE(contains(fit.message, "(short: GPUs 9 > 8); split the job into pods of at most 8 GPUs")) << fit.message;
  EXPECT_FALSE(contains(fit.message, "run fewer GPUs per pod")) << fit.message;
}

TEST(NodeFit, DesignExampleSixteenGpusOnEightGpuNodes) {
  const PoolFit fit = check_node_fit(two_pools(), pod(16, 128000, 768 * kGi), in_pool("a100"), {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kNoFit);
  EXPECT_EQ(fit.brief,
            "node fit: 16 GPUs, cpu 128, memory 768Gi fit no node of pool \"a100\"; largest \"dgx-a100\" has 8 GPUs");
  EXPECT_LT(fit.brief.size(), 110u);
}

TEST(NodeFit, PoolFromTheOsmoPoolLabel) {
  // Fits dgx-h100 (2000Gi) but not dgx-a100 (1960Gi).
  const PodRequest request = pod(8, 200000, 1990 * kGi);
  const PoolFit a100 = check_node_fit(two_pools(), request, in_pool("a100"), {});
  EXPECT_EQ(a100.verdict, NodeFit::Verdict::kNoFit);
  ASSERT_NE(a100.pool, nullptr);
  EXPECT_EQ(a100.pool->name, "a100");

  const PoolFit h100 = check_node_fit(two_pools(), request, in_pool("h100"), {});
  EXPECT_EQ(h100.verdict, NodeFit::Verdict::kFits);
  ASSERT_NE(h100.pool, nullptr);
  EXPECT_EQ(h100.pool->name, "h100");

  // The label wins over a nodeSelector naming the other pool.
  const PoolFit both = check_node_fit(two_pools(), request, in_pool("a100"), {{"nvidia.com/gpu.product", kH100}});
  ASSERT_NE(both.pool, nullptr);
  EXPECT_EQ(both.pool->name, "a100");
}

TEST(NodeFit, PoolFromANodeSelectorSubset) {
  const PodRequest request = pod(8, 200000, 1990 * kGi);
  // The pod's selector holds the pool's and more.
  const PoolFit h100 = check_node_fit(two_pools(), request, {},
                                      {{"nvidia.com/gpu.product", kH100}, {"topology.kubernetes.io/zone", "b"}});
  EXPECT_EQ(h100.verdict, NodeFit::Verdict::kFits);
  ASSERT_NE(h100.pool, nullptr);
  EXPECT_EQ(h100.pool->name, "h100");

  const PoolFit a100 = check_node_fit(two_pools(), request, {}, {{"nvidia.com/gpu.product", kA100}});
  EXPECT_EQ(a100.verdict, NodeFit::Verdict::kNoFit);
  ASSERT_NE(a100.pool, nullptr);
  EXPECT_EQ(a100.pool->name, "a100");
  EXPECT_TRUE(contains(a100.brief, "of pool \"a100\"")) << a100.brief;
}

TEST(NodeFit, UnmatchedPodIsCheckedAgainstEveryPoolItDoesNotRuleOut) {
  // No label, a label naming no pool, a selector on keys no pool names:
  // every shape counts, so a pod only dgx-h100 holds fits.
  const PodRequest only_h100 = pod(8, 200000, 1990 * kGi);
  for (const StringMap& labels : {StringMap{}, in_pool("v100")}) {
    const PoolFit fit = check_node_fit(two_pools(), only_h100, labels, {{"topology.kubernetes.io/zone", "b"}});
    EXPECT_EQ(fit.verdict, NodeFit::Verdict::kFits);
    EXPECT_EQ(fit.pool, nullptr);
  }
  // A selector naming another value of a pool's key rules the pool out: an
  // L4 pod is no A100 or H100 pool's, and no pool may run it.
  const PoolFit l4 = check_node_fit(two_pools(), only_h100, {}, {{"nvidia.com/gpu.product", "NVIDIA-L4"}});
  EXPECT_EQ(l4.verdict, NodeFit::Verdict::kNoCandidates);
  EXPECT_EQ(l4.pool, nullptr);

  // Too much cpu for dgx-h100, too much memory for dgx-a100: no node. The
  // largest is dgx-h100 (equal GPUs, more memory), named with its pool.
  const PoolFit none = check_node_fit(two_pools(), pod(8, 240000, 1990 * kGi), {}, {});
  EXPECT_EQ(none.verdict, NodeFit::Verdict::kNoFit);
  EXPECT_EQ(none.pool, nullptr);
  ASSERT_NE(none.largest, nullptr);
  EXPECT_EQ(none.largest->shape, "dgx-h100");
  EXPECT_EQ(none.brief,
            "node fit: 8 GPUs, cpu 240, memory 1990Gi fit no node of any pool; largest \"dgx-h100\" has cpu 224");
  EXPECT_TRUE(contains(none.message, "the largest, \"dgx-h100\" (pool \"h100\"), has")) << none.message;
}

TEST(NodeFit, LargestIsMostGpusThenMemoryThenCpu) {
  NodeFitPolicy policy;
  policy.pools.push_back(NodePool{
      "mixed",
      {},
      "",
      {
          NodeShape{"many-gpus-small", 8, Quantity::from_milli(200000), Quantity::from_bytes(1000 * kGi), {}},
          NodeShape{"few-gpus-huge", 4, Quantity::from_milli(900000), Quantity::from_bytes(4000 * kGi), {}},
          NodeShape{"many-gpus-more-cpu", 8, Quantity::from_milli(250000), Quantity::from_bytes(1000 * kGi), {}},
          NodeShape{"many-gpus-less-cpu", 8, Quantity::from_milli(100000), Quantity::from_bytes(1000 * kGi), {}},
      }});
  const PoolFit fit = check_node_fit(policy, pod(16, 1000, kGi, 0), {}, {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kNoFit);
  ASSERT_NE(fit.largest, nullptr);
  EXPECT_EQ(fit.largest->shape, "many-gpus-more-cpu");

  policy.pools[0].nodes[1].gpus = 8;  // now the most memory among equal GPUs
  EXPECT_EQ(check_node_fit(policy, pod(16, 1000, kGi, 0), {}, {}).largest->shape, "few-gpus-huge");
}

TEST(NodeFit, BriefStaysUnder110Characters) {
  // Too long with the pod's GPUs, cpu and memory: only what is short.
  NodeFitPolicy named;
  named.pool_label = "osmo.pool";
  named.pools.push_back(
      NodePool{"a100-east-production",
               {},
               "",
               {NodeShape{"dgx-a100-80gb", 8, Quantity::from_milli(252000), Quantity::from_bytes(1960 * kGi), {}}}});
  const PoolFit cpu = check_node_fit(named, pod(8, 252001, 1959 * kGi + kMi, 0), in_pool("a100-east-production"), {});
  EXPECT_EQ(
      cpu.brief,
      "node fit: cpu 252001m fit no node of pool \"a100-east-production\"; largest \"dgx-a100-80gb\" has cpu 252");

  // Names too long for any form: cut in the brief; the message quotes
  // them as every message does, their first 64 bytes and their length.
  NodeFitPolicy policy;
  const std::string long_name(80, 'n');
  policy.pools.push_back(
      NodePool{"p", {}, "", {NodeShape{long_name, 8, Quantity::from_milli(1000), Quantity::from_bytes(kGi), {}}}});
  const PoolFit fit = check_node_fit(policy, pod(16, 2000, 2 * kGi, 0), {}, {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kNoFit);
  EXPECT_LT(fit.brief.size(), 110u);
  EXPECT_EQ(fit.brief.substr(fit.brief.size() - 3), "...");
  EXPECT_TRUE(contains(fit.message, "\"" + long_name.substr(0, 64) + "\"... (80 bytes) (pool \"p\"), has 8 GPUs"))
      << fit.message;
}

TEST(NodeFit, NoPoolsNoCheck) {
  // The default policy lists no pools: even an impossible pod is not checked.
  const PoolFit fit = check_node_fit(default_policy().rule_settings.get<NodeFitPolicy>(),
                                     pod(1000, 1000000000, 1000 * kTi), in_pool("a100"), {});
  EXPECT_EQ(fit.verdict, NodeFit::Verdict::kOff);
  EXPECT_EQ(fit.pool, nullptr);
  EXPECT_EQ(fit.largest, nullptr);
  EXPECT_EQ(fit.message, "");
  EXPECT_EQ(fit.brief, "");
}

// The scheduler's sum: an init container runs beside the sidecars listed
// before it (Kubernetes resourcehelper.PodRequests), not those after it.
TEST(PodRequest, AnInitContainerIsSummedWithTheSidecarsListedBeforeIt) {
  PodFacts facts = testing::pod_of({testing::gpu_container("trainer", 1, "1", "33Gi")});
  ContainerFacts fetch = testing::gpu_container("fetch", 0, "1", "40Gi");
  fetch.init_index = 0;
  facts.init.push_back(fetch);
  ContainerFacts proxy = testing::gpu_container("proxy", 0, "1", "30Gi");
  proxy.init_index = 1;
  proxy.sidecar = true;
  facts.app.push_back(proxy);
  const auto as_written = [](const ContainerFacts& c, std::string_view resource) {
    return c.effective_request(resource);
  };
  // max(fetch 40Gi alone, trainer 33Gi + proxy 30Gi)
  EXPECT_EQ(pod_request(facts, 1, as_written).memory, Quantity::from_bytes(63 * kGi));
  // An init container after the sidecar runs beside it.
  ContainerFacts warm = testing::gpu_container("warm", 0, "1", "40Gi");
  warm.init_index = 2;
  facts.init.push_back(warm);
  EXPECT_EQ(pod_request(facts, 1, as_written).memory, Quantity::from_bytes(70 * kGi));
}

// Each init container finds the sum of the sidecars before it without
// asking for each of them again (issue 25: a pod of thousands of both cost
// init containers x sidecars requests, each a walk of the pod's shortfalls).
TEST(PodRequest, AsksForEachContainersRequestsOnce) {
  PodFacts facts = testing::pod_of({testing::gpu_container("trainer", 1, "1", "1Gi")});
  constexpr int kPairs = 500;
  for (int i = 0; i < kPairs; ++i) {
    ContainerFacts sidecar = testing::gpu_container("proxy-" + std::to_string(i), 0, "1", "1Gi");
    sidecar.sidecar = true;
    sidecar.init_index = 2 * i;
    facts.app.push_back(sidecar);
    ContainerFacts init = testing::gpu_container("fetch-" + std::to_string(i), 0, "2", "1Gi");
    init.init_index = 2 * i + 1;
    facts.init.push_back(init);
  }
  std::size_t asked = 0;
  const PodRequest request = pod_request(facts, 1, [&](const ContainerFacts& c, std::string_view resource) {
    ++asked;
    return c.effective_request(resource);
  });
  // Three resources of each app container and sidecar, again of each
  // sidecar for the sums, and of each init container.
  EXPECT_EQ(asked, 3 * (2 * facts.app.size() - 1 + facts.init.size()));
  // The last init container runs beside all 500 sidecars: 500 + 2 cpu,
  // more than the app containers' 501.
  EXPECT_EQ(request.cpu, Quantity::from_milli(502000));
  EXPECT_EQ(request.memory, Quantity::from_bytes(501 * kGi));
}

TEST(NodeFit, AResourceTheNodeDoesNotReportHoldsNone) {
  NodeClass bare;
  bare.shape = "bare";
  bare.extended = {{"nvidia.com/gpu", 8}};
  bare.cpu = Quantity::from_milli(64000);
  bare.memory = Quantity::from_bytes(512 * kGi);
  EXPECT_FALSE(holds(bare, pod(1, 1000, kGi, kGi), "nvidia.com/gpu"));
  EXPECT_TRUE(holds(bare, pod(1, 1000, kGi, 0), "nvidia.com/gpu"));
}

}  // namespace
}  // namespace gpusizer::node_fit_test
