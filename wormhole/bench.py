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

WORKLOADS = ("gpt7b", "gpt13b", "gpt22b", "gpt175b", "moe")


def incast(cc="none"):
    net = wh.Network(wh.star(17), _config(cc))
    for i in range(16):
        net.send(i, 16, 10_000_000)
    return net


def _config(cc):
    return wh.Config(cc="none") if cc == "none" else wh.Config.preset(cc)


def fattree_permutation(cc="none", seed=1):
    topo = wh.fat_tree(8)
    net = wh.Network(topo, _config(cc))
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


SCENARIOS = {"incast16_10MB": incast, "fattree8_permutation_1MB": fattree_permutation}
# reference inputs (tests/data/hpcc-ns3-runs, present in a source checkout): run once with their own config
REFERENCE_RUNS = ("incast8_hpcc", "ring_intra_dcqcn")
_REF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "hpcc-ns3-runs")


def reference_run(case):
    """A builder for one reference input folder (config.txt naming TOPOLOGY_FILE and FLOW_FILE)."""
    def build(cc=None):
        cfg = wh.Config.from_file(os.path.join(_REF_DIR, case, "config.txt"))
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


def measure(name, build, repeat, cc="none"):
    walls = []
    for _ in range(repeat):
        net = build(cc)
        t0 = time.perf_counter()
        net.run()
        walls.append(time.perf_counter() - t0)
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
        "events_per_second": round(st["events"] / wall),
        "flows": st["flows"],
        "flows_completed": st["flows_completed"],
        "data_packets": st["data_packets"],
        "ctrl_packets": st["ctrl_packets"],
        "sim_time_us": st["sim_time_ps"] / 1e6,
        "pfc_pauses": st["pfc_pauses"],
        "drops": st["drops"],
        "repeat": repeat,
    }


def _table_header():
    return ("%-26s %-6s %9s %6s " % ("scenario", "cc", "data pkts", "ev/pkt")
            + " ".join("%8s" % c for c in KIND_COLUMNS + IDLE_COLUMNS) + " %8s %7s" % ("wall s", "Mev/s"))


def _table_row(r):
    return ("%-26s %-6s %9d %6.3f " % (r["scenario"], r["cc"], r["data_packets"], r["events_per_data_packet"])
            + " ".join("%8.3f" % r["per_data_packet"][c] for c in KIND_COLUMNS + IDLE_COLUMNS)
            + " %8.3f %7.2f" % (r["wall_seconds"], r["events_per_second"] / 1e6))


def kernel_main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON object per scenario")
    ap.add_argument("--only", choices=sorted(SCENARIOS) + list(REFERENCE_RUNS))
    from .cc import REGISTRY
    ap.add_argument("--cc", default="all", choices=list(REGISTRY) + ["all"],
                    help="%s or all (default)" % ", ".join(REGISTRY))
    ap.add_argument("--no-reference", action="store_true", help="skip the reference inputs (tests/data)")
    args = ap.parse_args(argv)
    ccs = list(REGISTRY) if args.cc == "all" else [args.cc]
    runs = [(name, build, cc) for name, build in SCENARIOS.items() for cc in ccs]
    if not args.no_reference and os.path.isdir(_REF_DIR):
        runs += [(case, reference_run(case), case.rsplit("_", 1)[1]) for case in REFERENCE_RUNS]
    if not args.json:
        print("events per data packet sent, by kind (tx = transmission done, arr = arrival, data / ctrl = "
              "ACK, NACK, PFC packets; stale = superseded timer pops; txd_idle, wake_idle: of those, the ones after which the port stays idle); "
              "wall-clock median of %d" % max(1, args.repeat))
        print(_table_header())
    for name, build, cc in runs:
        if args.only and name != args.only:
            continue
        r = measure(name, build, max(1, args.repeat), cc)
        if args.json:
            print(json.dumps(r, sort_keys=True))
        else:
            print(_table_row(r))
        sys.stdout.flush()


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("wormhole.bench: error: %s\n" % message)
        sys.exit(2)


