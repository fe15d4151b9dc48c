#include "gpusizer/sizing/accelerator_asks.h"

#include <algorithm>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// A detail (HAMi's nvidia.com/gpumem) says something of the container's
// devices; alone, it is the only word of an accelerator.
bool unsized(const AcceleratorAsk& ask, const std::vector<AcceleratorAsk>& beside) {
  if (ask.sizing() == AcceleratorSizing::kWarn) return true;
  if (ask.sizing() != AcceleratorSizing::kDetail) return false;
  return std::none_of(beside.begin(), beside.end(),
                      [](const AcceleratorAsk& other) { return other.sizing() != AcceleratorSizing::kDetail; });
}

// The tables' row for the ask's units taken as GPUs: a fraction of one
// GPU as one.
int64_t as_gpus(const AcceleratorAsk& ask) {
  if (ask.form() == AcceleratorForm::kFraction) return 1;
  return std::max<int64_t>(1, ask.amount.value_ceil());
}

}  // namespace

std::vector<AcceleratorAsk> container_asks(const Policy& policy, const ContainerFacts& container) {
  std::vector<AcceleratorAsk> asks;
  const auto add = [&](std::string_view resource, const Quantity& amount, std::string_view map) {
    if (resource == kCpu || resource == kMemory || resource == kEphemeralStorage) return;
    for (const AcceleratorAsk& seen : asks) {
      if (seen.name == resource) return;
    }
    const AcceleratorClass* of = policy.accelerator_for(resource);
    for (const auto& [served, by_class] : container.device_class_resources) {
      if (served == resource) of = by_class;
    }
    if (of) asks.push_back({of, resource, amount, map});
  };
  container.limits.for_each([&](std::string_view resource, const Quantity& q) { add(resource, q, "limits"); });
  container.requests.for_each([&](std::string_view resource, const Quantity& q) { add(resource, q, "requests"); });
  return asks;
}

std::vector<AcceleratorAsk> annotation_asks(const Policy& policy, const PodFacts& pod) {
  std::vector<AcceleratorAsk> asks;
  if (!pod.annotation_accelerators) return asks;
  for (const AcceleratorClass& each : policy.accelerator_annotations) {
    const std::string* value = pod.annotation(each.annotation);
    if (!value) continue;
    // A value that is not a number counts as 0 and is said as written.
    const auto amount = Quantity::parse(*value);
    asks.push_back({&each, each.annotation, amount ? amount.value() : Quantity(), "metadata.annotations", *value});
  }
  return asks;
}

std::vector<AcceleratorAsk> claim_asks(const Policy& policy, const ClaimSpec& claim, std::string_view request) {
  const std::size_t slash = request.find('/');
  const std::string_view request_name = request.substr(0, slash);
  const std::string_view alternative_name = slash == std::string_view::npos ? "" : request.substr(slash + 1);
  std::vector<AcceleratorAsk> asks;
  for (const DeviceRequest& each : claim.requests) {
    if (!request_name.empty() && each.name != request_name) continue;
    AcceleratorAsk ask;
    int64_t fewest = -1;  // devices the tables count, over the alternatives
    int64_t most = 0;
    for (const DeviceAlternative& alternative : each.alternatives) {
      if (!alternative_name.empty() && alternative.name != alternative_name) continue;
      const AcceleratorClass* of = policy.device_class_for(alternative.device_class);
      if (of && alternative.partition) of = gpu_partition();
      const bool counted = of && of->sizing == AcceleratorSizing::kGpus && !alternative.all;
      fewest = fewest < 0 ? (counted ? alternative.count : 0) : std::min(fewest, counted ? alternative.count : 0);
      if (!of) continue;
      most = std::max(most, alternative.count);
      ask.all_devices = ask.all_devices || alternative.all;
      if (ask.of) continue;
      ask.of = of;
      ask.name = alternative.device_class;
      ask.field = each.name;
      ask.model = alternative.model;
    }
    if (!ask.of) continue;
    const int64_t amount = ask.of->sizing == AcceleratorSizing::kGpus ? std::max<int64_t>(fewest, 0) : most;
    ask.amount = Quantity::from_bytes(ask.all_devices ? 0 : amount);
    if (!ask.all_devices && most > amount) ask.up_to = most;
    asks.push_back(std::move(ask));
  }
  return asks;
}

int64_t claim_gpus(const std::vector<AcceleratorAsk>& asks) {
  int64_t gpus = 0;
  for (const AcceleratorAsk& ask : asks) {
    if (ask.sizing() == AcceleratorSizing::kGpus) gpus += ask.amount.value_ceil();
  }
  return gpus;
}

