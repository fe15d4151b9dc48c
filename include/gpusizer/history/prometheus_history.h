// History read from Prometheus' HTTP API (docs/history.md "Queries"): the
// instant queries over the policy's window, each answered per (namespace,
// pod, container) and joined on the pods gpu-sizer stamped with
// gpu-sizer.io/workload (kube-state-metrics' kube_pod_annotations). Used
// by `gpu-sizer report` and by serve's background refresh; never on the
// admission path.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gpusizer/sizing/history.h"
#include "gpusizer/util/result.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace gpusizer {

// Where Prometheus is, and how long and how much one answer may take.
struct PrometheusSource {
  std::string url;  // http://host:port or https://host:port, with an optional path prefix
  int timeout_seconds = 30;
  // One answer larger than this fails (a window over a large cluster's
  // every container); the snapshot is bounded by it too.
  std::size_t max_answer_bytes = std::size_t{64} << 20;
};

// One query history runs, by what it reads.
struct HistoryQuery {
  std::string role;  // "memory peak", as errors and docs name it
  std::string promql;
  bool required = true;  // false: its series may be absent (DCGM exporter)
};

// The queries for a policy, in the order they run. The first reads the
// stamped pods; each other answers one value per (namespace, pod, container).
std::vector<HistoryQuery> history_queries(const HistoryPolicy& policy);

// One sample of an instant vector: its labels and value.
struct Sample {
  std::map<std::string, std::string, std::less<>> labels;
  double value = 0;
};

// Parses an /api/v1/query answer of resultType vector. Fails naming what is
// wrong: Prometheus' own error ("bad_data: parse error at char 12 ..."), a
// result that is not a vector, a sample without a value.
Result<std::vector<Sample>> parse_vector_answer(std::string_view body);

// Joins the answers of history_queries() (in that order) into a snapshot:
// pods stamped with a workload key, each container's runs.
HistorySnapshot join_history(const HistoryPolicy& policy, const std::vector<std::vector<Sample>>& answers,
                             int64_t fetched_at);

// Ends a read_history in flight from another thread, as ApiClient::stop()
// does a request to the API server: a Prometheus that accepts and never
// answers would otherwise hold serve's SIGTERM for its timeout per query.
class HistoryReadStop {
 public:
  // Shuts the connection of the query in flight; that read and every later
  // one fail at once. A stop() that lands after a read has taken its client
  // and before the query is sent is missed by that query: call it again
  // until the reading thread is done.
  void stop();
  bool stopped() const;

  // For read_history: the client of the read in flight, nullptr when it
  // ends.
  void track(httplib::Client* client);

 private:
  mutable std::mutex mutex_;
  httplib::Client* active_ = nullptr;
  bool stopped_ = false;
};

// Runs the queries against Prometheus and joins them. Fails naming the URL,
// the query's role and the reason; an optional query that fails is left
// empty. `stop` (may be nullptr) ends it from another thread.
Result<HistorySnapshot> read_history(const PrometheusSource& source, const HistoryPolicy& policy,
                                     HistoryReadStop* stop = nullptr);

}  // namespace gpusizer
