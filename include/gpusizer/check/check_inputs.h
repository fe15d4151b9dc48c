// The files `gpu-sizer check` reads, and what it reads from all of them
// before deciding any pod: the DRA objects (a pod's claim template may be
// in another file of the same check).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusizer/check/input_limits.h"
#include "gpusizer/sizing/device_claims.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

// One file named. Files are read twice (for DRA objects, then to check)
// rather than all held at once; stdin, which can be read only once, is
// held.
struct CheckInput {
  std::string path;  // "-": stdin
  std::optional<Result<std::string>> stdin_text;
  std::string dra_error;  // a DRA object of it that cannot be read, named

  Result<std::string> text(const InputLimits& limits) const {
    return stdin_text ? *stdin_text : read_input(path, limits);
  }
};

// "stdin" for "-".
std::string shown_path(const std::string& path);

// The JSON Pointers of a document's objects: a List's items (as kubectl
// get -o yaml prints), an OpenShift Template's objects, or the document
// itself ("").
std::vector<std::string> object_pointers(const nlohmann::json& document);

// The DRA objects of every input (sizing/device_claims.h). Only files that
// name resource.k8s.io are parsed for them; one that cannot be parsed is
// left for its check to report, and a DRA object that cannot be read sets
// its input's dra_error. `known` (the --nodes file's ResourceSlices) come first.
std::shared_ptr<const ClaimInventory> read_claim_objects(std::vector<CheckInput>& inputs, const InputLimits& limits,
                                                         std::vector<DraObject> known = {});

}  // namespace gpusizer
