#!/usr/bin/env python3
"""Writes the benchmark workload set: AdmissionReview v1 requests shaped like
the ones a kube-apiserver sends (managedFields, the kubectl last-applied
annotation, env, volumes, sidecars), for a Pod, an Argo Workflow and a
PyTorchJob at about 3 KB, 12 KB and 60 KB, plus allowed and denied pods.

Deterministic: running it again rewrites the same bytes. The files and
index.json (what each file is, which endpoint gets it and what answer it
must get) are committed; bench/run.py and the micro benchmarks read them.

usage: bench/workloads/generate.py [OUT_DIR]   (default: this directory)
"""
import copy
import json
import os
import sys

TARGET_BYTES = {"3k": 3 * 1024, "12k": 12 * 1024, "60k": 60 * 1024}


def env_vars(count, prefix):
    names = ["NCCL_DEBUG", "NCCL_IB_DISABLE", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "HF_HOME",
             "WANDB_PROJECT", "MASTER_PORT", "TORCH_DISTRIBUTED_DEBUG", "CUDA_DEVICE_MAX_CONNECTIONS"]
    out = []
    for i in range(count):
        name = names[i] if i < len(names) else f"{prefix}_SETTING_{i:03d}"
        if i % 7 == 3:
            out.append({"name": name, "valueFrom": {"secretKeyRef": {"name": "train-secrets", "key": name.lower()}}})
        elif i % 7 == 5:
            out.append({"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}})
        else:
            out.append({"name": name, "value": f"value-{i}-s3://datasets/imagenet/shard-{i:05d}"})
    return out


def container(name, image, gpus, memory, cpu, env_count, mounts, storage=None):
    resources = {"limits": {"memory": memory, "cpu": cpu}, "requests": {"memory": memory, "cpu": cpu}}
    if storage:
        resources["requests"]["ephemeral-storage"] = storage
    if gpus:
        resources["limits"]["nvidia.com/gpu"] = str(gpus)
        resources["requests"]["nvidia.com/gpu"] = str(gpus)
    return {
        "name": name,
        "image": image,
        "command": ["torchrun"] if gpus else ["/bin/sh", "-c"],
        "args": ["--nproc_per_node=%d" % max(gpus, 1), "train.py", "--config", "/etc/train/config.yaml"]
        if gpus else ["exec /usr/local/bin/agent --listen :9090"],
        "env": env_vars(env_count, name.upper().replace("-", "_")),
        "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "resources": resources,
        "volumeMounts": mounts,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }


def pod_spec(size_steps, gpus, memory, cpu, lean=False, storage=None):
    mounts = [{"name": "data", "mountPath": "/data", "readOnly": True},
              {"name": "config", "mountPath": "/etc/train"},
              {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
               "readOnly": True}]
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "imagenet"}},
               {"name": "config", "configMap": {"name": "train-config", "defaultMode": 420}},
               {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                   {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                   {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                   {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                       "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}]
    if lean:
        # What a controller creates: one container, the service-account volume.
        mounts, volumes = mounts[2:], volumes[2:]
    # A training pod's /dev/shm (gpu-sizer's /dev/shm rule): 32Gi of memory.
    volumes = volumes + [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}]
    trainer_mounts = mounts + [{"name": "dshm", "mountPath": "/dev/shm"}]
    containers = [container("trainer", "nvcr.io/nvidia/pytorch:24.05-py3", gpus, memory, cpu,
                            size_steps if lean else 4 + size_steps, trainer_mounts, storage)]
    init = []
    if size_steps > 0 and not lean:
        containers.append(container("log-shipper", "fluent/fluent-bit:3.0", 0, "256Mi", "200m", size_steps // 2, mounts[:1]))
        init.append(container("fetch-weights", "amazon/aws-cli:2.15", 0, "1Gi", "1", size_steps // 3, mounts[:1]))
    spec = {
        "containers": containers,
        "volumes": volumes,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "trainer",
        "serviceAccount": "trainer",
        "schedulerName": "default-scheduler",
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300}],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if init:
        spec["initContainers"] = init
    return spec


def managed_fields(manager, operation):
    # The shape the API server records; fieldsV1 lists every field set.
    return [{"manager": manager, "operation": operation, "apiVersion": "v1", "time": "2026-11-01T10:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {
                 "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                                "f:labels": {".": {}, "f:app": {}, "f:team": {}}},
                 "f:spec": {"f:containers": {'k:{"name":"trainer"}': {
                     ".": {}, "f:args": {}, "f:command": {}, "f:env": {".": {}}, "f:image": {},
                     "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {".": {}, "f:limits": {".": {}},
                                                                              "f:requests": {".": {}}},
                     "f:volumeMounts": {".": {}}}},
                     "f:restartPolicy": {}, "f:volumes": {".": {}}}}}]


def metadata(name, namespace, labels, annotations, manager, last_applied):
    meta = {"name": name, "namespace": namespace, "uid": "4b1c7f0e-9d2a-4c52-8f7e-1f2a3b4c5d6e",
            "creationTimestamp": "2026-11-01T10:00:00Z", "labels": labels,
            "annotations": dict(annotations), "managedFields": managed_fields(manager, "Update")}
    if last_applied is not None:
        meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = \
            json.dumps(last_applied, separators=(",", ":")) + "\n"
    return meta


def pod(size_steps, gpus, memory, cpu, annotations, lean=False, storage=None):
    labels = {"app": "resnet-train", "team": "vision", "osmo.group_name": "finetune-job"}
    spec = pod_spec(size_steps, gpus, memory, cpu, lean, storage)
    applied = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-x", "namespace": "team-a",
                                                               "labels": labels}, "spec": spec}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": metadata("train-x", "team-a", labels, annotations, "kubectl-client-side-apply", None if lean else applied),
            "spec": spec, "status": {"phase": "Pending", "qosClass": "Guaranteed"}}


def workflow(size_steps, gpus, memory, cpu, lean=False):
    spec = pod_spec(size_steps, gpus, memory, cpu, lean)
    train = {"name": "finetune-job", "container": spec["containers"][0],
             "nodeSelector": spec["nodeSelector"], "tolerations": spec["tolerations"], "volumes": spec["volumes"]}
    prep = {"name": "prepare", "container": container("prepare", "python:3.11", 0, "4Gi", "2",
                                                      size_steps // 2 if lean else 4 + size_steps // 2, [])}
    steps = {"name": "main", "dag": {"tasks": [{"name": "prepare", "template": "prepare"},
                                               {"name": "train", "template": "finetune-job",
                                                "dependencies": ["prepare"]}]}}
    if "initContainers" in spec:
        train["initContainers"] = spec["initContainers"]
        train["sidecars"] = spec["containers"][1:]
    body = {"entrypoint": "main", "serviceAccountName": "argo-workflow", "templates": [steps, prep, train],
            "arguments": {"parameters": [{"name": "epochs", "value": "90"}]}}
    labels = {"workflows.argoproj.io/creator": "system-serviceaccount-argo"}
    applied = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
               "metadata": {"name": "resnet-train", "namespace": "team-a"}, "spec": body}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "metadata": metadata("resnet-train", "team-a", labels, {}, "argo", None if lean else applied), "spec": body}


def pytorchjob(size_steps, gpus, memory, cpu, lean=False):
    def replica(count):
        spec = pod_spec(size_steps, gpus, memory, cpu, lean)
        spec["restartPolicy"] = "OnFailure"
        spec["containers"][0]["name"] = "pytorch"
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {"metadata": {
            "labels": {"app": "llm-finetune"}, "annotations": {"sidecar.istio.io/inject": "false"}}, "spec": spec}}
    body = {"runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3},
            "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(3)} if not lean else {"Worker": replica(4)}}
    applied = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
               "metadata": {"name": "llm-finetune", "namespace": "team-a"}, "spec": body}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": metadata("llm-finetune", "team-a", {"team": "nlp"}, {}, "kubectl-client-side-apply", None if lean else applied),
            "spec": body}


