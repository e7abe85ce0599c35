"""Benchmarks that ship with the package.

    python -m wormhole.bench kernel [--repeat 3] [--json]
        packet-kernel speed (events/s) on a 16:1 incast and a k=8 fat-tree permutation
    python -m wormhole.bench gpt13b --gpus 128 [--cc hpcc] [--mode accelerated|full] [--tp 8 --pp 1] [--json]
        the headline: one GPT-13B training iteration at packet level (accelerated by default)

Kernel speed: events processed, events per second and wall-clock of the
packet kernel, in fixed-rate mode and with each congestion control (the
reference run script's preset at 100 Gb/s), on

  (a) a 16:1 incast of 10 MB flows through one switch (100 Gbps, 1 us links),
  (b) a k=8 fat-tree (128 hosts, 80 switches) running a random permutation of
      1 MB flows (every host sends to one host and receives from one).
  (c) a 128-GPU rail-optimized fabric running a random permutation of 1 MB flows.

With --threads 1,2 each scenario also runs on the partitioned kernel (threads=N) at
those thread counts: wall-clock per count, the speedup of the last over the first
and over the sequential run, and whether fct.txt was byte-identical to the
sequential run's at every count.  The last count's processes also run on one thread
(the same cut), which splits the speedup over the sequential run into what the cut
costs (work) and what the threads gain on it.

With --reference CMD each reference-format input (the tests/data cases and every --input
folder) also runs on the reference simulator (CMD, the config's path appended; it runs in a
scratch directory, the input folder is not written): its wall-clock, the ratio of its whole
command to ours (set-up + run), and whether its fct.txt is byte-identical to ours.
--reference-setup also times its set-up alone (stopped 1 ns before the first flow) and gives
the ratio of the run phases.

With --htsim CMD (htsim's HPCC binary, htsim_hpcc, built from its repository) two more
scenarios run, HPCC permutations of 1 MB flows on k=8 and k=16 fat-trees (128 and 1,024
hosts, 100 Gb/s, 1 us links) in 9,000-byte packets (htsim's default: its PFC thresholds
count packets, and at 1,000 bytes it stalls), on ours and on htsim, given the same flows as
a connection matrix (CMD -tm FILE -nodes N -strat ecmp_host -paths 16, in a scratch
directory): htsim's wall-clock (one run, and one of its set-up alone: the same fabric with
no connections), its run phase over ours, and the mean FCT of each (the two simulators'
HPCC and switches differ, so FCTs agree only roughly).

Each scenario runs --repeat times; the median wall-clock is reported.  The
reference simulator (C++, -O3) processes 1.0-2.2 M events/s on a 2-core machine
(its summary.txt files in ../shared/reference/hpcc-ns3-runs/).
"""
import argparse
import json
import os
import random
import statistics
import sys
import time

import wormhole as wh
from .runner import (WORKLOADS, backend_label, check_bench_outputs, count_text, run_workload, share_text,
                     workload_parser)


def incast(cc="none", **over):
    net = wh.Network(wh.star(17), _config(cc, **over))
    for i in range(16):
        net.send(i, 16, 10_000_000)
    return net


def htsim_permutation(k):
    """A builder of an HPCC permutation of 1 MB flows on fat_tree(k) in 9,000-byte packets, the
    scenario --htsim runs on htsim too."""
    def build(cc="hpcc", **over):
        return _permutation(wh.fat_tree(k), "hpcc", 1, dict({"mtu": 9000}, **over))
    return build


HTSIM_SCENARIOS = {"htsim_fattree8_perm_9KB": 8, "htsim_fattree16_perm_9KB": 16}


