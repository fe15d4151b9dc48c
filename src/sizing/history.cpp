#include "gpusizer/sizing/history.h"

#include <set>

#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// The roles of HistoryPolicy::series; every one is required in the
// embedded default, so a renamed setup changes only what differs.
constexpr std::string_view kSeriesRoles[] = {
    "memory",   "cpu",    "lastTerminatedReason", "terminatedReason", "restarts", "annotations", "owners",
    "requests", "limits", "gpuMemoryUsed",        "gpuMemoryFree"};

constexpr std::string_view kMetricNameCharacters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:";

int64_t read_window(const YAML::Node& node, const std::string& path) {
  const std::string text = policy_fields::read_string(node, path);
  auto seconds = window_seconds(text);
  if (!seconds) policy_fields::fail(ProblemCode::kBadValue, path, node, seconds.error());
  return seconds.value();
}

}  // namespace

Result<int64_t> window_seconds(std::string_view text) {
  constexpr std::pair<char, int64_t> kUnits[] = {{'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
  const std::string_view digits = text.empty() ? text : text.substr(0, text.size() - 1);
  const bool whole = !digits.empty() && digits.size() <= 5 &&
                     digits.find_first_not_of("0123456789") == std::string_view::npos && digits != "0";
  for (const auto& [unit, seconds] : kUnits) {
    if (whole && text.back() == unit) return std::stoll(std::string(digits)) * seconds;
  }
  return Status::invalid_argument(
      "must be a whole number of minutes, hours, days or weeks (\"14d\", \"36h\"), found \"" + std::string(text) +
      "\"");
}

std::string_view to_string(HistoryPolicy::Mode mode) {
  switch (mode) {
    case HistoryPolicy::Mode::kOff: return "off";
    case HistoryPolicy::Mode::kRecommend: return "recommend";
    case HistoryPolicy::Mode::kRaise: return "raise";
  }
  return "off";
}

void HistoryPolicy::read(const YAML::Node& node, bool complete) {
  using namespace policy_fields;  // NOLINT(google-build-using-namespace)
  HistoryPolicy& out = *this;
  const Block block(node, "history", complete, {"mode", "bumpRatio", "bumpMinimum", "nearLimit", "window", "series"});
  block.read("mode", [&](const auto& value, const auto& path) {
    const std::string mode = read_string(value, path);
    if (mode == "off") {
      out.mode = Mode::kOff;
    } else if (mode == "recommend") {
      out.mode = Mode::kRecommend;
    } else if (mode == "raise") {
      out.mode = Mode::kRaise;
    } else {
      fail(ProblemCode::kBadValue, path, value, "must be off, recommend or raise, found \"" + mode + "\"");
    }
  });
  block.read("bumpRatio",
             [&](const auto& value, const auto& path) { out.bump_ratio = read_decimal(value, path, 1000, 10000); });
  block.read("bumpMinimum", [&](const auto& value, const auto& path) {
    out.bump_minimum = read_quantity(value, path, Zero::kAllowed);
  });
  block.read("nearLimit",
             [&](const auto& value, const auto& path) { out.near_limit = read_decimal(value, path, 1, 1000); });
  block.read("window", [&](const auto& value, const auto& path) {
    out.window_seconds = read_window(value, path);
    out.window = value.template as<std::string>();
  });
  block.read("series", [&](const auto& value, const auto& path) {
    require_map(value, path);
    check_keys(value, path, std::span(kSeriesRoles));
    for (const std::string_view role : kSeriesRoles) {
      const std::string key(role);
      const std::string name_path = path + "." + key;
      const YAML::Node name = value[key];
      if (!name) {
        if (complete) fail(ProblemCode::kMissingField, path, value, "missing field " + key);
        continue;
      }
      const std::string text = read_string(name, name_path);
      // A metric name (Prometheus' data model): it is written into PromQL.
      const bool metric_name = !text.empty() && (text[0] < '0' || text[0] > '9') &&
                               text.find_first_not_of(kMetricNameCharacters) == std::string::npos;
      if (!metric_name) {
        fail(ProblemCode::kBadValue, name_path, name,
             "must be a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), found \"" + text + "\"");
      }
      out.series[key] = text;
    }
  });
}

std::string history_key(std::string_view workload, int64_t gpus, std::string_view profile) {
  return std::string(workload) + " gpus=" + std::to_string(gpus) + " profile=" + std::string(profile);
}

std::optional<std::pair<int64_t, std::string>> history_key_gpus_and_profile(std::string_view key) {
  const std::size_t gpus_at = key.rfind(" gpus=");
  const std::size_t profile_at = key.rfind(" profile=");
  if (gpus_at == std::string_view::npos || profile_at == std::string_view::npos || profile_at < gpus_at) return {};
  const std::string_view digits = key.substr(gpus_at + 6, profile_at - gpus_at - 6);
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return {};
  return std::pair{std::stoll(std::string(digits)), std::string(key.substr(profile_at + 9))};
}

int64_t ContainerHistory::run_count() const {
  std::set<std::string_view> distinct;
  for (const RunUsage& each : runs) distinct.insert(each.run);
  return static_cast<int64_t>(distinct.size());
}

namespace {

bool same_bump(const HistoryPolicy& a, const HistoryPolicy& b) {
  return a.bump_ratio == b.bump_ratio && a.bump_minimum == b.bump_minimum && a.near_limit == b.near_limit;
}

}  // namespace

const MemoryAdvice& HistorySnapshot::advice_for(const HistoryPolicy& policy, const ContainerHistory& history,
                                                MemoryAdvice& scratch) const {
  if (advised && same_bump(*advised, policy)) return history.advice;
  scratch = memory_advice(policy, history);
  return scratch;
}

void advise(HistorySnapshot& snapshot, const HistoryPolicy& policy) {
  for (auto& [key, history] : snapshot.containers) history.advice = memory_advice(policy, history);
  snapshot.advised = policy;
}

MemoryAdvice memory_advice(const HistoryPolicy& policy, const ContainerHistory& history) {
  MemoryAdvice advice;
  if (history.runs.empty()) return advice;
  const Quantity mi = Quantity::from_bytes(kMiB);
  const auto bumped = [&](const Quantity& usage, std::string_view what) {
    const Quantity ratio = usage.share_ceil(policy.bump_ratio, 1000, mi);
    const Quantity minimum = usage.plus(policy.bump_minimum).share_ceil(1, 1, mi);
    advice.recommended = std::max(ratio, minimum);
    advice.arithmetic = "max(" + std::string(what) + " " + usage.to_string() + " x " + milli_text(policy.bump_ratio) +
                        ", " + usage.to_string() + " + " + policy.bump_minimum.to_string() +
                        ") = " + advice.recommended.to_string();
  };
  const int64_t run_count = history.run_count();
  const std::string runs = std::to_string(run_count) + (run_count == 1 ? " run" : " runs");
  if (history.oom_kills > 0) {
    const Quantity usage = std::max(history.peak_memory, history.oom_limit.value_or(Quantity()));
    advice.kind = MemoryAdvice::Kind::kOomKilled;
    advice.evidence = "OOM-killed " + std::to_string(history.oom_kills) +
                      (history.oom_kills == 1 ? " time" : " times") + " in " + runs + " at " + usage.to_string();
    bumped(usage, history.oom_limit && *history.oom_limit >= history.peak_memory ? "limit" : "peak");
    return advice;
  }
  const Quantity& peak = history.peak_memory;
  if (history.memory_limit && !history.memory_limit->is_zero() &&
      peak >= history.memory_limit->share_ceil(policy.near_limit, 1000, Quantity::from_bytes(1))) {
    advice.kind = MemoryAdvice::Kind::kNearLimit;
    advice.evidence =
        "peaked at " + peak.to_string() + " of its " + history.memory_limit->to_string() + " limit in " + runs;
    bumped(peak, "peak");
    return advice;
  }
  bumped(peak, "peak");
  const std::optional<Quantity>& given = history.memory_request ? history.memory_request : history.memory_limit;
  // Holding more than twice what it would be given is worth saying; a
  // little room to spare is not.
  if (given && advice.recommended.times(2) <= *given) {
    advice.kind = MemoryAdvice::Kind::kOversized;
    advice.evidence = "peaked at " + peak.to_string() + " of its " + given->to_string() + " request in " + runs;
  } else {
    advice.kind = MemoryAdvice::Kind::kFits;
    advice.evidence = "peaked at " + peak.to_string() + " in " + runs;
  }
  return advice;
}

}  // namespace gpusizer
