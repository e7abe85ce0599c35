#!/usr/bin/env python
"""Accelerator safety: traffic that never settles, and a reused memo database.

1. Random short flows (1 KB to 200 KB, Poisson arrivals, random host pairs) on
   a k=4 fat-tree: full and accelerated runs of the same flows, wall-clock
   medians, whether fct.txt is identical and how many fast-forwards happened.
   The accelerator must cost at most 10% here and add no error.
2. gpt13b on 32 GPUs (TP8, PP2) twice with the same --memo-db file: memo hits, events
   and wall-clock of each run, and the iteration times.

    python bench/accel_safety.py [--flows 3000] [--repeat 3] [--cc hpcc]
"""
import argparse
import os
import random
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import wormhole as wh  # noqa: E402
from wormhole.runner import run_workload, workload_parser  # noqa: E402
from wormhole.units import US  # noqa: E402


def short_flows(n, seed=1, hosts=16):
    rnd = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        t += rnd.expovariate(1.0 / 0.5)            # mean gap 0.5 us
        s, d = rnd.sample(range(hosts), 2)
        out.append((s, d, rnd.randint(1_000, 200_000), int(t * US)))
    return out


def run_short(flows, cc, accelerate):
    net = wh.Network(wh.fat_tree(4), wh.Config.preset(cc, accelerate=accelerate))
    for s, d, size, at in flows:
        net.send(s, d, size, at=at)
    t0 = time.perf_counter()
    net.run()
    return time.perf_counter() - t0, net


def memo_run(db):
    args = workload_parser().parse_args(["gpt13b", "--gpus", "32", "--pp", "2", "--micro-batches", "4",
                                          "--chunk-mb", "4", "--no-progress", "--memo-db", db])
    return run_workload(args, {})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cc", default="hpcc")
    args = ap.parse_args()

    flows = short_flows(args.flows)
    walls = {False: [], True: []}
    nets = {}
    for _ in range(args.repeat):
        for acc in (False, True):
            w, net = run_short(flows, args.cc, acc)
            walls[acc].append(w)
            nets[acc] = net
    same = nets[False].fct_lines() == nets[True].fct_lines()
    mf, ma = statistics.median(walls[False]), statistics.median(walls[True])
    st = nets[True].stats
    print("short flows  %d flows of 1-200 KB on fat_tree(4), %s: full %.3f s, accelerated %.3f s (median of %d), "
          "ratio %.3f; fct.txt identical: %s; %d skips, %d events processed (full %d)" % (
              args.flows, args.cc, mf, ma, args.repeat, ma / mf, same, st["skips"], st["events"],
              nets[False].stats["events"]))

    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "memo.sqlite")
        first, second = memo_run(db), memo_run(db)
        for name, r in (("first", first), ("second", second)):
            print("memo-db      %s run: %d hits / %d misses, %d events processed, %.3f s wall-clock, "
                  "iteration %.3f ms" % (name, r["memo_hits"], r["memo_misses"], r["events"], r["wall_seconds"],
                                         r["iteration_time_ps"] / 1e9))


if __name__ == "__main__":
    main()
