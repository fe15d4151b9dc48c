#!/usr/bin/env python3
"""End-to-end: gpu-sizer behind a real kube-apiserver, driven with kubectl.

Usage: apiserver_e2e.py KUBERNETES_BIN GPU_SIZER SOURCE_DIR

Starts Debian's etcd and the kube-apiserver built by
tests/e2e/build-kube-control-plane.sh (in KUBERNETES_BIN) on loopback, runs the gpu-sizer binary on
loopback with its self-signed certificate, registers the webhook
configurations of deploy/ rewritten to clientConfig.url with that CA, and
checks what users see:

  - deploy/ passes the API server's validation (kubectl apply
    --dry-run=server -f deploy/), then is applied for real and
    deploy/selfsigned-certs.sh fills caBundle and the TLS Secret; the
    cert-manager objects (whose CRDs this cluster lacks) are checked
    against the Certificate the annotations name;
  - deploy/'s rules name CRD families this cluster has not installed
    (KServe, NIM, Trainer v2, LeaderWorkerSet...): the API server stores
    them and pods are still admitted and sized;
  - a 4-GPU pod at 64Gi comes back from `kubectl apply --dry-run=server`
    with 32 CPU / 192Gi / 300Gi and kubectl prints the webhook's warnings;
    a real create stores the sized pod;
  - a pod that opted out of mutation is denied and kubectl's error says
    what to set;
  - every workload fixture in tests/data/workloads (built-in kinds and CRDs
    registered here with open schemas) comes back with the same resources
    and the same warnings as `gpu-sizer check --fix` gives offline;
  - the webhook watches the cluster's nodes as the service account of
    deploy/ (its ClusterRole and binding, nothing more): Node objects with
    allocatable set through the status subresource cap a 1-GPU server's
    pod to the L4 node it may run on, with the warning; a larger node added
    while it runs changes the next answer; the API server restarted, the
    webhook keeps running and its watch resumes;
  - with the webhook stopped, failurePolicy Ignore admits pods unchanged,
    and failurePolicy Fail rejects every matched pod, GPU or not.

The API server is v1.20 (what Debian bookworm ships as source). Where it
lacks an API that deploy/ uses (policy/v1 PodDisruptionBudget, GA in 1.21)
the object is sent as the older version with the same fields and the test
says so. Exit 0 when every check passes.
"""

import base64
import json
import os
import re
import sys
import unittest
from pathlib import Path

import yaml
from apiserver_objects import NAMESPACE, container, node, server_pod, sized_resources
from control_plane import (WEBHOOK_USER, Cluster, for_v1_20, has_pod_level_resources, load_documents, open_crd,
                           print_once, run, unmatched_warnings, wait_until, warnings_of)

KUBERNETES_BIN = Path(sys.argv[1]) if len(sys.argv) > 1 else None
GPU_SIZER = Path(sys.argv[2]) if len(sys.argv) > 2 else None
SOURCE = Path(sys.argv[3]) if len(sys.argv) > 3 else None


CLUSTER = None


def setUpModule():
    global CLUSTER
    CLUSTER = Cluster(KUBERNETES_BIN, GPU_SIZER)
    try:
        CLUSTER.start_control_plane()
        CLUSTER.kubectl("create", "namespace", NAMESPACE)
        # The fixtures' pods name this PriorityClass; the Priority admission
        # plugin rejects pods whose class does not exist.
        CLUSTER.apply_objects([{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                "metadata": {"name": "gpu-batch"}, "value": 1000}])
        # Karpenter's CRDs, before the webhook starts: its pool watch finds
        # them by discovery (NodeInventoryTest creates the pools).
        CLUSTER.install_crds([open_crd("karpenter.sh", "v1", "NodePool", "Cluster"),
                              open_crd("karpenter.k8s.aws", "v1", "EC2NodeClass", "Cluster")])
    except Exception:
        CLUSTER.shutdown()
        raise


