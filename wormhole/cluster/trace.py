"""Job traces: MoSim, Tiresias and Pollux (Philly-derived) CSVs.

Every reader returns a list of :class:`Job` sorted by arrival time.  The format
is told by the header; a bad row raises :class:`TraceError` naming the file, the
line and the value, before any simulation starts.  A job's model is the trace's
(an empty cell in a model column is an error); only traces without a model
column (Philly, Tiresias without ``model_name``) leave it empty, and the
simulation then draws one from the pool and says so.
"""
import csv
import io
import math
from dataclasses import dataclass, field
from datetime import datetime

from ..errors import WormholeError, read_text


class TraceError(WormholeError):
    """Bad job trace: unknown format, missing column, bad number, ..."""


@dataclass
class Job:
    """One trace entry.  ``duration`` is the trace-reported standalone runtime in
    seconds (MoSim's d_J); ``iterations`` replaces it when the trace gives it."""
    job_id: str
    model: str            # pool model name ('' only when the trace has no model column: one is drawn)
    arrival: float        # s
    gpus: int             # total GPUs (workers x GPUs per worker)
    duration: float = None
    iterations: float = None
    line: int = 0         # line in the trace file (for error messages)
    source: str = None    # the trace file
    extra: dict = field(default_factory=dict)


def _num(text, what, path, line, kind=float, minimum=None, positive=False):
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise TraceError("%s is not a number" % what, path, line, text)
    if not math.isfinite(x):
        raise TraceError("%s is not finite" % what, path, line, text)
    if kind is int:
        if x != int(x):
            raise TraceError("%s is not a whole number" % what, path, line, text)
        x = int(x)
    if positive and x <= 0:
        raise TraceError("%s must be positive" % what, path, line, text)
    if minimum is not None and x < minimum:
        raise TraceError("%s must be at least %s" % (what, minimum), path, line, text)
    return x


def _need(row, col, path, line):
    v = row.get(col)
    if v is None or str(v).strip() == "":
        raise TraceError("missing value in column %r" % col, path, line)
    return str(v).strip()


def _mosim(rows, path):
    jobs = []
    for line, row in rows:
        gpw = _num(row.get("gpu_per_worker") or "1", "gpu_per_worker", path, line, int, positive=True)
        workers = _num(_need(row, "gpu_workers", path, line), "gpu_workers", path, line, int, positive=True)
        dur = row.get("duration")
        it = row.get("num_iteration")
        duration = _num(dur, "duration", path, line, positive=True) if dur not in (None, "") else None
        iters = _num(it, "num_iteration", path, line, positive=True) if it not in (None, "") else None
        if duration is None and iters is None:
            raise TraceError("a job needs a duration or a num_iteration", path, line)
        extra = {}
        if row.get("tensorsizes") not in (None, ""):
            extra["grad_mb"] = _num(row["tensorsizes"], "tensorsizes", path, line, positive=True)
        jobs.append(Job(_need(row, "job_id", path, line), _need(row, "model", path, line),
                        _num(_need(row, "arrival_time", path, line), "arrival_time", path, line, minimum=0.0),
                        workers * gpw, duration, iters, line, extra=extra))
    return jobs


def _tiresias(rows, path):
    jobs = []
    has_model = bool(rows) and "model_name" in rows[0][1]
    for line, row in rows:
        model = _need(row, "model_name", path, line) if has_model else ""
        jobs.append(Job(_need(row, "job_id", path, line), model,
                        _num(_need(row, "submit_time", path, line), "submit_time", path, line, minimum=0.0),
                        _num(_need(row, "num_gpu", path, line), "num_gpu", path, line, int, positive=True),
                        _num(_need(row, "duration", path, line), "duration", path, line, positive=True),
                        None, line))
    return jobs


def _pollux_workload(rows, path):
    raise TraceError("a Pollux workload file gives no job durations (Pollux derives them from its goodput "
                     "model); replay Pollux's philly.csv, or a MoSim or Tiresias trace", path, 1)


def _philly(rows, path):
    jobs, t0 = [], None
    for line, row in rows:
        ts = _need(row, "timestamp", path, line)
        try:
            t = datetime.strptime(ts, "%Y-%m-%d %H:%M:%S").timestamp()
        except ValueError:
            raise TraceError("timestamp is not YYYY-MM-DD HH:MM:SS", path, line, ts)
        jobs.append(Job("%d" % (line - 2), "", t,
                        _num(_need(row, "num_gpus", path, line), "num_gpus", path, line, int, positive=True),
                        _num(_need(row, "duration", path, line), "duration", path, line, positive=True),
                        None, line))
        t0 = t if t0 is None else min(t0, t)
    for j in jobs:
        j.arrival -= t0
    return jobs


# header columns that tell a format -> reader
FORMATS = (
    ("mosim", {"job_id", "model", "arrival_time", "gpu_workers"}, _mosim),
    ("tiresias", {"job_id", "num_gpu", "submit_time", "duration"}, _tiresias),
    ("pollux", {"name", "time", "application", "num_replicas"}, _pollux_workload),      # recognised, refused
    ("philly", {"timestamp", "duration", "num_gpus"}, _philly),
)


def _records(reader, path, limit):
    rows = []
    reader.fieldnames                   # reads the header (may raise csv.Error)
    for i, row in enumerate(reader):
        if limit is not None and len(rows) >= limit:
            break
        line = i + 2
        if None in row:
            raise TraceError("more fields than the header has", path, line, row[None])
        rows.append((line, {(k or "").strip(): v for k, v in row.items()}))
    return rows


def read_trace(path, limit=None):
    """Read a job trace of any known format; jobs sorted by (arrival, file order)."""
    text = read_text(path, TraceError, "job trace")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        rows = _records(reader, path, limit)
    except csv.Error as e:
        raise TraceError("not a CSV file: %s" % e, path, reader.line_num)
    cols = {c.strip() for c in (reader.fieldnames or []) if c}
    for name, need, fn in FORMATS:
        if need <= cols:
            break
    else:
        raise TraceError("unknown trace format (header: %s); expected a MoSim, Tiresias, Pollux or Philly CSV"
                         % ",".join(sorted(cols)) if cols else "empty job trace", path, 1)
    if not rows:
        raise TraceError("trace has no jobs", path)
    jobs = fn(rows, path)
    seen = {}
    for j in jobs:
        j.source = str(path)
        if j.job_id in seen:
            raise TraceError("duplicate job id (first on line %d)" % seen[j.job_id], path, j.line, j.job_id)
        seen[j.job_id] = j.line
    jobs.sort(key=lambda j: j.arrival)
    return jobs
