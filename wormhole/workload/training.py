"""A training job on the simulated fabric: GPT / MoE iterations with TP, PP,
DP, EP, micro-batches and gradient buckets.

Placement (Megatron order): global rank = (pp * DP + dp) * TP + tp, and rank r
is GPU (host node) r, so TP groups fill a server and DP / PP / EP peers sit on
other servers at the same local GPU index (the same rail).

Every (stage, replica) runs the 1F1B schedule of its micro-batches.  A forward
needs the activation of the previous stage, a backward the gradient of the
next one; activations and gradients are sent per TP rank (1/TP each).  TP
all-reduces stay on NVLink, a fixed-bandwidth channel: as in Megatron, each
transformer layer all-reduces its activation (micro-batch x seq x hidden x
act_bytes) twice in the forward pass (after attention, after the MLP) and twice
in the backward pass (the input gradients of both); each takes the alpha-beta
time of a ring over NVLink, 2 (TP - 1) steps of 1/TP of the buffer, on the
critical path of its (stage, replica), and moves 2 (TP - 1) / TP of the buffer
per GPU, counted in ``nvlink_bytes`` (with sequence parallelism they would be a
reduce-scatter and an all-gather: the same bytes and time in this model).  MoE
layers add two EP all-to-alls per pass.  During the last micro-batch's backward each
gradient bucket, once complete, starts a ring all-reduce over its DP group
(non-blocking); the iteration ends when every stage finished and every
all-reduce completed.  Iterations run back to back.

Interleaved 1F1B (``parallel.vpp`` > 1, Megatron's schedule): each stage holds
VPP model chunks of L / (PP x VPP) layers, chunk c of stage p being the
(c PP + p)-th slice of the model; a forward of chunk c on the last stage sends
its activation to chunk c + 1 on the first stage (and a backward of chunk c on
the first stage its gradient to chunk c - 1 on the last one), so PP traffic
grows VPP-fold while the bubble shrinks to (PP - 1) / (VPP x M) of the ideal
time.  The order of forwards and backwards on each stage is Megatron's
(``interleaved_1f1b``).  Each chunk's buckets start with its last backward.

Sequence parallelism (``parallel.sp``) makes each TP all-reduce a
reduce-scatter and an all-gather of the same bytes (same NVLink time and
bytes, counted apart).  ZeRO 1 / 2 (``training.zero``) makes each DP bucket a
reduce-scatter over the DP group; once a stage's reduce-scatters of a TP rank
are done (the optimizer step on its shard) the same buckets are all-gathered
(the updated parameters).  Recomputation (``training.recompute``) reruns the
forward of every layer (compute, TP all-reduces and EP all-to-alls) before its
backward.

NCCL algorithms (``nccl_algo``): every TP and DP all-reduce (and reduce-scatter /
all-gather) runs the algorithm NCCL's tuner picks for its size and group
(``tuner.choose``: ring, tree, NVLS inside a server, NVLS-tree across servers,
NVLS on Hopper GPUs only), or the one forced, where the group can run it (else
the ring, as NCCL falls back); the default is the ring everywhere.  A ring over
a group with k >= 2 GPUs on each of several servers (a DP group of a TP < 8 job)
runs NCCL's channels, k rings at once on different rails (``nccl_channels``
forces their count, 1 the single ring; ``channels``).  NVLink as
part of the fabric (a topology with NVSwitches, ``wormhole.nvswitch``): each TP
collective is then a collective of packets over the TP group's NVLink ports,
its measured time on the critical path of its (stage, replica), instead of the
alpha-beta time of ``algorithms.channel_time_ps``.  Each iteration records its
critical path (``critical``): the chain of compute blocks, TP collectives,
transfers and collectives that bounded it.
"""
from dataclasses import dataclass

from . import tuner
from .algorithms import channel_time_ps, implementation, sent_bytes
from .channels import check_channels, ring_channels
from .collectives import DEFAULT_CHUNK, DEFAULT_INFLIGHT, AllToAll, SendRecv, Transport, ring_order
from .critical import CriticalPath
from .models import WorkloadError


@dataclass
class IterationResult:
    index: int
    start: int          # ps
    end: int            # ps
    compute: int        # ps the busiest (stage, replica) was busy: compute and its TP all-reduces
    tp: int = 0         # ps of those TP all-reduces (NVLink) in ``compute``
    critical_path: list = None      # the blocks that bounded the iteration, first to last (critical.Block)

    @property
    def time(self):
        return self.end - self.start

    @property
    def exposed_comm(self):
        """Fabric communication not hidden behind the busiest chain's work."""
        return max(0, self.time - self.compute)


