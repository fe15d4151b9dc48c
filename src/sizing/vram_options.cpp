#include "gpusizer/sizing/vram_options.h"

#include <algorithm>
#include <optional>
#include <set>

#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

// An annotation with some parts changed, as a person would write them.
struct Variant {
  std::vector<std::string> changes;
  ModelSpec spec;
};

// Where a variant runs: `gpus` GPUs of `capacity` bytes; `names` are the
// pod's model, or for a larger size every table model of that size.
struct Hardware {
  int64_t gpus = 0;
  int64_t capacity = 0;
  std::vector<std::string> names;
};

Variant with_zero3(Variant variant) {
  if (variant.spec.zero == 3) return variant;
  variant.changes.push_back("zero=3");
  variant.spec.zero = 3;
  return variant;
}

Variant with_method(Variant variant, TrainingMethod method) {
  variant.changes.push_back("method=" + std::string(method_name(method)));
  variant.spec.method = method;
  return variant;
}

// Memory levers that keep the method and the GPUs: activation
// checkpointing and a micro-batch of 1 (when the activations come from
// batch and seq), 8-bit Adam, and DeepSpeed's optimizer offload.
std::vector<Variant> memory_levers(const Variant& requested, const GpuMemoryPolicy& policy) {
  std::vector<Variant> levers;
  const ModelSpec& spec = requested.spec;
  if (spec.seq > 0 && !spec.checkpointing) {
    Variant lever = requested;
    lever.changes.push_back("checkpointing=true");
    lever.spec.checkpointing = true;
    levers.push_back(std::move(lever));
  }
  if (spec.seq > 0 && spec.batch > 1) {
    Variant lever = requested;
    lever.changes.push_back("batch=1");
    lever.spec.batch = 1;
    levers.push_back(std::move(lever));
  }
  if (spec.optimizer == "adamw" && policy.optimizers.contains("adamw-8bit")) {
    Variant lever = requested;
    lever.changes.push_back("optimizer=adamw-8bit");
    lever.spec.optimizer = "adamw-8bit";
    levers.push_back(std::move(lever));
  }
  if (spec.offload == Offload::kNone) {
    Variant lever = requested;
    if (lever.spec.zero == 0) {
      lever.changes.push_back("zero=2");
      lever.spec.zero = 2;
    }
    lever.changes.push_back("offload=optimizer");
    lever.spec.offload = Offload::kOptimizer;
    levers.push_back(std::move(lever));
  }
  return levers;
}

// The variant as requested, then with zero=3 (a lever tries the smaller
// change first).
std::vector<Variant> as_is_then_zero3(const Variant& variant) {
  if (variant.spec.zero == 3) return {variant};
  return {variant, with_zero3(variant)};
}

class OptionSearch {
 public:
  OptionSearch(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t gpus, const GpuModel& gpu)
      : policy_(policy),
        spec_(spec),
        gpus_(world_size(spec, gpus)),
        capacity_(gpu.memory.value_ceil()),
        most_gpus_(most_suggested_gpus(policy, gpus_)) {
    same_ = {{gpus_, capacity_, {gpu.name}}};
    for (int64_t more = gpus_ + 1; more <= most_gpus_; ++more) more_.push_back({more, capacity_, {gpu.name}});
    std::set<int64_t> capacities;
    for (const GpuModel& model : policy.gpus) {
      if (model.memory.value_ceil() > capacity_) capacities.insert(model.memory.value_ceil());
    }
    for (int64_t capacity : capacities) {
      std::vector<std::string> names;
      for (const GpuModel& model : policy.gpus) {
        if (model.memory.value_ceil() == capacity) names.push_back(model.name);
      }
      larger_.push_back({gpus_, capacity, names});
      for (int64_t more = gpus_ + 1; more <= most_gpus_; ++more) larger_and_more_.push_back({more, capacity, names});
    }
    // Least GPU memory in total first: the cheapest hardware that fits.
    std::stable_sort(larger_and_more_.begin(), larger_and_more_.end(), [](const Hardware& a, const Hardware& b) {
      return int128(a.gpus) * a.capacity < int128(b.gpus) * b.capacity;
    });
  }

