"""Where a cluster run's error comes from, job by job.

Each job's slowdown is its training time over its standalone time (the trace's
duration, the jobs.csv ``standalone`` column), ours and measured.  A job falls
in one of four classes:

- ``A``: the hardware ran it uncontended (measured slowdown <= ``alone``) and
  we slowed it (ours > ``slowed``): our placement or co-runners differ;
- ``B``: we ran it uncontended (ours <= ``alone_ours``) and the hardware slowed
  it (measured > ``hw_slowed``): something we do not model for it (placement,
  or a cost of sharing a server the fabric cannot cause);
- ``C``: both slowed it (both > ``slowed``): the contention model's magnitude;
- ``D``: the rest (both about uncontended).

Per class: jobs, the sum of |ours - measured| training time and its share of
all jobs', the signed sum (bias) and the mean |error| / measured (MAPE over the
class).  The thresholds are fixed here, not per run: 1.0 (the hardware ran
at most its standalone time), 1.05, 1.01 and 1.3."""
import csv
import io

from ..errors import read_text
from .trace import TraceError

ALONE, SLOWED, ALONE_OURS, HW_SLOWED = 1.0, 1.05, 1.01, 1.3
CLASSES = ("A", "B", "C", "D")
LABELS = {"A": "hardware uncontended, ours slowed", "B": "ours uncontended, hardware slowed",
          "C": "both slowed", "D": "both about uncontended"}


def read_ours(path):
    """{job id: (standalone s, training s, servers used, model)} from our jobs.csv."""
    text = read_text(path, TraceError, "jobs.csv")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    need = {"job_id", "standalone", "training", "placement"}
    if not rows or not need <= set(rows[0]):
        raise TraceError("not a jobs.csv of python -m wormhole cluster (need %s)" % ", ".join(sorted(need)), path, 1)
    out = {}
    for i, r in enumerate(rows):
        try:
            sa, tr = float(r["standalone"]), float(r["training"])
        except (TypeError, ValueError):
            raise TraceError("standalone or training is not a number", path, i + 2, (r["standalone"], r["training"]))
        if not sa > 0:
            raise TraceError("standalone must be positive", path, i + 2, r["standalone"])
        out[r["job_id"].strip()] = (sa, tr, len((r["placement"] or "").split()), (r.get("model") or "").strip())
    return out


def classify(ours_slowdown, measured_slowdown):
    """The class (A-D) of one job from its two slowdowns."""
    if measured_slowdown <= ALONE and ours_slowdown > SLOWED:
        return "A"
    if ours_slowdown <= ALONE_OURS and measured_slowdown > HW_SLOWED:
        return "B"
    if ours_slowdown > SLOWED and measured_slowdown > SLOWED:
        return "C"
    return "D"


def decompose(ours, measured):
    """``ours``: {id: (standalone, training, servers, model)}; ``measured``: MeasuredJob
    list.  Returns ({class: {jobs, abs_s, share, signed_s, mape}}, per-job rows
    (id, class, standalone, measured, ours)) over the jobs in both."""
    meas = {m.job_id: m.training for m in measured}
    missing = sorted(set(meas) ^ set(ours))
    if missing:
        raise TraceError("jobs in only one of the two files: %s" % ", ".join(missing[:5]))
    rows = []
    for j, (sa, tr, _, _) in ours.items():
        rows.append((j, classify(tr / sa, meas[j] / sa), sa, meas[j], tr))
    total = sum(abs(o - m) for _, _, _, m, o in rows) or 1.0
    out = {}
    for k in CLASSES:
        mine = [r for r in rows if r[1] == k]
        err = sum(abs(o - m) for _, _, _, m, o in mine)
        out[k] = {"jobs": len(mine), "abs_s": err, "share": err / total,
                  "signed_s": sum(o - m for _, _, _, m, o in mine),
                  "mape": (sum(abs(o - m) / m for _, _, _, m, o in mine) / len(mine) * 100) if mine else 0.0}
    return out, rows


def by_model(ours, rows, classes=("B", "C")):
    """{model: (jobs, mean measured / ours training time)} over the jobs of
    ``classes`` (default: those the hardware slowed and we either slowed or
    not): above 1, the hardware slowed the model's jobs more than we do."""
    acc = {}
    for j, k, _, m, o in rows:
        if k in classes and o > 0:
            acc.setdefault(ours[j][3], []).append(m / o)
    return {mod: (len(v), sum(v) / len(v)) for mod, v in sorted(acc.items())}
