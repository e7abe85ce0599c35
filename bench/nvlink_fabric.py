"""NVLink as part of the fabric, on against off: iteration time and cost in events of a training preset.

    python bench/nvlink_fabric.py [--model gpt13b] [--gpus 16 128] [--full 16] [--limit 900] [--out FILE]
    python bench/nvlink_fabric.py --table FILE

Per GPU count, three runs of ``python -m wormhole.bench MODEL --gpus N --json`` (each under the CPU lock and
``timeout LIMIT``, as bench/aicb_suite.py runs them): NVLink off at the reference's whole-ns tx times
(the default), off at picosecond tx times, and on (``--nvlink-fabric``, which needs picoseconds), so the
on/off difference is NVLink's alone.  ``--full`` names the GPU counts also run in full mode.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from aicb_suite import record, run_one  # noqa: E402

CONFIGS = (("off, ns tx times", ["--time-quantum-ps", "1000"]), ("off, ps tx times", ["--time-quantum-ps", "1"]),
           ("on", ["--nvlink-fabric"]))


def table(rows):
    out = ["| GPUs | mode | NVLink | iteration ms | TP on busiest GPU ms | exposed comm ms | events | skipped events "
           "| wall s | iteration vs off (ps) |", "|" + "---|" * 10]
    base = {}
    for r in rows:
        if r.get("finished") is not False and r["config"] == "off, ps tx times":
            base[(r["gpus"], r["mode"])] = r["iteration_time_ps"]
    for r in rows:
        if r.get("finished") is False:
            out.append("| %d | %s | %s | not finished in %d s (reached %s ms simulated) | | | | | %s | |" % (
                r["gpus"], r["mode"], r["config"], r["limit_s"], r["reached_ms"], r["wall_s"]))
            continue
        b = base.get((r["gpus"], r["mode"]))
        diff = "" if b is None else "%+.2f%%" % (100 * (r["iteration_time_ps"] - b) / b)
        out.append("| %d | %s | %s | %.3f | %.3f | %.3f | %d | %d | %.1f | %s |" % (
            r["gpus"], r["mode"], r["config"], r["iteration_time_ps"] / 1e9, r["tp_allreduce_time_ps"] / 1e9,
            r["exposed_comm_ps"] / 1e9, r["events"], r.get("events_skipped", 0), r["wall_seconds"], diff))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt13b")
    ap.add_argument("--gpus", type=int, nargs="+", default=[16, 128])
    ap.add_argument("--full", type=int, nargs="*", default=[16])
    ap.add_argument("--limit", type=int, default=900)
    ap.add_argument("--out", default="nvlink_fabric.jsonl")
    ap.add_argument("--extra", default="", help="more bench arguments, one string")
    ap.add_argument("--table", metavar="FILE")
    args = ap.parse_args(argv)
    if args.table:
        print(table([json.loads(l) for l in open(args.table) if l.strip()]))
        return 0
    rows = []
    for g in args.gpus:
        for mode in ["accelerated"] + (["full"] if g in args.full else []):
            for name, flags in CONFIGS:
                r = run_one(args.model, g, args.limit, mode, flags + args.extra.split())
                r["config"], r["gpus"], r["mode"] = name, g, mode
                record(rows, r, args.out, table)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
