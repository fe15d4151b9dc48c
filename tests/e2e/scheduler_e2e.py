#!/usr/bin/env python3
"""End-to-end on a real control plane: the pods gpu-sizer sizes still bind.

Usage: scheduler_e2e.py KUBERNETES_BIN GPU_SIZER SOURCE_DIR [CORPUS_DIR FLEET_FILE]

Starts etcd, and the kube-apiserver, kube-scheduler and
kube-controller-manager that tests/e2e/build-kube-control-plane.sh built
from one Kubernetes v1.20 source (in KUBERNETES_BIN), with the
controllers that make pods (deployment, replicaset, statefulset, job,
cronjob, daemonset, garbagecollector) and without the node lifecycle
controller: no kubelet runs, so it would mark every node NotReady. Nodes
are registered as their kubelet and that controller would leave them
(status set, Ready, the not-ready taint lifted). gpu-sizer runs with
deploy/'s webhook configurations, watching the nodes and the autoscaler
pools. Checked:

  - Deployments, StatefulSets, Jobs and CronJobs applied with kubectl, a
    CronJob's Job made by hand and one made by the cronjob controller:
    the real controllers create the pods, the webhook sizes them, the real
    scheduler binds them, and kubectl prints the webhook's warnings;
  - a pod that no node can hold yet (its instance type pinned) stays
    Pending, sized to that instance type; a node of it added later, as an
    autoscaler would, binds it;
  - over the GPU workloads of CORPUS_DIR (default ../shared/corpus/manifests
    beside SOURCE_DIR; skipped with a message when absent) and the fleet of
    FLEET_FILE (default ../shared/corpus/nodes.yaml), in paired runs: every
    pod the scheduler binds without the webhook is bound with it, sized
    against the nodes; and sized against the same fleet scaled to zero
    (tests/data/fleets/scaled-to-zero.yaml, and the node group no cluster
    object describes in the policy's nodeFit.pools as
    scaled-to-zero-node-groups.yaml gives it: no node at submit time, the
    nodes arrive after the pods, as an autoscaler's would). A modest 1-GPU
    pod pinned to each GPU instance type of the fleet joins the corpus's
    workloads, so that a cap that stops working fails the paired runs.
    The workloads are shared out over CORPUS_LANES control planes of the
    same kind, each with its own copy of the fleet, run side by side; each
    workload's runs are on one of them, one after another.

How corpus workloads become pods: tests/e2e/corpus_workloads.py.
"""

import concurrent.futures
import json
import sys
import time
import unittest
import urllib.error
from pathlib import Path

from control_plane import Cluster, load_documents, open_crd, plural_of, wait_until, warnings_of
from corpus_workloads import corpus_workloads, fleet_probes, kind_table, named_classes, pods_from_templates

KUBERNETES_BIN = Path(sys.argv[1]) if len(sys.argv) > 1 else None
GPU_SIZER = Path(sys.argv[2]) if len(sys.argv) > 2 else None
SOURCE = Path(sys.argv[3]) if len(sys.argv) > 3 else None
CORPUS = Path(sys.argv[4]) if len(sys.argv) > 4 else (SOURCE / ".." / "shared" / "corpus" / "manifests"
                                                        if SOURCE else None)
FLEET = Path(sys.argv[5]) if len(sys.argv) > 5 else (SOURCE / ".." / "shared" / "corpus" / "nodes.yaml"
                                                       if SOURCE else None)

CONTROLLERS = ["deployment", "replicaset", "statefulset", "job", "cronjob", "daemonset", "garbagecollector"]
POOL_KINDS = [("karpenter.sh", "v1", "NodePool"), ("karpenter.k8s.aws", "v1", "EC2NodeClass"),
              ("karpenter.azure.com", "v1beta1", "AKSNodeClass"), ("cloud.google.com", "v1", "ComputeClass")]