def measure_htsim(argv, build, ours):
    """htsim (argv) on the flows of ``build`` written as a connection matrix, beside ``ours``
    (measure's row): its wall-clock, that of its set-up alone (the fabric with no connections),
    its run phase over ours, each one's mean FCT in us and how many flows htsim finished."""
    import shlex
    import subprocess
    import tempfile
    from .workload.htsim import cm_text, network_connections
    net = build()
    hosts = len(net.topology.hosts)
    runs = {}
    with tempfile.TemporaryDirectory(prefix="wormhole-htsim-") as d:
        for what, text in (("setup", cm_text([], hosts)), ("whole", cm_text(*network_connections(net)))):
            path = os.path.join(d, what + ".cm")        # (set-up alone: the same fabric with no connections)
            with open(path, "w") as fh:
                fh.write(text)
            cmd = argv + ["-tm", path, "-nodes", str(hosts), "-strat", "ecmp_host", "-paths", "16", "-end", "100000"]
            t0 = time.perf_counter()
            try:
                p = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
            except OSError as e:
                raise wh.WormholeError("--htsim %s: %s" % (shlex.join(argv), e))
            runs[what] = (time.perf_counter() - t0, p)
            if p.returncode != 0:
                raise wh.WormholeError("--htsim %s: exit status %d: %s" % (
                    shlex.join(argv), p.returncode, ((p.stderr or p.stdout).strip().splitlines() or [""])[-1]))
    wall, p = runs["whole"]
    fin = [float(line.split(" finished at ")[1].split()[0]) for line in p.stdout.splitlines()
           if " finished at " in line]        # "Flow NAME finished at T total bytes B" (us; every flow starts at 0)
    return {"wall_seconds": round(wall, 4), "setup_seconds": round(runs["setup"][0], 4),
            "ratio_run": round((wall - runs["setup"][0]) / max(1e-9, ours["wall_seconds"]), 3),
            "flows_finished": len(fin), "flows": hosts, "fct_mean_us": round(statistics.mean(fin), 2) if fin else None,
            "ours_fct_mean_us": ours["fct_mean_us"]}


def _config(cc, **over):
    return (wh.Config(cc="none") if cc == "none" else wh.Config.preset(cc)).copy(**over)


def _permutation(topo, cc, seed, over):
    """A random permutation of 1 MB flows (no host sends to itself) over topo's hosts."""
    net = wh.Network(topo, _config(cc, **over))
    hosts = topo.hosts
    rnd = random.Random(seed)
    while True:
        perm = hosts[:]
        rnd.shuffle(perm)
        if all(a != b for a, b in zip(hosts, perm)):
            break
    for a, b in zip(hosts, perm):
        net.send(a, b, 1_000_000)
    return net


def fattree_permutation(cc="none", seed=1, **over):
    return _permutation(wh.fat_tree(8), cc, seed, over)


def rail_permutation(cc="none", seed=1, **over):
    """A 128-GPU rail-optimized fabric (16 servers of 8 GPUs, 8 rail leaves, 16 spines) running a random
    permutation of 1 MB flows: most pairs cross a spine."""
    return _permutation(wh.rail_optimized(128), cc, seed, over)


SCENARIOS = {"incast16_10MB": incast, "fattree8_permutation_1MB": fattree_permutation,
             "rail128_permutation_1MB": rail_permutation}
# reference inputs (tests/data/hpcc-ns3-runs, present in a source checkout): run once with their own config
REFERENCE_RUNS = ("incast8_hpcc", "ring_intra_dcqcn")
_REF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "hpcc-ns3-runs")


def reference_run(case):
    """A builder for one reference input folder (config.txt naming TOPOLOGY_FILE and FLOW_FILE): a case
    of tests/data/hpcc-ns3-runs, or a folder's path."""
    def build(cc=None, **over):
        cfg = wh.Config.from_file(os.path.join(_REF_DIR, case, "config.txt")).copy(**over)
        net = wh.Network(cfg.files["TOPOLOGY_FILE"], cfg)
        for f in wh.read_flows(cfg.files["FLOW_FILE"], net.topology):
            net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
        return net
    return build


# columns of the per-kind table: events per data packet sent by the NICs
KIND_COLUMNS = ("tx_data", "tx_ctrl", "arr_data", "arr_ctrl", "nic_wake", "cc_timer", "rto", "other", "stale")
# sub-counts, not additive: transmissions done after which the port stays idle, NIC wake-ups that sent nothing
IDLE_COLUMNS = ("txd_idle", "wake_idle")


