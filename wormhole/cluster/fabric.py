"""Fabric contention: the co-running jobs' iterations replayed on the cluster's
network with the flow backend or the packet kernel.

A *scenario* is a group of training jobs whose workers span servers and that
share at least one server (jobs on disjoint server sets cannot meet on the
non-blocking core; jobs inside one server never touch a NIC).  Each worker
talks to its ring successor over a persistent connection, the ring ordered
server by server as NCCL orders a node's GPUs, or (``ring="rank"``) in the
order the policy placed the workers, one pod at a time, as NCCL orders ranks it
sees as separate hosts; ``ring=None`` (default) takes the spec's ``ring``.

What a job's iteration puts on the fabric (``volume``):

- ``rate`` (default), from the profile alone: compute without communication
  (:func:`compute_only_s`, the one-worker profile's compute when it is
  shorter: a multi-worker "computing time" holds the communication that
  overlaps it), then communication for the rest of the profiled iteration, the
  worker sending at its measured rate c = V_net / N (MoSim's per-worker demand);
  the bytes are c x that time.  Where the gradient sizes of well-known models
  are trusted (ResNet-50, Inception-v3, GoogLeNet), c, not c / 2, is the rate
  that moves their ring all-reduce in the communication time the profile
  leaves.
- ``gradient``: a ring all-reduce of the trace's gradient (``grad_mb``),
  2 (N - 1) / N x grad_mb per worker, as PyTorch DDP runs it (``overlap``):
  forward T_comp / 3, backward 2 T_comp / 3 during which DDP's buckets
  (``bucket_mb`` = 25 MB, the first ``first_bucket_mb`` = 1 MB) become ready and
  are all-reduced one after another; ``overlap=False`` sends the whole
  gradient after the backward pass.
- ``profile``: like ``gradient`` with V_net / N x T_net bytes.
- ``rate-ddp``: the ``rate`` bytes, but sent as PyTorch DDP sends a gradient:
  in buckets (``first_bucket_mb``, then ``bucket_mb``, in proportion to the
  trace's gradient) that become ready during the backward pass of the
  compute without communication (2/3 of it), all-reduced one after another
  while the backward pass goes on; the sender's rate (``profile``) is then
  the one that ends the job's iteration alone at its profile, lower than c
  since the communication has the backward pass too.
- ``ring``: the bytes a ring all-reduce of the gradient moves, 2 (N - 1) / N
  x grad_mb per worker, but no more than the ``rate`` source's c x (T_iter -
  compute) (the most the worker's measured rate moves in the time the profile
  leaves for communication: where the trace's gradient is larger, the profile
  cannot have moved it, and the profile wins), sent after the compute like
  ``rate``.  With ``sender="rate"`` the worker sends them at c and the rest of
  the communication time is a fixed pause (latency, synchronisation), which
  the NIC does not stretch: only the bytes meet the co-runners.

How the worker hands the bytes to its connection (``sender``): ``profile``
(default) at the rate that makes the job alone on one server take its profiled
iteration (for ``rate``: c), in ``CHUNKS`` pieces, so a worker the software
limits stays limited when it crosses a NIC and the NIC's share binds only
when it is lower; ``rate``: at the worker's measured rate c = V_net / N, in
``CHUNKS`` pieces, whatever the bytes, and the part of the profiled iteration
the transfer does not fill is a fixed pause (below); ``transport``: all at
once, as fast as the transport goes, and the part of the profiled iteration no
transfer explains is a fixed pause (kernel launches, synchronisation):
max(0, T_iter - T_fab(alone, packed, no pause)).

How a bucket's all-reduce goes on the connections (``collective``):
``flows`` (default), each worker's whole share as one message to its
successor, the connections independent (the bucket ends when the last has
arrived); ``ring``, NCCL's ring algorithm: 2 (N - 1) steps of share / (2 (N -
1)) bytes, worker j sending step s only once step s - 1 from worker j - 1 has
reached it, so one slow link holds every worker back step by step, and every
step pays the queue in front of the NIC.  With a paced sender a worker
produces its steps one after another at its rate.

The profile's iteration time T_iter was measured with the job alone on one
server; the job's iteration time in the scenario is

    tau = T_iter + (T_fab(scenario) - T_fab(job alone, packed)),

so a job alone on one server runs exactly at its profile, and what the fabric
adds is the extra time of crossing NICs and sharing them.  Jobs start at
staggered phases (``offsets="spread"``: ``phases`` replays at relative phases
spread over the period, averaged; ``offsets="actual"``: one replay from where
each job is in its current iteration when the running set changes, to 1/16 of
an iteration, part of the memo key); after one warm-up iteration every job iterates until each
has done ``iterations`` more, and a job's T_fab is the mean of its iterations
that ended while all were running.

Transport: the packet kernel runs the spec's ``transport`` congestion control
(``dctcp`` for the testbeds: NCCL's socket transport is TCP) on NICs of the
spec's line rate.  A spec ``efficiency`` (the goodput of one transfer on the
link as a fraction of its line rate, 463 MB/s of 5 Gbps for MoSim's testbed)
is met by sending ``wire_factor`` wire bytes per payload byte, the factor
measured on one transfer (see :meth:`FabricContention.transport_check`).

The packet backend replays a time-scaled copy (bytes and pauses divided by the
same factor, rates unchanged, so that no worker sends more than ``hop_bytes``
per iteration): link shares and overlaps keep their proportions while the
packet count stays bounded; queueing delays and per-packet times do not scale,
so a scenario's results move with ``hop_bytes`` (``bench/cluster_pairwise.py
--hop`` measures by how much).  Results are memoized by placement pattern: the
canonical form of the scenario (servers relabeled in the order of what they
host), so a recurring co-location is simulated once.
"""

