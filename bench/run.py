#!/usr/bin/env python3
"""The load benchmark over TLS (issue #7; `make bench`, docs/performance.md).

Four servers, measured in the same run on the same machine:
  ours  build/gpu-sizer serve (the webhook as deployed: logging, metrics, decisions)
  ours-httplib  the same with --transport httplib (cpp-httplib, a thread per connection)
  peer  bench/peer-go, a Go standard-library webhook giving the same answers
  bare  build/gpu-sizer-bare-tls, gpu-sizer's own transport and TLS set-up
        answering a fixed body (our exact answer): the ceiling of the transport.

The load generator is h2load (Debian's nghttp2-client) over HTTP/1.1 with
keep-alive and TLS, pinned to core 0; the servers are pinned to core 1.
For each server and connection count: throughput at saturation, then the
latency (p50/p99/max from h2load's per-request log) at one fixed offered
rate, the same for all the servers (half of the lowest saturation
throughput at that connection count); resident memory idle and under load;
start-up time to the first answered POST /mutate; the micro benchmarks
of the handler; and the handler on hostile reviews (issue 25: the shapes
that cost it the most per byte, up to 8 MiB). The result is written as a
Markdown document.

Before each h2load run, N keep-alive connections are opened at once: a
server that cannot answer them all (a thread per connection, N past its
pool) is marked "not served" at that N instead (h2load would hang on the
unserved connections). A run during which other processes took more than
DISTURBED_PCT of a core is run again, up to 3 times, keeping the least
disturbed; the document reports the other load and the hypervisor's steal.

  bench/run.py --build DIR --out docs/performance.md [--seconds S] [--quick]

--quick (a few seconds per server, 1 and 16 connections) writes to a scratch
file in the build directory (DIR/bench-run/) and is the ctest test bench_short: it checks that everything ran
(servers answered, no failed requests, the answers agree), never timings.

Exit status: 0 when everything ran, whatever the numbers (a target not met,
or a server not serving 64 connections, is data, not a failure); 1 when
something did not run, a request failed or gpu-sizer and the peer disagree
(and, with --quick, when a server does not serve 1 or 16 connections). Python standard library only.
"""

import argparse
import contextlib
import ctypes
import datetime
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
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent
BENCH = SOURCE / "bench"
WORKLOADS = BENCH / "workloads"
MAIN_WORKLOAD = "pod-12k-mutated.json"
EXTRA_WORKLOADS = ["pod-3k-mutated.json", "pod-60k-mutated.json"]
EXTRA_CONNECTIONS = 16
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

    def start(self, argv, log_path, core=SERVER_CORE):
        full = ["taskset", "-c", str(core)] + [str(a) for a in argv]
        out = open(log_path, "wb")
        try:
            proc = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=_die_with_parent)
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


def h2load_argv(port, connections, seconds, workload, warm_up, rps=None, log_file=None):
    argv = ["taskset", "-c", str(LOAD_CORE), "h2load", "--h1", "-t1", "-c", str(connections), "-D", str(seconds)]
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


# --- the servers -------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.build = Path(args.build).resolve()
        self.work = self.build / "bench-run"
        self.work.mkdir(parents=True, exist_ok=True)
        self.procs = Processes()
        self.results = {"throughput": {}, "latency": {}, "rss_idle": {}, "rss_load": {}, "startup": {},
                        "not_served": {}, "extra_not_served": {},
                        "extra": {}, "micro": [], "cpu": {}}
        self.commands = []
        self.other_load = []  # (% of core 0, % of core 1) used by other processes, per load run
        self.background = {}
        self.steal = []  # (% of core 0, % of core 1) stolen by the hypervisor, per load run
        self.binaries = {
            "ours": self.built("gpu-sizer"),
            "ours-httplib": self.built("gpu-sizer"),
            "bare": self.built("gpu-sizer-bare-tls", "bench/bare"),
            "peer": self.build / "gpu-sizer-peer-go",
            "micro": self.built("gpu-sizer-micro-bench", "bench"),
        }
        if args.quick:
            self.connections = [1, 16]
            self.seconds = args.seconds or 1
            self.latency_seconds = self.seconds
            # Never 0: without a warm-up, h2load can start its duration timer
            # while connections are still in their TLS handshake, and hang
            # at the end of the run (seen under load). Whole seconds only.
            self.warm_up = 1
            self.starts = 1
            self.max_attempts = 1
            self.retry_budget_s = 0.0
        else:
            self.connections = [1, 16, 64]
            self.seconds = args.seconds or 10
            self.latency_seconds = self.seconds
            self.warm_up = 1
            self.starts = 3
            self.max_attempts = 3
            # Seconds the reruns of disturbed runs may add to the whole benchmark.
            self.retry_budget_s = 150.0

    def built(self, name, subdirectory=None):
        """A target's binary: in the build directory, or in its CMake subdirectory."""
        path = self.build / name
        if not path.exists() and subdirectory and (self.build / subdirectory / name).exists():
            return self.build / subdirectory / name
        return path

    # Each server's command line; port 0 is never used, so each prints the
    # port it was given.
    def server_argv(self, name, port, body_file=None):
        if name in ("ours", "ours-httplib"):
            transport = ["--transport", "httplib"] if name == "ours-httplib" else []
            return [self.binaries["ours"], "serve", "--listen", f"127.0.0.1:{port}", "--tls-cert", self.cert,
                    "--tls-key", self.key] + transport
        if name == "peer":
            return [self.binaries["peer"], "-listen", f"127.0.0.1:{port}", "-cert", self.cert, "-key", self.key]
        return [self.binaries["bare"], "--listen", f"127.0.0.1:{port}", "--cert", self.cert, "--key", self.key,
                "--body", body_file or self.body_file]

    def start_server(self, name, tag="", body_file=None):
        port = free_port()
        proc = self.procs.start(self.server_argv(name, port, body_file), self.work / f"{name}{tag}.log")
        port = wait_listening(proc)
        return proc, port

    def check_tools(self):
        missing = [str(p) for k, p in self.binaries.items() if k != "peer" and not p.exists()]
        for tool in ("h2load", "taskset", "openssl", "go"):
            if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
                missing.append(tool)
        if not (BENCH / "peer-go").is_dir() or not list((BENCH / "peer-go").glob("*.go")):
            missing.append(str(BENCH / "peer-go") + " (no Go sources)")
        if missing:
            raise BenchError("missing: " + ", ".join(missing) +
                             " (build the targets gpu-sizer gpu-sizer-micro-bench gpu-sizer-bare-tls; "
                             "apt-get install nghttp2-client util-linux openssl golang-go)")
        if (os.cpu_count() or 1) < 2:
            raise BenchError("the benchmark pins the load generator and the servers to two different cores; "
                             "this machine has one")

    def build_peer(self):
        env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", CGO_ENABLED="0")
        if "GOCACHE" not in env and "HOME" not in env and "XDG_CACHE_HOME" not in env:
            env["GOCACHE"] = str(self.build / "go-cache")
        log(f"go build the peer into {self.binaries['peer']}")
        run(["go", "build", "-o", self.binaries["peer"], "."], cwd=BENCH / "peer-go", env=env, timeout=600)
        self.commands.append(("the Go peer", f"cd bench/peer-go && GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=0 "
                                             f"go build -o {self.binaries['peer']} ."))

    def versions(self):
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
            "gpu-sizer": first_line([self.binaries["ours"], "--version"]),
            "Python": platform.python_version(),
        }

    @staticmethod
    def machine():
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

    # --- measurements ---------------------------------------------------------

    def compare_answers(self, ours_port, peer_port):
        script = BENCH / "compare_answers.py"
        if not script.exists():
            log("bench/compare_answers.py not found: the answers of gpu-sizer and the peer are not compared")
            self.results["compared"] = False
            return
        argv = [sys.executable, script, f"https://127.0.0.1:{ours_port}", f"https://127.0.0.1:{peer_port}",
                self.ca, WORKLOADS]
        log("compare the answers of gpu-sizer and the peer: " + shlex.join(str(a) for a in argv))
        self.commands.append(("the answers of gpu-sizer and the peer, compared before measuring",
                              shlex.join(["python3"] + [str(a) for a in argv[1:]]).replace(str(ours_port), "PORT1")
                              .replace(str(peer_port), "PORT2")))
        result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise BenchError("gpu-sizer and the Go peer disagree (compare_answers.py exited "
                             f"{result.returncode}); not comparing unlike with like:\n"
                             f"{result.stdout[-4000:]}{result.stderr[-4000:]}")
        self.results["compared"] = True
        lines = (result.stdout + result.stderr).strip().splitlines()
        self.results["compare_summary"] = lines[-1] if lines else ""

    def measure_startup(self, name):
        """Milliseconds from process start to the first answered POST /mutate."""
        body = (WORKLOADS / MAIN_WORKLOAD).read_bytes()
        context = tls_context(self.ca)
        times = []
        for i in range(self.starts):
            port = free_port()
            argv = self.server_argv(name, port)
            started = time.monotonic()
            proc = self.procs.start(argv, self.work / f"startup-{name}-{i}.log")
            try:
                while True:
                    if proc.poll() is not None:
                        raise BenchError(f"{name} exited with {proc.returncode} while starting: "
                                         f"{proc.log_path.read_text(errors='replace')[-2000:]}")
                    try:
                        status, answer = post(port, "/mutate", body, context, timeout=5)
                    except (ConnectionError, OSError):
                        if time.monotonic() - started > 30:
                            raise BenchError(f"{name} did not answer within 30 s of starting")
                        time.sleep(0.002)
                        continue
                    check_answer(name, status, answer)
                    break
                times.append((time.monotonic() - started) * 1000.0)
            finally:
                self.procs.stop(proc)
        self.results["startup"][name] = {"median": statistics.median(times), "best": min(times), "all": times}

    def load_run(self, name, proc, label, argv, seconds, parse=None, log_file=None):
        """One h2load run against the server `proc`, run again (up to 3 times in all, within
        a retry budget for the whole benchmark, after waiting up to 30 s for the machine to
        calm down) when other work took more than DISTURBED_PCT of a core meanwhile; the
        least disturbed attempt is kept. `parse` adds fields from h2load's log file
        `log_file`, which h2load appends to: it is removed before each attempt."""
        attempts = []
        for attempt in range(self.max_attempts):
            if attempt > 0:
                retry_started = time.monotonic()
                self.wait_quiet(min(30.0, self.retry_budget_s))
            if log_file is not None:
                with contextlib.suppress(FileNotFoundError):
                    log_file.unlink()
            cpu_before = cpu_seconds(proc.pid)
            busy_before, steal_before, started = core_busy_seconds(), core_busy_seconds(True), time.monotonic()
            with self.sampler.sampling(name, proc.pid):
                r = run_h2load(label, argv, seconds, self.warm_up)
            elapsed = time.monotonic() - started
            busy_after, steal_after = core_busy_seconds(), core_busy_seconds(True)
            server_cpu = cpu_seconds(proc.pid) - cpu_before
            del r["output"]
            if parse:
                r.update(parse(r))
            r["server_cpu_pct"] = 100.0 * server_cpu / elapsed
            r["client_cpu_pct"] = 100.0 * r["client_cpu_s"] / elapsed
            other = [max(0.0, 100.0 * (busy_after.get(core, 0) - busy_before.get(core, 0) - own) / elapsed)
                     for core, own in ((LOAD_CORE, r["client_cpu_s"]), (SERVER_CORE, server_cpu))]
            r["other_pct"] = tuple(other)
            r["steal_pct"] = tuple(100.0 * (steal_after.get(c, 0) - steal_before.get(c, 0)) / elapsed
                                   for c in (LOAD_CORE, SERVER_CORE))
            # Taken from the run: by other work, or by the hypervisor (steal).
            r["disturbed_pct"] = max(o + st for o, st in zip(r["other_pct"], r["steal_pct"]))
            attempts.append(r)
            if attempt > 0:
                self.retry_budget_s -= time.monotonic() - retry_started
            if r["disturbed_pct"] <= DISTURBED_PCT:
                break
            again = len(attempts) < self.max_attempts and self.retry_budget_s > 0
            log(f"  disturbed: other work used {other[0]:.0f}% of core {LOAD_CORE} and {other[1]:.0f}% of core "
                f"{SERVER_CORE} during the run, the hypervisor (steal) {r['steal_pct'][0]:.0f}% and "
                f"{r['steal_pct'][1]:.0f}%" + ("; running it again" if again else ""))
            if not again:
                break
        best = min(attempts, key=lambda a: a["disturbed_pct"])
        best["attempts"] = len(attempts)
        self.other_load.append(best["other_pct"])
        self.steal.append(best["steal_pct"])
        return best

    @staticmethod
    def wait_quiet(limit_s):
        """Waits (at most limit_s) for a second in which no core was more than 10% busy."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            before = core_busy_seconds()
            time.sleep(1.0)
            after = core_busy_seconds()
            if max(after[c] - before[c] for c in after) < 0.10:
                return True
        return False

    def saturation(self, name, proc, port, connections, workload=MAIN_WORKLOAD):
        argv = h2load_argv(port, connections, self.seconds, WORKLOADS / workload, self.warm_up)
        return self.load_run(name, proc, f"{name} c={connections} {workload}", argv, self.seconds)

    def fixed_rate(self, name, proc, port, connections, rate):
        log_file = self.work / f"latency-{name}-c{connections}.tsv"
        argv = h2load_argv(port, connections, self.latency_seconds, WORKLOADS / MAIN_WORKLOAD, self.warm_up,
                           rps=rate / connections, log_file=log_file)

        def parse(r):
            durations, straddling = read_latency_log(log_file)
            if len(durations) != r["done"]:
                raise BenchError(f"{log_file}: {len(durations)} requests logged, h2load counted {r['done']}")
            return {"rate": rate, "achieved": r["rps"], "requests": len(durations), "straddling": straddling,
                    "p50_us": percentile(durations, 50), "p99_us": percentile(durations, 99),
                    "max_us": durations[-1]}

        return self.load_run(name, proc, f"{name} c={connections} at {rate:g} req/s", argv, self.latency_seconds,
                             parse, log_file)

    def micro(self):
        min_time = "0.01" if self.args.quick else "0.5"
        argv = ["taskset", "-c", str(SERVER_CORE), self.binaries["micro"], "--benchmark_format=json",
                "--benchmark_filter=handler", f"--benchmark_min_time={min_time}"]
        self.commands.append(("micro benchmarks (pinned to core 1)", shlex.join(str(a) for a in argv)))
        log("micro benchmarks: " + shlex.join(str(a) for a in argv))
        busy_before, steal_before, started = core_busy_seconds(), core_busy_seconds(True), time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = run(argv, timeout=900)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        elapsed = time.monotonic() - started
        own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        other = core_busy_seconds()[SERVER_CORE] - busy_before[SERVER_CORE] - own
        steal = core_busy_seconds(True)[SERVER_CORE] - steal_before[SERVER_CORE]
        self.results["micro_disturbed"] = (max(0.0, 100.0 * other / elapsed), 100.0 * steal / elapsed)
        data = json.loads(out)
        rows = []
        for b in data.get("benchmarks", []):
            if b.get("error_occurred"):
                raise BenchError(f"micro benchmark {b.get('name')}: {b.get('error_message')}")
            unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
            rows.append({"name": b["name"], "real_us": b["real_time"] * unit, "cpu_us": b["cpu_time"] * unit,
                         "iterations": b["iterations"], "mb_s": b.get("bytes_per_second", 0) / 1e6})
        if not rows:
            raise BenchError("the micro benchmarks ran no handler benchmark")
        self.results["micro"] = rows
        self.results["micro_context"] = data.get("context", {})

    def nodes(self):
        """The node inventory (issue #17): a full relist of 5,000 generated
        nodes, the memory the inventory keeps, and the handler on the main
        workload with the inventory against without, in process on core 1;
        then the webhook's RSS with and without those nodes (bench/node_rss.py)."""
        min_time = "0.01" if self.args.quick else "1"
        argv = ["taskset", "-c", str(SERVER_CORE), self.binaries["micro"], "--benchmark_format=json",
                "--benchmark_filter=nodes_", f"--benchmark_min_time={min_time}"]
        self.commands.append(("node inventory benchmarks (pinned to core 1)", shlex.join(str(a) for a in argv)))
        log("node inventory: " + shlex.join(str(a) for a in argv))
        data = json.loads(run(argv, timeout=900))
        rows = {}
        for b in data.get("benchmarks", []):
            if b.get("error_occurred"):
                raise BenchError(f"node benchmark {b.get('name')}: {b.get('error_message')}")
            unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
            rows[b["name"]] = {"real_us": b["real_time"] * unit, "cpu_us": b["cpu_time"] * unit,
                               "bytes_per_node": b.get("bytes_per_node"), "classes": b.get("classes"),
                               "nodes": b.get("nodes"), "list_mb": b.get("list_MB")}
        rss_argv = ["python3", str(BENCH / "node_rss.py"), str(self.args.build)]
        self.commands.append(("the webhook's RSS with 5,000 nodes", shlex.join(rss_argv)))
        rows["rss"] = json.loads(run(rss_argv, timeout=300))
        self.results["nodes"] = rows

    def hostile(self):
        """The handler on the reviews that cost it the most per byte (issue 25,
        bench/micro/hostile_bench.cpp), in process on core 1: each shape at 16,
        64 and 256 KiB and 8 MiB on both endpoints, and the issue's pods and
        workflows by count. --quick runs the 16 KiB ones only."""
        min_time = "0.01" if self.args.quick else "0.2"
        pattern = "^hostile/.*/16KiB/" if self.args.quick else "^hostile"
        argv = ["taskset", "-c", str(SERVER_CORE), self.binaries["micro"], "--benchmark_format=json",
                f"--benchmark_filter={pattern}", f"--benchmark_min_time={min_time}"]
        self.commands.append(("hostile reviews (pinned to core 1)", shlex.join(str(a) for a in argv)))
        log("hostile reviews: " + shlex.join(str(a) for a in argv))
        data = json.loads(run(argv, timeout=3600))
        rows = []
        for b in data.get("benchmarks", []):
            if b.get("error_occurred"):
                raise BenchError(f"hostile benchmark {b.get('name')}: {b.get('error_message')}")
            unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
            family, shape, endpoint, size = b["name"].split("/")[:4]
            rows.append({"family": family, "shape": shape, "endpoint": endpoint, "size": size,
                         "ms": b["real_time"] * unit, "cpu_ms": b["cpu_time"] * unit,
                         "items": b.get("items", 0), "kib": b.get("body_KiB", 0)})
        if not rows:
            raise BenchError("the hostile benchmarks ran nothing")
        self.results["hostile"] = rows

    # --- the run ----------------------------------------------------------------

    def run(self):
        self.check_tools()
        self.build_peer()
        started = datetime.datetime.now(datetime.timezone.utc)
        self.results["date"] = started.strftime("%Y-%m-%d %H:%M UTC")
        self.results["machine"] = self.machine()
        self.results["versions"] = self.versions()
        # This script (and so h2load's parent, the TLS client of the start-up
        # measurement) stays off the servers' core.
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {LOAD_CORE})

        # What else the machine is doing: the cores' use over 1 s before any
        # server starts.
        before, t0 = core_busy_seconds(), time.monotonic()
        time.sleep(1.0)
        after, elapsed = core_busy_seconds(), time.monotonic() - t0
        self.background = {c: 100.0 * (after[c] - before[c]) / elapsed for c in after}
        log("background load before the run: " + ", ".join(f"core {c} {v:.0f}%" for c, v in sorted(self.background.items())))

        certs = self.work / "certs"
        certs.mkdir(exist_ok=True)
        self.ca, self.cert, self.key = make_certificates(certs)
        self.sampler = RssSampler()
        try:
            self._measure()
        finally:
            self.sampler.close()
            self.procs.stop_all()
        self.results["wall_s"] = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()

    def _measure(self):
        context = tls_context(self.ca)
        main_body = (WORKLOADS / MAIN_WORKLOAD).read_bytes()

        log("start gpu-sizer (both transports) and the Go peer")
        ours, ours_port = self.start_server("ours")
        httplib, httplib_port = self.start_server("ours-httplib")
        peer, peer_port = self.start_server("peer")
        status, answer = post(ours_port, "/mutate", main_body, context)
        check_answer("gpu-sizer", status, answer)
        self.body_file = self.work / "answer-pod-12k-mutated.json"
        self.body_file.write_bytes(answer)
        status, peer_answer = post(peer_port, "/mutate", main_body, context)
        check_answer("peer", status, peer_answer)
        self.results["answer_bytes"] = {"ours": len(answer), "peer": len(peer_answer)}
        # Idle: after start-up and one answered request.
        time.sleep(0.2)
        status, httplib_answer = post(httplib_port, "/mutate", main_body, context)
        if status != 200 or httplib_answer != answer:
            raise BenchError("gpu-sizer's two transports give different answers")
        self.results["rss_idle"]["ours"] = vm_rss_kib(ours.pid)
        self.results["rss_idle"]["ours-httplib"] = vm_rss_kib(httplib.pid)
        self.results["rss_idle"]["peer"] = vm_rss_kib(peer.pid)
        self.compare_answers(ours_port, peer_port)

        log("start the bare TLS server with gpu-sizer's answer as its body")
        bare, bare_port = self.start_server("bare")
        status, bare_answer = post(bare_port, "/mutate", main_body, context)
        if status != 200 or bare_answer != answer:
            raise BenchError("the bare TLS server does not answer gpu-sizer's bytes")
        time.sleep(0.2)
        self.results["rss_idle"]["bare"] = vm_rss_kib(bare.pid)
        servers = {"ours": (ours, ours_port), "ours-httplib": (httplib, httplib_port), "peer": (peer, peer_port),
                   "bare": (bare, bare_port)}

        self.commands += [
            ("gpu-sizer (core 1)", shlex.join(["taskset", "-c", "1"] + [str(a) for a in self.server_argv("ours", "PORT")])),
            ("gpu-sizer on cpp-httplib (core 1)",
             shlex.join(["taskset", "-c", "1"] + [str(a) for a in self.server_argv("ours-httplib", "PORT")])),
            ("Go peer (core 1)", shlex.join(["taskset", "-c", "1"] + [str(a) for a in self.server_argv("peer", "PORT")])),
            ("bare TLS server (core 1)", shlex.join(["taskset", "-c", "1"] + [str(a) for a in self.server_argv("bare", "PORT")])),
            ("throughput at saturation (core 0)", shlex.join(str(a) for a in h2load_argv(
                "PORT", "N", self.seconds, WORKLOADS / MAIN_WORKLOAD, self.warm_up))),
            ("latency at a fixed rate R (core 0)", shlex.join(str(a) for a in h2load_argv(
                "PORT", "N", self.latency_seconds, WORKLOADS / MAIN_WORKLOAD, self.warm_up, log_file="LOG"))
             .replace("--log-file=LOG", "--rps=R/N --log-file=LOG")),
        ]

        for connections in self.connections:
            served = []
            for name in SERVERS:
                proc, port = servers[name]
                answered = probe_connections(port, connections, context, main_body)
                if answered < connections:
                    log(f"{name}: only {answered} of {connections} connections opened at once were answered within "
                        f"{PROBE_SECONDS:g} s: no h2load run at this connection count (it would hang)")
                    if self.args.quick:
                        raise BenchError(f"{name} did not serve {connections} connections at once "
                                         f"({answered} answered within {PROBE_SECONDS:g} s)")
                    self.results["not_served"][(name, connections)] = answered
                    continue
                served.append(name)
                # The probe's connections are closed; let the server see it.
                time.sleep(0.2)
                log(f"saturation: {name}, {connections} connection(s), {self.seconds} s")
                r = self.saturation(name, proc, port, connections)
                self.results["throughput"][(name, connections)] = r
                self.results.setdefault("tls", {})[name] = r["tls"]
                log(f"  {r['rps']:.0f} req/s (server CPU {r['server_cpu_pct']:.0f}%, h2load CPU "
                    f"{r['client_cpu_pct']:.0f}%, other work {r['other_pct'][0]:.0f}% / {r['other_pct'][1]:.0f}%, "
                    f"steal {r['steal_pct'][0]:.0f}% / {r['steal_pct'][1]:.0f}%)")
            if not served:
                continue
            lowest = min(self.results["throughput"][(n, connections)]["rps"] for n in served)
            rate = max(1, int(lowest / 2))
            for name in served:
                proc, port = servers[name]
                log(f"fixed rate: {name}, {connections} connection(s), {rate} req/s, {self.latency_seconds} s")
                r = self.fixed_rate(name, proc, port, connections, rate)
                self.results["latency"][(name, connections)] = r
                log(f"  achieved {r['achieved']:.0f} req/s, p50 {r['p50_us']} us, p99 {r['p99_us']} us, "
                    f"max {r['max_us']} us ({r['requests']} requests; "
                    f"other work {r['other_pct'][0]:.0f}% / {r['other_pct'][1]:.0f}%, "
                    f"steal {r['steal_pct'][0]:.0f}% / {r['steal_pct'][1]:.0f}%)")

        if not self.args.quick:
            for workload in EXTRA_WORKLOADS:
                body = (WORKLOADS / workload).read_bytes()
                status, extra_answer = post(ours_port, "/mutate", body, context)
                check_answer("gpu-sizer", status, extra_answer)
                extra_body = self.work / f"answer-{workload}"
                extra_body.write_bytes(extra_answer)
                extra_bare, extra_port = self.start_server("bare", tag=f"-{workload}", body_file=extra_body)
                try:
                    targets = {"ours": (ours, ours_port), "ours-httplib": (httplib, httplib_port),
                               "peer": (peer, peer_port), "bare": (extra_bare, extra_port)}
                    for name in SERVERS:
                        proc, port = targets[name]
                        answered = probe_connections(port, EXTRA_CONNECTIONS, context, body)
                        if answered < EXTRA_CONNECTIONS:
                            self.results["extra_not_served"][(name, workload)] = answered
                            log(f"{name}: only {answered} of {EXTRA_CONNECTIONS} connections answered: no h2load run")
                            continue
                        time.sleep(0.2)
                        log(f"saturation: {name}, {EXTRA_CONNECTIONS} connections, {workload}, {self.seconds} s")
                        r = self.saturation(name, proc, port, EXTRA_CONNECTIONS, workload)
                        self.results["extra"][(name, workload)] = r
                        log(f"  {r['rps']:.0f} req/s (other work {r['other_pct'][0]:.0f}% / {r['other_pct'][1]:.0f}%, "
                            f"steal {r['steal_pct'][0]:.0f}% / {r['steal_pct'][1]:.0f}%)")
                finally:
                    self.procs.stop(extra_bare)

        for name, kib in self.sampler.max_kib.items():
            self.results["rss_load"][name] = kib
        for name in SERVERS:
            if servers[name][0].poll() is not None:
                raise BenchError(f"{name} exited during the benchmark ({servers[name][0].returncode})")
        for name, (proc, _) in servers.items():
            self.procs.stop(proc)

        for name in SERVERS:
            log(f"start-up to first answer: {name}, {self.starts} start(s)")
            self.measure_startup(name)
            s = self.results["startup"][name]
            log(f"  median {s['median']:.1f} ms, best {s['best']:.1f} ms")

        self.micro()
        self.nodes()
        self.hostile()


# --- the document --------------------------------------------------------------------

def fmt_us(us):
    return f"{us / 1000:.2f} ms" if us >= 10000 else f"{us} µs"


def mark(result):
    """† on a number measured while other work and the hypervisor took more than DISTURBED_PCT of a core."""
    return " †" if result["disturbed_pct"] > DISTURBED_PCT else ""


def fmt_mib(kib):
    return f"{kib / 1024:.1f} MiB"


def ratio_row(text, value, bound, at_least, unit_text):
    met = value >= bound if at_least else value <= bound
    return f"| {text} | {unit_text} | {'≥' if at_least else '≤'} {bound:g} | {'met' if met else '**NOT met**'} |", met


def targets(results):
    rows = []
    t = results["throughput"]
    lat = results["latency"]
    def unmeasured(text, bound):
        return f"| {text} | not measured (a server did not serve 16 connections) | {bound} | **NOT met** |", False

    for other, label, bound in (("peer", "Go peer", 2.0), ("bare", "bare TLS", 0.8)):
        text = f"throughput at 16 connections, gpu-sizer / {label}"
        if ("ours", 16) in t and (other, 16) in t:
            o, x = t[("ours", 16)]["rps"], t[(other, 16)]["rps"]
            dagger = mark(t[("ours", 16)]) or mark(t[(other, 16)])
            rows.append(ratio_row(text, o / x, bound, True, f"{o:.0f} / {x:.0f} = {o / x:.2f}x{dagger}"))
        else:
            rows.append(unmeasured(text, f"≥ {bound:g}"))
    text = "p99 at the fixed rate over 16 connections, gpu-sizer / Go peer"
    if ("ours", 16) in lat and ("peer", 16) in lat:
        o, p = lat[("ours", 16)]["p99_us"], lat[("peer", 16)]["p99_us"]
        dagger = mark(lat[("ours", 16)]) or mark(lat[("peer", 16)])
        rows.append(ratio_row(f"p99 at {lat[('ours', 16)]['rate']} req/s over 16 connections, gpu-sizer / Go peer",
                              o / p, 0.5, False, f"{fmt_us(o)} / {fmt_us(p)} = {o / p:.2f}x{dagger}"))
    else:
        rows.append(unmeasured(text, "≤ 0.5"))
    for key, what in (("rss_load", "under load"), ("rss_idle", "idle")):
        o, p = results[key]["ours"], results[key]["peer"]
        rows.append(ratio_row(f"resident memory {what}, gpu-sizer / Go peer", o / p, 0.5, False,
                              f"{fmt_mib(o)} / {fmt_mib(p)} = {o / p:.2f}x"))
    handler = next((m for m in results["micro"] if m["name"] == f"handler/{MAIN_WORKLOAD}"), None)
    if handler:
        met = handler["cpu_us"] < HANDLER_TARGET_US
        rows.append((f"| handler CPU time for {MAIN_WORKLOAD} (micro benchmark) | {handler['cpu_us']:.1f} µs | "
                     f"< {HANDLER_TARGET_US:g} µs | {'met' if met else '**NOT met**'} |", met))
    nodes = results.get("nodes")
    if nodes:
        without, with_nodes = nodes["nodes_decide/without_inventory"], nodes["nodes_decide/with_5000_nodes"]
        ratio = with_nodes["cpu_us"] / without["cpu_us"]
        rows.append((f"| handler with a 5,000-node inventory / without (micro benchmark) | "
                     f"{with_nodes['cpu_us']:.1f} / {without['cpu_us']:.1f} µs = {ratio:.2f}x | ≤ 1.10x | "
                     f"{'met' if ratio <= 1.10 else '**NOT met**'} |", ratio <= 1.10))
        per_node = nodes["nodes_relist"]["bytes_per_node"]
        rows.append((f"| inventory memory per node (heap kept by the watch and its snapshot) | {per_node:.0f} B | "
                     f"< 2048 B | {'met' if per_node < 2048 else '**NOT met**'} |", per_node < 2048))
    return rows


