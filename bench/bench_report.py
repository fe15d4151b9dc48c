"""The document of the load benchmark (bench/run.py): docs/performance.md in
Markdown from a Bench's results (render), the targets' ratios (targets) and
the one-line-per-target summary printed at the end of the run.
"""

import re
import statistics

from load_tools import (BENCH, DISTURBED_PCT, EXTRA_CONNECTIONS, EXTRA_WORKLOADS, HANDLER_TARGET_US, LABELS,
                        LOAD_CORE, MAIN_WORKLOAD, PROBE_SECONDS, SERVER_CORE, SERVERS, SOURCE, UNPINNED_SERVERS,
                        UNPINNED_WORKLOADS, WORKLOADS)


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
    return rows + issue30_targets(results)


def kb(workload):
    """A workload's size, `12.4 KB`."""
    return f"{(WORKLOADS / workload).stat().st_size / 1000:.1f} KB"


def issue30_targets(results):
    """Issue 30's done-when, each a row: gpu-sizer / the Go peer at least 2x on the 12 KB
    and the small body, pinned (16 connections; the small body pinned only in a full
    run) and unpinned; gpu-sizer / bare TLS at least 0.6x on the 12 KB body, pinned and
    unpinned; p99 at the fixed rate at most 0.5x the peer's; idle RSS at most the peer's."""
    rows = []
    small = UNPINNED_WORKLOADS[1]
    cpus = results.get("unpinned_cpus", ("?", "?"))
    unpinned = results.get("unpinned", {})
    t = results["throughput"]

    def throughput(what, ours, other, label, bound):
        text = f"issue 30: throughput, {what}, 16 connections, gpu-sizer / {label}"
        if ours is None or other is None:
            return (f"| {text} | not measured (a server did not serve 16 connections) | ≥ {bound:g} | "
                    "**NOT met** |", False)
        o, x = ours["rps"], other["rps"]
        return ratio_row(text, o / x, bound, True, f"{o:.0f} / {x:.0f} = {o / x:.2f}x{mark(ours) or mark(other)}")

    main, unpinned_text = kb(MAIN_WORKLOAD), f"unpinned (CPUs {cpus[0]})"
    rows.append(throughput(f"{main} body, pinned", t.get(("ours", 16)), t.get(("peer", 16)), "Go peer", 2.0))
    if results["extra"] or results["extra_not_served"]:  # the other body sizes: a full run only
        extra = results["extra"]
        rows.append(throughput(f"{kb(small)} body, pinned", extra.get(("ours", small)), extra.get(("peer", small)),
                               "Go peer", 2.0))
    for workload in UNPINNED_WORKLOADS:
        rows.append(throughput(f"{kb(workload)} body, {unpinned_text}", unpinned.get(("ours", workload)),
                               unpinned.get(("peer", workload)), "Go peer", 2.0))
    rows.append(throughput(f"{main} body, pinned", t.get(("ours", 16)), t.get(("bare", 16)), "bare TLS", 0.6))
    rows.append(throughput(f"{main} body, {unpinned_text}", unpinned.get(("ours", MAIN_WORKLOAD)),
                           unpinned.get(("bare", MAIN_WORKLOAD)), "bare TLS", 0.6))
    lat = results["latency"]
    if ("ours", 16) in lat and ("peer", 16) in lat:
        ours, peer = lat[("ours", 16)], lat[("peer", 16)]
        o, p = ours["p99_us"], peer["p99_us"]
        rows.append(ratio_row(f"issue 30: p99 at {ours['rate']} req/s over 16 connections, gpu-sizer / Go peer",
                              o / p, 0.5, False, f"{fmt_us(o)} / {fmt_us(p)} = {o / p:.2f}x{mark(ours) or mark(peer)}"))
    else:
        rows.append(("| issue 30: p99 at the fixed rate over 16 connections, gpu-sizer / Go peer | not measured (a "
                     "server did not serve 16 connections) | ≤ 0.5 | **NOT met** |", False))
    o, p = results["rss_idle"]["ours"], results["rss_idle"]["peer"]
    rows.append(ratio_row("issue 30: resident memory idle, gpu-sizer / Go peer", o / p, 1.0, False,
                          f"{fmt_mib(o)} / {fmt_mib(p)} = {o / p:.2f}x"))
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


