"""The model pool: per-model, per-worker-count profiles of one training iteration.

A profile holds MoSim's per-job inputs (Eq. 1): compute time T_comp, networking
time T_net (both seconds, measured or simulated with the job alone, all workers
on one server), networking volume V_net (MB/s summed over the workers: MoSim's
"Sum of Max TX+RX") and the loading time before the first iteration.  A model
also carries ``grad_mb``, the gradient size each ring all-reduce moves, which
the fabric contention models turn into flows, and optionally ``input_mb``, the
input batch one worker copies host -> GPU per iteration (the host model's,
:mod:`wormhole.cluster.host`; 0 if absent).

Pools are YAML (``workloads/pool_v100.yaml`` ships the profiles of MoSim's
V100 testbed); ``from_mosim_csv`` builds one from MoSim's profile CSVs.
"""
import csv
import io
import math
import os
from dataclasses import dataclass

from ..errors import WormholeError, read_text, read_yaml

from .spec import PRESET_DIR


class PoolError(WormholeError):
    """Bad model pool: missing model or worker count, bad number, ..."""


@dataclass(frozen=True)
class Profile:
    compute_s: float      # T_comp: forward + backward of one iteration
    network_s: float      # T_net: gradient synchronisation of one iteration, job alone
    volume_mbps: float    # V_net: MB/s over all workers while synchronising (MoSim's demand input)
    loading_s: float = 0.0  # start-up before the first iteration

    @property
    def iteration_s(self):
        return self.compute_s + self.network_s


@dataclass
class ModelEntry:
    name: str
    grad_mb: float                  # gradient bytes per all-reduce, MB (1e6 bytes)
    profiles: dict                  # workers -> Profile
    input_mb: float = 0.0           # input batch one worker copies host -> GPU per iteration, MB (wormhole.cluster.host)


def _pos(v, what, where, allow_zero=True):
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise PoolError("%s is not a number" % what, where[0], where[1], v)
    if not math.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise PoolError("%s must be %s" % (what, "non-negative" if allow_zero else "positive"),
                        where[0], where[1], v)
    return x


