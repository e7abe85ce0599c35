#!/usr/bin/env python
"""Full-packet baseline of training iterations: wall-clock, events and simulated
iteration time of gpt13b on the rail-optimized fabric (100 Gb/s) with HPCC, at
16, 32, 64 and 128 GPUs, TP8 PP1 and a PP2 variant (4 micro-batches) whose
pipeline traffic crosses the fabric.  One JSON object per run, then a table.

    python bench/training_baseline.py [--gpus 16 32 64 128] [--pp 1 2] [--model gpt13b] [--cc hpcc]

This is the yardstick the accelerator is measured against; large runs take
minutes to tens of minutes each.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from wormhole.runner import gpt_argv, run_workload, workload_parser  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, nargs="+", default=[16, 32, 64, 128])
    ap.add_argument("--pp", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--model", default="gpt13b")
    ap.add_argument("--cc", default="hpcc")
    ap.add_argument("--micro-batches-pp", type=int, default=4, help="micro-batches of the PP > 1 runs")
    args = ap.parse_args()
    rows = []
    for pp in args.pp:
        for g in args.gpus:
            argv = gpt_argv(args.model, g, args.cc, pp, micro_batches_pp=args.micro_batches_pp)
            argv += ["--no-progress", "--mode", "full"]
            rep = run_workload(workload_parser().parse_args(argv))
            rows.append(rep)
            print(json.dumps(rep, sort_keys=True), flush=True)
    print("%-8s %5s %3s %3s %3s %12s %12s %14s %10s %9s" % ("model", "gpus", "tp", "pp", "dp", "iter (ms)",
                                                          "exposed (ms)", "events", "wall (s)", "Mev/s"))
    for r in rows:
        print("%-8s %5d %3d %3d %3d %12.3f %12.3f %14d %10.1f %9.2f" % (
            r["model"], r["gpus"], r["tp"], r["pp"], r["dp"], r["iteration_time_ps"] / 1e9,
            r["exposed_comm_ps"] / 1e9, r["events"], r["wall_seconds"], r["events_per_second"] / 1e6))


if __name__ == "__main__":
    main()
