#include "gpusizer/sizing/unsized_asks.h"

#include <algorithm>

#include "gpusizer/sizing/messages.h"
#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// A detail (HAMi's nvidia.com/gpumem) says something of the container's
// devices; alone, it is the only word of an accelerator.
bool unsized(const AcceleratorAsk& ask, const std::vector<AcceleratorAsk>& beside) {
  if (ask.sizing == AcceleratorSizing::kWarn) return true;
  if (ask.sizing != AcceleratorSizing::kDetail) return false;
  return std::none_of(beside.begin(), beside.end(),
                      [](const AcceleratorAsk& other) { return other.sizing != AcceleratorSizing::kDetail; });
}

// The tables' row for the ask's units taken as GPUs: a fraction of one
// GPU as one.
int64_t as_gpus(const AcceleratorAsk& ask) {
  if (ask.form == AcceleratorForm::kFraction) return 1;
  return std::max<int64_t>(1, ask.amount.value_ceil());
}

}  // namespace

bool has_unsized_asks(const PodFacts& pod) {
  const auto any = [](const std::vector<AcceleratorAsk>& asks) {
    return std::any_of(asks.begin(), asks.end(), [&](const AcceleratorAsk& ask) { return unsized(ask, asks); });
  };
  const auto in = [&](const std::vector<ContainerFacts>& list) {
    return std::any_of(list.begin(), list.end(), [&](const ContainerFacts& c) { return any(c.accelerators); });
  };
  return any(pod.accelerators) || in(pod.app) || in(pod.init);
}

std::vector<std::string> unsized_ask_warnings(const Policy& policy, const PodFacts& pod) {
  std::vector<std::string> out;
  std::size_t more = 0;
  const auto choice = select_profile(policy, pod.selection);
  const auto say = [&](const AcceleratorAsk& ask, const std::string* container) {
    if (out.size() == kMaxUnsizedAskWarnings) {
      ++more;
      return;
    }
    std::string rest =
        (container ? ask.describe() : ask.name + "=" + ask.amount_text() + " (" + ask.unit + ")") + " not sized";
    const int64_t gpus = as_gpus(ask);
    const Profile* profile = choice ? choice.value().profile : nullptr;
    const bool within = profile && (!profile->max_gpus || gpus <= *profile->max_gpus);
    const auto row = within ? required_resources(*profile, gpus) : std::nullopt;
    if (row) {
      rest += "; as " + gpus_text(gpus) + ", " + profile->name + ": cpu " + row->cpu.to_string() + ", memory " +
              row->memory.to_string();
    } else {
      rest += "; set its cpu and memory";
    }
    out.push_back(container ? fit_warning(pod.label, *container, rest) : fit(pod.label + "annotation " + rest));
  };
  for (const AcceleratorAsk& ask : pod.accelerators) {
    if (unsized(ask, pod.accelerators)) say(ask, nullptr);
  }
  for (const auto* list : {&pod.app, &pod.init}) {
    for (const ContainerFacts& c : *list) {
      for (const AcceleratorAsk& ask : c.accelerators) {
        if (unsized(ask, c.accelerators)) say(ask, &c.name);
      }
    }
  }
  if (more > 0) out.push_back(fit(pod.label + "and " + std::to_string(more) + " more accelerator asks not sized"));
  return out;
}

}  // namespace gpusizer
