// `gpu-sizer check`: the webhook's decisions, offline, on manifest files, for
// CI pipelines and for people before they submit.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpusizer/check/input_limits.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/sizing/nodes.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

struct CheckOptions {
  std::vector<std::string> paths;  // files, directories (their *.yaml, *.yml, *.json), or "-" for stdin
  bool json_output = false;
  bool fix = false;                               // write corrected manifests
  bool in_place = false;                          // ... over the files instead of to stdout
  std::map<std::string, std::string> set_values;  // OSMO --set key=value
  bool strict = false;                            // OSMO: every variable needs a value, not only sizing's
  bool explain = false;  // gpu-sizer explain: every pod's rules; exit 0 unless unreadable or UNSIZED
  // --nodes FILE (node_file.h): the nodes to size against; nullptr: the
  // policy's nodeFit.pools, if any.
  std::shared_ptr<const NodeInventory> nodes;
  // The ResourceSlices of that file: GPU facts its nodes' labels may lack.
  std::vector<DraObject> node_slices;
  InputLimits limits;  // of each file read (and stdin)
};

// Exit codes, as CI reads them.
inline constexpr int kCheckClean = 0;     // every object would be admitted unchanged
inline constexpr int kCheckFindings = 1;  // some object would be changed or denied
// Some input could not be read or parsed, or asks for GPUs where gpu-sizer
// finds no pod to size.
inline constexpr int kCheckUnreadable = 2;

// Checks every document of every path against the policy. The report goes
// to `out` (or, with --fix to stdout, to `err`, leaving `out` for the
// corrected manifests). --fix applies what the webhook would patch in
// mutate mode, whatever the policy's mode, and keeps every other field.
// With options.explain it prints, for every pod, each rule's floor and why
// (table, /dev/shm, data loader, GPU memory, node fit) and the binding one,
// and exits kCheckClean unless an input is unreadable.
int run_check(const Policy& policy, const CheckOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpusizer
