#!/usr/bin/env python3
"""The load benchmark over TLS (issue #7; `make bench`, docs/performance.md).

Four servers, measured in the same run on the same machine:
  ours  build/gpu-sizer serve (the webhook as deployed: logging, metrics, decisions)
  ours-httplib  the same with --transport httplib (cpp-httplib, a thread per connection)
  peer  bench/peer-go, a Go standard-library webhook giving the same answers
  bare  build/gpu-sizer-bare-tls, gpu-sizer's own transport and TLS set-up
        answering a fixed body (our exact answer): the ceiling of the transport.

The load generator is h2load (Debian's nghttp2-client) over HTTP/1.1 with
keep-alive and TLS, pinned to core 0; the servers, all started at once, are
pinned to core 1. For each server and connection count: throughput at
saturation, then the latency (p50/p99/max from h2load's per-request log) at
one fixed offered rate, the same for all the servers (half of the lowest
saturation throughput at that connection count); the other body sizes at
16 connections; resident memory idle and under load; start-up time to the
first answered POST /mutate; the micro benchmarks of the handler; and the
handler on hostile reviews (issue 25: the shapes that cost it the most per
byte, up to 8 MiB). The result is written as a Markdown document.

Unpinned (issue 30: what users run): gpu-sizer, the peer and the bare server
(answering gpu-sizer's answer to each body) each started alone, the others
stopped, then saturated by h2load (one thread) at 16 connections; the
server and h2load on every CPU this script was given (`taskset -c 0-N`), so
gpu-sizer and the bare server run an event loop per CPU and the peer its
default GOMAXPROCS (unset in its environment). On the 12 KB and the 3.5 KB
pod bodies. Other work is then counted on all the CPUs together (busy time
less the server's and h2load's), apart from the pinned runs' per-core
figures.

Before each h2load run, N keep-alive connections are opened at once: a
server that cannot answer them all (a thread per connection, N past its
pool) is marked "not served" at that N instead (h2load would hang on the
unserved connections). A run during which other processes took more than
DISTURBED_PCT of a core is run again, up to 3 times, keeping the least
disturbed; the document reports the other load and the hypervisor's steal.

  bench/run.py --build DIR --out docs/performance.md [--seconds S] [--quick]

This file holds the Bench (the servers, the load runs and their order) and
main; beside it, load_tools.py (processes, /proc, the TLS client, h2load),
load_phases.py (the other body sizes pinned, and the unpinned runs),
in_process.py (the micro, node inventory and hostile benchmarks) and
bench_report.py (the Markdown document and the targets).

--quick (a few seconds per server, 1 and 16 connections, and the unpinned
runs of 1 s each; no other body sizes pinned) writes to a scratch file in
the build directory (DIR/bench-run/) and is the ctest test bench_short: it
checks that everything ran (servers answered, no failed requests, the
answers agree), never timings.

Exit status: 0 when everything ran, whatever the numbers (a target not met,
or a server not serving 64 connections, is data, not a failure); 1 when
something did not run, a request failed or gpu-sizer and the peer disagree
(and, with --quick, when a server does not serve 1 or 16 connections). Python standard library only.
"""

