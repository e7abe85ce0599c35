"""Command line: ``python -m wormhole run | fidelity | cluster | cluster-pool | plot | params``.

Bad input prints one line (``wormhole: error: ...``) and exits 2.  Output
paths are checked before anything is simulated (``wormhole.outputs``), and a
command writes all its files or none.
"""
import argparse
import json
import os
import sys
import textwrap

import numpy as np

from .config import Config, cli_help, docs_markdown
from .errors import ConfigError, NotAvailableError, WormholeError
from .flows import read_flows
from .network import Network
from .outputs import check_file, check_folder, distinct, write_files
from .topology import read_topology
from .units import NS, US


OUTPUT_RULES = ("Output paths are checked before anything runs: an output folder (DIR) may exist or is created "
                "inside an existing folder; an output file (FILE) that exists is replaced; an existing file given "
                "as DIR, an existing folder given as FILE, a missing parent folder or one that cannot be written "
                "in is an error (one line, exit 2, nothing written).")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("wormhole: error: %s\n" % message)
        sys.exit(2)


def _build_parser(argv=None):
    """The parser; the cluster subcommands' options (which import the cluster layer) are added only when
    the command line may need them (that command, or no command: help and errors list every one)."""
    first = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)
    cluster_args = first is None or first.startswith("cluster")
    p = _Parser(prog="python -m wormhole", description="Packet-level simulation of RDMA datacenter fabrics.",
                epilog=OUTPUT_RULES)
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    r = sub.add_parser("run", help="run reference-format inputs and write fct.txt / pfc.txt",
                       description=textwrap.fill("Run a topology and a flow file (HPCC-ns-3 formats). With "
                                                 "--config alone, the config's TOPOLOGY_FILE and FLOW_FILE name "
                                                 "the inputs.", 100) + "\n\n" + textwrap.fill(OUTPUT_RULES, 100),
                       epilog="parameters for --set NAME=VALUE:\n" + cli_help(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--topology", help="topology.txt (reference format)")
    r.add_argument("--flows", help="flow.txt (reference format)")
    r.add_argument("--htsim", metavar="FILE.cm", help="an htsim connection matrix instead of --flows (node n is the "
                   "topology's n-th host; triggers start connections when others finish)")
    r.add_argument("--write-cm", metavar="FILE", help="also write the run's flows as an htsim connection matrix "
                   "(replaced if it exists; its folder must exist)")
    r.add_argument("--timeline", metavar="FILE", help="write a Chrome/Perfetto trace-event JSON of the run (flows "
                   "per connection, link utilisation and queue counters sampled every --sample-interval, default "
                   "10 us, skipped periods of the accelerator); replaced if it exists, its folder must exist")
    r.add_argument("--config", help="config.txt (reference keys)")
    r.add_argument("--out", required=True, metavar="DIR", help="output folder for fct.txt and pfc.txt (created if "
                   "missing, in an existing folder; files of those names in it are replaced)")
    r.add_argument("--cc", help="congestion control: none, dcqcn, hpcc, timely, dctcp; without --config the "
                   "reference run script's preset of that name at the NIC rate (presets: dcqcn_paper, "
                   "dcqcn_vwin, timely_vwin, ... also accepted); with --config it replaces CC_MODE")
    r.add_argument("--trace", metavar="DIR", help="write rates.csv and queues.csv (rate per flow, queue per "
                   "switch port over time) to DIR")
    r.add_argument("--sample-interval", type=float, default=None, metavar="US",
                   help="sampling period of --trace in microseconds (default 1 us)")
    r.add_argument("--seed", type=int, help="random seed")
    r.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    r.add_argument("--backend", default="packet", choices=("packet", "flow"),
                   help="packet kernel (default), or the flow-level backend (CM02 max-min sharing of fluid flows: "
                        "fct.txt only; no packets, PFC, congestion control or --trace)")
    r.add_argument("--flow-model", choices=("packet", "maxmin", "cm02", "lv08"),
                   help="of the flow backend: packet (default: calibrated to the packet kernel, payload "
                        "capacities), maxmin (plain max-min), cm02 or lv08 (SimGrid 3.32's models of those names); "
                        "replaces the config's flow_model")
    r.add_argument("--mode", choices=("full", "accelerated"),
                   help="of the packet backend: full (every packet event) or accelerated (the Wormhole "
                        "fast-forward); default: the config's ACCELERATE, else full")
    r.add_argument("--threads", type=int, default=None, metavar="N",
                   help="full packet mode on N threads (the partitioned kernel: the sequential run's output for every "
                        "N, same-time events in the reference's order)")
    r.add_argument("--stats-json", metavar="FILE", help="write the run's statistics as one JSON object to FILE "
                   "(replaced if it exists; its folder must exist)")
    r.add_argument("--quiet", action="store_true", help="no summary")
    fi = sub.add_parser("fidelity", help="accelerated (or flow-backend) against full packet runs of the same input",
                        description="Run the same input in full packet mode and accelerated (with --backend flow: "
                                    "on the flow backend); report per-flow "
                                    "(per-message for training jobs) FCT error, iteration-time error, events "
                                    "and wall-clock ratios; write fidelity.csv, summary.json, fidelity.png.")
    fi.add_argument("--config", help="reference config.txt (inputs from TOPOLOGY_FILE / FLOW_FILE)")
    fi.add_argument("--topology")
    fi.add_argument("--flows")
    fi.add_argument("--bench", nargs=argparse.REMAINDER,
                    help="the rest of the line: arguments of python -m wormhole.bench (e.g. gpt13b --gpus 32)")
    fi.add_argument("--backend", default="packet", choices=("packet", "flow"),
                    help="flow: compare the flow-level backend (instead of accelerated mode) with full packet runs")
    fi.add_argument("--noise", action="store_true",
                    help="also a full run with every link 1 ns longer (the least change every run feels), against "
                         "the full run: the simulation's own sensitivity, beside the error measured (on a chaotic "
                         "input, errors below it are not the accelerator's to remove)")
    fi.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing, in an existing "
                    "folder; fidelity.csv, summary.json and fidelity.png in it are replaced)")
    cl = sub.add_parser("cluster", help="replay a GPU-cluster job trace under a policy and contention models",
                        description="Trace-driven cluster simulation (MoSim's model): jobs arrive, wait in a FIFO "
                                    "queue, are placed by the policy, and train at an iteration time set by the "
                                    "contention model (none, fixed, mosim, flow, packet). Writes summary.csv and, "
                                    "per model, jobs.csv, summary.json and jct.png.")
    cp = sub.add_parser("cluster-pool", help="build a model pool YAML from MoSim's profile CSVs")
    if cluster_args:
        from .cluster.command import add_arguments, add_pool_arguments
        add_arguments(cl)
        add_pool_arguments(cp)
    sub.add_parser("params", help="print the parameter registry as a Markdown table")
    sw = sub.add_parser("sweep", help="run a grid of simulations (workload x topology x CC x parameters x seeds), "
                        "each point once", description="Expand the spec's grid, compute the points that have no "
                        "stored result (keyed by a hash of the inputs and the version), on a local process pool, "
                        "serially or on Dask; write results.csv (results.parquet with pyarrow) and summary.png.")
    from .sweep import add_arguments as add_sweep_arguments
    add_sweep_arguments(sw)
    pl = sub.add_parser("plot", help="draw rate-vs-time and queue-vs-time PNGs from a --trace folder")
    pl.add_argument("--trace", required=True, metavar="DIR", help="folder with rates.csv and queues.csv")
    pl.add_argument("--out", required=True, metavar="DIR", help="folder for rates.png and queues.png (created if "
                    "missing, in an existing folder; those files in it are replaced)")
    return p


def _load_config(args, nic_gbps_of):
    """Config from --config, else the preset named by --cc (at the NIC rate of the
    topology), else defaults; then --set, --cc, --seed overrides."""
    from .cc import ALIASES, PRESETS
    over = {}
    for item in args.set:
        if "=" not in item:
            raise ConfigError("--set expects NAME=VALUE", value=item)
        k, v = item.split("=", 1)
        over[k.strip()] = v.strip()
    if args.config:
        cfg = Config.from_file(args.config)
        if args.cc:
            over["cc"] = args.cc
    elif args.cc and args.cc != "none":
        name = ALIASES.get(args.cc, args.cc)
        if name not in PRESETS:
            raise ConfigError("unknown congestion control or preset %r" % args.cc, value=args.cc)
        cfg = Config.preset(name, nic_gbps_of())
    else:
        cfg = Config()
    if args.seed is not None:
        over["seed"] = args.seed
    if args.trace:
        over["sample_interval"] = args.sample_interval if args.sample_interval is not None else 1.0
    return cfg.copy(**over)


def _inputs(args, cfg_files):
    topo = args.topology or cfg_files.get("TOPOLOGY_FILE")
    if getattr(args, "htsim", None) and args.flows:
        raise ConfigError("give --flows or --htsim, not both", value=args.htsim)
    flows = args.flows or getattr(args, "htsim", None) or cfg_files.get("FLOW_FILE")
    if not topo:
        raise ConfigError("no topology: give --topology or a config with TOPOLOGY_FILE", args.config)
    if not flows:
        raise ConfigError("no flows: give --flows or a config with FLOW_FILE", args.config)
    return topo, flows


def _summary(net, topo_path, flows_path):
    st = net.stats
    res = net.results
    done = res[res["fct"] >= 0]
    t = net.topology
    flow = st.get("backend") == "flow"
    lines = [
        "topology   %s: %d nodes (%d hosts, %d switches), %d links" % (
            topo_path, t.n_nodes, len(t.hosts), len(t.switches), len(t.links)),
        "flows      %s: %d, %d completed" % (flows_path, st["flows"], st["flows_completed"])]
    if flow:
        lines += [
            "backend    flow (%s max-min sharing of fluid flows: no packets, queues, PFC or congestion control)"
            % st["flow_model"],
            "simulated  %.3f us" % (st["sim_time_ps"] / US),
            "wall-clock %.3f s, %d flow-level events (flow starts and ends), %d rate solves" % (
                st["wall_seconds"], st["events"], st["rate_solves"])]
    else:
        acc = bool(net.config.accelerate)
        lines += [
            "cc         %s" % net.config.cc,
            "mode       %s" % ("accelerated (steady partitions fast-forwarded)" if acc else "full (every packet event)"
                               + _parallel_note(st)),
            "simulated  %.3f us" % (st["sim_time_ps"] / US),
            "wall-clock %.3f s, %d events, %.2f M events/s" % (
                st["wall_seconds"], st["events"], st["events_per_second"] / 1e6)]
        if acc:
            total = st["events"] + st["events_skipped"]
            lines.append("skipped    %d events of %d (%.2f%%) in %d skips (%d skip-backs), %d payload bytes "
                         "fast-forwarded without packets (about %d data packets)" % (
                             st["events_skipped"], total, 100 * st["events_skipped"] / max(1, total), st["skips"],
                             st["skip_backs"], st["bytes_skipped"], -(-st["bytes_skipped"] // int(net.config.mtu))))
        lines.append("packets    %d data, %d ACK/NACK%s, %d drops, %d PFC pauses, %d ECN marks" % (
            st["data_packets"], st["ctrl_packets"], " simulated" if acc else "", st["drops"], st["pfc_pauses"],
            st["ecn_marks"]))
    if len(done):
        slow = done["fct"] / np.maximum(done["standalone_fct"], 1)
        lines.append("FCT        mean %.1f us, p50 %.1f us, p99 %.1f us; slowdown mean %.3f, p99 %.3f" % (
            done["fct"].mean() / US, _percentile(done["fct"], 50) / US, _percentile(done["fct"], 99) / US,
            slow.mean(), _percentile(slow, 99)))
    return "\n".join(lines)


def _parallel_note(st):
    p = st.get("parallel")
    if not p:
        return ""
    return (", %d threads over %d logical processes (cut by %s; lookahead %.3f us, %d rounds, %d packets across "
            "cuts)" % (p["threads"], p["lps"], p.get("cut", "rate"), p["lookahead_ps"] / US if p["lps"] > 1 else 0.0,
                       p["rounds"], p["cut_packets"]))


def _percentile(values, q):
    """np.percentile's default (linear) rule, without the numpy.ma import it costs."""
    a = np.sort(np.asarray(values, dtype=float))
    pos = (len(a) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(a) - 1)
    return a[lo] + (a[hi] - a[lo]) * (pos - lo)


def _stats_json(net):
    st = net.stats
    keys = ["events", "wall_seconds", "events_per_second", "flows", "flows_completed", "backend"]
    if st.get("backend") == "flow":
        keys += ["flow_model", "rate_solves"]
    else:
        keys += ["events_by_kind", "data_packets", "ctrl_packets", "drops", "pfc_pauses", "pfc_resumes", "ecn_marks"]
        if st.get("parallel"):
            keys.append("parallel")
        if net.config.accelerate:
            keys += ["events_skipped", "skips", "skip_backs", "bytes_skipped", "time_skipped_ps"]
    keep = {k: st.get(k, "packet" if k == "backend" else None) for k in keys}
    if st.get("backend") != "flow":
        keep["packets"] = st["data_packets"] + st["ctrl_packets"]
        keep["mode"] = "accelerated" if net.config.accelerate else "full"
    keep["sim_end_ns"] = st["sim_time_ps"] // NS
    return json.dumps(keep, sort_keys=True) + "\n"


RUN_FILES = ("fct.txt", "pfc.txt")
TRACE_FILES = ("rates.csv", "queues.csv")


def check_run_outputs(args):
    """Every output path of ``run``, checked before anything runs: [(option, absolute path)]."""
    plan = [("--out", p) for p in check_folder(args.out, "--out", RUN_FILES[:1] if args.backend == "flow"
                                               else RUN_FILES)]
    folders = [args.out]
    if args.trace:
        plan += [("--trace", p) for p in check_folder(args.trace, "--trace", TRACE_FILES)]
        folders.append(args.trace)
    if args.stats_json:
        plan.append(("--stats-json", check_file(args.stats_json, "--stats-json", folders)))
    if getattr(args, "write_cm", None):
        plan.append(("--write-cm", check_file(args.write_cm, "--write-cm", folders)))
    if getattr(args, "timeline", None):
        plan.append(("--timeline", check_file(args.timeline, "--timeline", folders)))
    distinct(plan)
    return plan


def _check_backend(args):
    if args.backend != "flow":
        if getattr(args, "flow_model", None) is not None:
            raise NotAvailableError("--flow-model applies to the flow backend (--backend flow)", value=args.flow_model)
        return
    for opt, given in (("--mode", args.mode), ("--cc", args.cc), ("--trace", args.trace)):
        if given is not None:
            raise NotAvailableError("%s applies to the packet backend; the flow backend (max-min sharing of fluid "
                                    "flows) has no packets, congestion control or queues" % opt, value=given)


def cmd_run(args):
    _check_backend(args)
    check_run_outputs(args)
    files = Config.from_file(args.config).files if args.config else {}
    topo_path, flows_path = _inputs(args, files)
    topo = read_topology(topo_path)
    cfg = _load_config(args, lambda: max(1, round(topo.nic_rate() / 1e9)))
    if args.mode is not None:
        cfg = cfg.copy(accelerate=args.mode == "accelerated")
    if args.threads is not None:
        if args.backend == "flow":
            raise ConfigError("--threads runs the packet kernel's full mode, not the flow backend", value=args.threads)
        cfg = cfg.copy(threads=args.threads)
    if getattr(args, "flow_model", None) is not None:
        cfg = cfg.copy(flow_model=args.flow_model)
    cm = None
    if getattr(args, "htsim", None) and flows_path == args.htsim:
        from .workload.htsim import read_cm
        cm = read_cm(args.htsim)
        flows = []
    else:
        flows = read_flows(flows_path, topo)
    tl = poll = None
    if getattr(args, "timeline", None):
        from .timeline import Timeline
        tl = Timeline("python -m wormhole run %s" % flows_path)
        if args.backend != "flow" and not args.trace:
            cfg = cfg.copy(sample_interval=args.sample_interval if args.sample_interval is not None else 10.0)
        if cfg.accelerate:
            poll = lambda r: tl.poll_skips(net)     # skips are seen at flow completions
    net = Network(topo, cfg, backend=args.backend)
    for f in flows:
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport, on_done=poll)
    if cm is not None:
        from .workload.htsim import HtsimRun
        HtsimRun(net, cm, observer=poll).start()
    net.run(progress=True)
    files = {os.path.join(args.out, "fct.txt"): "".join(net.fct_lines())}
    if args.backend != "flow":
        files[os.path.join(args.out, "pfc.txt")] = "".join(net.pfc_lines())
    if args.trace:
        from .trace import trace_files
        files.update({os.path.join(args.trace, n): text for n, text in trace_files(net).items()})
    if args.stats_json:
        files[args.stats_json] = _stats_json(net)
    if tl is not None:
        from .timeline import network_timeline
        files[args.timeline] = network_timeline(net, timeline=tl).to_json()
    if getattr(args, "write_cm", None):
        from .workload.htsim import cm_text, network_connections
        files[args.write_cm] = cm_text(*network_connections(net), header="# wormhole run of %s on %s" % (
            flows_path, topo_path))
    write_files(files)          # all of them or none
    if not args.quiet:
        print(_summary(net, topo_path, flows_path))
        print("wrote      %s" % ", ".join(files))
    return 0


PLOT_FILES = ("rates.png", "queues.png")


def cmd_plot(args):
    """rates.png and queues.png of a --trace folder, drawn aside and moved in together."""
    import tempfile
    from .trace import plot_trace
    check_folder(args.out, "--out", PLOT_FILES)
    with tempfile.TemporaryDirectory(prefix="wormhole-plot-") as tmp:
        drawn = plot_trace(args.trace, tmp)
        files = {}
        for path in drawn:
            with open(path, "rb") as fh:
                files[os.path.join(args.out, os.path.basename(path))] = fh.read()
    write_files(files)
    return list(files)


def main(argv=None):
    parser = _build_parser(argv)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "fidelity":
            from .fidelity import run_fidelity
            from .fidelity import format_report
            summary, written = run_fidelity(args)
            print(format_report(summary))
            print("wrote %s" % ", ".join(written))
            return 0
        if args.cmd == "cluster":
            from .cluster.command import drawn_note, print_rows, run_cluster
            rows, cols = run_cluster(args)
            print_rows(rows, cols, args.json)
            note = drawn_note(rows, args)
            if note:
                (sys.stderr if args.json else sys.stdout).write(note + "\n")
            if not args.json:
                print("wrote %s" % os.path.join(args.out, "summary.csv"))
            return 0
        if args.cmd == "cluster-pool":
            from .cluster.command import make_pool
            pool = make_pool(args)
            print("wrote %s (%d models)" % (args.out, len(pool.models)))
            return 0
        if args.cmd == "sweep":
            from .sweep import main_args
            return main_args(args)
        if args.cmd == "params":
            sys.stdout.write(docs_markdown())
            return 0
        if args.cmd == "plot":
            for path in cmd_plot(args):
                print("wrote %s" % path)
            return 0
        parser.print_help()
        return 2
    except WormholeError as e:
        sys.stderr.write("wormhole: error: %s\n" % e)
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("wormhole: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
