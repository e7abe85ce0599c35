"""MoSim's pairwise contention experiment with the mosim, flow and packet models:
two 8-GPU jobs across the 2 x 8 V100 testbed (4 + 4 workers each, 5 Gbps),
every ordered pair of the pool's models; prints the iteration-time change
T_pair(A, B) / T_solo(A) per pair and the mean / max per model.
(The paper measured 1.33x on average and up to 2.14x on hardware.)
``--variants`` adds the mechanisms switched off one at a time (flow and packet):
the worker sending all at once instead of at its profiled rate, the trace's
gradient as DDP buckets (the previous model), the same compute-then-
communicate, and the rings in the policy's rank order.  ``--paper12`` keeps
the paper's 12 models (its Table I has no wav2vec2).  ``--hop B`` sets the
packet replay's time scaling (bytes per worker per iteration, default 4 MiB).
The transport's one-transfer check (goodput against the spec's efficiency) is
printed first.  ``--transport`` / ``--buffer`` replace the spec's packet
transport and switch buffer; ``--only`` keeps the pairs of the named models, ``--rows`` the pairs whose job A is
one of them (a long run in pieces).

    python bench/cluster_pairwise.py [--models mosim,flow,packet] [--variants] [--paper12] [--hop BYTES]
                                     [--transport tcp] [--buffer 1.6MiB] [--only m1,m2] [--rows m1,m2] [--csv OUT.csv]
                                     [--collective flows|ring] [--offsets spread|actual]
                                     [--host] [--slots blocked|interleaved]
                                     [--ring server|rank] [--ranks blocked|alternate]
                                     [--volume rate|gradient|profile|ring] [--sender profile|rate|transport]

``--host`` adds the servers' host I/O (wormhole.cluster.host.V100_SXM2) so the
two jobs also contend for PCIe switch uplinks and socket memory; ``--slots``
gives them the GPU slots: blocked (A on 0-3, B on 4-7 of each server, as a device
plugin handing out the lowest free devices) or interleaved (alternating: every
switch shared, the most host contention this placement allows).
``--ring rank`` orders each job's ring by rank (NCCL over per-pod hosts: the
ring follows the ranks, not the servers; default the spec's ``ring``) and
``--ranks`` lays the ranks over the two servers: blocked (ranks 0-3 on server 0)
or alternate (rank r on server r mod 2, LeastAllocated placing the pods one at a
time; every ring link crosses).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this clone's package

from wormhole import WormholeError  # noqa: E402
from wormhole.cluster import ClusterSpec, ModelPool, make_contention  # noqa: E402
from wormhole.cluster.spec import parse_size  # noqa: E402
from wormhole.cluster.pairwise import PAPER_MODELS, RANKS, SLOTS, pairwise_table  # noqa: E402
from wormhole.outputs import check_file, write_files  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mosim,flow,packet")
    ap.add_argument("--pool", default="v100")
    ap.add_argument("--cluster", default="testbed-16gpu")
    ap.add_argument("--csv")
    ap.add_argument("--variants", action="store_true",
                    help="also flow/packet with each mechanism switched off")
    ap.add_argument("--paper12", action="store_true", help="the paper's 12 models only (no wav2vec2)")
    ap.add_argument("--hop", type=int, default=4 << 20, help="packet replay: bytes per worker per iteration")
    ap.add_argument("--transport", help="the packet model's transport instead of the spec's (e.g. dctcp, tcp, cubic)")
    ap.add_argument("--buffer", help="each fabric switch's shared buffer instead of the spec's (e.g. 1.6MiB, 9MB)")
    ap.add_argument("--collective", default="flows", help="the fabric models' all-reduce: flows (each worker's share "
                    "as one message, connections independent) or ring (NCCL's 2 (N - 1) dependent steps)")
    ap.add_argument("--offsets", default="spread", help="the fabric replay's job phases: spread (4 relative phases "
                    "averaged) or actual (the jobs' positions in their iterations; here both start together)")
    ap.add_argument("--only", help="comma-separated models: the pairs of these models only")
    ap.add_argument("--rows", help="comma-separated models: only these as job A (against every model B), so "
                    "that a long run can go in pieces")
    ap.add_argument("--host", action="store_true", help="the servers' host I/O (V100_SXM2) shared by the two jobs")
    ap.add_argument("--slots", default="blocked", help="the jobs' GPU slots: blocked or interleaved (with --host)")
    ap.add_argument("--ring", help="the fabric models' ring order: server (server by server) or rank (the ranks' "
                    "order, as NCCL orders a ring of per-pod hosts); default: the spec's ring")
    ap.add_argument("--ranks", default="blocked", help="the jobs' ranks over the two servers: blocked (0-3 on "
                    "server 0) or alternate (rank r on server r mod 2); matters with --ring rank")
    ap.add_argument("--volume", default="rate", help="the fabric models' bytes per iteration: rate (default), "
                    "gradient, profile or ring (the gradient's ring all-reduce, at most rate's bytes)")
    ap.add_argument("--sender", default="profile", help="the fabric models' sender: profile (default), rate (at "
                    "V_net / N, the rest a fixed pause) or transport")
    args = ap.parse_args()
    if args.csv:
        try:
            check_file(args.csv, "--csv")       # before simulating, not after
        except WormholeError as e:
            sys.exit("cluster_pairwise: error: %s" % e)
    pool, spec = ModelPool.load(args.pool), ClusterSpec.load(args.cluster)
    try:
        if args.slots not in SLOTS:
            raise WormholeError("--slots must be one of %s" % ", ".join(SLOTS), value=args.slots)
        if args.ranks not in RANKS:
            raise WormholeError("--ranks must be one of %s" % ", ".join(RANKS), value=args.ranks)
        from wormhole.cluster.fabric import RING_ORDERS, SENDERS, VOLUME_SOURCES
        for what, v, names in (("--volume", args.volume, VOLUME_SOURCES), ("--sender", args.sender, SENDERS)):
            if v not in names:
                raise WormholeError("%s must be one of %s" % (what, ", ".join(names)), value=v)
        if args.ring is not None and args.ring not in RING_ORDERS:
            raise WormholeError("--ring must be one of %s" % ", ".join(RING_ORDERS), value=args.ring)
        if args.transport or args.buffer or args.host:
            from wormhole.cluster.host import V100_SXM2
            spec = ClusterSpec(spec.servers, spec.policy, spec.latency_ps, spec.name, spec.source,
                               args.transport or spec.transport, spec.efficiency,
                               parse_size(args.buffer, (None, None), "--buffer") if args.buffer else spec.buffer_bytes,
                               V100_SXM2 if args.host else spec.host, spec.ring)
        only = None if not args.only else [pool.canonical(m) for m in args.only.split(",") if pool.entry(m)]
        rows = None if not args.rows else [pool.canonical(m) for m in args.rows.split(",") if pool.entry(m)]
    except WormholeError as e:
        sys.exit("cluster_pairwise: error: %s" % e)
    from wormhole.cluster.fabric import FabricContention
    for b in ("flow", "packet"):
        if b in args.models.split(","):
            c = FabricContention(b).transport_check(spec)
            print("transport %s (%s): line %.0f MB/s, own goodput %.1f MB/s, wire factor %.4f -> goodput %.1f MB/s "
                  "(target %.1f MB/s = efficiency x line)" % (
                      c["transport"], b, c["line_Bps"] / 1e6, c["own_goodput_Bps"] / 1e6, c["wire_factor"],
                      c["goodput_Bps"] / 1e6, (c["target_Bps"] or 0) / 1e6))
    hop = {"packet_hop_bytes": args.hop, "collective": args.collective, "offsets": args.offsets, "ring": args.ring,
           "volume": args.volume, "sender": args.sender}
    runs = [(m, m, dict(hop)) for m in args.models.split(",")]
    if args.variants:
        for b in ("flow", "packet"):
            if b in args.models.split(","):
                runs += [(b + "-allatonce", b, dict(hop, sender="transport")),
                         (b + "-ddp-grad", b, dict(hop, volume="gradient", sender="transport")),
                         (b + "-grad-paced", b, dict(hop, volume="gradient")),
                         (b + "-rank-ring", b, dict(hop, ring="rank"))]
    models = None
    if args.paper12:
        models = [m for m in pool.names() if m in PAPER_MODELS]
    if only:
        models = [m for m in (models or pool.names()) if m in only]
    tables = {}
    for m, base, kw in runs:
        t0 = time.perf_counter()
        tables[m] = pairwise_table(pool, spec, make_contention(base, **kw), models=models, rows=rows,
                                   slots=args.slots, ranks=args.ranks)
        v = np.array(list(tables[m].values()))
        print("%-14s %d pairs in %.1f s: mean %.3fx, median %.3fx, max %.3fx (%s with %s)" % (
            m, len(v), time.perf_counter() - t0, v.mean(), np.median(v), v.max(),
            *max(tables[m], key=tables[m].get)))
    names = sorted({a for a, _ in next(iter(tables.values()))})
    cols = sorted({b for _, b in next(iter(tables.values()))})
    for m, tab in tables.items():
        print("\n%s: T_pair(A, B) / T_solo(A); rows A, columns B" % m)
        print("%-16s" % "" + "".join("%7.7s" % b for b in cols) + "   mean")
        for a in names:
            row = [tab[(a, b)] for b in cols]
            print("%-16s" % a + "".join("%7.2f" % x for x in row) + "  %5.2f" % np.mean(row))
    if args.csv:
        lines = ["model_a,model_b," + ",".join(tables) + "\n"]
        for a in names:
            for b in cols:
                lines.append("%s,%s,%s\n" % (a, b, ",".join("%.4f" % tables[m][(a, b)] for m in tables)))
        write_files({args.csv: "".join(lines)})


if __name__ == "__main__":
    main()
