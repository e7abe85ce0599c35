"""NCCL's choice of collective algorithm: its cost model (``ncclTopoTuneModel``), with its constants, applied
to the simulated hardware.

NCCL predicts the time of a collective with each algorithm and protocol as ``latency + bytes / bandwidth``
and runs the fastest.  The collectives here move whole chunks (NCCL's Simple protocol), so only Simple is
modelled.  Constants (NCCL 2.2x, ``src/graph/tuning.cc``; microseconds):

- base latency: ring 8.4, tree 8.4, NVLS 0, NVLS-tree 0;
- per-step hardware latency on NVLink: ring 3.4, tree 4.0, NVLS 25, NVLS-tree 25; on the network: ring 14,
  tree 14, NVLS 18, NVLS-tree 20.9; a network step costs at least 3 x 1 us of proxy overhead;
- ring all-reduce latency x 1.4 across servers (the ring's plateau, compute capability 8.0 and up);
- tree bandwidth x 0.92 and x a correction factor per size (powers of two from 64 bytes);
- NVLS runs the switch at 0.85 of NVLink bandwidth (Hopper) and pipelines its reduce and its multicast
  (x 2 for an all-reduce); NVLS-tree's network part counts twice on two servers.

The latencies follow NCCL's formulas: ring ``(steps - network steps) x intra + network steps x inter``,
tree ``2 ((GPUs per server - 1) intra + log2(servers) inter)``, NVLS ``intra`` (one server; across
servers it needs CollNet, which the fabric has not), NVLS-tree ``intra + 2 log2(servers) inter``.

Bandwidths are the simulated hardware's as the collectives here use it, where NCCL reads its topology
graph: ``nvlink`` is a GPU's NVLink bandwidth per direction, ``net`` its NIC's.  NCCL's bus bandwidth is
its channel count times a channel's bandwidth; the ring runs C channels (``channels``: C = the group's GPUs
per server, or ``Hardware.ring_channels`` forced, on groups with 2 or more on each of several servers, else
one), whose server crossings use min(C, GPUs per server) distinct NICs, so across servers it gets
min(NVLink, that many NICs); the tree crosses a server boundary through its chain heads' NICs as one
channel, so it gets min(NVLink, NIC); NVLS-tree runs a tree per local GPU on its own slice, through that
GPU's NIC, so its network part gets (GPUs per server) x NIC.  Bus bandwidth becomes algorithm bandwidth as NCCL converts it: x N / steps for ring, NVLS and
NVLS-tree all-reduces, x 1/2 for the tree.
"""
from dataclasses import dataclass

from ..errors import WormholeError
from .channels import channel_count

ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree")
CHOICES = ALGORITHMS + ("auto",)
KINDS = ("allreduce", "reducescatter", "allgather")

# NCCL's constants (Simple protocol), microseconds
BASE_US = {"ring": 8.4, "tree": 8.4, "nvls": 0.0, "nvls_tree": 0.0}
NVLINK_US = {"ring": 3.4, "tree": 4.0, "nvls": 25.0, "nvls_tree": 25.0}
NET_US = {"ring": 14.0, "tree": 14.0, "nvls": 18.0, "nvls_tree": 20.9}
NET_OVERHEAD_US = 3 * 1.0          # proxy overhead per network step (1 us on x86, x 3 for Simple)
RING_PLATEAU = 1.4
TREE_BW = 0.92
TREE_CORRECTION = (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9)
NVLS_EFFICIENCY = 0.85             # Hopper


class TunerError(WormholeError):
    """An algorithm the group or the GPU cannot run, or an unknown name."""


@dataclass(frozen=True)
class Hardware:
    nvlink_bps: float           # a GPU's NVLink bandwidth per direction
    net_bps: float              # a GPU's NIC rate
    nvls: bool = False          # NVSwitch reduction and multicast (Hopper and later)
    ring_channels: int = None   # NCCL channels of the ring (None: one per GPU of the group on a server)


