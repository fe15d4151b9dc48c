#include "gpusizer/sizing/accelerators.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// KEP-5004: every DeviceClass is usable as this extended resource.
constexpr std::string_view kDraExtendedPrefix = "deviceclass.resource.kubernetes.io/";

bool names_gpu(std::string_view resource) {
  const std::size_t slash = resource.find('/');
  return slash != std::string_view::npos && lowercase(resource.substr(slash + 1)).find("gpu") != std::string::npos;
}

// A device of a DRA class no accelerators entry lists: by the class's
// extended resource name, or in a claim.
const AcceleratorClass* unknown_dra_device() {
  static const AcceleratorClass kUnknown{
      "", "", "", AcceleratorForm::kUnknown, AcceleratorSizing::kWarn, "", "device of a DRA class"};
  return &kUnknown;
}

}  // namespace

const AcceleratorClass* gpu_partition() {
  static const AcceleratorClass kPartition{
      "", "", "", AcceleratorForm::kMigSlice, AcceleratorSizing::kWarn, "", "GPU partition"};
  return &kPartition;
}

std::string_view to_string(AcceleratorForm form) {
  switch (form) {
    case AcceleratorForm::kDevice: return "device";
    case AcceleratorForm::kMigSlice: return "mig";
    case AcceleratorForm::kShared: return "shared";
    case AcceleratorForm::kFraction: return "fraction";
    case AcceleratorForm::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string_view to_string(AcceleratorSizing sizing) {
  switch (sizing) {
    case AcceleratorSizing::kGpus: return "gpus";
    case AcceleratorSizing::kWarn: return "warn";
    case AcceleratorSizing::kDetail: return "detail";
  }
  return "warn";
}

bool AcceleratorClass::matches(std::string_view name) const {
  const std::string_view pattern = resource.empty() ? std::string_view(device_class) : std::string_view(resource);
  // A '*' anywhere matches any run of characters: a prefix
  // ("huawei.com/Ascend*") or a name around a model ("huawei.com/Ascend*-memory").
  return !pattern.empty() && glob_match(pattern, name);
}

const AcceleratorClass* unknown_accelerator_class(std::string_view resource) {
  static const AcceleratorClass kNamedGpu{"", "",      "", AcceleratorForm::kUnknown, AcceleratorSizing::kWarn,
                                          "", "device"};
  if (!implicit_device_class(resource).empty()) return unknown_dra_device();
  return names_gpu(resource) ? &kNamedGpu : nullptr;
}

std::string_view implicit_device_class(std::string_view resource) {
  return resource.substr(0, kDraExtendedPrefix.size()) == kDraExtendedPrefix
             ? resource.substr(kDraExtendedPrefix.size())
             : std::string_view();
}

const AcceleratorClass* unknown_device_class(std::string_view device_class) {
  // A word of the name that says accelerator: npu.rebellions.ai, a
  // cluster's own "tpu-v5e"; gpu anywhere in it ("a100gpu-pool").
  static constexpr std::array<std::string_view, 5> kWords = {"tpu", "npu", "xpu", "neuron", "accelerator"};
  const std::string name = lowercase(device_class);
  bool said = name.find("gpu") != std::string::npos;
  for (std::size_t at = 0; !said && at <= name.size();) {
    const std::size_t end = std::min(name.find_first_of(".-", at), name.size());
    said = std::find(kWords.begin(), kWords.end(), std::string_view(name).substr(at, end - at)) != kWords.end();
    at = end + 1;
  }
  return said ? unknown_dra_device() : nullptr;
}

std::optional<MigProfile> mig_profile(std::string_view name) {
  // "mig-<slices>g.<memory>gb", in any case, after a '-' or '/' or at the start.
  const std::string lower = lowercase(name);
  const std::size_t at = lower.find("mig-");
  if (at == std::string::npos) return std::nullopt;
  std::size_t i = at + 4;
  const std::size_t start = i;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < lower.size() && std::isdigit(static_cast<unsigned char>(lower[i]))) ++i;
    return lower.substr(from, i - from);
  };
  if (digits().empty() || i >= lower.size() || lower[i] != 'g' || ++i >= lower.size() || lower[i] != '.') {
    return std::nullopt;
  }
  ++i;
  const std::string memory = digits();
  if (memory.empty() || memory.size() > 6 || lower.compare(i, 2, "gb") != 0) return std::nullopt;
  i += 2;
  return MigProfile{lower.substr(start, i - start), std::stoll(memory)};
}

std::string AcceleratorAsk::vendor() const {
  return of->vendor.empty() ? std::string(name.substr(0, name.find('/'))) : of->vendor;
}

std::optional<MigProfile> AcceleratorAsk::mig() const {
  return of->form == AcceleratorForm::kMigSlice ? mig_profile(name) : std::nullopt;
}

std::string AcceleratorAsk::amount_text() const {
  if (!written.empty()) return written;
  return amount.is_whole() ? std::to_string(amount.value_ceil()) : amount.to_string();
}

std::string AcceleratorAsk::describe() const { return amount_text() + " " + std::string(name) + " (" + of->unit + ")"; }

}  // namespace gpusizer
