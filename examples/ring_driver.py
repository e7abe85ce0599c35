"""A ring all-reduce driver on the Network API: when does each step start?

Each rank keeps one connection to its ring successor.  Step s of a rank
(2 (N - 1) steps: reduce-scatter, then all-gather) sends one chunk to the
successor once the chunk of step s - 1 from its predecessor is there.  A system
layer can learn "it is there" two ways:

- ``on_delivered``: the last byte reached the receiver (what ASTRA-sim's
  sim_recv waits for);
- ``on_done``: the sender has it acknowledged, about half a round trip later.

The script prints rank 0's step start times for both, and for on_delivered in
an accelerated run against the full run (inside a fast-forward, message ends
are reported at the virtual time the steady goodput delivers them).

    python examples/ring_driver.py [--ranks 8] [--chunk 4MB] [--cc hpcc]
"""
import argparse

import wormhole as wh
from wormhole.units import gbps


def ring_allreduce(net, ranks, chunk, trigger="delivered"):
    """Run a ring all-reduce of ``chunk`` bytes per step on hosts ``ranks``; the
    next step starts on ``trigger`` ('delivered' or 'done') of the data it needs.
    Returns {rank: [start time of each step, ps]} and the finish time."""
    n = len(ranks)
    conns = [net.connect(ranks[i], ranks[(i + 1) % n]) for i in range(n)]
    starts = {r: [] for r in range(n)}
    steps = 2 * (n - 1)

    def start(i, step):
        starts[i].append(net.now)

        def arrived(msg):               # the successor has this step's data: its next step may start
            if step + 1 < steps:
                start((i + 1) % n, step + 1)

        if trigger == "delivered":
            net.post(conns[i], chunk, on_delivered=arrived)
        else:
            net.post(conns[i], chunk, on_done=arrived)

    for i in range(n):
        start(i, 0)
    net.run()
    return starts, net.now


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--chunk", default="4MB")
    ap.add_argument("--cc", default="hpcc")
    args = ap.parse_args(argv)
    topo = wh.leaf_spine(2, args.ranks // 2, 2, rate=gbps(100))
    ranks = list(range(args.ranks))
    runs = {}
    for label, trigger, acc in (("delivered", "delivered", False), ("done", "done", False),
                                ("delivered, accelerated", "delivered", True)):
        net = wh.Network(topo, wh.Config(cc=args.cc, accelerate=acc))
        starts, end = ring_allreduce(net, ranks, args.chunk, trigger)
        runs[label] = (starts[0], end, net.stats)
    print("ring all-reduce, %d ranks on %r, %s per step, cc=%s" % (args.ranks, topo, args.chunk, args.cc))
    print("rank 0 step start times (us):")
    print("%5s %12s %12s %9s %14s %9s" % ("step", "on_delivered", "on_done", "later by", "accelerated", "error"))
    a, b, c = runs["delivered"][0], runs["done"][0], runs["delivered, accelerated"][0]
    for s in range(len(a)):
        print("%5d %12.3f %12.3f %9.3f %14.3f %8.3f%%" % (
            s, a[s] / 1e6, b[s] / 1e6, (b[s] - a[s]) / 1e6, c[s] / 1e6,
            100 * (c[s] - a[s]) / a[s] if a[s] else 0.0))
    for label, (_, end, st) in runs.items():
        skipped = st.get("events_skipped", 0)
        print("%-24s all-reduce done at %10.3f us, %8d events, %8d skipped" % (label, end / 1e6, st["events"], skipped))


if __name__ == "__main__":
    main()
