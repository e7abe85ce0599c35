"""SimAI / AICB workload files, read as they are, and run with the semantics of
SimAI's ASTRA-sim (``iterate_hybrid_parallel_Transformer_fwd_in_bckwd``).

File: line 1 the parallelism policy and ``key: value`` pairs
(``model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 8 ...``),
line 2 the number of layers, then one line per layer:
``name dependency fwd_compute fwd_comm_type fwd_comm_size ig_compute
ig_comm_type ig_comm_size wg_compute wg_comm_type wg_comm_size wg_update``.
Compute times are in ns, sizes in bytes.  Forward and input-gradient
collectives run in the TP group (``_EP`` / ``_DP_EP`` suffixes: EP and DP x EP
groups), weight-gradient ones in the DP group.

Per iteration every rank runs the layers forward (compute, then its forward
collective, blocking; a layer waits for its previous weight-gradient
collective), then backward (input-gradient compute and collective, blocking;
weight-gradient compute, then its collective, non-blocking).
"""
from dataclasses import dataclass

from ..errors import read_text
from . import tuner
from .algorithms import IMPLEMENTATIONS
from .channels import check_channels
from .collectives import COLLECTIVES, DEFAULT_CHUNK, DEFAULT_INFLIGHT, Transport, ring_order
from .models import WorkloadError

POLICIES = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER", "DATA", "MICRO")
COMM_TYPES = {"NONE": None, "ALLREDUCE": "allreduce", "ALLGATHER": "allgather", "REDUCESCATTER": "reducescatter",
              "ALLTOALL": "alltoall", "BROADCAST": "broadcast"}


@dataclass(frozen=True)
class SimAILayer:
    name: str
    dependency: int
    fwd_compute_ns: int
    fwd_comm: str
    fwd_bytes: int
    ig_compute_ns: int
    ig_comm: str
    ig_bytes: int
    wg_compute_ns: int
    wg_comm: str
    wg_bytes: int
    wg_update_ns: int
    line: int


@dataclass
class SimAIWorkload:
    path: str
    policy: str
    header: dict
    layers: list

    @property
    def tp(self):
        return int(self.header.get("model_parallel_NPU_group", 1))

    @property
    def pp(self):
        return int(self.header.get("pp", 1))

    @property
    def ep(self):
        return int(self.header.get("ep", 1))


def _parse_comm(tok, path, no):
    base, _, group = tok.partition("_")
    if base not in COMM_TYPES:
        raise WorkloadError("unknown communication type", path, no, tok)
    if group not in ("", "EP", "DP_EP"):
        raise WorkloadError("unknown communication group suffix", path, no, tok)
    return tok


def read_simai(path):
    """Parse a SimAI/AICB workload file; every malformed line raises
    WorkloadError naming the file, line and value."""
    text = read_text(path, WorkloadError, "workload")
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise WorkloadError("empty workload file", path, 1)
    toks = lines[0].split()
    policy = toks[0]
    if policy not in POLICIES:
        raise WorkloadError("unknown parallelism policy", path, 1, policy)
    header = {}
    i = 1
    while i < len(toks):
        if toks[i].endswith(":") or toks[i] == "pp_comm":
            key = toks[i].rstrip(":")
            if i + 1 >= len(toks):
                raise WorkloadError("header key without value", path, 1, toks[i])
            try:
                header[key] = int(toks[i + 1])
            except ValueError:
                raise WorkloadError("header value is not an integer", path, 1, toks[i + 1])
            i += 2
        else:
            i += 1
    if len(lines) < 2:
        raise WorkloadError("missing layer count", path, 2)
    try:
        n = int(lines[1].split()[0])
        if n < 0:
            raise ValueError
    except (ValueError, IndexError):
        raise WorkloadError("second line must be the number of layers", path, 2, lines[1].strip())
    body = [(no, ln.split()) for no, ln in enumerate(lines[2:], 3) if ln.strip()]
    if len(body) < n:
        raise WorkloadError("file ends after %d of %d layers" % (len(body), n), path, len(lines) + 1)
    layers = []
    for no, p in body[:n]:
        if len(p) < 12:
            raise WorkloadError("a layer line needs 12 fields", path, no, " ".join(p))
        try:
            nums = [int(p[k]) for k in (1, 2, 4, 5, 7, 8, 10, 11)]
        except ValueError:
            raise WorkloadError("compute times and sizes must be integers", path, no, " ".join(p))
        if any(v < 0 for v in nums[1:]):
            raise WorkloadError("negative compute time or size", path, no, " ".join(p))
        layers.append(SimAILayer(p[0], nums[0], nums[1], _parse_comm(p[3], path, no), nums[2], nums[3],
                                 _parse_comm(p[6], path, no), nums[4], nums[5], _parse_comm(p[9], path, no),
                                 nums[6], nums[7], no))
    if len(body) > n:
        no, p = body[n]
        raise WorkloadError("more layers than the %d announced" % n, path, no, " ".join(p))
    return SimAIWorkload(str(path), policy, header, layers)