def render_hostile(w, rows):
    """Issue 25: the handler on hostile reviews, and the worst per KiB."""
    sizes = ["16KiB", "64KiB", "256KiB", "8MiB"]
    by_size = [row for row in rows if row["family"] == "hostile"]
    w("## Hostile reviews (issue 25)")
    w("")
    w(f"The whole handler (as in the micro benchmarks above), in process, pinned to core {SERVER_CORE}, on "
      "AdmissionReviews built to cost the most per byte (`tests/support/hostile_reviews.h`, "
      "`bench/micro/hostile_bench.cpp`), each the largest of its shape within the body size, with the generated "
      "5,000-node inventory. Time per review (wall-clock), and per KiB of body.")
    w("")
    w("| shape | endpoint | " + " | ".join(sizes) + " | per KiB at 8 MiB |")
    w("| --- | --- |" + " ---: |" * (len(sizes) + 1))
    shapes = list(dict.fromkeys(row["shape"] for row in by_size))
    for shape in shapes:
        for endpoint in ("mutate", "validate"):
            cells = {row["size"]: row for row in by_size if row["shape"] == shape and row["endpoint"] == endpoint}
            if not cells:
                continue
            times = [f"{cells[size]['ms']:.2f} ms" if size in cells else "" for size in sizes]
            big = cells.get("8MiB")
            per_kib = f"{1000 * big['ms'] / big['kib']:.0f} µs" if big and big["kib"] else ""
            w(f"| `{shape}` | {endpoint} | " + " | ".join(times) + f" | {per_kib} |")
    w("")
    w("The worst shape per body size and endpoint: the handler's time per KiB of body, and the review's time.")
    w("")
    w("| body | endpoint | worst shape | per KiB | review |")
    w("| --- | --- | --- | ---: | ---: |")
    for size in sizes:
        for endpoint in ("mutate", "validate"):
            cells = [row for row in by_size if row["size"] == size and row["endpoint"] == endpoint and row["kib"]]
            if not cells:
                continue
            worst = max(cells, key=lambda row: row["ms"] / row["kib"])
            w(f"| {size} | {endpoint} | `{worst['shape']}` | {1000 * worst['ms'] / worst['kib']:.0f} µs | "
              f"{worst['ms']:.1f} ms |")
    w("")
    by_count = [row for row in rows if row["family"] == "hostile_n"]
    if by_count:
        w("The issue's cases by count, without an inventory:")
        w("")
        w("| shape | endpoint | items | body | time |")
        w("| --- | --- | ---: | ---: | ---: |")
        for row in by_count:
            w(f"| `{row['shape']}` | {row['endpoint']} | {row['items']:.0f} | {row['kib'] / 1024:.1f} MiB | "
              f"{row['ms']:.0f} ms |")
        w("")