def tearDownModule():
    CLUSTER.remove()


class DeployManifestsTest(unittest.TestCase):
    """deploy/ against the real API server. Runs first: it creates and then
    removes the real webhook configurations named gpu-sizer."""

    def test_deploy_manifests_pass_api_validation_and_selfsigned_script_fills_ca(self):
        objects = CLUSTER.deploy_objects(SOURCE / "deploy")
        kinds = sorted({o["kind"] for o in objects})
        self.assertEqual(kinds, ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment",
                                 "MutatingWebhookConfiguration", "Namespace", "PodDisruptionBudget", "Service",
                                 "ServiceAccount", "ValidatingWebhookConfiguration"])
        # Namespaced objects need their namespace to exist even in a dry run.
        namespace = [o for o in objects if o["kind"] == "Namespace"]
        CLUSTER.apply_objects(namespace)
        dry_run = CLUSTER.apply_objects(objects, "--dry-run=server", check=False)
        self.assertEqual(dry_run.returncode, 0, dry_run.stderr)
        self.assertEqual(dry_run.stdout.count("(server dry run)"), len(objects), dry_run.stdout)

        # The cert-manager variants of the webhook configurations are built-in
        # kinds: the API server validates them too.
        cert_manager = SOURCE / "deploy" / "cert-manager"
        webhook_variants = [o for o in CLUSTER.deploy_objects(cert_manager) if o["kind"].endswith("WebhookConfiguration")]
        self.assertEqual(len(webhook_variants), 2)
        dry_run = CLUSTER.apply_objects(webhook_variants, "--dry-run=server", check=False)
        self.assertEqual(dry_run.returncode, 0, dry_run.stderr)

        # For real, then the script for clusters without cert-manager.
        try:
            CLUSTER.apply_objects(objects)
            script = run([SOURCE / "deploy" / "selfsigned-certs.sh", "--dir", CLUSTER.dir / "selfsigned"],
                         check=False, env={**os.environ, "KUBECONFIG": str(CLUSTER.kubeconfig)})
            self.assertEqual(script.returncode, 0, script.stdout + script.stderr)
            secret = json.loads(CLUSTER.kubectl("get", "secret", "-n", "gpu-sizer", "gpu-sizer-tls",
                                                "-o", "json").stdout)
            self.assertEqual(secret["type"], "kubernetes.io/tls")
            server_cert = CLUSTER.dir / "server-from-secret.crt"
            server_cert.write_bytes(base64.b64decode(secret["data"]["tls.crt"]))
            for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
                config = json.loads(CLUSTER.kubectl("get", kind, "gpu-sizer", "-o", "json").stdout)
                for webhook in config["webhooks"]:
                    ca = CLUSTER.dir / f"{webhook['name']}.ca"
                    ca.write_bytes(base64.b64decode(webhook["clientConfig"]["caBundle"]))
                    # The caBundle verifies the Secret's certificate for the
                    # name the API server dials: <service>.<namespace>.svc.
                    verify = run(["openssl", "verify", "-CAfile", ca, "-verify_hostname",
                                  "gpu-sizer.gpu-sizer.svc", server_cert], check=False)
                    self.assertEqual(verify.returncode, 0, f"{webhook['name']}: {verify.stdout}{verify.stderr}")
        finally:
            # Their Service has no endpoints here; the e2e registration below
            # points at the loopback process instead.
            CLUSTER.kubectl("delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration",
                            "gpu-sizer", "--ignore-not-found", check=False)

    def test_cert_manager_annotations_name_the_certificate_for_the_service(self):
        # Issuer and Certificate are cert-manager CRDs this cluster does not
        # have; check them against what the webhook configurations and the
        # Service need instead.
        objects = CLUSTER.deploy_objects(SOURCE / "deploy" / "cert-manager")
        certificates = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
                        for o in objects if o["kind"] == "Certificate"}
        issuers = {o["metadata"]["name"] for o in objects if o["kind"] == "Issuer"}
        service = next(o for o in CLUSTER.deploy_objects(SOURCE / "deploy") if o["kind"] == "Service")
        service_dns = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
        for config in (o for o in objects if o["kind"].endswith("WebhookConfiguration")):
            named = config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            self.assertIn(named, certificates, config["kind"])
            certificate = certificates[named]
            self.assertIn(service_dns, certificate["spec"]["dnsNames"])
            self.assertIn(certificate["spec"]["issuerRef"]["name"], issuers)
            deployment = next(o for o in CLUSTER.deploy_objects(SOURCE / "deploy") if o["kind"] == "Deployment")
            secrets = [v["secret"]["secretName"] for v in deployment["spec"]["template"]["spec"]["volumes"]
                       if "secret" in v]
            self.assertIn(certificate["spec"]["secretName"], secrets)


