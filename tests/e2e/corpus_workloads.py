"""How the shared corpus's GPU workloads become objects and pods for the
scheduler end-to-end test (scheduler_e2e.py) on a v1.20 control plane.

Pods are created as written; the built-in controllers make the pods of
Deployments, StatefulSets, ReplicaSets, DaemonSets and Jobs, and a
CronJob's Job is made as `kubectl create job --from=cronjob/` makes it. No
operator runs for custom kinds (PyTorchJob, RayCluster, LeaderWorkerSet,
...): the object is created through the webhook (an
open-schema CRD), and one pod is made from each pod template and pod spec
the stored object holds where `gpu-sizer kinds` says they are, owned by the
object as its operator's pods are. Kinds whose operator builds the pod from
fields of its own (a KServe model block, NIMService, an Argo template) are
counted and left out. So are what this v1.20 server cannot hold (DRA
claims, pod-level resources); volumes that need a provisioner (PVCs,
generic ephemeral volumes) become emptyDir, since no storage runs here and
the scheduler would hold the pod back on them either way.
"""

import copy
import json
import sys
from pathlib import Path

import yaml
from control_plane import for_v1_20, has_pod_level_resources, run

# What `make corpus-check` counts as asking for GPUs, so both runs look at the same workloads.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "corpus"))
from corpus_check import documents_ask_for_gpus  # noqa: E402

# Where the built-in kinds' controllers live, by API version; CronJob is
# batch/v1beta1 in v1.20 (batch/v1 from 1.21, same fields).
BUILT_IN = {("v1", "Pod"): "pods", ("apps/v1", "Deployment"): "deployments", ("apps/v1", "StatefulSet"): "statefulsets",
            ("apps/v1", "ReplicaSet"): "replicasets", ("apps/v1", "DaemonSet"): "daemonsets",
            ("batch/v1", "Job"): "jobs", ("batch/v1", "CronJob"): "cronjobs",
            ("batch/v1beta1", "CronJob"): "cronjobs"}


def kind_table(gpu_sizer):
    """{(group, kind): [(pattern, shape)]}: where `gpu-sizer kinds` (the
    binary GPU_SIZER) says each kind holds its pods."""
    rows = json.loads(run([gpu_sizer, "kinds", "--output", "json"]).stdout)
    return {(row["group"], row["kind"]): [(loc["pattern"], loc["shape"]) for loc in row["locations"]]
            for row in rows}


def at(obj, pattern):
    """The values at a kind-table PATTERN of OBJ ("spec.tasks[].template",
    "spec.pytorchReplicaSpecs.*.template", "" for OBJ itself)."""
    values = [obj]
    for segment in (pattern.split(".") if pattern else []):
        each = segment.endswith("[]")
        key = segment[:-2] if each else segment
        found = []
        for value in values:
            if not isinstance(value, dict):
                continue
            if key == "*":
                found.extend(value.values())
                continue
            child = value.get(key)
            if each and isinstance(child, list):
                found.extend(child)
            elif not each and child is not None:
                found.append(child)
        values = found
    return [value for value in values if isinstance(value, dict)]


def uses_dra(obj):
    """A pod spec with DRA claims (resourceClaims), which v1.20 lacks."""
    if isinstance(obj, dict):
        return "resourceClaims" in obj or any(uses_dra(value) for value in obj.values())
    if isinstance(obj, list):
        return any(uses_dra(item) for item in obj)
    return False


