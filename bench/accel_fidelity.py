#!/usr/bin/env python
"""Accelerator fidelity suite: each row runs one training iteration in full
packet mode and accelerated, and prints per-message FCT error (mean, p99, max;
paired by message, and rank-paired within each message size), iteration-time
error, the share of events skipped, processed + skipped against the full run's
count, where the skipped events came from (steady skips, memo replays, steady
skips following a replay, mirrors), what blocked skips, the memo's lookups by
outcome (hits; misses on a new key or on a key whose partitions never converged),
and the wall-clocks (python -m wormhole fidelity for one configuration, with the ten worst
messages).

Rows (each with every --cc, at every --gpus):
  rail-local    gpt13b TP 8: DP rings on their own rail leaf (the accelerator's best case)
  rail-local-pp gpt13b TP 8, PP 2, 4 micro-batches
  tp2           gpt13b TP 2: DP rings cross rails through the spines (ECMP collisions)
  segments      gpt13b TP 8 on rail segments of 2 servers, spines 2:1 oversubscribed
  fattree       gpt13b TP 8 on topologies/fattree_k8_100g.txt (k=8; GPUs on its first hosts)
  moe           moe TP 2, EP 4: expert all-to-alls (with NCCL's ring order they stay on their rails)
  moe-ep8       aicb-mistral-8x7b (TP 2, SP, EP 8, top-2 of 8 experts): all-to-alls across servers and rails

    python bench/accel_fidelity.py [--rows tp2 segments] [--cc hpcc dcqcn timely] [--gpus 32 64] [--layers 2]
        [--noise [rate|delay]]
                     also a full run with link rates 1 ppm lower (rate) or every link 1 ns longer
                     (delay): the per-message error of the full simulation against itself under a
                     perturbation no accelerator avoids (a run it leaves unchanged, every message at
                     the same time, is reported as no floor measured)
        [--steady-window 500 1000 2000] [--steady-theta 0.02 0.05] [--steady-goodput]
                     the accelerator's steady test (l, theta; the quarter-goodput test): every
                     combination is run accelerated against one full run of the row (the paper's
                     sensitivity study)
        [--json]
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)

from wormhole.fidelity import (_run_bench, bench_topology, compare, longer_bench_argv, noise_floor,  # noqa: E402
                               topology_copy)
from wormhole.runner import count_text, share_text  # noqa: E402

FATTREE = os.path.join(HERE, "topologies", "fattree_k8_100g.txt")

ROWS = {
    "rail-local": ["gpt13b", "--tp", "8"],
    "rail-local-pp": ["gpt13b", "--tp", "8", "--pp", "2", "--micro-batches", "4"],
    "tp2": ["gpt13b", "--tp", "2"],
    "segments": ["gpt13b", "--tp", "8", "--servers-per-segment", "2", "--oversubscription", "2"],
    "fattree": ["gpt13b", "--tp", "8", "--topology", FATTREE],
    "moe": ["moe", "--tp", "2", "--ep", "4"],
    "moe-ep8": ["aicb-mistral-8x7b"],
}


def row_argv(row, gpus, cc, layers=None, chunk_mb=None):
    argv = list(ROWS[row]) + ["--gpus", str(gpus), "--cc", cc]
    if layers:
        # a pipelined row needs whole stages: --layers rounds up to a multiple of its PP
        pp = int(argv[argv.index("--pp") + 1]) if "--pp" in argv else 1
        argv += ["--layers", str(-(-layers // pp) * pp)]
    if chunk_mb is not None:
        argv += ["--chunk-mb", str(chunk_mb)]
    return argv


def _slower_links(argv, tmp):
    """The row's arguments with every link 1 ppm slower: --rate for the default fabric, or a copy
    of the --topology file (in ``tmp``) with each link's rate scaled."""
    src = bench_topology(argv)
    if not src:
        return list(argv) + ["--rate", "99.9999"]
    return topology_copy(argv, tmp, lambda lk: (round(lk.rate_bps * (1 - 1e-6)), lk.delay_ps), src)