def events_per_packet(st):
    """Events per data packet sent by the NICs, by kind: transmissions done and arrivals split into data and
    control (ACK/NACK/PFC) packets, NIC wake-ups, CC and retransmission timers, everything else (flow
    starts, user callbacks, samples, skip ends, message notes), and stale pops (superseded tokens; those of
    NIC wake-ups, skip ends and message notes are not in ``events``, those of CC timers and RTOs are)."""
    k = st["events_by_kind"]
    n = max(1, st["data_packets"])
    named = {
        "tx_data": k["tx_done"] - st["tx_done_ctrl"], "tx_ctrl": st["tx_done_ctrl"],
        "arr_data": k["arrive"] - st["arrive_ctrl"], "arr_ctrl": st["arrive_ctrl"],
        "nic_wake": k["nic_wake"], "cc_timer": k["cc_timer"], "rto": k["rto"],
    }
    named["other"] = st["events"] - sum(named.values())
    named["stale"] = st["stale_events"]
    named["txd_idle"] = st["tx_done_idle"]
    named["wake_idle"] = st["nic_wake_idle"]
    return {c: named[c] / n for c in KIND_COLUMNS + IDLE_COLUMNS}


def _fct_mean_us(net):
    """The mean FCT of a run's finished flows, us (None if none finished)."""
    fct = net.results["fct"]
    fct = fct[fct >= 0]
    return round(float(fct.mean()) / 1e6, 2) if len(fct) else None


def measure(name, build, repeat, cc="none", **over):
    walls, setups = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        net = build(cc, **over)
        t1 = time.perf_counter()
        net.run()
        walls.append(time.perf_counter() - t1)
        setups.append(t1 - t0)
        st = net.stats
    wall = statistics.median(walls)
    return {
        "scenario": name,
        "cc": cc,
        "events": st["events"],
        "events_by_kind": st["events_by_kind"],
        "stale_by_kind": st["stale_by_kind"],
        "pops_by_kind": st["pops_by_kind"],
        "events_per_data_packet": round(st["events"] / max(1, st["data_packets"]), 4),
        "per_data_packet": {c: round(v, 4) for c, v in events_per_packet(st).items()},
        "wall_seconds": round(wall, 4),
        "walls": [round(w, 4) for w in walls],
        "setup_seconds": round(statistics.median(setups), 4),
        "events_per_second": round(st["events"] / wall),
        "flows": st["flows"],
        "flows_completed": st["flows_completed"],
        "data_packets": st["data_packets"],
        "ctrl_packets": st["ctrl_packets"],
        "sim_time_us": st["sim_time_ps"] / 1e6,
        "pfc_pauses": st["pfc_pauses"],
        "drops": st["drops"],
        "repeat": repeat,
        "fct": net.fct_lines(),
        "fct_mean_us": _fct_mean_us(net),
        "parallel_stats": st.get("parallel"),
    }


def measure_parallel(name, build, repeat, cc, threads, seq):
    """The partitioned kernel at each thread count: median wall-clock per count, the speedup of the
    last count over the first and over the sequential run ``seq`` (measure's row), and whether
    fct.txt was byte-identical to the sequential run's at every count.

    When the last count runs several processes, they also run on one thread (``one_thread``: the
    same cut, the same rounds, ranking and cut packets, no second core), which splits the speedup
    over the sequential run into two factors: ``work``, what the cut costs (that run over the
    sequential one), and ``speedup_same_cut``, what the threads gain on it (that run over the
    last count's): speedup_vs_sequential = speedup_same_cut / work."""
    rows = {t: measure(name, build, repeat, cc, threads=t) for t in threads}
    first, last = rows[threads[0]], rows[threads[-1]]
    out = {
        "threads": list(threads),
        "wall_seconds": {str(t): r["wall_seconds"] for t, r in rows.items()},
        "events": last["events"],
        "speedup": round(first["wall_seconds"] / max(1e-9, last["wall_seconds"]), 3),
        "speedup_vs_sequential": round(seq["wall_seconds"] / max(1e-9, last["wall_seconds"]), 3),
        "lps": last["parallel_stats"]["lps"], "rounds": last["parallel_stats"]["rounds"],
        "lookahead_ps": last["parallel_stats"]["lookahead_ps"],
        "cut_packets": last["parallel_stats"]["cut_packets"],
    }
    runs = list(rows.values())
    if out["lps"] > 1 and threads[-1] > 1:
        one = measure(name, build, repeat, cc, threads=1, lps=out["lps"])
        runs.append(one)
        out["one_thread"] = {"lps": out["lps"], "wall_seconds": one["wall_seconds"],
                             "work": round(one["wall_seconds"] / max(1e-9, seq["wall_seconds"]), 3),
                             "speedup_same_cut": round(one["wall_seconds"] / max(1e-9, last["wall_seconds"]), 3)}
    out["fct_identical"] = all(r["fct"] == seq["fct"] for r in runs)
    return out