from collections import namedtuple

from ..config import Config
from ..errors import ContentionError
from ..network import Network
from ..units import S
from .policies import bin_packing
from .spec import RING_ORDERS

_PHI = 0.6180339887498949
CHUNKS = 32                 # pieces of a paced message (see _JobReplay)
BACKWARD_SHARE = 2.0 / 3.0


def _ring_form(seq):
    """The ring of a server sequence up to rotation and direction."""
    seq = tuple(seq)
    forms = [seq[i:] + seq[:i] for i in range(len(seq))]
    rev = seq[::-1]
    forms += [rev[i:] + rev[:i] for i in range(len(rev))]
    return min(forms)


def scenario_key(group, spec, ring="server"):
    """Canonical form of a scenario: (jobs, servers), and the job order.

    Servers are relabeled by their signature (hardware and the (model, workers,
    count) of what they host); each job becomes (model, workers, counts per
    relabeled server), and with ``ring="rank"`` also its ring: the relabeled
    servers of its workers in rank order, up to rotation and direction.  Equal
    keys mean the same scenario up to relabeling."""
    used = sorted({s for r in group for s in r.servers})
    sig = {}
    for s in used:
        hw = spec.servers[s]
        hosted = sorted((r.model, r.gpus, r.servers.count(s)) for r in group if s in r.servers)
        sig[s] = ((hw.gpus, hw.nic_Bps, hw.intra_Bps), tuple(hosted))
    order = sorted(used, key=lambda s: (sig[s], s))
    pos = {s: i for i, s in enumerate(order)}
    desc = []
    for r in group:
        counts = [0] * len(order)
        for s in r.servers:
            counts[pos[s]] += 1
        d = (r.model, r.gpus, tuple(counts))
        if ring == "rank":
            d += (_ring_form(pos[s] for s in r.servers),)
        desc.append((d, r))
    desc.sort(key=lambda x: x[0])
    key = (tuple(d for d, _ in desc), tuple(sig[s][0] for s in order))
    return key, [r for _, r in desc]