def render_unpinned(w, bench, r):
    """Issue 30: each server alone on all the CPUs, its requests per second per workload, and gpu-sizer's ratios."""
    cpus, count = r["unpinned_cpus"]
    runs, not_served = r["unpinned"], r["unpinned_not_served"]
    w("## Unpinned: all cores, one server at a time")
    w("")
    w(f"Each server alone with h2load on all {count} CPUs (`taskset -c {cpus}`), {EXTRA_CONNECTIONS} connections, "
      f"at saturation for {bench.seconds} s (see Method). Requests per second (server CPU / h2load CPU, as a share "
      f"of one CPU: the server may use up to {100 * count}%).")
    w("")
    w("| server | " + " | ".join(f"`{wl}` ({kb(wl)})" for wl in UNPINNED_WORKLOADS) + " |")
    w("| --- | " + " | ".join("---:" for _ in UNPINNED_WORKLOADS) + " |")

    def cell(name, wl):
        run = runs.get((name, wl))
        if run is None:
            return f"**not served**: {not_served.get((name, wl), '?')} of {EXTRA_CONNECTIONS} connections"
        return f"{run['rps']:.0f} ({run['server_cpu_pct']:.0f}% / {run['client_cpu_pct']:.0f}%){mark(run)}"

    for name in UNPINNED_SERVERS:
        w(f"| {LABELS[name]} | " + " | ".join(cell(name, wl) for wl in UNPINNED_WORKLOADS) + " |")
    for other in ("peer", "bare"):
        ratios = []
        for wl in UNPINNED_WORKLOADS:
            o, x = runs.get(("ours", wl)), runs.get((other, wl))
            ratios.append(f"{o['rps'] / x['rps']:.2f}x{mark(o) or mark(x)}" if o and x else "")
        w(f"| gpu-sizer / {LABELS[other].split(' (')[0]} | " + " | ".join(ratios) + " |")
    w("")
    if bench.unpinned_load:
        other = [o for o, _ in bench.unpinned_load]
        steal = [st for _, st in bench.unpinned_load]
        w(f"**Other load** during these {len(bench.unpinned_load)} runs (from /proc/stat; h2load and the server "
          "may run on any of the CPUs, so everything else is counted on all of them together, as a share of one "
          f"CPU): other work on average {statistics.mean(other):.0f}% (at most {max(other):.0f}% in one run), "
          f"steal on average {statistics.mean(steal):.0f}% (at most {max(steal):.0f}%). These runs are left out "
          "of the pinned runs' figures above. As a pinned run is, an unpinned one is run again when other work and "
          f"steal took more than {DISTURBED_PCT:g}% of one CPU (here of all of them together), and its number "
          "marked † if it still was.")
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
      "CPU it may use, here one as it is pinned to one core, one per CPU unpinned; a JSON log line per review "
      "written to a file, Prometheus metrics, the /status counters).")
    w("- **gpu-sizer --transport httplib**: the same binary on its other transport, cpp-httplib (a pool of 32 "
      "threads, one per keep-alive connection): what the event-loop transport changed, measured beside it.")
    w("- **Go peer**: `bench/peer-go`, a Go standard-library (`net/http`, `crypto/tls`, `encoding/json`) webhook "
      "for pods, one log line per review written to a file. Pinned to one core, the Go runtime runs with "
      "GOMAXPROCS=1; unpinned, with its default (GOMAXPROCS unset: the CPUs it may use).")
    w("- **bare TLS**: `gpu-sizer-bare-tls` (`bench/bare/`), gpu-sizer's own transport (asio, an event loop per "
      "CPU it may use, as gpu-sizer) and TLS set-up answering POST /mutate with a fixed body, "
      "gpu-sizer's exact answer to the workload (checked byte for byte): no parsing, no decision, no logging. "
      "The ceiling of the transport on this machine.")
    w("")
    w(f"**Pinning**: the load generator (h2load, one thread) runs on core {LOAD_CORE} (`taskset -c {LOAD_CORE}`), "
      f"the server under test on core {SERVER_CORE} (`taskset -c {SERVER_CORE}`); this script and its TLS client "
      f"stay on core {LOAD_CORE}. All the servers run at once, idle but for the one under load.")
    w("")
    if "unpinned_cpus" in r:
        cpus, count = r["unpinned_cpus"]
        w(f"**Unpinned** (issue 30, what users run): gpu-sizer, the Go peer and the bare server, each alone (started "
          "for its run, the other servers stopped), it and h2load (one thread) on all the CPUs this script was "
          f"given, {count} here (`taskset -c {cpus}`), so that the servers run their defaults on all of them and "
          "share them with the load generator; at saturation over "
          f"{EXTRA_CONNECTIONS} connections for {bench.seconds} s, on "
          + " and ".join(f"`{wl}` ({kb(wl)})" for wl in UNPINNED_WORKLOADS) + ", the bare server answering "
          "gpu-sizer's answer to each (checked byte for byte).")
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
          f"{background}. During the {len(bench.other_load)} pinned load runs, everything but the server under test and "
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
    if r["not_served"] or r["extra_not_served"] or r.get("unpinned_not_served"):
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
    if "unpinned_cpus" in r:
        render_unpinned(w, bench, r)

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

    w("## Targets (issues #7 and #30)")
    w("")
    w("Ratios measured in this run; a target not met is reported, never a failure of the run. † marks a ratio "
      "computed from a disturbed run (see Other load). The rows marked issue 30 are its done-when, some of them "
      "the same measurement as an issue 7 row against another bound; the small body pinned is measured only in a "
      "full run (not with --quick).")
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