def measure_reference(argv, folder, ours, build, setup):
    """The reference's run of ``folder`` beside ``ours`` (measure's row): its wall-clock and CPU time, the
    ratio of its whole command to ours (set-up + run), whether its fct.txt equals ours byte for byte and,
    with ``setup``, its set-up time alone and the ratio of the run phases."""
    from . import refsim
    full = refsim.run(argv, folder)
    out = {"wall_seconds": full["wall_seconds"], "cpu_seconds": full["cpu_seconds"],
           "fct_identical": full["fct"] is not None and full["fct"] == "".join(ours["fct"]).encode(),
           "ratio_whole": round(full["wall_seconds"] / max(1e-9, ours["wall_seconds"] + ours["setup_seconds"]), 3)}
    if setup:
        cfg = wh.Config.from_file(os.path.join(folder, "config.txt"))
        stop = refsim.first_start_s(wh.read_flows(cfg.files["FLOW_FILE"], wh.read_topology(cfg.files["TOPOLOGY_FILE"])))
        pre = refsim.run(argv, folder, stop_s=stop)
        out["setup_seconds"] = pre["wall_seconds"]
        out["ratio_run"] = round((full["wall_seconds"] - pre["wall_seconds"]) / max(1e-9, ours["wall_seconds"]), 3)
    return out


def _table_header(threads=(), ref=False, ref_setup=False):
    par = ""
    if threads:
        par = " " + " ".join("%8s" % ("par%d s" % t) for t in threads) + " %6s %6s" % (
            "x%d/%d" % (threads[-1], threads[0]), "x seq")
        if threads[-1] > 1:
            par += " %8s %6s %6s" % ("1 thr s", "work", "x cut")
        par += " %5s" % "same"
    if ref:
        par += " %8s" % "ref s" + (" %8s" % "ref su s" if ref_setup else "") + " %6s" % "x all" + (
            " %6s" % "x run" if ref_setup else "") + " %5s" % "same"
    return ("%-26s %-6s %9s %6s " % ("scenario", "cc", "data pkts", "ev/pkt")
            + " ".join("%8s" % c for c in KIND_COLUMNS + IDLE_COLUMNS) + " %8s %7s" % ("wall s", "Mev/s") + par)


def _table_row(r, ref=False, ref_setup=False):
    par = ""
    p = r.get("parallel")
    if p:
        par = (" " + " ".join("%8.3f" % p["wall_seconds"][str(t)] for t in p["threads"])
               + " %6s %6.2f" % ("%.2f" % p["speedup"] if len(p["threads"]) > 1 else "-", p["speedup_vs_sequential"]))
        if p["threads"][-1] > 1:
            o = p.get("one_thread")
            par += (" %8.3f %6.2f %6.2f" % (o["wall_seconds"], o["work"], o["speedup_same_cut"]) if o
                    else " %8s %6s %6s" % ("-", "-", "-"))
        par += " %5s" % ("yes" if p["fct_identical"] else "NO")
    if ref:
        q = r.get("reference")
        if q:
            par += " %8.2f" % q["wall_seconds"] + (" %8.2f" % q["setup_seconds"] if ref_setup else "") + (
                " %6.2f" % q["ratio_whole"]) + (" %6.2f" % q["ratio_run"] if ref_setup else "") + " %5s" % (
                "yes" if q["fct_identical"] else "NO")
        else:
            par += " %8s" % "-" + (" %8s" % "-" if ref_setup else "") + " %6s" % "-" + (
                " %6s" % "-" if ref_setup else "") + " %5s" % "-"
    return ("%-26s %-6s %9d %6.3f " % (r["scenario"], r["cc"], r["data_packets"], r["events_per_data_packet"])
            + " ".join("%8.3f" % r["per_data_packet"][c] for c in KIND_COLUMNS + IDLE_COLUMNS)
            + " %8.3f %7.2f" % (r["wall_seconds"], r["events_per_second"] / 1e6) + par)


