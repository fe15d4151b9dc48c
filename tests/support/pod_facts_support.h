// PodFacts written in C++ for the tests of the rules and the decider: a
// pod as the reader would have read it, without JSON.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/sizing/pod_facts.h"
#include "gpusizer/sizing/pod_sizing.h"
#include "gpusizer/sizing/policy.h"
#include "gpusizer/sizing/rule.h"

namespace gpusizer::testing {

inline Quantity q(const std::string& text) {
  auto parsed = Quantity::parse(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? parsed.value() : Quantity();
}

inline constexpr std::string_view kGpu = "nvidia.com/gpu";

// Resource names point at these constants, as a read pod's point into its
// document.
inline Quantities quantities(std::initializer_list<std::pair<std::string_view, const char*>> items) {
  Quantities out;
  for (const auto& [resource, text] : items) out.add(resource, q(text));
  return out;
}

// A container at spec.containers[index] asking for `gpus` GPUs, with equal
// requests and limits of cpu and memory.
inline ContainerFacts gpu_container(const std::string& name, int64_t gpus, const char* cpu, const char* memory,
                                    std::size_t index = 0) {
  ContainerFacts c;
  c.name = name;
  c.path = {"spec", "containers", std::to_string(index)};
  c.requests = quantities({{kCpu, cpu}, {kMemory, memory}});
  c.limits = c.requests;
  c.gpus = gpus;
  if (gpus > 0) c.gpu_resource = kGpu;  // as the reader records it
  return c;
}

// A pod of these app containers, "pod default/train-x".
inline PodFacts pod_of(std::vector<ContainerFacts> app, Mode mode = Mode::kMutate) {
  PodFacts pod;
  pod.description = "pod default/train-x";
  pod.mode = mode;
  pod.app = std::move(app);
  pod.volume_lists = {{"spec", "volumes"}};
  return pod;
}

// A memory-backed emptyDir in the pod's own volume list, mounted at
// /dev/shm by every GPU container.
inline void add_shm(PodFacts& pod, std::string_view name, const char* size_limit) {
  VolumeFacts volume;
  volume.name = name;
  volume.index = pod.volumes.size();
  volume.memory_backed = true;
  if (size_limit) volume.size_limit = q(size_limit);
  pod.volumes.push_back(volume);
  for (ContainerFacts& c : pod.app) {
    if (c.gpus > 0) c.shm_volume = std::string(name);
  }
}

inline const Profile& profile(const Policy& policy, const char* name) {
  const Profile* found = policy.find_profile(name);
  EXPECT_NE(found, nullptr) << name;
  return *found;
}

// Runs one rule as the decider does; `sized` answers check rules.
inline RuleResult evaluate(const Rule& rule, const Policy& policy, const PodFacts& pod, const char* profile_name,
                           bool explain = false, PodRequest sized = {}) {
  const PodPhases phases = pod_phases(pod);
  RuleInput input{policy, pod, phases, profile(policy, profile_name), "defaultProfile", explain};
  input.sized = [sized] { return sized; };
  return rule.evaluate(input);
}

inline std::string all(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "\n  " + line;
  return out;
}

}  // namespace gpusizer::testing
