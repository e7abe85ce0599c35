"""The workload runner: ``python -m wormhole.bench MODEL``'s command line, and
one run of a training iteration, SimAI or Chakra workload on a fabric (packet
or flow backend) to its report.  ``wormhole.bench`` prints the report;
``wormhole.fidelity`` and the benchmarks under bench/ run the same runs.

    args = workload_parser().parse_args(["gpt13b", "--gpus", "32"])
    rep = run_workload(args)        # dict: iteration time, traffic, events, ...
"""
import argparse
import sys
import time

import wormhole as wh

WORKLOADS = ("gpt7b", "gpt13b", "gpt22b", "gpt175b", "moe")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("wormhole.bench: error: %s\n" % message)
        sys.exit(2)

    def parse_args(self, args=None, namespace=None):
        ns = super().parse_args(args, namespace)
        if hasattr(ns, "topology"):
            _fabric_options(self, ns)
        return ns


# the default fabric's options: with --topology FILE the file's links and rates are the fabric
FABRIC_DEFAULTS = (("rate", "--rate", 100.0), ("delay", "--delay", 1000.0), ("fabric", "--fabric", "rail"),
                   ("servers_per_segment", "--servers-per-segment", None),
                   ("oversubscription", "--oversubscription", 1.0))


def _fabric_options(ap, ns):
    """Refuse the default fabric's options beside --topology (they would be ignored), then give
    the ones not set their defaults."""
    for attr, flag, default in FABRIC_DEFAULTS:
        if getattr(ns, attr, None) is not None and ns.topology:
            ap.error("%s %s: the fabric is --topology %s, whose links keep the file's rates and delays "
                     "(%s shapes the default fabric only)" % (flag, getattr(ns, attr), ns.topology, flag))
        if getattr(ns, attr, None) is None:
            setattr(ns, attr, default)


def gpt_argv(model, gpus, cc, pp, chunk_mb=None, micro_batches_pp=4):
    """bench arguments of a TP8 training run (PP > 1 runs get micro-batches to pipeline)."""
    argv = [model, "--gpus", str(gpus), "--cc", cc, "--tp", "8", "--pp", str(pp)]
    if chunk_mb is not None:
        argv += ["--chunk-mb", str(chunk_mb)]
    if pp > 1:
        argv += ["--micro-batches", str(micro_batches_pp)]
    return argv


