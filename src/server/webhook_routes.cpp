#include "gpusizer/server/webhook_routes.h"

#include <chrono>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "gpusizer/admission/review.h"
#include "gpusizer/json/json_text.h"
#include "gpusizer/server/log.h"
#include "gpusizer/util/kubernetes_names.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

constexpr std::string_view kText = "text/plain";

// One line per review: who, what, the decision and what changed; never the
// body (it may hold secrets in env values).
void log_review(Endpoint endpoint, const ReviewOutcome& o, double seconds) {
  const auto level = o.decision == ReviewOutcome::Decision::kError ? spdlog::level::warn : spdlog::level::info;
  if (!review_line_wanted(level)) return;
  // Bounded and escaped as /status shows them: a forged review's megabyte
  // namespace, a newline in a uid or a workflow's 80,000 denials stay out
  // of the log.
  ShownMessages changes;
  ShownMessages denials;
  for (const auto& pod : o.pods) {
    for (const std::string& change : pod.changes) changes.add(change);
    for (const std::string& denial : pod.denials) denials.add(denial);
  }
  // Keys in sorted order, as log_event writes every other line's.
  LogLine line(log_format(), "review");
  if (o.bypass) line.add_json("bypass", to_json_text({{"name", o.bypass->name}, {"reason", o.bypass->reason}}));
  if (!changes.empty()) line.add_strings("changes", std::move(changes).take());
  line.add_string("decision", to_string(o.decision));
  if (!denials.empty()) line.add_strings("denials", std::move(denials).take());
  line.add_bool("dry_run", o.dry_run);
  line.add_int("duration_us", static_cast<int64_t>(seconds * 1e6));
  line.add_string("endpoint", endpoint == Endpoint::kMutate ? "mutate" : "validate");
  if (o.problem) {
    line.add_string("error", shown_message(o.problem->message));
    line.add_string("error_code", to_string(o.problem->code));
  }
  line.add_string("kind", shown_kind(o.kind));
  line.add_string("object", shown_object(o.namespace_name, o.name));
  line.add_string("operation", shown_operation(o.operation));
  line.add_string("uid", printable(o.uid, kQuotedBytes));
  log_review_line(level, line);
}

}  // namespace

WebhookRoutes::WebhookRoutes(WebhookState state)
    : state_(state), body_limit_(std::to_string(state.max_body_bytes) + " bytes (--max-body-bytes)") {}

HttpAnswer WebhookRoutes::answer(const HttpRequestView& request) const {
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (request.method == "POST" && request.path == "/mutate") return review(Endpoint::kMutate, request);
  if (request.method == "POST" && request.path == "/validate") return review(Endpoint::kValidate, request);
  if (get && request.path == "/healthz") return {200, kText, "ok\n"};
  if (get && request.path == "/readyz") {
    if (state_.stopping) return {503, kText, "shutting down\n"};
    return {200, kText, "ready\n"};
  }
  return json_error(404, "no route " + printable(request.method, kQuotedBytes) + " " +
                             printable(request.path, kQuotedBytes) +
                             " (use POST /mutate, POST /validate, GET /healthz, GET /readyz)");
}

HttpAnswer WebhookRoutes::review(Endpoint endpoint, const HttpRequestView& request) const {
  const auto started = std::chrono::steady_clock::now();
  HttpAnswer answer;
  ReviewOutcome refused;
  const ReviewOutcome* outcome = &refused;
  HttpReply reply;
  if (state_.require_client_certificate && !request.verified_client) {
    refused.problem =
        Problem{ProblemCode::kMissingField, "",
                "a client certificate signed by --client-ca is required for " + std::string(request.path) +
                    " (the API server presents one when its admission config names a client "
                    "certificate for this webhook)"};
    answer = json_error(403, refused.problem->message);
  } else if (request.content_type.find("application/json") == std::string_view::npos) {
    refused.problem = Problem{ProblemCode::kBadValue, "Content-Type",
                              "Content-Type must be application/json, found " + in_quotes(request.content_type)};
    answer = json_error(415, refused.problem->message);
  } else {
    const auto nodes = state_.nodes ? state_.nodes->inventory() : nullptr;
    const auto claims = state_.claims ? state_.claims->inventory() : nullptr;
    const auto history = state_.history ? state_.history->snapshot() : nullptr;
    reply = handle_review(*state_.policy.current(), endpoint, request.body,
                          ClusterView{nodes.get(), claims.get(), history.get()}, request.body_capacity);
    answer = {reply.status, "application/json", std::move(reply.body)};
    outcome = &reply.outcome;
  }
  // Every answered review is counted, listed on /status and logged.
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  state_.metrics.count_review(endpoint, *outcome, seconds);
  state_.status_counters.count_review(*outcome);
  state_.recent_decisions.add(make_decision_record(endpoint, *outcome));
  log_review(endpoint, *outcome, seconds);
  return answer;
}

HttpAnswer WebhookRoutes::body_too_large() const {
  return refusal(413, "request body exceeds the size limit of " + body_limit_);
}

HttpAnswer WebhookRoutes::length_required() const {
  return refusal(411, "a request body needs a Content-Length header, at most " + body_limit_ +
                          "; chunked transfer encoding is not accepted");
}

}  // namespace gpusizer