# --noise KIND: the perturbation of the full run against itself, and how the report names it
NOISE = {"rate": (_slower_links, "-1 ppm rates"), "delay": (longer_bench_argv, "+1 ns delays")}


def run_row(row, gpus, cc, layers=None, chunk_mb=None, noise=None, knobs=((),)):
    """One row: a full run, then an accelerated run per entry of ``knobs`` (extra
    bench arguments for the accelerated run); a list of summaries."""
    argv = row_argv(row, gpus, cc, layers, chunk_mb)
    full = _run_bench(argv, False)
    out = []
    for extra in knobs:
        s, _, _ = compare(full, _run_bench(argv + list(extra), True))
        s.update(row=row, cc=cc, gpus=gpus, layers=layers, argv=" ".join(argv).replace(HERE + os.sep, ""),
                 accel_args=" ".join(extra))
        out.append(s)
    if noise:
        with tempfile.TemporaryDirectory() as tmp:
            other = _run_bench(NOISE[noise][0](argv, tmp), False)
        floor = dict(noise_floor(full, other), kind=noise)
        for s in out:
            s["noise_floor"] = floor
    return out


HEADER = ("%-13s %-6s %4s %8s %8s %8s %8s %9s %9s %8s %6s %6s %6s %7s %7s" % (
    "row", "cc", "gpus", "iter%", "fct mean", "fct p99", "fct max", "rank p99", "skipped", "acct%", "steady",
    "memo", "mirror", "full s", "accel s"))


def format_row(r):
    sh = r.get("skipped_share_pct", {})
    memo = sh.get("memo_replay", 0) + sh.get("memo_follow", 0)
    rp = r.get("rank_paired") or {}
    line = "%-13s %-6s %4d %8.3f %8.3f %8.2f %8.1f %9.2f %8.3f%% %+8.3f %6.1f %6.1f %6.1f %7.1f %7.1f" % (
        r["row"], r["cc"], r["gpus"], r["iteration_err_pct"], r["fct_err_mean_pct"], r["fct_err_p99_pct"],
        r["fct_err_max_pct"], rp.get("p99_pct", float("nan")), r["skipped_pct"], r["accounted_vs_full_pct"],
        sh.get("steady", 0), memo, sh.get("mirror", 0), r["wall_full_s"], r["wall_accelerated_s"])
    if "noise_floor" in r:
        nf = r["noise_floor"]
        what = NOISE[nf.get("kind", "rate")][1]
        if nf["same_run"]:
            line += "  (full vs full at %s: the same run, every message at the same time: no noise floor measured)" % what
        else:
            line += "  (full vs full at %s: iter %.3f mean %.3f p99 %.2f rank p99 %.2f)" % (
                what, nf["iteration_err_pct"], nf["fct_err_mean_pct"], nf["fct_err_p99_pct"],
                nf.get("rank_p99_pct") or float("nan"))
    if r.get("accel_args"):
        line += "  [%s]" % r["accel_args"]
    return line


