"""Accelerated packet runs, or flow-backend runs, against full packet runs of
the same input: per-flow (per-message for training jobs) FCT error,
iteration-time error, events and wall-clock ratios; CSV, JSON and a plot.  Used
by ``python -m wormhole fidelity``.

Every key, column and label names what was compared with the full run:
``accelerated`` (the packet kernel's fast-forward) or ``flow`` (the flow-level
backend, which has no packet events, so nothing it "skips").
"""
import json
import os
import time

import numpy as np

from .config import Config
from .flows import read_flows
from .network import Network
from .outputs import check_file, check_folder, figure_bytes, write_atomic
from .runner import accel_counts, count_text, run_workload, share_text, workload_parser
from .topology import Topology, read_topology, write_topology
from .units import NS

LABELS = {"accelerated": "accelerated packet", "flow": "flow backend"}

# --noise: the full run against itself with every link this much longer, ps (the kernel's default time
# quantum, a whole ns: the least change that every run feels; 1 ppm slower links are absorbed where no CC
# reads a link's rate, as transmission times truncate to whole ns)
NOISE_PS = NS
NOISE_TEXT = "every link 1 ns longer"


def relinked(topo, link):
    """A copy of ``topo`` whose links are ``link(lk)`` -> (rate bps, delay ps) of each of its links (its nodes,
    names, error rates and domains as they were)."""
    out = Topology(topo.name)
    for name, sw in zip(topo.names, topo.is_switch):
        (out.add_switch if sw else out.add_host)(name)
    for lk in topo.links:
        rate, delay = link(lk)
        out.add_link(lk.a, lk.b, int(rate), int(delay), lk.error_rate)
    out.gpus_per_server, out.link_domain, out.nvlink = topo.gpus_per_server, dict(topo.link_domain), topo.nvlink
    return out


def _longer(lk):
    """A link's rate and its delay NOISE_PS longer (relinked's ``link``)."""
    return lk.rate_bps, lk.delay_ps + NOISE_PS


def longer_links(topo):
    """A copy of ``topo`` with every link NOISE_PS longer."""
    return relinked(topo, _longer)


def bench_topology(argv):
    """The --topology file of bench arguments (in any form the parser takes), or None."""
    return workload_parser().parse_args(list(argv)).topology


def topology_copy(argv, tmp, link, src=None):
    """bench arguments whose --topology file (the one the parser takes, ``src`` if known) is replaced by a
    copy in the folder ``tmp`` whose links are ``link(lk)`` (see relinked): the copy is named last, and the
    parser takes the last --topology in whatever form or abbreviation the user wrote theirs."""
    src = src or bench_topology(argv)
    path = os.path.join(tmp, os.path.basename(src))
    write_topology(relinked(read_topology(src), link), path)
    return list(argv) + ["--topology", path]


def longer_bench_argv(argv, tmp):
    """bench arguments whose fabric has every link NOISE_PS longer: a copy of the --topology file in the
    folder ``tmp``, or the default fabric's --delay plus that."""
    argv = list(argv)
    args = workload_parser().parse_args(argv)
    if args.topology:
        return topology_copy(argv, tmp, _longer, args.topology)
    delay = args.delay
    argv = [a for k, a in enumerate(argv) if not (a == "--delay" or a.startswith("--delay=")
                                                  or (k > 0 and argv[k - 1] == "--delay"))]
    return argv + ["--delay", repr(delay + NOISE_PS / NS)]


def same_run(a, b):
    """Two full runs (net, wall, fct array, iteration) with the same iteration time and every FCT the same:
    a perturbation changed no event time, so their difference is no noise floor."""
    return a[3] == b[3] and len(a[2]) == len(b[2]) and bool((a[2] == b[2]).all())


def noise_floor(full, other):
    """The full run ``full`` against ``other``, the same input perturbed (NOISE_TEXT): the error the
    simulation makes against itself under a change no accelerator avoids."""
    n, _, _ = compare(full, other)
    out = {"perturbation": NOISE_TEXT, "same_run": same_run(full, other)}
    for k in ("fct_err_mean_pct", "fct_err_p99_pct", "fct_err_max_pct", "iteration_err_pct"):
        if k in n:
            out[k] = n[k]
    out["rank_p99_pct"] = (n.get("rank_paired") or {}).get("p99_pct")
    return out