class FabricContention:
    def __init__(self, backend, iterations=5, hop_bytes=4 << 20, memo=None, volume="rate", phases=4,
                 overlap=True, bucket_mb=25.0, first_bucket_mb=1.0, sender="profile", ring=None,
                 collective="flows", offsets="spread"):
        if volume not in VOLUME_SOURCES:
            raise ContentionError("volume source must be one of %s" % ", ".join(VOLUME_SOURCES), value=volume)
        if backend not in ("flow", "packet"):
            raise ContentionError("fabric backend must be flow or packet", value=backend)
        for what, v in (("iterations", iterations), ("phases", phases), ("hop_bytes", hop_bytes)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ContentionError("fabric %s must be a positive integer" % what, value=v)
        for what, v in (("bucket_mb", bucket_mb), ("first_bucket_mb", first_bucket_mb)):
            if not (isinstance(v, (int, float)) and v > 0):
                raise ContentionError("%s must be positive" % what, value=v)
        if ring is not None and ring not in RING_ORDERS:
            raise ContentionError("ring order must be one of %s" % ", ".join(RING_ORDERS), value=ring)
        for what, v, names in (("sender", sender, SENDERS),
                               ("collective", collective, COLLECTIVES), ("offsets", offsets, OFFSETS)):
            if v not in names:
                raise ContentionError("%s must be one of %s" % (what, ", ".join(names)), value=v)
        self.sender, self.ring, self.collective, self.offsets = sender, ring, collective, offsets
        self._sender = {}           # (model, workers) -> payload B/s of its sender (None: all at once)
        self.volume = volume
        self.name = backend
        self.backend = backend
        self.iterations = iterations
        self.phases = phases
        self.hop_bytes = hop_bytes
        self.overlap = bool(overlap)
        self.bucket_bytes = bucket_mb * 1e6
        self.first_bucket_bytes = first_bucket_mb * 1e6
        self.memo = {} if memo is None else memo
        self._wire = {}             # spec -> (spec, wire factor, transport's own goodput B/s)
        self.simulated = 0          # scenarios simulated (memo misses)
        self.hits = 0
        self.events = 0

    # ------------------------------------------------------------ interface
    def iteration_times(self, running, spec):
        out = {r.key: (r.profile.iteration_s, 1.0) for r in running}
        cross = [r for r in running if not r.loading and r.gpus > 1 and len(set(r.servers)) > 1]
        for group in _groups(cross):
            tfab = self.scenario(group, spec)
            for r in group:
                p = r.profile
                base, fixed = self.alone_packed(r, spec)
                tau = p.iteration_s + tfab[r.key] - (base + fixed)
                out[r.key] = (tau, (tau - p.compute_s) / p.network_s if p.network_s > 0 else 1.0)
        return out

    def alone_packed(self, r, spec):
        """(T_fab, fixed pause) of the job alone, placed as the profile was
        (fewest servers), replayed without the pause."""
        free = [s.gpus for s in spec.servers]
        servers = bin_packing(r.gpus, free, free)
        if servers is None:
            servers = r.servers
        alone = _Stub(r, servers)
        t = self.scenario([alone], spec)[alone.key]
        return t, max(0.0, r.profile.iteration_s - t)

    def scenario(self, group, spec):
        """{job key: mean iteration time (s)} of the group replayed together."""
        key, ordered = scenario_key(group, spec, self.ring_of(spec))
        key = key + (self.transport_key(spec),)
        if self.offsets == "actual" and len(ordered) > 1:
            key = key + (tuple(self.phase_slot(r) for r in ordered),)
        res = self.memo.get(key)
        if res is None:
            res = self._simulate(ordered, spec)
            self.memo[key] = res
            self.simulated += 1
        else:
            self.hits += 1
        return {r.key: res[i] for i, r in enumerate(ordered)}

    def ring_of(self, spec):
        """The ring order replayed: the model's, or the spec's (``ring=None``)."""
        return self.ring or spec.ring

    def phase_slot(self, r):
        """The job's position in its current iteration (``offsets="actual"``),
        in 1 / ``PHASE_SLOTS`` of an iteration: the fraction of an iteration
        it has done beyond its whole ones (0 for a job that has not started
        iterating, and for the packed-alone reference)."""
        done = getattr(r, "iterations", 0.0) - getattr(r, "remaining", 0.0) if not isinstance(r, _Stub) else 0.0
        return int((done % 1.0) * PHASE_SLOTS) % PHASE_SLOTS

    def transport_key(self, spec):
        return (spec.transport, spec.efficiency, spec.buffer_bytes, self.overlap, self.volume, self.bucket_bytes,
                self.first_bucket_bytes, self.sender, self.ring_of(spec), self.collective)

    # ------------------------------------------------------------ transport
    def _network(self, topo, spec, used, scale=1.0):
        """A Network of the fabric; ``scale`` is the replay's time scaling, by
        which the transport's timeouts (a pause of the sender, as the replay's
        pauses) are divided too."""
        if self.backend == "packet":
            nic_gbps = max(1, round(min(spec.servers[s].nic_Bps for s in used) * 8 / 1e9))
            # ECN thresholds scale with the link rate (the preset's tables only
            # list the reference's standard rates)
            kw = dict(kmin_map=None, kmax_map=None, pmax_map=None)
            if spec.buffer_bytes is not None:
                kw["buffer_size"] = spec.buffer_bytes / float(1 << 20)      # Config: MiB
            cfg = Config.preset(spec.transport, nic_gbps, **kw)
            if scale != 1.0:
                cfg = cfg.copy(**{k: float(getattr(cfg, k)) / scale for k in TIMEOUTS if float(getattr(cfg, k)) > 0})
        else:
            cfg = Config(flow_model="maxmin")
        return Network(topo, cfg, backend=self.backend)

    def _one_transfer(self, spec, wire):
        """Goodput (B/s) of one ring step of a 1 + 1 job across two servers'
        NICs, ``wire`` wire bytes per payload byte, after a first message
        opened the connections."""
        topo, hosts = spec.fabric([0, 1])
        net = self._network(topo, spec, [0, 1])
        a, b = hosts[(0, 0)], hosts[(1, 0)]
        conns = (net.connect(a, b), net.connect(b, a))
        payload = 1 << 20
        ends = []
        for c in conns:
            net.post(c, int(round(payload * wire)))
        net.run()
        t0 = net.now
        for c in conns:
            net.post(c, int(round(payload * wire)), lambda _m: ends.append(net.now))
        net.run()
        # the last message's end (a transport's pending timers may run the clock on)
        return payload / ((max(ends) - t0) / S)

    def transport_check(self, spec):
        """The transport on one transfer: {line_Bps, own_goodput_Bps (the
        transport at wire factor 1), wire_factor, goodput_Bps (with it),
        target_Bps (efficiency x line rate, or None)}."""
        wire, own = self.wire_factor(spec), self._wire[id(spec)][2]
        line = min(spec.servers[0].nic_Bps, spec.servers[1].nic_Bps) if len(spec.servers) > 1 else None
        return {"transport": spec.transport, "backend": self.backend, "line_Bps": line,
                "own_goodput_Bps": own, "wire_factor": wire,
                "goodput_Bps": self._one_transfer(spec, wire) if line else None,
                "target_Bps": line * spec.efficiency if line and spec.efficiency else None}

    def wire_factor(self, spec):
        """Wire bytes per payload byte that make one transfer achieve the
        spec's ``efficiency`` x line rate (1 without an efficiency): the
        transport's own goodput on the link over the target, measured once per
        spec on one transfer."""
        if id(spec) not in self._wire:
            if len(spec.servers) < 2:
                self._wire[id(spec)] = (spec, 1.0, None)
            else:
                own = self._one_transfer(spec, 1.0)
                line = min(spec.servers[0].nic_Bps, spec.servers[1].nic_Bps)
                w, got = 1.0, own
                if spec.efficiency:
                    target = line * spec.efficiency
                    best = (abs(got - target), w)
                    for _ in range(6):      # the goodput is not quite linear in the wire bytes
                        w = max(1.0, w * got / target)
                        got = self._one_transfer(spec, w)
                        best = min(best, (abs(got - target), w))
                        if best[0] < 2e-3 * target:
                            break
                    w = best[1]
                self._wire[id(spec)] = (spec, w, own)
        return self._wire[id(spec)][1]

    # ------------------------------------------------------------ replay
    def buckets(self, r):
        """Payload bytes of each bucket's ring message (per worker), in the
        order DDP all-reduces them; their sum is :func:`sync_bytes`."""
        grad = r.entry.grad_mb * 1e6
        sizes = []
        left = grad
        cap = self.first_bucket_bytes
        while left > 1e-9:
            b = min(cap, left)
            sizes.append(b)
            left -= b
            cap = self.bucket_bytes
        total = sync_bytes(r, self.volume)
        if not self.overlaps() or grad <= 0:
            return [total]
        return [total * b / grad for b in sizes]

    def overlaps(self):
        """Buckets overlap the backward pass (``overlap`` and a gradient or
        profile volume; the ``rate`` source's communication time is what the
        profile shows beyond the compute, so it follows the compute)."""
        return self.overlap and VOLUMES[self.volume].overlaps

    def compute_s(self, r):
        """Compute time of one iteration as replayed: the profile's, or for the
        ``rate`` source :func:`compute_only_s`."""
        return compute_only_s(r) if VOLUMES[self.volume].compute_only else r.profile.compute_s

    def sender_Bps(self, r):
        """Payload bytes/s at which each worker hands its messages to its
        connection (``sender="profile"``): the rate that makes the job alone on
        one server take its profiled iteration, with the compute as replayed and
        the buckets sent one after another at that rate (for ``volume="rate"``
        it is c = V_net / N).  None with ``sender="transport"`` or when the
        profile shows no network time (all at once)."""
        if self.sender == "rate":
            return measured_rate_Bps(r)
        if self.sender != "profile":
            return None
        key = (r.model, r.gpus)
        if key not in self._sender:
            p = r.profile
            comp = self.compute_s(r)
            fwd, bwd = comp * (1 - BACKWARD_SHARE), comp * BACKWARD_SHARE
            sizes = self.buckets(r)
            total = sum(sizes)
            ready, acc = [], 0.0
            for b in sizes:
                acc += b
                ready.append(bwd * acc / total if self.overlaps() else bwd)

            def end(rate):
                t = 0.0
                for b, at in zip(sizes, ready):
                    t = max(t, at) + b / rate
                return fwd + max(bwd, t)

            rate = None
            if total > 0 and p.network_s > 0 and end(1e18) < p.iteration_s:
                lo, hi = 1.0, 1e15               # end() falls as the rate grows
                for _ in range(200):
                    mid = (lo * hi) ** 0.5
                    if end(mid) > p.iteration_s:
                        lo = mid
                    else:
                        hi = mid
                    if hi / lo < 1 + 1e-9:
                        break
                rate = hi
            self._sender[key] = rate
        return self._sender[key]

    def _simulate(self, jobs, spec):
        """Mean iteration time of each job (s), averaged over ``phases``
        replays that start the jobs at different relative phases (a lucky
        interleaving of identical jobs would otherwise never collide)."""
        wire = self.wire_factor(spec)
        buckets = [[b * wire for b in self.buckets(r)] for r in jobs]
        per_iter = [sum(b) for b in buckets]
        scale = max(1.0, max(per_iter) / self.hop_bytes) if self.backend == "packet" else 1.0
        fixed = [0.0 if isinstance(r, _Stub) else self.alone_packed(r, spec)[1] for r in jobs]
        phases = 1 if len(jobs) == 1 or self.offsets == "actual" else self.phases
        total = [0.0] * len(jobs)
        for k in range(phases):
            for i, t in enumerate(self._replay(jobs, spec, buckets, fixed, scale, k)):
                total[i] += t / phases
        return total

    def _replay(self, jobs, spec, buckets, fixed, scale, k):
        used = sorted({s for r in jobs for s in r.servers})
        topo, hosts = spec.fabric(used)
        net = self._network(topo, spec, used, scale)
        slot = {s: 0 for s in used}
        runs, window = [], [None]
        wire = self.wire_factor(spec)

        def ps(seconds):
            return int(round(seconds / scale * S))

        for i, r in enumerate(jobs):
            gpus = []
            for s in (r.servers if self.ring_of(spec) == "rank" else sorted(r.servers, key=used.index)):
                gpus.append(hosts[(s, slot[s])])
                slot[s] += 1
            n = len(gpus)
            rate = self.sender_Bps(r)          # payload B/s, unchanged by the time scaling
            pace = None if rate is None else S / (rate * wire)      # ps per wire byte
            conns = [net.connect(gpus[j], gpus[(j + 1) % n]) for j in range(n)]
            comp = self.compute_s(r)
            steps = 2 * (n - 1) if self.collective == "ring" else 1
            runs.append(_JobReplay(net, conns, [max(steps, int(round(b / scale))) for b in buckets[i]],
                                   ps(comp * (1 - BACKWARD_SHARE)), ps(comp * BACKWARD_SHARE), ps(fixed[i]),
                                   self.overlaps(), self.iterations, runs, window, pace, steps))
        for i, run in enumerate(runs):
            # "spread": job i starts at phase i (k + 1) phi of its iteration: replay k spreads the relative phases of
            # every pair over the period; "actual": the job is phase_slot / PHASE_SLOTS into its iteration, so its
            # next one starts after the rest of it
            tau0 = jobs[i].profile.iteration_s / scale * S
            if self.offsets == "actual":
                at = ((PHASE_SLOTS - self.phase_slot(jobs[i])) % PHASE_SLOTS) / PHASE_SLOTS
            else:
                at = (i * (k + 1) * _PHI) % 1.0
            net.schedule(int(at * tau0), run.start_iteration)
        net.run()
        self.events += net.stats.get("events", 0)
        return [run.mean_iteration_ps() * scale / S for run in runs]


def _rate_bytes(r):
    p = r.profile
    return p.volume_mbps / r.gpus * max(0.0, p.iteration_s - compute_only_s(r)) * 1e6


def _gradient_bytes(r):
    return 2.0 * (r.gpus - 1) / r.gpus * r.entry.grad_mb * 1e6


# the volume sources (see the module's text): the bytes each worker sends to its ring successor per iteration,
# whether its buckets may overlap the backward pass, and whether the replayed compute is compute_only_s (the
# sources whose communication is the profile's iteration beyond that compute)
VolumeSource = namedtuple("VolumeSource", "bytes overlaps compute_only")
VOLUMES = {
    "rate": VolumeSource(_rate_bytes, False, True),
    "gradient": VolumeSource(_gradient_bytes, True, False),
    "profile": VolumeSource(lambda r: r.profile.volume_mbps / r.gpus * r.profile.network_s * 1e6, True, False),
    "ring": VolumeSource(lambda r: min(_gradient_bytes(r), _rate_bytes(r)), False, True),
    "rate-ddp": VolumeSource(_rate_bytes, True, True),
}
VOLUME_SOURCES = tuple(VOLUMES)
# the transports' timer floors (Config, us) the time scaling divides; each timer is at least a multiple of the
# RTT, which the scaling leaves (the kernel's fixed `rto` is not scaled: below the RTT it would fire spuriously)
TIMEOUTS = ("tcp_pto_min", "tcp_rto_min")
SENDERS = ("profile", "transport", "rate")
# how a bucket's all-reduce goes on the connections: ``flows``, each worker's whole share as one paced message to its
# successor, the connections independent; ``ring``, NCCL's ring: 2 (N - 1) steps, a worker sending step s + 1 only once
# step s from its predecessor has arrived (so the slowest link holds every worker back, step by step)
COLLECTIVES = ("flows", "ring")
# where the replay starts each job in its iteration: ``spread``, ``phases`` replays at relative phases spread over the
# period (golden-ratio steps), averaged; ``actual``, one replay from the jobs' positions in their current iterations
# (from their progress when the set of running jobs changed), in 1 / PHASE_SLOTS of an iteration
OFFSETS = ("spread", "actual")
PHASE_SLOTS = 16


def compute_only_s(r):
    """Compute time of one iteration without communication: the profile's
    compute time, or the one-worker profile's (which communicates nothing) if
    shorter.  A multi-worker profile's "computing time" can hold the part of
    the communication that overlaps it (BERT: 0.20 s on one GPU, 2.23 s with
    8 workers of the same per-worker batch)."""
    one = r.entry.profiles.get(1)
    comp = r.profile.compute_s
    return min(comp, one.compute_s) if one is not None else comp


def sync_bytes(r, source="gradient"):
    """Bytes each worker sends to its ring successor per iteration.
    ``rate``: the worker's rate as MoSim counts it (V_net / N, MB/s) over the
    iteration's communication time, the profiled iteration less
    :func:`compute_only_s`; ``gradient``: a ring all-reduce of the model's
    gradient, 2 (N - 1) / N x grad_mb; ``profile``: MoSim's per-worker demand
    times the profiled networking time, V_net / N x T_net; ``ring``: the
    ``gradient`` bytes, at most the ``rate`` ones."""
    return VOLUMES[source].bytes(r)


def measured_rate_Bps(r):
    """The worker's measured rate c = V_net / N (payload B/s), or None when
    the profile shows none (the bytes then go all at once)."""
    c = r.profile.volume_mbps / r.gpus * 1e6 if r.gpus > 0 else 0.0
    return c if c > 0 else None


class _JobReplay:
    """One job's iterations on the fabric: forward (a pause), backward (a pause
    during which the buckets become ready), the buckets' ring messages one
    bucket after another, the fixed pause, repeat."""

    def __init__(self, net, conns, buckets, fwd_ps, bwd_ps, fixed_ps, overlap, iterations, peers, window,
                 pace=None, steps=1):
        self.net, self.conns, self.buckets = net, conns, buckets
        self.steps = steps          # ring steps per bucket (1: the connections carry it independently)
        self.pace = pace            # ps per byte the worker hands its connection (None: all at once)
        self.fwd_ps, self.bwd_ps, self.fixed_ps, self.overlap = fwd_ps, bwd_ps, fixed_ps, overlap
        total = float(sum(buckets))
        acc, self.ready_at = 0.0, []
        for b in buckets:           # the gradient is produced at a uniform rate
            acc += b
            self.ready_at.append(int(round(bwd_ps * acc / total)) if overlap else bwd_ps)
        self.target = iterations + 1          # one warm-up iteration
        self.peers = peers
        self.done_iters = 0
        self.durations, self.ends = [], []
        self.window = window            # [time every job had done its iterations] (shared by the jobs)

    def all_done(self):
        return all(p.done_iters >= p.target for p in self.peers)

    def start_iteration(self):
        if self.done_iters >= self.target and self.all_done():
            return
        self.t0 = self.net.now
        self.net.schedule(self.fwd_ps, self._backward)

    def _backward(self):
        self.ready, self.next, self.busy, self.bwd_done = 0, 0, False, False
        self.net.schedule(self.bwd_ps, self._backward_done)
        for i, t in enumerate(self.ready_at):
            self.net.schedule(t, self._bucket_ready)

    def _backward_done(self):
        self.bwd_done = True
        self._maybe_end()

    def _bucket_ready(self):
        self.ready += 1
        if not self.busy:
            self._send()

    def _send(self):
        if self.next >= self.ready:
            self.busy = False
            self._maybe_end()
            return
        self.busy = True
        b = self.buckets[self.next]
        self.next += 1
        if self.steps > 1:
            self._ring_start(b)
            return
        if self.pace is None:
            self.left = len(self.conns)
            for c in self.conns:
                self.net.post(c, b, self._one_done)
            return
        # the worker produces the message at its own rate: CHUNKS pieces, each
        # queued on the connection once the worker has produced all of it
        k = max(1, min(CHUNKS, b))
        self.left = len(self.conns) * k
        for j in range(k):
            piece = b * (j + 1) // k - b * j // k
            self.net.schedule(int(round(b * (j + 1) // k * self.pace)), lambda piece=piece: self._post_all(piece))

    def _post_all(self, piece):
        for c in self.conns:
            self.net.post(c, piece, self._one_done)

    def _one_done(self, _msg):
        self.left -= 1
        if self.left == 0:
            self._send()

    # -- the ring: worker j sends step s to worker j + 1 once step s - 1 from worker j - 1 has arrived
    def _ring_start(self, b):
        n = len(self.conns)
        # step s of worker j carries bytes [b s / steps, b (s + 1) / steps) of its share b
        self.step_bytes = [b * (s + 1) // self.steps - b * s // self.steps for s in range(self.steps)]
        self.got = [0] * n              # steps worker j has received from its predecessor
        self.sent = [0] * n             # steps worker j has started sending
        self.free_at = [self.net.now] * n       # when worker j's producer is free (pacing)
        self.arrived = 0                # (worker, step) receptions of this bucket
        for j in range(n):
            self._ring_step(j)

    def _ring_step(self, j):
        """Worker j starts its next step: all of it at once, or paced in pieces
        (``CHUNKS`` per bucket), each posted once produced."""
        s = self.sent[j]
        self.sent[j] += 1
        q = self.step_bytes[s]
        c = self.conns[j]
        last = lambda _m, j=j: self._ring_arrived((j + 1) % len(self.conns))
        if self.pace is None:
            self.net.post(c, q, None, last)
            return
        k = max(1, min(CHUNKS // self.steps, q))
        start = max(self.net.now, self.free_at[j])
        self.free_at[j] = start + int(round(q * self.pace))
        for i in range(k):
            piece = q * (i + 1) // k - q * i // k
            at = start + int(round(q * (i + 1) // k * self.pace)) - self.net.now
            self.net.schedule(at, lambda c=c, piece=piece, cb=(last if i == k - 1 else None): self.net.post(
                c, piece, None, cb))

    def _ring_arrived(self, j):
        """Step ``got[j]`` reached worker j: it may send its next step."""
        self.got[j] += 1
        self.arrived += 1
        if self.got[j] < self.steps:
            self._ring_step(j)
        if self.arrived == self.steps * len(self.conns):
            self._send()

    def _maybe_end(self):
        if self.bwd_done and not self.busy and self.next == len(self.buckets):
            self.bwd_done = False           # once
            self.net.schedule(self.fixed_ps, self._end)

    def _end(self):
        self.durations.append(self.net.now - self.t0)
        self.ends.append(self.net.now)
        self.done_iters += 1
        if self.window[0] is None and self.all_done():
            self.window[0] = self.net.now
        self.start_iteration()

    def mean_iteration_ps(self):
        """Mean of the iterations after the warm-up one that ended while every
        job was still running (the window closes when the last job completes
        its ``iterations``): a short job's mean covers the long job's whole
        measured period, not only its first iterations."""
        close = self.window[0]
        m = [d for d, e in zip(self.durations[1:], self.ends[1:]) if close is not None and e <= close]
        m = m or self.durations[1:] or self.durations
        return sum(m) / len(m)


class _Stub:
    """A job moved to another placement (for the packed-alone reference)."""

    def __init__(self, r, servers):
        self.key = ("alone", r.key)
        self.model, self.gpus, self.entry, self.profile = r.model, r.gpus, r.entry, r.profile
        self.servers = list(servers)
        self.loading = False


def _groups(jobs):
    """Connected components of jobs sharing a server."""
    parent = list(range(len(jobs)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner = {}
    for i, r in enumerate(jobs):
        for s in set(r.servers):
            if s in owner:
                parent[find(i)] = find(owner[s])
            else:
                owner[s] = i
    comps = {}
    for i, r in enumerate(jobs):
        comps.setdefault(find(i), []).append(r)
    return list(comps.values())
