// AdmissionReview v1 in and out: the envelope around pod decisions. Bytes in,
// bytes out, so the server, the tests and the fuzzers share one entry point.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// Which object is decided: its API group and kind (any version), namespace
// and name (or generateName followed by "*").
struct ObjectIdentity {
  std::string group;
  std::string kind;
  std::string namespace_name;
  std::string name;
  // Under review by the API server, whose mutating admission plugins
  // (ExtendedResourceToleration) ran before its webhooks: a Pod's
  // tolerations are final. Offline checks see manifests before them.
  bool admitted = false;
  // An in-place resize of a running Pod (UPDATE of pods/resize).
  bool resize = false;
};

// What decide_object decided for one object.
struct ObjectDecision {
  std::vector<PodDecision> pods;  // one per pod decided
  // About the object as a whole (validating endpoint only): a kind no
  // table names whose pods were found by their shape.
  std::vector<std::string> warnings;
  // GPU asks outside every pod read (validating endpoint only): the
  // webhook warns with the brief, `check` reports the message as an error.
  struct Unsized {
    std::string message;  // every place named
    std::string brief;    // under 120 characters, what to do first
  };
  std::vector<Unsized> unsized;
};

// Decides every pod of one object: the Pod itself, or each pod template of
// a workload kind (workloads.h: the policy's workloads list, then the
// built-in table; for any other kind, the pods found by their shape), each
// on its own GPU count. Patch operations go to `patch`, whose document is
// `object`. With an old_object (an UPDATE), templates equal to the old
// object's at the same place are not decided: an update that leaves them
// alone (a label, a finalizer, a scale) must not be blocked or patched, and
// some templates (Job's) are immutable. With explain, each decision lists
// its rules (gpu-sizer explain). `cluster` is what is known of the cluster
// (pod_reader.h): its nodes (the watched ones, a --nodes file) and DRA
// objects (the watched ones, those of the checked files).
ObjectDecision decide_object(const Policy& policy, Endpoint endpoint, const ObjectIdentity& id, JsonView object,
                             PatchBuilder& patch, JsonView old_object = {}, bool explain = false,
                             const ClusterView& cluster = {});

// What one review decided, for logs and metrics.
struct ReviewOutcome {
  enum class Decision { kAllowed, kMutated, kDenied, kError };
  Decision decision = Decision::kError;
  std::string uid;
  std::string kind;
  std::string operation;
  std::string namespace_name;
  std::string name;
  bool dry_run = false;
  std::vector<PodDecision> pods;    // one per pod decided
  std::optional<Exemption> bypass;  // set when a policy exemption skipped sizing
  std::optional<Problem> problem;   // for kError: why the review was rejected
};
std::string_view to_string(ReviewOutcome::Decision decision);

struct HttpReply {
  int status = 200;
  std::string body;  // JSON: an AdmissionReview, or {"error": ...} for 4xx
  ReviewOutcome outcome;
};

// Answers one AdmissionReview request body. Malformed reviews get 400 with
// a JSON error naming what is wrong; every 200 answer echoes the uid,
// apiVersion and kind and sets `allowed` explicitly.
// `cluster`: as decide_object's. `body_capacity`: the bytes readable from
// body.data(), as JsonReader::parse's capacity (a server reserves
// kJsonPadding past the body it reads: no copy of it per review).
HttpReply handle_review(const Policy& policy, Endpoint endpoint, std::string_view body, const ClusterView& cluster = {},
                        std::size_t body_capacity = 0);

// Keeps each warning under 120 characters, all of them well under the API
// server's 4096-character total and at most 20 of them (kubectl prints a
// line each), the last then a summary of what is cut.
std::vector<std::string> cap_warnings(std::vector<std::string> warnings);

}  // namespace gpusizer