def _run_reference(topo_path, flows_path, cfg, backend="packet", longer=False):
    topo = read_topology(topo_path)
    if longer:
        topo = longer_links(topo)
    flows = read_flows(flows_path, topo)
    net = Network(topo, cfg, backend=backend)
    for f in flows:
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
    t0 = time.perf_counter()
    net.run()
    wall = time.perf_counter() - t0
    return net, wall, net.results["fct"].astype(float), None


def _run_bench(argv, accelerated, backend="packet"):
    """One bench run: full or accelerated packet, or (``backend="flow"``) the flow backend."""
    extra = ["--no-progress", "--backend", backend]
    if backend == "packet":
        extra += ["--mode", "accelerated" if accelerated else "full"]
    args = workload_parser().parse_args(list(argv) + extra)
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
    return message_table(net)[1]


def message_table(net):
    """(keys, fct, head times) of every message, in the order of ``message_fct``:
    keys are (connection, size, k-th message of that size on it)."""
    keys, fct, heads = [], [], []
    last_done, count = {}, {}
    for m in net.messages:
        conn, size, posted, done = int(m["connection"]), int(m["size"]), int(m["posted"]), int(m["done"])
        head = max(posted, last_done.get(conn, posted))
        fct.append(done - head if done >= 0 else -1)
        heads.append(head)
        last_done[conn] = done
        k = (conn, size)
        keys.append((conn, size, count.get(k, 0)))
        count[k] = count.get(k, 0) + 1
    order = sorted(range(len(keys)), key=keys.__getitem__)
    if not order:
        return [], np.empty(0), np.empty(0)
    return ([keys[i] for i in order], np.array(fct, dtype=float)[order], np.array(heads, dtype=float)[order])


def compare(full, other, label="accelerated"):
    """Error statistics of ``other`` (an accelerated packet run, or with
    ``label="flow"`` a flow-backend run) against ``full`` (each: net, wall, fct
    array, iteration time).  Returns (summary, full fct, other fct)."""
    nf, wf, ff, itf = full
    na, wa, fa, ita = other
    ok = (ff > 0) & (fa > 0)
    err = np.abs(fa[ok] - ff[ok]) / ff[ok]
    sf, sa = nf.stats, na.stats
    out = {
        "compared": "%s vs full packet" % (LABELS[label] if label != "flow" else
                                           "flow backend (%s)" % sa.get("flow_model", "cm02")),
        "flows": int(ok.sum()),
        "fct_err_mean_pct": 100 * float(err.mean()) if len(err) else 0.0,
        "fct_err_p50_pct": 100 * float(np.percentile(err, 50)) if len(err) else 0.0,
        "fct_err_p99_pct": 100 * float(np.percentile(err, 99)) if len(err) else 0.0,
        "fct_err_max_pct": 100 * float(err.max()) if len(err) else 0.0,
        "events_full": sf["events"], "events_" + label: sa["events"],
        "event_ratio": sf["events"] / max(1, sa["events"]),
        "wall_full_s": wf, "wall_%s_s" % label: wa, "wall_ratio": wf / wa if wa > 0 else 0.0,
    }
    if label == "flow":
        out["rate_solves"] = sa.get("rate_solves", 0)
        out["skipped_pct"] = None               # no packet events at all: nothing skipped, nothing processed
    else:
        out.update({"events_skipped": sa["events_skipped"],
                    "skipped_pct": 100 * sa["events_skipped"] / max(1, sa["events"] + sa["events_skipped"]),
                    "skips": sa.get("skips", 0), "skip_backs": sa.get("skip_backs", 0)})
        out.update(accounting(sf, sa))
    out["rank_paired"] = rank_paired(nf, na, ff, fa)
    out["worst"] = worst_messages(nf, ff, fa)
    if itf is not None:
        out["iteration_full_ms"] = itf / 1e9
        out["iteration_%s_ms" % label] = ita / 1e9
        out["iteration_err_pct"] = 100 * abs(ita - itf) / itf
    return out, ff, fa


