"""The Kubernetes control plane of the end-to-end tests, on loopback:
Debian's etcd, the kube-apiserver, kube-scheduler and kube-controller-manager
that tests/e2e/build-kube-control-plane.sh builds, one gpu-sizer process, and
the helpers both e2e modules use to drive them with kubectl."""

import base64
import copy
import http.client
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
from pathlib import Path

import yaml

TOKEN = "e2e-admin-token"
# The webhook's own identity: deploy/'s ServiceAccount, as the API server's
# token authenticator sees a service account (user and groups), so the
# RBAC objects of deploy/ are what decide what it may do.
WEBHOOK_TOKEN = "e2e-gpu-sizer-service-account-token"
WEBHOOK_USER = "system:serviceaccount:gpu-sizer:gpu-sizer"


_HANDED_OUT = set()
_HANDED_OUT_LOCK = threading.Lock()


def free_port():
    """A port free now, for a server that binds it a moment later.

    Taken below the kernel's ephemeral range: a port from bind(0) is one
    that any outgoing connection (kubectl's, the API server's to etcd) may
    take as its own before the server binds it, and every other test binds
    port 0. Never the same port twice in this process (the scheduler e2e
    runs several clusters side by side)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    candidates = list(range(max(1024, low - 12000), low))
    random.shuffle(candidates)
    with _HANDED_OUT_LOCK:
        for port in candidates:
            if port in _HANDED_OUT:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError(f"no free port below the ephemeral range ({low})")


def run(args, check=True, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr}")
    return result


def in_memory_directory():
    """/dev/shm where the machine has room there, else None (the temporary
    directory). etcd syncs every write to disk, which costs block-device
    CPU and waits; a test's data lives only as long as the test and needs
    neither. Room: etcd preallocates 64 MiB write-ahead log files, and a
    container's /dev/shm is often 64 MiB in all."""
    try:
        shm = os.statvfs("/dev/shm")
    except OSError:
        return None
    room = shm.f_bavail * shm.f_frsize
    return "/dev/shm" if room >= 1 << 30 and os.access("/dev/shm", os.W_OK) else None


def wait_until(what, probe, seconds):
    deadline = time.monotonic() + seconds
    while True:
        if probe():
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {seconds}s waiting for {what}")
        time.sleep(0.2)