@dataclass(frozen=True)
class Shape:
    """A collective's group: ``n`` ranks on ``nodes`` servers, ``ppn`` on each (0 when servers differ)."""
    n: int
    nodes: int
    ppn: int

    @classmethod
    def of(cls, gpus, gpus_per_server):
        per = {}
        for g in gpus:
            per[g // gpus_per_server] = per.get(g // gpus_per_server, 0) + 1
        counts = set(per.values())
        return cls(len(gpus), len(per), counts.pop() if len(counts) == 1 else 0)


def log2i(x):
    return max(0, int(x).bit_length() - 1)


def check_name(algo):
    if algo not in CHOICES:
        raise TunerError("unknown NCCL algorithm (%s)" % ", ".join(CHOICES), value=algo)
    return algo


def why_not(kind, algo, shape, hw):
    """None if ``algo`` can run ``kind`` on ``shape``, else the reason (NCCL's rules)."""
    if shape.n < 2:
        return "a group of one rank has nothing to exchange"
    if algo in ("tree", "nvls_tree") and kind != "allreduce":
        return "%s runs all-reduces only" % algo
    if algo in ("nvls", "nvls_tree") and not hw.nvls:
        return "NVLS needs NVSwitch reduction and multicast (Hopper GPUs: --gpu h100)"
    if algo == "nvls" and shape.nodes != 1:
        return "NVLS across servers needs CollNet (in-network reduction on the fabric), which the fabric has not"
    if algo == "nvls_tree":
        if shape.nodes < 2:
            return "NVLS-tree needs more than one server"
        if shape.ppn < 2:
            return "NVLS-tree needs the same number (2 or more) of the group's GPUs on every server"
    return None


def latency_us(kind, algo, shape):
    """NCCL's latency of ``algo`` (Simple protocol) for ``kind`` over ``shape``."""
    n, nodes = shape.n, shape.nodes
    ppn = n / nodes
    intra = NVLINK_US[algo]
    inter = NET_US["tree" if ppn == 1 else algo]
    if algo == "ring":
        steps = 2 * (n - 1) if kind == "allreduce" else n - 1
        net_steps = 0 if nodes == 1 else (2 * (nodes - 1) if kind == "allreduce" else nodes - 1)
        if nodes > 1:
            intra = max(intra, NET_OVERHEAD_US)
        lat = BASE_US[algo] + (steps - net_steps) * intra + net_steps * inter
        if nodes > 1 and kind == "allreduce":
            lat *= RING_PLATEAU
        return lat
    if algo == "tree":
        return BASE_US[algo] + 2 * ((n // nodes - 1) * intra + log2i(nodes) * inter)
    if algo == "nvls":
        return BASE_US[algo] + intra
    return BASE_US[algo] + intra + 2 * log2i(nodes) * inter


def bandwidth_gbs(kind, algo, shape, hw, nbytes=None):
    """Algorithm bandwidth (GB/s) of ``algo`` for ``kind``: the bus bandwidth of the simulated hardware,
    NCCL's refinements, converted as NCCL does; the tree's size correction when ``nbytes`` is given."""
    n, nodes = shape.n, shape.nodes
    nvl, net = hw.nvlink_bps / 8e9, hw.net_bps / 8e9
    steps = 2 * (n - 1) if kind == "allreduce" else n - 1
    path = nvl if nodes == 1 else min(nvl, net)
    if algo == "ring":
        if nodes > 1:
            rails = min(channel_count(nodes, shape.ppn, hw.ring_channels), max(1, shape.ppn))
            path = min(nvl, net * rails)
        return path * n / steps
    if algo == "tree":
        bw = path * TREE_BW * 0.5
        if nbytes is not None:
            k = log2i(int(nbytes) >> 6)
            if k < 23:                  # NCCL applies the first 23 entries
                bw *= TREE_CORRECTION[k]
        return bw
    intra = nvl * NVLS_EFFICIENCY
    if kind == "allreduce":
        intra *= 2
    else:
        intra *= (shape.ppn - 1) / shape.ppn
    if algo == "nvls":
        return intra * n / steps if kind == "allreduce" else intra
    inter = net * shape.ppn * (2 if nodes <= 2 else 1)
    return min(intra, inter) * n / steps


def estimate_ps(kind, algo, shape, hw, nbytes):
    """NCCL's predicted time (ps) of ``algo`` for ``kind`` of ``nbytes``, or None if it cannot run."""
    if why_not(kind, algo, shape, hw) is not None:
        return None
    us = latency_us(kind, algo, shape) + nbytes / (1000.0 * bandwidth_gbs(kind, algo, shape, hw, nbytes))
    return int(round(us * 1e6))


def choose(kind, shape, hw, nbytes, algo="auto"):
    """The algorithm for a ``kind`` collective of ``nbytes`` per rank over ``shape``: the fastest by NCCL's
    model, or ``algo`` forced where the group can run it, else the ring (as NCCL falls back)."""
    check_name(algo)
    if shape.n < 2:
        return "ring"
    if algo != "auto":
        return algo if why_not(kind, algo, shape, hw) is None else "ring"
    best, best_t = "ring", None
    for a in ALGORITHMS:
        t = estimate_ps(kind, a, shape, hw, nbytes)
        if t is not None and (best_t is None or t < best_t):
            best, best_t = a, t
    return best


def crossovers(kind, shape, hw, lo=64, hi=1 << 34, algos=ALGORITHMS, steps_per_octave=64):
    """The sizes where the fastest of ``algos`` changes, scanning ``lo``..``hi`` bytes geometrically
    (``steps_per_octave`` points per doubling) and bisecting each change to the byte: [(bytes, from, to)]."""
    def best(s):
        ts = [(estimate_ps(kind, a, shape, hw, s), a) for a in algos]
        ts = [x for x in ts if x[0] is not None]
        return min(ts)[1] if ts else None
    out = []
    s, prev_s = float(lo), None
    prev = None
    while s <= hi:
        cur = best(int(s))
        if prev is not None and cur != prev:
            a, b = int(prev_s), int(s)
            while b - a > 1:
                m = (a + b) // 2
                if best(m) == prev:
                    a = m
                else:
                    b = m
            out.append((b, prev, best(b)))
        prev, prev_s = cur, s
        s *= 2 ** (1.0 / steps_per_octave)
    return out
