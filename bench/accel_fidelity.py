#!/usr/bin/env python
"""Accelerator fidelity sweep: for each congestion control, GPU count and
pipeline depth, run a gpt13b iteration in full packet mode and accelerated,
and print per-message FCT error (mean, p99, max), iteration-time error, the
share of events skipped and the wall-clock ratio (python -m wormhole fidelity
for one configuration).

    python bench/accel_fidelity.py [--cc hpcc dcqcn timely] [--gpus 32 64] [--pp 1 2] [--chunk-mb 4]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from wormhole.bench import gpt_argv  # noqa: E402
from wormhole.fidelity import _run_bench, compare  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", nargs="+", default=["hpcc", "dcqcn", "timely"])
    ap.add_argument("--gpus", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--pp", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--chunk-mb", default="4", help="chunk size of collectives, MB (the bench's default)")
    ap.add_argument("--model", default="gpt13b")
    args = ap.parse_args()
    rows = []
    for cc in args.cc:
        for g in args.gpus:
            for pp in args.pp:
                argv = gpt_argv(args.model, g, cc, pp, args.chunk_mb)
                s, _, _ = compare(_run_bench(argv, False), _run_bench(argv, True))
                s.update(cc=cc, gpus=g, pp=pp)
                rows.append(s)
                print(json.dumps(s, sort_keys=True), flush=True)
    print("%-6s %5s %3s %10s %9s %9s %9s %9s %9s %8s" % ("cc", "gpus", "pp", "iter err", "fct mean", "fct p99",
                                                       "fct max", "skipped", "wall x", "events x"))
    for r in rows:
        print("%-6s %5d %3d %9.4f%% %8.4f%% %8.4f%% %8.4f%% %8.3f%% %8.1fx %7.1fx" % (
            r["cc"], r["gpus"], r["pp"], r["iteration_err_pct"], r["fct_err_mean_pct"], r["fct_err_p99_pct"],
            r["fct_err_max_pct"], r["skipped_pct"], r["wall_ratio"], r["event_ratio"]))


if __name__ == "__main__":
    main()
