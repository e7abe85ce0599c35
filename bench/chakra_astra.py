"""ASTRA-sim's Chakra micro-benchmarks on our fabric, against our own collectives.

    git clone https://github.com/astra-sim/astra-sim   (or any copy of its examples/)
    python bench/chakra_astra.py --examples astra-sim/examples/workload/microbenchmarks

For all_reduce and all_to_all on 8 and 16 NPUs (1 MB per NPU) this reads the
per-rank ``.et`` files, runs them through ``wormhole.workload.chakra`` on a
rail-optimized 100 Gb/s fabric (HPCC, accelerated), once with one NPU per
server (everything crosses the fabric) and once with 8 NPUs per server (NVLink
inside a server), and runs our own collective of the same size directly through
the Network API on the same fabric.  It also prints the alpha-beta time of an
idle ring (2 us per step).  The traces are read, never copied.
"""
import argparse
import os
import sys
import time

import wormhole as wh
from wormhole.workload import COLLECTIVES, Transport, alpha_beta_ring
from wormhole.workload.chakra import ChakraTrace, run_chakra

CASES = [("all_reduce", "allreduce", 8), ("all_reduce", "allreduce", 16), ("all_to_all", "alltoall", 8),
         ("all_to_all", "alltoall", 16)]


def net_for(n, gps):
    return wh.Network(wh.rail_optimized(n, gpus_per_server=gps), wh.Config.preset("hpcc", 100, accelerate=True))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", required=True, help="ASTRA-sim's examples/workload/microbenchmarks folder")
    args = ap.parse_args(argv)
    print("%-11s %4s %7s %9s | %14s %14s %8s | %12s" % ("collective", "NPUs", "per srv", "size", "chakra trace",
                                                       "our collective", "diff", "alpha-beta"))
    for folder, ours, n in CASES:
        prefix = os.path.join(args.examples, folder, "%dnpus_1MB" % n, folder)
        tr = ChakraTrace.load(prefix, n)
        (g, k), c = next(iter(tr.colls.items()))
        for gps in (1, 8):
            t0 = time.perf_counter()
            run = run_chakra(net_for(n, gps), prefix, n, gpus_per_server=gps)
            wall = time.perf_counter() - t0
            ref = net_for(n, gps)
            coll = COLLECTIVES[ours](Transport(ref, gps), list(range(n)), c["size"]).start()
            ref.run()
            ab = ""
            if ours == "allreduce" and gps == 1:
                ab = "%9.1f us" % (alpha_beta_ring("allreduce", n, c["size"], 100e9, 2e6) / 1e6)
            print("%-11s %4d %7d %7.2f MB | %11.3f us %11.3f us %+7.3f%% | %12s  (%.2f s)" % (
                c["type"], n, gps, c["size"] / 2 ** 20, run.iteration_time / 1e6, coll.duration / 1e6,
                100 * (run.iteration_time - coll.duration) / coll.duration, ab, wall))
            sys.stdout.flush()
    # ASTRA-sim's own regression test (tests/rt_template: the same 1 MB all-reduce on 8 NPUs, analytical
    # congestion-aware backend, a Ring of 50 GB/s links with 500 ns latency, ring all-reduce, 4 dataset
    # splits) expects "sys[0] finished, 117780 cycles" (ns).  Our nearest fabric: 8 hosts on one switch,
    # 400 Gb/s links of 250 ns (500 ns per hop), one NPU per server.
    from wormhole.units import NS, gbps
    prefix = os.path.join(args.examples, "all_reduce", "8npus_1MB", "all_reduce")
    print("ASTRA-sim regression reference (tests/rt_template/refs/stdout.txt): 117.780 us")
    for label, cfg in (("no congestion control", wh.Config(cc="none")), ("HPCC", wh.Config.preset("hpcc", 400))):
        net = wh.Network(wh.star(8, rate=gbps(400), delay=250 * NS), cfg)
        run = run_chakra(net, prefix, 8, gpus_per_server=1)
        print("  ours, star(8) 400 Gb/s 250 ns, %-22s %9.3f us" % (label + ":", run.iteration_time / 1e6))


if __name__ == "__main__":
    main()
