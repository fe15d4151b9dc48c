#include "gpusizer/history/prometheus_history.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace gpusizer {

namespace {

// How long a connection to Prometheus may take to set up.
constexpr int kConnectSeconds = 5;

// kube-state-metrics' label for an annotation: its key with every
// character outside [a-zA-Z0-9_] as "_", after "annotation_"
// (docs/research/history-sources.md).
std::string annotation_label(std::string_view key) {
  std::string label = "annotation_";
  for (const char c : key) label += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return label;
}

const std::string kWorkloadLabelName = annotation_label(kWorkloadKey);

// The roles of the answers, in order: two per pod, then one per container.
enum Answer : std::size_t {
  kStamped,
  kOwners,
  kMemoryPeak,
  kOomKilled,
  kMemoryRequest,
  kMemoryLimit,
  kCpuP95,
  kCpuRequest,
  kGpuMemoryUsed,
  kGpuMemoryCapacity,
  kRestarts,
  kAnswers
};

// A value Prometheus answered as a count of bytes or cores, within what a
// Quantity holds; nullopt for NaN, infinities and negative values.
std::optional<double> usable(double value) {
  if (!std::isfinite(value) || value < 0 || value > 4e18) return std::nullopt;
  return value;
}

const std::string* label(const Sample& sample, std::string_view name) {
  const auto found = sample.labels.find(name);
  return found == sample.labels.end() ? nullptr : &found->second;
}

// The (namespace, pod, container) a sample is about; empty parts when absent.
std::tuple<std::string, std::string, std::string> container_of(const Sample& sample) {
  const auto get = [&](std::string_view name) {
    const std::string* value = label(sample, name);
    return value ? *value : std::string();
  };
  return {get("namespace"), get("pod"), get("container")};
}

// into = the larger of into and value.
void keep_larger(std::optional<Quantity>& into, const std::optional<Quantity>& value) {
  if (value && (!into || *into < *value)) into = value;
}

}  // namespace

std::vector<HistoryQuery> history_queries(const HistoryPolicy& policy) {
  const auto series = [&](std::string_view role) { return policy.series.at(std::string(role)); };
  const std::string& window = policy.window;
  // The pods gpu-sizer stamped, one sample each: every other answer is
  // limited to them, so a large cluster's other containers never come back.
  const std::string stamped = "max by (namespace, pod) (max_over_time(" + series("annotations") + "{" +
                              kWorkloadLabelName + "!=\"\"}[" + window + "]))";
  const auto per_container = [&](const std::string& inner) {
    return "max by (namespace, pod, container) (" + inner + ") and on (namespace, pod) " + stamped;
  };
  const std::string containers = "{container!=\"\",container!=\"POD\"}";
  const auto resource = [&](std::string_view role, std::string_view name) {
    return per_container("max_over_time(" + series(role) + "{resource=\"" + std::string(name) + "\"}[" + window + "])");
  };
  return {
      {"stamped pods",
       "max by (namespace, pod, " + kWorkloadLabelName + ") (max_over_time(" + series("annotations") + "{" +
           kWorkloadLabelName + "!=\"\"}[" + window + "]))",
       true},
      // A run is the Pod's controller: a Job, a PyTorchJob, a ReplicaSet.
      {"pod owners",
       "max by (namespace, pod, owner_name) (max_over_time(" + series("owners") + "{owner_is_controller=\"true\"}[" +
           window + "])) and on (namespace, pod) " + stamped,
       true},
      {"memory peak", per_container("max_over_time(" + series("memory") + containers + "[" + window + "])"), true},
      {"OOM kills",
       per_container("max_over_time(" + series("lastTerminatedReason") + "{reason=\"OOMKilled\"}[" + window +
                     "]) or max_over_time(" + series("terminatedReason") + "{reason=\"OOMKilled\"}[" + window + "])"),
       true},
      {"memory request", resource("requests", "memory"), true},
      {"memory limit", resource("limits", "memory"), true},
      {"CPU p95",
       per_container("quantile_over_time(0.95, rate(" + series("cpu") + containers + "[5m])[" + window + ":5m])"),
       false},
      {"CPU request", resource("requests", "cpu"), true},
      {"GPU memory used", per_container("max_over_time(" + series("gpuMemoryUsed") + "[" + window + "])"), false},
      {"GPU memory capacity",
       per_container("max_over_time((" + series("gpuMemoryUsed") + " + " + series("gpuMemoryFree") + ")[" + window +
                     ":5m])"),
       false},
      {"restarts", per_container("max_over_time(" + series("restarts") + "[" + window + "])"), true},
  };
}

