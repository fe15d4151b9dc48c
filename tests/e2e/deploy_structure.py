"""The structure checks of deploy/: its manifests, the webhook
configurations (also checked on the rendered chart), deploy/cert-manager/
and deploy/selfsigned-certs.sh. Run by chart_structure.py, whose docstring
lists what is checked."""

import os
import shutil
import subprocess

import yaml

from structure_common import (CLUSTER_SCOPED, MUST_EXCLUDE, NAMESPACE, POD_RESOURCE, RESIZE_RESOURCE,
                              WORKLOAD_RESOURCES, expected_pods, fail, get, load_docs, read)


def rule_pairs(rules):
    """{(group, resource): set(operations)} covered by a webhook's rules."""
    out = {}
    for rule in rules or []:
        for g in rule.get("apiGroups") or []:
            for r in rule.get("resources") or []:
                out.setdefault((g, r), set()).update(rule.get("operations") or [])
    return out


def check_webhooks(where, cfg, mutating):
    path = "/mutate" if mutating else "/validate"
    hooks = cfg.get("webhooks") or []
    if len(hooks) != 2:
        fail(where, f"has {len(hooks)} webhooks, wants 2 (pods, workloads)")
    pods_hook = workloads_hook = None
    for h in hooks:
        w = f"{where} webhook {h.get('name')!r}"
        if h.get("admissionReviewVersions") != ["v1"]:
            fail(w, f"admissionReviewVersions must be [v1], is {h.get('admissionReviewVersions')}")
        if h.get("sideEffects") != "None":
            fail(w, f"sideEffects must be None (dry-run), is {h.get('sideEffects')!r}")
        t = h.get("timeoutSeconds")
        if not isinstance(t, int) or not 1 <= t <= 5:
            fail(w, f"timeoutSeconds must be 1..5, is {t!r}")
        if h.get("failurePolicy") != "Ignore":
            fail(w, f"failurePolicy must be Ignore (see the comment in the file), is {h.get('failurePolicy')!r}")
        if mutating and h.get("reinvocationPolicy") != "IfNeeded":
            fail(w, f"reinvocationPolicy must be IfNeeded, is {h.get('reinvocationPolicy')!r}")
        svc = get(h, "clientConfig", "service", default={})
        if (svc.get("name"), svc.get("namespace"), svc.get("path"), svc.get("port", 443)) != \
                ("gpu-sizer", NAMESPACE, path, 443):
            fail(w, f"clientConfig.service must be gpu-sizer/{NAMESPACE} port 443 path {path}, is {svc}")
        excluded = set()
        for e in get(h, "namespaceSelector", "matchExpressions", default=[]) or []:
            if e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "NotIn":
                excluded |= set(e.get("values") or [])
        if not MUST_EXCLUDE <= excluded:
            fail(w, f"namespaceSelector must exclude {sorted(MUST_EXCLUDE - excluded)}")
        pairs = rule_pairs(h.get("rules"))
        for rule in h.get("rules") or []:
            if "*" in (rule.get("apiGroups") or []) + (rule.get("resources") or []) + (rule.get("operations") or []):
                fail(w, f"rule {rule} uses a wildcard group, resource or operation")
            if any("/" in r and ("", r) != RESIZE_RESOURCE for r in rule.get("resources") or []):
                fail(w, f"rule {rule} matches a subresource")
        if POD_RESOURCE in pairs:
            pods_hook = h
            wanted = expected_pods("MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration")
            if pairs != wanted:
                fail(w, f"the pods webhook must match {wanted}, matches {pairs}")
        else:
            workloads_hook = h
            for gr in WORKLOAD_RESOURCES:
                if pairs.get(gr) != {"CREATE", "UPDATE"}:
                    fail(w, f"{gr[0]}/{gr[1]} must be matched on CREATE and UPDATE, is {sorted(pairs.get(gr, []))}")
            extra = set(pairs) - set(WORKLOAD_RESOURCES)
            if extra:
                fail(w, f"matches kinds gpu-sizer does not read: {sorted(extra)}")
    if pods_hook is None:
        fail(where, "has no webhook for pods")
    if workloads_hook is None:
        fail(where, "has no webhook for the workload kinds")