def review(obj, group, version, kind, resource):
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": obj["metadata"]["name"], "namespace": "team-a", "operation": "CREATE",
        "userInfo": {"username": "alice@example.com", "uid": "b2c4d6e8",
                     "groups": ["system:authenticated", "oidc:ml-team"],
                     "extra": {"scopes.authorization.k8s.io": ["openid", "email"]}},
        "object": obj, "oldObject": None, "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                    "fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"}}}


KINDS = {
    "pod": (lambda steps, **kw: pod(steps, annotations={}, **kw), ("", "v1", "Pod", "pods")),
    "workflow": (workflow, ("argoproj.io", "v1alpha1", "Workflow", "workflows")),
    "pytorchjob": (pytorchjob, ("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs")),
}


def encode(value):
    # The API server sends compact JSON.
    return json.dumps(value, separators=(",", ":")).encode()


def sized(make, target):
    """The smallest number of env/sidecar steps whose review reaches target bytes."""
    steps = 0
    while True:
        body = make(steps)
        if len(body) >= target or steps > 2000:
            return body
        steps += 1


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    index = []

    def write(name, body, endpoint, kind, decision, size):
        with open(os.path.join(out, name + ".json"), "wb") as f:
            f.write(body)
        index.append({"file": name + ".json", "endpoint": endpoint, "kind": kind, "size": size,
                      "bytes": len(body), "decision": decision})

    # Mutated: 4 GPUs with the 1-GPU memory (64Gi) and 8 CPU, as the seed's failing jobs.
    for kind, (make, gvk) in KINDS.items():
        for size, target in TARGET_BYTES.items():
            body = sized(lambda s: encode(review(make(s, gpus=4, memory="64Gi", cpu="8", lean=size == "3k"), *gvk)),
                         target)
            write(f"{kind}-{size}-mutated", body, "mutate", kind, "mutated", size)
    # Allowed: a pod already sized by the table (CPU, memory, storage), and a pod without GPUs.
    for size, target in TARGET_BYTES.items():
        body = sized(lambda s: encode(review(pod(s, 4, "192Gi", "32", {}, size == "3k", "300Gi"), *KINDS["pod"][1])), target)
        write(f"pod-{size}-allowed", body, "mutate", "pod", "allowed", size)
    body = sized(lambda s: encode(review(pod(s, 0, "2Gi", "1", annotations={}), *KINDS["pod"][1])), TARGET_BYTES["12k"])
    write("pod-12k-nogpu", body, "mutate", "pod", "allowed", "12k")
    # Denied: the opted-out undersized pod on /validate (the mutating pass left it alone).
    for size, target in TARGET_BYTES.items():
        body = sized(lambda s: encode(review(pod(s, 4, "64Gi", "8", {"gpu-sizer.io/mutate": "false"}, size == "3k"),
                                             *KINDS["pod"][1])), target)
        write(f"pod-{size}-denied", body, "validate", "pod", "denied", size)

    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    for entry in index:
        print(f"{entry['file']:28} {entry['bytes']:6} bytes  {entry['endpoint']:8} {entry['decision']}")


if __name__ == "__main__":
    main()