def _exit_error(msg):
    """A bench kernel error: one line on stderr, exit status 2."""
    sys.stderr.write("wormhole.bench kernel: error: %s\n" % msg)
    sys.exit(2)


def kernel_main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON object per scenario")
    ap.add_argument("--only", help="one scenario by name (%s, with --htsim %s, or an --input folder's name)" % (
        ", ".join(sorted(SCENARIOS) + list(REFERENCE_RUNS)), " or ".join(HTSIM_SCENARIOS)))
    from .cc import REGISTRY
    ap.add_argument("--cc", default="all", choices=list(REGISTRY) + ["all"],
                    help="%s or all (default)" % ", ".join(REGISTRY))
    ap.add_argument("--no-reference", action="store_true", help="skip the reference inputs (tests/data)")
    ap.add_argument("--input", action="append", default=[], metavar="DIR",
                    help="also a reference-format folder (config.txt naming TOPOLOGY_FILE and FLOW_FILE), e.g. "
                         "the reference's 320-host fat-tree benchmark; repeatable")
    ap.add_argument("--threads", default=None, metavar="N,M,...",
                    help="parallel columns: the partitioned kernel at these thread counts, e.g. 1,2: "
                         "wall-clock per count, the speedup of the last over the first and over the sequential "
                         "run, the last count's processes on one thread (what the cut costs, what the threads "
                         "gain on it), fct.txt byte-identical")
    ap.add_argument("--reference", metavar="CMD",
                    help="also run the reference simulator on each reference-format input (the tests/data cases "
                         "and every --input): CMD is its command, the config's path appended, e.g. \"env "
                         "LD_LIBRARY_PATH=B B/scratch/third\" for the HPCC fork built in B. Adds its wall-clock, "
                         "the ratio to ours over the whole command (set-up + run), and whether its fct.txt is "
                         "byte-identical to ours; runs once per input")
    ap.add_argument("--htsim", metavar="CMD",
                    help="also run two HPCC permutations in 9,000-byte packets (fat_tree 8 and 16) on htsim: CMD is "
                         "its htsim_hpcc; adds its wall-clock, its run phase over ours and both mean FCTs")
    ap.add_argument("--reference-setup", action="store_true",
                    help="with --reference: also time its set-up alone (the config stopped 1 ns before the first "
                         "flow) and give the ratio of the run phases")
    args = ap.parse_args(argv)
    ref_argv = None
    if args.reference_setup and not args.reference:
        ap.error("--reference-setup needs --reference")
    if args.reference:
        from .refsim import parse_command
        try:
            ref_argv = parse_command(args.reference)
        except wh.WormholeError as e:
            _exit_error(e)
    htsim_argv = None
    if args.htsim:
        import shlex
        import shutil
        htsim_argv = shlex.split(args.htsim)
        if not htsim_argv or shutil.which(htsim_argv[0]) is None:
            _exit_error("--htsim %r: no such program" % args.htsim)
    threads = ()
    if args.threads:
        try:
            threads = tuple(int(x) for x in args.threads.split(","))
        except ValueError:
            ap.error("--threads: comma-separated thread counts, not %r" % args.threads)
        if not threads or min(threads) < 1:
            ap.error("--threads: thread counts of at least 1, not %r" % args.threads)
    ccs = list(REGISTRY) if args.cc == "all" else [args.cc]
    runs = [(name, build, cc, None) for name, build in SCENARIOS.items() for cc in ccs]
    if not args.no_reference and os.path.isdir(_REF_DIR):
        runs += [(case, reference_run(case), case.rsplit("_", 1)[1], os.path.join(_REF_DIR, case))
                 for case in REFERENCE_RUNS]
    if htsim_argv:
        runs += [(name, htsim_permutation(k), "hpcc", None) for name, k in HTSIM_SCENARIOS.items()]
    for d in args.input:
        if not os.path.isfile(os.path.join(d, "config.txt")):
            ap.error("--input %s: no config.txt in it" % d)
        name = os.path.basename(os.path.normpath(d))
        runs.append((name, reference_run(os.path.abspath(d)), wh.Config.from_file(os.path.join(d, "config.txt")).cc,
                     os.path.abspath(d)))
    if not args.json:
        print("events per data packet sent, by kind (tx = transmission done, arr = arrival, data / ctrl = "
              "ACK, NACK, PFC packets; stale = superseded timer pops; txd_idle, wake_idle: of those, the ones after which the port stays idle); "
              "wall-clock median of %d" % max(1, args.repeat))
        if ref_argv:
            print("ref: the reference's wall-clock (one run%s); x all: its whole command over ours (set-up + run)%s; "
                  "same: its fct.txt byte-identical to ours" % (
                      ", and one of its set-up alone" if args.reference_setup else "",
                      "; x run: its run phase (whole - set-up) over ours" if args.reference_setup else ""))
        if threads and threads[-1] > 1:
            print("par N s: the partitioned kernel on N threads; 1 thr s: the last count's processes on one thread "
                  "(the same cut); work: that over the sequential run (what the cut costs); x cut: that over the "
                  "last count (what the threads gain on it); x seq = x cut / work; same: fct.txt byte-identical "
                  "to the sequential run's in every run")
        print(_table_header(threads, ref_argv is not None, args.reference_setup))
    for name, build, cc, folder in runs:
        if args.only and name != args.only:
            continue
        r = measure(name, build, max(1, args.repeat), cc)
        if threads:
            r["parallel"] = measure_parallel(name, build, max(1, args.repeat), cc, threads, r)
        if ref_argv and folder:
            try:
                r["reference"] = measure_reference(ref_argv, folder, r, build, args.reference_setup)
            except wh.WormholeError as e:
                _exit_error(e)
        if htsim_argv and name in HTSIM_SCENARIOS:
            try:
                r["htsim"] = measure_htsim(htsim_argv, build, r)
            except wh.WormholeError as e:
                _exit_error(e)
        del r["fct"]
        if args.json:
            print(json.dumps(r, sort_keys=True))
        else:
            print(_table_row(r, ref_argv is not None, args.reference_setup))
            if "htsim" in r:
                h = r["htsim"]
                print("%-26s htsim %.3f s, %.3f s of it set-up: its run phase %.1fx ours; mean FCT %s us (%d of %d "
                      "flows finished) against ours %s us" % (
                          "", h["wall_seconds"], h["setup_seconds"], h["ratio_run"], h["fct_mean_us"],
                          h["flows_finished"], h["flows"], h["ours_fct_mean_us"]))
        sys.stdout.flush()


