"""The in-process phases of the load benchmark (bench/run.py): the micro
benchmarks of the handler, the node inventory (issue 17) and the hostile
reviews (issue 25), each a run of gpu-sizer-micro-bench pinned to the server
core; no server, no TLS. Each takes the Bench and records into its results.
"""

import json
import resource
import shlex
import time

from load_tools import BENCH, SERVER_CORE, BenchError, core_busy_seconds, log, run


def micro(bench):
    min_time = "0.01" if bench.args.quick else "0.5"
    argv = ["taskset", "-c", str(SERVER_CORE), bench.binaries["micro"], "--benchmark_format=json",
            "--benchmark_filter=handler", f"--benchmark_min_time={min_time}"]
    bench.commands.append(("micro benchmarks (pinned to core 1)", shlex.join(str(a) for a in argv)))
    log("micro benchmarks: " + shlex.join(str(a) for a in argv))
    busy_before, steal_before, started = core_busy_seconds(), core_busy_seconds(True), time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run(argv, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = time.monotonic() - started
    own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    other = core_busy_seconds()[SERVER_CORE] - busy_before[SERVER_CORE] - own
    steal = core_busy_seconds(True)[SERVER_CORE] - steal_before[SERVER_CORE]
    bench.results["micro_disturbed"] = (max(0.0, 100.0 * other / elapsed), 100.0 * steal / elapsed)
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
    bench.results["micro"] = rows
    bench.results["micro_context"] = data.get("context", {})


def nodes(bench):
    """The node inventory (issue #17): a full relist of 5,000 generated
    nodes, the memory the inventory keeps, and the handler on the main
    workload with the inventory against without, in process on core 1;
    then the webhook's RSS with and without those nodes (bench/node_rss.py)."""
    min_time = "0.01" if bench.args.quick else "1"
    argv = ["taskset", "-c", str(SERVER_CORE), bench.binaries["micro"], "--benchmark_format=json",
            "--benchmark_filter=nodes_", f"--benchmark_min_time={min_time}"]
    bench.commands.append(("node inventory benchmarks (pinned to core 1)", shlex.join(str(a) for a in argv)))
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
    rss_argv = ["python3", str(BENCH / "node_rss.py"), str(bench.args.build)]
    bench.commands.append(("the webhook's RSS with 5,000 nodes", shlex.join(rss_argv)))
    rows["rss"] = json.loads(run(rss_argv, timeout=300))
    bench.results["nodes"] = rows


def hostile(bench):
    """The handler on the reviews that cost it the most per byte (issue 25,
    bench/micro/hostile_bench.cpp), in process on core 1: each shape at 16,
    64 and 256 KiB and 8 MiB on both endpoints, and the issue's pods and
    workflows by count. --quick runs the 16 KiB ones only."""
    min_time = "0.01" if bench.args.quick else "0.2"
    pattern = "^hostile/.*/16KiB/" if bench.args.quick else "^hostile"
    argv = ["taskset", "-c", str(SERVER_CORE), bench.binaries["micro"], "--benchmark_format=json",
            f"--benchmark_filter={pattern}", f"--benchmark_min_time={min_time}"]
    bench.commands.append(("hostile reviews (pinned to core 1)", shlex.join(str(a) for a in argv)))
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
    bench.results["hostile"] = rows
