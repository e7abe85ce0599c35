"""Where NCCL's tree stops beating the ring, on 16 and 128 GPUs: NCCL's cost model (wormhole.workload.tuner)
and the simulated all-reduces on an idle rail-optimized fabric.

    python bench/nccl_crossover.py [--gpus 16 128] [--cc hpcc] [--mode accelerated] [--nccl-channels N] [--json]

The ring runs in NCCL's ring order (each server crossing on one rail) on NCCL's channels (a group with 8
GPUs per server: 8 rings at once, each crossing servers on its own rail; --nccl-channels 1 for a single
ring through one NIC per server), the tree in NCCL's shape (chains in the servers, a double binary tree
across them).
Two groups per GPU count N (8 GPUs per server, 100 Gb/s NICs, A100 NVLink 2.4 Tb/s): every GPU (N ranks,
8 per server: an all-reduce across the whole job), and one GPU per server (N / 8 ranks: the DP group of a
TP 8 job).  For each: the tuner's ring/tree crossovers (NCCL's model has several where its tree
correction factors dip), the sizes where it would switch on H100 (with NVLS / NVLS-tree), and the
simulated ring and tree all-reduce times at powers of two with the sizes where the faster one changes.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import wormhole as wh                                              # noqa: E402
from wormhole.workload import RingAllReduce, Transport             # noqa: E402
from wormhole.workload import tuner                                # noqa: E402
from wormhole.workload.channels import check_channels, ring_channels  # noqa: E402
from wormhole.workload.collectives import TreeAllReduce, ring_order  # noqa: E402

def hardware(channels):
    """The tuner's A100 and H100 (100 Gb/s NICs) with the ring's channels."""
    return (tuner.Hardware(2400e9, 100e9, nvls=False, ring_channels=channels),
            tuner.Hardware(3600e9, 100e9, nvls=True, ring_channels=channels))


def simulate(cls, gpus, ranks, nbytes, cc, mode, chunk, channels=None):
    net = wh.Network(wh.rail_optimized(gpus), wh.Config.preset(cc, accelerate=mode == "accelerated"))
    t = Transport(net, 8, 2400.0)
    done = []
    ring = cls is RingAllReduce
    c = cls(t, ring_order(ranks) if ring else ranks, nbytes, on_done=done.append, chunk_bytes=chunk,
            **({"channels": channels} if ring else {}))
    c.start()
    net.run()
    assert done == [c]
    return c.duration, net.stats["events"]


def human(b):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return "%.2f %s" % (b / k, unit)
    return "%d B" % b


def study(gpus, per_server, cc, mode, sizes, chunk, channels=None):
    ranks = list(range(gpus)) if per_server == 8 else list(range(0, gpus, 8))
    shape = tuner.Shape.of(ranks, 8)
    A100, H100 = hardware(channels)
    out = {"gpus": gpus, "ranks": len(ranks), "servers": shape.nodes, "per_server": shape.ppn,
           "ring_channels": ring_channels(ranks, 8, channels),
           "tuner_ring_tree": tuner.crossovers("allreduce", shape, A100, algos=("ring", "tree")),
           "tuner_h100": tuner.crossovers("allreduce", shape, H100), "simulated": []}
    prev = None
    for s in sizes:
        t0 = time.perf_counter()
        ring, ev_r = simulate(RingAllReduce, gpus, ranks, s, cc, mode, chunk, channels)
        tree, ev_t = simulate(TreeAllReduce, gpus, ranks, s, cc, mode, chunk)
        row = {"bytes": s, "ring_ps": ring, "tree_ps": tree, "faster": "tree" if tree < ring else "ring",
               "tuner": tuner.choose("allreduce", shape, A100, s), "events": ev_r + ev_t,
               "wall_s": round(time.perf_counter() - t0, 2)}
        out["simulated"].append(row)
        if prev is not None and prev["faster"] != row["faster"]:
            out.setdefault("simulated_crossovers", []).append((prev["bytes"], row["bytes"], prev["faster"],
                                                               row["faster"]))
        prev = row
    return out


def print_study(r):
    print("\n%d GPUs, all-reduce over %d ranks (%d servers x %d), ring on %d channel%s" % (
        r["gpus"], r["ranks"], r["servers"], r["per_server"], r["ring_channels"],
        "" if r["ring_channels"] == 1 else "s"))
    print("  NCCL model, A100 (ring/tree): " + (", ".join("%s -> %s at %s" % (a, b, human(x))
                                                         for x, a, b in r["tuner_ring_tree"]) or "no change"))
    print("  NCCL model, H100 (all):       " + (", ".join("%s -> %s at %s" % (a, b, human(x))
                                                         for x, a, b in r["tuner_h100"]) or "no change"))
    print("  | size | ring us | tree us | faster (simulated) | tuner (A100) |")
    print("  |---|---|---|---|---|")
    for row in r["simulated"]:
        print("  | %s | %.1f | %.1f | %s | %s |" % (human(row["bytes"]), row["ring_ps"] / 1e6, row["tree_ps"] / 1e6,
                                                  row["faster"], row["tuner"]))
    for lo, hi, a, b in r.get("simulated_crossovers", []):
        print("  simulated: %s -> %s between %s and %s" % (a, b, human(lo), human(hi)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, nargs="+", default=[16, 128])
    ap.add_argument("--cc", default="hpcc")
    ap.add_argument("--mode", default="accelerated", choices=("accelerated", "full"))
    ap.add_argument("--min-kib", type=int, default=64)
    ap.add_argument("--max-mib", type=int, default=64)
    ap.add_argument("--chunk-kib", type=int, default=4096, help="collective chunk (default 4 MiB, the bench's)")
    ap.add_argument("--nccl-channels", type=int, metavar="N",
                    help="the ring's channels on groups with 2 or more GPUs per server (default: one per GPU)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        check_channels(args.nccl_channels)
    except wh.WormholeError as e:
        ap.error(str(e))
    sizes = []
    s = args.min_kib << 10
    while s <= args.max_mib << 20:
        sizes.append(s)
        s *= 2
    print("idle rail-optimized fabric, %s, %s mode, 100 Gb/s NICs, 8 GPUs per server, NVLink on the channel "
          "(2.4 Tb/s, 1 us), chunks of %s" % (args.cc, args.mode, human(args.chunk_kib << 10)))
    results = []
    for g in args.gpus:
        for per in (8, 1):
            r = study(g, per, args.cc, args.mode, sizes, args.chunk_kib << 10, args.nccl_channels)
            results.append(r)
            if args.json:
                print(json.dumps(r))
            else:
                print_study(r)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