def workload_lines(rep):
    """The introspection tables of a report: bytes and time per collective kind, the critical path."""
    from .workload.report import collective_lines, critical_lines
    return collective_lines(rep) + critical_lines(rep)


def _print_report(rep):
    it = rep.get("iteration_time_ps") or 0
    lines = ["model       %s on %d GPUs (TP %s, PP %s, DP %s), %s" % (
        rep.get("model", rep.get("workload")), rep["gpus"], rep.get("tp"), rep.get("pp", 1), rep.get("dp"),
        backend_label(rep)),
        "iteration   %.3f ms simulated" % (it / 1e9)]
    if rep.get("run_as"):
        lines.append("  run as    its Chakra graph (--timeline): TP all-reduces inside the compute blocks, not counted "
                     "as NVLink bytes")
    if rep.get("compute_time_ps") is not None:
        tp = rep.get("tp_allreduce_time_ps") or 0
        lines.append("  busiest   GPU: compute %.3f ms, TP all-reduces over NVLink %.3f ms; exposed fabric "
                     "communication %.3f ms" % (rep["compute_time_ps"] / 1e9, tp / 1e9, rep["exposed_comm_ps"] / 1e9))
    lines.append("traffic     %.3f GB over the fabric in %d messages on %d connections, %.3f GB over NVLink" % (
        rep["fabric_bytes"] / 1e9, rep["messages"], rep["flows"], rep["nvlink_bytes"] / 1e9))
    if rep.get("tp_allreduces"):
        lines.append("  NVLink    %.3f GB of it in %d TP all-reduces of %.1f MB activations (%.3f GB per GPU; "
                     "%s)" % (
                         rep["tp_allreduce_bytes"] / 1e9, rep["tp_allreduces"], rep["tp_activation_bytes"] / 1e6,
                         rep["tp_allreduce_bytes"] / 1e9 / rep["gpus"],
                         "packets through the NVSwitches" if rep.get("nvlink_fabric") else
                         "fixed-bandwidth channel, not fabric packets"))
    lines += workload_lines(rep)
    if rep.get("backend") == "flow":
        lines.append("cost        %.2f s wall-clock, %d flow-level events (flow starts and ends, callbacks), "
                     "%d rate solves" % (rep["wall_seconds"], rep["events"], rep["rate_solves"]))
        print("\n".join(lines))
        return
    lines.append("cost        %.2f s wall-clock, %d events processed, %d skipped (%.2f%%), %.2f M events/s" % (
        rep["wall_seconds"], rep["events"], rep["events_skipped"],
        100 * rep["events_skipped"] / max(1, rep["events"] + rep["events_skipped"]), rep["events_per_second"] / 1e6))
    if rep["mode"] == "accelerated":
        lines.append("accelerator %d skips (%d skip-backs), %d steady periods, %d merges / %d split checks, "
                     "memo %d hits / %d misses (%d entries), %d twins mirrored (%d to convergence)" % (
                         rep["skips"], rep["skip_backs"], rep["steady_periods"], rep["partition_merges"],
                         rep["partition_splits"], rep["memo_hits"], rep["memo_misses"], rep["memo_entries"],
                         rep["memo_mirrors"], rep["memo_mirrors_done"]))
        lines += accounting_lines(rep)
    print("\n".join(lines))