def gpt_argv(model, gpus, cc, pp, chunk_mb=None, micro_batches_pp=4):
    """bench arguments of a TP8 training run (PP > 1 runs get micro-batches to pipeline)."""
    argv = [model, "--gpus", str(gpus), "--cc", cc, "--tp", "8", "--pp", str(pp)]
    if chunk_mb is not None:
        argv += ["--chunk-mb", str(chunk_mb)]
    if pp > 1:
        argv += ["--micro-batches", str(micro_batches_pp)]
    return argv


def _workload_parser():
    from .cc import PRESETS
    ap = _Parser(prog="python -m wormhole.bench MODEL",
                                 description="Simulate training iterations of MODEL at packet level and report the "
                                             "simulated iteration time and what it cost to simulate.")
    ap.add_argument("model", help="a preset (%s) or 'simai' with --workload FILE" % ", ".join(WORKLOADS))
    ap.add_argument("--gpus", type=int, default=128)
    ap.add_argument("--cc", default="hpcc", help="congestion control preset (%s)" % ", ".join(PRESETS))
    ap.add_argument("--mode", choices=("full", "accelerated"),
                    help="of the packet backend: accelerated (default), the Wormhole fast-forward; full, every "
                         "packet event (the flow backend has no packets and takes no --mode)")
    ap.add_argument("--tp", type=int)
    ap.add_argument("--pp", type=int)
    ap.add_argument("--dp", type=int)
    ap.add_argument("--ep", type=int)
    ap.add_argument("--micro-batches", type=int)
    ap.add_argument("--vpp", type=int, help="virtual pipeline stages per stage: Megatron's interleaved 1F1B")
    ap.add_argument("--nccl-algo", choices=("ring", "tree", "auto"), default="ring",
                    help="DP all-reduce algorithm: NCCL ring (default), double binary tree, or auto (NCCL's tuner)")
    ap.add_argument("--recompute", action="store_true", help="full activation recomputation before each backward")
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--layers", type=int, help="override the model's layer count (quick runs)")
    ap.add_argument("--gpu", choices=("a100", "h100"))
    ap.add_argument("--topology", help="topology file (default: the rail-optimized fabric for --gpus)")
    ap.add_argument("--rate", type=float, default=100.0, help="link rate of the default fabric, Gb/s")
    ap.add_argument("--fabric", choices=("rail", "fattree"), default="rail",
                    help="the default fabric without --topology: rail-optimized (default), or the smallest k-ary "
                         "fat-tree with a host per GPU (k even, k^3/4 >= --gpus; GPUs on its first hosts)")
    ap.add_argument("--servers-per-segment", type=int,
                    help="rail fabric: servers per rail segment (default min(servers, 32)); segments are joined "
                         "by the spines, so a small value makes traffic between segments cross spines")
    ap.add_argument("--oversubscription", type=float, default=1.0,
                    help="rail fabric: leaf-to-spine oversubscription R (servers-per-segment / R spines)")
    ap.add_argument("--workload", help="a SimAI/AICB workload file (with model 'simai')")
    ap.add_argument("--chunk-mb", type=float, default=4.0, help="NCCL-style chunk size of collectives, MB")
    ap.add_argument("--steady-window", type=int, metavar="L",
                    help="accelerated mode: rate samples per flow in the steady test (default: the registry's)")
    ap.add_argument("--steady-theta", type=float, metavar="THETA",
                    help="accelerated mode: steady when (max - min) / mean of the window < THETA")
    ap.add_argument("--steady-goodput", action="store_true",
                    help="accelerated mode: also the quarter-goodput steady test (see `python -m wormhole params`)")
    ap.add_argument("--memo-db", metavar="FILE", help="SQLite memo database reused across runs (accelerated mode; "
                    "created if missing, in an existing folder; an existing database is read and extended)")
    ap.add_argument("--backend", default="packet", choices=("packet", "flow"),
                    help="packet kernel (default), or the flow-level backend (CM02 max-min sharing of fluid flows: "
                         "no packets, queues or congestion control; --cc is ignored)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--trace", metavar="PREFIX", help="with model 'chakra': the Chakra execution trace PREFIX.<rank>.et "
                    "of ranks 0..GPUS-1 (ASTRA-sim 2.x input)")
    ap.add_argument("--comm-group", metavar="FILE", help="with model 'chakra': ASTRA-sim's communicator-group JSON "
                    "{\"id\": [ranks]} (pg_name of the collectives)")
    ap.add_argument("--gpus-per-server", type=int, default=8,
                    help="with model 'chakra': GPUs per server of the default fabric and of NVLink (default 8; "
                         "1 puts every rank on its own server, all traffic on the fabric)")
    ap.add_argument("--resources", choices=("none", "astra"), default="none",
                    help="with model 'chakra': none (default: every node runs when its dependencies are done) or "
                         "astra (ASTRA-sim's rule: per rank one compute node and one collective or send at a time)")
    ap.add_argument("--chakra-out", metavar="PREFIX", help="also write the model's iteration as a Chakra trace: "
                    "PREFIX.<rank>.et and the communicator groups PREFIX.json (replaced if they exist)")
    ap.add_argument("--write-cm", metavar="FILE", help="also write the run's fabric messages as an htsim connection "
                    "matrix, each at the time it was posted (a replay of this run's traffic, without its "
                    "dependencies; replaced if it exists)")
    ap.add_argument("--timeline", metavar="FILE", help="write a Chrome/Perfetto trace-event JSON of the run (GPU "
                    "compute and collectives, messages, link utilisation and queues, skipped periods); a training "
                    "preset is then run as its Chakra graph (the same iteration time)")
    ap.add_argument("--sample-interval", type=float, default=10.0, metavar="US",
                    help="sampling period of the --timeline counters, microseconds (default 10)")
    return ap