def accounting(sf, sa):
    """Processed + skipped events of an accelerated run against the full run's
    count, and where the skipped events came from (steady skips, memo replays,
    steady skips right after a replay at its stored goodputs, mirrors), with the
    counts of what blocked a skip, what ended skips early, and why the packets
    it simulated were not skipped (its ACKs by the state of their flow's partition)."""
    total = sa["events"] + sa["events_skipped"]
    by = dict(sa.get("events_skipped_by") or {})
    why = accel_counts(sa)
    skipped = max(1, sa["events_skipped"])
    return {"events_accounted": total,
            "accounted_vs_full_pct": 100 * (total - sf["events"]) / max(1, sf["events"]),
            "skipped_by": by,
            "skipped_share_pct": {k: 100 * v / skipped for k, v in by.items()},
            "skip_rejects": why["skip_rejects"], "skip_backs_by": why["skip_backs_by"], "acks_by": why["acks_by"],
            "reject_mean_flows": sa.get("reject_mean_flows"), "skip_mean_flows": sa.get("skip_mean_flows"),
            "reject_steady_share": sa.get("reject_steady_share"), "reject_one_short": sa.get("reject_one_short"),
            "memo": {k[5:]: sa[k] for k in MEMO_COUNTS if k in sa},
            "onoff": {k[6:]: sa[k] for k in ONOFF_COUNTS if k in sa}}


# steady skips' on/off members (accel_onoff.pxi): members, their resumes inside skips, partitions
# tested for them, why members were refused (no steady ring cycle measured), and members that joined by
# their own steady cycles (steady_cycle)
ONOFF_COUNTS = ("onoff_flows", "onoff_resumes", "onoff_tests", "onoff_no_cycle", "onoff_unsteady", "onoff_cycle")


# the memo's lookups by outcome (Memo.accounting): what a report says about why nothing was replayed
MEMO_COUNTS = ("memo_hits", "memo_refused", "memo_miss_new_key", "memo_miss_unconverged_key", "memo_stored",
               "memo_pending_lost")


def _describer(net):
    """i -> (connection or flow, src, dst, size, start) of the i-th compared item of ``net``: its messages when
    it has any, else its flows.  The message table is built once, not once per described item."""
    keys, _, heads = message_table(net)
    if keys:
        def describe(i):
            conn, size, k = keys[i]
            r = net.flow(conn)
            return {"connection": int(conn), "src": int(r.src), "dst": int(r.dst), "size": int(size),
                    "kth": int(k), "head_us": float(heads[i]) / 1e6}
        return describe
    res = net.results

    def describe(i):
        return {"flow": int(i), "src": int(res["src"][i]), "dst": int(res["dst"][i]),
                "size": int(res["size"][i]), "start_us": float(res["start"][i]) / 1e6}
    return describe


def worst_messages(nf, ff, fa, n=10):
    """The n messages (flows) with the largest |FCT error|: connection, size, FCTs, error."""
    ok = (ff > 0) & (fa > 0)
    err = np.where(ok, np.abs(fa - ff) / np.where(ff > 0, ff, 1.0), -1.0)
    describe = _describer(nf)
    out = []
    for i in np.argsort(-err, kind="stable")[:n]:
        if err[i] < 0:
            break
        d = describe(int(i))
        d.update(fct_full_us=float(ff[i]) / 1e6, fct_other_us=float(fa[i]) / 1e6, err_pct=100 * float(err[i]))
        out.append(d)
    return out


def rank_paired(nf, na, ff, fa):
    """FCT error with messages paired by rank instead of identity: within each
    message size, the k-th shortest FCT of one run against the k-th shortest of
    the other.  Where symmetric connections swap roles between two runs (which
    of two ring neighbours sharing a link is held back), the per-message error
    counts the swap and this one does not: it compares the distributions."""
    sizes = None
    keys = message_table(nf)[0]
    if keys:
        sizes = np.array([k[1] for k in keys])
    elif hasattr(nf, "results"):
        sizes = np.asarray(nf.results["size"])
    if sizes is None or len(sizes) != len(ff) or len(ff) != len(fa):
        return None
    errs = []
    for sz in np.unique(sizes):
        sel = sizes == sz
        a, b = np.sort(ff[sel]), np.sort(fa[sel])
        ok = (a > 0) & (b > 0)
        errs.append(np.abs(b[ok] - a[ok]) / a[ok])
    err = np.concatenate(errs) if errs else np.empty(0)
    if not len(err):
        return None
    return {"mean_pct": 100 * float(err.mean()), "p99_pct": 100 * float(np.percentile(err, 99)),
            "max_pct": 100 * float(err.max())}


