"""Accelerated (or flow-level) against full packet runs of the same input: per-flow (or per-message)
FCT error, iteration-time error, events and wall-clock ratios; CSV, JSON and a
plot.  Used by ``python -m wormhole fidelity``."""
import json
import os
import time

import numpy as np

from .config import Config
from .flows import read_flows
from .network import Network
from .outputs import check_file, check_folder, figure_bytes, write_atomic
from .topology import read_topology


def _run_reference(topo_path, flows_path, cfg, backend="packet"):
    topo = read_topology(topo_path)
    flows = read_flows(flows_path, topo)
    net = Network(topo, cfg, backend=backend)
    for f in flows:
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
    t0 = time.perf_counter()
    net.run()
    wall = time.perf_counter() - t0
    return net, wall, net.results["fct"].astype(float), None


def _run_bench(argv, accelerated, backend="packet"):
    from .bench import _workload_parser, run_workload
    args = _workload_parser().parse_args(list(argv) + ["--no-progress", "--backend", backend, "--mode",
                                                         "accelerated" if accelerated else "full"])
    keep = {}
    rep = run_workload(args, keep)
    net = keep["net"]
    return net, rep["wall_seconds"], message_fct(net), rep["iteration_time_ps"]


def message_fct(net):
    """Per message, the time from reaching the head of its connection (posted,
    or the previous message on the connection completed, whichever is later)
    to its completion: the message's own transfer time, free of the head-of-line
    wait behind earlier messages, which any small shift in post times reorders.

    Messages are ordered by (connection, size, position among the messages of
    that size on it): callbacks due at about the same moment may post in another
    order in another run (two collectives sharing a connection interleave by
    which step is ready first), so neither message ids nor a connection's k-th
    message pair the same messages of two runs; the k-th message of a given
    size on a connection does."""
    keys, fct = [], []
    last_done, count = {}, {}
    for conn, size, posted, done in net._messages:
        head = max(posted, last_done.get(conn, posted))
        fct.append(done - head if done >= 0 else -1)
        last_done[conn] = done
        k = (conn, size)
        keys.append((conn, size, count.get(k, 0)))
        count[k] = count.get(k, 0) + 1
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return np.array(fct, dtype=float)[order] if order else np.empty(0)


def compare(full, acc):
    """Error statistics between two runs (each: net, wall, fct array, iteration time)."""
    nf, wf, ff, itf = full
    na, wa, fa, ita = acc
    ok = (ff > 0) & (fa > 0)
    err = np.abs(fa[ok] - ff[ok]) / ff[ok]
    sf, sa = nf.stats, na.stats
    sa.setdefault("skips", 0)
    sa.setdefault("skip_backs", 0)
    out = {
        "flows": int(ok.sum()),
        "fct_err_mean_pct": 100 * float(err.mean()) if len(err) else 0.0,
        "fct_err_p50_pct": 100 * float(np.percentile(err, 50)) if len(err) else 0.0,
        "fct_err_p99_pct": 100 * float(np.percentile(err, 99)) if len(err) else 0.0,
        "fct_err_max_pct": 100 * float(err.max()) if len(err) else 0.0,
        "events_full": sf["events"], "events_accelerated": sa["events"],
        "events_skipped": sa["events_skipped"],
        "skipped_pct": 100 * sa["events_skipped"] / max(1, sa["events"] + sa["events_skipped"]),
        "event_ratio": sf["events"] / max(1, sa["events"]),
        "wall_full_s": wf, "wall_accelerated_s": wa, "wall_ratio": wf / wa if wa > 0 else 0.0,
        "skips": sa["skips"], "skip_backs": sa["skip_backs"],
    }
    if itf is not None:
        out["iteration_full_ms"] = itf / 1e9
        out["iteration_accelerated_ms"] = ita / 1e9
        out["iteration_err_pct"] = 100 * abs(ita - itf) / itf
    return out, ff, fa


OUT_FILES = ("fidelity.csv", "summary.json", "fidelity.png")


def write_outputs(out_dir, summary, ff, fa):
    rows = ["id,fct_full_ps,fct_accelerated_ps,error\n"]
    for i, (a, b) in enumerate(zip(ff, fa)):
        rows.append("%d,%d,%d,%.6f\n" % (i, a, b, abs(b - a) / a if a > 0 else 0.0))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = (ff > 0) & (fa > 0)
    err = np.sort(100 * np.abs(fa[ok] - ff[ok]) / ff[ok])
    fig, ax = plt.subplots(figsize=(6, 4))
    if len(err):
        ax.plot(err, np.arange(1, len(err) + 1) / len(err))
    ax.set_xlabel("|FCT error| accelerated vs full (%)")
    ax.set_ylabel("CDF of flows")
    ax.set_title("fidelity: %.1f%% of events skipped" % summary["skipped_pct"])
    fig.tight_layout()
    png = figure_bytes(fig)
    plt.close(fig)
    files = dict(zip(OUT_FILES, ("".join(rows), json.dumps(summary, indent=1, sort_keys=True) + "\n", png)))
    write_atomic(out_dir, files)
    return [os.path.join(out_dir, n) for n in OUT_FILES]


def _bench_args(argv):
    """The --bench arguments, parsed and their output paths checked before anything runs."""
    from .bench import _workload_parser
    args = _workload_parser().parse_args(list(argv))
    if args.memo_db:
        check_file(args.memo_db, "--memo-db")
    return args


def run_fidelity(args):
    flow = getattr(args, "backend", "packet") == "flow"
    check_folder(args.out, "--out", OUT_FILES)
    if args.bench:
        _bench_args(args.bench)
        full = _run_bench(args.bench, False)
        acc = _run_bench(args.bench, False, "flow") if flow else _run_bench(args.bench, True)
    else:
        cfg = Config.from_file(args.config) if args.config else Config()
        topo = args.topology or cfg.files.get("TOPOLOGY_FILE")
        flows = args.flows or cfg.files.get("FLOW_FILE")
        if not topo or not flows:
            from .errors import ConfigError
            raise ConfigError("fidelity needs --bench ARGS, or --topology/--flows (or a config naming them)")
        full = _run_reference(topo, flows, cfg.copy(accelerate=False))
        acc = (_run_reference(topo, flows, cfg, "flow") if flow
               else _run_reference(topo, flows, cfg.copy(accelerate=True)))
    summary, ff, fa = compare(full, acc)
    written = write_outputs(args.out, summary, ff, fa)
    return summary, written