class SimAIIteration:
    """Run a SimAI workload on ``gpus`` GPUs (hosts 0..gpus-1) of ``net``."""

    def __init__(self, net, workload, gpus, gpus_per_server=8, nvlink_gbps=2400.0, nvlink_latency_us=1.0,
                 chunk_bytes=DEFAULT_CHUNK, max_inflight=DEFAULT_INFLIGHT, iterations=1, nccl_algo="ring",
                 nvls=False, nccl_channels=None):
        self.net = net
        self.nccl_algo = tuner.check_name(nccl_algo)    # all-reduces, reduce-scatters, all-gathers of the file
        self.nccl_channels = check_channels(nccl_channels)     # rings' channels (None: one per local rank)
        self.w = workload
        self.gpus = int(gpus)
        tp = max(1, workload.tp)
        if self.gpus % tp:
            raise WorkloadError("%d GPUs are not a multiple of the TP group %d" % (gpus, tp), workload.path)
        if workload.pp != 1:
            raise WorkloadError("pipeline-parallel SimAI files (pp > 1) are not supported yet", workload.path,
                                value=workload.pp)
        hosts = net.topology.hosts
        if self.gpus > len(hosts):
            raise WorkloadError("the workload needs %d GPUs, the fabric has %d hosts" % (gpus, len(hosts)))
        self.gpu_ids = hosts[:self.gpus]
        self.tp = tp
        self.dp = self.gpus // tp
        self.ep = max(1, workload.ep)
        self.gps = int(gpus_per_server)
        self.t = Transport(net, self.gps, nvlink_gbps, int(nvlink_latency_us * 1e6))
        self.hw = tuner.Hardware(self.t.nvlink_bps, net.topology.nic_rate(), bool(nvls), self.nccl_channels)
        self.chunk = int(chunk_bytes)
        self.inflight = int(max_inflight)
        self.iterations = int(iterations)
        self.results = []
        self._it = 0

    def _group(self, rank, comm, phase):
        """GPU ids of the group a rank's collective runs in."""
        d, t = divmod(rank, self.tp)
        suffix = comm.partition("_")[2]
        if suffix == "EP":
            g = d // self.ep
            return [self.gpu_ids[x * self.tp + t] for x in range(g * self.ep, (g + 1) * self.ep)]
        if suffix == "DP_EP":
            return [self.gpu_ids[x * self.tp + t] for x in range(self.dp)]
        if phase == "wg":
            return [self.gpu_ids[x * self.tp + t] for x in range(self.dp)]
        return [self.gpu_ids[d * self.tp + x] for x in range(self.tp)]

    def start(self, on_done=None):
        self.on_done = on_done
        self._begin()
        return self

    def _begin(self):
        self._t0 = self.net.now
        n = len(self.w.layers)
        self._wg_pending = {}       # layer -> collectives not done
        self._colls = {}
        self._left = self.gpus
        self._outstanding = 0
        self._state = [("F", 0) for _ in range(self.gpus)]
        for r in range(self.gpus):
            self.net.schedule(0, lambda r=r: self._step(r, "F", 0))
        self._n = n

    def _coll(self, key, comm, nbytes, rank, phase, cont):
        """Join (creating on first use) the collective ``key`` of the rank's group."""
        kind = COMM_TYPES[comm.partition("_")[0]]
        group = self._group(rank, comm, phase)
        gkey = (key, tuple(group))
        entry = self._colls.get(gkey)
        if entry is None:
            waiters = []

            def done(c, waiters=waiters):
                for w in waiters:
                    w()
                waiters.clear()
            chunk = self.chunk
            cls = COLLECTIVES[kind]
            if kind in tuner.KINDS:         # the file names the collective; NCCL picks its algorithm
                algo = tuner.choose(kind, tuner.Shape.of(group, self.gps), self.hw, nbytes, self.nccl_algo)
                cls = IMPLEMENTATIONS[(kind, algo)]
            ring = getattr(cls, "ring", False)
            order = ring_order(group, self.gps) if ring else group
            coll = cls(self.t, order, nbytes, on_done=done, chunk_bytes=chunk, max_inflight=self.inflight,
                       **({"channels": self.nccl_channels} if ring else {}))
            coll.order = order
            entry = self._colls[gkey] = (coll, waiters)
        coll, waiters = entry
        if cont is not None:
            waiters.append(cont)
        coll.ready(coll.order.index(self.gpu_ids[rank]))
        return coll

    def _step(self, r, phase, i):
        L = self.w.layers
        if phase == "F":
            if i == self._n:
                self._step(r, "IG", self._n - 1)
                return
            lay = L[i]

            def after_compute():
                size = lay.fwd_bytes
                if 0 < size < 4096:
                    size = 4096     # as SimAI rounds small forward collectives up
                if COMM_TYPES[lay.fwd_comm.partition("_")[0]] and size > 0:
                    self._coll(("F", i), lay.fwd_comm, size, r, "fwd", lambda: self._step(r, "F", i + 1))
                else:
                    self._step(r, "F", i + 1)
            self.net.schedule(lay.fwd_compute_ns * 1000, after_compute)
        elif phase == "IG":
            if i < 0:
                self._rank_done()
                return
            lay = L[i]

            def after_ig():
                if COMM_TYPES[lay.ig_comm.partition("_")[0]] and lay.ig_bytes > 0:
                    self._coll(("IG", i), lay.ig_comm, lay.ig_bytes, r, "ig", lambda: self._step(r, "WG", i))
                else:
                    self._step(r, "WG", i)
            self.net.schedule(lay.ig_compute_ns * 1000, after_ig)
        else:   # WG
            lay = L[i]

            def after_wg():
                if COMM_TYPES[lay.wg_comm.partition("_")[0]] and lay.wg_bytes > 0:
                    key = ("WG", i)
                    first = (key, tuple(self._group(r, lay.wg_comm, "wg"))) not in self._colls
                    if first:
                        self._outstanding += 1
                    self._coll(key, lay.wg_comm, lay.wg_bytes, r, "wg",
                               (lambda: self._wg_done()) if first else None)
                self._step(r, "IG", i - 1)
            self.net.schedule(lay.wg_compute_ns * 1000, after_wg)

    def _wg_done(self):
        self._outstanding -= 1
        self._maybe_end()

    def _rank_done(self):
        self._left -= 1
        self._maybe_end()

    def _maybe_end(self):
        if self._left == 0 and self._outstanding == 0:
            self.results.append((self._t0, self.net.now))
            self._it += 1
            if self._it < self.iterations:
                self._begin()
            elif self.on_done is not None:
                self.on_done(self)

    def summary(self):
        t0, t1 = self.results[-1] if self.results else (0, 0)
        return {"workload": self.w.path, "layers": len(self.w.layers), "gpus": self.gpus, "tp": self.tp,
                "dp": self.dp, "iterations": len(self.results), "iteration_time_ps": t1 - t0,
                "fabric_bytes": self.t.fabric_bytes, "nvlink_bytes": self.t.nvlink_bytes,
                "fabric_flows": self.t.fabric_flows}
