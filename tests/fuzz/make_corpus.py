#!/usr/bin/env python3
"""Writes the seed corpora in tests/fuzz/corpus/ (committed; rerun after
changing this file or the fixtures it reads).

The review seeds are real AdmissionReviews, as the API server sends them:
every workload fixture in tests/data/workloads, and the 4-GPU pod of
tests/data/review-4gpu-64gi.json in the variants the pod decisions branch
on (limits only, numbers, missing maps, opt-out, profiles, init containers,
sidecars, fractional and unequal GPU counts, expressions, operations). A
byte-mutating fuzzer rarely builds such a document itself; starting from
them it reaches the decisions and mutates their values.
"""

import copy
import json
import pathlib
import shutil

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def write(target, name, text):
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text)


def compact(value):
    return json.dumps(value, separators=(",", ":"))


# --- quantity ---------------------------------------------------------------

QUANTITIES = [
    "64Gi", "192Gi", "1536Mi", "1.5Gi", "0.5Gi", "1Ki", "1023Ki", "8Ei", "1Pi", "1Ti",
    "32", "1500m", "1.5", ".5", "1.", "+1", "-1", "-1.5Gi", "0", "0.0", "-0",
    "1n", "1u", "1m", "1k", "1M", "1G", "1T", "1P", "1E", "1e3", "1E-2", "1e+3", "1000e-3", "5e-10",
    "9223372036854775807", "9223372036854775808", "9223372036854775807000m", "8Ei", "7.99999Ei",
    "0.0000000001", "0.0000000015", "123456789012345678901234567890n", "1.000000000000000000001Ki",
    "1KB", "1gi", "1K", "--1", " 1", "1 ", "", "e3", "1e", "1ee3", "1.2.3", "Gi", "1e99999999999999999999",
    "1 2Gi", "100m 1Mi", "64Gi 48Gi", "-8Ei 8Ei", "9223372036854775807 -9223372036854775807",
    "1.5 0.000000001", "3 0",
]


def quantity_corpus():
    for i, text in enumerate(QUANTITIES):
        write("quantity", f"q{i:02d}", text)


# --- policy -----------------------------------------------------------------

POLICIES = {
    "mode-enforce.yaml": "mode: enforce\n",
    "mode-audit-namespaces.yaml": "mode: audit\nnamespaceModes: {research: audit, prod: enforce}\n",
    "exemptions.yaml": "exemptions:\n  namespaces: [kube-system, batch]\n  users: [ci-bot]\n  groups: [admins]\n",
    "gpu-resources.yaml": "gpuResources: [nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915]\ndenyFromGpus: 4\n",
    "rules.yaml": (
        "profileRules:\n"
        "  - {on: \"label:osmo.group_name\", equals: finetune-job, profile: train}\n"
        "  - {on: \"annotation:team\", contains: a, profile: infer}\n"
        "  - {on: name, glob: \"finetune-*\", profile: train}\n"
        "  - {on: template, glob: \"*render*\", profile: render}\n"
        "  - {on: replicaType, equals: Worker, profile: train}\n"
        "defaultProfile: infer\n"
    ),
    "profiles.yaml": (
        "profiles:\n"
        "  train:\n"
        "    setPrefix: train\n"
        "    storage: 300Gi\n"
        "    table:\n"
        "      - {gpus: 1, cpu: \"16\", memory: 64Gi}\n"
        "      - {gpus: 2, cpu: \"16\", memory: 96Gi}\n"
        "      - {gpus: 4, cpu: \"32\", memory: 192Gi}\n"
        "      - {gpus: 8, cpu: \"64\", memory: 384Gi}\n"
        "    perExtraGpu: {cpu: \"8\", memory: 48Gi}\n"
        "  render: {maxGpus: 1}\n"
        "defaultProfile: train\n"
        "profileRules: []\n"
    ),
    "huge-table.yaml": (
        "profiles:\n"
        "  big:\n"
        "    table:\n"
        "      - {gpus: 1, cpu: 1500m, memory: 8Ei}\n"
        "      - {gpus: 999999999, cpu: \"9223372036854775807\", memory: 8Ei}\n"
        "    perExtraGpu: {cpu: 1n, memory: 1Ki}\n"
        "    maxGpus: 999999999\n"
        "defaultProfile: big\n"
        "profileRules: []\n"
    ),
    "errors.yaml": "denyFromGPUs: 2\nprofiles:\n  train:\n    storage: 64GB\n",
    "beyond.yaml": (
        "sharedMemory: {profiles: [train, infer], minimum: 8Gi, size: 64Gi, tableIncludes: 0}\n"
        "dataLoader: {overheadFactor: 2.5, perGpuBase: 0, podBase: 5G}\n"
        "gpuMemory:\n  action: warn\n  safetyMargin: 0.75\n  gpus: [{name: L4, memory: 24G, match: [\"*L4\"]}]\n"
        "nodeFit:\n  action: deny\n  pools:\n    - name: a100\n      gpuProduct: A100-80GB\n"
        "      nodes: [{name: dgx, gpus: 8, cpu: \"252\", memory: 1960Gi, ephemeralStorage: 28Ti}]\n"
    ),
    "anchors.yaml": "x: &r {gpus: 1, cpu: \"1\", memory: 1Gi}\nprofiles: {p: {table: [*r], perExtraGpu: {cpu: \"1\", memory: 1Gi}}}\n",
}


