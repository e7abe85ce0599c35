#!/usr/bin/env python
"""Per-flow FCT error of wormhole against the reference simulator (HPCC fork of
ns-3) on its own runs in ../shared/reference/hpcc-ns3-runs/ and on the runs of
flows joining running ones in tests/data/ref_join/ (made for this project, run
through the reference built here): same topology, flow and config files, our
fct.txt against theirs, flow by flow.

Prints, per scenario and congestion control: flows, flows equal to the
nanosecond, mean and max |FCT error|, and the wall-clock of both simulators
(the reference's from its summary.txt, measured on this kind of machine).

    python bench/fidelity_reference.py [--runs DIR [DIR ...]] [--seeds N] [--json]

By default the ECN marking draws follow the reference's own random streams
(ecn_rng=ns3), which reproduces its DCQCN runs draw for draw.  --seeds N
re-runs each scenario with N other realisations (ecn_rng=splitmix, seeds
1..N) and reports the spread of the mean error: how far an independent random
stream alone moves the FCTs.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import wormhole as wh  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RUNS = [os.path.join(HERE, "..", "..", "shared", "reference", "hpcc-ns3-runs"),
                os.path.join(HERE, "..", "tests", "data", "ref_join")]


def read_fct(path):
    out = {}
    with open(path) as fh:
        for line in fh:
            p = line.split()
            out[tuple(p[:4])] = int(p[6])
    return out


def read_summary(path):
    out = {}
    if os.path.exists(path):
        for tok in open(path).read().split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                out[k] = v
    return out


def run_one(d, seed=None):
    cfg = wh.Config.from_file(os.path.join(d, "config.txt"))
    if seed is not None:
        cfg = cfg.copy(ecn_rng="splitmix", seed=seed)
    net = wh.Network(cfg.files["TOPOLOGY_FILE"], cfg)
    for f in wh.read_flows(cfg.files["FLOW_FILE"], net.topology):
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
    t0 = time.perf_counter()
    net.run()
    wall = time.perf_counter() - t0
    ours = {tuple(l.split()[:4]): int(l.split()[6]) for l in net.fct_lines()}
    return ours, wall, net


def compare(ref, ours):
    errs, exact = [], 0
    for k, v in ref.items():
        o = ours.get(k)
        if o is None:
            errs.append(float("inf"))
            continue
        errs.append(abs(o - v) / v)
        exact += o == v
    return errs, exact


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", default=DEFAULT_RUNS,
                    help="folders of runs (one sub-folder per run, with config.txt and fct.txt)")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    found = [r for r in args.runs if os.path.isdir(r)]
    for r in args.runs:
        if r not in found:
            print("reference runs not found at %s (the shared ones live in ../shared, beside the project)" % r)
    if not found:
        return 2
    rows = []
    for d in [os.path.join(r, n) for r in found for n in sorted(os.listdir(r))]:
        name = os.path.basename(d)
        if not os.path.exists(os.path.join(d, "fct.txt")):
            continue
        ref = read_fct(os.path.join(d, "fct.txt"))
        ours, wall, net = run_one(d)
        errs, exact = compare(ref, ours)
        summ = read_summary(os.path.join(d, "summary.txt"))
        row = {"scenario": name.rsplit("_", 1)[0], "cc": net.config.cc, "flows": len(ref), "exact": exact,
               "mean_err_pct": 100 * statistics.mean(errs), "max_err_pct": 100 * max(errs),
               "wall_s": wall, "ref_wall_s": float(summ.get("wall_s", "nan")),
               "ref_run_cpu_s": float(summ.get("run_cpu_s", "nan")), "events": net.stats["events"],
               "ref_events": int(summ.get("events_executed", 0))}
        if args.seeds > 1:
            means = [100 * statistics.mean(compare(ref, run_one(d, seed)[0])[0]) for seed in range(1, args.seeds + 1)]
            row["seed_mean_err_pct"] = (min(means), statistics.median(means), max(means))
        rows.append(row)
        if args.json:
            print(json.dumps(row))
    if not args.json:
        print("%-18s %-7s %5s %6s %9s %9s %9s %9s %7s" % ("scenario", "cc", "flows", "exact", "mean err",
                                                         "max err", "wall", "ref wall", "speedup"))
        for r in rows:
            known = r["ref_wall_s"] == r["ref_wall_s"]      # no summary.txt: no reference wall-clock
            print("%-18s %-7s %5d %6d %8.3f%% %8.3f%% %8.4fs %9s %7s" % (
                r["scenario"], r["cc"], r["flows"], r["exact"], r["mean_err_pct"], r["max_err_pct"], r["wall_s"],
                "%.3fs" % r["ref_wall_s"] if known else "-",
                "%.1fx" % (r["ref_wall_s"] / r["wall_s"]) if known else "-")
                + ("   seeds mean err min/median/max %.2f/%.2f/%.2f%%" % r["seed_mean_err_pct"]
                   if "seed_mean_err_pct" in r else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