def run_workload(args, keep=None):
    """Build the fabric and the job, run it, return the report dict (and, if
    ``keep`` is a dict, put the network and the job in it)."""
    from .units import gbps
    from .workload import SimAIIteration, TrainingJob, load_preset, read_simai
    args.mode = resolve_mode(args.backend, args.mode)
    timeline = getattr(args, "timeline", None)
    gps = getattr(args, "gpus_per_server", 8) if args.model == "chakra" else 8
    if args.topology:
        topo = wh.read_topology(args.topology)
    elif gps != 8 and getattr(args, "fabric", "rail") == "rail":
        topo = wh.rail_optimized(args.gpus, gpus_per_server=gps, rate=gbps(args.rate))
    else:
        topo = default_fabric(args)
    knobs = {}
    if args.mode == "accelerated":
        for name in ("steady_window", "steady_theta"):
            if getattr(args, name, None) is not None:
                knobs[name] = getattr(args, name)
        if getattr(args, "steady_goodput", False):
            knobs["steady_goodput"] = True
    cfg = wh.Config.preset(args.cc, max(1, round(topo.nic_rate() / 1e9)), accelerate=args.mode == "accelerated",
                           memo_db=args.memo_db, **knobs)
    if timeline and args.backend != "flow":
        cfg = cfg.copy(sample_interval=args.sample_interval)
    net = wh.Network(topo, cfg, backend=args.backend)
    chunk = int(args.chunk_mb * 1024 * 1024)
    if args.model == "simai":
        if not args.workload:
            raise wh.WormholeError("model 'simai' needs --workload FILE")
        job = SimAIIteration(net, read_simai(args.workload), args.gpus, chunk_bytes=chunk,
                             iterations=args.iterations)
    elif args.model == "chakra":
        from .workload.chakra import ChakraRun, ChakraTrace
        if not args.trace:
            raise wh.WormholeError("model 'chakra' needs --trace PREFIX (files PREFIX.0.et ...)")
        job = ChakraRun(net, ChakraTrace.load(args.trace, args.gpus, args.comm_group), gpus_per_server=gps,
                        chunk_bytes=chunk, resources=getattr(args, "resources", "none"))
    else:
        pre = load_preset(args.model, gpus=args.gpus, tp=args.tp, pp=args.pp, dp=args.dp, ep=args.ep,
                          micro_batches=args.micro_batches, gpu=args.gpu, vpp=getattr(args, "vpp", None),
                          recompute=True if getattr(args, "recompute", False) else None)
        if args.layers:
            from dataclasses import replace
            chunks = pre.parallel.pp * pre.parallel.vpp
            if args.layers < chunks or args.layers % chunks:
                raise wh.WormholeError("--layers must be a multiple of PP x VPP", value=args.layers)
            pre.model = replace(pre.model, layers=args.layers)
        if ((pre.parallel.vpp > 1 or pre.zero or getattr(args, "nccl_algo", "ring") != "ring")
                and (getattr(args, "chakra_out", None) or timeline)):
            raise wh.WormholeError("--chakra-out and --timeline do not write interleaved (VPP), ZeRO or tree "
                                   "schedules yet")
        job = TrainingJob(net, pre, chunk_bytes=chunk, iterations=args.iterations,
                          nccl_algo=getattr(args, "nccl_algo", "ring"))
    out_files, plan = {}, None
    if getattr(args, "chakra_out", None) and args.model not in ("simai", "chakra"):
        from .workload.chakra import chakra_files
        out_files.update(chakra_files(job, args.chakra_out))
    if timeline and args.model not in ("simai", "chakra"):
        from .workload.chakra import ChakraRun, training_trace
        if args.iterations != 1:
            raise wh.WormholeError("--timeline records one iteration of a training preset", value=args.iterations)
        plan, job = job, ChakraRun(net, training_trace(job), gpus_per_server=job.gps, chunk_bytes=chunk)
    tl = None
    if timeline:
        from .timeline import Timeline
        tl = Timeline("python -m wormhole.bench %s --gpus %d" % (args.model, args.gpus))
    done = []
    job.start(lambda j: done.append(True))
    bar = None
    if not args.no_progress:
        from tqdm import tqdm
        bar = tqdm(total=None, file=sys.stderr, unit=" events", unit_scale=True, delay=1.0, leave=False,
                   desc="simulating", disable=None)      # no bar when stderr is not a terminal
    t0 = time.perf_counter()
    step = 100 * 1000 * 1000        # 100 us of simulated time per slice
    if tl is not None:
        step = 10 * 1000 * 1000     # finer slices: skipped periods are polled between them
    last_events = 0
    while not done:
        if args.backend == "flow":
            net.run()
            break
        nxt = net.peek()
        if nxt is None:
            break
        net.run(until=max(nxt, net.now) + step)
        if tl is not None:
            tl.poll_skips(net)
        if bar is not None:
            ev = net.stats["events"]
            bar.update(ev - last_events)
            last_events = ev
            bar.set_postfix_str("t=%.3f ms simulated" % (net.now / 1e9), refresh=False)
    wall = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    if not done and hasattr(job, "check_finished"):
        job.check_finished()        # a Chakra trace that cannot finish names its file and node
    if not done:
        raise wh.WormholeError("the job stopped before finishing (a flow stalled?)")
    st = net.stats
    if keep is not None:
        keep["net"], keep["job"] = net, job
    rep = dict(job.summary())
    if plan is not None:            # a training preset run as its Chakra graph (--timeline)
        ps = plan.summary()
        rep.update({k: ps[k] for k in ("model", "tp", "pp", "dp", "ep", "micro_batches", "gpus")})
        rep["run_as"] = "chakra graph"
    rep.update({"mode": args.mode, "topology": fabric_label(args),
                "backend": args.backend, "wall_seconds": round(wall, 3), "events": st["events"],
                "events_per_second": round(st["events"] / wall) if wall > 0 else 0,
                "flows": st["flows"], "messages": len(net.messages), "sim_time_ps": net.now})
    if tl is not None:
        from .timeline import network_timeline
        network_timeline(net, job if hasattr(job, "records") else None, timeline=tl)
        out_files[timeline] = tl.to_json({"iteration_time_ps": rep.get("iteration_time_ps")})
    if getattr(args, "write_cm", None):
        from .workload.htsim import cm_text, network_connections
        out_files[args.write_cm] = cm_text(*network_connections(net), header="# wormhole.bench %s --gpus %d: "
                                           "fabric messages at the times they were posted" % (args.model, args.gpus))
    if out_files:
        from .outputs import write_files
        write_files(out_files)
        rep["wrote"] = sorted(out_files)
    if args.backend == "flow":
        rep.update({"cc": None, "flow_model": st["flow_model"], "rate_solves": st["rate_solves"]})
        return rep
    rep.update({"cc": args.cc, "events_skipped": st["events_skipped"],
                "skips": st.get("skips", 0), "skip_backs": st.get("skip_backs", 0),
                "steady_periods": st.get("steady_periods", 0),
                "partition_merges": st.get("partition_merges", 0), "partition_splits": st.get("partition_splits", 0),
                "memo_hits": st.get("memo_hits", 0), "memo_misses": st.get("memo_misses", 0),
                "memo_entries": st.get("memo_entries", 0), "memo_db_bytes": st.get("memo_db_bytes", 0),
                "memo_mirrors": st.get("memo_mirrors", 0), "memo_mirrors_done": st.get("memo_mirrors_done", 0),
                "memo_follows": st.get("memo_follows", 0),
                "time_skipped_ps": st.get("time_skipped_ps", 0),
                "packets": st["data_packets"] + st["ctrl_packets"], "pfc_pauses": st["pfc_pauses"],
                "drops": st["drops"]})
    return rep


