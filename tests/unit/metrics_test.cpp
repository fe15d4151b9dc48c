// Metrics as Prometheus will scrape them: labels, bounded namespaces,
// dry-run exclusions.
#include "gpusizer/server/metrics.h"

#include <gtest/gtest.h>

#include "gpusizer/admission/review.h"
#include "gpusizer/workloads/workloads.h"
#include "support/review_support.h"

namespace gpusizer::metrics_test {
namespace {

using testing::admission_review;
using testing::gpu_pod;

ReviewOutcome mutate(const std::string& ns, bool dry_run = false) {
  const auto pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"cpu", "8"}, {"nvidia.com/gpu", "4"}}}});
  return handle_review(default_policy(), Endpoint::kMutate, admission_review(pod, ns, "CREATE", dry_run).dump())
      .outcome;
}

bool has_line(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(Metrics, CountsReviewsByKindOperationEndpointDecisionAndDryRun) {
  Metrics metrics("1.2.3", 100);
  metrics.count_review(Endpoint::kMutate, mutate("team-a"), 0.001);
  metrics.count_review(Endpoint::kMutate, mutate("team-a", true), 0.001);
  metrics.count_review(Endpoint::kValidate, handle_review(default_policy(), Endpoint::kValidate, "{").outcome, 0.001);
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(
      text,
      R"(gpu_sizer_reviews_total{decision="mutated",dry_run="false",endpoint="mutate",kind="Pod",operation="CREATE"} 1)"))
      << text;
  EXPECT_TRUE(has_line(
      text,
      R"(gpu_sizer_reviews_total{decision="mutated",dry_run="true",endpoint="mutate",kind="Pod",operation="CREATE"} 1)"))
      << text;
  EXPECT_TRUE(has_line(
      text,
      R"(gpu_sizer_reviews_total{decision="error",dry_run="false",endpoint="validate",kind="unknown",operation="unknown"} 1)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_build_info{version="1.2.3"} 1)")) << text;
}

// The kind label set is the kind table's: a kind added to the table is
// counted under its own name, never as "other".
TEST(Metrics, EveryKindOfTheTableIsCountedUnderItsOwnName) {
  Metrics metrics("1.2.3", 100);
  ReviewOutcome outcome;
  outcome.decision = ReviewOutcome::Decision::kAllowed;
  outcome.operation = "CREATE";
  for (const WorkloadKind& row : builtin_workload_kinds()) {
    outcome.kind = row.kind;
    metrics.count_review(Endpoint::kValidate, outcome, 0.001);
  }
  outcome.kind = "SomethingElse";
  metrics.count_review(Endpoint::kValidate, outcome, 0.001);
  const std::string text = metrics.render();
  for (const WorkloadKind& row : builtin_workload_kinds()) {
    const std::string series =
        R"(gpu_sizer_reviews_total{decision="allowed",dry_run="false",endpoint="validate",kind=")" + row.kind +
        R"(",operation="CREATE"})";
    EXPECT_NE(text.find(series), std::string::npos) << row.kind << " is not a kind label:\n" << text;
  }
  EXPECT_TRUE(has_line(
      text,
      R"(gpu_sizer_reviews_total{decision="allowed",dry_run="false",endpoint="validate",kind="other",operation="CREATE"} 1)"))
      << text;
}

TEST(Metrics, DryRunChangesNothingSoAddsNoCorrections) {
  Metrics metrics("dev", 100);
  metrics.count_review(Endpoint::kMutate, mutate("team-a", true), 0.001);
  EXPECT_EQ(metrics.render().find("gpu_sizer_corrections_total{"), std::string::npos);
  metrics.count_review(Endpoint::kMutate, mutate("team-a"), 0.001);
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_corrections_total{namespace="team-a",profile="train",resource="memory"} 1)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_cpu_cores_added_total{namespace="team-a",profile="train"} 24)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_memory_bytes_added_total{namespace="team-a",profile="train"} 137438953472)"))
      << text;
}

TEST(Metrics, NamespacesPastTheCapAreOther) {
  Metrics metrics("dev", 2);
  for (const char* ns : {"a", "b", "c", "d", "a"}) metrics.count_review(Endpoint::kMutate, mutate(ns), 0.001);
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_corrections_total{namespace="a",profile="train",resource="memory"} 2)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_corrections_total{namespace="other",profile="train",resource="memory"} 2)"))
      << text;
  EXPECT_EQ(text.find(R"(namespace="c")"), std::string::npos) << text;
}