def format_report(summary):
    """The fidelity summary as a table: scalar figures one a line, then the
    accounting (processed + skipped against the full run, the sources of the
    skipped events, the reject and skip-back counts, the simulated ACKs by why
    they were not skipped) and the worst messages."""
    lines = []
    nested = ("worst", "skipped_by", "skipped_share_pct", "skip_rejects", "skip_backs_by", "acks_by", "rank_paired",
              "memo", "onoff", "noise_floor")
    for k in sorted(summary):
        if k in nested:
            continue
        v = summary[k]
        lines.append("%-24s %s" % (k, ("%.4f" % v) if isinstance(v, float) else "n/a" if v is None else v))
    if "events_accounted" in summary:
        lines.append("accounting               %d processed + %d skipped = %d vs %d in the full run (%+.3f%%)" % (
            summary["events_accelerated"], summary["events_skipped"], summary["events_accounted"],
            summary["events_full"], summary["accounted_vs_full_pct"]))
        sh = summary.get("skipped_share_pct") or {}
        lines.append("skipped from             " + ", ".join("%s %.2f%%" % (k, v) for k, v in sh.items()))
        lines.append("skips blocked by         " + count_text(summary.get("skip_rejects", {}), empty="nothing"))
        lines.append("skip-backs by            " + count_text(summary.get("skip_backs_by", {})))
        lines.append("simulated ACKs by why    " + share_text(summary.get("acks_by") or {}))
        if summary.get("memo"):
            lines.append("memo lookups             " + ", ".join("%s %d" % kv for kv in summary["memo"].items()))
        if summary.get("onoff"):
            lines.append("on/off members           " + ", ".join("%s %d" % kv for kv in summary["onoff"].items()))
    nf = summary.get("noise_floor")
    if nf:
        lines.append("full vs full, %s: %s" % (nf["perturbation"], _floor_text(nf)))
    rp = summary.get("rank_paired")
    if rp:
        lines.append("FCT error rank-paired    mean %.4f%%, p99 %.4f%%, max %.4f%% (distributions per size)" % (
            rp["mean_pct"], rp["p99_pct"], rp["max_pct"]))
    if summary.get("worst"):
        lines.append("worst                    %-10s %-12s %10s %12s %12s %9s" % (
            "conn/flow", "src->dst", "size", "fct full us", "fct other us", "error"))
        for w in summary["worst"]:
            lines.append("                         %-10s %-12s %10d %12.2f %12.2f %8.2f%%" % (
                w.get("connection", w.get("flow", w.get("index"))), "%s->%s" % (w.get("src"), w.get("dst")),
                w.get("size", 0), w["fct_full_us"], w["fct_other_us"], w["err_pct"]))
    return "\n".join(lines)


def _floor_text(nf):
    """The noise floor's figures, or why there are none."""
    if nf["same_run"]:
        return "the same run, every FCT the same: no noise floor measured"
    text = "FCT error mean %.4f%%, p99 %.4f%%, max %.4f%%" % (nf["fct_err_mean_pct"], nf["fct_err_p99_pct"],
                                                            nf["fct_err_max_pct"])
    if "iteration_err_pct" in nf:
        text += ", iteration %.4f%%" % nf["iteration_err_pct"]
    return text + " (the simulation's own sensitivity)"


OUT_FILES = ("fidelity.csv", "summary.json", "fidelity.png")
ERR_FLOOR_PCT = 1e-4        # errors below this are drawn at it (a log axis has no 0)


def plot_png(summary, ff, fa, label):
    """fidelity.png: ``plot_figure`` as PNG bytes."""
    import matplotlib.pyplot as plt
    fig = plot_figure(summary, ff, fa, label)
    png = figure_bytes(fig)
    plt.close(fig)
    return png


