"""Cluster layer against real measurements, every policy x contention model.

16 GPUs: MoSim's testbed trace and its measured per-job results on 2 x 8 V100
(tests/data/cluster, also in ../shared/reference/cluster/testbed-16gpu).
32 GPUs: the 60-job trace (../shared/reference/cluster/traces/mosim) replayed
on 4 x 8 V100, timed per model; with --measured32 DIR holding MoSim's
data/testbed/32gpu/k8sbp.csv and k8slb.csv (OSSS-KU/MoSim), also its errors.
MoSim's published 32-GPU errors (bin packing / load balancing: average
training, average / median / P99 JCT, makespan %) are printed beside.

    python bench/cluster_testbed.py [--models none,fixed,mosim,flow,packet] [--measured32 DIR] [--shared DIR]
                                    [--transport tcp] [--buffer 1.6MiB] [--testbeds 16,32]
                                    [--collective flows|ring] [--offsets spread|actual] [--hop BYTES]
                                    [--policies bin-packing,load-balancing] [--host] [--tie-seeds 0,1,2,3]
                                    [--ring server|rank]

``--transport`` / ``--buffer`` replace the specs' packet transport and switch
buffer; ``--testbeds`` picks the testbeds (GPU counts), ``--policies`` the
policies; ``--collective``, ``--offsets`` and ``--hop`` set the fabric models'
all-reduce, job phases and packet time scaling (see wormhole.cluster.fabric).
``--host`` gives the specs the testbed servers' host I/O (wormhole.cluster.host.
V100_SXM2: 2 GPUs per PCIe 3.0 x16 switch, 4 per socket, 128 GB/s of memory per
socket), so co-located jobs contend for it; ``--tie-seeds`` breaks placement
ties at random as Kubernetes does, one run per seed, and prints their mean.
``--ring rank|server`` orders each job's ring by its ranks (the order the policy
placed its pods) or server by server, instead of the specs' ``ring``.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this clone's package

from wormhole.cluster import (ClusterSimulator, ClusterSpec, ModelPool, compare,  # noqa: E402
                              make_contention, read_measured, read_trace)
from wormhole.cluster.metrics import FIGURES  # noqa: E402
from wormhole.cluster.spec import parse_size  # noqa: E402

OVERRIDE = {}       # transport / buffer_bytes / host replacing the specs' (--transport, --buffer, --host)
FABRIC = {}         # the fabric models' options (--collective, --offsets, --hop, --ring, --volume, --sender)
SEEDS = [None]      # placement tie seeds (--tie-seeds; None: the lowest server index)


def load_spec(cluster):
    s = ClusterSpec.load(cluster)
    if not OVERRIDE:
        return s
    return ClusterSpec(s.servers, s.policy, s.latency_ps, s.name, s.source, OVERRIDE.get("transport", s.transport),
                       s.efficiency, OVERRIDE.get("buffer_bytes", s.buffer_bytes), OVERRIDE.get("host", s.host), s.ring)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "cluster")
# ../shared beside the clone (or beside the worktrees' folder, /work/wt/<name> -> /work/shared)
SHARED_CANDIDATES = [os.path.join(HERE, *[".."] * k, "shared", "reference", "cluster") for k in (2, 3)]
PUBLISHED = {"bin-packing": (19.74, 11.10, 1.62, 24.84, 17.61, 0.13, 1579),
             "load-balancing": (17.05, 21.83, 19.60, 8.38, 7.72, 0.22, 2864)}
POLICIES = ["bin-packing", "load-balancing"]
MEASURED32 = {"bin-packing": "k8sbp.csv", "load-balancing": "k8slb.csv"}


def table(title, trace, cluster, measured_of, models, pool, published=False):
    print("\n" + title)
    print("%-15s %-7s %8s %8s %8s %8s %8s %6s %8s %8s" % ("policy", "model", "train%", "avgJCT%", "medJCT%",
                                                         "p99JCT%", "mkspan%", "KS", "W1(s)", "wall(s)"))
    jobs = read_trace(trace)
    for policy in POLICIES:
        measured = measured_of(policy)
        for m in models:
            errs = []
            for seed in SEEDS:
                c = make_contention(m, **FABRIC)
                t0 = time.perf_counter()
                res = ClusterSimulator(jobs, pool, load_spec(cluster), c, policy=policy, tie_seed=seed).run()
                wall = time.perf_counter() - t0
                label = m if seed is None else "%s/%d" % (m, seed)
                if measured is None:
                    print("%-15s %-7s %s %8.2f" % (policy, label, " " * 70, wall))
                    continue
                e = compare(res.jobs, measured)
                row = [e["mape_" + f] for f in FIGURES] + [e["ks_jct"], e["wasserstein_jct_s"]]
                errs.append(row)
                print("%-15s %-7s %8.2f %8.2f %8.2f %8.2f %8.2f %6.3f %8.0f %8.2f" % (policy, label, *row, wall))
            if len(errs) > 1:
                mean = [sum(col) / len(col) for col in zip(*errs)]
                print("%-15s %-7s %8.2f %8.2f %8.2f %8.2f %8.2f %6.3f %8.0f   (mean of %d seeds)" % (
                    policy, m, *mean, len(errs)))
        if published and measured is not None:
            print("%-15s %-7s %8.2f %8.2f %8.2f %8.2f %8.2f %6.3f %8.0f   (MoSim's paper)" % (
                policy, "MoSim", *PUBLISHED[policy]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="none,fixed,mosim,flow,packet")
    ap.add_argument("--measured32", metavar="DIR", help="folder with MoSim's k8sbp.csv and k8slb.csv")
    ap.add_argument("--shared", metavar="DIR", help="the reference's cluster folder (default: ../shared/reference/"
                    "cluster beside the clone or its worktrees' folder)")
    ap.add_argument("--transport", help="the packet model's transport instead of the specs' (e.g. tcp, cubic)")
    ap.add_argument("--buffer", help="each fabric switch's shared buffer instead of the specs' (e.g. 9MB)")
    ap.add_argument("--collective", default="flows", help="the fabric models' all-reduce: flows or ring")
    ap.add_argument("--offsets", default="spread", help="the fabric replay's job phases: spread or actual")
    ap.add_argument("--hop", type=int, default=4 << 20, help="packet replay: bytes per worker per iteration")
    ap.add_argument("--policies", default="bin-packing,load-balancing", help="the policies to run")
    ap.add_argument("--testbeds", default="16,32", help="the testbeds to run (GPU counts: 16, 32)")
    ap.add_argument("--host", action="store_true", help="the testbed servers' host I/O (V100_SXM2) in the specs")
    ap.add_argument("--tie-seeds", help="comma-separated placement tie seeds: one run per seed and their mean")
    ap.add_argument("--ring", help="the fabric models' ring order: server or rank (default: the specs' ring)")
    ap.add_argument("--volume", default="rate", help="the fabric models' bytes per iteration: rate (default), "
                    "gradient, profile or ring")
    ap.add_argument("--sender", default="profile", help="the fabric models' sender: profile (default), rate or "
                    "transport")
    args = ap.parse_args()
    from wormhole.cluster.fabric import RING_ORDERS
    if args.ring is not None and args.ring not in RING_ORDERS:
        sys.exit("cluster_testbed: error: --ring must be one of %s (value: %r)" % (", ".join(RING_ORDERS), args.ring))
    from wormhole.cluster.fabric import SENDERS, VOLUME_SOURCES
    for what, v, names in (("--volume", args.volume, VOLUME_SOURCES), ("--sender", args.sender, SENDERS)):
        if v not in names:
            sys.exit("cluster_testbed: error: %s must be one of %s (value: %r)" % (what, ", ".join(names), v))
    if args.host:
        from wormhole.cluster.host import V100_SXM2
        OVERRIDE["host"] = V100_SXM2
    if args.tie_seeds:
        SEEDS[:] = [int(x) for x in args.tie_seeds.split(",")]
    FABRIC.update(collective=args.collective, offsets=args.offsets, packet_hop_bytes=args.hop, ring=args.ring,
                  volume=args.volume, sender=args.sender)
    POLICIES[:] = args.policies.split(",")
    if args.transport:
        OVERRIDE["transport"] = args.transport
    if args.buffer:
        OVERRIDE["buffer_bytes"] = parse_size(args.buffer, (None, None), "--buffer")
    beds = args.testbeds.split(",")
    models = args.models.split(",")
    pool = ModelPool.load("v100")
    perjob = os.path.join(DATA, "perjob.csv")
    if "16" in beds:
        table("16 GPUs (2 x 8 V100, 5 Gbps): MAPE against the testbed", os.path.join(DATA, "testbed-trace-16gpu.csv"),
              "testbed-16gpu", lambda p: read_measured(perjob, p), models, pool)
    if "32" not in beds:
        return
    shared = args.shared or next((d for d in SHARED_CANDIDATES if os.path.isdir(d)), SHARED_CANDIDATES[0])
    trace32 = os.path.join(shared, "traces", "mosim", "testbed-trace-32gpu.csv")
    if not os.path.exists(trace32):
        print("\n32 GPUs: skipped, %s is missing (it lives in ../shared)" % trace32)
        return

    def m32(policy):
        if not args.measured32:
            return None
        return read_measured(os.path.join(args.measured32, MEASURED32[policy]))
    table("32 GPUs (4 x 8 V100, 60 jobs)%s" % ("" if args.measured32 else ": wall-clock only (no --measured32)"),
          trace32, "testbed-32gpu", m32, models, pool, published=True)


if __name__ == "__main__":
    main()
