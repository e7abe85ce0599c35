"""AICB's model suite at 128 GPUs: one ``python -m wormhole.bench <preset> --gpus 128 --json`` per aicb-*
preset, each under the shared CPU lock and a wall-clock limit, then a table.

    python bench/aicb_suite.py [--gpus 128] [--limit 900] [--mode accelerated] [--out FILE] [PRESET ...]
    python bench/aicb_suite.py --table FILE          # the table of a results file

Each run is the project's own command under ``timeout LIMIT`` inside a pseudo-terminal (``script``), so that
its progress bar ("t=... ms simulated") is recorded: a run that does not finish is reported with the
simulated time it reached.  Results go to ``--out`` as one JSON object per line.  Columns: iteration time,
exposed fabric communication, GB the GPUs sent per link class (NVLink; the fabric through one switch,
"leaf", or more, "spine"), wall-clock, the share of packet events the accelerator skipped, and the events a
full run would process (processed + skipped, the accelerator's count of what it did not simulate).
"""
import argparse
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = "/tmp/wormhole-cpu.lock"


def presets():
    return sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "wormhole", "presets", "aicb-*.yaml")))


def run_one(name, gpus, limit, mode, extra):
    cmd = [sys.executable, "-m", "wormhole.bench", name, "--gpus", str(gpus), "--json", "--mode", mode] + extra
    with tempfile.NamedTemporaryFile("r", suffix=".log", delete=False) as fh:
        log = fh.name
    out = log[:-4] + ".json"
    # the pseudo-terminal has no size unless told: tqdm would draw a bar of width 0; the report goes to a
    # file (script can drop the end of a long output when the command exits)
    inner = "stty cols 200 rows 50; timeout %d %s > %s" % (limit, " ".join(shlex.quote(c) for c in cmd), out)
    t0 = time.time()
    proc = subprocess.run(["flock", LOCK, "script", "-qfec", inner, log], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    wall = time.time() - t0
    text = open(log, errors="replace").read()
    os.unlink(log)
    if os.path.exists(out):
        text = open(out, errors="replace").read() + "\n" + text
        os.unlink(out)
    rep = None
    for line in text.splitlines():
        line = line.strip().strip("\r")
        i = line.find('{"')
        if i >= 0:
            try:
                rep = json.loads(line[i:])
            except ValueError:
                pass
    if rep is not None:
        rep["preset"] = name
        return rep
    reached = re.findall(r"t=([0-9.]+) ms simulated", text)
    events = re.findall(r"([0-9.]+[kMG]?) events \[", text)
    return {"preset": name, "gpus": gpus, "mode": mode, "finished": False, "returncode": proc.returncode,
            "limit_s": limit, "wall_s": round(wall, 1), "reached_ms": float(reached[-1]) if reached else None,
            "events_text": events[-1] if events else None, "tail": text[-300:]}


def table(rows):
    head = ("| preset | TP/PP/DP/EP | iteration ms | exposed comm ms | NVLink GB | fabric leaf GB | fabric spine GB "
            "| wall s | skipped | full-run events (est.) |")
    out = [head, "|" + "---|" * 10]
    for r in rows:
        if r.get("finished") is False:
            out.append("| %s | | not finished in %d s: reached %s ms simulated | | | | | %s | | |" % (
                r["preset"], r["limit_s"], r["reached_ms"], r["wall_s"]))
            continue
        by = r.get("fabric_bytes_by_class", {})
        ev, sk = r["events"], r.get("events_skipped", 0)
        out.append("| %s | %s/%s/%s/%s | %.3f | %.3f | %.2f | %.2f | %.2f | %.1f | %.1f%% | %.3g |" % (
            r["preset"], r["tp"], r["pp"], r["dp"], r["ep"], r["iteration_time_ps"] / 1e9, r["exposed_comm_ps"] / 1e9,
            r["nvlink_bytes"] / 1e9, by.get("leaf", 0) / 1e9, by.get("spine", 0) / 1e9, r["wall_seconds"],
            100 * sk / max(1, ev + sk), ev + sk))
    return "\n".join(out)


def record(rows, r, out, table):
    """Keep a finished run's row: appended to rows and (one JSON line) to the file out, its table row printed."""
    rows.append(r)
    with open(out, "a") as fh:
        fh.write(json.dumps(r, sort_keys=True) + "\n")
    print(table([r]).splitlines()[-1], flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("presets", nargs="*")
    ap.add_argument("--gpus", type=int, default=128)
    ap.add_argument("--limit", type=int, default=900, help="wall-clock seconds per run (timeout)")
    ap.add_argument("--mode", default="accelerated", choices=("accelerated", "full"))
    ap.add_argument("--out", default="aicb_suite.jsonl")
    ap.add_argument("--table", metavar="FILE", help="print the table of a results file and exit")
    ap.add_argument("--extra", default="", help="more bench arguments, one string")
    args = ap.parse_args(argv)
    if args.table:
        print(table([json.loads(l) for l in open(args.table) if l.strip()]))
        return 0
    rows = []
    for name in args.presets or presets():
        record(rows, run_one(name, args.gpus, args.limit, args.mode, shlex.split(args.extra)), args.out, table)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
