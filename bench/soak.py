#!/usr/bin/env python
"""Long property run: random fabrics (stars, leaf-spines, fat-trees, random trees;
mixed rates and delays) and workloads (1 B to --max-size, incasts, all-to-all,
random arrivals, identical groups on symmetric fabrics), every congestion
control, some accelerated; checks every invariant of wormhole/testing/properties.py on
each case.  Prints cases run, failures
(with their seeds, to turn into regression tests) and the slowest case.

    python bench/soak.py [--cases 1000] [--minutes 20] [--max-size 100000000] [--seed 0]
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wormhole.testing.properties import check_invariants, run_case  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--max-size", type=int, default=100_000_000)
    ap.add_argument("--max-flows", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t_end = time.time() + 60 * args.minutes
    failures, slowest, n = [], (0.0, None), 0
    t0 = time.time()
    for k in range(args.cases):
        if time.time() > t_end:
            break
        seed = args.seed * 1_000_003 + k
        accel = k % 5 in (2, 4)
        twins = k % 5 == 2              # identical groups on a symmetric fabric: mirrored partitions
        t = time.time()
        try:
            net, info, times = run_case(seed, max_size=args.max_size, max_flows=args.max_flows, accelerate=accel,
                                        twins=twins)
            bad = check_invariants(net, info, times)
        except Exception as e:          # noqa: BLE001 - a crash is a failure to report, not to hide
            info, bad = {"seed": seed}, ["exception: %r" % e]
        dt = time.time() - t
        n += 1
        if dt > slowest[0]:
            slowest = (dt, dict(info, accelerate=accel))
        if bad:
            failures.append((seed, accel, bad))
            print("FAIL seed %d accelerate %s: %s" % (seed, accel, "; ".join(bad)), flush=True)
    print("cases %d in %.1f s, failures %d, slowest %.2f s: %s" % (n, time.time() - t0, len(failures), slowest[0],
                                                                    slowest[1]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
