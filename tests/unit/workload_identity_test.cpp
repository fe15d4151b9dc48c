// Which workload a Pod belongs to, the same across runs (issue 29): each
// case is how the operator named in docs/research/workload-identity-sources.md
// makes its pods.
#include "gpusizer/admission/workload_identity.h"

#include <gtest/gtest.h>

namespace gpusizer::workload_identity_test {
namespace {

PodOrigin owned_by(std::string kind, std::string name, std::map<std::string, std::string, std::less<>> labels = {}) {
  PodOrigin pod;
  pod.generate_name = name + "-";
  pod.owner_kind = std::move(kind);
  pod.owner_name = std::move(name);
  pod.labels = std::move(labels);
  return pod;
}

TEST(WorkloadIdentity, GeneratedSuffixesAreRemoved) {
  EXPECT_EQ(without_generated_suffix("llama-ft-x7k2p"), "llama-ft");       // generateName
  EXPECT_EQ(without_generated_suffix("llama-ft-"), "llama-ft");            // generateName before the name
  EXPECT_EQ(without_generated_suffix("nightly-29442736"), "nightly");      // minutes
  EXPECT_EQ(without_generated_suffix("nightly-1766544000"), "nightly");    // seconds
  EXPECT_EQ(without_generated_suffix("sweep-x7k2p-1766544000"), "sweep");  // both
  // Not generated: a word with a vowel, too few or too many characters.
  EXPECT_EQ(without_generated_suffix("bert-large"), "bert-large");
  EXPECT_EQ(without_generated_suffix("run-v2"), "run-v2");
  EXPECT_EQ(without_generated_suffix("run-20260101"), "run");  // 8 digits read as minutes: said in docs
  EXPECT_EQ(without_generated_suffix("run-123456789012"), "run-123456789012");
  // Nothing before the suffix: kept.
  EXPECT_EQ(without_generated_suffix("x7k2p"), "x7k2p");
  EXPECT_EQ(without_generated_suffix("-"), "-");
}

TEST(WorkloadIdentity, ADeploymentsPodsAreTheDeployments) {
  const WorkloadIdentity id =
      workload_identity(owned_by("ReplicaSet", "vllm-7d9f8b6c4d", {{"pod-template-hash", "7d9f8b6c4d"}}));
  EXPECT_EQ(id.text(), "Deployment/vllm");
  // A ReplicaSet of its own (no hash in its name) is itself.
  EXPECT_EQ(workload_identity(owned_by("ReplicaSet", "cache")).text(), "ReplicaSet/cache");
}

TEST(WorkloadIdentity, ACronJobsJobsAreTheCronJobs) {
  EXPECT_EQ(workload_identity(owned_by("Job", "nightly-eval-29442736")).text(), "CronJob/nightly-eval");
  EXPECT_EQ(workload_identity(owned_by("Job", "nightly-eval-1766544000")).text(), "CronJob/nightly-eval");
  // A Job of its own, even generated, is a Job.
  EXPECT_EQ(workload_identity(owned_by("Job", "resnet-sweep-x7k2p")).text(), "Job/resnet-sweep");
}

TEST(WorkloadIdentity, OperatorsLabelsNameTheRoot) {
  // A JobSet's (and a Trainer TrainJob's) pods are owned by its Jobs.
  EXPECT_EQ(
      workload_identity(owned_by("Job", "pretrain-workers-0", {{"jobset.sigs.k8s.io/jobset-name", "pretrain"}})).text(),
      "JobSet/pretrain");
  // A Workflow submitted from a WorkflowTemplate, and a CronWorkflow's.
  EXPECT_EQ(workload_identity(
                owned_by("Workflow", "train-tmpl-4xkq9", {{"workflows.argoproj.io/workflow", "train-tmpl-4xkq9"}}))
                .text(),
            "Workflow/train-tmpl");
  EXPECT_EQ(workload_identity(
                owned_by("Workflow", "nightly-1766544000", {{"workflows.argoproj.io/workflow", "nightly-1766544000"}}))
                .text(),
            "Workflow/nightly");
  // A RayJob's cluster: the RayJob's name and a generated suffix.
  EXPECT_EQ(
      workload_identity(owned_by("RayCluster", "batch-infer-7zkbt", {{"ray.io/cluster", "batch-infer-7zkbt"}})).text(),
      "RayCluster/batch-infer");
  // A LeaderWorkerSet's workers are owned by a StatefulSet its leader owns.
  EXPECT_EQ(
      workload_identity(owned_by("StatefulSet", "serve-0", {{"leaderworkerset.sigs.k8s.io/name", "serve"}})).text(),
      "LeaderWorkerSet/serve");
  const WorkloadIdentity volcano =
      workload_identity(owned_by("Job", "mindspore", {{"volcano.sh/job-name", "mindspore"}}));
  EXPECT_EQ(volcano.text(), "Job.batch.volcano.sh/mindspore");
  EXPECT_EQ(volcano.source, "label volcano.sh/job-name");
}

TEST(WorkloadIdentity, APyTorchJobResubmittedUnderANewSuffixKeepsItsKey) {
  // The training operator's pods are owned by the job itself.
  EXPECT_EQ(workload_identity(owned_by("PyTorchJob", "llama-ft-x7k2p")).text(), "PyTorchJob/llama-ft");
  EXPECT_EQ(workload_identity(owned_by("PyTorchJob", "llama-ft-b9zq4")).text(), "PyTorchJob/llama-ft");
  EXPECT_EQ(workload_identity(owned_by("StatefulSet", "moe-pretrain")).text(), "StatefulSet/moe-pretrain");
}

TEST(WorkloadIdentity, TheLabelWinsAndABarePodIsItself) {
  PodOrigin pod = owned_by("ReplicaSet", "vllm-7d9f8b6c4d", {{"pod-template-hash", "7d9f8b6c4d"}});
  pod.labels[kWorkloadLabel] = "llama-serving";
  const WorkloadIdentity named = workload_identity(pod);
  EXPECT_EQ(named.text(), "Workload/llama-serving");
  EXPECT_EQ(named.source, "label gpu-sizer.io/workload");

  PodOrigin bare;
  bare.generate_name = "debug-";
  EXPECT_EQ(workload_identity(bare).text(), "Pod/debug");
  EXPECT_EQ(workload_identity(bare).source, "generateName");
  bare.name = "debug-x7k2p";  // as a validating webhook sees it
  EXPECT_EQ(workload_identity(bare).text(), "Pod/debug");
}

}  // namespace
}  // namespace gpusizer::workload_identity_test