def policy_corpus():
    shutil.copy(ROOT / "src" / "sizing" / "default_policy.yaml", CORPUS / "policy" / "default_policy.yaml")
    for name, text in POLICIES.items():
        write("policy", name, text)


# --- AdmissionReview --------------------------------------------------------

def review(obj, operation="CREATE", namespace=None, old=None, **extra):
    api_version = obj.get("apiVersion", "v1")
    group, _, version = api_version.rpartition("/")
    metadata = obj.get("metadata") or {}
    request = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": obj.get("kind", "Pod")},
        "operation": operation,
        "namespace": namespace if namespace is not None else metadata.get("namespace", "default"),
        "name": metadata.get("name", ""),
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    request.update(extra)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def container(name, resources, **extra):
    result = {"name": name, "image": "pytorch"}
    if resources is not None:
        result["resources"] = resources
    result.update(extra)
    return result


def same(**values):
    return {"requests": dict(values), "limits": dict(values)}


def pod(containers, name="train-x", annotations=None, labels=None, init=None, namespace="team-a"):
    metadata = {"name": name, "namespace": namespace}
    if annotations is not None:
        metadata["annotations"] = annotations
    if labels is not None:
        metadata["labels"] = labels
    spec = {"restartPolicy": "Never", "containers": containers}
    if init is not None:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


GPU = "nvidia.com/gpu"