Result<std::vector<Sample>> parse_vector_answer(std::string_view body) {
  const nlohmann::json answer = nlohmann::json::parse(body, nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) return Status::io_error("the answer is not JSON");
  if (answer.value("status", "") != "success") {
    const auto text = [&](const char* key) {
      const auto found = answer.find(key);
      return found != answer.end() && found->is_string() ? found->get<std::string>() : std::string("unknown");
    };
    return Status::io_error(text("errorType") + ": " + text("error"));
  }
  const auto data = answer.find("data");
  if (data == answer.end() || !data->is_object() || data->value("resultType", "") != "vector" ||
      !data->contains("result") || !(*data)["result"].is_array()) {
    return Status::io_error("the answer is not an instant vector (data.resultType vector)");
  }
  std::vector<Sample> samples;
  for (const auto& each : (*data)["result"]) {
    Sample sample;
    const auto metric = each.find("metric");
    const auto value = each.find("value");
    if (!each.is_object() || metric == each.end() || !metric->is_object() || value == each.end() ||
        !value->is_array() || value->size() != 2 || !(*value)[1].is_string()) {
      return Status::io_error("a sample is not {metric: {...}, value: [time, \"number\"]}");
    }
    for (const auto& [name, text] : metric->items()) {
      if (text.is_string()) sample.labels.emplace(name, text.get<std::string>());
    }
    const std::string number = (*value)[1].get<std::string>();
    char* end = nullptr;
    sample.value = std::strtod(number.c_str(), &end);
    if (end == number.c_str() || *end != '\0')
      return Status::io_error("a sample's value \"" + number + "\" is not a number");
    samples.push_back(std::move(sample));
  }
  return samples;
}

HistorySnapshot join_history(const HistoryPolicy& policy, const std::vector<std::vector<Sample>>& answers,
                             int64_t fetched_at) {
  HistorySnapshot snapshot;
  snapshot.window = policy.window;
  snapshot.fetched_at = fetched_at;
  if (answers.size() < kAnswers) return snapshot;
  struct Stamp {
    std::string workload;
    std::string run;
  };
  std::map<std::pair<std::string, std::string>, Stamp> stamps;  // (namespace, pod)
  for (const Sample& sample : answers[kStamped]) {
    const auto [ns, pod, unused] = container_of(sample);
    const std::string* workload = label(sample, kWorkloadLabelName);
    if (ns.empty() || pod.empty() || !workload || workload->empty()) continue;
    stamps[{ns, pod}] = {*workload, pod};  // a Pod without a controller is its own run
  }
  for (const Sample& sample : answers[kOwners]) {
    const auto [ns, pod, unused] = container_of(sample);
    const std::string* owner = label(sample, "owner_name");
    const auto stamp = stamps.find({ns, pod});
    if (owner && !owner->empty() && stamp != stamps.end()) stamp->second.run = *owner;
  }
  // Every (namespace, pod, container) of a stamped pod that an answer
  // names is one run of its container's history.
  std::set<std::tuple<std::string, std::string, std::string>> named;
  for (std::size_t answer = kMemoryPeak; answer < kAnswers; ++answer) {
    for (const Sample& sample : answers[answer]) {
      auto key = container_of(sample);
      if (!std::get<2>(key).empty() && stamps.contains({std::get<0>(key), std::get<1>(key)}))
        named.insert(std::move(key));
    }
  }
  for (const auto& [ns, pod, container] : named) {
    const Stamp& stamp = stamps[{ns, pod}];
    snapshot.containers[{ns, stamp.workload, container}].runs.push_back({stamp.run, pod});
  }
  // The runs are all in place: pointers to them stay valid.
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<ContainerHistory*, RunUsage*>> runs;
  for (auto& [key, history] : snapshot.containers) {
    for (RunUsage& run : history.runs) runs[{key.namespace_name, run.pod, key.container}] = {&history, &run};
  }
  const auto bytes = [](double value) { return Quantity::from_bytes(static_cast<int64_t>(std::ceil(value))); };
  const auto cores = [](double value) { return Quantity::from_milli(static_cast<int64_t>(std::ceil(value * 1000))); };
  for (std::size_t answer = kMemoryPeak; answer < kAnswers; ++answer) {
    for (const Sample& sample : answers[answer]) {
      const auto value = usable(sample.value);
      const auto found = runs.find(container_of(sample));
      if (!value || found == runs.end()) continue;
      ContainerHistory& history = *found->second.first;
      RunUsage& run = *found->second.second;
      switch (answer) {
        case kMemoryPeak: run.peak_memory = std::max(run.peak_memory, bytes(*value)); break;
        case kOomKilled: run.oom_killed = run.oom_killed || *value > 0; break;
        case kRestarts: run.restarts = std::max(run.restarts, static_cast<int64_t>(*value)); break;
        case kMemoryRequest: keep_larger(run.memory_request, bytes(*value)); break;
        case kMemoryLimit: keep_larger(run.memory_limit, bytes(*value)); break;
        case kCpuP95: keep_larger(history.cpu_p95, cores(*value)); break;
        case kCpuRequest: keep_larger(history.cpu_request, cores(*value)); break;
        case kGpuMemoryUsed:
          history.gpu_memory_peak_mib = std::max(history.gpu_memory_peak_mib.value_or(0), static_cast<int64_t>(*value));
          break;
        case kGpuMemoryCapacity:
          history.gpu_memory_capacity_mib =
              std::max(history.gpu_memory_capacity_mib.value_or(0), static_cast<int64_t>(*value));
          break;
        default: break;
      }
    }
  }
  // Each container's totals from its runs, then its advice.
  for (auto& [key, history] : snapshot.containers) {
    for (const RunUsage& run : history.runs) {
      history.restarts += run.restarts;
      history.peak_memory = std::max(history.peak_memory, run.peak_memory);
      keep_larger(history.memory_request, run.memory_request);
      keep_larger(history.memory_limit, run.memory_limit);
      if (!run.oom_killed) continue;
      ++history.oom_kills;
      keep_larger(history.oom_limit, run.memory_limit);
    }
  }
  advise(snapshot, policy);
  return snapshot;
}

