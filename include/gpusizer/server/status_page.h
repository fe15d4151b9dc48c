// The status page (GET /status on the metrics listener): one self-contained
// HTML page showing the active policy's tables, counters since start and the
// last decisions. The counters and the recent-decision ring are filled by
// the server threads; rendering is a pure function of their snapshots.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/admission/pod_decision.h"
#include "gpusizer/admission/review.h"
#include "gpusizer/server/claim_watcher.h"
#include "gpusizer/server/history_refresher.h"
#include "gpusizer/server/node_watcher.h"
#include "gpusizer/server/pool_watcher.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer {

// The Content-Type to serve render_status_page() with.
inline constexpr const char* kStatusPageContentType = "text/html; charset=utf-8";

// One answered review as the status page lists it. Its strings come from
// the review, possibly a forged one, and are kept for 100 reviews: each is
// stored bounded and shown as printable() shows it (kubernetes_names.h: a kind,
// namespace or name Kubernetes would refuse is quoted short; messages are
// cut by shown_message), and HTML-escaped when rendered.
struct DecisionRecord {
  std::chrono::system_clock::time_point time;
  std::string endpoint;   // mutate | validate
  std::string kind;       // Pod, Workflow, ...; empty for a malformed review
  std::string operation;  // CREATE, UPDATE, ...; empty for a malformed review
  std::string object;     // namespace/name, or name for cluster-scoped objects; empty when unknown
  std::string decision;   // allowed | mutated | denied | error
  bool dry_run = false;
  std::vector<std::string> details;  // changes, denial messages, warnings or the error
};

// The most details one record keeps; past it the last detail says how many
// more there were (a workload with hundreds of templates must not make the
// ring hold megabytes).
inline constexpr std::size_t kMaxDecisionDetails = 20;

// The most bytes /status and the review's log line keep of one message (a
// change, denial, warning or error). Messages quote what they read short
// (in_quotes), but one may still be long (a path of many steps, a denial
// naming many containers).
inline constexpr std::size_t kMaxShownMessageBytes = 1024;

// A message as /status and the log show it: printable(), cut at
// kMaxShownMessageBytes.
std::string shown_message(std::string_view message);

// A list of messages as /status and the review's log line show it: each
// shown_message(), at most kMaxDecisionDetails, the last of them "... and N
// more" when more were added. A workflow of 40,000 templates makes 80,000
// denials: the list keeps 20 and counts the rest, never 27 MB of log line.
class ShownMessages {
 public:
  void add(std::string_view message) {
    if (shown_.size() < kMaxDecisionDetails) {
      shown_.push_back(shown_message(message));
    } else {
      ++past_limit_;
    }
  }
  bool full() const { return shown_.size() >= kMaxDecisionDetails; }
  bool empty() const { return shown_.empty(); }
  std::vector<std::string> take() &&;

 private:
  std::vector<std::string> shown_;
  std::size_t past_limit_ = 0;
};

// The record of one answered review at `time`. Details, in order: each pod's
// changes (prefixed with the pod template's description for workload kinds,
// as in auditAnnotations.sized), its denials, its warnings when it made no
// change (audit "would deny", validate-time findings, undecided templates;
// a change's own warning repeats the change), then the error of a rejected
// review. At most kMaxDecisionDetails entries.
DecisionRecord make_decision_record(Endpoint endpoint, const ReviewOutcome& outcome,
                                    std::chrono::system_clock::time_point time = std::chrono::system_clock::now());

// The last `capacity` records. Thread-safe: any number of threads may add()
// while others read; each call sees a consistent state.
class RecentDecisions {
 public:
  // At least one record is kept, whatever capacity says.
  explicit RecentDecisions(std::size_t capacity = 100);

  // Appends a record, dropping the oldest once `capacity` are held.
  // "Newest" is the order of add() calls, not of record.time.
  void add(DecisionRecord record);

  // A copy of the held records, the most recently added first.
  std::vector<DecisionRecord> newest_first() const;

