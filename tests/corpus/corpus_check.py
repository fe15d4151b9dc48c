#!/usr/bin/env python3
"""make corpus-check: `gpu-sizer check --nodes` over a corpus of real GPU manifests.

Usage: corpus_check.py GPU_SIZER CORPUS_DIR NODES_FILE [check flags...]

The corpus (by default ../shared/corpus beside the checkout) is not part of
the repository. Each file is checked on its own with `--output json --nodes
NODES_FILE` and a policy that patches long-lived templates too
(longLived.patchTemplates: true), so a Deployment's template is sized as its
Pods will be when created. One line per file, then a tally. Fails when:

  - the checker crashes on a file (an exit code other than 0 admitted,
    1 changed or denied, 2 an error it names);
  - a pod that some node holds as written is held by no node as sized
    (nodesBefore > 0, nodesAfter == 0): a mutation made it unschedulable;
  - a serving kind (or a pod of one) is sized with the train profile;
  - an object whose pod specs the API server accepts as written is refused
    once fixed (--fix): a container request above its limit, a pod-level
    spec.resources below its containers' aggregate request or below a
    container's limit (api_resource_errors);
  - a file asks for GPUs (a GPU resource anywhere in it, found here by a
    YAML walk of its own) and gpu-sizer neither sized a GPU pod of it nor
    said which GPU asks it could not size: nothing GPU-bearing passes
    silently;
  - an OSMO workflow spec is not checked with only its sizing value set
    (--set train_gpu=4 where it has that variable; exit 2 fails), or one
    with train_gpu lacks the train_memory=192Gi fix line at 4 GPUs.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import yaml



def serving_kinds(binary):
    """The kinds that run inference servers: the kind table's serving rows
    (`gpu-sizer kinds`), which the embedded policy's profile rules name."""
    rows = json.loads(subprocess.run([binary, "kinds", "--output", "json"], check=True, capture_output=True,
                                     text=True).stdout)
    return {row["kind"] for row in rows if row["role"] == "serving"}


# The embedded policy's gpuResources (src/sizing/default_policy.yaml).
GPU_RESOURCES = {"nvidia.com/gpu", "amd.com/gpu"}
# Accelerator resources by this check's own list, not the policy's: every
# vendor's device plugin domain, GPU sharing schedulers, DRA extended
# resources, and any resource named for GPUs.
ACCELERATOR_PREFIXES = ("nvidia.com/", "amd.com/", "gpu.intel.com/", "habana.ai/", "aws.amazon.com/neuron",
                        "google.com/tpu", "huawei.com/ascend", "qualcomm.com/qaic", "cambricon.com/", "hygon.com/",
                        "metax-tech.com/", "enflame.com/", "kunlunxin.com/", "volcano.sh/vgpu", "volcano.sh/gpu",
                        "aliyun.com/gpu", "deviceclass.resource.kubernetes.io/")
# Pod annotations that ask for a GPU fraction (KAI scheduler).
FRACTION_ANNOTATIONS = {"gpu-fraction", "gpu-memory"}


def is_accelerator(resource):
    name = str(resource).lower()
    return "/" in name and (name.startswith(ACCELERATOR_PREFIXES) or "gpu" in name.split("/", 1)[1])
# Sized as their Pods will be: the policy's longLived templates are patched
# here; and the DRA example driver's class (dra-example-driver) is a GPU.
POLICY = ("longLived:\n  patchTemplates: true\n"
          "accelerators:\n  - {deviceClass: gpu.example.com, form: device, sizing: gpus, vendor: example}\n")


def manifest_files(corpus):
    return sorted(p for p in Path(corpus).rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json"))


def check(binary, path, nodes, policy, flags):
    """Exit code, the JSON report and the fixed manifests (--fix writes them
    to stdout and the report to stderr)."""
    # A --policy of the caller's replaces the one that patches templates.
    own_policy = [] if "--policy" in flags else ["--policy", policy]
    args = [binary, "check", "--fix", "--output", "json", "--nodes", nodes, *own_policy, *flags, str(path)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stderr, result.stdout


# Kubernetes quantities (k8s.io/apimachinery/pkg/api/resource): a number,
# then an exponent, a binary suffix or a decimal one.
QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE]?)")
SCALE = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "n": Fraction(1, 10**9),
         "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
         "P": 10**15, "E": 10**18}