# What is removed between runs: the controllers first (their dependents
# orphaned, so nothing is made again), then the pods at once (no kubelet
# here would finish a graceful deletion).
CONTROLLER_PATHS = ["/apis/apps/v1/namespaces/{ns}/deployments", "/apis/apps/v1/namespaces/{ns}/replicasets",
                    "/apis/apps/v1/namespaces/{ns}/statefulsets", "/apis/apps/v1/namespaces/{ns}/daemonsets",
                    "/apis/batch/v1/namespaces/{ns}/jobs", "/apis/batch/v1beta1/namespaces/{ns}/cronjobs"]
SIZED_ANNOTATION = "gpu-sizer.io/sized"
# The corpus's workloads are shared out over this many control planes,
# each with its own copy of the fleet, run side by side: a run waits on the
# scheduler and the controllers most of the time (docs/testing.md).
CORPUS_LANES = 3
CLUSTER = None


def start_cluster():
    """A control plane with the scheduler, the controllers and the webhook
    on, its registration in place."""
    cluster = Cluster(KUBERNETES_BIN, GPU_SIZER)
    try:
        cluster.start_control_plane()
        cluster.start_scheduler()
        cluster.start_controller_manager(CONTROLLERS)
        # The pool kinds exist before the webhook starts: its pool watch
        # finds them by discovery.
        cluster.install_crds([open_crd(group, version, kind, "Cluster") for group, version, kind in POOL_KINDS])
        # The webhook reads nodes and pools as deploy/'s service account.
        cluster.apply_objects([obj for obj in cluster.deploy_objects(SOURCE / "deploy")
                               if obj["kind"] in ("ClusterRole", "ClusterRoleBinding")])
        # The fleet's node group no cluster object describes (an N1 machine
        # with an attached T4), as the policy's nodeFit.pools.
        cluster.start_webhook("--policy", SOURCE / "tests" / "data" / "fleets" / "scaled-to-zero-node-groups.yaml")
        webhooks_on(cluster)
    except Exception:
        cluster.shutdown()
        raise
    return cluster


def setUpModule():
    global CLUSTER
    CLUSTER = start_cluster()


def tearDownModule():
    CLUSTER.remove()


