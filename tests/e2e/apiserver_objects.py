"""The objects the API server e2e (apiserver_e2e.py) sends, and how it reads
the resources in what comes back: pure functions, no cluster."""

NAMESPACE = "ml-team"  # the namespace of every fixture in tests/data/workloads


def container(pod_spec, name):
    return next(c for c in pod_spec["containers"] + pod_spec.get("initContainers", []) if c["name"] == name)


SIZED = ("cpu", "memory", "ephemeral-storage")


def sized_resources(obj, where=""):
    """{path of each container: its cpu/memory/ephemeral-storage requests and
    limits} anywhere in OBJ (pod specs' containers and initContainers, Argo
    templates' container and script, and a container whose pod an operator
    builds: KServe's model block, NIMService's spec, TrainJob's trainer with
    its resourcesPerNode); paths use container names so the API server's
    defaulting of other fields does not matter."""
    def sized(container, key="resources"):
        resources = container.get(key, {})
        return {kind: {r: v for r, v in resources.get(kind, {}).items() if r in SIZED}
                for kind in ("requests", "limits")}

    found = {}
    if isinstance(obj, dict):
        for key in ("resources", "resourcesPerNode"):
            if isinstance(obj.get(key), dict) and where:
                found[f"{where}.{key}"] = sized(obj, key)
        for key, value in obj.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for item in value:
                    if isinstance(item, dict) and "name" in item:
                        found[f"{where}.{key}[{item['name']}]"] = sized(item)
            elif key in ("container", "script") and isinstance(value, dict):  # Argo templates
                found[f"{where}.{key}"] = sized(value)
            else:
                found.update(sized_resources(value, f"{where}.{key}"))
    elif isinstance(obj, list):
        for index, item in enumerate(obj):
            found.update(sized_resources(item, f"{where}[{index}]"))
    return found


def node(name, instance_type, gpus, cpu, memory, storage, product="NVIDIA-L4"):
    """A GKE-like GPU node: labels as GKE and GPU Feature Discovery set them,
    the GPU taint GKE puts on GPU nodes."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": instance_type,
                "cloud.google.com/gke-accelerator": "nvidia-l4", "nvidia.com/gpu.product": product}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "ephemeral-storage": storage,
                                       "nvidia.com/gpu": str(gpus), "pods": "110"}}}


def server_pod(name):
    """The pod of a 1-GPU inference server Deployment: owned by its
    ReplicaSet, asking for what most serving examples ask."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "vllm-abc",
                                              "uid": "5d8f1c2e-0000-4000-8000-000000000001", "controller": True}]},
            "spec": {"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai",
                                     "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "10Gi"}}}]}}