def pod_variants():
    four = same(**{GPU: "4", "cpu": "8", "memory": "64Gi"})
    yield "pod-limits-only", pod([container("trainer", {"limits": {GPU: "4", "memory": "64Gi", "cpu": "8"}})])
    yield "pod-requests-only", pod([container("trainer", {"requests": {GPU: "2", "memory": "16Gi"}})])
    yield "pod-numbers", pod([container("trainer", {"limits": {GPU: 8, "cpu": 16, "memory": 68719476736}})])
    yield "pod-no-resources-map", pod([container("trainer", {"limits": {GPU: "1"}}), container("side", None)])
    yield "pod-null-maps", pod([container("trainer", {"requests": None, "limits": {GPU: "2"}})], annotations=None)
    yield "pod-already-sized", pod([container("trainer", same(**{GPU: "4", "cpu": "64", "memory": "1Ti",
                                                                  "ephemeral-storage": "1Ti"}))])
    yield "pod-opt-out", pod([container("trainer", four)], annotations={"gpu-sizer.io/mutate": "false"})
    yield "pod-label-infer", pod([container("trainer", four)], labels={"gpu-sizer.io/profile": "infer"})
    yield "pod-annotation-unknown", pod([container("trainer", four)], annotations={"gpu-sizer.io/profile": "huge"})
    yield "pod-osmo-infer", pod([container("trainer", four)], labels={"osmo.group_name": "anomaly-infer"})
    yield "pod-render-2gpus", pod([container("trainer", same(**{GPU: "2"}))], name="render-frames")
    yield "pod-two-holders", pod([container("a", same(**{GPU: "2", "memory": "8Gi"})),
                                  container("b", same(**{GPU: "2", "cpu": "1"})),
                                  container("sidecar", {"requests": {"cpu": "100m"}})])
    yield "pod-three-uneven", pod([container("a", same(**{GPU: "1"})), container("b", same(**{"amd.com/gpu": "2"}))])
    yield "pod-init-gpus", pod([container("trainer", same(**{GPU: "1"}))],
                               init=[container("warmup", same(**{GPU: "8", "memory": "1Gi"}))])
    yield "pod-sidecar-gpu", pod([container("trainer", same(**{GPU: "2"}))],
                                 init=[container("proxy", same(**{GPU: "1"}), restartPolicy="Always")])
    yield "pod-fractional", pod([container("trainer", same(**{GPU: "0.5"}))])
    yield "pod-unequal", pod([container("trainer", {"requests": {GPU: "2"}, "limits": {GPU: "4"}})])
    yield "pod-expression", pod([container("trainer", same(**{GPU: "{{inputs.parameters.gpus}}", "memory": "$(MEM)"}))])
    yield "pod-invalid-quantity", pod([container("trainer", same(**{GPU: "4", "memory": "64GB", "cpu": "-1"}))])
    yield "pod-16-gpus", pod([container("trainer", same(**{GPU: "16", "memory": "1Gi"}))])
    yield "pod-huge-gpus", pod([container("trainer", same(**{GPU: "9223372036854775807"}))])
    yield "pod-long-name", pod([container("t" * 63, four)], name="n" * 253)
    yield "pod-slash-keys", pod([container("trainer", four)], annotations={"a/b~c": "x", "gpu-sizer.io/sized": "old"})
    # Beyond the table: /dev/shm, data loader, model and GPU product.
    shm = pod([container("trainer", four, volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}])])
    shm["spec"]["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]
    yield "pod-shm-small", shm
    yield "pod-dataloader", pod([container("trainer", four)], annotations={
        "gpu-sizer.io/dataloader": "workers=32,prefetch=8,batch=256,sample=3x224x224,dtype=float32"})
    model = pod([container("trainer", same(**{GPU: "2"}))], annotations={
        "gpu-sizer.io/model": "params=7B,context=4k,precision=bf16,method=full,zero=0,mode=train"})
    model["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090"}
    yield "pod-model-7b", model
    affinity = pod([container("trainer", same(**{GPU: "2"}))], annotations={
        "gpu-sizer.io/model": "params=2B,method=qlora,zero=3", "gpu-sizer.io/gpu": "A100-80GB"})
    affinity["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                                     "values": ["NVIDIA-A100-SXM4-80GB"]}]}]}}}
    yield "pod-model-affinity", affinity
    # Pod-level resources (spec.resources): the pod, not each container, is sized.
    pod_level = pod([container("trainer", {"requests": {"cpu": "4", "memory": "32Gi"},
                                           "limits": {GPU: "4", "memory": "48Gi"}}),
                     container("helper", {"requests": {"cpu": "1", "memory": "1Gi"}})],
                    init=[container("proxy", {"requests": {"cpu": "1", "memory": "2Gi"}}, restartPolicy="Always")])
    pod_level["spec"]["resources"] = same(cpu="8", memory="64Gi")
    yield "pod-level-resources", pod_level
    limits_only = pod([container("trainer", {"limits": {GPU: "2"}})])
    limits_only["spec"]["resources"] = {"limits": {"memory": "16Gi"}}
    yield "pod-level-limit-only", limits_only


def review_corpus():
    base = json.loads((DATA / "review-4gpu-64gi.json").read_text())
    write("review", "review-4gpu-64gi.json", compact(base))
    for name, obj in pod_variants():
        write("review", f"{name}.json", compact(review(obj)))
    obj = base["request"]["object"]
    write("review", "op-dry-run.json", compact(review(obj, dryRun=True)))
    write("review", "op-update-pod.json", compact(review(obj, operation="UPDATE", old=obj)))
    write("review", "op-delete.json", compact(review(obj, operation="DELETE")))
    write("review", "op-subresource.json", compact(review(obj, subResource="status")))
    write("review", "op-exempt-namespace.json", compact(review(obj, namespace="kube-system")))
    deleting = copy.deepcopy(obj)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    write("review", "op-deleting.json", compact(review(deleting)))
    generated = copy.deepcopy(obj)
    generated["metadata"] = {"generateName": "train-", "namespace": "team-a"}
    write("review", "op-generate-name.json", compact(review(generated)))

    fixtures = (sorted((DATA / "workloads").glob("*.yaml")) + sorted((DATA / "workloads" / "mixed").glob("*")) +
                sorted((DATA / "beyond").glob("*.yaml")))
    for path in fixtures:
        for index, document in enumerate(yaml.safe_load_all(path.read_text())):
            if not isinstance(document, dict) or "kind" not in document:
                continue
            stem = f"{path.stem}-{index}"
            write("review", f"{stem}.json", compact(review(document)))
            if document["kind"] == "Pod":
                continue
            # An UPDATE whose old object had other resources: its templates are decided again.
            old = json.loads(json.dumps(document).replace('"64Gi"', '"32Gi"'))
            write("review", f"{stem}-update.json", compact(review(document, operation="UPDATE", old=old)))


# --- manifests --------------------------------------------------------------

MANIFESTS = {
    "anchors.yaml": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n"
        "      containers:\n        - &c {name: a, resources: {limits: {nvidia.com/gpu: 2}}}\n        - *c\n"
    ),
    "list.yaml": (
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n"
        "  spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"4\"}}}]}\n"
    ),
    "scalars.yaml": (
        "# comment\n---\n--- a: 1\nb: \"2\"\nc: '3'\nd: ~\ne: true\nf: 1.5e3\ng: 0x1F\nh: |\n  line\n  --- not a separator\n"
        "i: >-\n  folded\n  text\nj: [1, \"2\", {k: v}]\n? complex\n: key\n---\n...\n"
    ),
    "numbers.yaml": "a: 99999999999999999999\nb: -0\nc: +12\nd: .5\ne: 1.\nf: 1e999\ng: 007\n",
    "tagged.yaml": "a: !!str 12\nb: !custom x\nc: !!binary aGVsbG8=\n&x d: *x\n",
    "object.json": "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"n\": 1.50, \"e\": 1E+2}\n",
}


def manifests_corpus():
    directory = CORPUS / "manifests"
    directory.mkdir(parents=True, exist_ok=True)
    for path in (sorted((DATA / "workloads").rglob("*")) + sorted((DATA / "osmo").glob("*.yaml")) +
                 sorted((DATA / "beyond").glob("*.yaml"))):
        if path.is_file():
            shutil.copy(path, directory / f"{path.parent.name}-{path.name}")
    for name, text in MANIFESTS.items():
        write("manifests", name, text)


# --- nodes ------------------------------------------------------------------

def node(name, allocatable, labels=None, taints=None, unschedulable=False):
    spec = {"taints": taints} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"allocatable": allocatable}}


