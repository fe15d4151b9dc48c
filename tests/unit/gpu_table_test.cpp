// The built-in GPU table (gpuMemory.gpus): every label value a node really
// carries names the right GPU and its exposed memory, and no glob reaches a
// neighbour (L4 / L40 / L40S, A10 / A10G / A100, H200 / GH200, ...) or gives a
// MIG slice a whole GPU's memory. The label values and their sources are in
// docs/gpu-memory.md ("The GPU table").
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/sizing/gpu_memory_settings.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/sizing.h"

namespace gpusizer::gpu_table_test {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

struct Expected {
  const char* value;  // a label value (or a name, for the annotation gpu-sizer.io/gpu)
  const char* gpu;    // the entry it must find
  int64_t mib;        // that entry's memory
};

// nvidia.com/gpu.product values seen on nodes (GFD README, public node
// inventories, the shared corpus's fleet) or derived with GFD's sanitiser
// from the nvidia-smi name; amd.com/gpu.product-name values of the ROCm
// labeller; cloud.google.com/gke-accelerator values; the seed GPUs.
const std::vector<Expected> kLabelValues = {
    {"NVIDIA-L4", "L4", 23034},
    {"NVIDIA-L40", "L40", 46068},
    {"NVIDIA-L40S", "L40S", 46068},
    {"NVIDIA-A40", "A40", 46068},
    {"NVIDIA-RTX-A6000", "RTX-A6000", 49140},
    {"NVIDIA-RTX-6000-Ada-Generation", "RTX-6000-Ada", 49140},
    {"Tesla-T4", "T4", 15360},
    {"Tesla-V100-SXM2-16GB", "V100-16GB", 16384},
    {"Tesla-V100-PCIE-16GB", "V100-16GB", 16384},
    {"Tesla-V100-SXM2-32GB", "V100-32GB", 32768},
    {"Tesla-V100-PCIE-32GB", "V100-32GB", 32768},
    {"Tesla-V100S-PCIE-32GB", "V100-32GB", 32768},
    {"NVIDIA-A10", "A10", 23028},
    {"NVIDIA-A10G", "A10G", 23028},
    {"NVIDIA-A100-SXM4-40GB", "A100-40GB", 40960},
    {"A100-SXM4-40GB", "A100-40GB", 40960},  // drivers before the "NVIDIA " prefix
    {"NVIDIA-A100-PCIE-40GB", "A100-40GB", 40960},
    {"A100-PCIE-40GB", "A100-40GB", 40960},
    {"NVIDIA-A100-SXM4-80GB", "A100-80GB", 81920},
    {"NVIDIA-A100-80GB-PCIe", "A100-80GB", 81920},
    {"NVIDIA-H100-80GB-HBM3", "H100-80GB", 81559},
    {"NVIDIA-H100-PCIe", "H100-PCIe", 81559},
    {"NVIDIA-H100-NVL", "H100-NVL", 95830},
    {"NVIDIA-H200", "H200", 143771},
    {"NVIDIA-H200-NVL", "H200-NVL", 143771},
    {"NVIDIA-GH200-480GB", "GH200-480GB", 97871},
    {"NVIDIA-GH200-144G-HBM3e", "GH200-144GB", 147456},
    {"NVIDIA-B200", "B200", 183359},
    {"NVIDIA-GeForce-RTX-4070", "RTX-4070", 12288},
    {"NVIDIA-GeForce-RTX-4060-Ti", "RTX-4060-Ti", 16384},
    {"NVIDIA-GeForce-RTX-4080", "RTX-4080", 16384},
    {"NVIDIA-GeForce-RTX-5060-Ti", "RTX-5060-Ti", 16384},
    {"Quadro-RTX-6000", "Quadro-RTX-6000", 24576},
    {"NVIDIA-GeForce-RTX-4090", "RTX-4090", 24564},
    {"NVIDIA-GeForce-RTX-5090", "RTX-5090", 32607},
    {"AMD_Instinct_MI210", "MI210", 65536},
    {"AMD_Instinct_MI250X", "MI250X", 65520},
    {"AMD_Instinct_MI300X_OAM", "MI300X", 196288},
    {"AMD_Instinct_MI325_OAM", "MI325X", 262144},
    {"nvidia-tesla-t4", "T4", 15360},
    {"nvidia-tesla-v100", "V100-16GB", 16384},
    {"nvidia-l4", "L4", 23034},
    {"nvidia-tesla-a100", "A100-40GB", 40960},
    {"nvidia-a100-80gb", "A100-80GB", 81920},
    {"nvidia-h100-80gb", "H100-80GB", 81559},
    {"nvidia-h100-mega-80gb", "H100-80GB", 81559},
    {"nvidia-h200-141gb", "H200", 143771},
    {"nvidia-b200", "B200", 183359},
};

// Parts whose names share a prefix, a suffix or a digit run, with different
// memory: each value finds its own entry, or none.
const std::vector<std::vector<const char*>> kNeighbours = {
    {"NVIDIA-L4", "NVIDIA-L40", "NVIDIA-L40S", "NVIDIA-L40G"},
    {"NVIDIA-A10", "NVIDIA-A10G", "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB"},
    {"NVIDIA-A100-PCIE-40GB", "NVIDIA-A100-80GB-PCIe"},
    {"NVIDIA-A40", "NVIDIA-RTX-A4000", "NVIDIA-RTX-A400", "NVIDIA-RTX-A4500"},
    {"NVIDIA-H200", "NVIDIA-H200-NVL", "NVIDIA-GH200-480GB", "NVIDIA-GH200-144G-HBM3e"},
    {"NVIDIA-B200", "NVIDIA-GB200"},
    {"NVIDIA-H100-PCIe", "NVIDIA-H100-NVL", "NVIDIA-H100-80GB-HBM3"},
    {"Tesla-V100-SXM2-16GB", "Tesla-V100-SXM2-32GB"},
    {"Tesla-V100-PCIE-16GB", "Tesla-V100-PCIE-32GB"},
    {"NVIDIA-RTX-6000-Ada-Generation", "Quadro-RTX-6000", "NVIDIA-RTX-A6000",
     "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"},
    {"AMD_Instinct_MI300X_OAM", "AMD_Instinct_MI300A", "AMD_Instinct_MI325_OAM"},
};

// Parts the table does not hold, next to ones it does: no entry.
const std::vector<const char*> kNotInTheTable = {
    "NVIDIA-L40G",      "NVIDIA-RTX-A4000", "NVIDIA-RTX-A400",
    "NVIDIA-RTX-A4500", "NVIDIA-GB200",     "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
    "NVIDIA-H800",      "NVIDIA-H20",       "AMD_Instinct_MI300A",
};

// MIG slices as GFD's single strategy labels them: the slice's memory, not
// the GPU's (the rule reads them as unknown; the table must agree).
const std::vector<const char*> kMigSlices = {
    "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",  "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb", "A100-SXM4-40GB-MIG-1g.5gb",
    "NVIDIA-A100-80GB-PCIe-MIG-1g.10gb", "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
    "NVIDIA-H200-MIG-1g.18gb",           "NVIDIA-B200-MIG-1g.23gb",           "NVIDIA-GH200-480GB-MIG-1g.12gb",
};

// The entries whose globs match `value` (find_gpu returns the first).
std::vector<std::string> glob_entries(const GpuMemoryPolicy& table, const std::string& value) {
  std::vector<std::string> names;
  for (const GpuModel& gpu : table.gpus) {
    for (const std::string& pattern : gpu.match) {
      if (glob_match(pattern, value)) {
        names.push_back(gpu.name);
        break;
      }
    }
  }
  return names;
}

// What is wrong with a table, one line each: a real value found by more
// than one entry's globs or by the wrong one, neighbours sharing an entry,
// a part not in the table or a MIG slice given an entry.
std::vector<std::string> table_faults(const GpuMemoryPolicy& table) {
  std::vector<std::string> faults;
  for (const Expected& expected : kLabelValues) {
    const std::vector<std::string> found = glob_entries(table, expected.value);
    if (found.size() > 1 || (found.size() == 1 && found[0] != expected.gpu)) {
      faults.push_back(std::string(expected.value) + " matches " + std::to_string(found.size()) + " entries");
    }
  }
  for (const auto& group : kNeighbours) {
    std::set<const GpuModel*> seen;
    for (const char* value : group) {
      const GpuModel* gpu = table.find_gpu(value);
      if (gpu && !seen.insert(gpu).second) faults.push_back(std::string(value) + " shares " + gpu->name);
    }
  }
  for (const char* value : kNotInTheTable) {
    if (const GpuModel* gpu = table.find_gpu(value)) faults.push_back(std::string(value) + " finds " + gpu->name);
  }
  for (const char* value : kMigSlices) {
    if (const GpuModel* gpu = table.find_gpu(value)) faults.push_back(std::string(value) + " finds " + gpu->name);
  }
  return faults;
}

TEST(GpuTable, EveryRealLabelValueFindsItsGpuAndExposedMemory) {
  const GpuMemoryPolicy& table = default_policy().rule_settings.get<GpuMemoryPolicy>();
  for (const Expected& expected : kLabelValues) {
    const GpuModel* gpu = table.find_gpu(expected.value);
    ASSERT_NE(gpu, nullptr) << expected.value;
    EXPECT_EQ(gpu->name, expected.gpu) << expected.value;
    EXPECT_EQ(gpu->memory, Quantity::from_bytes(expected.mib * kMiB)) << expected.value;
    EXPECT_EQ(glob_entries(table, expected.value).size(), 1u) << expected.value << " matches more than one entry";
  }
}

TEST(GpuTable, ATimeSlicedGpuIsTheWholeGpu) {
  // GFD appends -SHARED when time-slicing or MPS shares a GPU without
  // renaming the resource; the GPU's memory is the bound of every replica.
  const GpuMemoryPolicy& table = default_policy().rule_settings.get<GpuMemoryPolicy>();
  for (const Expected& expected : kLabelValues) {
    const std::string value = expected.value;
    if (!value.starts_with("NVIDIA-") && !value.starts_with("Tesla-")) continue;
    if (value.find("GeForce") != std::string::npos) continue;  // not shared in clusters
    const GpuModel* gpu = table.find_gpu(value + "-SHARED");
    ASSERT_NE(gpu, nullptr) << value << "-SHARED";
    EXPECT_EQ(gpu->name, expected.gpu) << value << "-SHARED";
  }
}

TEST(GpuTable, EveryEntryIsFoundByItsName) {
  const GpuMemoryPolicy& table = default_policy().rule_settings.get<GpuMemoryPolicy>();
  for (const GpuModel& gpu : table.gpus) EXPECT_EQ(table.find_gpu(gpu.name), &gpu) << gpu.name;
}

TEST(GpuTable, NeighboursFindDifferentEntriesAndMigSlicesNone) {
  const std::vector<std::string> faults = table_faults(default_policy().rule_settings.get<GpuMemoryPolicy>());
  EXPECT_TRUE(faults.empty()) << ::testing::PrintToString(faults);
}

// The checks above fail when a glob is loosened: each of these is a glob a
// person might write, and each gives some real value the wrong memory.
TEST(GpuTable, ASloppyGlobIsCaught) {
  const struct {
    const char* gpu;
    const char* pattern;
  } sloppy[] = {{"L4", "*L4*"},
                {"A10", "*A10*"},
                {"A40", "*A40*"},
                {"H200", "*H200*"},
                {"B200", "*B200*"},
                {"A100-40GB", "*A100*40GB*"},
                {"H100-NVL", "*H100*"},
                {"V100-16GB", "*V100*"},
                {"RTX-A6000", "*6000*"},
                {"L40", "*-L40*"},
                {"A100-80GB", "*A100-SXM4-80GB*"}};
  for (const auto& change : sloppy) {
    Policy policy = default_policy();
    bool changed = false;
    for (GpuModel& gpu : policy.rule_settings.edit<GpuMemoryPolicy>().gpus) {
      if (gpu.name == change.gpu) {
        gpu.match.insert(gpu.match.begin(), change.pattern);
        changed = true;
      }
    }
    ASSERT_TRUE(changed) << change.gpu;
    EXPECT_FALSE(table_faults(policy.rule_settings.get<GpuMemoryPolicy>()).empty())
        << change.pattern << " was not caught";
  }
}

}  // namespace
}  // namespace gpusizer::gpu_table_test
