// The status page (GET /status): the recent-decision ring and the counters
// must be safe under many server threads, and the page must show the
// effective sizing table, the active policy and the decisions, newest
// first, with every user-controlled string escaped and nothing loaded from
// elsewhere.

#include "gpusizer/server/status_page.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusizer/admission/review.h"
#include "gpusizer/sizing/policy.h"
#include "support/review_support.h"

namespace gpusizer::status_page_test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::system_clock;

const Clock::time_point kT0 = Clock::time_point(milliseconds(int64_t{1700000000123}));  // 2023-11-14T22:13:20.123Z

DecisionRecord record(const std::string& object, const std::string& decision = "allowed",
                      Clock::time_point time = kT0) {
  DecisionRecord r;
  r.time = time;
  r.endpoint = "mutate";
  r.kind = "Pod";
  r.operation = "CREATE";
  r.object = object;
  r.decision = decision;
  return r;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// The HTML of one profile's section.
std::string profile_section(const std::string& page, const std::string& name) {
  const std::size_t begin = page.find("id=\"profile-" + name + "\"");
  if (begin == std::string::npos) return "";
  return page.substr(begin, page.find("</section>", begin) - begin);
}

// The table row (<tr ...>...</tr>) of `gpus` GPUs in a profile section.
std::string sizing_row(const std::string& section, int gpus) {
  const std::string first_cell = "<td class=\"num\">" + std::to_string(gpus) + "</td>";
  for (std::size_t at = section.find("<tr"); at != std::string::npos; at = section.find("<tr", at + 3)) {
    std::string row = section.substr(at, section.find("</tr>", at) + 5 - at);
    const std::size_t cell = row.find("<td");
    if (cell != std::string::npos && row.compare(cell, first_cell.size(), first_cell) == 0) return row;
  }
  return "";
}

ReviewOutcome outcome(ReviewOutcome::Decision decision, bool dry_run = false, std::size_t raises = 0) {
  ReviewOutcome o;
  o.decision = decision;
  o.kind = "Pod";
  o.operation = "CREATE";
  o.namespace_name = "team-a";
  o.name = "train-x";
  o.dry_run = dry_run;
  if (raises) {
    PodDecision pod;
    for (std::size_t i = 0; i < raises; ++i) pod.raised.push_back({"memory", Quantity::from_bytes(1 << 30)});
    o.pods.push_back(pod);
  }
  return o;
}

// ---------------------------------------------------------------------------
// RecentDecisions

TEST(StatusRecentDecisions, KeepsTheNewestCapacityRecordsNewestFirst) {
  RecentDecisions recent(100);
  EXPECT_TRUE(recent.newest_first().empty());
  for (int i = 0; i < 250; ++i) recent.add(record("team-a/pod-" + std::to_string(i)));
  const auto held = recent.newest_first();
  ASSERT_EQ(held.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(held[i].object, "team-a/pod-" + std::to_string(249 - i));
  EXPECT_EQ(recent.total_added(), 250u);
  EXPECT_EQ(recent.capacity(), 100u);
}

TEST(StatusRecentDecisions, DefaultCapacityIsOneHundred) { EXPECT_EQ(RecentDecisions().capacity(), 100u); }

TEST(StatusRecentDecisions, ConcurrentAddsKeepTheNewestInOrder) {
  constexpr int kThreads = 8, kPerThread = 2000;
  RecentDecisions recent(100);
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0};
  // Reads during the adds see at most 100 records, each thread's in the
  // order it added them.
  std::thread reader([&] {
    while (!done) {
      const auto held = recent.newest_first();
      std::map<int, int> last_seq;
      if (held.size() > 100) ++bad_reads;
      for (const auto& r : held) {
        const int thread = std::stoi(r.kind), seq = std::stoi(r.object);
        auto it = last_seq.find(thread);
        if (it != last_seq.end() && it->second <= seq) ++bad_reads;
        last_seq[thread] = seq;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&recent, t] {
      for (int i = 0; i < kPerThread; ++i) {
        DecisionRecord r = record(std::to_string(i));
        r.kind = std::to_string(t);
        recent.add(std::move(r));
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_EQ(recent.total_added(), uint64_t{kThreads} * kPerThread);

  // Exactly 100 kept; per thread newest first, and each thread's kept
  // records are its last ones (only the oldest are ever dropped).
  const auto held = recent.newest_first();
  ASSERT_EQ(held.size(), 100u);
  std::map<int, std::vector<int>> by_thread;
  for (const auto& r : held) by_thread[std::stoi(r.kind)].push_back(std::stoi(r.object));
  for (const auto& [thread, seqs] : by_thread) {
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      EXPECT_EQ(seqs[i], kPerThread - 1 - static_cast<int>(i)) << "thread " << thread;
    }
  }
}

// ---------------------------------------------------------------------------
// StatusCounters

TEST(StatusCounters, CountsReviewsByDecisionDryRunsCorrectionsAndReloads) {
  StatusCounters counters(kT0);
  counters.count_review(outcome(ReviewOutcome::Decision::kAllowed));
  counters.count_review(outcome(ReviewOutcome::Decision::kMutated, false, 3));
  counters.count_review(outcome(ReviewOutcome::Decision::kMutated, true, 3));  // dry run: no corrections
  counters.count_review(outcome(ReviewOutcome::Decision::kDenied));
  counters.count_review(outcome(ReviewOutcome::Decision::kDenied, true));
  counters.count_review(outcome(ReviewOutcome::Decision::kError));
  counters.count_reload(true);
  counters.count_reload(false);
  counters.count_reload(false);
  const auto s = counters.snapshot();
  EXPECT_EQ(s.started, kT0);
  EXPECT_EQ(s.allowed, 1u);
  EXPECT_EQ(s.mutated, 2u);
  EXPECT_EQ(s.denied, 2u);
  EXPECT_EQ(s.error, 1u);
  EXPECT_EQ(s.reviews(), 6u);
  EXPECT_EQ(s.dry_run, 2u);
  EXPECT_EQ(s.corrections, 3u);
  EXPECT_EQ(s.reloads, 1u);
  EXPECT_EQ(s.rejected_reloads, 2u);
}

TEST(StatusCounters, ConcurrentCountsAreExact) {
  StatusCounters counters;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        counters.count_review(outcome(ReviewOutcome::Decision::kMutated, false, 2));
        counters.count_reload(i % 2 == 0);
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto s = counters.snapshot();
  EXPECT_EQ(s.mutated, 40000u);
  EXPECT_EQ(s.corrections, 80000u);
  EXPECT_EQ(s.reloads, 20000u);
  EXPECT_EQ(s.rejected_reloads, 20000u);
}

// ---------------------------------------------------------------------------
// make_decision_record from real reviews

TEST(StatusDecisionRecord, MutatedPodListsItsChanges) {
  const json review = testing::admission_review(
      testing::gpu_pod("train-x", {{"requests", {{"nvidia.com/gpu", "4"}, {"cpu", "8"}, {"memory", "64Gi"}}},
                                   {"limits", {{"nvidia.com/gpu", "4"}, {"cpu", "8"}, {"memory", "64Gi"}}}}));
  const HttpReply reply = handle_review(default_policy(), Endpoint::kMutate, review.dump());
  const DecisionRecord r = make_decision_record(Endpoint::kMutate, reply.outcome, kT0);
  EXPECT_EQ(r.time, kT0);
  EXPECT_EQ(r.endpoint, "mutate");
  EXPECT_EQ(r.kind, "Pod");
  EXPECT_EQ(r.operation, "CREATE");
  EXPECT_EQ(r.object, "team-a/train-x");
  EXPECT_EQ(r.decision, "mutated");
  EXPECT_FALSE(r.dry_run);
  ASSERT_EQ(r.details.size(), 1u);  // one per container; its warnings repeat it
  EXPECT_NE(r.details[0].find("memory request 64Gi->192Gi"), std::string::npos) << r.details[0];
}

TEST(StatusDecisionRecord, DeniedOptedOutPodListsTheDenial) {
  const json review =
      testing::admission_review(testing::gpu_pod("train-x",
                                                 {{"requests", {{"nvidia.com/gpu", "4"}, {"memory", "64Gi"}}},
                                                  {"limits", {{"nvidia.com/gpu", "4"}, {"memory", "64Gi"}}}},
                                                 {{"gpu-sizer.io/mutate", "false"}}),
                                "team-a", "CREATE", /*dry_run=*/true);
  const HttpReply reply = handle_review(default_policy(), Endpoint::kValidate, review.dump());
  const DecisionRecord r = make_decision_record(Endpoint::kValidate, reply.outcome, kT0);
  EXPECT_EQ(r.endpoint, "validate");
  EXPECT_EQ(r.decision, "denied");
  EXPECT_TRUE(r.dry_run);
  ASSERT_FALSE(r.details.empty());
  EXPECT_NE(r.details[0].find("need memory >= 192Gi"), std::string::npos) << r.details[0];
}

TEST(StatusDecisionRecord, MalformedReviewKeepsTheError) {
  const HttpReply reply = handle_review(default_policy(), Endpoint::kMutate, "{not json");
  const DecisionRecord r = make_decision_record(Endpoint::kMutate, reply.outcome, kT0);
  EXPECT_EQ(r.decision, "error");
  EXPECT_EQ(r.object, "");
  ASSERT_EQ(r.details.size(), 1u);
  ASSERT_TRUE(reply.outcome.problem);
  EXPECT_EQ(r.details[0], reply.outcome.problem->message);
}

TEST(StatusDecisionRecord, DetailsAreCapped) {
  ReviewOutcome o = outcome(ReviewOutcome::Decision::kDenied);
  PodDecision pod;
  for (int i = 0; i < 50; ++i) pod.denials.push_back("denial " + std::to_string(i));
  o.pods.push_back(pod);
  const DecisionRecord r = make_decision_record(Endpoint::kValidate, o, kT0);
  ASSERT_EQ(r.details.size(), kMaxDecisionDetails);
  EXPECT_EQ(r.details.back(), "... and 31 more");
}

// ---------------------------------------------------------------------------
// Helpers

TEST(StatusHtml, FormatsUtcIso8601WithMilliseconds) {
  EXPECT_EQ(format_utc(kT0), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(format_utc(Clock::time_point{}), "1970-01-01T00:00:00.000Z");
}

// ---------------------------------------------------------------------------
// The page

class StatusPage : public ::testing::Test {
 protected:
  std::string render(const Policy& policy = default_policy(), Clock::time_point now = kT0 + seconds(3725)) {
    return render_status_page(policy, counters, recent, nodes, dra, pools, history, "1.2.3", now);
  }
  StatusCounters counters{kT0};
  RecentDecisions recent{100};
  std::optional<NodeWatchStatus> nodes;         // not watched, unless a test sets it
  std::vector<DraWatchStatus> dra;              // not watched, unless a test sets it
  std::vector<PoolWatchStatus> pools;           // not watched, unless a test sets it
  std::optional<HistoryRefreshStatus> history;  // no --prometheus, unless a test sets it
};

TEST_F(StatusPage, SaysWhichAutoscalerPoolsAreWatchedAndWhyOthersAreNot) {
  EXPECT_NE(render().find("<dt>Source</dt><dd>none: the pool watch is off</dd>"), std::string::npos)
      << render().substr(render().find("id=\"pools\""), 400);
  PoolWatchStatus node_pools;
  node_pools.kind = "NodePool";
  node_pools.collection = "/apis/karpenter.sh/v1/nodepools";
  node_pools.state = WatchStatus::State::kSynced;
  node_pools.objects = 3;
  PoolWatchStatus compute_classes;
  compute_classes.kind = "ComputeClass";
  compute_classes.discovery = "not served (no CRD)";
  pools = {node_pools, compute_classes};
  const std::string page = render();
  for (const char* part : {"<dt>NodePool</dt><dd><span class=\"node-state node-synced\">synced</span>, 3 known from "
                           "<code>/apis/karpenter.sh/v1/nodepools</code>",
                           "<dt>ComputeClass</dt><dd><span class=\"muted\">not watched: not served (no CRD)</span>"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part << "\n" << page.substr(page.find("id=\"pools\""), 900);
  }
}

TEST_F(StatusPage, SaysWhatTheDraWatchKnows) {
  EXPECT_NE(render().find("none: the DRA watch is off, so every DRA claim a pod uses is warned about"),
            std::string::npos);
  DraWatchStatus templates;
  templates.state = WatchStatus::State::kSynced;
  templates.objects = 12;
  templates.last_sync = kT0;
  DraWatchStatus classes;
  classes.kind = DraKind::kDeviceClass;
  classes.state = WatchStatus::State::kStarting;
  classes.last_error = "GET /apis/resource.k8s.io/v1/deviceclasses: 404 <Not Found>";
  dra = {templates, classes};
  const std::string page = render();
  for (const char* part :
       {"<dt>ResourceClaimTemplates</dt>",
        "synced</span>, 12 known, last sync <span class=\"mono\">2023-11-14T22:13:20.123Z", "<dt>DeviceClasses</dt>",
        "starting</span>, 0 known, last sync <span class=\"muted\">never</span>; last error "
        "<code>GET /apis/resource.k8s.io/v1/deviceclasses: 404 &lt;Not Found&gt;</code>"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part << "\n" << page.substr(page.find("id=\"dra\""), 900);
  }
}

TEST_F(StatusPage, SaysWhereDecisionsGetTheirNodes) {
  EXPECT_NE(render().find("none: the node watch is off and the policy lists no nodeFit.pools"), std::string::npos);

  NodeWatchStatus watched;
  watched.state = NodeWatchStatus::State::kLost;
  watched.api_server = "service account (https://10.96.0.1:443)";
  watched.last_error = "GET /api/v1/nodes: 403 Forbidden: nodes is forbidden: <b>";
  watched.last_sync = kT0;
  watched.restarts = 3;
  watched.nodes = 5000;
  watched.gpu_shapes = 20;
  nodes = watched;
  const std::string page = render();
  for (const char* part : {"<span class=\"node-state node-lost\">lost</span>", "<dd>5000</dd>", "<dd>20</dd>",
                           "<dd>3</dd>", "service account (https://10.96.0.1:443)",
                           "403 Forbidden: nodes is forbidden: &lt;b&gt;", "2023-11-14T22:13:20.123Z"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part;
  }

  nodes->state = NodeWatchStatus::State::kStarting;
  nodes->last_sync.reset();
  const std::string starting = render();
  EXPECT_NE(starting.find("decisions use no caps and warn that the nodes are not known"), std::string::npos);
  EXPECT_NE(starting.find("<span class=\"muted\">never</span>"), std::string::npos);
}

TEST_F(StatusPage, IsOneHtmlDocumentWithBalancedStructure) {
  const std::string page = render();
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_EQ(page.substr(page.size() - 8), "</html>\n");
  for (const std::string tag : {"table", "tr", "td", "th", "section", "ul", "li", "dl", "ol", "div", "span", "code"}) {
    EXPECT_EQ(count(page, "<" + tag + ">") + count(page, "<" + tag + " "), count(page, "</" + tag + ">")) << tag;
  }
}

TEST_F(StatusPage, HeaderShowsVersionUptimeAndThePolicy) {
  const std::string page = render();
  EXPECT_NE(page.find("<code>1.2.3</code>"), std::string::npos);
  EXPECT_NE(page.find("2023-11-14T22:13:20.123Z"), std::string::npos);  // started
  EXPECT_NE(page.find("1h 2m 5s"), std::string::npos);                  // uptime
  EXPECT_NE(page.find(default_policy().source), std::string::npos);
  ASSERT_EQ(default_policy().sha256.size(), 64u);
  EXPECT_NE(page.find(default_policy().sha256), std::string::npos);
  EXPECT_NE(page.find("<code>mutate</code>"), std::string::npos);
  EXPECT_NE(page.find("osmo.group_name"), std::string::npos);  // a profile rule
}

TEST_F(StatusPage, ShowsTheEffectiveTrainTableWithInterpolatedRowsMarked) {
  const std::string train = profile_section(render(), "train");
  ASSERT_FALSE(train.empty());
  const std::string four = sizing_row(train, 4);
  EXPECT_NE(four.find(">32</td>"), std::string::npos) << four;
  EXPECT_NE(four.find(">192Gi</td>"), std::string::npos) << four;
  EXPECT_NE(four.find("train_gpu=4 train_cpu=32 train_memory=192Gi"), std::string::npos) << four;
  EXPECT_EQ(four.find("interpolated"), std::string::npos) << four;

  const std::string three = sizing_row(train, 3);
  EXPECT_NE(three.find("class=\"interpolated\""), std::string::npos) << three;
  EXPECT_NE(three.find(">24</td>"), std::string::npos) << three;
  EXPECT_NE(three.find(">144Gi</td>"), std::string::npos) << three;
  EXPECT_NE(three.find(">interpolated<"), std::string::npos) << three;

  // 1..8 GPUs: max(8, last row).
  EXPECT_NE(sizing_row(train, 8).find(">384Gi</td>"), std::string::npos);
  EXPECT_EQ(sizing_row(train, 9), "");
  EXPECT_NE(train.find("maxGpus none"), std::string::npos);
  EXPECT_NE(train.find("storage <code>300Gi</code> per pod"), std::string::npos);
}

TEST_F(StatusPage, InferAndTablelessProfiles) {
  const std::string page = render();
  const std::string infer = profile_section(page, "infer");
  EXPECT_NE(sizing_row(infer, 4).find(">16</td>"), std::string::npos);
  EXPECT_NE(infer.find("storage <code>200Gi</code> per pod"), std::string::npos);
  const std::string render_profile = profile_section(page, "render");
  ASSERT_FALSE(render_profile.empty());
  EXPECT_NE(render_profile.find("maxGpus <code>1</code>"), std::string::npos) << render_profile;
  EXPECT_NE(render_profile.find("No table"), std::string::npos);
  EXPECT_EQ(render_profile.find("<table"), std::string::npos);
}

TEST_F(StatusPage, RowsExtendPastEightToTheLastTableRowAndStopAtMaxGpus) {
  Policy policy = default_policy();
  Profile& train = policy.profiles.at("train");
  train.table.push_back({12, Quantity::from_milli(96000), Quantity::from_bytes(int64_t{600} << 30)});
  const std::string wide = profile_section(render(policy), "train");
  EXPECT_NE(sizing_row(wide, 12).find(">600Gi</td>"), std::string::npos);
  EXPECT_NE(sizing_row(wide, 10).find("interpolated"), std::string::npos);
  EXPECT_EQ(sizing_row(wide, 13), "");

  train.max_gpus = 4;
  const std::string capped = profile_section(render(policy), "train");
  EXPECT_NE(sizing_row(capped, 4).find(">192Gi</td>"), std::string::npos);
  EXPECT_EQ(sizing_row(capped, 5), "");
}

TEST_F(StatusPage, ShowsTheCounters) {
  counters.count_review(outcome(ReviewOutcome::Decision::kMutated, false, 3));
  counters.count_review(outcome(ReviewOutcome::Decision::kDenied));
  counters.count_reload(false);
  const std::string page = render();
  const std::string section = page.substr(page.find("id=\"counters\""));
  EXPECT_NE(section.find("<div class=\"value\">2</div><div class=\"label\">reviews</div>"), std::string::npos);
  EXPECT_NE(section.find("<div class=\"value\">1</div><div class=\"label\">mutated</div>"), std::string::npos);
  EXPECT_NE(section.find("<div class=\"value\">1</div><div class=\"label\">denied</div>"), std::string::npos);
  EXPECT_NE(section.find("<div class=\"value\">3</div><div class=\"label\">corrections"), std::string::npos);
  EXPECT_NE(section.find("<div class=\"value\">1</div><div class=\"label\">rejected reloads</div>"), std::string::npos);
}

TEST_F(StatusPage, ListsDecisionsNewestFirstWithColoursAndDryRunMark) {
  EXPECT_NE(render().find("No reviews answered since start."), std::string::npos);
  recent.add(record("team-a/first", "allowed", kT0));
  DecisionRecord second = record("team-a/second", "mutated", kT0 + seconds(1));
  second.details = {"container \"trainer\": memory request 64Gi->192Gi"};
  recent.add(second);
  DecisionRecord third = record("team-b/third", "denied", kT0 + seconds(2));
  third.endpoint = "validate";
  third.dry_run = true;
  recent.add(third);
  const std::string page = render();
  const std::size_t first = page.find("team-a/first"), second_at = page.find("team-a/second"),
                    third_at = page.find("team-b/third");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second_at, std::string::npos);
  ASSERT_NE(third_at, std::string::npos);
  EXPECT_LT(third_at, second_at);
  EXPECT_LT(second_at, first);
  EXPECT_NE(page.find("2023-11-14T22:13:22.123Z"), std::string::npos);
  EXPECT_NE(page.find("<span class=\"decision decision-denied\">denied</span> <span class=\"tag dry\""),
            std::string::npos);
  EXPECT_NE(page.find("<span class=\"decision decision-mutated\">mutated</span></td>"), std::string::npos);
  EXPECT_NE(page.find("<li>container &quot;trainer&quot;: memory request 64Gi-&gt;192Gi</li>"), std::string::npos);
  EXPECT_NE(page.find("3 shown of 3 since start"), std::string::npos);
}

TEST_F(StatusPage, EscapesHostileInput) {
  DecisionRecord hostile = record("team-a/<script>alert(1)</script>", "denied\"><img src=x onerror=alert(2)>");
  hostile.kind = "<b>Pod</b>";
  hostile.endpoint = "<i>mutate</i>";
  hostile.operation = "<u>CREATE</u>";
  hostile.details = {"container \"<svg onload=alert(3)>\": x & y", "' onmouseover='alert(4)"};
  recent.add(hostile);
  Policy policy = default_policy();
  policy.source = "/etc/<policy>.yaml";
  policy.exemptions.namespaces.push_back("<ns>");
  policy.profile_rules.front().text = "label <k> equals \"v\"";
  const std::string page = render(policy, kT0);

  EXPECT_NE(page.find("team-a/&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("container &quot;&lt;svg onload=alert(3)&gt;&quot;: x &amp; y"), std::string::npos);
  EXPECT_NE(page.find("&#39; onmouseover=&#39;alert(4)"), std::string::npos);
  EXPECT_NE(page.find("/etc/&lt;policy&gt;.yaml"), std::string::npos);
  EXPECT_NE(page.find("&lt;ns&gt;"), std::string::npos);
  EXPECT_NE(page.find("label &lt;k&gt; equals &quot;v&quot;"), std::string::npos);
  // An unknown decision gets the neutral colour, not a class from the input.
  EXPECT_NE(page.find("decision-other"), std::string::npos);
  for (const std::string raw : {"<script", "<img", "<svg", "<b>", "<i>", "<u>", "<policy>", "<ns>", "<k>",
                                "' onmouseover", "onerror=alert(2)>"}) {
    EXPECT_EQ(page.find(raw), std::string::npos) << raw;
  }
}

TEST_F(StatusPage, LoadsNothingFromElsewhere) {
  DecisionRecord r = record("team-a/x");
  r.details = {"see https://example.com/docs"};  // text, not a link
  recent.add(r);
  const std::string page = render();
  static const std::regex external(R"((src|href|action|srcset|data)\s*=\s*["']?\s*[a-z]*:?//)", std::regex::icase);
  EXPECT_FALSE(std::regex_search(page, external));
  EXPECT_EQ(count(page, "http://"), 0u);
  EXPECT_EQ(count(page, "https://"), 1u);  // only the escaped detail text
  for (const std::string forbidden :
       {"<script", "<link", "<img", "<iframe", "<object", "url(", "@import", " src=", " href="}) {
    EXPECT_EQ(page.find(forbidden), std::string::npos) << forbidden;
  }
  EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
}

}  // namespace
}  // namespace gpusizer::status_page_test
