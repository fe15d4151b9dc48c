"""The load runs of the benchmark (bench/run.py) beside its main matrix of
servers and connection counts on the 12 KB body:

- extra_workloads: the other body sizes (EXTRA_WORKLOADS), pinned as the
  main runs are, all the servers started, at EXTRA_CONNECTIONS;
- unpinned (issue 30, what users run): gpu-sizer, the Go peer and the bare
  server each started alone on every CPU, on the 12 KB and 3.5 KB bodies;
- startup: the time from a server's start to its first answer.

Each takes the Bench and records into its results.
"""

import os
import shlex
import statistics
import time

from load_tools import (EXTRA_CONNECTIONS, EXTRA_WORKLOADS, MAIN_WORKLOAD, SERVERS, UNPINNED_SERVERS,
                        UNPINNED_WORKLOADS, WORKLOADS, BenchError, NotServed, check_answer, cpu_list, free_port,
                        h2load_argv, post, tls_context)


def extra_workloads(bench, servers, context):
    """Each server (all of them running, as in `servers`: name -> (proc, port)) at saturation
    on each of EXTRA_WORKLOADS, a bare server answering gpu-sizer's answer to each."""
    ours_port = servers["ours"][1]
    for workload in EXTRA_WORKLOADS:
        body = (WORKLOADS / workload).read_bytes()
        status, extra_answer = post(ours_port, "/mutate", body, context)
        check_answer("gpu-sizer", status, extra_answer)
        extra_body = bench.work / f"answer-{workload}"
        extra_body.write_bytes(extra_answer)
        extra_bare, extra_port = bench.start_server("bare", tag=f"-{workload}", body_file=extra_body)
        try:
            targets = dict(servers, bare=(extra_bare, extra_port))
            for name in SERVERS:
                proc, port = targets[name]
                try:
                    r = bench.saturation(name, proc, port, EXTRA_CONNECTIONS, context, workload)
                except NotServed as e:
                    bench.results["extra_not_served"][(name, workload)] = e.answered
                    continue
                bench.results["extra"][(name, workload)] = r
        finally:
            bench.procs.stop(extra_bare)


def unpinned(bench, context):
    """Issue 30: for each of UNPINNED_WORKLOADS and each of UNPINNED_SERVERS, that server
    started alone (no other server running), it and h2load on every CPU this script was
    given (`taskset -c 0-N`: children inherit the script's own pinning to LOAD_CORE
    otherwise), at saturation over EXTRA_CONNECTIONS connections for bench.seconds.
    gpu-sizer and the bare server run their default, an event loop per CPU; the Go peer
    its default GOMAXPROCS (the CPUs it may use), GOMAXPROCS being taken out of its
    environment. The bare server answers gpu-sizer's answer to the body, checked byte
    for byte. Into results["unpinned"][(name, workload)]."""
    cpus = cpu_list(bench.all_cpu_set)
    env = {k: v for k, v in os.environ.items() if k != "GOMAXPROCS"}
    bench.results["unpinned_cpus"] = (cpus, len(bench.all_cpu_set))
    for name, label in (("ours", "gpu-sizer"), ("peer", "Go peer"), ("bare", "bare TLS server")):
        argv = ["taskset", "-c", cpus] + [str(a) for a in bench.server_argv(name, "PORT", "ANSWER")]
        unset = ", GOMAXPROCS unset" if name == "peer" else ""
        bench.commands.append((f"{label} alone, unpinned (all CPUs{unset})", shlex.join(argv)))
    bench.commands.append(("throughput at saturation, unpinned (all CPUs)", shlex.join(str(a) for a in h2load_argv(
        "PORT", EXTRA_CONNECTIONS, bench.seconds, WORKLOADS / "WORKLOAD", bench.warm_up, core=cpus))))
    for workload in UNPINNED_WORKLOADS:
        body = (WORKLOADS / workload).read_bytes()
        answer = answer_file = None
        for name in UNPINNED_SERVERS:  # "ours" first: the bare server answers its answer
            proc, port = bench.start_server(name, tag=f"-unpinned-{workload}", body_file=answer_file, core=cpus,
                                            env=env)
            try:
                status, reply = post(port, "/mutate", body, context)
                if name == "bare":
                    if status != 200 or reply != answer:
                        raise BenchError("the unpinned bare TLS server does not answer gpu-sizer's bytes for "
                                         f"{workload}")
                else:
                    check_answer("gpu-sizer" if name == "ours" else name, status, reply)
                if name == "ours":
                    answer, answer_file = reply, bench.work / f"answer-unpinned-{workload}"
                    answer_file.write_bytes(answer)
                try:
                    r = bench.saturation(f"{name} unpinned", proc, port, EXTRA_CONNECTIONS, context, workload,
                                         cpus=cpus)
                except NotServed as e:
                    bench.results["unpinned_not_served"][(name, workload)] = e.answered
                    continue
                bench.results["unpinned"][(name, workload)] = r
                if proc.poll() is not None:
                    raise BenchError(f"{name} exited during its unpinned run ({proc.returncode})")
            finally:
                bench.procs.stop(proc)


def startup(bench, name):
    """Milliseconds from process start to the first answered POST /mutate, bench.starts times:
    into results["startup"][name]."""
    body = (WORKLOADS / MAIN_WORKLOAD).read_bytes()
    context = tls_context(bench.ca)
    times = []
    for i in range(bench.starts):
        port = free_port()
        argv = bench.server_argv(name, port)
        started = time.monotonic()
        proc = bench.procs.start(argv, bench.work / f"startup-{name}-{i}.log")
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
            bench.procs.stop(proc)
    bench.results["startup"][name] = {"median": statistics.median(times), "best": min(times), "all": times}
