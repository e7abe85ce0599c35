"""Cluster metrics: summary figures, errors against measured results (MAPE of
each figure, Kolmogorov-Smirnov and Wasserstein-1 distances of the JCT
distributions), the per-job CSV and the plots."""
import csv
import io
import math

import numpy as np

from ..errors import read_text
from .trace import TraceError

FIGURES = ("avg_training", "avg_jct", "median_jct", "p99_jct", "makespan")


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default, as MoSim's
    reports)."""
    return float(np.percentile(np.asarray(values, dtype=float), p)) if len(values) else math.nan


def summary(jobs):
    """jobs: objects with arrival, wait, training, jct, end."""
    jct = [j.jct for j in jobs]
    return {
        "jobs": len(jobs),
        "avg_jct": float(np.mean(jct)),
        "median_jct": percentile(jct, 50),
        "p99_jct": percentile(jct, 99),
        "avg_training": float(np.mean([j.training for j in jobs])),
        "avg_wait": float(np.mean([j.wait for j in jobs])),
        "makespan": max(j.end for j in jobs) - min(j.arrival for j in jobs),
    }


def ks_distance(a, b):
    """sup_x |F_a(x) - F_b(x)| of the two empirical CDFs."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    xs = np.concatenate([a, b])
    fa = np.searchsorted(a, xs, side="right") / len(a)
    fb = np.searchsorted(b, xs, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def wasserstein(a, b):
    """Wasserstein-1 distance: the area between the two empirical CDFs."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    xs = np.sort(np.concatenate([a, b]))
    fa = np.searchsorted(a, xs[:-1], side="right") / len(a)
    fb = np.searchsorted(b, xs[:-1], side="right") / len(b)
    return float(np.sum(np.abs(fa - fb) * np.diff(xs)))


def compare(sim_jobs, measured_jobs):
    """Errors of a simulation against measured jobs: MAPE (%) of each figure,
    KS and Wasserstein (s) of the JCT distributions."""
    s, m = summary(sim_jobs), summary(measured_jobs)
    out = {"mape_" + k: abs(s[k] - m[k]) / abs(m[k]) * 100.0 for k in FIGURES}
    out["ks_jct"] = ks_distance([j.jct for j in sim_jobs], [j.jct for j in measured_jobs])
    out["wasserstein_jct_s"] = wasserstein([j.jct for j in sim_jobs], [j.jct for j in measured_jobs])
    out["measured"] = m
    return out


class MeasuredJob:
    def __init__(self, job_id, model, arrival, wait, training, jct):
        self.job_id, self.model, self.arrival = job_id, model, arrival
        self.wait, self.training, self.jct = wait, training, jct
        self.start = arrival + wait
        self.end = arrival + jct


POLICY_LABELS = {"bin-packing": ("k8s-bin-packing", "bin-packing"),
                 "load-balancing": ("k8s-load-balancing", "load-balancing")}


def read_measured(path, policy=None):
    """Measured per-job results: MoSim's testbed CSVs (16 GPUs: placement,
    job_ids, models, arrival_times, wait_times, training_time, jcts, rows of
    ``policy`` only; 32 GPUs: job_id, arrival_times, wait_times, training_time,
    jcts) or a jobs.csv written by ``python -m wormhole cluster``."""
    text = read_text(path, TraceError, "measured results")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise TraceError("not a CSV file: %s" % e, path)
    cols = set(rows[0]) if rows else set()
    out = []
    idcol = "job_ids" if "job_ids" in cols else "job_id"
    if {idcol, "arrival_times", "wait_times", "training_time", "jcts"} <= cols:
        labels = POLICY_LABELS.get(policy, (policy,)) if policy else None
        for i, r in enumerate(rows):
            if labels and "placement" in r and r["placement"] not in labels:
                continue
            jid = (r.get(idcol) or "").strip()
            if not jid:
                raise TraceError("missing job id", path, i + 2)
            jid = jid[2:] if jid.startswith("id") and jid[2:].isdigit() else jid
            out.append(MeasuredJob(jid, r.get("models", ""), *_floats(
                r, ("arrival_times", "wait_times", "training_time", "jcts"), path, i + 2)))
    elif {"job_id", "arrival", "wait", "training", "jct"} <= cols:
        for i, r in enumerate(rows):
            if not (r.get("job_id") or "").strip():
                raise TraceError("missing job id", path, i + 2)
            out.append(MeasuredJob(r["job_id"].strip(), r.get("model", ""), *_floats(
                r, ("arrival", "wait", "training", "jct"), path, i + 2)))
    else:
        raise TraceError("unknown measured-results format (need job_ids, arrival_times, wait_times, "
                         "training_time, jcts or our jobs.csv columns)", path, 1)
    if not out:
        raise TraceError("no measured jobs%s" % (" for policy %s" % policy if policy else ""), path)
    return out


def _floats(r, cols, path, line):
    vals = []
    for c in cols:
        try:
            v = float(r[c])
        except (TypeError, ValueError):
            raise TraceError("%s is not a number" % c, path, line, r.get(c))
        if not math.isfinite(v):
            raise TraceError("%s is not finite" % c, path, line, r.get(c))
        vals.append(v)
    return vals


JOB_COLUMNS = ("job_id", "model", "gpus", "placement", "arrival", "start", "end", "wait", "training", "jct",
               "standalone", "mean_factor", "model_source")


def jobs_csv(jobs):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(JOB_COLUMNS)
    for j in jobs:
        w.writerow([j.job_id, j.model, j.gpus, j.placement] +
                   ["%.6f" % x for x in (j.arrival, j.start, j.end, j.wait, j.training, j.jct, j.standalone)] +
                   ["%.4f" % j.mean_factor, getattr(j, "model_source", "trace")])
    return buf.getvalue()


def plot(jobs, measured, path, title):
    """JCT CDF (against measured when given) and the per-job timeline, saved
    to ``path``, or returned as PNG bytes when ``path`` is None."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, js in (("simulated", jobs), ("measured", measured)):
        if js:
            x = np.sort([j.jct for j in js])
            a.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label)
    a.set_xlabel("JCT (s)")
    a.set_ylabel("CDF")
    a.legend()
    a.set_title(title)
    for i, j in enumerate(jobs):
        b.plot([j.arrival, j.start], [i, i], color="0.7", lw=2)
        b.plot([j.start, j.end], [i, i], color="C0", lw=3)
    b.set_xlabel("time (s)")
    b.set_ylabel("job (grey: waiting, blue: training)")
    fig.tight_layout()
    if path is None:
        from ..outputs import figure_bytes
        png = figure_bytes(fig)
        plt.close(fig)
        return png
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_cdfs(runs, measured, title):
    """One figure: the JCT CDF of every (label, jobs) run overlaid on the
    measured one (when given); PNG bytes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, a = plt.subplots(figsize=(7, 4.5))
    if measured:
        x = np.sort([j.jct for j in measured])
        a.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label="measured", color="k", lw=2.5)
    for i, (label, js) in enumerate(runs):
        if js:
            x = np.sort([j.jct for j in js])
            a.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label, color="C%d" % i, lw=1.5)
    a.set_xscale("log")
    a.set_xlabel("JCT (s, log scale)")
    a.set_ylabel("CDF (fraction of jobs)")
    a.set_title(title)
    a.legend()
    fig.tight_layout()
    from ..outputs import figure_bytes
    png = figure_bytes(fig)
    plt.close(fig)
    return png