def default_fabric(args):
    """The fabric of a run without --topology: --fabric, --servers-per-segment, --oversubscription, --rate."""
    from .units import gbps
    if getattr(args, "fabric", "rail") == "fattree":
        k = 2
        while k ** 3 // 4 < args.gpus:
            k += 2
        return wh.fat_tree(k, rate=gbps(args.rate))
    return wh.rail_optimized(args.gpus, servers_per_segment=getattr(args, "servers_per_segment", None),
                             oversubscription=getattr(args, "oversubscription", 1.0), rate=gbps(args.rate))


def fabric_label(args):
    """How the default fabric of a run is named in its report."""
    if args.topology:
        return args.topology
    if getattr(args, "fabric", "rail") == "fattree":
        return "%s(%d GPUs)" % (default_fabric(args).name, args.gpus)
    extra = ""
    if getattr(args, "servers_per_segment", None):
        extra += ", %d servers per segment" % args.servers_per_segment
    if getattr(args, "oversubscription", 1.0) != 1.0:
        extra += ", %g:1 oversubscribed" % args.oversubscription
    return "rail_optimized(%d%s)" % (args.gpus, extra)


def resolve_mode(backend, mode):
    """The packet backend's mode (accelerated by default); None for the flow
    backend, which has no packets to skip and refuses a --mode."""
    if backend == "flow":
        if mode is not None:
            raise wh.WormholeError("--mode %s applies to the packet backend; the flow backend simulates no "
                                   "packets (drop --mode, or use --backend packet)" % mode, value=mode)
        return None
    return mode or "accelerated"


