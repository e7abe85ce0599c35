"""The pairwise experiment's contention from a fluid model, independent of the
simulators: what any transport that shares a NIC direction max-min fairly
among its connections can give under the fabric models' traffic (the
``rate`` volume with the profile sender, wormhole.cluster.fabric).

Each job iterates: compute C (compute_only_s, no NIC), then V bytes on each
ring link (sync_bytes "rate") at its sender's rate c (FabricContention.
sender_Bps); k of its links cross each NIC direction (1 with its ranks blocked
by server, 4 with 8 ranks alternating between the servers and the ring in rank
order).  The NIC direction moves G = efficiency x line rate of payload, shared
max-min among the 2k links of the two jobs.  Printed per pair:

- ``fluid``: the two jobs iterating from ``--phases`` relative phases (golden-
  ratio steps), event by event in fluid time, the mean iteration of A after
  its first over its solo iteration C + V / min(c, G / k);
- ``bound``: A's communication always overlapped by B's (B never stops): the
  most a max-min transport can slow A under this traffic.

    python bench/cluster_pairwise_bound.py [--ranks blocked|alternate] [--phases 8] [--paper12] [--table]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this clone's package

from wormhole.cluster import ClusterSpec, ModelPool  # noqa: E402
from wormhole.cluster.fabric import FabricContention, compute_only_s, sync_bytes  # noqa: E402
from wormhole.cluster.pairwise import PAPER_MODELS, RANKS, _running, rank_layout  # noqa: E402

_PHI = 0.6180339887498949


def shares(demands, k, G):
    """Max-min rates per link of jobs with k links each at the given per-link
    demands on one NIC direction of G bytes/s (water filling)."""
    rates, left, cap = {}, dict(demands), float(G)
    while left:
        fair = cap / (k * len(left))
        low = {j: d for j, d in left.items() if d <= fair}
        if not low:
            for j in left:
                rates[j] = fair
            break
        for j, d in low.items():
            rates[j] = d
            cap -= k * d
            del left[j]
    return rates


def solo_s(job, k, G):
    C, V, c = job
    return C + V / shares({0: c}, k, G)[0]


def pair_s(a, b, k, G, phase, iterations=12):
    """Mean iteration (s) of job a beside job b, b started phase x its solo
    iteration late; fluid, event by event."""
    st = [dict(job=a, mode="c", left=a[0], ends=[]), dict(job=b, mode="w", left=phase * solo_s(b, k, G), ends=[])]
    t = 0.0
    while len(st[0]["ends"]) < iterations:
        comm = {i: s["job"][2] for i, s in enumerate(st) if s["mode"] == "n"}
        rate = shares(comm, k, G) if comm else {}
        dt = min(s["left"] / rate[i] if s["mode"] == "n" else s["left"] for i, s in enumerate(st))
        t += dt
        for i, s in enumerate(st):
            s["left"] -= rate[i] * dt if s["mode"] == "n" else dt
            if s["left"] <= 1e-12 * max(1.0, s["job"][1]):
                if s["mode"] == "n":
                    s["ends"].append(t)
                s["mode"], s["left"] = ("n", s["job"][1]) if s["mode"] == "c" else ("c", s["job"][0])
    e = st[0]["ends"]
    return (e[-1] - e[0]) / (len(e) - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="blocked", choices=RANKS)
    ap.add_argument("--phases", type=int, default=8)
    ap.add_argument("--paper12", action="store_true", help="the paper's 12 models only (no wav2vec2)")
    ap.add_argument("--table", action="store_true", help="print the 13 x 13 fluid table")
    args = ap.parse_args()
    pool, spec = ModelPool.load("v100"), ClusterSpec.load("testbed-16gpu")
    fc = FabricContention("packet")
    G = spec.goodput_Bps(0)
    place = rank_layout(4, args.ranks)[0]
    k = sum(1 for r in range(8) if place[r] == 0 and place[(r + 1) % 8] == 1)   # links leaving server 0
    jobs = {}
    for m in pool.names():
        if 8 in pool.entry(m).profiles and (not args.paper12 or m in PAPER_MODELS):
            r = _running("A", pool, m, place)
            jobs[m] = (compute_only_s(r), sync_bytes(r, "rate"), fc.sender_Bps(r) or float("inf"))
    names = sorted(jobs)
    fluid, bound = {}, {}
    for a in names:
        for b in names:
            ph = [((i + 1) * _PHI) % 1.0 for i in range(args.phases)]
            fluid[(a, b)] = np.mean([pair_s(jobs[a], jobs[b], k, G, p) for p in ph]) / solo_s(jobs[a], k, G)
            C, V, c = jobs[a]
            bound[(a, b)] = (C + V / shares({0: c, 1: jobs[b][2]}, k, G)[0]) / solo_s(jobs[a], k, G)
    print("ranks %s: %d links of each job per NIC direction, G = %.1f MB/s, %d models" % (
        args.ranks, k, G / 1e6, len(names)))
    print("%-16s %8s %8s %8s %8s %8s" % ("model A", "c MB/s", "comm %", "fluid", "fluidmax", "bound"))
    for a in names:
        f = [fluid[(a, b)] for b in names]
        C = jobs[a][0]
        print("%-16s %8.1f %8.1f %8.3f %8.3f %8.3f" % (a, jobs[a][2] / 1e6, 100 * (1 - C / solo_s(jobs[a], k, G)),
                                                      np.mean(f), max(f), np.mean([bound[(a, b)] for b in names])))
    fv, bv = np.array(list(fluid.values())), np.array(list(bound.values()))
    print("all pairs: fluid mean %.3f max %.3f; bound mean %.3f max %.3f" % (fv.mean(), fv.max(), bv.mean(),
                                                                            bv.max()))
    if args.table:
        print("%-16s" % "" + "".join("%7.7s" % b for b in names))
        for a in names:
            print("%-16s" % a + "".join("%7.2f" % fluid[(a, b)] for b in names))


if __name__ == "__main__":
    main()