def plot_figure(summary, ff, fa, label):
    """The CDF of |FCT error| on a log axis, titled with the workload, with the
    iteration-time error, the speedup and (accelerated) the events skipped."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = (ff > 0) & (fa > 0)
    err = np.sort(100 * np.abs(fa[ok] - ff[ok]) / ff[ok])
    unit = "messages" if "iteration_full_ms" in summary else "flows"
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if len(err):
        ax.step(np.maximum(err, ERR_FLOOR_PCT), np.arange(1, len(err) + 1) / len(err), where="post")
    ax.set_xscale("log")
    pos = err[err >= ERR_FLOOR_PCT]
    lo = 10 ** np.floor(np.log10(pos.min())) if len(pos) == len(err) and len(err) else ERR_FLOOR_PCT / 2
    ax.set_xlim(lo, max(100.0, float(err.max()) * 2 if len(err) else 100.0))
    ax.set_ylim(0, 1.02)
    what = summary["compared"]
    ax.set_xlabel("|FCT error| per %s, %s (%%, log; below %g%% drawn at %g%%)" % (
        unit[:-1], what, ERR_FLOOR_PCT, ERR_FLOOR_PCT), fontsize=8)
    ax.set_ylabel("CDF of %d %s" % (len(err), unit))
    ax.set_title(summary.get("workload", ""), fontsize=9)
    facts = []
    if "iteration_err_pct" in summary:
        facts.append("iteration time: %.3f ms full, error %.3g%%" % (summary["iteration_full_ms"],
                                                                  summary["iteration_err_pct"]))
    facts.append("FCT error: mean %.3g%%, p99 %.3g%%, max %.3g%%" % (
        summary["fct_err_mean_pct"], summary["fct_err_p99_pct"], summary["fct_err_max_pct"]))
    facts.append("speedup: %.1fx wall-clock (%.3g s full, %.3g s %s), %.1fx fewer events" % (
        summary["wall_ratio"], summary["wall_full_s"], summary["wall_%s_s" % label], label, summary["event_ratio"]))
    nf = summary.get("noise_floor")
    if nf and not nf["same_run"]:
        facts.append("full vs full, %s: FCT error mean %.3g%%, p99 %.3g%%" % (
            nf["perturbation"], nf["fct_err_mean_pct"], nf["fct_err_p99_pct"]))
    if summary.get("skipped_pct") is not None:
        facts.append("%.2f%% of packet events skipped" % summary["skipped_pct"])
    else:
        facts.append("flow backend: no packet events (fluid max-min sharing)")
    ax.text(0.02, 0.97, "\n".join(facts), transform=ax.transAxes, va="top", fontsize=8,
            bbox=dict(boxstyle="round", fc="white", ec="0.7"))
    fig.suptitle(what, fontsize=10)
    fig.tight_layout()
    return fig


def write_outputs(out_dir, summary, ff, fa, label="accelerated"):
    rows = ["id,fct_full_ps,fct_%s_ps,error\n" % label]
    for i, (a, b) in enumerate(zip(ff, fa)):
        rows.append("%d,%d,%d,%.6f\n" % (i, a, b, abs(b - a) / a if a > 0 else 0.0))
    files = dict(zip(OUT_FILES, ("".join(rows), json.dumps(summary, indent=1, sort_keys=True) + "\n",
                                 plot_png(summary, ff, fa, label))))
    write_atomic(out_dir, files)
    return [os.path.join(out_dir, n) for n in OUT_FILES]


def _bench_args(argv):
    """The --bench arguments, parsed and their output paths checked before anything runs."""
    args = workload_parser().parse_args(list(argv))
    if args.memo_db:
        check_file(args.memo_db, "--memo-db")
    return args


def _short(path):
    """folder/name of a path: enough to tell which input a plot is about."""
    path = os.path.abspath(path)
    return os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))


def run_fidelity(args):
    label = "flow" if getattr(args, "backend", "packet") == "flow" else "accelerated"
    check_folder(args.out, "--out", OUT_FILES)
    if args.bench:
        b = _bench_args(args.bench)
        if label == "flow" and b.mode is not None:
            from .errors import WormholeError
            raise WormholeError("--bench takes no --mode with --backend flow (the full run is packet level, the "
                                "other the flow backend)", value=b.mode)
        full = _run_bench(args.bench, False)
        other = _run_bench(args.bench, False, "flow") if label == "flow" else _run_bench(args.bench, True)
        if getattr(args, "noise", False):
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                noisy = _run_bench(longer_bench_argv(args.bench, tmp), False)
        workload = "python -m wormhole.bench " + " ".join(args.bench)
    else:
        cfg = Config.from_file(args.config) if args.config else Config()
        topo = args.topology or cfg.files.get("TOPOLOGY_FILE")
        flows = args.flows or cfg.files.get("FLOW_FILE")
        if not topo or not flows:
            from .errors import ConfigError
            raise ConfigError("fidelity needs --bench ARGS, or --topology/--flows (or a config naming them)")
        full = _run_reference(topo, flows, cfg.copy(accelerate=False))
        other = (_run_reference(topo, flows, cfg, "flow") if label == "flow"
                 else _run_reference(topo, flows, cfg.copy(accelerate=True)))
        if getattr(args, "noise", False):
            noisy = _run_reference(topo, flows, cfg.copy(accelerate=False), longer=True)
        workload = "%s, %s (%s, cc %s)" % (_short(topo), _short(flows),
                                           _short(args.config) if args.config else "default config", cfg.cc)
    summary, ff, fa = compare(full, other, label)
    if getattr(args, "noise", False):
        summary["noise_floor"] = noise_floor(full, noisy)
    summary["workload"] = workload
    written = write_outputs(args.out, summary, ff, fa, label)
    return summary, written
