"""Which placements a policy gives under the testbed's own occupancy.

The testbed files hold no placements, only each job's measured start and end.
Replaying those (a job takes GPUs at its measured start and frees them at its
measured end) gives the free GPUs of every server at each start, so the policy's
placement at that moment is what the testbed's scheduler saw, whatever our
contention model predicts.  Each job's measured training time over its
standalone one (loading + iterations x the profiled iteration, all workers on
one server) then says whether the placement is plausible: a job the policy puts
on one server should not run much slower than alone (nothing crosses a NIC),
one it spreads may.  Printed per policy and tie rule: the one-server and the
spread jobs' ratios, and the jobs on one server slower than ``--slow`` x;
``--corunners`` lists, for each of those, the jobs that shared its server and
for what share of its run (lowest-index ties).

    python bench/cluster_placements.py [--testbeds 16,32] [--measured32 DIR] [--tie-seeds 0,1,2,3] [--slow 1.5]
                                       [--corunners]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this clone's package

from wormhole.cluster import ClusterSpec, ModelPool, read_measured, read_trace  # noqa: E402
from wormhole.cluster.policies import checked_place, get_policy  # noqa: E402
from wormhole.cluster.sim import prepare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "cluster")
SHARED = [os.path.join(HERE, *[".."] * k, "shared", "reference", "cluster") for k in (2, 3)]
MEASURED32 = {"bin-packing": "k8sbp.csv", "load-balancing": "k8slb.csv"}


def replay(jobs, measured, spec, policy, seed):
    """{job id: servers} placing each job at its measured start on what the measured runs left free."""
    by = {m.job_id[2:] if m.job_id.startswith("id") else m.job_id: m for m in measured}
    events = sorted([(by[j.job_id].start, 1, i) for i, j in enumerate(jobs)] +
                    [(by[j.job_id].end, 0, i) for i, j in enumerate(jobs)])      # ends before starts at one time
    cap = [s.gpus for s in spec.servers]
    free, where = list(cap), {}
    place = get_policy(policy, seed)
    for _, start, i in events:
        j = jobs[i]
        if not start:
            for s in where[j.job_id]:
                free[s] += 1
            continue
        p = checked_place(place, j.gpus, free, cap)
        if p is None:
            raise SystemExit("job %s does not fit at its measured start (free %s)" % (j.job_id, free))
        for s in p:
            free[s] -= 1
        where[j.job_id] = p
    return where, by


def corunners(jobs, where, by, alone, slow, pool):
    """For each one-server job slower than ``slow`` x alone: the jobs on its server while it ran."""
    for j in jobs:
        m, p = by[j.job_id], where[j.job_id]
        if len(set(p)) != 1 or m.training / alone[j.job_id] <= slow:
            continue
        out = []
        for k in jobs:
            if k.job_id == j.job_id or p[0] not in where[k.job_id]:
                continue
            mk = by[k.job_id]
            share = (min(m.end, mk.end) - max(m.start, mk.start)) / (m.end - m.start)
            if share > 0:
                out.append("%s (%s x%d on servers %s, %.0f%%)" % (k.job_id, pool.canonical(k.model), k.gpus,
                                                                    "+".join(map(str, sorted(set(where[k.job_id])))),
                                                                    100 * share))
        print("    job %s (%s x%d, server %d, %.2fx): %s" % (j.job_id, pool.canonical(j.model), j.gpus, p[0],
                                                            m.training / alone[j.job_id], "; ".join(out)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--testbeds", default="16,32")
    ap.add_argument("--measured32", metavar="DIR", help="folder with MoSim's k8sbp.csv and k8slb.csv")
    ap.add_argument("--tie-seeds", default="", help="comma-separated tie seeds besides the lowest-index rule")
    ap.add_argument("--slow", type=float, default=1.5, help="a one-server job slower than this x alone is listed")
    ap.add_argument("--corunners", action="store_true", help="the jobs sharing each listed job's server")
    args = ap.parse_args()
    pool = ModelPool.load("v100")
    seeds = [None] + [int(x) for x in args.tie_seeds.split(",") if x]
    beds = []
    if "16" in args.testbeds.split(","):
        beds.append(("16", os.path.join(DATA, "testbed-trace-16gpu.csv"), "testbed-16gpu",
                     lambda p: read_measured(os.path.join(DATA, "perjob.csv"), p)))
    if "32" in args.testbeds.split(",") and args.measured32:
        shared = next((d for d in SHARED if os.path.isdir(d)), SHARED[0])
        beds.append(("32", os.path.join(shared, "traces", "mosim", "testbed-trace-32gpu.csv"), "testbed-32gpu",
                     lambda p: read_measured(os.path.join(args.measured32, MEASURED32[p]))))
    for bed, trace, cluster, measured_of in beds:
        spec = ClusterSpec.load(cluster)
        jobs = read_trace(trace)
        alone = {r.key: r.load_s + r.iterations * r.profile.iteration_s for r in prepare(jobs, pool, spec)}
        for policy in ("bin-packing", "load-balancing"):
            measured = measured_of(policy)
            for seed in seeds:
                where, by = replay(jobs, measured, spec, policy, seed)
                one, spread, slow = [], [], []
                for j in jobs:
                    ratio = by[j.job_id].training / alone[j.job_id]
                    if len(set(where[j.job_id])) == 1:
                        one.append(ratio)
                        if ratio > args.slow:
                            slow.append("%s (%s x%d, %.2fx)" % (j.job_id, pool.canonical(j.model), j.gpus, ratio))
                    else:
                        spread.append(ratio)
                med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")      # noqa: E731
                print("%s GPUs %-15s ties %-7s one server %2d (median %.2fx)  spread %2d (median %.2fx)  "
                      "one-server jobs > %.1fx alone: %d %s" % (
                          bed, policy, "lowest" if seed is None else "seed %d" % seed, len(one), med(one),
                          len(spread), med(spread), args.slow, len(slow), " ".join(slow)))
                if args.corunners and seed is None:
                    corunners(jobs, where, by, alone, args.slow, pool)


if __name__ == "__main__":
    main()
