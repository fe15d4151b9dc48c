// Shared by the load test's sources (tests/load): its options, the schedule
// of faults, the mix of requests and what each connection saw, and the
// report the run ends with.
//   loadtest.cpp        the command line and the run: load, faults, SIGTERM
//   load_generator.cpp  the mix of reviews, their expected answers, and the
//                       connections sending them on a fixed schedule
//   load_report.cpp     the tally, the bar the run must meet, and the summary
//                       printed and written as JSON
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/types.h>

#include "gpusizer/admission/review.h"

namespace gpusizer::testing {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Decision = ReviewOutcome::Decision;

struct Options {
  double duration_seconds = 180;
  double rate = 200;  // requests per second, over all connections
  int connections = 8;
  // Each connection is closed and reopened this often, so new handshakes
  // happen all through the run, before and after the rotation.
  double reconnect_seconds = 5;
  int shutdown_delay_seconds = -1;  // -1: 5% of the duration, at least 1 s
  std::string json_path;
  std::string server_log_path;
};

// When each fault happens, as fractions of the duration. Warm-up ends before
// the first fault, so the memory baseline is taken on the steady load alone.
inline constexpr double kWarmupEnds = 0.15;
inline constexpr double kValidPolicyAt = 0.20;
inline constexpr double kInvalidPolicyAt = 0.40;
inline constexpr double kValidAgainAt = 0.55;
inline constexpr double kRotationAt = 0.70;
inline constexpr double kSigtermAt = 0.90;

// One kind of request in the mix, with the answer it must get.
struct Case {
  std::string name;
  Endpoint endpoint;
  Decision intended;  // what the case is there to exercise; checked against the expected answer
  std::string path;
  std::string body_before_uid, body_after_uid;
  int expected_status = 0;
  json expected;  // the answer's AdmissionReview, with kExpectedUid as its uid
};

// One request as the client saw it.
struct Request {
  double sent_seconds = 0;  // since the load started
  double latency_ms = 0;
  std::size_t case_index = 0;
  enum class Result { kCorrect, kFailed, kWrong } result = Result::kCorrect;
};

// A failed or wrong request, for the report.
struct Problem {
  double sent_seconds;
  Request::Result result;
  std::string text;  // the case, the path and what happened
};

// What a connection saw, kept per thread and merged once the load stops.
struct ConnectionLog {
  std::vector<Request> requests;
  std::vector<Problem> problems;
  double max_lag_ms = 0;  // how late a request left after its scheduled time
  int connections_opened = 0;
};

struct LoadPlan {
  const std::vector<Case>* cases;
  int port;
  std::string ca_bundle;
  Clock::time_point start;
  Clock::time_point end;
  double interval_seconds;  // between two requests of one connection
  int connections;
  double reconnect_seconds;
};

struct ServerSample {
  double seconds;  // since the load started
  long rss_kib;
  double cpu_seconds;
};

struct Tally {
  uint64_t sent = 0, answered = 0, failed = 0, wrong = 0;
  void add(const Tally& other) {
    sent += other.sent, answered += other.answered, failed += other.failed, wrong += other.wrong;
  }
  json to_json() const { return {{"sent", sent}, {"answered", answered}, {"failed", failed}, {"wrong", wrong}}; }
};

// Everything the run measured and saw, printed and written as JSON.
struct Report {
  Options options;
  std::vector<Case>* cases = nullptr;
  double sigterm_seconds = 0;
  json faults = json::array();  // each fault: when, what, what was observed

  // Requests, split at the moment SIGTERM was sent.
  Tally before, after, all;
  std::vector<uint64_t> sent_per_case;  // before SIGTERM
  std::vector<double> latencies_ms;     // correct answers before SIGTERM, sorted
  double achieved_rate = 0;
  double max_lag_ms = 0;
  int connections_opened = 0;
  std::vector<Problem> problems;  // before SIGTERM, or wrong answers at any time
  std::map<std::string, uint64_t> after_sigterm_errors;
  double last_answer_after_sigterm = -1;  // seconds after SIGTERM the last answered request was sent

  // Server process.
  std::vector<ServerSample> samples;  // until SIGTERM
  long warmup_kib = 0, max_kib = 0, end_kib = 0;
  double warmup_at = 0;
  double growth_mib = 0;
  double cpu_percent = 0;  // of one core
  bool new_certificate_served = false, old_certificate_gone = false;
  double rotation_seen_after = 0;
  int readiness_after_sigterm = 0;
  std::optional<int> exit_status;

  // The server's log.
  std::size_t reloaded = 0, rejected = 0, certificate_reloaded = 0, certificate_rejected = 0;
  std::size_t shutdown_logged = 0, stopped_logged = 0, reviews_logged = 0, unexpected_errors = 0, warnings = 0;

  std::vector<std::string> failures;  // why the bar is not met; empty: it is
};

inline double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// loadtest.cpp: the policy texts written during the run.
std::string valid_policy_text(int replacement);
std::string invalid_policy_text();

// load_generator.cpp
std::vector<Case> mixed_cases(const std::string& fixtures);
std::optional<std::string> expect_answers(std::vector<Case>& cases, const std::string& policy_path);
void run_connection(const LoadPlan& plan, int index, ConnectionLog& log);

// load_report.cpp
void tally_requests(const std::vector<ConnectionLog>& logs, Report& r);
void summarise_server(Report& r);
void read_server_log(const std::string& log, Report& r);
void judge(Report& r);
void print_summary(const Report& r);
json to_json(const Report& r);

}  // namespace gpusizer::testing