TEST(Metrics, NamespacesKubernetesWouldRefuseAreInvalidAndNeverKept) {
  Metrics metrics("dev", 100);
  // Past 63 characters, or holding NUL or U+202E: never sent by the API
  // server, and each would be copied into every series that holds it.
  const std::string huge(4 << 20, 'n');
  for (const std::string& ns : {huge, std::string("team\0a", 6),
                                std::string("team-\xe2\x80\xae"
                                            "a"),
                                std::string(64, 'n'), std::string("Team-A")}) {
    metrics.count_review(Endpoint::kMutate, mutate(ns), 0.001);
  }
  metrics.count_review(Endpoint::kMutate, mutate(std::string(63, 'n')), 0.001);
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_corrections_total{namespace="invalid",profile="train",resource="memory"} 5)"))
      << text.substr(0, 4000);
  EXPECT_TRUE(has_line(text, "gpu_sizer_corrections_total{namespace=\"" + std::string(63, 'n') +
                                 "\",profile=\"train\",resource=\"memory\"} 1"));
  EXPECT_LT(text.size(), 64u * 1024);
  EXPECT_EQ(text.find("Team-A"), std::string::npos);
}

TEST(Metrics, CertificateReloadsAreCountedByResult) {
  Metrics metrics("dev", 100);
  metrics.count_certificate_reload("reloaded");
  metrics.count_certificate_reload("expired");
  metrics.count_certificate_reload("expired");
  metrics.count_certificate_reload("not_yet_valid");
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_tls_certificate_reloads_total{result="reloaded"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_tls_certificate_reloads_total{result="expired"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_tls_certificate_reloads_total{result="not_yet_valid"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_tls_certificate_reloads_total{result="invalid"} 0)")) << text;
}

TEST(Metrics, DenialsByReasonAndPolicyInfoFollowsReloads) {
  Metrics metrics("dev", 100);
  auto pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}},
                     {{"gpu-sizer.io/mutate", "false"}});
  metrics.count_review(Endpoint::kValidate,
                       handle_review(default_policy(), Endpoint::kValidate, admission_review(pod).dump()).outcome,
                       0.001);
  metrics.set_policy(default_policy());
  auto other = parse_policy("mode: audit\n", "p.yaml");
  ASSERT_TRUE(other.ok());
  metrics.set_policy(other.value());
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_denials_total{namespace="team-a",profile="train",reason="memory"} 1)"))
      << text;
  EXPECT_TRUE(has_line(text, "gpu_sizer_policy_info{sha256=\"" + other.value().sha256 + "\",source=\"p.yaml\"} 1"))
      << text;
  EXPECT_EQ(text.find(default_policy().sha256), std::string::npos) << "only the active policy is reported";
}

TEST(Metrics, DenialReasonLabelsComeFromTheTypedReason) {
  Metrics metrics("dev", 100);
  ReviewOutcome outcome;
  outcome.decision = ReviewOutcome::Decision::kDenied;
  outcome.kind = "Pod";
  outcome.operation = "CREATE";
  outcome.namespace_name = "team-a";
  PodDecision pod;
  pod.gpus = 2;
  pod.profile = "train";
  pod.denials = {"a", "b"};
  pod.denial_reasons = {DenialReason::kVram, DenialReason::kNodeFit};
  outcome.pods.push_back(pod);
  metrics.count_review(Endpoint::kValidate, outcome, 0.001);
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_denials_total{namespace="team-a",profile="train",reason="vram"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_denials_total{namespace="team-a",profile="train",reason="node_fit"} 1)"))
      << text;
}

