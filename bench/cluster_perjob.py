"""Where a cluster run's training-time error comes from, job by job
(wormhole.cluster.perjob): each job's slowdown over its standalone time, ours
against the measurement, in four classes (A: the hardware ran it uncontended
and we slowed it; B: we ran it uncontended and the hardware slowed it; C: both
slowed it; D: the rest), with each class's share of the summed |error|, its
bias and its MAPE; per model, the mean measured / ours training time of the
jobs the hardware slowed (classes B and C); ``--top N`` lists the N jobs with the largest |error|.

    python -m wormhole cluster --trace T --cluster C --policy P --contention packet --compare M --out DIR
    python bench/cluster_perjob.py --jobs DIR/packet/jobs.csv --measured M [--policy P] [--top 10]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this clone's package

from wormhole import WormholeError  # noqa: E402
from wormhole.cluster import read_measured  # noqa: E402
from wormhole.cluster.perjob import CLASSES, LABELS, by_model, decompose, read_ours  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", required=True, help="our jobs.csv (python -m wormhole cluster --out DIR)")
    ap.add_argument("--measured", required=True, help="the measured per-job CSV (MoSim's testbed format)")
    ap.add_argument("--policy", help="the measured file's rows of this policy (16-GPU perjob.csv)")
    ap.add_argument("--top", type=int, default=10, help="list the jobs with the largest |error|")
    args = ap.parse_args()
    try:
        ours = read_ours(args.jobs)
        classes, rows = decompose(ours, read_measured(args.measured, args.policy))
    except WormholeError as e:
        sys.exit("cluster_perjob: error: %s" % e)
    print("%-5s %-36s %5s %12s %7s %12s %8s" % ("class", "", "jobs", "|err| (s)", "share", "bias (s)", "MAPE %"))
    for k in CLASSES:
        c = classes[k]
        print("%-5s %-36s %5d %12.0f %6.1f%% %+12.0f %8.2f" % (k, LABELS[k], c["jobs"], c["abs_s"], 100 * c["share"],
                                                          c["signed_s"], c["mape"]))
    print("\nper model, jobs of classes B and C: measured / ours training time (above 1: the hardware slowed more)")
    for mod, (n, ratio) in by_model(ours, rows).items():
        print("  %-18s %3d jobs  %.2f" % (mod, n, ratio))
    print("\n%-6s %-5s %12s %12s %12s %8s %8s" % ("job", "class", "standalone", "measured", "ours", "meas x", "ours x"))
    for j, k, sa, m, o in sorted(rows, key=lambda r: -abs(r[4] - r[3]))[:args.top]:
        print("%-6s %-5s %12.0f %12.0f %12.0f %8.2f %8.2f" % (j, k, sa, m, o, m / sa, o / sa))


if __name__ == "__main__":
    main()