class ModelPool:
    """Model name -> ModelEntry, with lookups that fail with a named error."""

    def __init__(self, models, name="pool", source=None, aliases=None):
        self.models = dict(models)
        self.aliases = dict(aliases or {})      # other name (e.g. workload_02) -> model
        self.name = name
        self.source = source

    def __contains__(self, model):
        return model in self.models or model in self.aliases

    def canonical(self, model):
        return self.aliases.get(model, model)

    def names(self):
        return sorted(self.models)

    def entry(self, model, where=(None, None)):
        try:
            return self.models[self.aliases.get(model, model)]
        except KeyError:
            raise PoolError("model %r is not in the pool %s (known: %s)"
                            % (model, self.name, ", ".join(self.names())), where[0], where[1], model)

    def profile(self, model, workers, where=(None, None)):
        e = self.entry(model, where)
        try:
            return e.profiles[workers]
        except KeyError:
            raise PoolError("model %r has no profile for %d workers in pool %s (profiled: %s)"
                            % (model, workers, self.name, ", ".join(map(str, sorted(e.profiles)))),
                            where[0], where[1], workers)

    # ------------------------------------------------------------------ YAML
    @classmethod
    def load(cls, path):
        """A pool YAML file, or the name of a shipped one (``v100``)."""
        if not os.path.exists(path) and os.path.exists(os.path.join(PRESET_DIR, "pool_%s.yaml" % path)):
            path = os.path.join(PRESET_DIR, "pool_%s.yaml" % path)
        doc = read_yaml(path, PoolError, "model pool")
        if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict) or not doc["models"]:
            raise PoolError("a pool needs a 'models' mapping", path)
        models = {}
        for name, m in doc["models"].items():
            where = (path, None)
            if not isinstance(m, dict) or not isinstance(m.get("workers"), dict) or not m["workers"]:
                raise PoolError("model %r needs a 'workers' mapping" % name, path, None, m)
            grad = _pos(m.get("grad_mb"), "grad_mb of %s" % name, where)
            inp = _pos(m.get("input_mb", 0.0), "input_mb of %s" % name, where)
            bad = sorted(map(str, set(m) - {"grad_mb", "workers", "input_mb"}))
            if bad:
                raise PoolError("unknown key(s) %s for model %s" % (", ".join(bad), name), path, None, bad)
            profs = {}
            for w, p in m["workers"].items():
                try:
                    wi = int(w)
                except (TypeError, ValueError, OverflowError):
                    raise PoolError("worker count of %s is not an integer" % name, path, None, w)
                if wi < 1 or not isinstance(p, dict):
                    raise PoolError("bad profile for %s x %s" % (name, w), path, None, p)
                unknown = sorted(map(str, set(p) - {"compute_s", "network_s", "volume_mbps", "loading_s"}))
                if unknown:
                    raise PoolError("unknown profile key(s) %s for %s x %d" % (unknown, name, wi), path, None, unknown)
                prof = Profile(_pos(p.get("compute_s"), "compute_s of %s x %d" % (name, wi), where),
                               _pos(p.get("network_s", 0.0), "network_s of %s x %d" % (name, wi), where),
                               _pos(p.get("volume_mbps", 0.0), "volume_mbps of %s x %d" % (name, wi), where),
                               _pos(p.get("loading_s", 0.0), "loading_s of %s x %d" % (name, wi), where))
                if prof.iteration_s <= 0:
                    raise PoolError("iteration time of %s x %d is zero" % (name, wi), path, None, p)
                profs[wi] = prof
            models[str(name)] = ModelEntry(str(name), grad, profs, inp)
        aliases = doc.get("aliases") or {}
        if not isinstance(aliases, dict) or any(str(v) not in models for v in aliases.values()):
            raise PoolError("'aliases' must map names to models of the pool", path, None, aliases)
        return cls(models, doc.get("name", os.path.basename(path)), path,
                   {str(k): str(v) for k, v in aliases.items()})

    def to_yaml(self):
        doc = {"name": self.name, "aliases": dict(sorted(self.aliases.items())), "models": {}}
        for name in self.names():
            e = self.models[name]
            doc["models"][name] = {"grad_mb": e.grad_mb, "workers": {
                w: {"compute_s": p.compute_s, "network_s": p.network_s, "volume_mbps": p.volume_mbps,
                    "loading_s": p.loading_s} for w, p in sorted(e.profiles.items())}}
            if e.input_mb:
                doc["models"][name]["input_mb"] = e.input_mb
        import yaml     # lazily: not needed to import the cluster layer
        return yaml.safe_dump(doc, sort_keys=False)

    # ------------------------------------------------------------ MoSim CSVs
    @classmethod
    def from_mosim_csv(cls, iteration_csv, network_csv, aliases_csv, grad_mb, name="pool"):
        """Build a pool from MoSim's profile CSVs: ``iteration_csv`` (model_name,
        iteration_computing_time, iteration_networking_time, gpu_workers,
        loading_time), ``network_csv`` (Model, Number of Workers, Sum of Max TX+RX
        (MB/s)), ``aliases_csv`` (model, workload_id) and ``grad_mb`` (model ->
        gradient MB).  Only aliased models are kept."""
        alias = {r["workload_id"]: r["model"] for _, r in _rows(aliases_csv, ("model", "workload_id"))}
        vol = {}
        for (path, line), r in _rows(network_csv, ("Model", "Number of Workers", "Sum of Max TX+RX (MB/s)")):
            m = alias.get(r["Model"].strip())
            if m:
                vol[(m, int(_pos(r["Number of Workers"], "Number of Workers", (path, line))))] = \
                    _pos(r["Sum of Max TX+RX (MB/s)"], "Sum of Max TX+RX", (path, line))
        models = {}
        cols = ("model_name", "iteration_computing_time", "iteration_networking_time", "gpu_workers")
        for (path, line), r in _rows(iteration_csv, cols):
            m = alias.get(r["model_name"].strip())
            if not m:
                continue
            w = int(_pos(r["gpu_workers"], "gpu_workers", (path, line)))
            if m not in grad_mb:
                raise PoolError("no gradient size for model %r" % m, path, line, m)
            e = models.setdefault(m, ModelEntry(m, float(grad_mb[m]), {}))
            net = _pos(r["iteration_networking_time"], "iteration_networking_time", (path, line))
            v = vol.get((m, w), 0.0)
            if w > 1 and (m, w) not in vol:
                raise PoolError("no network volume for %s x %d in %s" % (m, w, network_csv), path, line, m)
            e.profiles[w] = Profile(_pos(r["iteration_computing_time"], "iteration_computing_time", (path, line)),
                                    net if w > 1 else 0.0, v if w > 1 else 0.0,
                                    _pos(r.get("loading_time") or 0.0, "loading_time", (path, line)))
        if not models:
            raise PoolError("no aliased model found", iteration_csv)
        used = {k: v for k, v in alias.items() if v in models}
        return cls(models, name, aliases=used)


def _rows(path, required):
    text = read_text(path, PoolError, "profile CSV")
    lines = text.splitlines()
    skip = 0
    while skip < len(lines) and lines[skip].startswith("#"):
        skip += 1
    try:
        rows = list(csv.DictReader(io.StringIO("\n".join(lines[skip:]), newline="")))
    except csv.Error as e:
        raise PoolError("not a CSV file: %s" % e, path)
    missing = [c for c in required if not rows or c not in rows[0]]
    if missing:
        raise PoolError("missing column(s) %s" % ", ".join(missing), path, skip + 1)
    for i, r in enumerate(rows):
        yield (path, skip + i + 2), r