def check_deploy(src):
    ddir = os.path.join(src, "deploy")
    objects = {}
    files = sorted(f for f in os.listdir(ddir) if os.path.isfile(os.path.join(ddir, f)))
    manifests = [f for f in files if f.endswith((".yaml", ".yml", ".json"))]
    for f in files:
        if f not in manifests and f != "selfsigned-certs.sh":
            fail(f"deploy/{f}", "only Kubernetes manifests (and selfsigned-certs.sh) belong in deploy/'s top level")
    if not manifests:
        fail("deploy/", "holds no manifests")
        return objects
    first_docs = []
    for f in manifests:
        docs = load_docs(f"deploy/{f}", read(os.path.join(ddir, f)))
        if f == manifests[0]:
            first_docs = docs
        for doc in docs:
            kind = doc.get("kind")
            objects.setdefault(kind, []).append(doc)
            ns = get(doc, "metadata", "namespace")
            if kind in CLUSTER_SCOPED:
                if ns is not None:
                    fail(f"deploy/{f} {kind}", "is cluster-scoped but names a namespace")
            elif ns != NAMESPACE:
                fail(f"deploy/{f} {kind}", f"metadata.namespace must be {NAMESPACE}, is {ns!r}")
    if not any(d.get("kind") == "Namespace" for d in first_docs):
        fail(f"deploy/{manifests[0]}", "the first file (applied first) must create the Namespace")
    if get(objects, "Namespace", 0, "metadata", "name") != NAMESPACE:
        fail("deploy/ Namespace", f"must be {NAMESPACE}")

    want = {"Namespace": "v1", "ServiceAccount": "v1", "ConfigMap": "v1", "Deployment": "apps/v1",
            "PodDisruptionBudget": "policy/v1", "Service": "v1",
            "MutatingWebhookConfiguration": "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration": "admissionregistration.k8s.io/v1"}
    for kind, api in want.items():
        found = objects.get(kind, [])
        if len(found) != 1:
            fail("deploy/", f"wants exactly one {kind}, has {len(found)}")
        elif found[0].get("apiVersion") != api:
            fail(f"deploy/ {kind}", f"apiVersion must be {api}, is {found[0].get('apiVersion')!r}")
    for kind in want:
        if len(objects.get(kind, [])) != 1:
            return objects  # the checks below need each object

    policy = read(os.path.join(src, "src", "sizing", "default_policy.yaml"))
    cm = objects["ConfigMap"][0]
    if get(cm, "data", "policy.yaml") != policy:
        fail("deploy/ ConfigMap", "data[policy.yaml] differs from src/sizing/default_policy.yaml (byte for byte)")

    dep = objects["Deployment"][0]
    pod = get(dep, "spec", "template", default={})
    spec = pod.get("spec", {})
    w = "deploy/ Deployment"
    if get(dep, "spec", "replicas") != 2:
        fail(w, f"replicas must be 2, is {get(dep, 'spec', 'replicas')!r}")
    if not get(spec, "affinity", "podAntiAffinity"):
        fail(w, "has no podAntiAffinity")
    labels = get(pod, "metadata", "labels", default={})
    sel = get(dep, "spec", "selector", "matchLabels", default={})
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        fail(w, "selector does not match the pod template's labels")
    if spec.get("serviceAccountName") != get(objects, "ServiceAccount", 0, "metadata", "name"):
        fail(w, "serviceAccountName is not the ServiceAccount")
    psc = spec.get("securityContext", {})
    if psc.get("runAsNonRoot") is not True:
        fail(w, "pod securityContext.runAsNonRoot must be true")
    if get(psc, "seccompProfile", "type") != "RuntimeDefault":
        fail(w, "pod securityContext.seccompProfile.type must be RuntimeDefault")
    containers = spec.get("containers") or [{}]
    c = containers[0]
    csc = c.get("securityContext", {})
    for key, val in (("readOnlyRootFilesystem", True), ("allowPrivilegeEscalation", False), ("runAsNonRoot", True)):
        if csc.get(key) is not val:
            fail(w, f"container securityContext.{key} must be {str(val).lower()}")
    if "ALL" not in (get(csc, "capabilities", "drop") or []):
        fail(w, "container securityContext.capabilities.drop must hold ALL")
    if get(csc, "seccompProfile", "type", default="RuntimeDefault") != "RuntimeDefault":
        fail(w, "container seccompProfile must be RuntimeDefault")
    if get(c, "readinessProbe", "httpGet", "path") != "/readyz":
        fail(w, "readinessProbe must GET /readyz")
    if get(c, "livenessProbe", "httpGet", "path") != "/healthz":
        fail(w, "livenessProbe must GET /healthz")
    for probe in ("readinessProbe", "livenessProbe"):
        if get(c, probe, "httpGet", "scheme") != "HTTPS":
            fail(w, f"{probe} must use HTTPS (the webhook port serves TLS only)")
    res = c.get("resources", {})
    if not get(res, "requests", "cpu") or not get(res, "requests", "memory") or not get(res, "limits", "memory"):
        fail(w, "resources must set cpu and memory requests and a memory limit")
    args = [str(a) for a in c.get("args") or []]

    def arg(flag):
        return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None
    delay = arg("--shutdown-delay")
    if delay is None or not delay.isdigit() or int(delay) < 1:
        fail(w, "args must pass --shutdown-delay N (N >= 1)")
    elif not int(spec.get("terminationGracePeriodSeconds", 30)) > int(delay):
        fail(w, "terminationGracePeriodSeconds must exceed --shutdown-delay")
    for flag, want_arg in (("--listen", "0.0.0.0:8443"), ("--metrics-listen", "0.0.0.0:9090"),
                           ("--tls-cert", "/etc/gpu-sizer/tls/tls.crt"), ("--tls-key", "/etc/gpu-sizer/tls/tls.key"),
                           ("--policy", "/etc/gpu-sizer/policy/policy.yaml")):
        if arg(flag) != want_arg:
            fail(w, f"args must pass {flag} {want_arg} (the image's CMD, replaced by args), pass {arg(flag)!r}")
    mounts = {m.get("name"): m for m in c.get("volumeMounts") or []}
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    for m in mounts.values():
        if "subPath" in m or "subPathExpr" in m:
            fail(w, f"volumeMount {m.get('name')} uses subPath: the kubelet never updates those (no reload)")
    tls = [n for n, v in vols.items() if get(v, "secret", "secretName") == "gpu-sizer-tls"]
    pol = [n for n, v in vols.items() if get(v, "configMap", "name") == get(cm, "metadata", "name")]
    if not tls or get(mounts, tls[0], "mountPath") != "/etc/gpu-sizer/tls":
        fail(w, "Secret gpu-sizer-tls must be mounted at /etc/gpu-sizer/tls")
    if not pol or get(mounts, pol[0], "mountPath") != "/etc/gpu-sizer/policy":
        fail(w, "the policy ConfigMap must be mounted at /etc/gpu-sizer/policy")
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
    if ports.get("https") != 8443 or ports.get("metrics") != 9090:
        fail(w, f"container ports must be https 8443 and metrics 9090, are {ports}")

    pdb = objects["PodDisruptionBudget"][0]
    psel = get(pdb, "spec", "selector", "matchLabels", default={})
    if not psel or any(labels.get(k) != v for k, v in psel.items()):
        fail("deploy/ PodDisruptionBudget", "selector does not match the Deployment's pods")
    if get(pdb, "spec", "minAvailable") is None and get(pdb, "spec", "maxUnavailable") is None:
        fail("deploy/ PodDisruptionBudget", "sets neither minAvailable nor maxUnavailable")

    svc = objects["Service"][0]
    w = "deploy/ Service"
    if get(svc, "metadata", "name") != "gpu-sizer":
        fail(w, "must be named gpu-sizer")
    ssel = get(svc, "spec", "selector", default={})
    if not ssel or any(labels.get(k) != v for k, v in ssel.items()):
        fail(w, "selector does not match the Deployment's pods")
    sports = {p.get("port"): p.get("targetPort") for p in get(svc, "spec", "ports", default=[])}
    if sports.get(443) not in (8443, "https") or sports.get(9090) not in (9090, "metrics"):
        fail(w, f"ports must be 443 -> 8443 (https) and 9090 -> 9090 (metrics), are {sports}")

    check_webhooks("deploy/ MutatingWebhookConfiguration", objects["MutatingWebhookConfiguration"][0], True)
    check_webhooks("deploy/ ValidatingWebhookConfiguration", objects["ValidatingWebhookConfiguration"][0], False)
    return objects


