"""Model, parallelism and GPU specifications; presets from ``workloads/*.yaml``."""
import os
from dataclasses import dataclass, field, replace

from ..errors import WormholeError, read_yaml

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
    nvls: bool = False       # NVSwitch reduction and multicast (NCCL's NVLS algorithms: Hopper and later)

    def compute_ps(self, flops):
        return int(round(flops / (self.peak_flops * self.efficiency) * 1e12))


GPUS = {
    "a100": GpuSpec("a100", 312e12, 0.45, 2400.0, 1.0),
    "h100": GpuSpec("h100", 989e12, 0.45, 3600.0, 1.0, nvls=True),
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
    vpp: int = 1              # virtual pipeline stages (model chunks) per stage: Megatron's interleaved 1F1B
    sp: bool = False          # sequence parallelism: TP all-reduces become reduce-scatter + all-gather

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
    zero: int = 0             # ZeRO stage 0-2: 1 and 2 reduce-scatter the DP gradients and all-gather the parameters
    recompute: bool = False   # full activation recomputation: each backward reruns the forward of its layers


def preset_names():
    """The training-workload presets: the shipped YAML files with a top-level ``model:`` section (the
    folder also holds model pools and cluster specs, which are not workloads)."""
    names = []
    for f in os.listdir(PRESET_DIR):
        if f.endswith(".yaml"):
            with open(os.path.join(PRESET_DIR, f)) as fh:
                if any(line.startswith("model:") for line in fh):
                    names.append(f[:-5])
    return sorted(names)


def _need(d, key, path, typ=int):
    if key not in d:
        raise WorkloadError("missing key %r" % key, path)
    try:
        if isinstance(d[key], (bool, list, dict)):
            raise TypeError
        v = typ(d[key])
    except (TypeError, ValueError, OverflowError):
        raise WorkloadError("bad value for %r" % key, path, value=d[key])
    if typ in (int, float) and v <= 0:
        raise WorkloadError("%r must be positive" % key, path, value=d[key])
    return v


def _section(doc, key, path):
    v = doc.get(key, {})
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise WorkloadError("'%s' must be a mapping" % key, path, value=v)
    return v


def _opt(d, key, default, path, typ=int):
    v = d.get(key, default)
    try:
        if isinstance(v, bool) or isinstance(v, (list, dict)):
            raise TypeError
        x = typ(v)
    except (TypeError, ValueError, OverflowError):
        raise WorkloadError("bad value for %r" % key, path, value=v)
    if typ is float and x != x:
        raise WorkloadError("bad value for %r" % key, path, value=v)
    return x


def _flag(d, key, default, path):
    v = d.get(key, default)
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("enable", "enabled", "true", "yes", "on", "disable", "disabled",
                                             "false", "no", "off"):
        return v.lower() in ("enable", "enabled", "true", "yes", "on")
    raise WorkloadError("%r must be true or false" % key, path, value=v)


def load_preset(name_or_path, gpus=None, tp=None, pp=None, dp=None, ep=None, micro_batches=None, gpu=None,
                vpp=None, sp=None, zero=None, recompute=None):
    """A training preset (YAML) with optional overrides; DP is derived from the
    GPU count when not given.  Raises WorkloadError on impossible plans."""
    path = name_or_path if os.path.exists(str(name_or_path)) else os.path.join(PRESET_DIR, "%s.yaml" % name_or_path)
    if not os.path.exists(path):
        raise WorkloadError("unknown workload preset %r (presets: %s)" % (name_or_path, ", ".join(preset_names())),
                            value=name_or_path)
    doc = read_yaml(path, WorkloadError, "workload preset")
    if not isinstance(doc, dict) or "model" not in doc:
        raise WorkloadError("a preset needs a 'model' mapping", path)
    m = doc["model"]
    if not isinstance(m, dict):
        raise WorkloadError("'model' must be a mapping", path)
    model = ModelSpec(name=str(m.get("name", os.path.basename(path)[:-5])), layers=_need(m, "layers", path),
                      hidden=_need(m, "hidden", path), ffn=_need(m, "ffn", path), heads=_need(m, "heads", path),
                      seq=_need(m, "seq", path), vocab=_opt(m, "vocab", 50257, path),
                      experts=_opt(m, "experts", 0, path), topk=_opt(m, "topk", 1, path))
    if model.vocab < 1 or model.experts < 0 or model.topk < 1:
        raise WorkloadError("vocab and topk must be positive, experts non-negative", path)
    p = _section(doc, "parallel", path)
    par = Parallel(tp=int(tp or _opt(p, "tp", 8, path)), pp=int(pp or _opt(p, "pp", 1, path)),
                   dp=int(dp or _opt(p, "dp", 1, path)), ep=int(ep or _opt(p, "ep", 1, path)),
                   micro_batches=int(micro_batches or _opt(p, "micro_batches", 1, path)),
                   micro_batch_size=_opt(p, "micro_batch_size", 1, path),
                   vpp=int(vpp or _opt(p, "vpp", 1, path)),
                   sp=bool(_flag(p, "sp", False, path) if sp is None else sp))
    if gpus is not None and dp is None:
        if gpus % (par.tp * par.pp):
            raise WorkloadError("%d GPUs are not a multiple of TP x PP = %d" % (gpus, par.tp * par.pp), value=gpus)
        par = replace(par, dp=gpus // (par.tp * par.pp))
    if gpus is not None and par.gpus != gpus:
        raise WorkloadError("TP x PP x DP = %d does not match %d GPUs" % (par.gpus, gpus), value=gpus)
    for k in ("tp", "pp", "dp", "ep", "micro_batches", "micro_batch_size", "vpp"):
        if getattr(par, k) < 1:
            raise WorkloadError("%s must be at least 1" % k, path, value=getattr(par, k))
    if model.layers % par.pp:
        raise WorkloadError("%d layers do not split into %d pipeline stages" % (model.layers, par.pp), path)
    check_vpp(model.layers, par, path)
    if par.dp % par.ep:
        raise WorkloadError("EP %d must divide DP %d" % (par.ep, par.dp), path)
    if model.moe and model.experts % par.ep:
        raise WorkloadError("EP %d must divide the %d experts" % (par.ep, model.experts), path)
    g = gpu or doc.get("gpu", "a100")
    if not isinstance(g, str) or g.lower() not in GPUS:
        raise WorkloadError("unknown GPU (a100, h100)", path, value=g)
    tr = _section(doc, "training", path)
    bucket = _opt(tr, "bucket_mb", 25.0, path, float)
    grad, act = _opt(tr, "grad_bytes", 2, path), _opt(tr, "act_bytes", 2, path)
    if bucket <= 0 or grad < 1 or act < 1:
        raise WorkloadError("bucket_mb, grad_bytes and act_bytes must be positive", path)
    z = int(zero) if zero is not None else _opt(tr, "zero", 0, path)
    if z not in (0, 1, 2):
        raise WorkloadError("ZeRO stage must be 0, 1 or 2 (stage 3's per-layer parameter gathers are not "
                            "modelled)", path, value=z)
    rc = bool(_flag(tr, "recompute", False, path) if recompute is None else recompute)
    return Preset(model=model, parallel=par, gpu=GPUS[g.lower()], bucket_mb=bucket, grad_bytes=grad,
                  act_bytes=act, extra=doc, zero=z, recompute=rc)


def check_vpp(layers, par, path=None):
    """Megatron's interleaved schedule: PP > 1, the layers split into PP x VPP chunks, the micro-batches
    into groups of PP."""
    if par.vpp == 1:
        return
    if par.pp < 2:
        raise WorkloadError("virtual pipeline stages (VPP %d) need PP > 1" % par.vpp, path, value=par.vpp)
    if layers % (par.pp * par.vpp):
        raise WorkloadError("%d layers do not split into PP x VPP = %d model chunks" % (layers, par.pp * par.vpp),
                            path, value=layers)
    if par.micro_batches % par.pp:
        raise WorkloadError("interleaved 1F1B needs the micro-batches (%d) to be a multiple of PP %d"
                            % (par.micro_batches, par.pp), path, value=par.micro_batches)