def _delay_ns(text):
    """--delay: a positive number of ns."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("a link delay in ns, not %r" % text)
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError("a link delay in ns above 0, not %r" % text)
    return v


def _channels(text):
    from .workload.channels import MAX_CHANNELS
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_CHANNELS:
        raise argparse.ArgumentTypeError("--nccl-channels wants an integer from 1 to %d, not %r" % (MAX_CHANNELS, text))
    return n


def workload_parser():
    """The command line of ``python -m wormhole.bench MODEL`` (errors: one line, exit status 2)."""
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
    ap.add_argument("--threads", type=int, default=None, metavar="N",
                    help="the partitioned kernel on N threads (full mode): refused for training workloads, whose "
                         "connections are driven by callbacks (`python -m wormhole.bench kernel --threads 1,2` and "
                         "`python -m wormhole run --threads N` run flow files)")
    ap.add_argument("--tp", type=int)
    ap.add_argument("--pp", type=int)
    ap.add_argument("--dp", type=int)
    ap.add_argument("--ep", type=int)
    ap.add_argument("--micro-batches", type=int)
    ap.add_argument("--vpp", type=int, help="virtual pipeline stages per stage: Megatron's interleaved 1F1B")
    ap.add_argument("--nccl-algo", choices=("ring", "tree", "nvls", "nvls_tree", "auto"), default="ring",
                    help="TP and DP collective algorithm: NCCL ring (default), tree, NVLS (NVSwitch reduction "
                         "inside a server, H100), NVLS-tree (NVLS plus a tree across servers), forced where the "
                         "group can run it (else the ring), or auto (NCCL's tuner per collective)")
    ap.add_argument("--nccl-channels", type=_channels, metavar="N",
                    help="NCCL channels of the ring collectives over groups with 2 or more GPUs on each of several "
                         "servers (default: one per such GPU, each crossing servers on its own rail); 1: a single "
                         "ring through one NIC per server.  Other groups run one ring")
    ap.add_argument("--nvlink-fabric", action="store_true",
                    help="NVLink as part of the fabric: an NVSwitch per server with a port per GPU at the GPU's "
                         "NVLink bandwidth, TP traffic as packets (slower to simulate); implies "
                         "--time-quantum-ps 1")
    ap.add_argument("--time-quantum-ps", type=int, choices=(1, 1000),
                    help="tx-time resolution: 1000 (default) truncates to whole ns as the reference, 1 keeps ps "
                         "(needed at NVLink rates: a 1048-byte frame at 2.4 Tb/s lasts 3.49 ns)")
    ap.add_argument("--recompute", action="store_true", help="full activation recomputation before each backward")
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--layers", type=int, help="override the model's layer count (quick runs)")
    ap.add_argument("--gpu", choices=("a100", "h100"))
    ap.add_argument("--topology", help="topology file (default: the rail-optimized fabric for --gpus)")
    ap.add_argument("--rate", type=float, help="link rate of the default fabric, Gb/s (default 100)")
    ap.add_argument("--delay", type=_delay_ns, metavar="NS",
                    help="propagation delay of every link of the default fabric, ns (default 1000)")
    ap.add_argument("--fabric", choices=("rail", "fattree"),
                    help="the default fabric without --topology: rail-optimized (default), or the smallest k-ary "
                         "fat-tree with a host per GPU (k even, k^3/4 >= --gpus; GPUs on its first hosts)")
    ap.add_argument("--servers-per-segment", type=int,
                    help="rail fabric: servers per rail segment (default min(servers, 32)); segments are joined "
                         "by the spines, so a small value makes traffic between segments cross spines")
    ap.add_argument("--oversubscription", type=float,
                    help="rail fabric: leaf-to-spine oversubscription R (servers-per-segment / R spines; default 1)")
    ap.add_argument("--workload", help="a SimAI/AICB workload file (with model 'simai')")
    ap.add_argument("--chunk-mb", type=float, default=4.0, help="NCCL-style chunk size of collectives, MB")
    ap.add_argument("--steady-window", type=int, metavar="L",
                    help="accelerated mode: rate samples per flow in the steady test (default: the registry's)")
    ap.add_argument("--steady-theta", type=float, metavar="THETA",
                    help="accelerated mode: steady when (max - min) / mean of the window < THETA")
    ap.add_argument("--steady-goodput", action="store_true",
                    help="accelerated mode: also the quarter-goodput steady test (see `python -m wormhole params`)")
    ap.add_argument("--steady-goodput-alone", action="store_true",
                    help="accelerated mode: the quarter-goodput steady test for flows alone with their data "
                         "(config steady_goodput_alone, the default; see `python -m wormhole params`)")
    ap.add_argument("--no-steady-goodput-alone", action="store_true",
                    help="accelerated mode: the quarter-goodput test only with --steady-goodput")
    ap.add_argument("--steady-committed", action="store_true",
                    help="accelerated mode: the steady window samples the congestion control's committed rate "
                         "(HPCC's Rc; config steady_committed, the default; see `python -m wormhole params`)")
    ap.add_argument("--no-steady-committed", action="store_true",
                    help="accelerated mode: the steady window samples the per-ACK sending rate instead")
    ap.add_argument("--no-steady-onoff", action="store_true",
                    help="accelerated mode: a steady skip ends before a ring connection runs out of data")
    ap.add_argument("--steady-onoff", action="store_true",
                    help="accelerated mode: steady skips carry ring connections through their idle spells "
                         "(config steady_onoff, the default; see `python -m wormhole params`)")
    ap.add_argument("--steady-cycle", action="store_true",
                    help="accelerated mode: a ring connection steady by its own cycles joins a steady skip "
                         "with its rate window unsteady (config steady_cycle; see `python -m wormhole params`)")
    ap.add_argument("--no-steady-cycle", action="store_true",
                    help="accelerated mode: every sending flow of a skip needs a steady rate window")
    ap.add_argument("--mirrors", action="store_true",
                    help="accelerated mode: twins that form at the same moment follow one simulated twin "
                         "(config memo_mirrors, the default; see `python -m wormhole params`)")
    ap.add_argument("--no-mirrors", action="store_true",
                    help="accelerated mode: simulate every twin on its own (memo_mirrors off)")
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


# bench switch pairs --X / --no-X (argparse dest, without "no_") and the config bool each sets
SWITCH_PAIRS = (("steady_goodput_alone", "steady_goodput_alone"), ("steady_committed", "steady_committed"), ("steady_onoff", "steady_onoff"),
                ("steady_cycle", "steady_cycle"), ("mirrors", "memo_mirrors"))


def run_workload(args, keep=None):
    """Build the fabric and the job, run it, return the report dict (and, if
    ``keep`` is a dict, put the network and the job in it)."""
    from .units import US, gbps
    from .workload import GPUS, SimAIIteration, TrainingJob, load_preset, read_simai
    args.mode = resolve_mode(args.backend, args.mode)
    if getattr(args, "threads", None):
        raise wh.WormholeError("--threads %d: the partitioned kernel runs flow files only; a training workload drives "
                               "its connections through callbacks when messages end, which a run whose logical "
                               "processes are ahead of each other in time cannot take" % args.threads,
                               value=args.threads)
    timeline = getattr(args, "timeline", None)
    gps = getattr(args, "gpus_per_server", 8) if args.model == "chakra" else 8
    if args.topology:
        topo = wh.read_topology(args.topology)
    elif gps != 8 and getattr(args, "fabric", "rail") == "rail":
        topo = wh.rail_optimized(args.gpus, gpus_per_server=gps, rate=gbps(args.rate), delay=_delay_ps(args))
    else:
        topo = default_fabric(args)
    quantum = getattr(args, "time_quantum_ps", None)
    if getattr(args, "nvlink_fabric", False):
        from .nvswitch import add_nvswitches
        if args.backend == "flow":
            raise wh.WormholeError("--nvlink-fabric runs on the packet backend")
        if quantum == 1000:
            raise wh.WormholeError("--nvlink-fabric needs --time-quantum-ps 1 (whole ns cannot time NVLink frames)")
        add_nvswitches(topo, args.gpus, gps, gbps(nvlink_gbps(args)), US // 2)
        quantum = 1
    knobs = {} if quantum is None else {"time_quantum_ps": quantum}
    if args.mode == "accelerated":
        for name in ("steady_window", "steady_theta"):
            if getattr(args, name, None) is not None:
                knobs[name] = getattr(args, name)
        if getattr(args, "steady_goodput", False):
            knobs["steady_goodput"] = True
        for flag, name in SWITCH_PAIRS:         # --X / --no-X: the config's bool, either way
            on, off = getattr(args, flag, False), getattr(args, "no_" + flag, False)
            if on and off:
                raise wh.WormholeError("--%s and --no-%s contradict each other" % ((flag.replace("_", "-"),) * 2))
            if on or off:
                knobs[name] = bool(on)
    cfg = wh.Config.preset(args.cc, max(1, round(topo.nic_rate() / 1e9)), accelerate=args.mode == "accelerated",
                           memo_db=args.memo_db, **knobs)
    if timeline and args.backend != "flow":
        cfg = cfg.copy(sample_interval=args.sample_interval)
    net = wh.Network(topo, cfg, backend=args.backend)
    chunk = int(args.chunk_mb * 1024 * 1024)
    channels = getattr(args, "nccl_channels", None)
    if args.model == "simai":
        if not args.workload:
            raise wh.WormholeError("model 'simai' needs --workload FILE")
        job = SimAIIteration(net, read_simai(args.workload), args.gpus, chunk_bytes=chunk,
                             iterations=args.iterations, nccl_algo=getattr(args, "nccl_algo", "ring"),
                             nvls=bool(args.gpu and GPUS[args.gpu].nvls), nccl_channels=channels)
    elif args.model == "chakra":
        from .workload.chakra import ChakraRun, ChakraTrace
        if not args.trace:
            raise wh.WormholeError("model 'chakra' needs --trace PREFIX (files PREFIX.0.et ...)")
        job = ChakraRun(net, ChakraTrace.load(args.trace, args.gpus, args.comm_group), gpus_per_server=gps,
                        chunk_bytes=chunk, resources=getattr(args, "resources", "none"), nccl_channels=channels)
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
        if ((pre.parallel.vpp > 1 or pre.zero or getattr(args, "nccl_algo", "ring") != "ring"
             or topo.nvlink is not None) and (getattr(args, "chakra_out", None) or timeline)):
            raise wh.WormholeError("--chakra-out and --timeline do not write interleaved (VPP), ZeRO, non-ring "
                                   "NCCL or NVLink-fabric schedules yet")
        job = TrainingJob(net, pre, chunk_bytes=chunk, iterations=args.iterations,
                          nccl_algo=getattr(args, "nccl_algo", "ring"), nccl_channels=channels)
    out_files, plan = {}, None
    if getattr(args, "chakra_out", None) and args.model not in ("simai", "chakra"):
        from .workload.chakra import chakra_files
        out_files.update(chakra_files(job, args.chakra_out))
    if timeline and args.model not in ("simai", "chakra"):
        from .workload.chakra import ChakraRun, training_trace
        if args.iterations != 1:
            raise wh.WormholeError("--timeline records one iteration of a training preset", value=args.iterations)
        plan, job = job, ChakraRun(net, training_trace(job), gpus_per_server=job.gps, chunk_bytes=chunk,
                                   nccl_channels=channels)
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
    rep.update({"mode": args.mode, "topology": fabric_label(args) + (" + NVSwitches" if topo.nvlink else ""),
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
    rep.update(accel_counts(st))
    return rep


ACCEL_COUNTS = ("events_skipped_by", "skip_rejects", "skip_backs_by", "mirror_parts_by", "acks_by")


def accel_counts(st):
    """Why an accelerated run skipped what it did, from its Network.stats: skipped events by source, the
    partitions refused by the test that blocked them, skips ended early and mirrors parted, by cause
    (nonzero counts only; empty for a full run)."""
    return {k: {name: v for name, v in (st.get(k) or {}).items() if v} for k in ACCEL_COUNTS}


def _largest(d, top):
    """The items of a dict of counts, largest first (ties by name): the first ``top`` (all of them if
    None), and the rest."""
    items = sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))
    n = len(items) if top is None else top
    return items[:n], items[n:]


def share_text(d, top=None, empty="none"):
    """'name 12.3%, ...' of a dict of counts as shares of their sum, largest first (the first ``top``, then
    the share of the rest)."""
    total = sum(d.values())
    if not total:
        return empty
    shown, rest = _largest(d, top)
    text = ", ".join("%s %.1f%%" % (k, 100.0 * v / total) for k, v in shown)
    left = sum(v for _, v in rest)
    return text + (", %d more %.1f%%" % (len(rest), 100.0 * left / total) if left else "")


def count_text(d, top=None, empty="none"):
    """'name count, ...' of a dict of counts, largest first (the first ``top``, then how many more)."""
    shown, rest = _largest(d, top)
    text = ", ".join("%s %d" % kv for kv in shown) or empty
    return text + (", %d more" % len(rest) if rest else "")


def nvlink_gbps(args):
    """The NVLink bandwidth (Gb/s per direction) of the run's GPUs: the preset's GPU (or --gpu)."""
    from .workload.models import GPUS, load_preset
    if args.gpu:
        return GPUS[args.gpu].nvlink_gbps
    if args.model in ("simai", "chakra"):
        return GPUS["a100"].nvlink_gbps
    return load_preset(args.model).gpu.nvlink_gbps


def default_fabric(args):
    """The fabric of a run without --topology: --fabric, --servers-per-segment, --oversubscription, --rate,
    --delay."""
    from .units import gbps
    if getattr(args, "fabric", "rail") == "fattree":
        k = 2
        while k ** 3 // 4 < args.gpus:
            k += 2
        return wh.fat_tree(k, rate=gbps(args.rate), delay=_delay_ps(args))
    return wh.rail_optimized(args.gpus, servers_per_segment=getattr(args, "servers_per_segment", None),
                             oversubscription=getattr(args, "oversubscription", 1.0), rate=gbps(args.rate),
                             delay=_delay_ps(args))


def _delay_ps(args):
    """--delay (ns) in whole ps."""
    return int(round(args.delay * 1000))


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
