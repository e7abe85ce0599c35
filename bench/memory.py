#!/usr/bin/env python
"""Memory per flow and per packet in flight: the kernel's unit sizes, and what a
growing incast actually holds (C arrays, and the process's peak RSS).

    python bench/memory.py

Runs beyond a budget stop with a clear error: `max_packets` bounds the packet
pool (ResourceLimitError, not an out-of-memory kill).
"""
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import wormhole as wh  # noqa: E402


def main():
    for cc in ("none", "hpcc"):
        net = wh.Network(wh.star(2), cc=cc, accelerate=True)
        m = net.memory()
        print("%-5s per flow %d B (+%d B window while active, accelerated, for connections and flows of at "
              "least l x MTU bytes), per packet %d B, per event %d B"
              % (cc, m["per_flow"], m["window_per_active_flow"], m["per_packet"], m["per_event"]))
    for n in (16, 64, 256):
        net = wh.Network(wh.star(n + 1), cc="hpcc", has_win=False)
        for i in range(n):
            net.send(i, n, 2_000_000)
        net.run()
        m = net.memory()
        st = net.stats
        print("incast %3d:1  peak packets in flight %7d  pool %7d  packet memory %8.1f KB  flows %6.1f KB  "
              "events %7.1f KB  peak RSS %6.1f MB" % (
                  n, st["packets_peak"], st["packet_pool"], m["packets"] / 1e3, m["flows"] / 1e3, m["events"] / 1e3,
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3))
    net = wh.Network(wh.star(65), cc="none", has_win=False, max_packets=5000)
    for i in range(64):
        net.send(i, 64, 2_000_000)
    try:
        net.run()
        print("limit: not reached")
    except wh.ResourceLimitError as e:
        print("limit: %s" % e)


if __name__ == "__main__":
    main()
