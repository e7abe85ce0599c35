#!/usr/bin/env python
"""Input fuzzing of every reader (topology, flow file, config, SimAI workload,
workload preset): random corruptions (truncation, wrong types, huge numbers,
NaN, negative values, unknown keys, binary garbage, dropped, duplicated and
shuffled lines).  Each must give a WormholeError naming the file, or a valid
result.  Then output-path fuzzing: random output paths (existing files and
folders, links, missing or file-valued parents, /proc, NUL bytes, long names)
checked as an output folder or file and written, sometimes with a folder put
in the way after the check; a refused path must change nothing, an accepted
one must write exactly the planned files, a failed write must leave nothing.
Prints cases and unexpected outcomes.

    python bench/fuzz.py [--per-reader 2000] [--outputs 5000] [--seed 0]
"""
import argparse
import collections
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wormhole.testing.fuzzing import fuzz, fuzz_outputs  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-reader", type=int, default=2000)
    ap.add_argument("--outputs", type=int, default=5000, help="output-path cases")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        cases, unexpected = fuzz(args.per_reader, d, DATA, seed=args.seed)
    print("corrupted inputs %d in %.1f s, unexpected outcomes %d" % (cases, time.time() - t0, len(unexpected)))
    for (name, err), k in collections.Counter((n, e[:100]) for n, e, _ in unexpected).most_common(20):
        print("  %-9s x%d  %s" % (name, k, err))
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        n, refused, bad = fuzz_outputs(args.outputs, d, seed=args.seed)
    print("output paths %d in %.1f s (%d refused by the checks), unexpected outcomes %d"
          % (n, time.time() - t0, refused, len(bad)))
    for (case, err), k in collections.Counter((c, e[:100]) for c, e in bad).most_common(20):
        print("  x%d  %s %s" % (k, case, err))
    return 1 if unexpected or bad else 0


if __name__ == "__main__":
    sys.exit(main())
