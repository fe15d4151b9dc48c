"""What the load benchmark (bench/run.py) measures with: the constants shared
by its modules, starting and stopping the servers, the /proc readers (RSS,
CPU time, the cores' busy and steal time, what other work took from a run),
the RSS sampler, the TLS client and its connection probe, the certificates,
h2load (command line, run, parsed output, latency log), and the machine's
description. Python standard library only.
"""

import contextlib
import ctypes
import http.client
import json
import os
import platform
import re
import resource
import shlex
import signal
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent
BENCH = SOURCE / "bench"
WORKLOADS = BENCH / "workloads"
MAIN_WORKLOAD = "pod-12k-mutated.json"
EXTRA_WORKLOADS = ["pod-3k-mutated.json", "pod-60k-mutated.json"]
EXTRA_CONNECTIONS = 16
# Issue 30: each of these servers alone on all the CPUs, on these bodies.
UNPINNED_WORKLOADS = [MAIN_WORKLOAD, "pod-3k-mutated.json"]
UNPINNED_SERVERS = ["ours", "peer", "bare"]
LOAD_CORE = 0
SERVER_CORE = 1
SERVERS = ["ours", "ours-httplib", "peer", "bare"]
LABELS = {
    "ours": "gpu-sizer",
    "ours-httplib": "gpu-sizer --transport httplib",
    "peer": "Go peer (net/http)",
    "bare": "bare TLS (gpu-sizer's transport, fixed body)",
}

# Issue #7: the handler for the main workload under 20 µs (micro benchmark, CPU time).
HANDLER_TARGET_US = 20.0
# A load run during which other work took more of a core than this is run again.
DISTURBED_PCT = 15.0


class BenchError(Exception):
    """Something did not run, a request failed, or the answers disagree."""


class NotServed(Exception):
    """A server did not answer every connection opened at once: `answered` of them."""

    def __init__(self, answered):
        super().__init__(f"{answered} connections answered")
        self.answered = answered


def log(message):
    print(f"[bench] {message}", flush=True)


# --- processes ---------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_libc = None
with contextlib.suppress(OSError):
    _libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _die_with_parent():
    # A server outlives nothing of ours: if this script is killed (ctest's
    # timeout), the kernel kills the servers too.
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Processes:
    """Every process started here, ended in stop_all (also on errors)."""

    def __init__(self):
        self.running = []

    def start(self, argv, log_path, core=SERVER_CORE, env=None):
        """`core`: a core, or a taskset CPU list ("0-3"); `env`: None for this script's environment."""
        full = ["taskset", "-c", str(core)] + [str(a) for a in argv]
        out = open(log_path, "wb")
        try:
            proc = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=_die_with_parent, env=env)
        finally:
            out.close()
        proc.log_path = Path(log_path)
        proc.argv = full
        self.running.append(proc)
        return proc

    def stop(self, proc):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc in self.running:
            self.running.remove(proc)

    def stop_all(self):
        for proc in list(self.running)[::-1]:
            with contextlib.suppress(Exception):
                self.stop(proc)


def run(argv, timeout=600, **kwargs):
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kwargs)
    if result.returncode != 0:
        raise BenchError(f"{shlex.join(str(a) for a in argv)} failed ({result.returncode}):\n"
                         f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc, timeout=30.0):
    """The port from the `listening on https://HOST:PORT` line in the log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = proc.log_path.read_text(errors="replace") if proc.log_path.exists() else ""
        match = re.search(r"listening on https://[^\s:]+:(\d+)", text)
        if match:
            return int(match.group(1))
        if proc.poll() is not None:
            raise BenchError(f"{shlex.join(proc.argv)} exited with {proc.returncode} before listening:\n{text[-3000:]}")
        time.sleep(0.01)
    raise BenchError(f"{shlex.join(proc.argv)} did not print `listening on https://...` within {timeout:.0f} s")


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid):
    """utime + stime of a running process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_list(cpus):
    """A set of CPUs as taskset writes them: {0, 1, 2, 5} is "0-2,5"."""
    ranges = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def core_busy_seconds(steal=False):
    """Seconds each core spent on processes (user, nice, system), from /proc/stat; with
    steal=True, the seconds the hypervisor gave the core to someone else instead.
    Interrupt time (the loopback traffic itself) is left out."""
    busy = {}
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if name.startswith("cpu") and name != "cpu":
                values = [int(v) for v in fields] + [0] * 8
                busy[int(name[3:])] = (values[7] if steal else values[0] + values[1] + values[2]) / tick
    return busy