std::string gpu_share(const Policy& policy, const PodFacts& pod) {
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      if (!c.other_accelerators || c.gpus == 0) continue;
      for (const AcceleratorAsk& ask : container_asks(policy, c)) {
        if (ask.sizing() != AcceleratorSizing::kDetail || ask.form() != AcceleratorForm::kFraction) continue;
        if (ask.of->whole == 0 || ask.amount < Quantity::from_bytes(ask.of->whole)) {
          return std::string(ask.name) + " " + ask.amount_text();
        }
      }
    }
  }
  return "";
}

bool asks_other_accelerators(const PodFacts& pod) {
  const auto in = [](const std::vector<ContainerFacts>& list) {
    return std::any_of(list.begin(), list.end(), [](const ContainerFacts& c) { return c.other_accelerators; });
  };
  return !pod.claim_uses.empty() || pod.annotation_accelerators || in(pod.app) || in(pod.init);
}

std::vector<std::string> unsized_ask_warnings(const Policy& policy, const PodFacts& pod) {
  std::vector<std::string> out;
  std::size_t more = 0;
  const auto choice = select_profile(policy, pod.selection);
  const auto push = [&](std::string warning) {
    if (out.size() == kMaxUnsizedAskWarnings) {
      ++more;
    } else {
      out.push_back(std::move(warning));
    }
  };
  const Profile* profile = choice ? choice.value().profile : nullptr;
  // The profile's row for this many GPUs, when it has one (none for no
  // GPU: a container whose only accelerator count could not be read).
  const auto row_for = [&](int64_t gpus) -> std::optional<Requirement> {
    const bool within = profile && gpus >= 1 && (!profile->max_gpus || gpus <= *profile->max_gpus);
    return within ? required_resources(*profile, gpus) : std::nullopt;
  };
  // `what` names the ask: "2 nvidia.com/mig-3g.40gb (MIG slice)".
  const auto say = [&](const AcceleratorAsk& ask, const std::string* container, const std::string& what) {
    if (out.size() == kMaxUnsizedAskWarnings) {
      ++more;
      return;
    }
    std::string rest = what + " not sized";
    const int64_t gpus = as_gpus(ask);
    const auto row = ask.all_devices ? std::nullopt : row_for(gpus);
    if (row) {
      rest += "; as " + gpus_text(gpus) + ", " + profile->name + ": cpu " + row->cpu.to_string() + ", memory " +
              row->memory.to_string();
    } else {
      rest += "; set its cpu and memory";
    }
    push(container ? fit_warning(pod.label, *container, rest) : fit(pod.label + "annotation " + rest));
  };
  const std::vector<AcceleratorAsk> by_annotation = annotation_asks(policy, pod);
  for (const AcceleratorAsk& ask : by_annotation) {
    if (unsized(ask, by_annotation)) {
      say(ask, nullptr, std::string(ask.name) + "=" + ask.amount_text() + " (" + ask.of->unit + ")");
    }
  }
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      if (!c.other_accelerators) continue;
      const std::vector<AcceleratorAsk> asks = container_asks(policy, c);
      // A container that already asks for the cpu and memory of the row
      // of all its devices, each unit taken as a GPU, leaves nothing to set.
      int64_t units = c.gpus;
      for (const AcceleratorAsk& ask : asks) units += unsized(ask, asks) ? as_gpus(ask) : 0;
      const auto row = row_for(units);
      const auto cpu = c.effective_request(kCpu);
      const auto memory = c.effective_request(kMemory);
      if (row && cpu && memory && *cpu >= row->cpu && *memory >= row->memory) continue;
      for (const AcceleratorAsk& ask : asks) {
        if (unsized(ask, asks)) say(ask, &c.name, ask.describe());
      }
    }
  }
  for (const ClaimUse& use : pod.claim_uses) {
    const std::string claim = "DRA claim " + in_quotes(use.claim);
    if (!use.known) {
      push(fit_warning(pod.label, use.container,
                       use.source_kind.empty()
                           ? claim + ": no spec.resourceClaims entry has that name"
                           : claim + " (" + (use.source_kind == "ResourceClaim" ? "claim " : "template ") +
                                 in_quotes(use.source) + ") is not sized; set its cpu and memory"));
      continue;
    }
    for (const AcceleratorAsk& ask : use.asks) {
      const std::string name(ask.name);
      if (ask.all_devices) {
        say(ask, &use.container, claim + ": all " + name + " of a node (allocationMode All)");
      } else if (ask.sizing() == AcceleratorSizing::kWarn) {
        // A detail class (a ComputeDomain's channel) is no GPU: shown in explain only.
        say(ask, &use.container, claim + ": " + ask.describe());
      } else if (ask.up_to > 0) {
        push(fit_warning(pod.label, use.container,
                         claim + ": sized as " + gpus_text(ask.amount.value_ceil()) +
                             ", its fewest alternative (firstAvailable); may get " + std::to_string(ask.up_to) + " " +
                             name));
      }
    }
  }
  if (more > 0) out.push_back(fit(pod.label + "and " + std::to_string(more) + " more accelerator asks not sized"));
  return out;
}

}  // namespace gpusizer