# --- the webhook on and off ---------------------------------------------------
PROBE = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "default"},
         "spec": {"containers": [{"name": "trainer", "image": "pytorch/pytorch",
                                  "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}


def webhook_answers(cluster):
    """Whether the API server calls the webhook now (a dry-run 4-GPU pod
    comes back sized): configuration changes reach it asynchronously."""
    pod = cluster.api("POST", "/api/v1/namespaces/default/pods?dryRun=All", PROBE)
    return SIZED_ANNOTATION in (pod["metadata"].get("annotations") or {})


def webhooks_on(cluster):
    cluster.register_webhooks(SOURCE / "deploy")
    wait_until("the API server to call the webhook", lambda: webhook_answers(cluster), 30)


def webhooks_off(cluster):
    cluster.kubectl("delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration", "gpu-sizer-e2e",
                    "--ignore-not-found")
    wait_until("the API server to stop calling the webhook", lambda: not webhook_answers(cluster), 30)


# --- nodes ---------------------------------------------------------------------
def node_count(cluster):
    return len(cluster.api("GET", "/api/v1/nodes")["items"])


def set_nodes(cluster, nodes):
    """Makes NODES the cluster's nodes, and waits until the webhook's
    inventory holds as many."""
    wanted = {node["metadata"]["name"] for node in nodes}
    for existing in cluster.api("GET", "/api/v1/nodes")["items"]:
        if existing["metadata"]["name"] not in wanted:
            cluster.api("DELETE", f"/api/v1/nodes/{existing['metadata']['name']}")
    present = {node["metadata"]["name"] for node in cluster.api("GET", "/api/v1/nodes")["items"]}
    for node in nodes:
        if node["metadata"]["name"] not in present:
            cluster.create_node(node)
    wait_until(f"the webhook to know {len(nodes)} nodes",
               lambda: cluster.metric("gpu_sizer_node_inventory_nodes") == len(nodes), 30)


# --- pods: settled, recorded, cleared -------------------------------------------
def pods_in(cluster, namespace):
    return cluster.api("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]


def scheduling_done(pod, nodes):
    """Bound, or judged unschedulable against the NODES nodes there are now
    (the scheduler's message counts them), or left to another scheduler."""
    if pod["spec"].get("nodeName") or pod["spec"].get("schedulerName", "default-scheduler") != "default-scheduler":
        return True
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            message = condition.get("message", "")
            return message.startswith(f"0/{nodes} nodes") if nodes else "no nodes available" in message
    return False


def settle(cluster, namespace, wait_for_pods=10):
    """The namespace's pods once the scheduler has judged each and none has
    come or changed for half a second; [] when no pod came in WAIT_FOR_PODS
    seconds (a controller's create refused)."""
    nodes = node_count(cluster)
    deadline = time.monotonic() + wait_for_pods
    last, stable_since = None, None
    while True:
        pods = pods_in(cluster, namespace)
        if not pods and time.monotonic() > deadline:
            return []
        snapshot = sorted((p["metadata"]["name"], p["spec"].get("nodeName", "")) for p in pods)
        if pods and all(scheduling_done(p, nodes) for p in pods):
            if snapshot != last:
                last, stable_since = snapshot, time.monotonic()
            elif time.monotonic() - stable_since >= 0.5:
                return pods
        else:
            last = None
        if time.monotonic() > deadline + 60:
            raise AssertionError(f"{namespace}: pods not settled after 70s: {snapshot}")
        time.sleep(0.2)


def clear(cluster, namespace):
    """Removes the namespace's controllers and pods, and waits until none is left."""
    for path in CONTROLLER_PATHS:
        cluster.api("DELETE", path.format(ns=namespace), {"kind": "DeleteOptions", "apiVersion": "v1",
                                                          "propagationPolicy": "Orphan"})

    def gone():
        cluster.api("DELETE", f"/api/v1/namespaces/{namespace}/pods",
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        return not pods_in(cluster, namespace)
    wait_until(f"the pods of {namespace} to go", gone, 30)


def create_namespace(cluster, name):
    cluster.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    # Pods of a namespace need its default service account only where the
    # ServiceAccount admission plugin runs; it does not here.


def create_job_from_cronjob(cluster, namespace, cronjob, name):
    """`kubectl create job NAME --from=cronjob/CRONJOB`, done as kubectl
    does it (the Job of the CronJob's jobTemplate, owned by it, annotated
    as made by hand) and created with kubectl: a kubectl newer than 1.20
    knows only batch/v1 CronJobs for --from."""
    source = json.loads(cluster.kubectl("get", "cronjob", cronjob, "-n", namespace, "-o", "json").stdout)
    template = source["spec"]["jobTemplate"]
    metadata = template.get("metadata") or {}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "namespace": namespace, "labels": metadata.get("labels") or {},
        "annotations": {**(metadata.get("annotations") or {}), "cronjob.kubernetes.io/instantiate": "manual"},
        "ownerReferences": [{"apiVersion": source["apiVersion"], "kind": "CronJob", "name": cronjob,
                             "uid": source["metadata"]["uid"], "controller": True}]},
        "spec": template["spec"]}
    return cluster.kubectl("create", "-f", "-", input=json.dumps(job), check=False)


def gpu_container(pod):
    return next(c for c in pod["spec"]["containers"]
                if "nvidia.com/gpu" in (c.get("resources", {}).get("limits") or {}))


def gpu_template(name, gpus, cpu, memory, image="nvcr.io/nvidia/pytorch:24.05-py3", node_selector=None):
    spec = {"containers": [{"name": name, "image": image, "resources": {
        "limits": {"nvidia.com/gpu": str(gpus), "cpu": cpu, "memory": memory}}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"metadata": {"labels": {"app": name}}, "spec": spec}


# A small fleet of the shared corpus's machines (their allocatable as
# their nodes report it): an L4 node on GKE with GKE's GPU taint, and an
# 8-GPU A100 node of a Karpenter pool on EKS.
def l4_node():
    return {"metadata": {"name": "gke-g2-standard-12-0", "labels": {
                "kubernetes.io/hostname": "gke-g2-standard-12-0", "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "g2-standard-12",
                "cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-accelerator-count": "1"}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "11900m", "memory": "40Gi", "ephemeral-storage": "85Gi",
                                       "pods": "110", "nvidia.com/gpu": "1"}}}


def a100_node():
    return {"metadata": {"name": "eks-p4de-24xlarge-0", "labels": {
                "kubernetes.io/hostname": "eks-p4de-24xlarge-0", "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "p4de.24xlarge", "karpenter.sh/nodepool": "gpu",
                "nvidia.com/gpu.count": "8", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
            "status": {"allocatable": {"cpu": "95690m", "memory": "1100Gi", "ephemeral-storage": "7000Gi",
                                       "pods": "110", "nvidia.com/gpu": "8"}}}


class ControllersTest(unittest.TestCase):
    """The built-in controllers make the pods from what kubectl applied."""

    @classmethod
    def setUpClass(cls):
        set_nodes(CLUSTER, [l4_node(), a100_node()])

    def apply(self, namespace, obj):
        create_namespace(CLUSTER, namespace)
        self.addCleanup(clear, CLUSTER, namespace)
        obj["metadata"]["namespace"] = namespace
        result = CLUSTER.apply_objects([obj])
        return warnings_of(result.stderr)

    def assert_sized_and_bound(self, pods, count, owner_kind):
        self.assertEqual(len(pods), count, [p["metadata"]["name"] for p in pods])
        for pod in pods:
            name = pod["metadata"]["name"]
            self.assertEqual(pod["metadata"]["ownerReferences"][0]["kind"], owner_kind, name)
            self.assertIn(SIZED_ANNOTATION, pod["metadata"].get("annotations", {}), name)
            self.assertTrue(pod["spec"].get("nodeName"), f"{name} not bound: {pod.get('status')}")

    def test_deployment_pods_are_sized_at_creation_and_bound(self):
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"},
                      "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "vllm"}},
                               "template": gpu_template("vllm", 1, "2", "10Gi", image="vllm/vllm-openai:v0.6.3")}}
        warnings = self.apply("deploy", deployment)
        # Templates of long-lived kinds are left as written (a rollout
        # would follow every table change): kubectl says what the pods get.
        self.assertIn('at pod creation: spec.template container "vllm": memory 10Gi is below 64Gi for 1 GPU '
                      "(infer profile)", warnings)
        pods = settle(CLUSTER, "deploy")
        self.assert_sized_and_bound(pods, 2, "ReplicaSet")
        for pod in pods:
            # The infer row's 64Gi holds on the A100 node only: both go there.
            self.assertEqual(gpu_container(pod)["resources"]["limits"]["memory"], "64Gi")
            self.assertEqual(pod["spec"]["nodeName"], "eks-p4de-24xlarge-0")

    def test_statefulset_pods_are_sized_and_bound(self):
        statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "trainer"},
                       "spec": {"replicas": 2, "serviceName": "trainer", "podManagementPolicy": "Parallel",
                                "selector": {"matchLabels": {"app": "trainer"}},
                                "template": gpu_template("trainer", 2, "4", "16Gi")}}
        self.apply("sts", statefulset)
        pods = settle(CLUSTER, "sts")
        self.assert_sized_and_bound(pods, 2, "StatefulSet")
        for pod in pods:
            self.assertEqual(gpu_container(pod)["resources"]["limits"]["memory"], "96Gi")

    def test_job_template_is_sized_by_kubectl_apply_and_its_pods_bound(self):
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "finetune"},
               "spec": {"parallelism": 2, "completions": 2,
                        "template": gpu_template("finetune", 2, "4", "16Gi")}}
        job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
        warnings = self.apply("job", job)
        self.assertIn('spec.template container "finetune": memory request unset->96Gi, limit 16Gi->96Gi '
                      "(2 GPUs, train profile)", warnings)
        self.assert_sized_and_bound(settle(CLUSTER, "job"), 2, "Job")

    def test_cronjob_jobs_made_by_kubectl_and_by_the_controller_are_sized_and_bound(self):
        # Every minute, so the cronjob controller makes one while the test runs.
        cronjob = {"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": {"name": "nightly-eval"},
                   "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {
                       "template": gpu_template("evaluator", 1, "2", "24Gi")}}}}
        cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
        # v1.20 serves CronJob as batch/v1beta1, which deploy/'s rules (batch/v1
        # from 1.21 on) do not name: the Jobs made from it are sized.
        self.apply("cron", cronjob)
        made = create_job_from_cronjob(CLUSTER, "cron", "nightly-eval", "nightly-eval-manual")
        self.assertEqual(made.returncode, 0, made.stderr)
        warnings = warnings_of(made.stderr)
        self.assertIn('spec.template container "evaluator": memory request unset->64Gi, limit 24Gi->64Gi '
                      "(1 GPU, train profile)", warnings)
        # 64Gi leaves the L4 node behind: kubectl says which machine it takes now.
        self.assertIn("spec.template node fit: smallest fitting instance now p4de.24xlarge (was "
                      "g2-standard-12)", warnings)
        # The controller's Job comes at the next minute (it looks every 10 s).
        wait_until("the cronjob controller to make a Job", lambda: len(pods_in(CLUSTER, "cron")) >= 2, 80)
        pods = settle(CLUSTER, "cron")
        self.assert_sized_and_bound(pods, 2, "Job")
        jobs = {pod["metadata"]["ownerReferences"][0]["name"] for pod in pods}
        self.assertIn("nightly-eval-manual", jobs)
        self.assertTrue(any(job.startswith("nightly-eval-") and job != "nightly-eval-manual" for job in jobs), jobs)
        for pod in pods:
            self.assertEqual(gpu_container(pod)["resources"]["limits"]["memory"], "64Gi")


