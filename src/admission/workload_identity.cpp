#include "gpusizer/admission/workload_identity.h"

#include <algorithm>
#include <utility>

#include "gpusizer/admission/pod_fields.h"

namespace gpusizer {
namespace {

// k8s.io/apimachinery/pkg/util/rand's alphanums and the length
// names.SimpleNameGenerator appends (generateName; also the
// pod-template-hash's alphabet, a subset).
constexpr std::string_view kGeneratedAlphabet = "bcdfghjklmnpqrstvwxz2456789";
constexpr std::size_t kGeneratedLength = 5;
// Unix time in minutes (CronJob controller v2: 8 digits until 2160) or
// seconds (controller v1, Argo CronWorkflow: 10 digits).
constexpr std::size_t kFewestTimeDigits = 8;
constexpr std::size_t kMostTimeDigits = 10;

// The labels operators put on their pods naming the root workload, first
// found wins. A Kubeflow Trainer TrainJob's JobSet has its name; a RayJob's
// cluster is the RayJob's name plus a generated suffix.
struct RootLabel {
  std::string_view label;
  std::string_view kind;
};
constexpr RootLabel kRootLabels[] = {
    {"jobset.sigs.k8s.io/jobset-name", "JobSet"},
    {"leaderworkerset.sigs.k8s.io/name", "LeaderWorkerSet"},
    {"workflows.argoproj.io/workflow", "Workflow"},
    {"volcano.sh/job-name", "Job.batch.volcano.sh"},
    {"serving.kserve.io/inferenceservice", "InferenceService"},
    {"ray.io/cluster", "RayCluster"},
};

bool made_of(std::string_view text, std::string_view alphabet) {
  return std::all_of(text.begin(), text.end(), [&](char c) { return alphabet.find(c) != std::string_view::npos; });
}

// The part after the last "-", and the name before it ("" when none).
std::pair<std::string_view, std::string_view> split_last(std::string_view name) {
  const std::size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return {name, {}};
  return {name.substr(0, dash), name.substr(dash + 1)};
}

const std::string* label(const PodOrigin& pod, std::string_view key) {
  const auto found = pod.labels.find(key);
  return found == pod.labels.end() || found->second.empty() ? nullptr : &found->second;
}

// NAME without a trailing "-" and 5 characters of generateName's alphabet.
std::string_view without_random_suffix(std::string_view name) {
  const auto [before, last] = split_last(name);
  return !before.empty() && last.size() == kGeneratedLength && made_of(last, kGeneratedAlphabet) ? before : name;
}

// NAME without a trailing "-" and a Unix time.
std::string_view without_time_suffix(std::string_view name) {
  const auto [before, last] = split_last(name);
  return !before.empty() && last.size() >= kFewestTimeDigits && last.size() <= kMostTimeDigits &&
                 made_of(last, "0123456789")
             ? before
             : name;
}

// The labels workload_identity reads.
bool identity_label(std::string_view key) {
  return key == kWorkloadLabel || key == "pod-template-hash" ||
         std::any_of(std::begin(kRootLabels), std::end(kRootLabels),
                     [&](const RootLabel& root) { return root.label == key; });
}

}  // namespace

PodOrigin read_pod_origin(JsonView metadata) {
  PodOrigin pod;
  pod.name = string_member(metadata, "name");
  pod.generate_name = string_member(metadata, "generateName");
  metadata["labels"].for_each_member([&](std::string_view key, JsonView value) {
    if (identity_label(key) && value.is_string()) pod.labels.emplace(key, value.string());
  });
  const JsonView owner = controlling_owner(metadata["ownerReferences"]);
  pod.owner_kind = string_member(owner, "kind");
  pod.owner_name = string_member(owner, "name");
  return pod;
}

std::string without_generated_suffix(std::string_view name) {
  if (name.size() > 1 && name.back() == '-') name.remove_suffix(1);
  bool random_removed = false;
  bool time_removed = false;
  // One of each, in either order (<cronjob>-<time> made with a
  // generateName, <base>-<random> run on a schedule).
  for (int pass = 0; pass < 2; ++pass) {
    if (const std::string_view shorter = without_random_suffix(name); !random_removed && shorter.size() < name.size()) {
      name = shorter;
      random_removed = true;
    } else if (const std::string_view earlier = without_time_suffix(name);
               !time_removed && earlier.size() < name.size()) {
      name = earlier;
      time_removed = true;
    }
  }
  return std::string(name);
}

WorkloadIdentity workload_identity(const PodOrigin& pod) {
  if (const std::string* named = label(pod, kWorkloadLabel)) {
    return {"Workload", *named, std::string("label ") + kWorkloadLabel};
  }
  for (const RootLabel& root : kRootLabels) {
    if (const std::string* name = label(pod, root.label)) {
      return {std::string(root.kind), without_generated_suffix(*name), "label " + std::string(root.label)};
    }
  }
  if (pod.owner_kind == "ReplicaSet") {
    // A Deployment's ReplicaSet is <deployment>-<pod-template-hash>.
    const std::string* hash = label(pod, "pod-template-hash");
    if (auto [before, last] = split_last(pod.owner_name); hash && !before.empty() && last == *hash) {
      return {"Deployment", without_generated_suffix(before),
              "ReplicaSet " + pod.owner_name + " and its pod-template-hash"};
    }
  }
  if (pod.owner_kind == "Job") {
    // A CronJob's Job is <cronjob>-<scheduled time>.
    if (const std::string_view cronjob = without_time_suffix(pod.owner_name); cronjob.size() < pod.owner_name.size()) {
      return {"CronJob", std::string(cronjob), "Job " + pod.owner_name + ", named for its schedule"};
    }
  }
  if (!pod.owner_kind.empty() && !pod.owner_name.empty()) {
    return {pod.owner_kind, without_generated_suffix(pod.owner_name), "ownerReferences " + pod.owner_kind};
  }
  const std::string& own = pod.name.empty() ? pod.generate_name : pod.name;
  return {"Pod", without_generated_suffix(own), pod.name.empty() ? "generateName" : "name"};
}

}  // namespace gpusizer