class Cluster:
    """etcd + kube-apiserver + one gpu-sizer process, all on loopback, and
    on request the kube-scheduler and kube-controller-manager built from the
    same source."""

    def __init__(self, kubernetes_bin, gpu_sizer):
        """KUBERNETES_BIN: the directory of the binaries that
        tests/e2e/build-kube-control-plane.sh built."""
        self.bin = Path(kubernetes_bin)
        self.gpu_sizer = Path(gpu_sizer)
        self.dir = Path(tempfile.mkdtemp(prefix="gpu-sizer-e2e.", dir=in_memory_directory()))
        self.processes = {}
        self.logs = {}
        self.connections = threading.local()  # .connection: the thread's to the API server (api())

    # --- processes ---------------------------------------------------------
    def start(self, name, args):
        log = open(self.dir / f"{name}.log", "w")
        self.logs[name] = log
        self.processes[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, name):
        process = self.processes.pop(name, None)
        if process is None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def alive(self, name):
        process = self.processes.get(name)
        if process is None or process.poll() is not None:
            log = (self.dir / f"{name}.log").read_text()[-3000:]
            raise RuntimeError(f"{name} exited; last log lines:\n{log}")
        return True

    def shutdown(self):
        for name in list(self.processes)[::-1]:
            self.stop(name)
        for log in self.logs.values():
            log.close()

    def remove(self):
        """Shuts down, and deletes the logs, certificates and etcd data
        unless KEEP_E2E_DIR is set."""
        self.shutdown()
        if os.environ.get("KEEP_E2E_DIR"):
            print(f"kept {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    # --- certificates --------------------------------------------------------
    def make_certificates(self):
        certs = self.dir / "certs"
        certs.mkdir()
        # An ECDSA P-256 serving key: every kubectl process makes a TLS
        # handshake, and the API server's Go signs one in 44 µs where an
        # RSA-2048 signature takes 1.8 ms (Go 1.19 on this machine).
        run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-days", "1",
             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
             "-keyout", certs / "serving.key", "-out", certs / "serving.crt"])
        run(["openssl", "genrsa", "-out", certs / "sa.key", "2048"])
        run(["openssl", "rsa", "-in", certs / "sa.key", "-pubout", "-out", certs / "sa.pub"])
        (certs / "tokens.csv").write_text(
            f"{TOKEN},e2e-admin,e2e-admin,system:masters\n"
            f'{WEBHOOK_TOKEN},{WEBHOOK_USER},gpu-sizer-uid,"system:serviceaccounts,system:serviceaccounts:gpu-sizer"\n')
        return certs

    # --- etcd + kube-apiserver ---------------------------------------------
    def start_control_plane(self):
        certs = self.make_certificates()
        etcd_client, etcd_peer = free_port(), free_port()
        self.start("etcd", [
            "etcd", "--name", "e2e", "--data-dir", self.dir / "etcd-data",
            "--listen-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-cluster", f"e2e=http://127.0.0.1:{etcd_peer}"])
        self.api_port = free_port()
        self.apiserver_args = [
            self.bin / "kube-apiserver", f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            "--bind-address=127.0.0.1", f"--secure-port={self.api_port}", "--insecure-port=0",
            "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
            f"--cert-dir={certs}", f"--tls-cert-file={certs}/serving.crt",
            f"--tls-private-key-file={certs}/serving.key",
            f"--service-account-key-file={certs}/sa.pub",
            f"--service-account-signing-key-file={certs}/sa.key",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24",
            f"--token-auth-file={certs}/tokens.csv", "--authorization-mode=RBAC",
            # As clusters that run GPU device plugins and TPU workloads do.
            "--allow-privileged=true",
            # ExtendedResourceToleration as GKE runs it: GPU pods get the
            # toleration of the GPU nodes' taint before the webhook sees them.
            "--enable-admission-plugins=ExtendedResourceToleration,MutatingAdmissionWebhook,"
            "ValidatingAdmissionWebhook",
            # No controller here creates service-account tokens, which this
            # plugin would otherwise wait for on every pod.
            "--disable-admission-plugins=ServiceAccount"]
        self.start("kube-apiserver", self.apiserver_args)
        self.certs = certs
        self.kubeconfig = self.dir / "kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
            "clusters": [{"name": "e2e", "cluster": {
                "server": f"https://127.0.0.1:{self.api_port}",
                "certificate-authority": str(certs / "serving.crt")}}],
            "users": [{"name": "e2e", "user": {"token": TOKEN}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e"}}]}))
        self.wait_for_apiserver()
        # The default namespace exists once the bootstrap controller ran.
        wait_until("namespace default", lambda: self.kubectl(
            "get", "namespace", "default", check=False).returncode == 0, 60)

    def wait_for_apiserver(self):
        wait_until("kube-apiserver /readyz", lambda: self.alive("etcd") and self.alive("kube-apiserver")
                   and self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0, 120)

    def restart_apiserver(self):
        self.stop("kube-apiserver")
        self.start("kube-apiserver", self.apiserver_args)
        self.wait_for_apiserver()

    def api(self, method, path, body=None, content_type="application/json"):
        """One REST call as the admin: for what kubectl 1.20 cannot do (the
        status subresource), and where a kubectl process per call is slow.
        Over one kept-alive connection per thread: the tests poll the API
        server thousands of times, and TLS handshakes (a call's, a kubectl
        process's) were 29% of its CPU time (docs/make-test-time.md). Raises
        urllib.error.HTTPError for an answer that is not 2xx."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type}
        for attempt in (1, 2):
            connection = self.api_connection()
            try:
                connection.request(method, path, body=data, headers=headers)
                answer = connection.getresponse()
                payload = answer.read()
                break
            except (ConnectionError, ssl.SSLError, http.client.HTTPException):
                # The server closed the kept connection (it was restarted,
                # or timed the connection out): once more on a new one.
                connection.close()
                self.connections.connection = None
                if attempt == 2:
                    raise
        if not 200 <= answer.status < 300:
            raise urllib.error.HTTPError(f"https://127.0.0.1:{self.api_port}{path}", answer.status, answer.reason,
                                         answer.headers, io.BytesIO(payload))
        return json.loads(payload)

    def api_connection(self):
        """This thread's connection to the API server, opened when it has none."""
        connection = getattr(self.connections, "connection", None)
        if connection is None:
            context = ssl.create_default_context(cafile=str(self.certs / "serving.crt"))
            connection = http.client.HTTPSConnection("127.0.0.1", self.api_port, context=context, timeout=30)
            self.connections.connection = connection
        return connection

    def kubectl(self, *args, input=None, check=True):
        return run(["kubectl", f"--kubeconfig={self.kubeconfig}", "--request-timeout=30s", *args],
                   check=check, input=input)

    def apply_objects(self, objects, *flags, check=True):
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        return self.kubectl("apply", *flags, "-f", "-", input=body, check=check)

    def dry_run_apply(self, obj):
        """kubectl apply --dry-run=server of OBJ: the result, and the object
        as the API server would store it (None when refused)."""
        result = self.apply_objects([obj], "--dry-run=server", "-o", "json", check=False)
        returned = json.loads(result.stdout) if result.returncode == 0 else None
        if returned is not None and returned.get("kind") == "List":
            returned = returned["items"][0]
        return result, returned

    def served_resources(self):
        """{(group, resource)} the API server serves now (its discovery)."""
        served = set()
        for name in self.kubectl("api-resources", "--no-headers", "-o", "name").stdout.split():
            resource, _, group = name.partition(".")  # resource.group, or resource for the core group
            served.add((group, resource))
        return served

    def registered_rules(self, kind, name):
        """{(group, resource)} the rules of the stored webhook configuration match."""
        config = json.loads(self.kubectl("get", kind, name, "-o", "json").stdout)
        return {(group, resource) for webhook in config["webhooks"] for rule in webhook.get("rules", [])
                for group in rule["apiGroups"] for resource in rule["resources"]}

    # --- objects ------------------------------------------------------------
    def served(self, api_version, kind):
        """Whether the API server serves KIND in API_VERSION (its discovery)."""
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        discovery = self.kubectl("get", "--raw", path, check=False)
        return discovery.returncode == 0 and any(
            resource["kind"] == kind for resource in json.loads(discovery.stdout)["resources"])

    def deploy_objects(self, directory):
        """The objects of DIR/*.yaml, with APIs this v1.20 server lacks replaced
        by the older version of the same object (printed)."""
        objects = []
        for path in sorted(Path(directory).glob("*.yaml")):
            for obj in load_documents(path):
                if obj["apiVersion"] == "policy/v1" and not self.served("policy/v1", obj["kind"]):
                    print_once(f"note: {path.name}: {obj['kind']} sent as policy/v1beta1 "
                               "(this v1.20 API server serves policy/v1 from 1.21 on)", file=sys.stderr)
                    obj["apiVersion"] = "policy/v1beta1"
                objects.append(obj)
        return objects

    def register_webhooks(self, deploy_dir, failure_policy=None):
        """DEPLOY_DIR's webhook configurations, renamed gpu-sizer-e2e and pointed
        at the loopback process with its CA."""
        configs = [o for o in self.deploy_objects(deploy_dir) if o["kind"].endswith("WebhookConfiguration")]
        ca_bundle = base64.b64encode(self.webhook_ca).decode()
        for config in configs:
            config["metadata"]["name"] = "gpu-sizer-e2e"
            for webhook in config["webhooks"]:
                path = webhook["clientConfig"]["service"]["path"]
                webhook["clientConfig"] = {"url": f"https://127.0.0.1:{self.webhook_port}{path}",
                                           "caBundle": ca_bundle}
                if failure_policy:
                    webhook["failurePolicy"] = failure_policy
        self.apply_objects(configs)

    def install_crds(self, crds):
        """Installs the CRDs and waits until kubectl can list their kinds."""
        self.apply_objects(crds)
        names = [crd["metadata"]["name"] for crd in crds]
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{name}" for name in names])
        # Discovery of the new kinds by kubectl can lag behind "Established".
        wait_until("CRD discovery", lambda: all(
            self.kubectl("get", name.split(".", 1)[0], "-A", check=False).returncode == 0 for name in names), 30)

    def create_node(self, node):
        """Creates NODE (a Node as `kubectl get -o yaml` prints it), then does
        what its kubelet and the node lifecycle controller would: sets its
        status through the status subresource (create ignores status), Ready
        unless NODE says otherwise, and leaves only its own taints (the API
        server's TaintNodesByCondition plugin taints every new node
        not-ready, and no controller here lifts it)."""
        node = copy.deepcopy(node)
        status = node.pop("status", {})
        allocatable = status.get("allocatable", {})
        status = {"allocatable": allocatable, "capacity": status.get("capacity", allocatable),
                  "conditions": status.get("conditions") or [
                      {"type": "Ready", "status": "True", "reason": "KubeletReady",
                       "message": "registered by the e2e test"}]}
        name = node["metadata"]["name"]
        node.setdefault("apiVersion", "v1")
        node.setdefault("kind", "Node")
        self.api("POST", "/api/v1/nodes", node)
        self.api("PATCH", f"/api/v1/nodes/{name}/status", {"status": status},
                 content_type="application/merge-patch+json")
        self.api("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": node.get("spec", {}).get("taints", [])}},
                 content_type="application/merge-patch+json")

    # --- kube-scheduler + kube-controller-manager --------------------------
    def start_scheduler(self):
        """The default scheduler, as the admin, serving nothing."""
        self.start("kube-scheduler", [
            self.bin / "kube-scheduler", f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
            "--port=0", "--secure-port=0"])

    def start_controller_manager(self, controllers):
        """The controllers named (a --controllers list), as the admin,
        serving nothing. Without kubelets, the node lifecycle controller
        would mark every node NotReady: leave it out."""
        self.start("kube-controller-manager", [
            self.bin / "kube-controller-manager", f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
            "--port=0", "--secure-port=0", f"--controllers={','.join(controllers)}"])

    # --- gpu-sizer ---------------------------------------------------------
    def start_webhook(self, *flags):
        """gpu-sizer serve, and FLAGS (a --policy)."""
        self.webhook_port = free_port()
        self.metrics_port = free_port()
        cert_dir = self.dir / "webhook-certs"
        # The webhook reaches the API server as deploy/'s service account,
        # its token in a file it reads again on every connection, as the
        # kubelet's projected token is.
        token_file = self.dir / "webhook-token"
        token_file.write_text(WEBHOOK_TOKEN)
        webhook_kubeconfig = self.dir / "webhook-kubeconfig"
        webhook_kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
            "clusters": [{"name": "e2e", "cluster": {
                "server": f"https://127.0.0.1:{self.api_port}",
                "certificate-authority": str(self.certs / "serving.crt")}}],
            "users": [{"name": "gpu-sizer", "user": {"tokenFile": str(token_file)}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "gpu-sizer"}}]}))
        self.start("gpu-sizer", [self.gpu_sizer, "serve", "--listen", f"127.0.0.1:{self.webhook_port}",
                                 "--cert-dir", cert_dir, "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
                                 "--node-watch", "on", "--kubeconfig", webhook_kubeconfig, *flags])
        wait_until("gpu-sizer /healthz", lambda: self.alive("gpu-sizer") and run(
            ["curl", "-sf", "--cacert", cert_dir / "ca.crt",
             f"https://127.0.0.1:{self.webhook_port}/healthz"], check=False).returncode == 0, 30)
        self.webhook_ca = (cert_dir / "ca.crt").read_bytes()
        wait_until("the node watch to list nodes", lambda: "node-state node-synced" in self.status_page(), 60)

    def status_page(self):
        return run(["curl", "-sf", f"http://127.0.0.1:{self.metrics_port}/status"], check=False).stdout

    def metric(self, name):
        """The value of an unlabelled metric of the webhook, or None."""
        text = run(["curl", "-sf", f"http://127.0.0.1:{self.metrics_port}/metrics"], check=False).stdout
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None