def render(bench, results):
    r = results
    m = r["machine"]
    connections = bench.connections
    out = []
    w = out.append
    w("# Performance")
    w("")
    w("<!-- Generated by bench/run.py (`make bench`); do not edit: rerun `make bench`. "
      "The Analysis section at the end is copied from bench/analysis.md. -->")
    w("")
    w(f"Generated by `bench/run.py` (`make bench`) on {r['date']}; every number below comes from that one run "
      f"on one machine ({r['wall_s'] / 60:.1f} minutes in all). Do not edit this file by hand: rerun `make bench`; "
      "the analysis at the end is kept in `bench/analysis.md`.")
    if bench.args.quick:
        w("")
        w("**Quick run** (`--quick`): durations too short for the numbers to mean anything; it checks that "
          "everything runs.")
    w("")
    w("## Machine and versions")
    w("")
    w("| | |")
    w("| --- | --- |")
    w(f"| CPU | {m['cpu']} |")
    w(f"| cores | {m['cores']} |")
    w(f"| kernel | {m['kernel']} |")
    w(f"| RAM | {m['ram']} |")
    for k, v in r["versions"].items():
        w(f"| {k} | {v} |")
    w("")
    w("## Method")
    w("")
    tls = "; ".join(f"{LABELS[n].split(' (')[0]} {v}" for n, v in r.get("tls", {}).items()) or "unknown"
    w("Four servers over HTTPS (HTTP/1.1 with keep-alive; each server's own TLS choice as negotiated with "
      f"h2load: {tls}), measured in the same run:")
    w("")
    w("- **gpu-sizer**: `gpu-sizer serve` as deployed (its defaults: the asio transport with one event loop per "
      "CPU it may use, here one as it is pinned to one core; a JSON log line per review written to a file, "
      "Prometheus metrics, the /status counters).")
    w("- **gpu-sizer --transport httplib**: the same binary on its other transport, cpp-httplib (a pool of 32 "
      "threads, one per keep-alive connection): what the event-loop transport changed, measured beside it.")
    w("- **Go peer**: `bench/peer-go`, a Go standard-library (`net/http`, `crypto/tls`, `encoding/json`) webhook "
      "for pods, one log line per review written to a file. Pinned to one core, the Go runtime runs with "
      "GOMAXPROCS=1.")
    w("- **bare TLS**: `gpu-sizer-bare-tls` (`bench/bare/`), gpu-sizer's own transport (asio, one event loop) "
      "and TLS set-up answering POST /mutate with a fixed body, "
      "gpu-sizer's exact answer to the workload (checked byte for byte): no parsing, no decision, no logging. "
      "The ceiling of the transport on this machine.")
    w("")
    w(f"**Pinning**: the load generator (h2load, one thread) runs on core {LOAD_CORE} (`taskset -c {LOAD_CORE}`), "
      f"the server under test on core {SERVER_CORE} (`taskset -c {SERVER_CORE}`); this script and its TLS client "
      f"stay on core {LOAD_CORE}. All the servers run at once, idle but for the one under load.")
    w("")
    w(f"**Workload**: `bench/workloads/{MAIN_WORKLOAD}` ({(WORKLOADS / MAIN_WORKLOAD).stat().st_size} bytes, an "
      "AdmissionReview of a pod that is mutated), POSTed to /mutate. Requests that fail, error, time out or "
      "answer other than 2xx make the run fail: they are a benchmark error, never a result.")
    w("")
    if r.get("compared"):
        w("**Like with like**: before measuring, `bench/compare_answers.py` posted every pod workload to gpu-sizer "
          f"and the peer and compared the answers: {r.get('compare_summary', '')}. A difference fails the run.")
    else:
        w("**Like with like**: `bench/compare_answers.py` was not there: the answers were not compared.")
    sizes = r.get("answer_bytes", {})
    if sizes:
        out[-1] += (f" The answer to the main workload is {sizes['ours']} bytes of JSON from gpu-sizer (and so from the bare "
          f"server) and {sizes['peer']} bytes from the peer, plus the HTTP headers.")
    w("")
    w(f"- **Throughput at saturation**: h2load with N connections, each with one request in flight, for "
      f"{bench.seconds} s" + (f" after a {bench.warm_up} s warm-up" if bench.warm_up else "") + ".")
    w(f"- **Latency at a fixed offered rate**: for each N, one total rate R for all the servers, half of the "
      f"lowest saturation throughput measured at N in this run; h2load with `--rps R/N` (per connection) for "
      f"{bench.latency_seconds} s, its `--log-file` holds each request's duration (from sending the request to the "
      "end of the answer); p50 and p99 (nearest rank) and the max are computed from it. h2load paces each "
      "connection with a timer of its own, started as the connection is made, so the N connections' requests "
      "can arrive nearly together, in bursts of up to N; a request due while its connection's previous one is "
      "still in flight waits in h2load, and its duration starts when it is sent.")
    w("- **Resident memory**: VmRSS from /proc/PID/status; idle is after start-up and one answered request, "
      "under load the max sampled every 100 ms during all of that server's load runs.")
    w(f"- **Start-up**: from starting the process to the first answered POST /mutate, a Python TLS client "
      f"polling every 2 ms (a new connection per attempt); median and best of {bench.starts} starts.")
    w("")
    w("Commands (PORT, N, R and LOG filled in by the script; paths relative to the source tree):")
    w("")
    w("```")
    for what, cmd in bench.commands:
        w(f"# {what}")
        w(cmd.replace(str(SOURCE) + "/", ""))
    w("```")
    w("")
    if bench.other_load:
        core0 = [a for a, _ in bench.other_load]
        core1 = [b for _, b in bench.other_load]
        background = ", ".join(f"core {c} {v:.0f}%" for c, v in sorted(bench.background.items()))
        noisy = max(bench.background.values(), default=0) > 10 or statistics.mean(core1) > 10
        w(f"**Other load** (from /proc/stat): before the run, over 1 s with no server started, the cores were busy "
          f"{background}. During the {len(bench.other_load)} load runs, everything but the server under test and "
          f"h2load (other processes, kernel threads such as ksoftirqd, this script) used on average "
          f"{statistics.mean(core1):.0f}% of core {SERVER_CORE} (at most {max(core1):.0f}% in one run) and "
          f"{statistics.mean(core0):.0f}% of core {LOAD_CORE} (at most {max(core0):.0f}%). The hypervisor "
          f"took (steal time) on average {statistics.mean(s[1] for s in bench.steal):.0f}% of core {SERVER_CORE} "
          f"and {statistics.mean(s[0] for s in bench.steal):.0f}% of core {LOAD_CORE} (at most "
          f"{max(max(s) for s in bench.steal):.0f}% of a core in one run)." +
          (" **The machine was not quiet: these numbers are disturbed by other work; rerun on a quiet machine.**"
           if noisy else "") +
          f" A run during which other work and steal took more than {DISTURBED_PCT:g}% of a core is run again (up to "
          f"{bench.max_attempts} times in all, after waiting up to 30 s for a quiet second, while the reruns have "
          "taken less than 150 s in all) and the least disturbed attempt kept; a number still marked † was "
          "measured while the machine (or its host) was busy with other work, and so is a ratio of the targets "
          "computed from it.")
        w("")

    w("## Throughput at saturation")
    w("")
    w("Requests per second (server CPU / h2load CPU, as a share of one core).")
    w("")
    w("| server | " + " | ".join(f"{c} connection{'s' if c > 1 else ''}" for c in connections) + " |")
    w("| --- | " + " | ".join("---:" for _ in connections) + " |")
    for name in SERVERS:
        cells = []
        for c in connections:
            t = r["throughput"].get((name, c))
            if t is None:
                cells.append(f"**not served**: {r['not_served'][(name, c)]} of {c} connections answered")
            else:
                cells.append(f"{t['rps']:.0f} ({t['server_cpu_pct']:.0f}% / {t['client_cpu_pct']:.0f}%){mark(t)}")
        w(f"| {LABELS[name]} | " + " | ".join(cells) + " |")
    w("")
    if r["not_served"] or r["extra_not_served"]:
        w("**Not served**: before each h2load run, that many keep-alive connections are opened at once, each "
          f"POSTing the workload; a server that does not answer all of them within {PROBE_SECONDS:g} s (a thread "
          "per connection: "
          "the connections past its pool wait until others close or idle out, 5 s) is not run with h2load at that "
          "connection count (h2load would wait on them forever), and its row is marked here.")
        w("")
    if r["extra"]:
        w(f"Other workload sizes, {EXTRA_CONNECTIONS} connections (the bare server answers gpu-sizer's answer to "
          "each):")
        w("")
        w("| server | " + " | ".join(f"`{wl}`" for wl in EXTRA_WORKLOADS) + " |")
        w("| --- | " + " | ".join("---:" for _ in EXTRA_WORKLOADS) + " |")
        for name in SERVERS:
            w(f"| {LABELS[name]} | " + " | ".join(
                f"{r['extra'][(name, wl)]['rps']:.0f}{mark(r['extra'][(name, wl)])}" if (name, wl) in r["extra"] else
                f"**not served**: {r['extra_not_served'].get((name, wl), '?')} of {EXTRA_CONNECTIONS} connections"
                for wl in EXTRA_WORKLOADS) + " |")
        w("")

    w("## Latency at a fixed offered rate")
    w("")
    w("| connections | offered rate | server | achieved | requests | p50 | p99 | max |")
    w("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for c in connections:
        for name in SERVERS:
            lat = r["latency"].get((name, c))
            if lat is None:
                w(f"| {c} | | {LABELS[name]} | **not served** | | | | |")
                continue
            w(f"| {c} | {lat['rate']} req/s | {LABELS[name]} | {lat['achieved']:.0f} req/s | {lat['requests']} | "
              f"{fmt_us(lat['p50_us'])} | {fmt_us(lat['p99_us'])} | {fmt_us(lat['max_us'])}{mark(lat)} |")
    w("")

    w("## Resident memory")
    w("")
    w("| server | idle | under load |")
    w("| --- | ---: | ---: |")
    for name in SERVERS:
        w(f"| {LABELS[name]} | {fmt_mib(r['rss_idle'][name])} | {fmt_mib(r['rss_load'][name])} |")
    w("")

    w("## Start-up to first answer")
    w("")
    w(f"| server | median | best | all {bench.starts} |")
    w("| --- | ---: | ---: | --- |")
    for name in SERVERS:
        s = r["startup"][name]
        w(f"| {LABELS[name]} | {s['median']:.1f} ms | {s['best']:.1f} ms | "
          + ", ".join(f"{x:.1f}" for x in s["all"]) + " ms |")
    w("")

    w("## Targets (issue #7)")
    w("")
    w("Ratios measured in this run; a target not met is reported, never a failure of the run. † marks a ratio "
      "computed from a disturbed run (see Other load).")
    w("")
    w("| target | measured | bound | |")
    w("| --- | --- | --- | --- |")
    for row, _ in targets(r):
        w(row)
    w("")

    w("## Micro benchmarks")
    w("")
    w("The whole handler (request bytes in, answer bytes out: parse, decide, patch, serialise), in process, "
      f"pinned to core {SERVER_CORE}, per workload of `bench/workloads/index.json`; no transport, no logging. "
      "Time is wall-clock, CPU time the thread's (the target is checked on CPU time, which other processes on the "
      "core do not inflate)." + (
          " While they ran, other work took {:.0f}% of core {} and the hypervisor (steal) {:.0f}%.".format(
              r["micro_disturbed"][0], SERVER_CORE, r["micro_disturbed"][1]) if "micro_disturbed" in r else ""))
    w("")
    w("| workload | time | CPU time | iterations | throughput |")
    w("| --- | ---: | ---: | ---: | ---: |")
    for mrow in r["micro"]:
        w(f"| `{mrow['name'].removeprefix('handler/')}` | {mrow['real_us']:.2f} µs | {mrow['cpu_us']:.2f} µs | "
          f"{mrow['iterations']} | {mrow['mb_s']:.0f} MB/s |")
    w("")

    if "nodes" in r:
        n = r["nodes"]
        relist, rss = n["nodes_relist"], n["rss"]
        w("## Node inventory (5,000 nodes)")
        w("")
        w(f"A generated fleet of {relist['nodes']:.0f} GPU nodes of 20 shapes (GKE g2/a2/a3, EKS g5/g6/p4d/p5, AKS "
          f"NC/NV/ND) in 3 zones, each Node as the API server lists it (labels, taints, conditions, addresses, 25 "
          f"images): {relist['list_mb']:.1f} MB of JSON, {relist['classes']:.0f} node classes. Micro benchmarks "
          f"pinned to core {SERVER_CORE} (`bench/micro/node_bench.cpp`); RSS from `bench/node_rss.py` (the webhook "
          "watching a loopback API server that lists the same nodes).")
        w("")
        w("| measure | value |")
        w("| --- | ---: |")
        w(f"| full relist: parse, read every Node, classes, snapshot | {relist['real_us'] / 1000:.1f} ms |")
        w(f"| heap the watch and its snapshot keep, per node | {relist['bytes_per_node']:.0f} B |")
        w(f"| webhook RSS without nodes / with {rss['nodes']:.0f} nodes | {rss['rss_kib_without_nodes'] / 1024:.1f} "
          f"/ {rss['rss_kib_with_nodes'] / 1024:.1f} MiB ({rss['rss_kib_per_node'] * 1024:.0f} B per node) |")
        for name, label in (("nodes_decide/without_inventory", "handler, main workload, no inventory"),
                            ("nodes_decide/with_5000_nodes", "handler, main workload, 5,000-node inventory")):
            w(f"| {label} (CPU time) | {n[name]['cpu_us']:.2f} µs |")
        w("")

    if r.get("hostile"):
        render_hostile(w, r["hostile"])

    w("## Analysis")
    w("")
    analysis = BENCH / "analysis.md"
    if analysis.exists():
        text = analysis.read_text().strip()
        text = re.sub(r"^#+\s*Analysis\s*\n+", "", text)
        w(text)
    else:
        w("_No analysis yet: write it in `bench/analysis.md`; `make bench` copies it here._")
    w("")
    return "\n".join(out)


def summary(bench, results):
    lines = []
    for row, _ in targets(results):
        cells = [c.strip() for c in row.strip("|").split("|")]
        lines.append(f"  {cells[3]:<12} {cells[0]}: {cells[1]} (target {cells[2]})")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True, help="the CMake build directory holding the binaries")
    parser.add_argument("--out", help="the Markdown file to write (default docs/performance.md; "
                                      "with --quick DIR/bench-run/performance-quick.md)")
    parser.add_argument("--seconds", type=float, help="duration of each h2load run (default 10; 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="a short run (1 and 16 connections, 1 s each) checking that everything runs")
    args = parser.parse_args()
    if args.seconds is not None:
        args.seconds = int(args.seconds) if args.seconds == int(args.seconds) else args.seconds

    # ctest's timeout and Ctrl-C end the servers through the finally blocks.
    def terminated(*_):
        raise BenchError("interrupted by SIGTERM")
    signal.signal(signal.SIGTERM, terminated)

    bench = Bench(args)
    try:
        bench.run()
    except BenchError as e:
        print(f"bench: FAILED: {e}", file=sys.stderr, flush=True)
        return 1
    except subprocess.TimeoutExpired as e:
        print(f"bench: FAILED: timed out: {e}", file=sys.stderr, flush=True)
        return 1

    text = render(bench, bench.results)
    if args.out:
        out = Path(args.out)
    elif args.quick:
        out = bench.work / "performance-quick.md"  # a scratch file in the build directory, never docs/
    else:
        out = SOURCE / "docs" / "performance.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    print(f"bench: wrote {out}", flush=True)
    print("bench: targets\n" + summary(bench, bench.results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
