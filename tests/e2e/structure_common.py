"""What the structure checks of deploy/ (deploy_structure.py) and of
charts/gpu-sizer (chart_structure.py, which runs both) share: the failures
they gather, the kinds gpu-sizer reads, and reading manifests."""

import json
import subprocess

import yaml

FAILURES = []


def fail(where, message):
    FAILURES.append(f"{where}: {message}")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# The kinds gpu-sizer reads, from its kind table (`gpu-sizer kinds`), as
# (API group, resource) pairs; pods are on CREATE only. Kubernetes' own
# kinds are always registered; each family of CRDs is a boolean of the
# chart's values `workloads:` (all true by default, and deploy/ lists them
# all: a rule for a CRD that is not installed matches nothing). Set by
# main() from the binary.
BUILTIN_RESOURCES = []
FAMILIES = {}
WORKLOAD_RESOURCES = []


def load_kind_table(gpu_sizer):
    kinds = json.loads(subprocess.run([gpu_sizer, "kinds", "--output", "json"], check=True,
                                      capture_output=True, text=True).stdout)
    for row in kinds:
        if row["kind"] == "Pod" and row["group"] == "":
            continue
        pair = (row["group"], row["resource"])
        if row["family"]:
            FAMILIES.setdefault(row["family"], []).append(pair)
        else:
            BUILTIN_RESOURCES.append(pair)
    WORKLOAD_RESOURCES.extend(BUILTIN_RESOURCES + [gr for family in FAMILIES.values() for gr in family])


POD_RESOURCE = ("", "pods")
# In-place resizes of Pods (Kubernetes 1.33+): the one subresource matched,
# on UPDATE, by the validating pods webhook only.
RESIZE_RESOURCE = ("", "pods/resize")


def expected_pods(kind):
    """What the pods webhook of a Mutating- or ValidatingWebhookConfiguration matches."""
    if kind == "ValidatingWebhookConfiguration":
        return {POD_RESOURCE: {"CREATE"}, RESIZE_RESOURCE: {"UPDATE"}}
    return {POD_RESOURCE: {"CREATE"}}
NAMESPACE = "gpu-sizer"
MUST_EXCLUDE = {"kube-system", NAMESPACE}
CLUSTER_SCOPED = {"Namespace", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                  "ClusterRole", "ClusterRoleBinding", "ClusterIssuer"}


def get(obj, *path, default=None):
    for key in path:
        if isinstance(obj, dict) and key in obj:
            obj = obj[key]
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return default
    return obj


def load_docs(where, text):
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        fail(where, f"does not parse as YAML: {e}".replace("\n", " "))
        return []
    out = []
    for i, doc in enumerate(docs, 1):
        w = f"{where} (document {i})"
        if not isinstance(doc, dict):
            fail(w, "is not a mapping")
            continue
        for key in ("apiVersion", "kind", "metadata"):
            if key not in doc:
                fail(w, f"has no {key}")
        if isinstance(doc.get("metadata"), dict) and not doc["metadata"].get("name"):
            fail(w, "has no metadata.name")
        out.append(doc)
    return out
