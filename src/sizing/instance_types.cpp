// The built-in catalogue of cloud GPU machines (instance_types.h), one row
// per machine, each citing where its numbers come from
// (docs/research/instance-types.md has the full derivation):
//   AWS:    Karpenter's generated instance-type reference, itself made from
//           EC2 DescribeInstanceTypes (memory, GPU memory in MiB as the API
//           gives them; eni_pods as the EKS AMI's eni-max-pods); p3, gone
//           from the current page, from its v1.12 version.
//   Google: the accelerator-optimized machines page (memory "GB" is GiB in
//           the Compute Engine API); GPU memory as NVIDIA publishes it, in
//           GB of 10^9 bytes, written in MiB; bundled local SSDs as GKE's
//           autoscaler counts them (GoogleCloudPlatform/cluster-autoscaler).
//   Azure:  each series' size page; GPU memory in GB as published.
// Left out: fractional GPUs (Azure NV6/12/18ads_A10_v5, GCP g4-standard-6/
// 12/24: what a node reports for them is unpublished), retired sizes (Azure
// NCv3, retired 2025-09-30), Arm machines (GCP A4X).
#include "gpusizer/sizing/instance_types.h"

#include <algorithm>
#include <iterator>

namespace gpusizer {
namespace {

constexpr std::string_view kKarpenter = "https://karpenter.sh/docs/reference/instance-types/";
constexpr std::string_view kKarpenter112 = "https://karpenter.sh/v1.12/reference/instance-types/";
constexpr std::string_view kGoogleMachines = "https://cloud.google.com/compute/docs/accelerator-optimized-machines";

// cloud, name, vCPUs, memory MiB, GPUs, GPU label, GPU MiB, ENI pods, bundled local SSDs, source
constexpr InstanceType kInstanceTypes[] = {
    {Cloud::kAws, "g4dn.xlarge", 4, 16384, 1, "t4", 16384, 29, 0, kKarpenter},
    {Cloud::kAws, "g4dn.2xlarge", 8, 32768, 1, "t4", 16384, 29, 0, kKarpenter},
    {Cloud::kAws, "g4dn.4xlarge", 16, 65536, 1, "t4", 16384, 29, 0, kKarpenter},
    {Cloud::kAws, "g4dn.8xlarge", 32, 131072, 1, "t4", 16384, 58, 0, kKarpenter},
    {Cloud::kAws, "g4dn.12xlarge", 48, 196608, 4, "t4", 16384, 234, 0, kKarpenter},
    {Cloud::kAws, "g4dn.16xlarge", 64, 262144, 1, "t4", 16384, 58, 0, kKarpenter},
    {Cloud::kAws, "g4dn.metal", 96, 393216, 8, "t4", 16384, 737, 0, kKarpenter},
    {Cloud::kAws, "g5.xlarge", 4, 16384, 1, "a10g", 22888, 58, 0, kKarpenter},
    {Cloud::kAws, "g5.2xlarge", 8, 32768, 1, "a10g", 22888, 58, 0, kKarpenter},
    {Cloud::kAws, "g5.4xlarge", 16, 65536, 1, "a10g", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "g5.8xlarge", 32, 131072, 1, "a10g", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "g5.12xlarge", 48, 196608, 4, "a10g", 22888, 737, 0, kKarpenter},
    {Cloud::kAws, "g5.16xlarge", 64, 262144, 1, "a10g", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "g5.24xlarge", 96, 393216, 4, "a10g", 22888, 737, 0, kKarpenter},
    {Cloud::kAws, "g5.48xlarge", 192, 786432, 8, "a10g", 22888, 345, 0, kKarpenter},
    {Cloud::kAws, "g6.xlarge", 4, 16384, 1, "l4", 22888, 58, 0, kKarpenter},
    {Cloud::kAws, "g6.2xlarge", 8, 32768, 1, "l4", 22888, 58, 0, kKarpenter},
    {Cloud::kAws, "g6.4xlarge", 16, 65536, 1, "l4", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "g6.8xlarge", 32, 131072, 1, "l4", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "g6.12xlarge", 48, 196608, 4, "l4", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "g6.16xlarge", 64, 262144, 1, "l4", 22888, 737, 0, kKarpenter},
    {Cloud::kAws, "g6.24xlarge", 96, 393216, 4, "l4", 22888, 737, 0, kKarpenter},
    {Cloud::kAws, "g6.48xlarge", 192, 786432, 8, "l4", 22888, 737, 0, kKarpenter},
    {Cloud::kAws, "g6e.xlarge", 4, 32768, 1, "l40s", 45776, 58, 0, kKarpenter},
    {Cloud::kAws, "g6e.2xlarge", 8, 65536, 1, "l40s", 45776, 58, 0, kKarpenter},
    {Cloud::kAws, "g6e.4xlarge", 16, 131072, 1, "l40s", 45776, 234, 0, kKarpenter},
    {Cloud::kAws, "g6e.8xlarge", 32, 262144, 1, "l40s", 45776, 234, 0, kKarpenter},
    {Cloud::kAws, "g6e.12xlarge", 48, 393216, 4, "l40s", 45776, 292, 0, kKarpenter},
    {Cloud::kAws, "g6e.16xlarge", 64, 524288, 1, "l40s", 45776, 737, 0, kKarpenter},
    {Cloud::kAws, "g6e.24xlarge", 96, 786432, 4, "l40s", 45776, 492, 0, kKarpenter},
    {Cloud::kAws, "g6e.48xlarge", 192, 1572864, 8, "l40s", 45776, 492, 0, kKarpenter},
    {Cloud::kAws, "gr6.4xlarge", 16, 131072, 1, "l4", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "gr6.8xlarge", 32, 262144, 1, "l4", 22888, 234, 0, kKarpenter},
    {Cloud::kAws, "p3.2xlarge", 8, 62464, 1, "v100", 16384, 58, 0, kKarpenter112},
    {Cloud::kAws, "p3.8xlarge", 32, 249856, 4, "v100", 16384, 234, 0, kKarpenter112},
    {Cloud::kAws, "p3.16xlarge", 64, 499712, 8, "v100", 16384, 234, 0, kKarpenter112},
    {Cloud::kAws, "p3dn.24xlarge", 96, 786432, 8, "v100", 32768, 737, 0, kKarpenter},
    {Cloud::kAws, "p4d.24xlarge", 96, 1179648, 8, "a100", 40960, 737, 0, kKarpenter},
    {Cloud::kAws, "p4de.24xlarge", 96, 1179648, 8, "a100", 81920, 737, 0, kKarpenter},
    {Cloud::kAws, "p5.4xlarge", 16, 262144, 1, "h100", 81920, 118, 0, kKarpenter},
    {Cloud::kAws, "p5.48xlarge", 192, 2097152, 8, "h100", 81920, 100, 0, kKarpenter},
    {Cloud::kAws, "p5e.48xlarge", 192, 2097152, 8, "h200", 144384, 100, 0, kKarpenter},
    {Cloud::kAws, "p5en.48xlarge", 192, 2097152, 8, "h200", 144384, 198, 0, kKarpenter},
    {Cloud::kAws, "p6-b200.48xlarge", 192, 2097152, 8, "b200", 183359, 198, 0, kKarpenter},
    {Cloud::kGoogle, "g2-standard-4", 4, 16384, 1, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g2-standard-8", 8, 32768, 1, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g2-standard-12", 12, 49152, 1, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g2-standard-16", 16, 65536, 1, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g2-standard-24", 24, 98304, 2, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g2-standard-32", 32, 131072, 1, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g2-standard-48", 48, 196608, 4, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g2-standard-96", 96, 393216, 8, "nvidia-l4", 22888, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "a2-highgpu-1g", 12, 87040, 1, "nvidia-tesla-a100", 38146, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "a2-highgpu-2g", 24, 174080, 2, "nvidia-tesla-a100", 38146, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "a2-highgpu-4g", 48, 348160, 4, "nvidia-tesla-a100", 38146, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "a2-highgpu-8g", 96, 696320, 8, "nvidia-tesla-a100", 38146, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "a2-megagpu-16g", 96, 1392640, 16, "nvidia-tesla-a100", 38146, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "a2-ultragpu-1g", 12, 174080, 1, "nvidia-a100-80gb", 76293, 0, 1, kGoogleMachines},
    {Cloud::kGoogle, "a2-ultragpu-2g", 24, 348160, 2, "nvidia-a100-80gb", 76293, 0, 2, kGoogleMachines},
    {Cloud::kGoogle, "a2-ultragpu-4g", 48, 696320, 4, "nvidia-a100-80gb", 76293, 0, 4, kGoogleMachines},
    {Cloud::kGoogle, "a2-ultragpu-8g", 96, 1392640, 8, "nvidia-a100-80gb", 76293, 0, 8, kGoogleMachines},
    {Cloud::kGoogle, "a3-highgpu-1g", 26, 239616, 1, "nvidia-h100-80gb", 76293, 0, 2, kGoogleMachines},
    {Cloud::kGoogle, "a3-highgpu-2g", 52, 479232, 2, "nvidia-h100-80gb", 76293, 0, 4, kGoogleMachines},
    {Cloud::kGoogle, "a3-highgpu-4g", 104, 958464, 4, "nvidia-h100-80gb", 76293, 0, 8, kGoogleMachines},
    {Cloud::kGoogle, "a3-highgpu-8g", 208, 1916928, 8, "nvidia-h100-80gb", 76293, 0, 16, kGoogleMachines},
    {Cloud::kGoogle, "a3-megagpu-8g", 208, 1916928, 8, "nvidia-h100-mega-80gb", 76293, 0, 16, kGoogleMachines},
    {Cloud::kGoogle, "a3-edgegpu-8g", 208, 1916928, 8, "nvidia-h100-80gb", 76293, 0, 16, kGoogleMachines},
    {Cloud::kGoogle, "a3-ultragpu-8g", 224, 3022848, 8, "nvidia-h200-141gb", 134468, 0, 32, kGoogleMachines},
    {Cloud::kGoogle, "a4-highgpu-8g", 224, 4063232, 8, "nvidia-b200", 171661, 0, 32, kGoogleMachines},
    {Cloud::kGoogle, "g4-standard-48", 48, 184320, 1, "nvidia-rtx-pro-6000", 91552, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g4-standard-96", 96, 368640, 2, "nvidia-rtx-pro-6000", 91552, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g4-standard-192", 192, 737280, 4, "nvidia-rtx-pro-6000", 91552, 0, 0, kGoogleMachines},
    {Cloud::kGoogle, "g4-standard-384", 384, 1474560, 8, "nvidia-rtx-pro-6000", 91552, 0, 0, kGoogleMachines},
    {Cloud::kAzure, "Standard_NC4as_T4_v3", 4, 28672, 1, "T4", 15258, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncast4v3-series"},
    {Cloud::kAzure, "Standard_NC8as_T4_v3", 8, 57344, 1, "T4", 15258, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncast4v3-series"},
    {Cloud::kAzure, "Standard_NC16as_T4_v3", 16, 112640, 1, "T4", 15258, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncast4v3-series"},
    {Cloud::kAzure, "Standard_NC64as_T4_v3", 64, 450560, 4, "T4", 15258, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncast4v3-series"},
    {Cloud::kAzure, "Standard_NC24ads_A100_v4", 24, 225280, 1, "A100", 76293, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nca100v4-series"},
    {Cloud::kAzure, "Standard_NC48ads_A100_v4", 48, 450560, 2, "A100", 76293, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nca100v4-series"},
    {Cloud::kAzure, "Standard_NC96ads_A100_v4", 96, 901120, 4, "A100", 76293, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nca100v4-series"},
    {Cloud::kAzure, "Standard_NC40ads_H100_v5", 40, 327680, 1, "H100", 89645, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncadsh100v5-series"},
    {Cloud::kAzure, "Standard_NC80adis_H100_v5", 80, 655360, 2, "H100", 89645, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ncadsh100v5-series"},
    {Cloud::kAzure, "Standard_ND96asr_v4", 96, 921600, 8, "", 38146, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndasra100v4-series"},
    {Cloud::kAzure, "Standard_ND96amsr_A100_v4", 96, 1945600, 8, "A100", 76293, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndma100v4-series"},
    {Cloud::kAzure, "Standard_ND96isr_H100_v5", 96, 1945600, 8, "H100", 76293, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndh100v5-series"},
    {Cloud::kAzure, "Standard_ND96isr_H200_v5", 96, 1894400, 8, "H200", 134468, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-h200-v5-series"},
    {Cloud::kAzure, "Standard_NV36ads_A10_v5", 36, 450560, 1, "A10", 22888, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nvadsa10v5-series"},
    {Cloud::kAzure, "Standard_NV72ads_A10_v5", 72, 901120, 2, "A10", 22888, 0, 0,
     "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nvadsa10v5-series"},
};

}  // namespace

std::string_view to_string(Cloud cloud) {
  switch (cloud) {
    case Cloud::kAws: return "aws";
    case Cloud::kGoogle: return "google";
    case Cloud::kAzure: return "azure";
  }
  return "aws";
}

std::span<const InstanceType> instance_types() { return kInstanceTypes; }

const InstanceType* find_instance_type(std::string_view name) {
  const auto found = std::find_if(std::begin(kInstanceTypes), std::end(kInstanceTypes),
                                  [&](const InstanceType& each) { return each.name == name; });
  return found == std::end(kInstanceTypes) ? nullptr : &*found;
}

}  // namespace gpusizer
