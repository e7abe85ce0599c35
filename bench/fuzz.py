#!/usr/bin/env python
"""Input fuzzing of every reader (topology, flow file, config, SimAI workload,
workload preset): random corruptions (truncation, wrong types, huge numbers,
NaN, negative values, unknown keys, binary garbage, dropped, duplicated and
shuffled lines).  Each must give a WormholeError naming the file, or a valid
result.  Prints cases and unexpected outcomes.

    python bench/fuzz.py [--per-reader 2000] [--seed 0]
"""
import argparse
import collections
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from fuzzing import fuzz  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-reader", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        cases, unexpected = fuzz(args.per_reader, d, seed=args.seed)
    print("corrupted inputs %d in %.1f s, unexpected outcomes %d" % (cases, time.time() - t0, len(unexpected)))
    for (name, err), k in collections.Counter((n, e[:100]) for n, e, _ in unexpected).most_common(20):
        print("  %-9s x%d  %s" % (name, k, err))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