def nodes_corpus():
    """Node documents as the watch and `check --nodes` read them, shaped for
    the fuzz target's sample pod (1 GPU, nodeSelector pool=gpu, tolerating
    sku=gpu:NoSchedule): nodes it fits and nodes it does not."""
    l4 = yaml.safe_load((ROOT / "docs" / "examples" / "l4-node.yaml").read_text())
    l4["metadata"]["labels"]["pool"] = "gpu"
    small = node("small", {"cpu": "7910m", "memory": "27Gi", "ephemeral-storage": "95Gi", "nvidia.com/gpu": "1"},
                 {"pool": "gpu", "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.memory": "23034"})
    big = node("big", {"cpu": "95690m", "memory": "1300Gi", "ephemeral-storage": "3000Gi", "nvidia.com/gpu": "8"},
               {"pool": "gpu", "node.kubernetes.io/instance-type": "a2-ultragpu-8g"},
               [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}])
    tiny = node("tiny", {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}, {"pool": "gpu"})
    cordoned = node("cordoned", {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}, {"pool": "gpu"},
                    unschedulable=True)
    tainted = node("tainted", {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}, {"pool": "gpu"},
                   [{"key": "dedicated", "value": "x", "effect": "NoExecute"}])
    other = node("other", {"cpu": "16", "memory": "64Gi", "amd.com/gpu": "1"}, {"pool": "cpu"})
    write("nodes", "l4-node.json", compact(l4))
    for name, items in (("fleet", [small, big, tiny, cordoned, tainted, other]), ("small-only", [small]),
                        ("tiny-only", [tiny]), ("none-fit", [cordoned, tainted, other])):
        write("nodes", f"list-{name}.json", compact({"apiVersion": "v1", "kind": "List", "items": items}))
    node_list = [dict(n) for n in (small, big)]
    for n in node_list:
        n.pop("kind")
        n.pop("apiVersion")
    write("nodes", "nodelist.json", compact({"apiVersion": "v1", "kind": "NodeList", "items": node_list}))


def main():
    for target in ("quantity", "policy", "review", "manifests", "nodes"):
        shutil.rmtree(CORPUS / target, ignore_errors=True)
        (CORPUS / target).mkdir(parents=True)
    quantity_corpus()
    policy_corpus()
    review_corpus()
    manifests_corpus()
    nodes_corpus()


if __name__ == "__main__":
    main()
