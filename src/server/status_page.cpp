#include "gpusizer/server/status_page.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

#include "gpusizer/sizing/sizing.h"
#include "gpusizer/util/kubernetes_names.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

using Clock = std::chrono::system_clock;

std::string_view endpoint_name(Endpoint endpoint) { return endpoint == Endpoint::kMutate ? "mutate" : "validate"; }

// "3d 4h 5m 6s", leading zero units left out; "0s" for no time.
std::string format_duration(std::chrono::seconds elapsed) {
  int64_t s = std::max<int64_t>(0, elapsed.count());
  const int64_t days = s / 86400, hours = s / 3600 % 24, minutes = s / 60 % 60, seconds = s % 60;
  std::string out;
  if (days) out += std::to_string(days) + "d ";
  if (days || hours) out += std::to_string(hours) + "h ";
  if (days || hours || minutes) out += std::to_string(minutes) + "m ";
  out += std::to_string(seconds) + "s";
  return out;
}

// The CSS, inline: the page loads nothing. Decision colours are named by
// the decision (decision-allowed ...) so the legend and the rows agree.
constexpr std::string_view kStyle = R"css(
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: #fff; }
h1 { font-size: 22px; margin: 0 0 6px; }
.top { display: flex; flex-wrap: wrap; gap: 8px 56px; align-items: flex-start; }
.top .meta { flex: 0 1 auto; }
.top .rules { flex: 1 1 380px; min-width: 0; }
.top h3 { margin-top: 0; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 14px 0 4px; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 0; }
.meta dt { color: var(--muted); }
.meta dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 4px 0 8px; }
th, td { text-align: left; padding: 4px 9px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.interpolated td { background: #fbfbf4; color: #4a4f55; font-style: italic; }
tr.interpolated td.source { font-style: normal; }
.tag { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 12px; line-height: 18px; border: 1px solid var(--line); background: var(--bg); color: var(--muted); white-space: nowrap; font-style: normal; }
.tag.interp { background: #fff8c5; border-color: #d4a72c; color: #7d4e00; }
.tag.dry { background: #ddf4ff; border-color: #54aeff; color: #0550ae; }
.decision { display: inline-block; min-width: 64px; text-align: center; padding: 0 8px; border-radius: 9px; font-weight: 600; font-size: 12px; line-height: 20px; color: #fff; }
.decision-allowed { background: #1a7f37; }
.decision-mutated { background: #0969da; }
.decision-denied { background: #cf222e; }
.decision-error { background: #9a6700; }
.decision-other { background: #59636e; }
.counters { display: flex; flex-wrap: wrap; gap: 10px; margin: 6px 0; }
.counter { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 118px; background: #fff; }
.counter .value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.counter .label { color: var(--muted); font-size: 12px; }
.counter.allowed { border-left: 4px solid #1a7f37; }
.counter.mutated { border-left: 4px solid #0969da; }
.counter.denied { border-left: 4px solid #cf222e; }
.counter.error { border-left: 4px solid #9a6700; }
.profiles { display: flex; flex-wrap: wrap; gap: 0 32px; }
.decisions { width: 100%; }
.decisions td.time { white-space: nowrap; }
.decisions td.object { overflow-wrap: anywhere; max-width: 260px; }
.decisions ul { margin: 0; padding-left: 16px; }
.decisions li { overflow-wrap: anywhere; }
ol.rules { margin: 4px 0; padding-left: 22px; }
.profile p { margin: 4px 0; }
table.sizing code { font-size: 12px; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; }
)css";

void append_meta(std::string& out, std::string_view label, const std::string& value_html) {
  out += "<dt>";
  out += label;
  out += "</dt><dd>";
  out += value_html;
  out += "</dd>\n";
}

std::string list_or_none(const std::vector<std::string>& items) {
  if (items.empty()) return "<span class=\"muted\">none</span>";
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += "<code>" + html_escape(items[i]) + "</code>";
  }
  return out;
}

void render_header(std::string& out, const Policy& policy, const StatusCounters::Snapshot& counts,
                   const std::string& version, Clock::time_point now) {
  out += "<header>\n<h1>gpu-sizer status</h1>\n<div class=\"top\">\n<dl class=\"meta\">\n";
  append_meta(out, "Version", "<code>" + html_escape(version) + "</code>");
  append_meta(out, "Started", "<span class=\"mono\">" + format_utc(counts.started) + "</span>");
  append_meta(out, "Uptime",
              html_escape(format_duration(std::chrono::duration_cast<std::chrono::seconds>(now - counts.started))));
  append_meta(out, "Policy source", "<code>" + html_escape(policy.source) + "</code>");
  append_meta(out, "Policy sha256", "<code>" + html_escape(policy.sha256) + "</code>");
  append_meta(out, "Mode", "<code>" + html_escape(to_string(policy.mode)) + "</code>");
  std::vector<std::string> namespace_modes;
  for (const auto& [ns, mode] : policy.namespace_modes)
    namespace_modes.push_back(ns + ": " + std::string(to_string(mode)));
  append_meta(out, "Namespace modes", list_or_none(namespace_modes));
  append_meta(out, "Exempt namespaces", list_or_none(policy.exemptions.namespaces));
  append_meta(out, "Exempt users", list_or_none(policy.exemptions.users));
  append_meta(out, "Exempt groups", list_or_none(policy.exemptions.groups));
  append_meta(out, "GPU resources", list_or_none(policy.gpu_resources));
  append_meta(out, "Deny from", std::to_string(policy.deny_from_gpus) + " GPUs (memory below the table)");
  append_meta(out, "Default profile", "<code>" + html_escape(policy.default_profile) + "</code>");
  out += "</dl>\n";
  if (!policy.profile_rules.empty()) {
    out += "<div class=\"rules\">\n<h3>Profile rules <span class=\"muted\">(after the label or annotation <code>";
    out += html_escape(kProfileKey);
    out += "</code>; the first match wins)</span></h3>\n<ol class=\"rules\">\n";
    for (const ProfileRule& rule : policy.profile_rules) {
      out += "<li>" + html_escape(rule.text) + " &rarr; <code>" + html_escape(rule.profile) + "</code></li>\n";
    }
    out += "</ol>\n</div>\n";
  }
  out += "</div>\n</header>\n";
}

void render_profile(std::string& out, const Profile& profile) {
  out += "<section class=\"profile\" id=\"profile-" + html_escape(profile.name) + "\">\n<h3>Profile <code>" +
         html_escape(profile.name) + "</code></h3>\n<p class=\"muted\">";
  out += "storage " + (profile.storage ? "<code>" + html_escape(profile.storage->to_string()) + "</code> per pod"
                                       : std::string("not set"));
  out += " &middot; maxGpus " +
         (profile.max_gpus ? "<code>" + std::to_string(*profile.max_gpus) + "</code>" : std::string("none"));
  if (!profile.table.empty()) {
    out += " &middot; per extra GPU <code>" + html_escape(profile.extra_gpu_cpu.to_string()) + "</code> CPU, <code>" +
           html_escape(profile.extra_gpu_memory.to_string()) + "</code>";
  }
  out += "</p>\n";
  if (profile.table.empty()) {
    out += "<p>No table: CPU and memory are left as written; only the GPU count is checked.";
    if (!profile.set_prefix.empty()) {
      out += " OSMO: <code>--set " + html_escape(set_hint(profile, 1)) + "</code>";
    }
    out += "</p>\n</section>\n";
    return;
  }
  int64_t upper = std::max<int64_t>(8, profile.table.back().gpus);
  if (profile.max_gpus) upper = std::min(upper, *profile.max_gpus);
  out +=
      "<table class=\"sizing\">\n<thead><tr><th class=\"num\">GPUs</th><th class=\"num\">CPU</th>"
      "<th class=\"num\">Memory</th><th>OSMO values</th><th>Source</th></tr></thead>\n"
      "<tbody>\n";
  for (int64_t gpus = 1; gpus <= upper; ++gpus) {
    const auto need = required_resources(profile, gpus);
    if (!need) break;
    // Which row the value comes from, as required_resources chooses it.
    const TableRow* base = &profile.table.front();
    for (const TableRow& row : profile.table) {
      if (row.gpus <= gpus) base = &row;
    }
    const bool exact = base->gpus == gpus;
    const bool below_first = gpus < base->gpus;
    const bool interpolated = !exact && !below_first;
    out += interpolated ? "<tr class=\"interpolated\">" : "<tr>";
    out += "<td class=\"num\">" + std::to_string(gpus) + "</td>";
    out += "<td class=\"num\">" + html_escape(need->cpu.to_string()) + "</td>";
    out += "<td class=\"num\">" + html_escape(need->memory.to_string()) + "</td>";
    out += "<td><code>" + html_escape(set_hint(profile, gpus)) + "</code></td>";
    out += "<td class=\"source\">";
    if (exact) {
      out += "table";
    } else if (below_first) {
      out += "first row";
    } else {
      out += "<span class=\"tag interp\" title=\"the " + std::to_string(base->gpus) + "-GPU row + " +
             std::to_string(gpus - base->gpus) + " &times; per extra GPU\">interpolated</span>";
    }
    out += "</td></tr>\n";
  }
  out += "</tbody>\n</table>\n</section>\n";
}

void counter_card(std::string& out, std::string_view css, std::string_view label, uint64_t value) {
  out += "<div class=\"counter";
  if (!css.empty()) {
    out += ' ';
    out += css;
  }
  out += "\"><div class=\"value\">" + std::to_string(value) + "</div><div class=\"label\">";
  out += label;
  out += "</div></div>\n";
}

void render_counters(std::string& out, const StatusCounters::Snapshot& c) {
  out += "<section id=\"counters\">\n<h2>Counters since start</h2>\n<div class=\"counters\">\n";
  counter_card(out, "", "reviews", c.reviews());
  counter_card(out, "allowed", "allowed", c.allowed);
  counter_card(out, "mutated", "mutated", c.mutated);
  counter_card(out, "denied", "denied", c.denied);
  counter_card(out, "error", "error", c.error);
  counter_card(out, "", "dry-run reviews", c.dry_run);
  counter_card(out, "", "corrections (resources raised)", c.corrections);
  counter_card(out, "", "policy reloads", c.reloads);
  counter_card(out, "", "rejected reloads", c.rejected_reloads);
  out += "</div>\n</section>\n";
}

// Where decisions get their nodes: the watch and its state, else the
// policy's pools, else none.
void render_nodes(std::string& out, const Policy& policy, const std::optional<NodeWatchStatus>& nodes) {
  out += "<section id=\"nodes\">\n<h2>Node inventory</h2>\n<dl class=\"meta\">\n";
  if (!nodes) {
    const std::string fallback =
        policy.rule_settings.get<NodeFitPolicy>().pools.empty()
            ? "none: the node watch is off and the policy lists no nodeFit.pools, so nothing is capped"
            : "the policy's nodeFit.pools (" + std::to_string(policy.rule_settings.get<NodeFitPolicy>().pools.size()) +
                  " pools); the node watch is off";
    append_meta(out, "Source", html_escape(fallback));
    out += "</dl>\n</section>\n";
    return;
  }
  append_meta(out, "Source",
              "the cluster's nodes, watched through <code>" + html_escape(nodes->api_server) + "</code>");
  append_meta(out, "State",
              "<span class=\"node-state node-" + std::string(to_string(nodes->state)) + "\">" +
                  std::string(to_string(nodes->state)) + "</span>");
  append_meta(out, "Nodes", std::to_string(nodes->nodes));
  append_meta(out, "GPU shapes", std::to_string(nodes->gpu_shapes));
  append_meta(out, "Last sync",
              nodes->last_sync ? "<span class=\"mono\">" + format_utc(*nodes->last_sync) + "</span>"
                               : std::string("<span class=\"muted\">never</span>"));
  append_meta(out, "Watch restarts", std::to_string(nodes->restarts));
  if (!nodes->last_error.empty()) append_meta(out, "Last error", "<code>" + html_escape(nodes->last_error) + "</code>");
  if (nodes->state == NodeWatchStatus::State::kStarting) {
    const std::string meanwhile =
        policy.rule_settings.get<NodeFitPolicy>().pools.empty() ? "no caps" : "the policy's nodeFit.pools";
    append_meta(out, "Meanwhile", "decisions use " + html_escape(meanwhile) + " and warn that the nodes are not known");
  }
  out += "</dl>\n</section>\n";
}

// Where decisions get the DRA objects their pods' claims name.
void render_dra(std::string& out, const std::vector<DraWatchStatus>& dra) {
  out += "<section id=\"dra\">\n<h2>DRA objects</h2>\n<dl class=\"meta\">\n";
  if (dra.empty()) {
    append_meta(out, "Source", "none: the DRA watch is off, so every DRA claim a pod uses is warned about, not sized");
  }
  for (const DraWatchStatus& kind : dra) {
    std::string line = "<span class=\"node-state node-" + std::string(to_string(kind.state)) + "\">" +
                       std::string(to_string(kind.state)) + "</span>, " + std::to_string(kind.objects) +
                       " known, last sync " +
                       (kind.last_sync ? "<span class=\"mono\">" + format_utc(*kind.last_sync) + "</span>"
                                       : std::string("<span class=\"muted\">never</span>"));
    if (!kind.last_error.empty()) line += "; last error <code>" + html_escape(kind.last_error) + "</code>";
    append_meta(out, plural(kind.kind), line);
  }
  out += "</dl>\n</section>\n";
}

// Where decisions get what earlier runs used (docs/history.md).
void render_history(std::string& out, const Policy& policy, const std::optional<HistoryRefreshStatus>& history) {
  out += "<section id=\"history\">\n<h2>History</h2>\n<dl class=\"meta\">\n";
  append_meta(out, "Mode",
              "<code>" + std::string(to_string(policy.rule_settings.get<HistoryPolicy>().mode)) +
                  "</code> <span class=\"muted\">(policy history.mode)</span>");
  if (!history) {
    append_meta(out, "Source", "none: serve has no --prometheus, so no history is read");
  } else {
    const auto when = [](int64_t seconds) {
      return seconds == 0
                 ? std::string("<span class=\"muted\">never</span>")
                 : "<span class=\"mono\">" + format_utc(Clock::time_point(std::chrono::seconds(seconds))) + "</span>";
    };
    append_meta(out, "Prometheus", "<code>" + html_escape(history->url) + "</code>");
    append_meta(out, "Snapshot in use",
                std::to_string(history->containers) + " workload containers, read " + when(history->read_at));
    append_meta(out, "Last attempt", when(history->last_attempt));
    if (!history->error.empty()) {
      append_meta(out, "Last error",
                  "<code>" + html_escape(history->error) + "</code> (decisions keep the snapshot in use)");
    }
  }
  out += "</dl>\n</section>\n";
}

// Where decisions get the machines the autoscalers may launch.
void render_pools(std::string& out, const std::vector<PoolWatchStatus>& pools) {
  out += "<section id=\"pools\">\n<h2>Autoscaler pools</h2>\n<dl class=\"meta\">\n";
  if (pools.empty()) append_meta(out, "Source", "none: the pool watch is off");
  for (const PoolWatchStatus& kind : pools) {
    std::string line;
    if (kind.collection.empty()) {
      line = "<span class=\"muted\">not watched: " + html_escape(kind.discovery) + "</span>";
    } else {
      line = "<span class=\"node-state node-" + std::string(to_string(kind.state)) + "\">" +
             std::string(to_string(kind.state)) + "</span>, " + std::to_string(kind.objects) + " known from <code>" +
             html_escape(kind.collection) + "</code>";
      if (!kind.last_error.empty()) line += "; last error <code>" + html_escape(kind.last_error) + "</code>";
    }
    append_meta(out, kind.kind, line);
  }
  out += "</dl>\n</section>\n";
}

bool known_decision(std::string_view decision) {
  return decision == "allowed" || decision == "mutated" || decision == "denied" || decision == "error";
}

void render_decisions(std::string& out, const RecentDecisions& recent) {
  const std::vector<DecisionRecord> records = recent.newest_first();
  const uint64_t total = recent.total_added();
  out += "<section id=\"decisions\">\n<h2>Last decisions <span class=\"muted\">(newest first; " +
         std::to_string(records.size()) + " shown of " + std::to_string(total) + " since start, the last " +
         std::to_string(recent.capacity()) + " are kept)</span></h2>\n";
  if (records.empty()) {
    out += "<p class=\"muted\">No reviews answered since start.</p>\n</section>\n";
    return;
  }
  out +=
      "<table class=\"decisions\">\n<thead><tr><th>Time (UTC)</th><th>Endpoint</th><th>Kind</th><th>Object</th>"
      "<th>Decision</th><th>Details</th></tr></thead>\n<tbody>\n";
  for (const DecisionRecord& r : records) {
    out += "<tr class=\"decision-row\"><td class=\"time mono\">" + format_utc(r.time) + "</td>";
    out += "<td>" + html_escape(r.endpoint) + "</td>";
    out += "<td>" + (r.kind.empty() ? std::string("<span class=\"muted\">-</span>") : html_escape(r.kind));
    if (!r.operation.empty()) out += " <span class=\"muted\">" + html_escape(r.operation) + "</span>";
    out += "</td>";
    out += "<td class=\"object mono\">" +
           (r.object.empty() ? std::string("<span class=\"muted\">-</span>") : html_escape(r.object)) + "</td>";
    const std::string css = known_decision(r.decision) ? r.decision : "other";
    out += "<td><span class=\"decision decision-" + css + "\">" + html_escape(r.decision) + "</span>";
    if (r.dry_run) out += " <span class=\"tag dry\" title=\"dryRun: nothing was persisted\">dry run</span>";
    out += "</td><td>";
    if (!r.details.empty()) {
      out += "<ul>";
      for (const std::string& detail : r.details) out += "<li>" + html_escape(detail) + "</li>";
      out += "</ul>";
    }
    out += "</td></tr>\n";
  }
  out += "</tbody>\n</table>\n</section>\n";
}

}  // namespace

DecisionRecord make_decision_record(Endpoint endpoint, const ReviewOutcome& outcome, Clock::time_point time) {
  DecisionRecord record;
  record.time = time;
  record.endpoint = std::string(endpoint_name(endpoint));
  record.kind = shown_kind(outcome.kind);
  record.operation = shown_operation(outcome.operation);
  record.object = shown_object(outcome.namespace_name, outcome.name);
  record.decision = std::string(to_string(outcome.decision));
  record.dry_run = outcome.dry_run;

  // Past the limit messages are only counted, so their text is not built.
  ShownMessages details;
  const bool is_pod = outcome.kind == "Pod";
  for (const PodDecision& pod : outcome.pods) {
    for (const std::string& change : pod.changes) {
      details.add(is_pod || details.full() ? change : pod.description + ": " + change);
    }
    for (const std::string& denial : pod.denials) details.add(denial);
    if (pod.changes.empty()) {
      for (const std::string& warning : pod.warnings) details.add(details.full() ? warning : "warning: " + warning);
    }
  }
  if (outcome.problem) details.add(outcome.problem->message);
  record.details = std::move(details).take();
  return record;
}

std::vector<std::string> ShownMessages::take() && {
  if (past_limit_ > 0) {
    // The last kept one makes room for the count, which includes it.
    shown_.back() = "... and " + std::to_string(past_limit_ + 1) + " more";
  }
  return std::move(shown_);
}

RecentDecisions::RecentDecisions(std::size_t capacity) : capacity_(std::max<std::size_t>(1, capacity)) {}

void RecentDecisions::add(DecisionRecord record) {
  std::lock_guard lock(mutex_);
  if (records_.size() >= capacity_) records_.pop_front();
  records_.push_back(std::move(record));
  ++total_added_;
}

std::vector<DecisionRecord> RecentDecisions::newest_first() const {
  std::lock_guard lock(mutex_);
  return std::vector<DecisionRecord>(records_.rbegin(), records_.rend());
}

uint64_t RecentDecisions::total_added() const {
  std::lock_guard lock(mutex_);
  return total_added_;
}

StatusCounters::StatusCounters(Clock::time_point started) : started_(started) {}

void StatusCounters::count_review(const ReviewOutcome& outcome) {
  constexpr auto relaxed = std::memory_order_relaxed;
  switch (outcome.decision) {
    case ReviewOutcome::Decision::kAllowed: allowed_.fetch_add(1, relaxed); break;
    case ReviewOutcome::Decision::kMutated: mutated_.fetch_add(1, relaxed); break;
    case ReviewOutcome::Decision::kDenied: denied_.fetch_add(1, relaxed); break;
    case ReviewOutcome::Decision::kError: error_.fetch_add(1, relaxed); break;
  }
  if (outcome.dry_run) {
    dry_run_.fetch_add(1, relaxed);
    return;
  }
  uint64_t raised = 0;
  for (const PodDecision& pod : outcome.pods) raised += pod.raised.size();
  if (raised) corrections_.fetch_add(raised, relaxed);
}

void StatusCounters::count_reload(bool accepted) {
  (accepted ? reloads_ : rejected_reloads_).fetch_add(1, std::memory_order_relaxed);
}

StatusCounters::Snapshot StatusCounters::snapshot() const {
  constexpr auto relaxed = std::memory_order_relaxed;
  Snapshot s;
  s.started = started_;
  s.allowed = allowed_.load(relaxed);
  s.mutated = mutated_.load(relaxed);
  s.denied = denied_.load(relaxed);
  s.error = error_.load(relaxed);
  s.dry_run = dry_run_.load(relaxed);
  s.corrections = corrections_.load(relaxed);
  s.reloads = reloads_.load(relaxed);
  s.rejected_reloads = rejected_reloads_.load(relaxed);
  return s;
}

std::string shown_message(std::string_view message) { return printable(message, kMaxShownMessageBytes); }

std::string format_utc(Clock::time_point time) {
  const auto since_epoch = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch());
  // Floor division so times before 1970 still get 0..999 milliseconds.
  int64_t ms = since_epoch.count();
  int64_t seconds = ms / 1000;
  int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[80];  // room for any int fields, keeps -Wformat-truncation quiet
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  return buffer;
}

std::string render_status_page(const Policy& policy, const StatusCounters& counters, const RecentDecisions& recent,
                               const std::optional<NodeWatchStatus>& nodes, const std::vector<DraWatchStatus>& dra,
                               const std::vector<PoolWatchStatus>& pools,
                               const std::optional<HistoryRefreshStatus>& history, const std::string& version,
                               Clock::time_point now) {
  const StatusCounters::Snapshot counts = counters.snapshot();
  std::string out;
  out.reserve(std::size_t{64} * 1024);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing may be loaded: styles are inline, there are no scripts,
      // images, fonts or frames.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "base-uri 'none'; form-action 'none'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>gpu-sizer status</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n";
  render_header(out, policy, counts, version, now);

  out +=
      "<section id=\"policy\">\n<h2>Sizing table <span class=\"muted\">(per pod; interpolated rows add the per "
      "extra GPU values to the row below)</span></h2>\n<div class=\"profiles\">\n";
  // The default profile first, then the other sized profiles, then those
  // without a table; by name within each group.
  std::vector<const Profile*> profiles;
  for (const auto& [name, profile] : policy.profiles) profiles.push_back(&profile);
  std::stable_sort(profiles.begin(), profiles.end(), [&](const Profile* a, const Profile* b) {
    auto rank = [&](const Profile* p) { return p->name == policy.default_profile ? 0 : p->table.empty() ? 2 : 1; };
    return rank(a) < rank(b);
  });
  for (const Profile* profile : profiles) render_profile(out, *profile);
  out += "</div>\n</section>\n";

  render_nodes(out, policy, nodes);
  render_dra(out, dra);
  render_pools(out, pools);
  render_history(out, policy, history);
  render_counters(out, counts);
  render_decisions(out, recent);
  out += "<footer>Rendered " + format_utc(now) + ". Reload the page to refresh.</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace gpusizer