def quantity(value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    match = QUANTITY.fullmatch(str(value).strip())
    if not match:
        return None
    number = Fraction(match.group(1).rstrip(".") or "0")
    suffix = match.group(2)
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * Fraction(10) ** int(suffix[1:])
    return number * SCALE[suffix]


def resource_map(item, key):
    resources = item.get("resources") if isinstance(item, dict) else None
    value = resources.get(key) if isinstance(resources, dict) else None
    return value if isinstance(value, dict) else {}


def api_resource_errors(document):
    """What the API server refuses in a document's pod specs' resources (the
    rules of tests/support/api_validation.h, from kubernetes/kubernetes
    pkg/apis/core/validation and k8s.io/component-helpers/resource)."""
    errors = []

    def request(container, resource):
        for key in ("requests", "limits"):
            value = quantity(resource_map(container, key).get(resource))
            if value is not None:
                return value
        return 0

    def check_requirements(item, where):
        requests, limits = resource_map(item, "requests"), resource_map(item, "limits")
        for resource, value in requests.items():
            asked, limit = quantity(value), quantity(limits.get(resource))
            if asked is None or limit is None:
                continue
            extended = "/" in resource and not resource.startswith("kubernetes.io/")
            if (asked != limit) if extended else (asked > limit):
                errors.append(f"{where}: {resource} request {value} against limit {limits[resource]}")

    def check_pod_spec(spec, where):
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
        inits = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
        for index, container in enumerate(containers + inits):
            check_requirements(container, f"{where} container {container.get('name', index)}")
        if not isinstance(spec.get("resources"), dict):
            return
        check_requirements(spec, f"{where} spec.resources")
        for resource, value in resource_map(spec, "requests").items():
            pod = quantity(value)
            sidecars, largest_init = 0, 0
            for init in inits:
                if init.get("restartPolicy") == "Always":
                    sidecars += request(init, resource)
                else:
                    largest_init = max(largest_init, sidecars + request(init, resource))
            aggregate = max(sum(request(c, resource) for c in containers) + sidecars, largest_init)
            if pod is not None and pod < aggregate:
                errors.append(f"{where} spec.resources: {resource} request {value} below the containers' {aggregate}")
        for resource, value in resource_map(spec, "limits").items():
            pod = quantity(value)
            for container in containers:
                limit = quantity(resource_map(container, "limits").get(resource))
                if pod is not None and limit is not None and limit > pod:
                    errors.append(f"{where} spec.resources: {resource} limit {value} below container "
                                  f"{container.get('name')}'s {resource_map(container, 'limits')[resource]}")

    def walk(node, where):
        if isinstance(node, dict):
            if isinstance(node.get("containers"), list):
                check_pod_spec(node, where)
            for key, value in node.items():
                walk(value, f"{where}.{key}" if where else str(key))
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{where}[{index}]")

    walk(document, "")
    return errors


def refused_once_fixed(path, fixed):
    """The API server's refusals of the fixed documents that it would not
    have made of the documents as written."""
    try:
        before = list(yaml.safe_load_all(Path(path).read_text(errors="replace")))
        after = list(yaml.safe_load_all(fixed))
    except yaml.YAMLError:
        return []
    known = {error for document in before for error in api_resource_errors(document)}
    return [error for document in after for error in api_resource_errors(document) if error not in known]


# A field named for a count of GPUs (gpu, gpus, numGpus, gpuCount,
# numGpusPerNode, num-gpus, requestGPU...), by this check's own pattern.
GPU_COUNT_FIELD = re.compile(r"(num|n|total|request(ed)?)?gpus?(count|num|per(node|worker|task|replica|pod))?")
# Where such a field is not an ask: Ray's logical GPUs (the pod's are in its
# template), and descriptions of machines (a Dynamo deployment request's
# hardware, a GKE ComputeClass's priorities).
NOT_ASKS = {"rayStartParams", "hardware", "priorities"}


def positive_count(value):
    if isinstance(value, dict):
        return any(positive_count(value.get(key)) for key in ("value", "quantity", "count"))
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    text = str(value).rsplit(":", 1)[-1].strip()
    try:
        return float(text) > 0
    except ValueError:
        return False


def asks_for_gpus(path):
    """An accelerator resource (is_accelerator) with a count other than 0 in
    a ResourceRequirements (under resources*.limits or .requests) anywhere
    in the file's documents, a GPU fraction annotation, a pod spec whose
    containers use DRA claims, a field named for GPUs whose value is a
    GPU resource (gpuType: nvidia.com/gpu), a field named for a count of
    GPUs holding one (GPU_COUNT_FIELD), a resource profile with a count
    ("nvidia-gpu-h100:8"), or a KAITO Workspace's instance type. OSMO specs
    (Jinja templates) are read as text: a `gpu:` line with a value other
    than 0 in a resources block."""
    text = Path(path).read_text(errors="replace")
    if is_osmo(text):
        return re.search(r"^\s*gpu:\s*(?!0\s*$)\S", text, re.M) is not None
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return False
    return documents_ask_for_gpus(documents)


def documents_ask_for_gpus(documents):
    """asks_for_gpus on parsed DOCUMENTS (of one file: a claim's device
    classes are looked up among them)."""
    classes = device_classes(documents)

    def walk(node, parents=()):
        if isinstance(node, dict):
            for key, value in node.items():
                requirements = (len(parents) >= 2 and parents[-1] in ("limits", "requests")
                                and str(parents[-2]).startswith("resources"))
                if is_accelerator(key) and requirements and str(value).strip() not in ("0", "None"):
                    return True
                if key in FRACTION_ANNOTATIONS and parents[-1:] == ("annotations",):
                    return True
                if key == "containers" and uses_gpu_claims(node, classes):
                    return True
                if isinstance(value, str) and value in GPU_RESOURCES and "gpu" in str(key).lower():
                    return True
                name = re.sub(r"[-_]", "", str(key)).lower()
                if (GPU_COUNT_FIELD.fullmatch(name) and positive_count(value)
                        and not NOT_ASKS.intersection(map(str, parents))):
                    return True
                if key == "resourceProfile" and ":" in str(value) and positive_count(value):
                    return True
                if walk(value, parents + (key,)):
                    return True
        elif isinstance(node, list):
            return any(walk(item, parents + ("[]",)) for item in node)
        return False

    def kaito_workspace(document):
        return (isinstance(document, dict) and str(document.get("apiVersion", "")).startswith("kaito.sh/")
                and document.get("kind") == "Workspace" and bool((document.get("resource") or {}).get("instanceType")))

    return any(walk(document) or kaito_workspace(document) for document in documents)


def device_classes(documents):
    """The device classes each ResourceClaimTemplate and ResourceClaim of the
    documents asks for, by (kind, name). A request with admin access
    (monitoring devices others use) allocates none."""
    found = {}
    for document in documents:
        if not isinstance(document, dict) or not str(document.get("apiVersion", "")).startswith("resource.k8s.io/"):
            continue
        kind = document.get("kind")
        spec = document.get("spec") or {}
        if kind == "ResourceClaimTemplate":
            spec = spec.get("spec") or {}
        elif kind != "ResourceClaim":
            continue
        names = set()
        for request in ((spec.get("devices") or {}).get("requests") or []):
            if request.get("adminAccess") or (request.get("exactly") or {}).get("adminAccess"):
                continue
            for alternative in [request, request.get("exactly") or {}, *(request.get("firstAvailable") or [])]:
                if isinstance(alternative, dict) and alternative.get("deviceClassName"):
                    names.add(str(alternative["deviceClassName"]))
        found[(kind, (document.get("metadata") or {}).get("name"))] = names
    return found


def uses_gpu_claims(spec, classes):
    """A pod spec whose containers use DRA claims (resources.claims) of its
    spec.resourceClaims that may be GPUs: of a template or claim whose device
    classes say gpu, or one the file does not hold."""
    containers = [c for key in ("containers", "initContainers") for c in spec.get(key) or [] if isinstance(c, dict)]
    sources = {}
    for claim in spec.get("resourceClaims") or []:
        if not isinstance(claim, dict):
            continue
        if claim.get("resourceClaimTemplateName"):
            sources[claim.get("name")] = ("ResourceClaimTemplate", claim["resourceClaimTemplateName"])
        elif claim.get("resourceClaimName"):
            sources[claim.get("name")] = ("ResourceClaim", claim["resourceClaimName"])
    for container in containers:
        resources = container.get("resources")
        for use in (resources.get("claims") or []) if isinstance(resources, dict) else []:
            source = sources.get(use.get("name") if isinstance(use, dict) else None)
            if source is None or source not in classes or any("gpu" in c.lower() for c in classes[source]):
                return True
    return False


def is_osmo(text):
    # OSMO workflow specs start with a `workflow:` mapping (and Jinja).
    return re.search(r"^workflow:", text, re.M) is not None


def pods_of(report):
    for file in report.get("files", []):
        for obj in file.get("objects", []):
            for pod in obj.get("pods", []):
                yield obj, pod


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, corpus, nodes, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if not Path(corpus).is_dir() or not Path(nodes).is_file():
        print(f"corpus-check: skipped: no corpus at {corpus} or no node file {nodes} (set CORPUS=DIR NODES=FILE)")
        return 0
    serving = serving_kinds(binary)
    tally = {0: 0, 1: 0, 2: 0}
    failures = []
    gpu_pods = 0
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as policy:
        policy.write(POLICY)
    try:
        for path in manifest_files(corpus):
            name = os.path.relpath(path, corpus)
            text = path.read_text(errors="replace")
            osmo = is_osmo(text)
            # An OSMO spec is checked with only its sizing value set.
            sizing_value = ["--set", "train_gpu=4"] if osmo and "train_gpu" in text else []
            code, out, fixed = check(binary, path, nodes, policy.name, flags + sizing_value)
            if code not in tally:
                failures.append(f"{name}: CRASHED (exit {code}): {out.strip()[:300]}")
                print(f"{name}  CRASHED (exit {code})")
                continue
            tally[code] += 1
            report = json.loads(out) if out.strip().startswith("{") else {}
            if not osmo and code == 1:
                for refusal in refused_once_fixed(path, fixed):
                    failures.append(f"{name}: the API server would refuse the fixed object: {refusal}")
            said = []  # what gpu-sizer said it could not decide
            for file in report.get("files", []):
                if file.get("error"):
                    said.append(file["error"])
                for obj in file.get("objects", []):
                    said.extend(obj.get("unsized", []))
                    said.extend(w for w in obj.get("warnings", []) if "asks for GPUs" in w or " not sized" in w or
                                " is not sized" in w)
            if code == 2:
                print(f"{name}  error: {(said[0] if said else out.strip())[:300]}")
            notes = []
            sized_gpu_pods = 0
            for obj, pod in pods_of(report):
                if pod.get("gpus", 0) <= 0:
                    continue
                gpu_pods += 1
                sized_gpu_pods += 1
                before, after = pod.get("nodesBefore"), pod.get("nodesAfter")
                if before and after == 0:
                    failures.append(f"{name}: {pod['pod']}: fits {before} node shape(s) as written, none as sized")
                    notes.append("MADE UNSCHEDULABLE")
                if obj.get("kind") in serving and pod.get("profile") == "train":
                    failures.append(f"{name}: {pod['pod']}: a {obj['kind']} sized with the train profile")
                    notes.append("SERVER SIZED AS TRAINING")
                notes.append(f"{pod['pod']}: {pod.get('profile') or '-'}, nodes {before}->{after}")
            osmo_report = next((f for f in report.get("files", []) if f.get("format") == "osmo-workflow"), None)
            if osmo:
                if code == 2:
                    failures.append(f"{name}: an OSMO spec not checked with only {sizing_value or 'no values'} set")
                elif sizing_value and "train_memory=192Gi" not in (osmo_report or {}).get("set", ""):
                    failures.append(f"{name}: no train_memory=192Gi fix line at train_gpu=4")
                if osmo_report:
                    notes.append(f"osmo: {len(osmo_report.get('blocks', []))} blocks, set: {osmo_report.get('set') or '-'}")
            elif asks_for_gpus(path) and not sized_gpu_pods and not said:
                failures.append(f"{name}: asks for GPUs, but no GPU pod was sized and nothing said why")
                notes.append("GPU ASK PASSED SILENTLY")
            elif code != 2 and said:
                notes.append(f"warned: {said[0][:120]}")
            result = {0: "admitted", 1: "changed-or-denied", 2: "error"}[code]
            if code != 2 or notes:
                print(f"{name}  {result}" + ("  [" + "; ".join(notes) + "]" if notes else ""))
    finally:
        os.unlink(policy.name)
    print(f"corpus-check: {tally[0]} admitted unchanged, {tally[1]} changed or denied, {tally[2]} errors; "
          f"{gpu_pods} GPU pods; {len(failures)} failures")
    for failure in failures:
        print(f"  FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