TEST(Metrics, BypassesByReasonNamespaceAndEndpoint) {
  Metrics metrics("dev", 100);
  auto policy = parse_policy("exemptions:\n  users: [platform-admin]\n", "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.error();
  const auto pod = gpu_pod("train-x", {{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}}});
  auto by_admin = admission_review(pod);
  by_admin["request"]["userInfo"]["username"] = "platform-admin";
  for (Endpoint endpoint : {Endpoint::kMutate, Endpoint::kValidate}) {
    metrics.count_review(endpoint, handle_review(policy.value(), endpoint, by_admin.dump()).outcome, 0.001);
  }
  metrics.count_review(
      Endpoint::kMutate,
      handle_review(policy.value(), Endpoint::kMutate, admission_review(pod, "kube-system").dump()).outcome, 0.001);
  // A dry run skips nothing.
  metrics.count_review(
      Endpoint::kMutate,
      handle_review(policy.value(), Endpoint::kMutate, admission_review(pod, "kube-system", "CREATE", true).dump())
          .outcome,
      0.001);
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_bypasses_total{endpoint="mutate",namespace="team-a",reason="user"} 1)"))
      << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_bypasses_total{endpoint="validate",namespace="team-a",reason="user"} 1)"))
      << text;
  EXPECT_TRUE(
      has_line(text, R"(gpu_sizer_bypasses_total{endpoint="mutate",namespace="kube-system",reason="namespace"} 1)"))
      << text;
}

}  // namespace
}  // namespace gpusizer::metrics_test

namespace gpusizer::metrics_test {
namespace {

ReviewOutcome capped_review(bool dry_run) {
  ReviewOutcome outcome;
  outcome.decision = ReviewOutcome::Decision::kAllowed;
  outcome.kind = "Pod";
  outcome.operation = "CREATE";
  outcome.namespace_name = "serving";
  outcome.dry_run = dry_run;
  PodDecision pod;
  pod.gpus = 1;
  pod.profile = "infer";
  pod.capped = {kMemory, kEphemeralStorage};
  outcome.pods.push_back(pod);
  return outcome;
}

TEST(Metrics, NodeCapsAreCountedByResourceOnceAtValidate) {
  Metrics metrics("dev", 100);
  metrics.count_review(Endpoint::kMutate, capped_review(false), 0.001);  // the same caps, seen at /mutate first
  metrics.count_review(Endpoint::kValidate, capped_review(false), 0.001);
  metrics.count_review(Endpoint::kValidate, capped_review(true), 0.001);  // a dry run changes nothing
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_node_caps_total{namespace="serving",profile="infer",resource="memory"} 1)"))
      << text;
  EXPECT_TRUE(has_line(
      text, R"(gpu_sizer_node_caps_total{namespace="serving",profile="infer",resource="ephemeral-storage"} 1)"))
      << text;
  EXPECT_EQ(text.find(R"(resource="cpu"} )"), std::string::npos) << text;
}

TEST(Metrics, TheNodeWatchIsSeen) {
  Metrics metrics("dev", 100);
  EXPECT_TRUE(has_line(metrics.render(), "gpu_sizer_node_inventory_nodes 0"));
  metrics.set_node_inventory(5000, 20);
  metrics.set_node_sync_age(12.5);
  metrics.count_node_watch_restart("timeout");
  metrics.count_node_watch_restart("timeout");
  metrics.count_node_watch_restart("gone");
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, "gpu_sizer_node_inventory_nodes 5000")) << text;
  EXPECT_TRUE(has_line(text, "gpu_sizer_node_inventory_gpu_shapes 20")) << text;
  EXPECT_TRUE(has_line(text, "gpu_sizer_node_inventory_sync_age_seconds 12.5")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_node_watch_restarts_total{reason="timeout"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_node_watch_restarts_total{reason="gone"} 1)")) << text;
}

TEST(Metrics, TheDraWatchIsSeen) {
  Metrics metrics("dev", 100);
  metrics.set_dra_objects("ResourceClaimTemplate", 12);
  metrics.set_dra_objects("ResourceClaimTemplate", 13);
  metrics.set_dra_objects("DeviceClass", 3);
  metrics.count_dra_watch_restart("ResourceClaim", "error");
  const std::string text = metrics.render();
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_dra_objects{kind="ResourceClaimTemplate"} 13)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_dra_objects{kind="DeviceClass"} 3)")) << text;
  EXPECT_TRUE(has_line(text, R"(gpu_sizer_dra_watch_restarts_total{kind="ResourceClaim",reason="error"} 1)")) << text;
}

}  // namespace
}  // namespace gpusizer::metrics_test