import argparse
import contextlib
import datetime
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import in_process
import load_phases
from bench_report import render, summary
from load_tools import (BENCH, DISTURBED_PCT, LOAD_CORE, MAIN_WORKLOAD, PROBE_SECONDS, SERVER_CORE, SERVERS, SOURCE,
                        WORKLOADS, BenchError, NotServed, Processes, RssSampler, account_disturbance, check_answer,
                        core_busy_seconds, cpu_seconds, free_port, h2load_argv, log, machine,
                        make_certificates, percentile, post, probe_connections, read_latency_log, run, run_h2load,
                        tls_context, versions, vm_rss_kib, wait_listening)


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
                        "extra": {}, "micro": [], "cpu": {}, "unpinned": {}, "unpinned_not_served": {}}
        self.commands = []
        self.other_load = []  # (% of core 0, % of core 1) used by other processes, per load run
        self.background = {}
        self.steal = []  # (% of core 0, % of core 1) stolen by the hypervisor, per load run
        # Per unpinned load run: (other work, steal), all CPUs together, in % of one CPU.
        self.unpinned_load = []
        self.all_cpu_set = os.sched_getaffinity(0)  # before run() pins this script
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

    def start_server(self, name, tag="", body_file=None, core=SERVER_CORE, env=None):
        port = free_port()
        proc = self.procs.start(self.server_argv(name, port, body_file), self.work / f"{name}{tag}.log", core, env)
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

    def load_run(self, name, proc, label, argv, seconds, parse=None, log_file=None, pinned=True):
        """One h2load run against the server `proc`, run again (up to 3 times in all, within
        a retry budget for the whole benchmark, after waiting up to 30 s for the machine to
        calm down) when other work took more than DISTURBED_PCT of a core meanwhile; the
        least disturbed attempt is kept. `parse` adds fields from h2load's log file
        `log_file`, which h2load appends to: it is removed before each attempt. With
        pinned=False (the server and h2load on all the CPUs), other work and steal are
        counted on all the CPUs together (load_tools.account_disturbance)."""
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
            busy = {c: busy_after.get(c, 0) - busy_before.get(c, 0) for c in busy_after}
            steal = {c: steal_after.get(c, 0) - steal_before.get(c, 0) for c in steal_after}
            disturbance = account_disturbance(r, busy, steal, server_cpu, elapsed,
                                              None if pinned else self.all_cpu_set)
            attempts.append(r)
            if attempt > 0:
                self.retry_budget_s -= time.monotonic() - retry_started
            if r["disturbed_pct"] <= DISTURBED_PCT:
                break
            again = len(attempts) < self.max_attempts and self.retry_budget_s > 0
            log(f"  disturbed: {disturbance} during the run" + ("; running it again" if again else ""))
            if not again:
                break
        best = min(attempts, key=lambda a: a["disturbed_pct"])
        best["attempts"] = len(attempts)
        if pinned:
            self.other_load.append(best["other_pct"])
            self.steal.append(best["steal_pct"])
        else:
            self.unpinned_load.append((best["other_all_pct"], best["steal_all_pct"]))
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

    def saturation(self, name, proc, port, connections, context, workload=MAIN_WORKLOAD, cpus=None):
        """h2load at saturation, pinned to LOAD_CORE; with `cpus` (a taskset CPU list), on those
        CPUs, unpinned. First `connections` keep-alive connections are opened at once, each
        POSTing the workload: a server that does not answer them all within PROBE_SECONDS is
        not run with h2load (it would wait on them forever): NotServed, an error under --quick."""
        answered = probe_connections(port, connections, context, (WORKLOADS / workload).read_bytes())
        if answered < connections:
            what = (f"{name} did not serve {connections} connections at once ({answered} answered within "
                    f"{PROBE_SECONDS:g} s)")
            if self.args.quick:
                raise BenchError(what)
            log(f"{what}: no h2load run")
            raise NotServed(answered)
        time.sleep(0.2)  # the probe's connections are closed; let the server see it
        log(f"saturation: {name}, {connections} connection(s), {workload}, {self.seconds} s"
            + (f", CPUs {cpus}" if cpus else ""))
        argv = h2load_argv(port, connections, self.seconds, WORKLOADS / workload, self.warm_up,
                           core=cpus if cpus else LOAD_CORE)
        r = self.load_run(name, proc, f"{name} c={connections} {workload}", argv, self.seconds, pinned=cpus is None)
        log(f"  {r['rps']:.0f} req/s (server CPU {r['server_cpu_pct']:.0f}%, h2load CPU {r['client_cpu_pct']:.0f}%, "
            + (f"other work {r['other_all_pct']:.0f}%, steal {r['steal_all_pct']:.0f}%, all CPUs together)" if cpus else
               f"other work {r['other_pct'][0]:.0f}% / {r['other_pct'][1]:.0f}%, "
               f"steal {r['steal_pct'][0]:.0f}% / {r['steal_pct'][1]:.0f}%)"))
        return r

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

    # --- the run ----------------------------------------------------------------

    def run(self):
        self.check_tools()
        self.build_peer()
        started = datetime.datetime.now(datetime.timezone.utc)
        self.results["date"] = started.strftime("%Y-%m-%d %H:%M UTC")
        self.results["machine"] = machine()
        self.results["versions"] = versions(self.binaries["ours"])
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
                try:
                    r = self.saturation(name, proc, port, connections, context)
                except NotServed as e:
                    self.results["not_served"][(name, connections)] = e.answered
                    continue
                served.append(name)
                self.results["throughput"][(name, connections)] = r
                self.results.setdefault("tls", {})[name] = r["tls"]
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
            load_phases.extra_workloads(self, servers, context)

        for name, kib in self.sampler.max_kib.items():
            self.results["rss_load"][name] = kib
        for name in SERVERS:
            if servers[name][0].poll() is not None:
                raise BenchError(f"{name} exited during the benchmark ({servers[name][0].returncode})")
        for name, (proc, _) in servers.items():
            self.procs.stop(proc)

        # Issue 30: each server alone on all the CPUs (none of the above is running).
        load_phases.unpinned(self, context)

        for name in SERVERS:
            log(f"start-up to first answer: {name}, {self.starts} start(s)")
            load_phases.startup(self, name)
            s = self.results["startup"][name]
            log(f"  median {s['median']:.1f} ms, best {s['best']:.1f} ms")

        in_process.micro(self)
        in_process.nodes(self)
        in_process.hostile(self)


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
