// The cloud GPU machine catalogue and each provider's allocatable
// arithmetic, recomputing examples the providers (or their own nodes)
// published: Karpenter's instance-type reference for every AWS row, GKE's
// plan-node-sizes example and real GKE nodes, AKS's node-resource-
// reservations page and real AKS nodes.
#include "gpusizer/sizing/instance_types.h"

#include <cstdint>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

namespace gpusizer::instance_types_test {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

const InstanceType& machine(std::string_view name) {
  const InstanceType* found = find_instance_type(name);
  EXPECT_NE(found, nullptr) << name;
  static const InstanceType kNone{};
  return found ? *found : kNone;
}

TEST(InstanceTypes, EveryRowIsAGpuMachineWithASourceAndAUniqueName) {
  std::set<std::string_view> names;
  std::set<Cloud> clouds;
  for (const InstanceType& each : instance_types()) {
    EXPECT_TRUE(names.insert(each.name).second) << each.name;
    clouds.insert(each.cloud);
    EXPECT_GT(each.vcpus, 0) << each.name;
    EXPECT_GT(each.gpus, 0) << each.name;
    EXPECT_GT(each.gpu_memory_mib, 0) << each.name;
    EXPECT_TRUE(each.source.starts_with("https://")) << each.name;
    // What a node of it leaves pods is less than the machine, and some.
    const Allocatable left = allocatable(each);
    EXPECT_GT(left.cpu_millis, 0) << each.name;
    EXPECT_LT(left.cpu_millis, each.vcpus * 1000) << each.name;
    EXPECT_GT(left.memory_bytes, 0) << each.name;
    EXPECT_LT(left.memory_bytes, each.memory_mib * kMiB) << each.name;
    EXPECT_GT(left.ephemeral_storage_bytes, 10 * kGiB) << each.name;
  }
  EXPECT_EQ(clouds.size(), 3U);
  EXPECT_EQ(find_instance_type("m5.large"), nullptr);
}

// AWS: cpu and memory allocatable of every AWS row as Karpenter's generated
// reference publishes it (aws/karpenter-provider-aws
// website/content/en/docs/reference/instance-types.md @ 1d927085; p3 from
// the v1.12 page), with the default AL2023 EC2NodeClass: 17Gi ephemeral.
TEST(InstanceTypes, AwsRecomputesKarpentersPublishedAllocatable) {
  const std::tuple<const char*, int64_t, int64_t> kPublished[] = {
      {"g4dn.xlarge", 3920, 14481},         {"g4dn.2xlarge", 7910, 29636},     {"g4dn.4xlarge", 15890, 59946},
      {"g4dn.8xlarge", 31850, 120248},      {"g4dn.12xlarge", 47810, 178933},  {"g4dn.16xlarge", 63770, 241490},
      {"g4dn.metal", 95690, 355262},        {"g5.xlarge", 3920, 14162},        {"g5.2xlarge", 7910, 29317},
      {"g5.4xlarge", 15890, 57691},         {"g5.8xlarge", 31850, 118312},     {"g5.12xlarge", 47810, 173400},
      {"g5.16xlarge", 63770, 239554},       {"g5.24xlarge", 95690, 355262},    {"g5.48xlarge", 191450, 723299},
      {"g6.xlarge", 3920, 14162},           {"g6.2xlarge", 7910, 29317},       {"g6.4xlarge", 15890, 57691},
      {"g6.8xlarge", 31850, 118312},        {"g6.12xlarge", 47810, 178933},    {"g6.16xlarge", 63770, 234021},
      {"g6.24xlarge", 95690, 355262},       {"g6.48xlarge", 191450, 718987},   {"g6e.xlarge", 3920, 29317},
      {"g6e.2xlarge", 7910, 59627},         {"g6e.4xlarge", 15890, 118312},    {"g6e.8xlarge", 31850, 239554},
      {"g6e.12xlarge", 47810, 360157},      {"g6e.16xlarge", 63770, 476504},   {"g6e.24xlarge", 95690, 721682},
      {"g6e.48xlarge", 191450, 1449132},    {"gr6.4xlarge", 15890, 118312},    {"gr6.8xlarge", 31850, 239554},
      {"p3.2xlarge", 7910, 56786},          {"p3.8xlarge", 31850, 228187},     {"p3.16xlarge", 63770, 459304},
      {"p3dn.24xlarge", 95690, 718987},     {"p4d.24xlarge", 95690, 1082712},  {"p4de.24xlarge", 95690, 1082712},
      {"p5.48xlarge", 191450, 1938410},     {"p5e.48xlarge", 191450, 1938410}, {"p5en.48xlarge", 191450, 1937332},
      {"p6-b200.48xlarge", 191450, 1937332}};
  std::size_t aws = 0;
  for (const InstanceType& each : instance_types()) aws += each.cloud == Cloud::kAws ? 1 : 0;
  // Every AWS row but p5.4xlarge (not on the page) is checked.
  EXPECT_EQ(std::size(kPublished), aws - 1);
  for (const auto& [name, cpu, memory_mib] : kPublished) {
    const Allocatable left = allocatable(machine(name));
    EXPECT_EQ(left.cpu_millis, cpu) << name;
    EXPECT_EQ(left.memory_bytes, memory_mib * kMiB) << name;
    EXPECT_EQ(left.ephemeral_storage_bytes, 17 * kGiB) << name;
  }
}

// Google: GKE's plan-node-sizes example, a 4-vCPU node on the default
// 100 GB boot disk: cpu 3920m, ephemeral-storage 47060071478 (its
// capacity 98831908Ki less 41 GiB and the kubelet's float32 10%). Memory:
// real GKE nodes, capacity less GKE's brackets on the machine's memory
// (edges at 4000 MiB steps) and the 100 MiB eviction threshold: an
// n2-standard-4 (16 GiB) reporting 16380004Ki has 13591652Ki allocatable,
// an e2-medium (4 GB) reporting 4025932Ki has 2880076Ki.
TEST(InstanceTypes, GoogleRecomputesGkesPublishedAllocatable) {
  EXPECT_EQ(4000 - gke_reserved_cpu_millis(4), 3920);
  const Allocatable g2_4 = allocatable(machine("g2-standard-4"));
  EXPECT_EQ(g2_4.cpu_millis, 3920);
  EXPECT_EQ(g2_4.ephemeral_storage_bytes, int64_t{47060071478});
  EXPECT_EQ(int64_t{16380004} - (gke_reserved_memory_mib(16384) + 100) * 1024, int64_t{13591652});
  EXPECT_EQ(int64_t{4025932} - (gke_reserved_memory_mib(4096) + 100) * 1024, int64_t{2880076});
  EXPECT_EQ(gke_reserved_memory_mib(1000), 255);
  // A real g2-standard-8 (docs/examples/l4-node.yaml) has 7910m and
  // 26955Mi: the catalogue's is the same cpu and never more memory (within
  // 2% under: Karpenter's 7.5% VM overhead is more than GKE's node loses).
  const Allocatable g2_8 = allocatable(machine("g2-standard-8"));
  EXPECT_EQ(g2_8.cpu_millis, 7910);
  EXPECT_LE(g2_8.memory_bytes, 26955 * kMiB);
  EXPECT_GT(g2_8.memory_bytes, 26955 * kMiB * 98 / 100);
  // Bundled local SSDs hold ephemeral storage: 16 of 375 GiB, 100 GiB
  // reserved.
  EXPECT_GT(allocatable(machine("a3-highgpu-8g")).ephemeral_storage_bytes, 4900 * kGiB);
}

// Azure: AKS's CPU table (node-resource-reservations: 60m for 1 core to
// 740m for 64), and real AKS nodes: an 8-vCPU 32 GiB node reporting
// 32863116Ki has 7820m and 28362636Ki (best-practices-app-cluster-
// reliability), a 2-vCPU 4 GiB F2s_v2 reporting 4025836Ki has 1900m and
// 2209260Ki (Azure/AKS#3525): the brackets on whole GiB and 750Mi.
TEST(InstanceTypes, AzureRecomputesAksPublishedReservations) {
  const std::pair<int64_t, int64_t> kTable[] = {{1, 60}, {2, 100}, {4, 140}, {8, 180}, {16, 260}, {32, 420}, {64, 740}};
  for (const auto& [cores, reserved] : kTable) EXPECT_EQ(aks_reserved_cpu_millis(cores), reserved) << cores;
  EXPECT_EQ(8000 - aks_reserved_cpu_millis(8), 7820);
  EXPECT_EQ(int64_t{32863116} - (aks_reserved_memory_mib(32) + 750) * 1024, int64_t{28362636});
  EXPECT_EQ(2000 - aks_reserved_cpu_millis(2), 1900);
  EXPECT_EQ(int64_t{4025836} - (aks_reserved_memory_mib(4) + 750) * 1024, int64_t{2209260});
  // The OS disk: 128 GB less 10%.
  EXPECT_EQ(allocatable(machine("Standard_NC24ads_A100_v4")).ephemeral_storage_bytes, int64_t{115200000000});
}

}  // namespace
}  // namespace gpusizer::instance_types_test