def load_documents(path):
    with open(path) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


NOTES = set()


def print_once(note, file=sys.stderr):
    if note not in NOTES:
        NOTES.add(note)
        print(note, file=file)


def warnings_of(stderr):
    return {line[len("Warning: "):] for line in stderr.splitlines() if line.startswith("Warning: ")}


def unmatched_warnings(webhook, offline):
    """What the webhook's warnings and `gpu-sizer check`'s do not share, as
    (webhook's left, check's left). The webhook cuts a warning to kubectl's
    120 characters where it shows '...' (at its end, or in a long container
    name); check prints it whole: a cut line matches the whole one it is
    cut from. The '...' is the last three of a run of dots: a name cut after
    a dot ("spec.services[0]....") keeps that dot."""
    left = sorted(offline)
    unmatched = []
    for line in sorted(webhook, key=len, reverse=True):
        parts = re.split(r"\.\.\.(?!\.)", line)
        pattern = re.compile(".*".join(re.escape(part) for part in parts), re.S)
        whole = next((each for each in left if pattern.fullmatch(each)), None)
        if whole is None:
            unmatched.append(line)
        else:
            left.remove(whole)
    return unmatched, left


def plural_of(kind):
    """The resource name of an open_crd's KIND: ec2nodeclasses, nodepools."""
    return kind.lower() + ("es" if kind.lower().endswith("s") else "s")


def open_crd(group, version, kind, scope="Namespaced"):
    """A CRD of KIND that takes any object (an open schema)."""
    plural = plural_of(kind)
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope,
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"},
                 "versions": [{"name": version, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]}}


def has_pod_level_resources(obj):
    """Whether a pod spec of OBJ (a map with a containers list) sets
    spec.resources, which kubectl refuses for this v1.20 server."""
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list) and "resources" in obj:
            return True
        return any(has_pod_level_resources(value) for value in obj.values())
    if isinstance(obj, list):
        return any(has_pod_level_resources(item) for item in obj)
    return False


def for_v1_20(obj):
    """OBJ without the native-sidecar field (initContainers[].restartPolicy,
    Kubernetes 1.28+), which kubectl rejects for this v1.20 server and the
    server would drop. Those containers stay ordinary no-GPU init
    containers, which gpu-sizer leaves alone either way."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "initContainers" and isinstance(value, list):
                for item in value:
                    item.pop("restartPolicy", None)
            for_v1_20(value)
    elif isinstance(obj, list):
        for item in obj:
            for_v1_20(item)
    return obj