  std::size_t capacity() const { return capacity_; }
  // Records added since construction, including the ones since dropped.
  uint64_t total_added() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<DecisionRecord> records_;  // oldest at the front
  uint64_t total_added_ = 0;
};

// Counters since start. Thread-safe and lock-free (relaxed atomics): each
// value is exact, but a snapshot taken while reviews are being counted may
// mix one review's increments with the next's.
class StatusCounters {
 public:
  // A copy of every counter at one moment.
  struct Snapshot {
    std::chrono::system_clock::time_point started;
    uint64_t allowed = 0;
    uint64_t mutated = 0;
    uint64_t denied = 0;
    uint64_t error = 0;
    uint64_t dry_run = 0;           // reviews with dryRun: true, whatever their decision
    uint64_t corrections = 0;       // container resource requests raised, dry-run excluded
    uint64_t reloads = 0;           // policy file changes accepted
    uint64_t rejected_reloads = 0;  // policy file changes rejected (the old policy stayed)
    uint64_t reviews() const { return allowed + mutated + denied + error; }
  };

  explicit StatusCounters(std::chrono::system_clock::time_point started = std::chrono::system_clock::now());

  // One answered review: its decision, whether it was a dry run, and (unless
  // a dry run, which changes nothing) each Raise of each pod as a correction,
  // the way gpu_sizer_corrections_total counts them.
  void count_review(const ReviewOutcome& outcome);
  // A changed policy file: accepted (the policy was swapped) or rejected.
  // Unchanged polls are not counted.
  void count_reload(bool accepted);

  std::chrono::system_clock::time_point started() const { return started_; }
  Snapshot snapshot() const;

 private:
  const std::chrono::system_clock::time_point started_;
  std::atomic<uint64_t> allowed_{0}, mutated_{0}, denied_{0}, error_{0};
  std::atomic<uint64_t> dry_run_{0}, corrections_{0}, reloads_{0}, rejected_reloads_{0};
};

// UTC ISO 8601 with milliseconds: "2025-03-01T12:34:56.789Z".
std::string format_utc(std::chrono::system_clock::time_point time);

// The whole page, as of `now`: a self-contained HTML5 document (inline CSS,
// no scripts, no external URLs; a Content-Security-Policy meta tag forbids
// loading anything), showing
//  - a header with the version, start time, uptime and the active policy's
//    source, sha256, mode, namespace modes, excluded namespaces, GPU
//    resources, denyFromGpus, default profile and profile rules;
//  - a table per profile with the effective rows (required_resources and
//    set_hint) for 1..max(8, last table row) GPUs, capped at maxGpus,
//    interpolated rows marked "interpolated" (CSS class "interpolated"),
//    plus its storage and maxGpus; a profile without a table says it sizes
//    no CPU or memory;
//  - the node inventory: where decisions get their nodes (the watch, its
//    state, nodes, GPU shapes, last sync, restarts and last error; or the
//    policy's nodeFit.pools; or none);
//  - the DRA objects: each kind's watch state, objects, last sync and
//    last error (when serve watches them);
//  - the autoscaler pools: each kind's collection, or why it is not
//    watched (its CRD not served), its watch state, objects and last error;
//  - the counters;
//  - the held decisions newest first: time (format_utc), endpoint, kind and
//    operation, object, decision (CSS class "decision-<name>" gives its
//    colour), a dry-run mark, details.
// Every string from the policy or from reviews is escaped with html_escape.
// `nodes` is the node watch's status (node_watcher.h); nullopt when serve
// does not watch nodes, and the page says what decisions use instead.
// `dra` is the DRA watch's (claim_watcher.h), one per kind; empty when
// serve does not watch DRA objects. `pools` is the autoscaler pools'
// (pool_watcher.h), one per kind; empty when serve does not watch them.
std::string render_status_page(const Policy& policy, const StatusCounters& counters, const RecentDecisions& recent,
                               const std::optional<NodeWatchStatus>& nodes, const std::vector<DraWatchStatus>& dra,
                               const std::vector<PoolWatchStatus>& pools,
                               const std::optional<HistoryRefreshStatus>& history, const std::string& version,
                               std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

}  // namespace gpusizer