class NodeAddedLaterTest(unittest.TestCase):
    """No node can hold the pod at submit time; an autoscaler adds one."""

    def test_a_pending_pod_sized_to_its_instance_type_binds_on_the_node_added_for_it(self):
        set_nodes(CLUSTER, [l4_node()])
        create_namespace(CLUSTER, "later")
        self.addCleanup(clear, CLUSTER, "later")
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "l40s-train", "namespace": "later"},
               "spec": {"template": gpu_template("trainer", 1, "2", "8Gi",
                                                 node_selector={"node.kubernetes.io/instance-type": "g6e.4xlarge"})}}
        job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
        warnings = warnings_of(CLUSTER.apply_objects([job]).stderr)
        # Not the train table's 16 CPU and 300Gi: the catalogue's
        # g6e.4xlarge, on the default 20 GiB root volume of an EKS node.
        self.assertIn("spec.template node cap: cpu 16 (train profile) capped to 15300m: g6e.4xlarge has cpu 15890m",
                      warnings)
        self.assertIn("spec.template node cap: ephemeral-storage 300Gi (train profile) capped to 12Gi: g6e.4xlarge "
                      "has ephemeral-storage 17Gi", warnings)
        pods = settle(CLUSTER, "later")
        self.assertEqual(len(pods), 1)
        self.assertFalse(pods[0]["spec"].get("nodeName"))
        self.assertEqual(gpu_container(pods[0])["resources"]["requests"]["cpu"], "15300m")
        # The autoscaler launches a g6e.4xlarge (16 vCPU, 128 GiB, one L40S)
        # as EKS leaves it: the kubelet's CPU reserve, a 20 GiB root volume.
        node = {"metadata": {"name": "eks-g6e-4xlarge-0", "labels": {
                    "kubernetes.io/hostname": "eks-g6e-4xlarge-0", "kubernetes.io/os": "linux",
                    "node.kubernetes.io/instance-type": "g6e.4xlarge", "karpenter.sh/nodepool": "gpu",
                    "nvidia.com/gpu.count": "1", "nvidia.com/gpu.product": "NVIDIA-L40S"}},
                "status": {"allocatable": {"cpu": "15890m", "memory": "118Gi", "ephemeral-storage": "17Gi",
                                           "pods": "110", "nvidia.com/gpu": "1"}}}
        CLUSTER.create_node(node)
        wait_until("the Pending pod to bind on the new node",
                   lambda: pods_in(CLUSTER, "later")[0]["spec"].get("nodeName") == "eks-g6e-4xlarge-0", 60)