def backend_label(rep):
    """How a run was simulated, for every printed report: "packet level, hpcc,
    accelerated mode" or "flow backend (cm02 max-min, no packets)"."""
    if rep.get("backend") == "flow":
        return "flow backend (%s max-min sharing of fluid flows: no packets, no congestion control)" % (
            rep.get("flow_model", "cm02"))
    return "packet level, %s, %s mode" % (rep["cc"], rep["mode"])


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
                     "fixed-bandwidth channel, not fabric packets)" % (
                         rep["tp_allreduce_bytes"] / 1e9, rep["tp_allreduces"], rep["tp_activation_bytes"] / 1e6,
                         rep["tp_allreduce_bytes"] / 1e9 / rep["gpus"]))
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
    print("\n".join(lines))


def check_bench_outputs(args):
    """--timeline and --chakra-out paths, checked before anything runs."""
    from .outputs import check_file, distinct
    plan = []
    if getattr(args, "timeline", None):
        plan.append(("--timeline", check_file(args.timeline, "--timeline")))
    if getattr(args, "write_cm", None):
        plan.append(("--write-cm", check_file(args.write_cm, "--write-cm")))
    if getattr(args, "chakra_out", None):
        if args.model in ("simai", "chakra"):
            raise wh.WormholeError("--chakra-out writes a training preset (not %s)" % args.model, value=args.model)
        from .workload.chakra import trace_outputs
        plan += [("--chakra-out", check_file(p, "--chakra-out")) for p in trace_outputs(args.chakra_out, args.gpus)]
    if plan:
        distinct(plan)
    return plan


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "kernel":
        kernel_main(argv[1:])
        return 0
    args = _workload_parser().parse_args(argv)
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