def account_disturbance(r, busy, steal, server_cpu, elapsed, cpus=None):
    """What was taken from a load run `r`, in % of one core, by other work (the cores' busy
    seconds `busy` less h2load's and the server's CPU time) or by the hypervisor (`steal`
    seconds), written into `r`; its text for the log. Pinned (cpus None): per core
    (other_pct, steal_pct: LOAD_CORE, SERVER_CORE), disturbed_pct the worse core. Unpinned
    (cpus: the set h2load and the server ran on, anywhere in it): other work counted on
    those CPUs together (other_all_pct, steal_all_pct), disturbed_pct their sum."""
    if cpus is None:
        other = [max(0.0, 100.0 * (busy.get(core, 0) - own) / elapsed)
                 for core, own in ((LOAD_CORE, r["client_cpu_s"]), (SERVER_CORE, server_cpu))]
        r["other_pct"] = tuple(other)
        r["steal_pct"] = tuple(100.0 * steal.get(c, 0) / elapsed for c in (LOAD_CORE, SERVER_CORE))
        r["disturbed_pct"] = max(o + st for o, st in zip(r["other_pct"], r["steal_pct"]))
        return (f"other work used {other[0]:.0f}% of core {LOAD_CORE} and {other[1]:.0f}% of core "
                f"{SERVER_CORE}, the hypervisor (steal) {r['steal_pct'][0]:.0f}% and {r['steal_pct'][1]:.0f}%")
    own = r["client_cpu_s"] + server_cpu
    r["other_all_pct"] = max(0.0, 100.0 * (sum(busy.get(c, 0) for c in cpus) - own) / elapsed)
    r["steal_all_pct"] = 100.0 * sum(steal.get(c, 0) for c in cpus) / elapsed
    r["disturbed_pct"] = r["other_all_pct"] + r["steal_all_pct"]
    return (f"other work used {r['other_all_pct']:.0f}% of a core on CPUs {cpu_list(cpus)} together, "
            f"the hypervisor (steal) {r['steal_all_pct']:.0f}%")


class RssSampler:
    """Samples VmRSS of the process under load every 100 ms; keeps the max per server."""

    def __init__(self):
        self.active = None  # (name, pid)
        self.max_kib = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.wait(0.1):
            active = self.active
            if active is None:
                continue
            name, pid = active
            with contextlib.suppress(Exception):
                kib = vm_rss_kib(pid)
                self.max_kib[name] = max(self.max_kib.get(name, 0), kib)

    @contextlib.contextmanager
    def sampling(self, name, pid):
        kib = vm_rss_kib(pid)
        self.max_kib[name] = max(self.max_kib.get(name, 0), kib)
        self.active = (name, pid)
        try:
            yield
        finally:
            self.active = None
            with contextlib.suppress(Exception):
                self.max_kib[name] = max(self.max_kib.get(name, 0), vm_rss_kib(pid))

    def close(self):
        self._stop.set()
        self._thread.join()


# --- TLS client ----------------------------------------------------------------

def tls_context(ca_file):
    context = ssl.create_default_context(cafile=str(ca_file))
    return context


def post(port, path, body, context, timeout=10.0):
    """One POST over a new TLS connection: (status, body bytes)."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# The probe's deadline: under cpp-httplib's keep-alive timeout (5 s), after
# which a thread of a full pool would take the next connection.
PROBE_SECONDS = 4.0


def probe_connections(port, connections, context, body, deadline=PROBE_SECONDS):
    """How many of `connections` keep-alive connections, opened at once, each get an
    answer within `deadline` seconds. A server holding a thread per connection (a
    pool of 32) answers the connections past its pool only when others close or
    time out; h2load then hangs at the end of its run, so such a row is left out."""
    answered = []
    lock = threading.Lock()
    done = threading.Event()
    remaining = [connections]

    def client():
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=deadline)
        try:
            conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                with lock:
                    answered.append(1)
        except (OSError, http.client.HTTPException):
            pass
        finally:
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    done.set()
            # Held open until every client is done, as h2load's connections are.
            done.wait(deadline + 5)
            conn.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(deadline + 10)
    return len(answered)


def check_answer(name, status, answer):
    if status != 200:
        raise BenchError(f"{name}: POST /mutate answered {status}: {answer[:500]!r}")
    try:
        review = json.loads(answer)
        allowed = review["response"]["allowed"]
        patch = review["response"].get("patch")
    except (ValueError, KeyError, TypeError) as e:
        raise BenchError(f"{name}: POST /mutate answer is not an AdmissionReview ({e}): {answer[:500]!r}")
    if not allowed or not patch:
        raise BenchError(f"{name}: the benchmark workload must be allowed with a patch; the answer: {answer[:500]!r}")


# --- certificates ----------------------------------------------------------------

def make_certificates(directory):
    """A CA and a server certificate for 127.0.0.1 (ECDSA P-256, like gpu-sizer's own)."""
    d = Path(directory)
    ca_key, ca_crt = d / "ca.key", d / "ca.crt"
    key, csr, crt, ext = d / "tls.key", d / "tls.csr", d / "tls.crt", d / "tls.ext"
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-days", "2", "-subj", "/CN=gpu-sizer bench CA", "-keyout", ca_key, "-out", ca_crt])
    run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", csr])
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
         "-days", "2", "-sha256", "-extfile", ext, "-out", crt])
    return ca_crt, crt, key