# switches of wormhole.bench the accelerated runs take as given, and what each does there
PASSED_SWITCHES = (
    ("--steady-goodput", "accelerated runs also use the goodput test for every flow"),
    ("--steady-goodput-alone", "accelerated runs use the goodput test for flows alone with their data (the default)"),
    ("--no-steady-goodput-alone", "accelerated runs use the goodput test only with --steady-goodput"),
    ("--steady-committed", "accelerated runs sample the CC's committed rate (HPCC's Rc) in the steady window "
                           "(the default)"),
    ("--no-steady-committed", "accelerated runs sample the per-ACK sending rate in the steady window"),
    ("--steady-onoff", "accelerated runs carry ring connections through idle spells (steady_onoff, the default)"),
    ("--no-steady-onoff", "accelerated runs end a steady skip before a ring connection runs out of data"),
    ("--steady-cycle", "accelerated runs let ring connections join skips by their own steady cycles (steady_cycle)"),
    ("--no-steady-cycle", "accelerated runs need every sending flow's rate window steady"),
    ("--mirrors", "accelerated runs with mirrors (memo_mirrors, the default)"),
    ("--no-mirrors", "accelerated runs without mirrors"),
)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    ap.add_argument("--cc", nargs="+", default=["hpcc", "dcqcn", "timely"])
    ap.add_argument("--gpus", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--layers", type=int, help="cut the models to this many layers (quicker rows; a pipelined row rounds it up to a multiple of its PP)")
    ap.add_argument("--chunk-mb", help="chunk size of collectives, MB (default: the bench's)")
    ap.add_argument("--noise", nargs="?", const="rate", choices=sorted(NOISE),
                    help="also measure the full run's own noise floor: against a full run with every link 1 ppm "
                         "slower (rate, the default) or 1 ns longer (delay: the kernel's time quantum, which every "
                         "CC feels; 1 ppm is absorbed where no CC reads a link's rate)")
    ap.add_argument("--steady-window", type=int, nargs="+", metavar="L", help="steady-test windows to sweep")
    ap.add_argument("--steady-theta", type=float, nargs="+", metavar="THETA", help="steady-test thetas to sweep")
    for flag, text in PASSED_SWITCHES:
        ap.add_argument(flag, action="store_true", help=text)
    ap.add_argument("--mirrors-both", action="store_true",
                    help="each accelerated run twice against one full run: without mirrors, then with")
    ap.add_argument("--json", action="store_true", help="one JSON object per row")
    args = ap.parse_args()
    knobs = [[]]
    if args.steady_window:
        knobs = [k + ["--steady-window", str(v)] for k in knobs for v in args.steady_window]
    if args.steady_theta:
        knobs = [k + ["--steady-theta", str(v)] for k in knobs for v in args.steady_theta]
    given = {flag for flag, _ in PASSED_SWITCHES if getattr(args, flag[2:].replace("-", "_"))}
    for flag in sorted(given):              # (before the full run the bench would refuse it after)
        if "--no-" + flag[2:] in given:
            ap.error("%s and --no-%s contradict each other" % (flag, flag[2:]))
    for flag, _ in PASSED_SWITCHES:         # the bench's own switches, passed on
        if flag in given:
            knobs = [k + [flag] for k in knobs]
    if args.mirrors_both and (args.mirrors or args.no_mirrors):
        ap.error("--mirrors-both runs both: leave out --mirrors and --no-mirrors")
    if args.mirrors_both:
        knobs = [k + x for k in knobs for x in (["--no-mirrors"], ["--mirrors"])]
    rows = []
    if not args.json:
        print(HEADER, flush=True)
    for row in args.rows:
        for g in args.gpus:
            for cc in args.cc:
                for r in run_row(row, g, cc, args.layers, args.chunk_mb, args.noise, knobs):
                    rows.append(r)
                    if args.json:
                        print(json.dumps(r, sort_keys=True), flush=True)
                    else:
                        print(format_row(r), flush=True)
                        print("%13s blocked by %s; backs %s" % ("", count_text(r.get("skip_rejects") or {}),
                                                                 count_text(r.get("skip_backs_by") or {})), flush=True)
                        print("%13s simulated ACKs by why: %s" % ("", share_text(r.get("acks_by") or {}, 5)),
                              flush=True)
                        print("%13s refused partitions: %.1f flows on average, %.0f%% of their sending flows steady, "
                              "%d refused with all but one steady" % (
                                  "", r.get("reject_mean_flows") or 0, 100 * (r.get("reject_steady_share") or 0),
                                  r.get("reject_one_short") or 0), flush=True)
                        if r.get("memo"):
                            print("%13s memo lookups: %s" % ("", ", ".join("%s %d" % kv for kv in r["memo"].items())),
                                  flush=True)
                        if r.get("onoff"):
                            print("%13s on/off members: %s" % ("", ", ".join("%s %d" % kv for kv in r["onoff"].items())),
                                  flush=True)


if __name__ == "__main__":
    main()
