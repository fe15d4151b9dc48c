"""The load runs of the benchmark (bench/run.py) beside its main matrix of
servers and connection counts on the 12 KB body:

- extra_workloads: the other body sizes (EXTRA_WORKLOADS), pinned as the
  main runs are, all the servers started, at EXTRA_CONNECTIONS;
- unpinned (issue 30, what users run): gpu-sizer, the Go peer and the bare
  server each started alone on every CPU, on the 12 KB and 3.5 KB bodies.

Each takes the Bench and records into its results.
"""

import os
import shlex
import time

from load_tools import (EXTRA_CONNECTIONS, EXTRA_WORKLOADS, PROBE_SECONDS, SERVERS, UNPINNED_SERVERS,
                        UNPINNED_WORKLOADS, WORKLOADS, BenchError, check_answer, h2load_argv, log, post,
                        probe_connections)


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
                answered = probe_connections(port, EXTRA_CONNECTIONS, context, body)
                if answered < EXTRA_CONNECTIONS:
                    bench.results["extra_not_served"][(name, workload)] = answered
                    log(f"{name}: only {answered} of {EXTRA_CONNECTIONS} connections answered: no h2load run")
                    continue
                time.sleep(0.2)
                log(f"saturation: {name}, {EXTRA_CONNECTIONS} connections, {workload}, {bench.seconds} s")
                r = bench.saturation(name, proc, port, EXTRA_CONNECTIONS, workload)
                bench.results["extra"][(name, workload)] = r
                log(f"  {r['rps']:.0f} req/s (other work {r['other_pct'][0]:.0f}% / {r['other_pct'][1]:.0f}%, "
                    f"steal {r['steal_pct'][0]:.0f}% / {r['steal_pct'][1]:.0f}%)")
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
    cpus = bench.all_cpus
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
                answered = probe_connections(port, EXTRA_CONNECTIONS, context, body)
                if answered < EXTRA_CONNECTIONS:
                    if bench.args.quick:
                        raise BenchError(f"{name}, unpinned, did not serve {EXTRA_CONNECTIONS} connections at once "
                                         f"({answered} answered within {PROBE_SECONDS:g} s)")
                    bench.results["unpinned_not_served"][(name, workload)] = answered
                    log(f"{name}, unpinned: only {answered} of {EXTRA_CONNECTIONS} connections answered: no h2load run")
                    continue
                time.sleep(0.2)
                log(f"unpinned saturation: {name} alone on CPUs {cpus}, {EXTRA_CONNECTIONS} connections, {workload}, "
                    f"{bench.seconds} s")
                r = bench.saturation(f"{name} unpinned", proc, port, EXTRA_CONNECTIONS, workload, cpus=cpus)
                bench.results["unpinned"][(name, workload)] = r
                log(f"  {r['rps']:.0f} req/s (server CPU {r['server_cpu_pct']:.0f}%, h2load CPU "
                    f"{r['client_cpu_pct']:.0f}%, other work {r['other_all_pct']:.0f}%, steal "
                    f"{r['steal_all_pct']:.0f}%, all CPUs together)")
                if proc.poll() is not None:
                    raise BenchError(f"{name} exited during its unpinned run ({proc.returncode})")
            finally:
                bench.procs.stop(proc)