# --- h2load ----------------------------------------------------------------------

H2LOAD_REQUESTS = re.compile(
    r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout")
H2LOAD_STATUS = re.compile(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx")
H2LOAD_FINISHED = re.compile(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s, ([\d.]+)([KMG]?B)/s")


def h2load_argv(port, connections, seconds, workload, warm_up, rps=None, log_file=None, core=LOAD_CORE):
    argv = ["taskset", "-c", str(core), "h2load", "--h1", "-t1", "-c", str(connections), "-D", str(seconds)]
    if warm_up:
        argv += ["--warm-up-time", str(warm_up)]
    if rps is not None:
        argv += [f"--rps={rps:g}"]
    if log_file is not None:
        argv += [f"--log-file={log_file}"]
    argv += ["-H", "Content-Type: application/json", "-d", str(workload), f"https://127.0.0.1:{port}/mutate"]
    return argv


def run_h2load(name, argv, seconds, warm_up):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + warm_up + 30,
                                preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{name}: h2load did not finish within {seconds + warm_up + 30:g} s: {shlex.join(argv)}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = result.stdout + result.stderr
    requests = H2LOAD_REQUESTS.search(out)
    status = H2LOAD_STATUS.search(out)
    finished = H2LOAD_FINISHED.search(out)
    if result.returncode != 0 or not (requests and status and finished):
        raise BenchError(f"{name}: h2load did not run ({result.returncode}): {shlex.join(argv)}\n{out[-3000:]}")
    total, started, done, succeeded, failed, errored, timeout = map(int, requests.groups())
    ok2xx, r3xx, r4xx, r5xx = map(int, status.groups())
    # The 2xx count may differ from `done` by a request or two: h2load counts a
    # status when the header arrives, a request when it ends, and the warm-up
    # and the end of the run cut between the two.
    if failed or errored or timeout or r3xx or r4xx or r5xx or done == 0 or ok2xx == 0:
        raise BenchError(f"{name}: h2load reports failed requests (a benchmark error, not a result): "
                         f"{requests.group(0)}; {status.group(0)}\n{shlex.join(argv)}\n{out[-2000:]}")
    elapsed = float(finished.group(1)) / (1000.0 if finished.group(2) == "ms" else 1.0)
    client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    protocol = re.search(r"TLS Protocol: (\S+)", out)
    cipher = re.search(r"Cipher: (\S+)", out)
    return {"done": done, "rps": float(finished.group(3)), "elapsed": elapsed, "client_cpu_s": client_cpu,
            "tls": f"{protocol.group(1)}, {cipher.group(1)}" if protocol and cipher else "unknown", "output": out}


def percentile(sorted_values, p):
    """Nearest-rank percentile of a sorted list."""
    if not sorted_values:
        raise BenchError("no requests in the h2load log")
    rank = max(1, int(-(-p * len(sorted_values) // 100)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def read_latency_log(path):
    """The sorted durations (µs) of the answered requests, and how many of them straddle the
    warm-up's end (their status line came during the warm-up: h2load logs status 0)."""
    durations = []
    straddling = 0
    with open(path) as f:
        for line in f:
            fields = line.split("\t")
            if len(fields) < 3:
                continue
            status = int(fields[1])
            if status == 0:
                straddling += 1
            elif not 200 <= status < 300:  # -1: a failed stream
                raise BenchError(f"{path}: a request with status {status}")
            durations.append(int(fields[2]))
    durations.sort()
    return durations, straddling


# --- the machine ------------------------------------------------------------------

def machine():
    """The CPU, cores, kernel and RAM, for the document."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kib = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(),
            "ram": f"{mem_kib / 1024 / 1024:.1f} GiB"}


def versions(gpu_sizer):
    """The tools' versions, for the document."""
    def first_line(argv):
        with contextlib.suppress(Exception):
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        return "unknown"
    httplib = first_line(["pkg-config", "--modversion", "cpp-httplib"])
    return {
        "g++": first_line(["g++", "--version"]),
        "go": first_line(["go", "version"]),
        "h2load": first_line(["h2load", "--version"]),
        "OpenSSL": first_line(["openssl", "version"]),
        "cpp-httplib": httplib,
        "gpu-sizer": first_line([gpu_sizer, "--version"]),
        "Python": platform.python_version(),
    }
