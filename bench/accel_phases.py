#!/usr/bin/env python
"""Where an accelerated training run's processed events go: the run is advanced in
slices of simulated time (--slice-us, default 10) and each slice's processed events,
the partitions then being skipped (steady skips and mirrors; a mirror's planned end
is open) and the refusals counted in it (Network.stats skip_rejects) are recorded.
Consecutive slices with the same partitions and the same skipping set form a phase;
the phases holding most of the processed events are printed, with the refusals
counted in them.

    python bench/accel_phases.py [--slice-us 10] [--top 12] -- MODEL [python -m wormhole.bench arguments]
    e.g. python bench/accel_phases.py -- gpt13b --tp 8 --servers-per-segment 2 --oversubscription 2 --gpus 32 --layers 1

The workload runner (wormhole.runner.run_workload) advances the network in 100 us
slices through Network.run; this script wraps Network.run for its own process only,
to cut those slices finer and read the network between them.  Slicing does not
change the run: its event count is the unsliced run's.
"""
import argparse
import sys
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import wormhole as wh                                       # noqa: E402
from wormhole.runner import workload_parser, run_workload   # noqa: E402


def record(bench_argv, slice_ps):
    """Run the workload; returns (report, slices): per slice (end ps, processed events,
    partitions as tuples of flow ids, sizes of the partitions skipping, refusal deltas)."""
    slices = []
    inner = wh.Network.run
    last = {}

    def run(net, until=None, progress=False):
        if until is None:
            return inner(net, until, progress)
        t = net.now
        while t < until:
            t = min(until, t + slice_ps)
            e0 = net.stats["events"]
            inner(net, t, progress)
            st = net.stats
            rej = {k: v - last.get(k, 0) for k, v in st["skip_rejects"].items() if v - last.get(k, 0)}
            last.update(st["skip_rejects"])
            slices.append((net.now, st["events"] - e0, tuple(tuple(p) for p in net.partitions()),
                           tuple(sorted(len(f) for f, _, _ in net.skipping())), rej))
            if net.peek() is None:
                break
    wh.Network.run = run
    try:
        rep = run_workload(workload_parser().parse_args(list(bench_argv) + ["--no-progress"]))
    finally:
        wh.Network.run = inner
    return rep, slices


def phases(slices, slice_ps):
    """Consecutive slices with the same partitions and skipping set, merged."""
    out = []
    for t, ev, parts, skipping, rej in slices:
        if out and out[-1]["parts"] == parts and out[-1]["skipping"] == skipping:
            ph = out[-1]
            ph["t1"] = t
            ph["events"] += ev
            for k, v in rej.items():
                ph["rejects"][k] = ph["rejects"].get(k, 0) + v
        else:
            out.append({"t0": max(0, t - slice_ps), "t1": t, "events": ev, "parts": parts, "skipping": skipping,
                        "rejects": dict(rej)})
    return out


def _parts(parts):
    return " ".join("(%s)" % ",".join(map(str, p)) if len(p) <= 6 else "(%d flows)" % len(p) for p in parts)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--" in argv:
        i = argv.index("--")
        own, bench = argv[:i], argv[i + 1:]
    else:
        own, bench = [], argv
    ap = argparse.ArgumentParser(prog="bench/accel_phases.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--slice-us", type=float, default=10.0)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(own)
    if not bench:
        ap.error("give the workload after --, e.g. -- gpt13b --gpus 32")
    if args.slice_us <= 0:
        ap.error("--slice-us must be positive: %r" % args.slice_us)
    slice_ps = int(round(args.slice_us * 1e6))
    try:
        rep, slices = record(bench, slice_ps)
    except wh.WormholeError as e:
        sys.stderr.write("accel_phases.py: error: %s\n" % e)
        return 2
    total = sum(s[1] for s in slices)
    ph = phases(slices, slice_ps)
    print("workload   python -m wormhole.bench %s" % " ".join(bench))
    print("processed  %d events in %d slices of %g us, %d phases" % (total, len(slices), args.slice_us, len(ph)))
    print("%10s %10s %9s %7s  %-34s %s" % ("from us", "to us", "events", "share", "refusals", "partitions [skipping sizes]"))
    for p in sorted(ph, key=lambda p: -p["events"])[:args.top]:
        print("%10.1f %10.1f %9d %6.2f%%  %-34s %s [%s]" % (
            p["t0"] / 1e6, p["t1"] / 1e6, p["events"], 100.0 * p["events"] / max(1, total),
            " ".join("%s %d" % kv for kv in sorted(p["rejects"].items(), key=lambda kv: -kv[1])) or "-",
            _parts(p["parts"]), " ".join(map(str, p["skipping"]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
