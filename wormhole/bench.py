"""Benchmarks that ship with the package.

    python -m wormhole.bench kernel [--repeat 3] [--json]
        packet-kernel speed (events/s) on a 16:1 incast and a k=8 fat-tree permutation
    python -m wormhole.bench gpt13b --gpus 128 ...
        the headline training-iteration benchmark (needs the workload layer)

Kernel speed: events processed, events per second and wall-clock of the
packet kernel, in fixed-rate mode and with each congestion control (the
reference run script's preset at 100 Gb/s), on

  (a) a 16:1 incast of 10 MB flows through one switch (100 Gbps, 1 us links),
  (b) a k=8 fat-tree (128 hosts, 80 switches) running a random permutation of
      1 MB flows (every host sends to one host and receives from one).

Each scenario runs --repeat times; the median wall-clock is reported.  The
reference simulator (C++, -O3) processes 1.0-2.2 M events/s on a 2-core machine
(its summary.txt files in ../shared/reference/hpcc-ns3-runs/).
"""
import argparse
import json
import random
import statistics
import sys
import time

import wormhole as wh

WORKLOADS = ("gpt7b", "gpt13b", "gpt22b", "gpt175b", "moe")


def incast(cc="none"):
    net = wh.Network(wh.star(17), _config(cc))
    for i in range(16):
        net.send(i, 16, 10_000_000)
    return net


def _config(cc):
    return wh.Config(cc="none") if cc == "none" else wh.Config.preset(cc)


def fattree_permutation(cc="none", seed=1):
    topo = wh.fat_tree(8)
    net = wh.Network(topo, _config(cc))
    hosts = topo.hosts
    rnd = random.Random(seed)
    while True:
        perm = hosts[:]
        rnd.shuffle(perm)
        if all(a != b for a, b in zip(hosts, perm)):
            break
    for a, b in zip(hosts, perm):
        net.send(a, b, 1_000_000)
    return net


SCENARIOS = {"incast16_10MB": incast, "fattree8_permutation_1MB": fattree_permutation}


def measure(name, build, repeat, cc="none"):
    walls = []
    for _ in range(repeat):
        net = build(cc)
        t0 = time.perf_counter()
        net.run()
        walls.append(time.perf_counter() - t0)
        st = net.stats
    wall = statistics.median(walls)
    return {
        "scenario": name,
        "cc": cc,
        "events": st["events"],
        "wall_seconds": round(wall, 4),
        "events_per_second": round(st["events"] / wall),
        "flows": st["flows"],
        "flows_completed": st["flows_completed"],
        "data_packets": st["data_packets"],
        "sim_time_us": st["sim_time_ps"] / 1e6,
        "pfc_pauses": st["pfc_pauses"],
        "drops": st["drops"],
        "repeat": repeat,
    }


def kernel_main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON object per scenario")
    ap.add_argument("--only", choices=sorted(SCENARIOS))
    ap.add_argument("--cc", default="all", help="none, dcqcn, hpcc, timely, dctcp or all (default)")
    args = ap.parse_args(argv)
    ccs = ["none", "dcqcn", "hpcc", "timely", "dctcp"] if args.cc == "all" else [args.cc]
    for name, build in SCENARIOS.items():
        if args.only and name != args.only:
            continue
        for cc in ccs:
            r = measure(name, build, max(1, args.repeat), cc)
            if args.json:
                print(json.dumps(r, sort_keys=True))
            else:
                print("%-26s %-6s %10d events %7.3f s %6.2f M events/s  (%d flows, %.1f us simulated, "
                      "%d PFC pauses, median of %d)"
                      % (name, cc, r["events"], r["wall_seconds"], r["events_per_second"] / 1e6, r["flows"],
                         r["sim_time_us"], r["pfc_pauses"], r["repeat"]))
            sys.stdout.flush()



def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "kernel":
        kernel_main(argv[1:])
        return 0
    if argv and argv[0] in WORKLOADS:
        sys.stderr.write("wormhole.bench: error: the training-workload layer that turns %s into traffic "
                         "is not built yet; kernel speed: python -m wormhole.bench kernel\n" % argv[0])
        return 2
    sys.stderr.write("wormhole.bench: error: usage: python -m wormhole.bench {kernel|%s} [options]\n"
                     % "|".join(WORKLOADS))
    return 2


if __name__ == "__main__":
    sys.exit(main())
