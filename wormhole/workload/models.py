"""Model, parallelism and GPU specifications; presets from ``workloads/*.yaml``."""
import os
from dataclasses import dataclass, field, replace

import yaml

from ..errors import WormholeError

PRESET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "presets")


class WorkloadError(WormholeError):
    """Bad workload: unknown model, impossible parallelism, malformed workload file."""


@dataclass(frozen=True)
class GpuSpec:
    name: str
    peak_flops: float        # dense bf16 FLOP/s
    efficiency: float        # fraction of peak that training kernels reach
    nvlink_gbps: float       # NVLink bandwidth per direction per GPU, Gb/s
    nvlink_latency_us: float

    def compute_ps(self, flops):
        return int(round(flops / (self.peak_flops * self.efficiency) * 1e12))


GPUS = {
    "a100": GpuSpec("a100", 312e12, 0.45, 2400.0, 1.0),
    "h100": GpuSpec("h100", 989e12, 0.45, 3600.0, 1.0),
}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    seq: int
    vocab: int = 50257
    experts: int = 0          # 0 = dense
    topk: int = 1

    @property
    def moe(self):
        return self.experts > 0

    def attn_params(self):
        return 4 * self.hidden * self.hidden

    def mlp_params(self):
        """Parameters of one MLP (one expert for MoE)."""
        return 2 * self.hidden * self.ffn

    def layer_params(self):
        return self.attn_params() + self.mlp_params() * max(1, self.experts)

    def params(self):
        return self.layers * self.layer_params() + self.vocab * self.hidden

    def layer_fwd_flops(self, mbs):
        """Forward FLOPs of one layer for one micro-batch (whole layer, before TP)."""
        b, s, h = mbs, self.seq, self.hidden
        attn = 8 * b * s * h * h + 4 * b * s * s * h
        mlp = 4 * b * s * h * self.ffn * (self.topk if self.moe else 1)
        return attn, mlp

    def logits_fwd_flops(self, mbs):
        return 2 * mbs * self.seq * self.hidden * self.vocab


@dataclass(frozen=True)
class Parallel:
    tp: int = 8
    pp: int = 1
    dp: int = 1
    ep: int = 1
    micro_batches: int = 1
    micro_batch_size: int = 1

    @property
    def gpus(self):
        return self.tp * self.pp * self.dp


@dataclass
class Preset:
    model: ModelSpec
    parallel: Parallel
    gpu: GpuSpec
    bucket_mb: float = 25.0
    grad_bytes: int = 2
    act_bytes: int = 2
    extra: dict = field(default_factory=dict)


def preset_names():
    return sorted(f[:-5] for f in os.listdir(PRESET_DIR) if f.endswith(".yaml"))


def _need(d, key, path, typ=int):
    if key not in d:
        raise WorkloadError("missing key %r" % key, path)
    try:
        v = typ(d[key])
    except (TypeError, ValueError):
        raise WorkloadError("bad value for %r" % key, path, value=d[key])
    if typ in (int, float) and v <= 0:
        raise WorkloadError("%r must be positive" % key, path, value=d[key])
    return v


def load_preset(name_or_path, gpus=None, tp=None, pp=None, dp=None, ep=None, micro_batches=None, gpu=None):
    """A training preset (YAML) with optional overrides; DP is derived from the
    GPU count when not given.  Raises WorkloadError on impossible plans."""
    path = name_or_path if os.path.exists(str(name_or_path)) else os.path.join(PRESET_DIR, "%s.yaml" % name_or_path)
    if not os.path.exists(path):
        raise WorkloadError("unknown workload preset %r (presets: %s)" % (name_or_path, ", ".join(preset_names())),
                            value=name_or_path)
    try:
        with open(path) as fh:
            doc = yaml.safe_load(fh)
    except yaml.YAMLError as e:
        line = getattr(getattr(e, "problem_mark", None), "line", None)
        raise WorkloadError("not valid YAML: %s" % getattr(e, "problem", e), path, None if line is None else line + 1)
    if not isinstance(doc, dict) or "model" not in doc:
        raise WorkloadError("a preset needs a 'model' mapping", path)
    m = doc["model"]
    if not isinstance(m, dict):
        raise WorkloadError("'model' must be a mapping", path)
    model = ModelSpec(name=str(m.get("name", os.path.basename(path)[:-5])), layers=_need(m, "layers", path),
                      hidden=_need(m, "hidden", path), ffn=_need(m, "ffn", path), heads=_need(m, "heads", path),
                      seq=_need(m, "seq", path), vocab=int(m.get("vocab", 50257)),
                      experts=int(m.get("experts", 0)), topk=int(m.get("topk", 1)))
    p = doc.get("parallel", {}) or {}
    par = Parallel(tp=int(tp or p.get("tp", 8)), pp=int(pp or p.get("pp", 1)), dp=int(dp or p.get("dp", 1)),
                   ep=int(ep or p.get("ep", 1)), micro_batches=int(micro_batches or p.get("micro_batches", 1)),
                   micro_batch_size=int(p.get("micro_batch_size", 1)))
    if gpus is not None and dp is None:
        if gpus % (par.tp * par.pp):
            raise WorkloadError("%d GPUs are not a multiple of TP x PP = %d" % (gpus, par.tp * par.pp), value=gpus)
        par = replace(par, dp=gpus // (par.tp * par.pp))
    if gpus is not None and par.gpus != gpus:
        raise WorkloadError("TP x PP x DP = %d does not match %d GPUs" % (par.gpus, gpus), value=gpus)
    for k in ("tp", "pp", "dp", "ep", "micro_batches", "micro_batch_size"):
        if getattr(par, k) < 1:
            raise WorkloadError("%s must be at least 1" % k, path, value=getattr(par, k))
    if model.layers % par.pp:
        raise WorkloadError("%d layers do not split into %d pipeline stages" % (model.layers, par.pp), path)
    if par.dp % par.ep:
        raise WorkloadError("EP %d must divide DP %d" % (par.ep, par.dp), path)
    if model.moe and model.experts % par.ep:
        raise WorkloadError("EP %d must divide the %d experts" % (par.ep, model.experts), path)
    g = (gpu or doc.get("gpu", "a100")).lower()
    if g not in GPUS:
        raise WorkloadError("unknown GPU %r (a100, h100)" % g, path, value=g)
    tr = doc.get("training", {}) or {}
    return Preset(model=model, parallel=par, gpu=GPUS[g], bucket_mb=float(tr.get("bucket_mb", 25.0)),
                  grad_bytes=int(tr.get("grad_bytes", 2)), act_bytes=int(tr.get("act_bytes", 2)), extra=doc)
