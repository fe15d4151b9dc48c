#include "gpusizer/sizing/accelerators.h"

#include <algorithm>
#include <cctype>

#include "gpusizer/util/numbers.h"

namespace gpusizer {

namespace {

// KEP-5004: every DeviceClass is usable as this extended resource.
constexpr std::string_view kDraExtendedPrefix = "deviceclass.resource.kubernetes.io/";

bool names_gpu(std::string_view resource) {
  const std::size_t slash = resource.find('/');
  if (slash == std::string_view::npos) return false;
  std::string name(resource.substr(slash + 1));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name.find("gpu") != std::string::npos;
}

}  // namespace

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
  if (resource.empty()) return false;
  if (resource.back() == '*')
    return name.substr(0, resource.size() - 1) == std::string_view(resource).substr(0, resource.size() - 1);
  return name == resource;
}

std::optional<AcceleratorClass> classify_resource(const std::vector<std::string>& gpu_resources,
                                                  const std::vector<AcceleratorClass>& classes,
                                                  std::string_view resource) {
  if (std::find(gpu_resources.begin(), gpu_resources.end(), resource) != gpu_resources.end()) {
    return AcceleratorClass{std::string(resource),
                            "",
                            AcceleratorForm::kDevice,
                            AcceleratorSizing::kGpus,
                            std::string(resource.substr(0, resource.find('/'))),
                            "GPU"};
  }
  for (const AcceleratorClass& candidate : classes) {
    if (candidate.matches(resource)) return candidate;
  }
  const bool dra = resource.substr(0, kDraExtendedPrefix.size()) == kDraExtendedPrefix;
  if (!dra && !names_gpu(resource)) return std::nullopt;
  return AcceleratorClass{std::string(resource),
                          "",
                          AcceleratorForm::kUnknown,
                          AcceleratorSizing::kWarn,
                          std::string(resource.substr(0, resource.find('/'))),
                          dra ? "device of a DRA class" : "device"};
}

std::optional<MigProfile> mig_profile(std::string_view name) {
  // "mig-<slices>g.<memory>gb", in any case, after a '-' or '/' or at the start.
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
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

AcceleratorAsk make_ask(const AcceleratorClass& of, std::string_view name, const Quantity& amount, std::string field,
                        std::string holder) {
  AcceleratorAsk ask{std::string(name), of.form, of.sizing, of.vendor, of.unit, amount};
  ask.field = std::move(field);
  ask.holder = std::move(holder);
  if (of.form == AcceleratorForm::kMigSlice) {
    if (const auto profile = mig_profile(name)) {
      ask.model = profile->profile;
      ask.gpu_memory_gb = profile->memory_gb;
    }
  }
  return ask;
}

std::string AcceleratorAsk::amount_text() const {
  if (!written.empty()) return written;
  return amount.is_whole() ? std::to_string(amount.value_ceil()) : amount.to_string();
}

std::string AcceleratorAsk::describe() const { return amount_text() + " " + name + " (" + unit + ")"; }

}  // namespace gpusizer