void HistoryReadStop::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  if (active_) active_->stop();
}

bool HistoryReadStop::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

void HistoryReadStop::track(httplib::Client* client) {
  std::lock_guard lock(mutex_);
  active_ = client;
}

namespace {

// The read's client tracked by its HistoryReadStop while the read runs,
// however it ends.
class Tracked {
 public:
  Tracked(HistoryReadStop* stop, httplib::Client* client) : stop_(stop) {
    if (stop_) stop_->track(client);
  }
  ~Tracked() {
    if (stop_) stop_->track(nullptr);
  }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  Tracked(Tracked&&) = delete;
  Tracked& operator=(Tracked&&) = delete;

  bool stopped() const { return stop_ && stop_->stopped(); }

 private:
  HistoryReadStop* stop_;
};

}  // namespace

Result<HistorySnapshot> read_history(const PrometheusSource& source, const HistoryPolicy& policy,
                                     HistoryReadStop* stop) {
  httplib::Client client(source.url);
  if (!client.is_valid()) {
    return Status::invalid_argument("--prometheus " + source.url + " is not an http:// or https:// URL");
  }
  // Connecting holds the client, so a stop() waits it out: a Prometheus in
  // the cluster answers a connection in milliseconds.
  client.set_connection_timeout(std::min(source.timeout_seconds, kConnectSeconds), 0);
  client.set_read_timeout(source.timeout_seconds, 0);
  client.set_write_timeout(source.timeout_seconds, 0);
  // The URL's path (a Prometheus behind a proxy at /prometheus) goes before
  // every API path; httplib::Client keeps only scheme, host and port.
  std::string prefix;
  if (const std::size_t scheme = source.url.find("://"); scheme != std::string::npos) {
    if (const std::size_t path = source.url.find('/', scheme + 3); path != std::string::npos)
      prefix = source.url.substr(path);
  }
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::vector<std::vector<Sample>> answers;
  const Tracked tracked(stop, &client);
  for (const HistoryQuery& query : history_queries(policy)) {
    if (tracked.stopped()) return Status::io_error(source.url + ": stopped");
    std::string body;
    bool too_large = false;
    const httplib::Params params{{"query", query.promql}};
    const auto response =
        client.Get(prefix + "/api/v1/query", params, httplib::Headers{}, [&](const char* data, std::size_t length) {
          if (body.size() + length > source.max_answer_bytes) {
            too_large = true;
            return false;
          }
          body.append(data, length);
          return true;
        });
    const std::string about = source.url + " (" + query.role + ")";
    if (too_large) {
      return Status::failure(ProblemCode::kTooLarge, "",
                             about + ": the answer is larger than " + std::to_string(source.max_answer_bytes >> 20) +
                                 " MiB; shorten history.window");
    }
    if (!response) return Status::io_error(about + ": " + httplib::to_string(response.error()));
    auto samples = parse_vector_answer(body);
    if (!samples) {
      if (!query.required) {
        answers.emplace_back();
        continue;
      }
      return Status::io_error(about + ": HTTP " + std::to_string(response->status) + ": " + samples.error());
    }
    answers.push_back(std::move(samples).value());
  }
  return join_history(policy, answers, static_cast<int64_t>(std::time(nullptr)));
}

}  // namespace gpusizer