def accounting_lines(rep):
    """The accelerated run's accounting in the text report: where its skipped events came from, what
    refused the partitions it did not skip (the three tests that refused most), what ended skips
    early or parted mirrors, and why the packets it simulated were not skipped (the ACKs simulated
    by the state of their flow's partition, the four largest shares)."""
    return ["            skipped by %s" % share_text(rep["events_skipped_by"], empty="nothing"),
            "            refused by %s; skip-backs by %s; mirrors parted by %s" % (
                count_text(rep["skip_rejects"], 3), count_text(rep["skip_backs_by"]),
                count_text(rep["mirror_parts_by"])),
            "            simulated ACKs by why: %s" % share_text(rep["acks_by"], 4)]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "kernel":
        kernel_main(argv[1:])
        return 0
    args = workload_parser().parse_args(argv)
    try:
        if args.memo_db:
            from .outputs import check_file
            check_file(args.memo_db, "--memo-db")
        if args.model not in ("simai", "chakra") and args.model not in WORKLOADS:
            from .workload import preset_names
            if args.model not in preset_names():
                raise wh.WormholeError("unknown model %r (%s, simai, chakra)" % (args.model,
                                                                             ", ".join(preset_names())))
        check_bench_outputs(args)
        rep = run_workload(args)
    except wh.WormholeError as e:
        sys.stderr.write("wormhole.bench: error: %s\n" % e)
        return 2
    if args.json:
        print(json.dumps(rep, sort_keys=True))
    else:
        _print_report(rep)
        if rep.get("wrote"):
            print("wrote       %s" % ", ".join(rep["wrote"]) if len(rep["wrote"]) <= 3 else
                  "wrote       %d files (%s, ...)" % (len(rep["wrote"]), ", ".join(rep["wrote"][:2])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