def fixture(name):
    return for_v1_20(load_documents(SOURCE / "tests" / "data" / "workloads" / name)[0])


class WebhookTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        CLUSTER.start_webhook()
        # deploy/'s rules as they are: they name every CRD family gpu-sizer
        # reads, and none of those CRDs is installed yet (the fixtures' are
        # added later by test_every_workload_fixture_matches_the_offline_check).
        cls.served_before = CLUSTER.served_resources()
        CLUSTER.register_webhooks(SOURCE / "deploy")
        # The API server's webhook informer picks the configuration up
        # asynchronously: wait until a GPU pod comes back sized.
        wait_until("the webhook to be called", lambda: "gpu-sizer.io/sized" in (
            CLUSTER.dry_run_apply(fixture("pod.yaml"))[1] or {}).get("metadata", {}).get("annotations", {}), 30)

    def test_rules_for_crds_not_installed_are_registered_and_pods_are_still_sized(self):
        # "Registering for a CRD that is not installed must not break
        # anything" (issue 19): the API server stores deploy/'s rules for
        # kinds it does not serve, and pods are admitted and sized all the
        # same (setUpClass waited for that; a real create checks it again).
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            not_installed = CLUSTER.registered_rules(kind, "gpu-sizer-e2e") - self.served_before
            self.assertTrue({("serving.kserve.io", "inferenceservices"), ("apps.nvidia.com", "nimservices"),
                             ("trainer.kubeflow.org", "trainjobs"), ("leaderworkerset.x-k8s.io", "leaderworkersets")}
                            <= not_installed, f"{kind}: rules for kinds not served: {sorted(not_installed)}")
        pod = fixture("pod.yaml")
        pod["metadata"]["name"] = "sized-beside-uninstalled-crd-rules"
        CLUSTER.apply_objects([pod])
        try:
            stored = json.loads(CLUSTER.kubectl("get", "pod", "-n", NAMESPACE, pod["metadata"]["name"],
                                                "-o", "json").stdout)
            self.assertIn("gpu-sizer.io/sized", stored["metadata"].get("annotations", {}))
        finally:
            CLUSTER.kubectl("delete", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--wait=false",
                            "--ignore-not-found", check=False)

    def test_4gpu_pod_at_64gi_is_admitted_with_32cpu_192gi_300gi_and_warnings(self):
        result, pod = CLUSTER.dry_run_apply(fixture("pod.yaml"))
        self.assertEqual(result.returncode, 0, result.stderr)
        trainer = container(pod["spec"], "trainer")["resources"]
        self.assertEqual(trainer["requests"]["cpu"], "32")
        self.assertEqual(trainer["requests"]["memory"], "192Gi")
        self.assertEqual(trainer["requests"]["ephemeral-storage"], "300Gi")
        self.assertEqual(trainer["limits"]["cpu"], "32")
        self.assertEqual(trainer["limits"]["memory"], "192Gi")
        self.assertEqual(trainer["requests"]["nvidia.com/gpu"], "4")
        # Containers without GPUs keep what they asked for.
        self.assertEqual(container(pod["spec"], "metrics-exporter")["resources"]["requests"],
                         {"cpu": "50m", "memory": "64Mi"})
        self.assertIn("train profile, 4 GPUs", pod["metadata"]["annotations"]["gpu-sizer.io/sized"])
        self.assertEqual(warnings_of(result.stderr), {
            'container "trainer": cpu request 8->32, limit 8->32 (4 GPUs, train profile)',
            'container "trainer": memory request 64Gi->192Gi, limit 64Gi->192Gi (4 GPUs, train profile)',
            'container "trainer": ephemeral-storage request unset->300Gi (4 GPUs, train profile)'})

    def test_created_pod_is_stored_sized(self):
        pod = fixture("pod.yaml")
        pod["metadata"]["name"] = "stored-4gpu"
        CLUSTER.apply_objects([pod])
        try:
            stored = json.loads(CLUSTER.kubectl("get", "pod", "-n", NAMESPACE, "stored-4gpu", "-o", "json").stdout)
            self.assertEqual(container(stored["spec"], "trainer")["resources"]["limits"]["memory"], "192Gi")
        finally:
            CLUSTER.kubectl("delete", "pod", "-n", NAMESPACE, "stored-4gpu", "--wait=false", check=False)

    def test_pod_that_opted_out_is_denied_with_the_fix(self):
        pod = fixture("pod.yaml")
        pod["metadata"]["annotations"]["gpu-sizer.io/mutate"] = "false"
        result, _ = CLUSTER.dry_run_apply(pod)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn('admission webhook "pods.validate.gpu-sizer.io" denied the request', result.stderr)
        self.assertIn('container "trainer": 4 GPUs need memory >= 192Gi (train profile), '
                      'found request 64Gi, limit 64Gi; set memory to 192Gi and cpu to 32', result.stderr)

    def test_training_pod_without_shm_gets_a_32gi_memory_backed_shm(self):
        pod = for_v1_20(load_documents(SOURCE / "tests" / "data" / "beyond" / "training-without-shm.yaml")[0])
        pod["metadata"]["namespace"] = NAMESPACE
        result, returned = CLUSTER.dry_run_apply(pod)
        self.assertEqual(result.returncode, 0, result.stderr)
        shm = next(v for v in returned["spec"]["volumes"] if v["name"] == "gpu-sizer-shm")
        self.assertEqual(shm["emptyDir"], {"medium": "Memory", "sizeLimit": "32Gi"})
        mounts = container(returned["spec"], "trainer")["volumeMounts"]
        self.assertIn({"name": "gpu-sizer-shm", "mountPath": "/dev/shm"},
                      [{"name": m["name"], "mountPath": m["mountPath"]} for m in mounts])
        self.assertNotIn("volumeMounts", container(returned["spec"], "log-shipper"))
        self.assertEqual(container(returned["spec"], "trainer")["resources"]["limits"]["memory"], "192Gi")
        self.assertEqual(warnings_of(result.stderr), {
            '/dev/shm: added 32Gi memory-backed emptyDir "gpu-sizer-shm" to "trainer" (train profile)'})

    def test_7b_full_fine_tune_on_two_24gb_gpus_is_denied_with_the_options(self):
        pod = for_v1_20(load_documents(SOURCE / "tests" / "data" / "beyond" / "llama-7b-sft.yaml")[0])
        pod["metadata"]["namespace"] = NAMESPACE
        result, _ = CLUSTER.dry_run_apply(pod)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn('admission webhook "pods.validate.gpu-sizer.io" denied the request', result.stderr)
        for part in ("needs 127.0 GB per GPU", "and its certain part alone is more than the 25.8 GB of RTX-4090",
                     "Would fit:", "method=qlora: 12.8 GB/GPU"):
            self.assertIn(part, result.stderr)

    def test_pod_without_gpus_is_admitted_unchanged_without_warnings(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": NAMESPACE},
               "spec": {"containers": [{"name": "web", "image": "nginx",
                                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
        result, returned = CLUSTER.dry_run_apply(pod)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(returned["spec"]["containers"][0]["resources"], {"requests": {"cpu": "1", "memory": "1Gi"}})
        self.assertNotIn("gpu-sizer.io/sized", returned["metadata"].get("annotations", {}))
        self.assertEqual(warnings_of(result.stderr), set())

    def test_every_workload_fixture_matches_the_offline_check(self):
        register_fixture_crds()
        for name in sorted(p.name for p in (SOURCE / "tests" / "data" / "workloads").glob("*.yaml")):
            with self.subTest(fixture=name):
                obj = fixture(name)
                if obj["apiVersion"] == "batch/v1" and not CLUSTER.served("batch/v1", obj["kind"]):
                    # CronJob: batch/v1 from 1.21 on; deploy/'s rule names v1.
                    print_once(f"note: {name}: skipped, this v1.20 API server has no {obj['kind']} in batch/v1")
                    continue
                if has_pod_level_resources(obj):
                    # Pod-level spec.resources: Kubernetes 1.34+; the unit and
                    # integration tests hold it to the API server's checks
                    # (tests/support/api_validation.h).
                    print_once(f"note: {name}: skipped, this v1.20 API server has no pod-level spec.resources")
                    continue
                # The offline check reads exactly what is sent.
                path = CLUSTER.dir / name
                path.write_text(json.dumps(obj))
                report = json.loads(run([GPU_SIZER, "check", "--output", "json", path], check=False).stdout)
                expected_report = report["files"][0]["objects"][0]
                fixed = yaml.safe_load(run([GPU_SIZER, "check", "--fix", path], check=False).stdout)
                result, returned = CLUSTER.dry_run_apply(obj)
                if expected_report["denials"]:
                    self.assertNotEqual(result.returncode, 0)
                    for denial in expected_report["denials"]:
                        self.assertIn(denial, result.stderr)
                    continue
                self.assertEqual(result.returncode, 0, result.stderr)
                if expected_report["unsized"]:
                    # Nothing on it holds its pods' CPU and memory (a KubeAI
                    # Model's resourceProfile, a KAITO Workspace's instance
                    # type): admitted as written, and said, naming the field.
                    said = warnings_of(result.stderr)
                    self.assertEqual(unmatched_warnings(said, expected_report["warnings"])[1], [])
                    self.assertTrue([w for w in said if "have no CPU/memory field" in w], said)
                    continue
                expected = sized_resources(fixed)
                self.assertTrue(expected, "fixture has no containers")
                actual = sized_resources(returned)
                for where, resources in expected.items():
                    self.assertEqual(actual.get(where), resources, where)
                self.assertEqual(unmatched_warnings(warnings_of(result.stderr),
                                                    expected_report["changes"] + expected_report["warnings"]),
                                 ([], []))


def register_fixture_crds():
    """An open-schema CRD for every custom kind among the fixtures, so the
    API server routes them through the workload webhook as it would with
    Argo, Kubeflow, JobSet, Ray and Volcano installed."""
    builtin_groups = {"v1", "apps/v1", "batch/v1", "batch/v1beta1"}
    crds = {}
    for path in sorted((SOURCE / "tests" / "data" / "workloads").glob("*.yaml")):
        obj = load_documents(path)[0]
        if obj["apiVersion"] in builtin_groups:
            continue
        group, version = obj["apiVersion"].split("/")
        kind = obj["kind"]
        crd = open_crd(group, version, kind, "Cluster" if kind.startswith("Cluster") else "Namespaced")
        crds[crd["metadata"]["name"]] = crd
    CLUSTER.install_crds(list(crds.values()))


def sized_pod(pod):
    """The Pod as the API server would store it, and the warnings."""
    result, returned = CLUSTER.dry_run_apply(pod)
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    return returned, warnings_of(result.stderr)


def sized(pod):
    returned, warnings = sized_pod(pod)
    return container(returned["spec"], "vllm")["resources"], warnings


class NodeInventoryTest(unittest.TestCase):
    """The webhook sizes from the nodes it watches. Runs after WebhookTest,
    whose expectations assume a cluster without Node objects."""

    NODES = ("l4-small-0", "l4-large-0")

    @classmethod
    def tearDownClass(cls):
        CLUSTER.kubectl("delete", "node", *cls.NODES, "--ignore-not-found", check=False)

    def test_deploy_rbac_lets_the_webhook_read_nodes_and_nothing_else(self):
        def can(verb, resource):
            return CLUSTER.kubectl("auth", "can-i", verb, resource, f"--as={WEBHOOK_USER}",
                                   check=False).stdout.strip()
        for verb in ("get", "list", "watch"):
            self.assertEqual(can(verb, "nodes"), "yes", verb)
            self.assertEqual(can(verb, "nodepools.karpenter.sh"), "yes", verb)
            self.assertEqual(can(verb, "ec2nodeclasses.karpenter.k8s.aws"), "yes", verb)
        for verb, resource in (("update", "nodes"), ("list", "pods"), ("get", "secrets")):
            self.assertEqual(can(verb, resource), "no", f"{verb} {resource}")

    def test_nodes_cap_a_server_pod_and_the_watch_follows_the_cluster(self):
        # g2-standard-8: one L4, about 8 vCPU and 27Gi allocatable.
        def memory_given(name):
            return sized(server_pod(name))[0]["limits"]["memory"]

        # The watch sees the Node created, then its status set: wait for both.
        CLUSTER.create_node(node("l4-small-0", "g2-standard-8", 1, "7910m", "27Gi", "95Gi"))
        wait_until("the webhook to size from the L4 node", lambda: memory_given("vllm-0") == "26Gi", 30)
        resources, warnings = sized(server_pod("vllm-0"))
        # The infer row asks 4 cpu, 64Gi and 200Gi; the node holds 26Gi and
        # 90Gi after the reserve for its DaemonSets.
        self.assertEqual(resources["limits"]["cpu"], "4")
        self.assertEqual(resources["limits"]["memory"], "26Gi")
        self.assertEqual(resources["requests"]["ephemeral-storage"], "90Gi")
        self.assertIn("node cap: memory 64Gi (infer profile) capped to 26Gi: g2-standard-8 has 27Gi", warnings)
        # The API server defaulted the requests to the limits before the webhook saw the pod.
        self.assertIn('container "vllm": memory request 10Gi->26Gi, limit 10Gi->26Gi (1 GPU, infer profile, node cap)',
                      warnings)
        # The webhook saw the toleration ExtendedResourceToleration added
        # (the Pod as written has none): the capped Pod can use the node.
        tolerations = sized_pod(server_pod("vllm-0"))[0]["spec"].get("tolerations", [])
        self.assertIn({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, tolerations)

        # A larger L4 node, added while the webhook runs, changes the next answer.
        CLUSTER.create_node(node("l4-large-0", "g2-standard-48", 4, "47", "180Gi", "375Gi"))
        wait_until("the webhook to size from the larger node", lambda: memory_given("vllm-1") == "64Gi", 30)
        self.assertEqual(CLUSTER.metric("gpu_sizer_node_inventory_nodes"), 2)
        resources, warnings = sized(server_pod("vllm-1"))
        self.assertEqual(resources["limits"]["memory"], "64Gi")
        self.assertFalse([w for w in warnings if "node cap: memory" in w], warnings)

        # The API server restarted: the webhook keeps serving, and its watch
        # resumes: a node removed after the restart changes the answer back.
        CLUSTER.restart_apiserver()
        self.assertTrue(CLUSTER.alive("gpu-sizer"))
        CLUSTER.kubectl("delete", "node", "l4-large-0")
        wait_until("the webhook to see the node deleted after the restart", lambda: memory_given("vllm-2") == "26Gi",
                   90)
        self.assertEqual(CLUSTER.metric("gpu_sizer_node_inventory_nodes"), 1)
        page = CLUSTER.status_page()
        self.assertIn("node-state node-synced", page)
        restarts = re.search(r"<dt>Watch restarts</dt><dd>(\d+)</dd>", page)
        self.assertTrue(restarts and int(restarts.group(1)) >= 1, page[:2000])


    def test_a_karpenter_pool_with_no_node_caps_its_pods_to_the_machines_it_may_launch(self):
        # A NodePool that may launch only g6e.2xlarge and g6e.4xlarge (one
        # L40S) with a 200Gi root volume, and no node of it.
        CLUSTER.apply_objects([
            {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu-l40s"},
             "spec": {"template": {"spec": {
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                 "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                   "values": ["g6e.2xlarge", "g6e.4xlarge"]}]}}}},
            {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "gpu"},
             "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}],
                      "blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True,
                                               "ebs": {"volumeSize": "200Gi"}}]}}])
        wait_until("the pool watch to know the NodePool",
                   lambda: "1 known from <code>/apis/karpenter.sh/v1/nodepools</code>" in CLUSTER.status_page(), 30)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "l40s-train", "namespace": NAMESPACE},
               "spec": {"nodeSelector": {"karpenter.sh/nodepool": "gpu-l40s"},
                        "containers": [{"name": "trainer", "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}

        def requests_given():
            returned, warnings = sized_pod(pod)
            return container(returned["spec"], "trainer")["resources"]["requests"], warnings
        # The node class is listed on its own watch: wait for its volume too.
        wait_until("the webhook to size from the pool's machines",
                   lambda: requests_given()[0].get("ephemeral-storage") == "174Gi", 30)
        requests, warnings = requests_given()
        # Not the train table's 16 CPU and 300Gi: g6e.4xlarge leaves 15890m
        # after the kubelet's reserve, and 179Gi of its root volume.
        self.assertEqual(requests["cpu"], "15300m")
        self.assertIn("node cap: cpu 16 (train profile) capped to 15300m: g6e.4xlarge of NodePool gpu-l40s has cpu "
                      "15890m", warnings)
        self.assertIn("node fit: smallest fitting instance now g6e.4xlarge (was g6e.2xlarge)", warnings)


class FailurePolicyTest(unittest.TestCase):
    """Runs last: it stops the webhook."""

    def test_stopped_webhook_ignore_admits_unchanged_and_fail_blocks_every_pod(self):
        CLUSTER.stop("gpu-sizer")
        result, pod = CLUSTER.dry_run_apply(fixture("pod.yaml"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(container(pod["spec"], "trainer")["resources"]["limits"]["memory"], "64Gi")
        self.assertNotIn("gpu-sizer.io/sized", pod["metadata"]["annotations"])

        CLUSTER.register_webhooks(SOURCE / "deploy", failure_policy="Fail")
        gpu_pod = fixture("pod.yaml")
        plain_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": NAMESPACE},
                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}

        def rejected(pod):
            result, _ = CLUSTER.dry_run_apply(pod)
            return result.returncode != 0 and "failed calling webhook" in result.stderr

        # The informer takes the new failurePolicy asynchronously.
        wait_until("failurePolicy Fail to apply", lambda: rejected(gpu_pod), 30)
        result, _ = CLUSTER.dry_run_apply(plain_pod)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn('failed calling webhook "pods.mutate.gpu-sizer.io"', result.stderr)


if __name__ == "__main__":
    if not (KUBERNETES_BIN and GPU_SIZER and SOURCE):
        sys.exit(__doc__)
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for case in (DeployManifestsTest, WebhookTest, NodeInventoryTest, FailurePolicyTest):
        suite.addTests(loader.loadTestsFromTestCase(case))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)