# --- the corpus in paired runs ---------------------------------------------------


class Outcome:
    """What became of one workload in one run: its pods, how many the
    scheduler bound, and what the API server refused."""

    def __init__(self, pods=(), refused=()):
        self.pods = len(pods)
        self.bound = sum(1 for pod in pods if pod["spec"].get("nodeName"))
        self.refused = list(refused)
        unbound = [pod for pod in pods if not pod["spec"].get("nodeName")]
        self.why = next((c.get("message", "") for c in unbound[0].get("status", {}).get("conditions", [])
                         if c["type"] == "PodScheduled"), "") if unbound else ""

    def __str__(self):
        text = f"{self.bound}/{self.pods} bound"
        if self.refused:
            text += f", refused: {self.refused[0][:300]}"
        if self.why:
            text += f" ({self.why[:300]})"
        return text


def run_workload(cluster, workload, namespace, nodes_later=None):
    """Creates WORKLOAD in NAMESPACE and what makes its pods, and returns the
    Outcome once the scheduler has judged them. NODES_LATER: nodes created
    only after the pods were (an autoscaler's)."""
    if nodes_later is not None:
        set_nodes(cluster, [])
    create_namespace(cluster, namespace)
    obj = workload.prepared(namespace)
    # --validate=false: fields newer than v1.20 are dropped by the server
    # (as an older cluster would) instead of failing in kubectl.
    result = cluster.apply_objects([obj], "--validate=false", "-o", "json", check=False)
    refused = []
    if result.returncode != 0:
        refused.append(result.stderr.strip())
    elif obj["kind"] == "CronJob":
        made = create_job_from_cronjob(cluster, namespace, obj["metadata"]["name"], "run-0")
        if made.returncode != 0:
            refused.append(made.stderr.strip())
    elif not workload.built_in:
        stored = json.loads(result.stdout)
        stored = stored["items"][0] if stored.get("kind") == "List" else stored
        for pod in pods_from_templates(stored, workload.locations, namespace):
            try:
                cluster.api("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
            except urllib.error.HTTPError as error:
                refused.append(json.loads(error.read()).get("message", str(error)))
    # A controller's pods come in a moment; pods made here are there now.
    wait_for_pods = 10 if workload.built_in and not refused else 0
    if nodes_later is not None:
        settle(cluster, namespace, wait_for_pods)
        set_nodes(cluster, nodes_later)
    outcome = Outcome(settle(cluster, namespace, wait_for_pods), refused)
    clear(cluster, namespace)
    return outcome


def wait_for_pools(cluster, objects):
    """Until the webhook's pool watch holds as many objects of each kind as
    OBJECTS has."""
    counts = {}
    for obj in objects:
        group, version = obj["apiVersion"].split("/")
        path = f"/apis/{group}/{version}/{plural_of(obj['kind'])}"
        counts[path] = counts.get(path, 0) + 1
    wait_until("the pool watch to know the pools", lambda: all(
        f"{count} known from <code>{path}</code>" in cluster.status_page() for path, count in counts.items()), 60)


class CorpusTest(unittest.TestCase):
    """The corpus's GPU workloads on its fleet, without and with the webhook."""

    def test_every_pod_bound_without_the_webhook_is_bound_with_it_on_the_fleet_and_scaled_to_zero(self):
        if not (CORPUS and CORPUS.is_dir() and FLEET and FLEET.is_file()):
            self.skipTest(f"no corpus at {CORPUS} or no fleet file {FLEET}")
        fleet = [node for doc in load_documents(FLEET) for node in (doc.get("items") or [doc])]
        pools = [obj for doc in load_documents(SOURCE / "tests" / "data" / "fleets" / "scaled-to-zero.yaml")
                 for obj in (doc.get("items") or [doc])]
        workloads, left_out = corpus_workloads(CORPUS, kind_table(GPU_SIZER))
        self.assertTrue(workloads, "no GPU workload found in the corpus")
        workloads += fleet_probes(fleet)
        crds = {}
        for workload in workloads:
            if not workload.built_in:
                group, version = workload.doc["apiVersion"].split("/")
                kind = workload.doc["kind"]
                crd = open_crd(group, version, kind, "Cluster" if kind.startswith("Cluster") else "Namespaced")
                crds[crd["metadata"]["name"]] = crd
        docs = [workload.doc for workload in workloads]
        classes = ([{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                     "value": 1000}
                    for name in sorted(named_classes(docs, "priorityClassName")) if not name.startswith("system-")] +
                   [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                     "handler": name}
                    for name in sorted(named_classes(docs, "runtimeClassName"))])

        def run_lane(cluster, lane):
            """The three runs of each workload of LANE (index, workload) on
            CLUSTER: {index: (unsized, sized, scaled to zero)}."""
            cluster.install_crds(list(crds.values()))
            cluster.apply_objects(classes)
            set_nodes(cluster, fleet)
            webhooks_off(cluster)
            try:
                unsized = [run_workload(cluster, w, f"unsized-{i}") for i, w in lane]
            finally:
                webhooks_on(cluster)
            sized = [run_workload(cluster, w, f"sized-{i}") for i, w in lane]
            cluster.apply_objects(pools)
            wait_for_pools(cluster, pools)
            scaled_to_zero = [run_workload(cluster, w, f"zero-{i}", nodes_later=fleet) for i, w in lane]
            return {i: outcomes for (i, _), outcomes in zip(lane, zip(unsized, sized, scaled_to_zero))}

        # Started one after another: each takes its ports (free_port) once
        # the one before holds its own.
        clusters = [CLUSTER]
        try:
            clusters += [start_cluster() for _ in range(CORPUS_LANES - 1)]
            lanes = [list(enumerate(workloads))[k::len(clusters)] for k in range(len(clusters))]
            outcomes = {}
            with concurrent.futures.ThreadPoolExecutor(len(clusters)) as pool:
                for result in pool.map(run_lane, clusters, lanes):
                    outcomes.update(result)
        finally:
            for cluster in clusters[1:]:
                cluster.remove()
        unsized, sized, scaled_to_zero = zip(*(outcomes[i] for i in range(len(workloads))))

        failures = []
        for workload, before, on_nodes, from_zero in zip(workloads, unsized, sized, scaled_to_zero):
            print(f"{workload.where} {workload.doc['kind']}: without the webhook {before}; sized on the fleet "
                  f"{on_nodes}; sized scaled to zero {from_zero}", file=sys.stderr)
            for run_name, outcome in (("on the fleet", on_nodes), ("scaled to zero", from_zero)):
                if outcome.bound < before.bound:
                    failures.append(f"{workload.where}: {before.bound} pods bound without the webhook, "
                                    f"{outcome.bound} sized {run_name}: {outcome}")
        for reason, where in sorted(left_out.items()):
            print(f"left out ({reason}): {len(where)}", file=sys.stderr)
        print(f"scheduler e2e: {len(workloads)} workloads, {sum(o.pods for o in unsized)} pods; bound without the "
              f"webhook {sum(o.bound for o in unsized)}, sized on the fleet {sum(o.bound for o in sized)}, sized "
              f"scaled to zero {sum(o.bound for o in scaled_to_zero)}; made unschedulable: {len(failures)}",
              file=sys.stderr)
        self.assertEqual(failures, [])


if __name__ == "__main__":
    if not (KUBERNETES_BIN and GPU_SIZER and SOURCE):
        sys.exit(__doc__)
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for case in (ControllersTest, NodeAddedLaterTest, CorpusTest):
        suite.addTests(loader.loadTestsFromTestCase(case))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)
