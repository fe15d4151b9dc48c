#!/usr/bin/env python3
"""Structure checks of deploy/ and charts/gpu-sizer (no cluster, no Helm).

Usage: chart_structure.py SOURCE_DIR GPU_SIZER

No Helm binary is available where the tests run. The webhook
configurations are rendered by tests/e2e/chart_render.go (Go's
text/template, the engine Helm uses, with the functions the chart uses); it
needs Debian's golang-go, which `make test` installs: without go those
checks are skipped with a note, and fail under CI=true. Every template is
also parsed as YAML after its template actions are stripped: control actions
(if/else/end/range/with/define, variable assignments, comments) are dropped,
value actions become a placeholder scalar (or, when an action is alone on
its line, a placeholder key or list item at the indentation its
`nindent`/`indent` gives). That catches broken indentation and YAML syntax
in the literal text of all templates, not in what the actions produce.

Checked:
  - deploy/*.yaml: every document parses and is a Kubernetes object; the
    Namespace comes first; the Deployment, PodDisruptionBudget, Service and
    both webhook configurations have the fields the issue asks for (replicas,
    anti-affinity, probes, securityContext, admissionReviewVersions,
    sideEffects, timeoutSeconds, failurePolicy, reinvocationPolicy,
    namespaceSelector, rules for every kind gpu-sizer reads);
  - the policy ConfigMap equals src/sizing/default_policy.yaml byte for byte;
  - deploy/cert-manager/: Issuer and Certificate for the Service's DNS name,
    and webhook configurations equal to deploy/'s apart from the
    cert-manager.io/inject-ca-from annotation naming that Certificate;
  - deploy/selfsigned-certs.sh: executable, shellcheck-clean (when shellcheck
    is installed), and `--dry-run` patches both webhook configurations;
  - charts/gpu-sizer: Chart.yaml fields; every template parses after
    stripping and holds Kubernetes objects; blocks are balanced; every
    .Values reference exists in values.yaml and every value is used; every
    include names a defined template; no .Values/.Release inside with/range
    (where `.` is rebound) (files/ copies are `make generate`'s, checked
    by the generated_files test); the chart's webhook rules, probes and securityContext
    equal deploy/'s;
  - the chart rendered: with the default values both webhook configurations
    equal deploy/'s (one source of truth); each family of values
    `workloads:` turned off drops exactly its rules from both workload
    webhooks and nothing else; webhook.extraRules are appended to both
    (apiVersions ["*"] unless given); a "*" group or resource, a subresource
    or a rule without resources fails the render.

Exit 0 when all pass, 1 with one line per failure otherwise.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # pragma: no cover
    print("chart_structure.py: PyYAML is missing (Debian package python3-yaml)", file=sys.stderr)
    sys.exit(1)

from deploy_structure import check_cert_manager, check_deploy, check_script, check_webhooks, rule_pairs
from structure_common import (BUILTIN_RESOURCES, FAILURES, FAMILIES, NAMESPACE, POD_RESOURCE, WORKLOAD_RESOURCES,
                              expected_pods, fail, get, load_docs, load_kind_table, read)


# ---------------------------------------------------------------- templates

ACTION = re.compile(r"\{\{-?(.*?)-?\}\}", re.S)
COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.S)
CONTROL = re.compile(r"^\s*(if|else|end|range|with|define|block|break|continue)\b|^\s*\$[\w]*\s*:?=")
OPENERS = ("if", "range", "with", "define", "block")
PLACEHOLDER = "tpl-placeholder"


def is_control(body):
    return bool(CONTROL.match(body))


def strip_template(text):
    """Template text -> YAML text with the actions replaced or dropped."""
    text = COMMENT.sub("", text)
    out = []
    counter = 0
    for line in text.split("\n"):
        actions = list(ACTION.finditer(line))
        if not actions:
            out.append(line)
            continue
        rest = ACTION.sub("", line)
        if rest.strip() == "":
            values = [a for a in actions if not is_control(a.group(1))]
            if not values:
                continue  # control line: dropped (both branches of an if stay)
            body = values[0].group(1)
            m = re.search(r"\bn?indent\s+(\d+)", body)
            indent = int(m.group(1)) if m else len(line) - len(line.lstrip())
            # The nearest line at or left of that indentation decides
            # whether the output continues a list or a mapping (comments
            # decide nothing).
            prev = next((l for l in reversed(out)
                         if l.strip() and not l.lstrip().startswith("#")
                         and len(l) - len(l.lstrip()) <= indent), "")
            prev_indent = len(prev) - len(prev.lstrip())
            counter += 1
            if prev.lstrip().startswith("- ") and prev_indent == indent:
                out.append(" " * indent + f"- {PLACEHOLDER}")
            else:
                out.append(" " * indent + f"tpl-action-{counter}: {PLACEHOLDER}")
            continue
        out.append(ACTION.sub(lambda a: "" if is_control(a.group(1)) else PLACEHOLDER, line))
    return "\n".join(out)


def check_blocks(where, text):
    """Balanced blocks; no root-context references where `.` is rebound."""
    stack = []
    for a in ACTION.finditer(COMMENT.sub("", text)):
        body = a.group(1).strip()
        word = body.split()[0] if body.split() else ""
        line = text.count("\n", 0, a.start()) + 1
        if word in OPENERS:
            stack.append((word, line))
        elif word == "end":
            if not stack:
                fail(where, f"line {line}: {{{{ end }}}} without an open block")
            else:
                stack.pop()
        rebound = [w for w, _ in stack if w in ("with", "range")]
        if word not in OPENERS and rebound and (
                re.search(r"(?<![\w$])\.(Values|Release|Chart|Files|Capabilities)\b", body)
                or re.search(r'\binclude\s+"[^"]+"\s+\.(\s|\||$)', body)):
            fail(where, f"line {line}: root context used inside {rebound[-1]} (write $.Values, $.Release, or pass $)")
    for word, line in stack:
        fail(where, f"line {line}: {{{{ {word} }}}} is never closed")


VALUES_REF = re.compile(r"(?<![\w])\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def value_paths(values, prefix=()):
    """Every key path in values.yaml (mappings only)."""
    for k, v in values.items():
        path = prefix + (k,)
        yield path
        if isinstance(v, dict) and v:
            yield from value_paths(v, path)



def check_chart(src, deploy_objects):
    chart = os.path.join(src, "charts", "gpu-sizer")
    if not os.path.isdir(chart):
        fail("charts/gpu-sizer", "is missing")
        return

    meta = yaml.safe_load(read(os.path.join(chart, "Chart.yaml")))
    where = "charts/gpu-sizer/Chart.yaml"
    if get(meta, "apiVersion") != "v2":
        fail(where, f"apiVersion must be v2, is {get(meta, 'apiVersion')!r}")
    if get(meta, "name") != "gpu-sizer":
        fail(where, f"name must be gpu-sizer, is {get(meta, 'name')!r}")
    if not re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?", str(get(meta, "version", default=""))):
        fail(where, f"version must be SemVer 2, is {get(meta, 'version')!r}")
    if not get(meta, "appVersion"):
        fail(where, "has no appVersion")

    values = yaml.safe_load(read(os.path.join(chart, "values.yaml")))
    if not isinstance(values, dict):
        fail("charts/gpu-sizer/values.yaml", "is not a mapping")
        values = {}

    tdir = os.path.join(chart, "templates")
    names = sorted(os.listdir(tdir))
    helpers = read(os.path.join(tdir, "_helpers.tpl")) if "_helpers.tpl" in names else ""
    defined = set(re.findall(r'\{\{-?\s*define\s+"([^"]+)"', helpers))
    used_refs = set()
    chart_objects = {}
    for name in names:
        path = os.path.join(tdir, name)
        where = f"charts/gpu-sizer/templates/{name}"
        text = read(path)
        check_blocks(where, text)
        for ref in VALUES_REF.findall(text):
            keys = tuple(ref.strip(".").split("."))
            used_refs.add(keys)
            node = values
            for i, k in enumerate(keys):
                if not isinstance(node, dict) or k not in node:
                    fail(where, f".Values.{'.'.join(keys)} is not in values.yaml "
                                f"(missing {'.'.join(keys[:i + 1])})")
                    break
                node = node[k]
        for inc in re.findall(r'\b(?:include|template)\s+"([^"]+)"', text):
            if inc not in defined:
                fail(where, f'includes "{inc}", which _helpers.tpl does not define')
        for f in re.findall(r'\.Files\.Get\s+"([^"]+)"', text):
            if not os.path.isfile(os.path.join(chart, f)):
                fail(where, f'.Files.Get "{f}": no such file in the chart')
        if not name.endswith((".yaml", ".yml")):
            continue
        for doc in load_docs(where + " (actions stripped)", strip_template(text)):
            chart_objects.setdefault(doc.get("kind"), []).append(doc)

    for path in value_paths(values):
        if not any(ref[:len(path)] == path or path[:len(ref)] == ref for ref in used_refs):
            fail("charts/gpu-sizer/values.yaml", f"{'.'.join(path)} is not used by any template")

    for kind in ("ServiceAccount", "ConfigMap", "Deployment", "PodDisruptionBudget", "Service",
                 "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Issuer", "Certificate",
                 "ServiceMonitor", "PrometheusRule"):
        if kind not in chart_objects:
            fail("charts/gpu-sizer/templates", f"no template makes a {kind}")


    # The chart's objects against deploy/'s.
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        mine = {w.get("name"): w for w in get(chart_objects, kind, 0, "webhooks", default=[]) or []}
        theirs = {w.get("name"): w for w in get(deploy_objects, kind, 0, "webhooks", default=[]) or []}
        if set(mine) != set(theirs):
            fail(f"chart {kind}", f"webhooks {sorted(mine)} differ from deploy/'s {sorted(theirs)}")
        for name in set(mine) & set(theirs):
            for key in ("rules", "admissionReviewVersions", "sideEffects", "reinvocationPolicy", "matchPolicy"):
                got = mine[name].get(key)
                if key == "rules" and isinstance(got, list):
                    got = [r for r in got if r != PLACEHOLDER]  # the webhook.extraRules include
                if got != theirs[name].get(key):
                    fail(f"chart {kind} {name}", f"{key} differs from deploy/'s")
            if get(mine[name], "clientConfig", "service", "path") != get(theirs[name], "clientConfig", "service", "path"):
                fail(f"chart {kind} {name}", "clientConfig.service.path differs from deploy/'s")
    dc = get(deploy_objects, "Deployment", 0, "spec", "template", "spec", "containers", 0, default={})
    cc = get(chart_objects, "Deployment", 0, "spec", "template", "spec", "containers", 0, default={})
    for key in ("securityContext", "readinessProbe", "livenessProbe"):
        if dc.get(key) != cc.get(key):
            fail("chart Deployment", f"container {key} differs from deploy/30-deployment.yaml")
    # The chart may add optional mounts (the client CA); deploy/'s must all be there.
    chart_mounts = cc.get("volumeMounts") or []
    for mount in dc.get("volumeMounts") or []:
        if mount not in chart_mounts:
            fail("chart Deployment", f"container volumeMount {mount.get('name')} differs from deploy/30-deployment.yaml")
    dp = get(deploy_objects, "Deployment", 0, "spec", "template", "spec", "securityContext")
    cp = get(chart_objects, "Deployment", 0, "spec", "template", "spec", "securityContext")
    if dp != cp:
        fail("chart Deployment", "pod securityContext differs from deploy/30-deployment.yaml")
    if get(chart_objects, "Deployment", 0, "spec", "template", "spec", "affinity", "podAntiAffinity") is None:
        fail("chart Deployment", "has no default podAntiAffinity")
    if values.get("replicaCount") != 2:
        fail("charts/gpu-sizer/values.yaml", "replicaCount must default to 2")
    for hook in ("mutating", "validating"):
        if get(values, "webhook", hook, "failurePolicy") != "Ignore":
            fail("charts/gpu-sizer/values.yaml", f"webhook.{hook}.failurePolicy must default to Ignore")
    if not 1 <= int(get(values, "webhook", "timeoutSeconds", default=0)) <= 5:
        fail("charts/gpu-sizer/values.yaml", "webhook.timeoutSeconds must default to 1..5")
    if "kube-system" not in (get(values, "webhook", "excludeNamespaces") or []):
        fail("charts/gpu-sizer/values.yaml", "webhook.excludeNamespaces must hold kube-system")



# ------------------------------------------------------ rendered chart

class Renderer:
    """charts/gpu-sizer's templates rendered by tests/e2e/chart_render.go
    (Go's text/template, Helm's engine, with the functions the chart uses)."""

    def __init__(self, src, tmp):
        self.src = src
        self.chart = os.path.join(src, "charts", "gpu-sizer")
        self.binary = os.path.join(tmp, "chart_render")
        env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "", "GO111MODULE": "on"}
        if not os.access(os.environ.get("GOCACHE") or os.path.expanduser("~"), os.W_OK):
            env["GOCACHE"] = os.path.join(tmp, "gocache")
        r = subprocess.run(["go", "build", "-o", self.binary, os.path.join(src, "tests", "e2e", "chart_render.go")],
                           capture_output=True, text=True, env=env, timeout=300)
        self.error = None if r.returncode == 0 else f"go build chart_render.go: {r.stderr.strip()}"
        self.values = yaml.safe_load(read(os.path.join(self.chart, "values.yaml")))
        meta = yaml.safe_load(read(os.path.join(self.chart, "Chart.yaml")))
        self.chart_meta = {"Name": meta.get("name"), "Version": meta.get("version"),
                           "AppVersion": meta.get("appVersion")}

    def render(self, set_values, templates=("mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml")):
        """({kind: object}, None) or (None, the error), values.yaml with
        SET_VALUES ({"a.b": value}) applied, release gpu-sizer in gpu-sizer."""
        values = yaml.safe_load(yaml.safe_dump(self.values))
        for dotted, value in set_values.items():
            node = values
            *parents, last = dotted.split(".")
            for k in parents:
                node = node.setdefault(k, {})
            node[last] = value
        ctx = {"Values": values, "Chart": self.chart_meta,
               "Release": {"Name": "gpu-sizer", "Namespace": NAMESPACE, "Service": "Helm"}}
        r = subprocess.run([self.binary, self.chart, *templates], input=json.dumps(ctx),
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            return None, r.stderr.strip()
        try:
            docs = [d for d in yaml.safe_load_all(r.stdout) if d]
        except yaml.YAMLError as e:
            return None, f"the rendered YAML does not parse: {e}".replace("\n", " ")
        return {d.get("kind"): d for d in docs}, None


def workload_pairs(cfg):
    """(pairs of the pods webhook, pairs of the workloads webhook)."""
    hooks = {("pods" if POD_RESOURCE in rule_pairs(h.get("rules")) else "workloads"): h
             for h in cfg.get("webhooks") or []}
    return (rule_pairs(get(hooks, "pods", "rules")), rule_pairs(get(hooks, "workloads", "rules")),
            get(hooks, "workloads", "rules", default=[]))


def check_chart_render(src, deploy_objects):
    """The chart rendered: with the default values its webhook
    configurations equal deploy/'s (one source of truth); each family of
    values `workloads:` turned off drops exactly its rules; webhook.extraRules
    land in both workload webhooks; a wildcard or subresource fails."""
    kinds = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    values = yaml.safe_load(read(os.path.join(src, "charts", "gpu-sizer", "values.yaml")))
    families = get(values, "workloads", default={}) or {}
    if set(families) != set(FAMILIES):
        fail("charts/gpu-sizer/values.yaml", f"workloads: must have the families {sorted(FAMILIES)}, has {sorted(families)}")
    for name, on in families.items():
        if on is not True:
            fail("charts/gpu-sizer/values.yaml", f"workloads.{name} must default to true (as deploy/ registers it)")
    if get(values, "webhook", "extraRules") != []:
        fail("charts/gpu-sizer/values.yaml", "webhook.extraRules must default to []")

    if not shutil.which("go"):
        if os.environ.get("CI"):
            fail("charts/gpu-sizer", "go is missing: the rendered-chart checks need golang-go (make test installs it)")
        else:
            print("chart_structure.py: note: go is not installed; the rendered-chart checks are skipped", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        renderer = Renderer(src, tmp)
        if renderer.error:
            fail("tests/e2e/chart_render.go", renderer.error)
            return

        default, err = renderer.render({})
        if err:
            fail("chart (default values)", f"does not render: {err}")
            return
        for kind in kinds:
            mine = default.get(kind)
            if mine is None:
                fail(f"chart {kind} (rendered)", "is missing")
                continue
            for w in mine.get("webhooks") or []:
                w.get("clientConfig", {}).pop("caBundle", None)
            theirs = {w.get("name"): w for w in get(deploy_objects, kind, 0, "webhooks", default=[]) or []}
            for w in mine.get("webhooks") or []:
                if w != theirs.get(w.get("name")):
                    diff = sorted(k for k in set(w) | set(theirs.get(w.get("name")) or {})
                                  if w.get(k) != (theirs.get(w.get("name")) or {}).get(k))
                    fail(f"chart {kind} (rendered, default values) webhook {w.get('name')}",
                         f"differs from deploy/'s in {diff}")
            if len(mine.get("webhooks") or []) != len(theirs):
                fail(f"chart {kind} (rendered)", f"has {len(mine.get('webhooks') or [])} webhooks, deploy/ {len(theirs)}")
            check_webhooks(f"chart {kind} (rendered, default values)", mine, kind.startswith("Mutating"))

        everything = set(WORKLOAD_RESOURCES)
        for family, pairs in FAMILIES.items():
            rendered, err = renderer.render({f"workloads.{family}": False})
            if err:
                fail(f"chart with workloads.{family}=false", f"does not render: {err}")
                continue
            for kind in kinds:
                pods, workloads, _ = workload_pairs(rendered.get(kind) or {})
                if pods != expected_pods(kind):
                    fail(f"chart {kind} with workloads.{family}=false", f"the pods webhook changed: {pods}")
                if set(workloads) != everything - set(pairs):
                    fail(f"chart {kind} with workloads.{family}=false",
                         f"workload rules keep {sorted(set(pairs) & set(workloads))} "
                         f"or lose {sorted(everything - set(pairs) - set(workloads))}")
        rendered, err = renderer.render({f"workloads.{family}": False for family in FAMILIES})
        for kind in kinds:
            _, workloads, _ = workload_pairs((rendered or {}).get(kind) or {})
            if err or set(workloads) != set(BUILTIN_RESOURCES):
                fail(f"chart {kind} with every family off", err or f"workload rules are {sorted(workloads)}, "
                                                                   "want the built-in kinds only")

        extra = [{"apiGroups": ["example.com"], "resources": ["myjobs"]},
                 {"apiGroups": ["example.org"], "apiVersions": ["v1beta1"], "resources": ["a", "b"]}]
        want = [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.com"], "apiVersions": ["*"],
                 "resources": ["myjobs"]},
                {"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.org"], "apiVersions": ["v1beta1"],
                 "resources": ["a", "b"]}]
        rendered, err = renderer.render({"webhook.extraRules": extra, "workloads.ray": False})
        if err:
            fail("chart with webhook.extraRules", f"does not render: {err}")
        for kind in kinds if not err else ():
            pods, workloads, rules = workload_pairs(rendered.get(kind) or {})
            if pods != expected_pods(kind):
                fail(f"chart {kind} with webhook.extraRules", f"the pods webhook changed: {pods}")
            if rules[-len(want):] != want:
                fail(f"chart {kind} with webhook.extraRules", f"the workload webhook's last rules are "
                                                              f"{rules[-len(want):]}, want {want}")
            if set(workloads) != everything - set(FAMILIES["ray"]) | {("example.com", "myjobs"),
                                                                      ("example.org", "a"), ("example.org", "b")}:
                fail(f"chart {kind} with webhook.extraRules and workloads.ray=false",
                     f"workload rules are {sorted(workloads)}")
        for bad, says in (([{"apiGroups": ["*"], "resources": ["myjobs"]}], "apiGroups must name groups"),
                          ([{"apiGroups": ["example.com"], "resources": ["*"]}], "resources must name resources"),
                          ([{"apiGroups": ["example.com"], "resources": ["myjobs/status"]}],
                           "resources must name resources"),
                          ([{"apiGroups": ["example.com"]}], "needs apiGroups and resources")):
            rendered, err = renderer.render({"webhook.extraRules": bad})
            if not err or says not in err:
                fail("chart with webhook.extraRules", f"{bad} must fail the render with {says!r}, "
                                                      f"gives {err or 'a render'}")



def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src = os.path.abspath(sys.argv[1])
    load_kind_table(sys.argv[2])
    deploy_objects = check_deploy(src)
    check_cert_manager(src, deploy_objects)
    check_script(src)
    check_chart(src, deploy_objects)
    check_chart_render(src, deploy_objects)
    if FAILURES:
        for f in FAILURES:
            print(f"FAIL {f}")
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("deploy/ and charts/gpu-sizer: all structure checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