def interleaved_1f1b(pp, vpp, micro_batches, stage):
    """Megatron's interleaved 1F1B order on ``stage``: a list of (kind "F"|"B", micro-batch, model chunk)
    (``forward_backward_pipelining_with_interleaving``: warm-up forwards, then one forward and one backward,
    then the remaining backwards; virtual micro-batch k runs chunk (k mod PP VPP) // PP, reversed for
    backwards, on micro-batch PP (k // (PP VPP)) + k mod PP)."""
    P, v, M = pp, vpp, micro_batches
    total = M * v
    if M == P:
        warm = total
    else:
        warm = min((P - stage - 1) * 2 + (v - 1) * P, total)

    def virt(k, forward):
        c = (k % (P * v)) // P
        if not forward:
            c = v - 1 - c
        return (k // (P * v)) * P + k % P, c
    ops = [("F",) + virt(k, True) for k in range(warm)]
    for k in range(total - warm):
        ops.append(("F",) + virt(k + warm, True))
        ops.append(("B",) + virt(k, False))
    for k in range(total - warm, total):
        ops.append(("B",) + virt(k, False))
    return ops


def pipeline_makespan(plans, pp, vpp, fwd, bwd, comm=0):
    """Time to run per-stage ``plans`` ([(kind, mb, chunk)]) when a forward of a chunk takes ``fwd``, a
    backward ``bwd`` and a stage-to-stage transfer ``comm``: (makespan, {stage: [(op, start, end)]})."""
    done = {}
    free = [0] * pp
    pos = [0] * pp
    out = {p: [] for p in range(pp)}
    left = sum(len(x) for x in plans.values())
    while left:
        progress = False
        for p in range(pp):
            if pos[p] == len(plans[p]):
                continue
            kind, mb, c = plans[p][pos[p]]
            if kind == "F":
                dep = None if (p == 0 and c == 0) else ((p - 1, "F", mb, c) if p > 0 else (pp - 1, "F", mb, c - 1))
            else:
                dep = ((p, "F", mb, c) if (p == pp - 1 and c == vpp - 1) else
                       (p + 1, "B", mb, c) if p < pp - 1 else (0, "B", mb, c + 1))
            if dep is not None and dep not in done:
                continue
            ready = 0 if dep is None else done[dep] + (comm if dep[0] != p else 0)
            t0 = max(free[p], ready)
            t1 = t0 + (fwd if kind == "F" else bwd)
            done[(p, kind, mb, c)] = free[p] = t1
            out[p].append(((kind, mb, c), t0, t1))
            pos[p] += 1
            left -= 1
            progress = True
        if not progress:
            raise WorkloadError("the pipeline schedule deadlocks")
    return max(free), out


class _Segment:
    __slots__ = ("kind", "arg", "what", "grp")

    def __init__(self, kind, arg, what="", grp=-1):
        self.kind = kind        # "compute" (ps) | "tp" (channel ps of one TP collective) | "a2a" (layer key) | "bucket"
        self.arg = arg
        self.what = what        # the block's name on the critical path
        self.grp = grp          # compute and TP segments of one group run as one delay on the NVLink channel


class TrainingJob:
    """Build with a ``Network`` whose hosts 0..N-1 are the GPUs, a preset from
    ``load_preset``, then ``start(on_done)`` and ``net.run()``."""

    def __init__(self, net, preset, gpus_per_server=8, chunk_bytes=DEFAULT_CHUNK, max_inflight=DEFAULT_INFLIGHT,
                 iterations=1, gpu_offset=0, nccl_algo="ring", nccl_channels=None):
        self.net = net
        self.pre = preset
        self.m = preset.model
        self.par = preset.parallel
        self.gps = int(gpus_per_server)
        par = self.par
        if par.tp > self.gps or self.gps % par.tp:
            raise WorkloadError("TP %d must divide the %d GPUs of a server" % (par.tp, self.gps), value=par.tp)
        hosts = net.topology.hosts
        nvl = getattr(net.topology, "nvlink", None)
        n_gpus = nvl.gpus if nvl is not None else len(hosts)     # NVLS engines are hosts, not GPUs
        if gpu_offset + par.gpus > n_gpus:
            raise WorkloadError("the plan needs %d GPUs, the fabric has %d" % (par.gpus, n_gpus), value=par.gpus)
        self.gpu_ids = hosts[gpu_offset:gpu_offset + par.gpus]
        self.nccl_algo = tuner.check_name(nccl_algo)    # ring (default), tree, nvls, nvls_tree or auto (the tuner)
        self.nccl_channels = check_channels(nccl_channels)     # rings' channels (None: one per local rank)
        if nccl_algo in ("nvls", "nvls_tree") and not preset.gpu.nvls:
            raise WorkloadError("--nccl-algo %s: NVLS needs NVSwitch reduction and multicast, which %s GPUs have "
                                "not (Hopper: --gpu h100)" % (nccl_algo, preset.gpu.name), value=nccl_algo)
        self.vpp = int(getattr(par, "vpp", 1))
        self.sp = bool(getattr(par, "sp", False))
        self.zero = int(getattr(preset, "zero", 0))
        self.recompute = bool(getattr(preset, "recompute", False))
        self.t = Transport(net, self.gps, preset.gpu.nvlink_gbps, int(preset.gpu.nvlink_latency_us * 1e6))
        self.hw = tuner.Hardware(self.t.nvlink_bps, net.topology.nic_rate(), bool(preset.gpu.nvls),
                                 self.nccl_channels)
        self.chunk = int(chunk_bytes)
        self.inflight = int(max_inflight)
        self.iterations = int(iterations)
        self._build_plan()
        self.results = []
        self._it = 0
        self.tp_allreduces = 0      # TP all-reduces run (each over the TP ranks of one (stage, replica))
        self.tp_bytes = 0           # their NVLink bytes, all GPUs (also in the transport's nvlink_bytes)
        self.pp_bytes = 0           # activation / gradient bytes sent between stages (fabric)
        self.pp_transfers = 0
        self.dp_collectives = {}    # kind -> count of DP bucket collectives (per TP rank)
        self.kinds = {}             # tag ("dp allreduce_tree", ...) -> [collectives, ps they took, ps on critical paths]

    # ------------------------------------------------------------ the plan
    def gpu(self, p, d, t):
        return self.gpu_ids[(p * self.par.dp + d) * self.par.tp + t]

    def _algo(self, kind, gpus, nbytes):
        return tuner.choose(kind, tuner.Shape.of(gpus, self.gps), self.hw, nbytes, self.nccl_algo)

    def _tp_allreduce(self, nbytes):
        """Alpha-beta time of the TP collectives that stand for one all-reduce of ``nbytes`` over NVLink."""
        return sum(channel_time_ps(k, a, self.par.tp, nbytes, self.chunk, self.t.nvlink_time)
                   for k, a in self.tp_plan)

    def _build_plan(self):
        m, par, g = self.m, self.par, self.pre.gpu
        b = par.micro_batch_size
        self.layers_per_stage = m.layers // par.pp
        self.layers_per_chunk = self.layers_per_stage // self.vpp
        attn_f, mlp_f = m.layer_fwd_flops(b)
        act = b * m.seq * m.hidden * self.pre.act_bytes
        self.act_bytes = act
        # one TP "all-reduce": an all-reduce, or with sequence parallelism a reduce-scatter and an all-gather
        kinds = ("reducescatter", "allgather") if self.sp else ("allreduce",)
        tp_gpus = list(range(par.tp))
        self.tp_plan = [(k, self._algo(k, tp_gpus, act)) for k in kinds] if par.tp > 1 else []
        tp_ar = self._tp_allreduce(act)
        self.tp_ar = tp_ar                      # ps of one TP all-reduce of an activation (NVLink channel)
        self.tp_ar_bytes = sum(sent_bytes(k, a, par.tp, act) for k, a in self.tp_plan)   # NVLink bytes, all ranks
        self.a2a_bytes = act * m.topk if m.moe else 0
        # per-layer compute (ps) on one TP rank
        self.attn_c = g.compute_ps(attn_f / par.tp)
        self.mlp_c = g.compute_ps(mlp_f / par.tp / (par.ep if m.moe else 1))
        self.attn_fwd = self.attn_c + tp_ar
        self.mlp_fwd = self.mlp_c + tp_ar
        self.logits_fwd = g.compute_ps(m.logits_fwd_flops(b) / par.tp)
        # gradient buckets per stage (reverse layer order), bytes per TP rank
        grad = self.pre.grad_bytes
        per_layer = (m.attn_params() + m.mlp_params() * (m.experts // par.ep if m.moe else 1)) * grad // par.tp
        bucket_bytes = int(self.pre.bucket_mb * 1024 * 1024)
        self.buckets = []           # list of (layers_done_before_launch, bytes)
        acc, cnt = 0, 0
        for i in range(self.layers_per_chunk):
            acc += per_layer
            cnt += 1
            if acc >= bucket_bytes or i == self.layers_per_chunk - 1:
                self.buckets.append((cnt, acc))
                acc, cnt = 0, 0
        emb = m.vocab * m.hidden * grad // par.tp
        self.emb_bytes = emb
        self.compute_per_mb = {}
        for p in range(par.pp):
            last = p == par.pp - 1
            layers = self.layers_per_stage
            f = layers * (self.attn_c + self.mlp_c + 2 * tp_ar) + (self.logits_fwd if last else 0)
            r = 1 if self.recompute else 0
            bwd = (layers * ((2 + r) * (self.attn_c + self.mlp_c) + (2 + 2 * r) * tp_ar)
                   + (2 * self.logits_fwd if last else 0))
            self.compute_per_mb[p] = (f, bwd)     # forward, backward of one micro-batch (TP all-reduces included)

    def _vops(self, p):
        """The order of (kind, micro-batch, chunk) on stage p: 1F1B, or interleaved 1F1B with VPP > 1."""
        if self.vpp > 1:
            return interleaved_1f1b(self.par.pp, self.vpp, self.par.micro_batches, p)
        return [(k, mb, 0) for k, mb in self._ops(p)]

    def _ops(self, p):
        """1F1B order of the micro-batches on stage p."""
        M, P = self.par.micro_batches, self.par.pp
        warm = min(P - p - 1, M)
        ops = [("F", i) for i in range(warm)]
        f, bwd = warm, 0
        while f < M:
            ops.append(("F", f))
            f += 1
            ops.append(("B", bwd))
            bwd += 1
        while bwd < M:
            ops.append(("B", bwd))
            bwd += 1
        return ops

    def _segments(self, p, kind, mb, chunk=0):
        """Segments of one op: compute blocks, TP collectives, EP all-to-alls, bucket launches."""
        m, par = self.m, self.par
        first = p == 0 and chunk == 0
        final = p == par.pp - 1 and chunk == self.vpp - 1
        last_b = kind == "B" and mb == par.micro_batches - 1
        mult = 1 if kind == "F" else 2
        segs = []
        moe = m.moe and par.ep > 1
        tp = self.tp_plan and par.tp > 1

        grp = [0]

        def block(ps, what, a2a=None, new_group=True):
            """A compute block, the TP collective after it, and (MoE) the all-to-all after that.  On the channel
            a group (a layer's blocks between all-to-alls) is one delay, its blocks' bounds computed."""
            grp[0] += new_group
            segs.append(_Segment("compute", ps, what, grp[0]))
            if tp:
                segs.append(_Segment("tp", self.tp_ar, what, grp[0]))
            if a2a is not None:
                segs.append(_Segment("a2a", a2a, what))
        if kind == "B" and final:
            block(2 * self.logits_fwd, "logits backward")
            if tp:
                segs.pop()
        layer_order = range(self.layers_per_chunk) if kind == "F" else reversed(range(self.layers_per_chunk))
        done_layers = 0
        bucket_i = 0
        need = self.buckets[0][0] if self.buckets else None
        for li in layer_order:
            name = "layer %d " % (chunk * self.layers_per_chunk + li)
            if kind == "B" and self.recompute:      # the layer's forward again, then its backward
                block(self.attn_c, name + "attention recompute", ("R", mb, li, 0, chunk) if moe else None)
                block(self.mlp_c, name + "MLP recompute", ("R", mb, li, 1, chunk) if moe else None, moe)
            # a pass over a block is its compute (x2 backward) and one TP all-reduce
            if moe:
                block(mult * self.attn_c, name + "attention", (kind, mb, li, 0, chunk))
                block(mult * self.mlp_c, name + "MLP", (kind, mb, li, 1, chunk))
            elif kind == "F":
                block(self.attn_c, name + "attention")
                block(self.mlp_c, name + "MLP", new_group=False)
            else:
                block(2 * self.mlp_c, name + "MLP backward")
                block(2 * self.attn_c, name + "attention backward", new_group=False)
            if last_b:
                done_layers += 1
                if done_layers == need:
                    segs.append(_Segment("bucket", bucket_i if self.vpp == 1 else (chunk, bucket_i)))
                    bucket_i += 1
                    done_layers = 0
                    need = self.buckets[bucket_i][0] if bucket_i < len(self.buckets) else None
        if kind == "F" and final:
            block(self.logits_fwd, "logits")
            if tp:
                segs.pop()
        if last_b and (first or final):
            segs.append(_Segment("bucket", "emb"))
        return segs

    # ------------------------------------------------------------ running
    def start(self, on_done=None):
        self.on_done = on_done
        self._start_iteration()
        return self

    def _start_iteration(self):
        par = self.par
        self._t0 = self.net.now
        self._cp = CriticalPath(self._t0)
        self._ops_left = par.pp * par.dp
        self._colls_left = 0
        self._arrived = {}          # (p, d, kind, mb, chunk) -> TP transfers arrived
        self._waiting = {}          # (p, d) -> (kind, mb, chunk) it waits for
        self._colls = {}
        self._busy = {}
        self._pos = {}
        self._tp_busy = {}
        self._cause = {}            # (p, d) -> the block whose end let the chain go on (critical path)
        for p in range(par.pp):
            for d in range(par.dp):
                self._pos[(p, d)] = 0
                self._busy[(p, d)] = 0
                self._tp_busy[(p, d)] = 0
                self._cause[(p, d)] = None
        self._plans = {p: self._vops(p) for p in range(par.pp)}
        self._zero_left = {}        # (p, t) -> DP reduce-scatters still to finish before the all-gathers
        self._zero_bufs = {}        # (p, t) -> buffers all-gathered after them
        self._zero_last = {}        # (p, t) -> block of the last of them to finish
        if self.zero and par.dp > 1:
            for p in range(par.pp):
                bufs = []
                for c in range(self.vpp):
                    bufs += [b for _, b in self.buckets if b > 0]
                    if ((p == 0 and c == 0) or (p == par.pp - 1 and c == self.vpp - 1)) and self.emb_bytes > 0:
                        bufs.append(self.emb_bytes)
                for t in range(par.tp):
                    self._zero_left[(p, t)] = len(bufs)
                    self._zero_bufs[(p, t)] = bufs
        for p in range(par.pp):
            for d in range(par.dp):
                self._next_op(p, d)

    def _op_name(self, p, d, kind, mb, c):
        return "stage %d replica %d %s mb %d%s" % (p, d, "forward" if kind == "F" else "backward", mb,
                                                   " chunk %d" % c if self.vpp > 1 else "")

    def _note(self, tag, ps, n=1):
        k = self.kinds.get(tag)
        if k is None:
            k = self.kinds[tag] = [0, 0, 0]
        k[0] += n
        k[1] += ps

    def _next_op(self, p, d):
        ops = self._plans[p]
        i = self._pos[(p, d)]
        if i == len(ops):
            self._ops_left -= 1
            self._maybe_end(self._cause[(p, d)])
            return
        kind, mb, c = ops[i]
        need = None
        if kind == "F" and not (p == 0 and c == 0):
            need = ("F", mb, c)
        elif kind == "B" and not (p == self.par.pp - 1 and c == self.vpp - 1):
            need = ("B", mb, c)
        if need is not None and self._arrived.get((p, d) + need, 0) < self.par.tp:
            self._waiting[(p, d)] = need
            return
        self._run_segments(p, d, kind, mb, self._segments(p, kind, mb, c), 0, c)

    def _deliver(self, p, d, kind, mb, c, block):
        key = (p, d, kind, mb, c)
        self._arrived[key] = self._arrived.get(key, 0) + 1
        if self._arrived[key] == self.par.tp and self._waiting.get((p, d)) == (kind, mb, c):
            del self._waiting[(p, d)]
            self._cause[(p, d)] = block        # the chain waited for this transfer, the last of its TP ranks
            self._next_op(p, d)

    def _run_segments(self, p, d, kind, mb, segs, k, c=0):
        key = (p, d)
        while k < len(segs):
            s = segs[k]
            cont = (lambda k=k: self._run_segments(p, d, kind, mb, segs, k + 1, c))
            if s.kind in ("compute", "tp") and not self.t.nvlink_fabric:
                j = k
                while j < len(segs) and segs[j].kind in ("compute", "tp") and segs[j].grp == s.grp:
                    j += 1
                total = self._channel_group(p, d, kind, mb, c, segs[k:j])
                if total > 0:
                    self.net.schedule(total, lambda j=j: self._run_segments(p, d, kind, mb, segs, j, c))
                    return
                k = j
                continue
            if s.kind == "compute":
                if s.arg > 0:
                    self._busy[key] += s.arg
                    b = self._cp.open("compute", self._op_name(p, d, kind, mb, c), s.what, self.net.now,
                                      self._cause[key])
                    self.net.schedule(s.arg, lambda b=b, cont=cont: self._end_block(key, b, cont))
                    return
            elif s.kind == "tp":
                self._tp(p, d, kind, mb, c, s, cont)
                return
            elif s.kind == "a2a":
                self._a2a(p, d, s.arg, cont)
                return
            else:
                self._bucket(p, d, s.arg, c)
            k += 1
        self._op_done(p, d, kind, mb, c)

    def _channel_group(self, p, d, kind, mb, c, group):
        """Compute blocks and TP collectives on the NVLink channel, one after the other: their blocks with the
        bounds they will have, counted now; returns their total time (one delay, as one compute block)."""
        key = (p, d)
        op = self._op_name(p, d, kind, mb, c)
        t = self.net.now
        for s in group:
            if s.kind == "compute":
                if s.arg <= 0:
                    continue
                b = self._cp.open("compute", op, s.what, t, self._cause[key])
                t += s.arg
                self._busy[key] += s.arg
                self._cp.close(b, t)
                self._cause[key] = b
                continue
            self.tp_allreduces += 1
            self.tp_bytes += self.tp_ar_bytes
            for k, a in self.tp_plan:
                tag = "tp " + implementation(k, a).name
                dur = channel_time_ps(k, a, self.par.tp, self.act_bytes, self.chunk, self.t.nvlink_time)
                self.t.count_nvlink(tag, sent_bytes(k, a, self.par.tp, self.act_bytes), 0)
                self._note(tag, dur)
                b = self._cp.open("tp", op, "%s after %s" % (tag, s.what), t, self._cause[key], tag)
                t += dur
                self._busy[key] += dur
                self._tp_busy[key] += dur
                self._cp.close(b, t)
                self._cause[key] = b
        return t - self.net.now

    def _end_block(self, key, b, cont):
        self._cp.close(b, self.net.now)
        self._cause[key] = b
        cont()

    def _tp(self, p, d, kind, mb, c, s, cont):
        """One TP all-reduce (or reduce-scatter + all-gather) over the TP ranks of (p, d) as packets, NVLink
        being part of the fabric (on the channel: ``_channel_group``)."""
        key = (p, d)
        self.tp_allreduces += 1
        self.tp_bytes += self.tp_ar_bytes
        op = self._op_name(p, d, kind, mb, c)
        ranks = [self.gpu(p, d, t) for t in range(self.par.tp)]

        def step(i):
            if i == len(self.tp_plan):
                cont()
                return
            k, a = self.tp_plan[i]
            cls = implementation(k, a)
            tag = "tp " + cls.name
            b = self._cp.open("tp", op, "%s after %s" % (tag, s.what), self.net.now, self._cause[key], tag)
            t0 = self.net.now

            def finished(co=None):
                dur = self.net.now - t0
                self._note(tag, dur)
                self._busy[key] += dur
                self._tp_busy[key] += dur
                self._end_block(key, b, lambda: step(i + 1))
            cls(self.t, ranks, self.act_bytes, chunk_bytes=self.chunk, max_inflight=self.inflight, tag=tag,
                on_done=finished, **self._ring_kw(cls)).start()
        step(0)

    def _op_done(self, p, d, kind, mb, c=0):
        par, v = self.par, self.vpp
        if kind == "F":
            if p < par.pp - 1:
                self._p2p(p, d, p + 1, "F", mb, c)
            elif c < v - 1:
                self._p2p(p, d, 0, "F", mb, c + 1)
        else:
            if p > 0:
                self._p2p(p, d, p - 1, "B", mb, c)
            elif c > 0:
                self._p2p(p, d, par.pp - 1, "B", mb, c - 1)
        self._pos[(p, d)] += 1
        self._next_op(p, d)

    def _p2p(self, p, d, q, kind, mb, c=0):
        size = self.act_bytes // self.par.tp
        what = "%s mb %d stage %d to %d" % ("activation" if kind == "F" else "gradient", mb, p, q)
        for t in range(self.par.tp):
            self.pp_transfers += 1
            self.pp_bytes += size
            b = self._cp.open("pp", "pp " + what, what, self.net.now, self._cause[(p, d)], "pp sendrecv")

            def arrived(x, b=b):
                self._cp.close(b, self.net.now)
                self._note("pp sendrecv", x.duration)
                self._deliver(q, d, kind, mb, c, b)
            SendRecv(self.t, [self.gpu(p, d, t), self.gpu(q, d, t)], size, on_done=arrived,
                     chunk_bytes=self.chunk, max_inflight=self.inflight, tag="pp sendrecv").start()

    def _a2a(self, p, d, key, cont):
        par = self.par
        group = d // par.ep
        members = list(range(group * par.ep, (group + 1) * par.ep))
        ck = ("a2a", p, group) + key
        entry = self._colls.get(ck)
        if entry is None:
            state = {"left": par.tp, "waiters": [], "joined": 0, "block": None}
            colls = []
            for t in range(par.tp):
                def done(co, state=state):
                    self._note("ep alltoall", co.duration)
                    state["left"] -= 1
                    if state["left"] == 0:
                        self._cp.close(state["block"], self.net.now)
                        for chain, w in state["waiters"]:
                            self._cause[chain] = state["block"]
                            w()
                colls.append(AllToAll(self.t, [self.gpu(p, x, t) for x in members], self.a2a_bytes // par.tp,
                                      on_done=done, chunk_bytes=self.chunk, max_inflight=self.inflight,
                                      tag="ep alltoall"))
            entry = self._colls[ck] = (state, colls)
        state, colls = entry
        state["waiters"].append(((p, d), cont))
        state["joined"] += 1
        if state["joined"] == len(members):         # the last member joins: the all-to-all can finish
            state["block"] = self._cp.open("ep", "ep alltoall stage %d group %d" % (p, group),
                                           "ep alltoall %s" % (key,), self.net.now, self._cause[(p, d)],
                                           "ep alltoall")
        for c in colls:
            c.ready(d - group * par.ep)

    def _bucket(self, p, d, which, chunk=0):
        par = self.par
        if which == "emb":
            nbytes = self.emb_bytes
        else:
            nbytes = self.buckets[which if self.vpp == 1 else which[1]][1]
        if par.dp == 1 or nbytes == 0:
            return
        ck = ("ar", p, chunk, which)
        entry = self._colls.get(ck)
        if entry is None:
            colls = []
            group = [self.gpu(p, x, 0) for x in range(par.dp)]
            kind = "reducescatter" if self.zero else "allreduce"
            cls = implementation(kind, self._algo(kind, group, nbytes))
            self.dp_collectives[cls.name] = self.dp_collectives.get(cls.name, 0) + par.tp
            tag = "dp " + cls.name
            what = "%s bucket %s stage %d%s" % (tag, which, p, " chunk %d" % chunk if self.vpp > 1 else "")
            blocks = [None] * par.tp
            where = []                  # per TP rank: replica -> its index among the collective's ranks
            for t in range(par.tp):
                self._colls_left += 1
                done = lambda co, t=t: self._dp_done(co, tag, blocks[t], p, t)
                ranks = self._group(cls, [self.gpu(p, x, t) for x in range(par.dp)])
                where.append({g: i for i, g in enumerate(ranks)})
                colls.append(cls(self.t, ranks, nbytes, on_done=done, chunk_bytes=self.chunk,
                                 max_inflight=self.inflight, tag=tag, **self._ring_kw(cls)))
            entry = self._colls[ck] = {"colls": colls, "ready": 0, "blocks": blocks, "what": what, "tag": tag,
                                       "where": where}
        entry["ready"] += 1
        if entry["ready"] == par.dp:                # the last replica's gradients: the collective can finish
            for t in range(par.tp):
                entry["blocks"][t] = self._cp.open("dp", entry["what"], entry["what"], self.net.now,
                                                   self._cause[(p, d)], entry["tag"])
        for t, c in enumerate(entry["colls"]):
            c.ready(entry["where"][t][self.gpu(p, d, t)])

    def _group(self, cls, gpus):
        """A group's ranks in the collective's order: NCCL's ring order for rings, GPU order otherwise."""
        return ring_order(gpus, self.gps) if getattr(cls, "ring", False) else list(gpus)

    def _ring_kw(self, cls):
        """The channels argument of a ring collective (other algorithms take none)."""
        return {"channels": self.nccl_channels} if getattr(cls, "ring", False) else {}

    def _dp_done(self, co, tag, block, p, t):
        self._cp.close(block, self.net.now)
        self._note(tag, co.duration)
        if self.zero:
            self._zero_rs_done(p, t, block)
        self._colls_left -= 1
        self._maybe_end(block)

    def _zero_rs_done(self, p, t, block):
        """ZeRO 1/2: after the last gradient reduce-scatter of (stage, TP rank), the optimizer step on each
        shard, then the updated parameters all-gathered, bucket by bucket."""
        self._zero_left[(p, t)] -= 1
        if self._zero_left[(p, t)] == 0:
            bufs = self._zero_bufs[(p, t)]
            group = [self.gpu(p, x, t) for x in range(self.par.dp)]
            for nbytes in bufs:
                cls = implementation("allgather", self._algo("allgather", group, nbytes))
                self.dp_collectives[cls.name] = self.dp_collectives.get(cls.name, 0) + 1
                tag = "dp " + cls.name
                self._colls_left += 1
                b = self._cp.open("dp", "%s parameters stage %d" % (tag, p), tag, self.net.now, block, tag)
                cls(self.t, self._group(cls, group), nbytes, chunk_bytes=self.chunk, max_inflight=self.inflight,
                    tag=tag, on_done=lambda co, b=b, tag=tag: self._ag_done(co, tag, b), **self._ring_kw(cls)).start()

    def _ag_done(self, co, tag, block):
        self._cp.close(block, self.net.now)
        self._note(tag, co.duration)
        self._colls_left -= 1
        self._maybe_end(block)

    def _maybe_end(self, last_block=None):
        if self._ops_left == 0 and self._colls_left == 0:
            busiest = max(self._busy, key=lambda k: (self._busy[k], k))
            chain = self._cp.chain(last_block)
            for b in chain:
                if b.tag is not None:
                    self.kinds.setdefault(b.tag, [0, 0, 0])[2] += b.time
            r = IterationResult(self._it, self._t0, self.net.now, self._busy[busiest], self._tp_busy[busiest],
                                chain)
            self.results.append(r)
            self._cp = None
            self._it += 1
            if self._it < self.iterations:
                self._start_iteration()
            elif self.on_done is not None:
                self.on_done(self)

    # ------------------------------------------------------------ summary
    def collective_table(self):
        """Per collective kind (tag): count, NVLink and fabric bytes the GPUs sent, ps the collectives took (in
        all, over the run) and ps on the critical paths."""
        out = {}
        for tag in sorted(set(self.kinds) | set(self.t.by_tag)):
            n, ps, crit = self.kinds.get(tag, (0, 0, 0))
            by = self.t.by_tag.get(tag, {"nvlink": 0, "fabric": 0})
            out[tag] = {"count": n, "nvlink_bytes": by["nvlink"], "fabric_bytes": by["fabric"], "time_ps": ps,
                        "critical_ps": crit}
        return out

    def summary(self):
        last = self.results[-1] if self.results else None
        cp = None
        if last is not None:
            from .critical import by_kind
            cp = {"by_kind_ps": by_kind(last.critical_path),
                  "blocks": [b.as_dict(last.start) for b in last.critical_path]}
        return {
            "model": self.m.name, "tp": self.par.tp, "pp": self.par.pp, "dp": self.par.dp, "ep": self.par.ep,
            "micro_batches": self.par.micro_batches, "gpus": self.par.gpus,
            "iterations": len(self.results),
            "iteration_time_ps": last.time if last else None,
            "compute_time_ps": last.compute - last.tp if last else None,
            "tp_allreduce_time_ps": last.tp if last else None,
            "exposed_comm_ps": last.exposed_comm if last else None,
            "fabric_bytes": self.t.fabric_bytes, "nvlink_bytes": self.t.nvlink_bytes,
            "fabric_bytes_by_class": dict(self.t.fabric_classes),
            "tp_allreduce_bytes": self.tp_bytes, "tp_allreduces": self.tp_allreduces,
            "tp_activation_bytes": self.act_bytes,
            "nccl_algo": self.nccl_algo, "nccl_channels": self.nccl_channels,
            "dp_ring_channels": ring_channels([self.gpu(0, x, 0) for x in range(self.par.dp)], self.gps,
                                              self.nccl_channels),
            "vpp": self.vpp, "sequence_parallel": self.sp, "zero": self.zero,
            "recompute": self.recompute, "nvlink_fabric": self.t.nvlink_fabric,
            "tp_algorithms": {k: a for k, a in self.tp_plan},
            "tp_collectives": ({"reducescatter": self.tp_allreduces, "allgather": self.tp_allreduces} if self.sp
                               else {"allreduce": self.tp_allreduces}),
            "dp_collectives": dict(self.dp_collectives),
            "collectives_by_kind": self.collective_table(),
            "critical_path": cp,
            "pp_bytes": self.pp_bytes, "pp_transfers": self.pp_transfers,
            "fabric_flows": self.t.fabric_flows,
        }
