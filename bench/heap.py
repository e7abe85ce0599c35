#!/usr/bin/env python
"""The event heap alone: nanoseconds per hold (pop the earliest event, push one due
uniformly 0..1 us after it) with n events pending, the classic hold model of
priority-queue studies, in C through the heap's test wrapper.

    python bench/heap.py [--sizes 1000,10000,100000] [--holds 2000000] [--repeat 5]

The kernel's pending set (heap, wires, unscheduled ends) holds about 3-15 k
events on the reference's 320-host benchmark and up to ~59 k on a 1,024-host
permutation; the figure to set beside a run's ns per event.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from wormhole._core.testing import _py_heap_hold  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--holds", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in args.sizes.split(",")]
    except ValueError:
        ap.error("--sizes: comma-separated counts, not %r" % args.sizes)
    if min(sizes) < 1 or args.holds < 1 or args.repeat < 1:
        ap.error("--sizes, --holds and --repeat must be at least 1")
    print("%10s %16s %16s" % ("pending", "ns/hold (min)", "ns/hold (median)"))
    for n in sizes:
        ws = []
        for r in range(args.repeat):
            t0 = time.perf_counter()
            _py_heap_hold(n, args.holds, 1_000_000, r + 1)
            ws.append(time.perf_counter() - t0)
        ws.sort()
        print("%10d %16.1f %16.1f" % (n, ws[0] / args.holds * 1e9, ws[len(ws) // 2] / args.holds * 1e9))


if __name__ == "__main__":
    main()
