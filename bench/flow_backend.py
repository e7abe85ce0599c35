#!/usr/bin/env python
"""Flow backend speed: 1,000 / 10,000 / 100,000 flows of 1 MB between random
host pairs, Poisson arrivals (mean gap 2 us), on a 128-host two-tier
leaf-spine (8 leaves x 16 hosts, 8 spines, 100 Gb/s, 1 us, 2:1 at the leaf).
Prints wall-clock and flows per second (SimGrid 3.32's CM02 needs about 23 s
for the 100,000 flows on this kind of machine).

    python bench/flow_backend.py [--flows 1000 10000 100000] [--model cm02]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import wormhole as wh  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--model", default="cm02")
    args = ap.parse_args()
    topo = wh.leaf_spine(8, 16, 8)
    for n in args.flows:
        rng = np.random.default_rng(1)
        src = rng.integers(0, 128, n)
        dst = (src + rng.integers(1, 128, n)) % 128          # a random other host
        start = (np.cumsum(rng.exponential(2.0, n)) * 1e6).astype(np.int64)
        net = wh.Network(topo, backend="flow", flow_model=args.model)
        t0 = time.perf_counter()
        for a, b, at in zip(src.tolist(), dst.tolist(), start.tolist()):
            net.send(a, b, 1_000_000, at=at)
        t1 = time.perf_counter()
        net.run()
        t2 = time.perf_counter()
        res = net.results
        print("%7d flows: %.2f s wall (%.2f s adding, %.2f s simulating), %.0f flows/s, %d rate solves, "
              "mean FCT %.1f us, simulated %.3f ms" % (n, t2 - t0, t1 - t0, t2 - t1, n / (t2 - t0),
                                                       net.stats["rate_solves"], res["fct"].mean() / 1e6,
                                                       net.now / 1e9), flush=True)


if __name__ == "__main__":
    main()