def check_cert_manager(src, deploy_objects):
    cdir = os.path.join(src, "deploy", "cert-manager")
    if not os.path.isdir(cdir):
        fail("deploy/cert-manager", "is missing")
        return
    objects = {}
    for f in sorted(os.listdir(cdir)):
        if f.endswith((".yaml", ".yml")):
            for doc in load_docs(f"deploy/cert-manager/{f}", read(os.path.join(cdir, f))):
                objects.setdefault(doc.get("kind"), []).append(doc)
    certs = [c for c in objects.get("Certificate", []) if get(c, "spec", "secretName") == "gpu-sizer-tls"]
    if len(certs) != 1:
        fail("deploy/cert-manager", "wants one Certificate with secretName gpu-sizer-tls")
        return
    cert = certs[0]
    if "gpu-sizer.gpu-sizer.svc" not in (get(cert, "spec", "dnsNames") or []):
        fail("deploy/cert-manager Certificate", "dnsNames must hold gpu-sizer.gpu-sizer.svc")
    issuer = get(cert, "spec", "issuerRef", "name")
    if issuer not in [get(i, "metadata", "name") for i in objects.get("Issuer", [])]:
        fail("deploy/cert-manager Certificate", f"issuerRef {issuer!r} is not an Issuer in the directory")
    inject = f"{get(cert, 'metadata', 'namespace')}/{get(cert, 'metadata', 'name')}"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        mine = objects.get(kind, [])
        if len(mine) != 1 or len(deploy_objects.get(kind, [])) != 1:
            fail("deploy/cert-manager", f"wants one {kind} (the annotated copy of deploy/'s)")
            continue
        copy = yaml.safe_load(yaml.safe_dump(mine[0]))
        got = get(copy, "metadata", "annotations", "cert-manager.io/inject-ca-from")
        if got != inject:
            fail(f"deploy/cert-manager {kind}", f"annotation cert-manager.io/inject-ca-from must be {inject}, is {got!r}")
        copy["metadata"].get("annotations", {}).pop("cert-manager.io/inject-ca-from", None)
        if not copy["metadata"].get("annotations"):
            copy["metadata"].pop("annotations", None)
        if copy != deploy_objects[kind][0]:
            fail(f"deploy/cert-manager {kind}", "differs from deploy/'s apart from the annotation")


def check_script(src):
    script = os.path.join(src, "deploy", "selfsigned-certs.sh")
    w = "deploy/selfsigned-certs.sh"
    if not os.path.isfile(script):
        fail(w, "is missing")
        return
    if not os.access(script, os.X_OK):
        fail(w, "is not executable")
    if shutil.which("shellcheck"):
        r = subprocess.run(["shellcheck", script], capture_output=True, text=True)
        if r.returncode != 0:
            fail(w, "shellcheck: " + r.stdout.strip().replace("\n", " | ")[:600])
    r = subprocess.run(["bash", script, "--dry-run"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(w, f"--dry-run exits {r.returncode}: {r.stderr.strip()}")
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        if f"kubectl patch {kind} gpu-sizer" not in r.stdout:
            fail(w, f"--dry-run does not patch {kind} gpu-sizer")
    if "create secret" not in r.stdout or "gpu-sizer-tls" not in r.stdout:
        fail(w, "--dry-run does not create the Secret gpu-sizer-tls")