def without_provisioned_volumes(obj):
    """OBJ with every PVC and generic ephemeral volume made an emptyDir."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "volumes" and isinstance(value, list):
                for volume in value:
                    if isinstance(volume, dict) and ("persistentVolumeClaim" in volume or "ephemeral" in volume):
                        volume.pop("persistentVolumeClaim", None)
                        volume.pop("ephemeral", None)
                        volume["emptyDir"] = {}
            without_provisioned_volumes(value)
    elif isinstance(obj, list):
        for item in obj:
            without_provisioned_volumes(item)
    return obj


def named_classes(obj, key):
    """Every value of KEY (priorityClassName, runtimeClassName) in OBJ."""
    if isinstance(obj, dict):
        found = {obj[key]} if isinstance(obj.get(key), str) else set()
        return found.union(*(named_classes(value, key) for value in obj.values()))
    if isinstance(obj, list):
        return set().union(*(named_classes(item, key) for item in obj))
    return set()


class Workload:
    def __init__(self, where, doc, locations):
        self.where = where
        self.doc = doc
        self.locations = locations
        self.built_in = (doc["apiVersion"], doc["kind"]) in BUILT_IN

    def prepared(self, namespace):
        obj = without_provisioned_volumes(for_v1_20(copy.deepcopy(self.doc)))
        metadata = obj["metadata"]
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
            metadata.pop(key, None)
        if not self.doc["kind"].startswith("Cluster"):
            metadata["namespace"] = namespace
        if obj["kind"] == "CronJob":
            obj["apiVersion"] = "batch/v1beta1"
        return obj


def corpus_workloads(corpus, table):
    """The GPU workloads of the directory CORPUS a v1.20 control plane can
    run, and {reason: [where]} for those it cannot; TABLE is kind_table's."""
    workloads, left_out = [], {}
    for path in sorted(p for p in corpus.rglob("*") if p.suffix in (".yaml", ".yml", ".json")):
        try:
            docs = list(yaml.safe_load_all(path.read_text(errors="replace")))
        except yaml.YAMLError:
            continue
        for index, doc in enumerate(docs, 1):
            if not (isinstance(doc, dict) and isinstance(doc.get("apiVersion"), str) and isinstance(
                    doc.get("metadata"), dict) and doc["metadata"].get("name") and documents_ask_for_gpus([doc])):
                continue
            where = f"{path.relative_to(corpus)}#{index}"
            group = doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else ""
            locations = table.get((group, doc.get("kind")))
            reason = None
            if locations is None:
                reason = "not a kind gpu-sizer sizes"
            elif uses_dra(doc):
                reason = "DRA claims (resource.k8s.io is not in v1.20)"
            elif has_pod_level_resources(doc):
                reason = "pod-level resources (not in v1.20)"
            elif (doc["apiVersion"], doc["kind"]) not in BUILT_IN and not pods_from_templates(doc, locations, ""):
                reason = "its operator builds the pod from fields of its own"
            if reason:
                left_out.setdefault(reason, []).append(where)
            else:
                workloads.append(Workload(where, doc, locations))
    return workloads, left_out


def pods_from_templates(stored, locations, namespace):
    """The pods an operator would make from STORED: one per pod template
    and pod spec, owned by it."""
    owner = {"apiVersion": stored["apiVersion"], "kind": stored["kind"], "name": stored["metadata"]["name"],
             "uid": stored["metadata"].get("uid", ""), "controller": True}
    pods = []
    for pattern, shape in locations:
        for found in at(stored, pattern):
            template = found if shape == "template" else {"spec": found}
            spec = template.get("spec")
            if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
                continue
            metadata = template.get("metadata") or {}
            spec = operator_filled(copy.deepcopy(spec))
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"pod-{len(pods)}", "namespace": namespace, "labels": metadata.get("labels") or {},
                "annotations": metadata.get("annotations") or {}, "ownerReferences": [owner]},
                "spec": spec})
    return pods


def operator_filled(spec):
    """SPEC with what operators add to their templates before making pods
    (KServe fills a container's image from its runtime, Kubeflow Trainer
    adds the volumes its initializers mount): an image where none is
    written, an emptyDir for each volume mounted but not declared."""
    declared = {volume.get("name") for volume in spec.get("volumes") or [] if isinstance(volume, dict)}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if not isinstance(container, dict):
            continue
        container.setdefault("image", "registry.invalid/filled-by-the-operator")
        for mount in container.get("volumeMounts") or []:
            if isinstance(mount, dict) and mount.get("name") and mount["name"] not in declared:
                declared.add(mount["name"])
                spec.setdefault("volumes", []).append({"name": mount["name"], "emptyDir": {}})
    return spec


def fleet_probes(fleet):
    """A modest 1-GPU pod pinned to each GPU instance type of FLEET, as the
    issue's examples pin theirs: it binds unsized, and the table alone
    (16 CPU, 64Gi, 300Gi) would not fit the smaller machines, so these make
    the paired runs fail if caps stop working."""
    types = sorted({node["metadata"]["labels"]["node.kubernetes.io/instance-type"] for node in fleet
                    if int(node.get("status", {}).get("allocatable", {}).get("nvidia.com/gpu", "0")) > 0})
    probes = []
    for instance_type in types:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
               "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": instance_type},
                        "containers": [{"name": "trainer", "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                                        "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "2",
                                                                 "memory": "8Gi"}}}]}}
        probes.append(Workload(f"(fleet probe) {instance_type}", pod, [("", "template")]))
    return probes
