// AdmissionReviews shaped to cost the most per byte (issue 25): a pod or a
// workload with N of whatever the handler does work for per item
// (containers, init containers, /dev/shm volumes, Argo templates, JobSet
// jobs, pods found by shape, workflow-wide volumes and scheduling,
// annotations, unchanged templates of an UPDATE). Written as text, without
// a JSON library, so that reviews of millions of items are made in
// milliseconds.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpusizer::bench {

struct HostileShape {
  std::string name;  // "pod-gpu-containers"
  std::string what;  // what N counts, for the results table
  // Whether the shape does its per-item work only against a node
  // inventory (node caps, candidate filter).
  bool needs_nodes = false;
  // The AdmissionReview with n items.
  std::string (*review)(std::size_t n) = nullptr;
};

const std::vector<HostileShape>& hostile_shapes();
const HostileShape& hostile_shape(std::string_view name);

// The largest n whose review is at most max_bytes (reviews grow linearly in n).
std::size_t items_for_bytes(const HostileShape& shape, std::size_t max_bytes);

}  // namespace gpusizer::bench