  // The fitting options, least GPU memory then least need first, followed by
  // the single changes that do not fit. Pairs of changes are tried only
  // when no single change fits.
  std::vector<VramOption> run() const {
    const Variant requested{{}, spec_};
    std::vector<std::optional<VramOption>> singles;
    std::vector<std::optional<VramOption>> pairs;
    std::vector<std::optional<VramOption>> levers;  // listed only when they fit: each helps a little
    if (spec_.mode == ModelMode::kTrain) {
      const bool full = spec_.method == TrainingMethod::kFull;
      const bool lighter_than_qlora = spec_.method != TrainingMethod::kQlora;
      const Variant lora = with_method(requested, TrainingMethod::kLora);
      const Variant qlora = with_method(requested, TrainingMethod::kQlora);
      if (spec_.zero < 3) singles.push_back(best({with_zero3(requested)}, same_));
      for (const Variant& lever : memory_levers(requested, policy_)) levers.push_back(best({lever}, same_));
      singles.push_back(best(as_is_then_zero3(requested), more_));
      if (full) singles.push_back(best(as_is_then_zero3(lora), same_));
      if (lighter_than_qlora) singles.push_back(best(as_is_then_zero3(qlora), same_));
      singles.push_back(best(as_is_then_zero3(requested), larger_));
      if (full) pairs.push_back(best({with_zero3(lora)}, more_));
      if (lighter_than_qlora) pairs.push_back(best({with_zero3(qlora)}, more_));
      if (full) pairs.push_back(best({with_zero3(lora)}, larger_));
      if (lighter_than_qlora) pairs.push_back(best({with_zero3(qlora)}, larger_));
      pairs.push_back(best({with_zero3(requested)}, larger_and_more_));
    } else {
      const std::vector<Variant> lighter = lighter_precisions(requested);
      if (spec_.tp < gpus_) {
        Variant split = requested;
        split.changes.push_back("tp=" + std::to_string(gpus_));
        split.spec.tp = gpus_;
        singles.push_back(best({split}, same_));
      }
      if (auto raised = raised_share(requested)) singles.push_back(best({*raised}, same_));
      singles.push_back(best({requested}, more_));
      singles.push_back(best(lighter, same_));
      singles.push_back(best({requested}, larger_));
      pairs.push_back(best(lighter, more_));
      pairs.push_back(best(lighter, larger_));
      pairs.push_back(best({requested}, larger_and_more_));
    }

    std::vector<VramOption> fitting, not_enough;
    for (const auto& option : singles) {
      if (option) (option->fits ? fitting : not_enough).push_back(*option);
    }
    for (const auto& option : levers) {
      if (option && option->fits) fitting.push_back(*option);
    }
    if (fitting.empty()) {
      for (const auto& option : pairs) {
        if (option && option->fits) fitting.push_back(*option);
      }
    }
    std::stable_sort(fitting.begin(), fitting.end(), [](const VramOption& a, const VramOption& b) {
      const int128 a_total = int128(a.gpus) * a.gpu_memory.value_ceil();
      const int128 b_total = int128(b.gpus) * b.gpu_memory.value_ceil();
      if (a_total != b_total) return a_total < b_total;
      return a.bytes_per_gpu < b.bytes_per_gpu;
    });
    fitting.insert(fitting.end(), not_enough.begin(), not_enough.end());
    return fitting;
  }

 private:
  // One lever: each hardware in order, each variant in order; the first
  // that fits, else the last tried (the lowest need). nullopt when there is
  // nothing to try (no larger GPU, no more GPUs allowed).
  std::optional<VramOption> best(const std::vector<Variant>& variants, const std::vector<Hardware>& hardware) const {
    std::optional<VramOption> last;
    for (const Hardware& where : hardware) {
      for (const Variant& variant : variants) {
        last = evaluate(variant, where);
        if (last->fits) return last;
      }
    }
    return last;
  }

  VramOption evaluate(Variant variant, const Hardware& where) const {
    if (where.gpus != gpus_) {
      // More GPUs help inference only by splitting the model over them
      // (tensor parallelism), and training by a larger ZeRO world.
      if (variant.spec.mode == ModelMode::kInfer) {
        variant.spec.tp = where.gpus;
        variant.changes.push_back("tp=" + std::to_string(where.gpus));
      } else {
        variant.spec.ranks = where.gpus;
      }
    }
    const VramNeed need = vram_per_gpu(policy_, variant.spec, where.gpus);
    return VramOption{join(variant.changes, ","),
                      where.gpus,
                      Quantity::from_bytes(where.capacity),
                      where.names,
                      need.total,
                      verdict_of(policy_, variant.spec, need, where.capacity) == VramVerdict::kFits};
  }

  // vLLM given a larger --gpu-memory-utilization, the least that holds the
  // total, when that is at most kMostSuggestedShare (vLLM takes up to 1,
  // but the CUDA context and other processes need the rest).
  std::optional<Variant> raised_share(const Variant& requested) const {
    static constexpr Milli kMostSuggestedShare = 950;
    if (spec_.reserved_share == 0) return std::nullopt;
    const VramNeed need = vram_per_gpu(policy_, spec_, gpus_);
    const auto share = static_cast<Milli>(ceil_div(int128(need.total) * 1000, capacity_));
    if (share <= spec_.reserved_share || share > kMostSuggestedShare) return std::nullopt;
    Variant raised = requested;
    raised.changes.push_back("--gpu-memory-utilization " + milli_text(share));
    raised.spec.reserved_share = share;
    return raised;
  }

  // Inference at each precision lighter than the requested one, heaviest
  // first (the least loss of quality that fits).
  std::vector<Variant> lighter_precisions(const Variant& requested) const {
    const Milli current = policy_.precision_bytes.at(spec_.precision);
    std::vector<std::pair<Milli, std::string>> lighter;
    for (const auto& [name, bytes] : policy_.precision_bytes) {
      if (bytes < current) lighter.emplace_back(bytes, name);
    }
    std::stable_sort(lighter.begin(), lighter.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<Variant> variants;
    for (const auto& [bytes, name] : lighter) {
      Variant variant = requested;
      variant.changes.push_back("precision=" + name);
      variant.spec.precision = name;
      variants.push_back(std::move(variant));
    }
    return variants;
  }

  const GpuMemoryPolicy& policy_;
  const ModelSpec& spec_;
  const int64_t gpus_;       // N: the training world size or the pod's GPUs
  const int64_t capacity_;   // bytes of the pod's GPU model
  const int64_t most_gpus_;  // K = max(maxSuggestedGpus, N)
  std::vector<Hardware> same_, more_, larger_, larger_and_more_;
};

}  // namespace

std::vector<VramOption> vram_options(const GpuMemoryPolicy& policy, const ModelSpec& spec, int64_t gpus,
                                     const GpuModel& gpu) {
  return OptionSearch(policy, spec, gpus, gpu).run();
}

}  // namespace gpusizer
