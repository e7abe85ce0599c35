"""Fabric contention: the co-running jobs' iterations replayed on the cluster's
network with the flow backend or the packet kernel.

A *scenario* is a group of training jobs whose workers span servers and that
share at least one server (jobs on disjoint server sets cannot meet on the
non-blocking core; jobs inside one server never touch a NIC).  Each job runs
its iterations on the fabric: compute (T_comp, a pause), the fixed part of its
synchronisation (see below, a pause), then one ring all-reduce: every worker
sends 2(N-1)/N x grad bytes to its ring successor over a persistent
connection, the ring ordered server by server as NCCL orders it.  Jobs start at
staggered phases; after one warm-up iteration, ``iterations`` iterations of
every job are measured and the mean duration of its all-reduce, T_fab, kept.

The profile's T_net was measured with the job alone on one server; the job's
iteration time in the scenario is

    tau = T_comp + T_net + (T_fab(scenario) - T_fab(job alone, packed)),

so a job alone on one server runs exactly at its profile, and what the fabric
adds is the extra transfer time of crossing NICs and sharing them.  The fixed
part paused before the transfer is max(0, T_net - T_fab(alone, packed)).

The packet backend replays a time-scaled copy (bytes and pauses divided by the
same factor, rates unchanged, so that the largest ring message is about
``hop_bytes``): link shares and overlaps keep their proportions while the
packet count stays bounded.  Results are memoized by placement pattern: the
canonical form of the scenario (servers relabeled in the order of what they
host), so a recurring co-location is simulated once.
"""

from ..config import Config
from ..network import Network
from ..units import S
from .contention import ContentionError
from .policies import bin_packing

_PHI = 0.6180339887498949


def scenario_key(group, spec):
    """Canonical form of a scenario: (jobs, servers), and the job order.

    Servers are relabeled by their signature (hardware and the (model, workers,
    count) of what they host); each job becomes (model, workers, counts per
    relabeled server).  Equal keys mean the same scenario up to relabeling."""
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
        desc.append(((r.model, r.gpus, tuple(counts)), r))
    desc.sort(key=lambda x: x[0])
    key = (tuple(d for d, _ in desc), tuple(sig[s][0] for s in order))
    return key, [r for _, r in desc]


class FabricContention:
    def __init__(self, backend, iterations=5, hop_bytes=1 << 20, memo=None, volume="profile", phases=4):
        if volume not in VOLUME_SOURCES:
            raise ContentionError("volume source must be one of %s" % ", ".join(VOLUME_SOURCES), value=volume)
        self.volume = volume
        self.name = backend
        self.backend = backend
        self.iterations = int(iterations)
        self.phases = int(phases)
        self.hop_bytes = int(hop_bytes)
        self.memo = {} if memo is None else memo
        self._nic_scale = {}        # spec -> NIC line-rate multiplier (packet)
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
                extra = tfab[r.key] - self.alone_packed(r, spec)
                p = r.profile
                tau = p.iteration_s + extra
                out[r.key] = (tau, (tau - p.compute_s) / p.network_s if p.network_s > 0 else 1.0)
        return out

    def alone_packed(self, r, spec):
        """T_fab of the job alone, placed as the profile was (fewest servers)."""
        free = [s.gpus for s in spec.servers]
        servers = bin_packing(r.gpus, free, free)
        if servers is None:
            servers = r.servers
        alone = _Stub(r, servers)
        return self.scenario([alone], spec)[alone.key]

    def scenario(self, group, spec):
        """{job key: mean all-reduce time (s)} of the group replayed together."""
        key, ordered = scenario_key(group, spec)
        res = self.memo.get(key)
        if res is None:
            res = self._simulate(ordered, spec)
            self.memo[key] = res
            self.simulated += 1
        else:
            self.hits += 1
        return {r.key: res[i] for i, r in enumerate(ordered)}

    # ------------------------------------------------------------ replay
    def _network(self, topo, spec, used):
        if self.backend == "packet":
            nic_gbps = max(1, round(max(spec.servers[s].intra_Bps for s in used) * 8 / 1e9))
            # ECN thresholds scale with the link rate (the preset's tables only
            # list the reference's standard rates)
            cfg = Config.preset("hpcc", nic_gbps, kmin_map=None, kmax_map=None, pmax_map=None)
        else:
            cfg = Config(flow_model="maxmin")
        return Network(topo, cfg, backend=self.backend)

    def nic_scale(self, spec):
        """The spec's ``nic`` is the goodput of one transfer (MoSim's 463 MB/s for
        a 5 Gbps link).  Packets carry headers (both backends count them) and
        HPCC keeps utilisation under its target, so the fabric's NIC line rate is
        raised until one ring step across it achieves ``nic`` (measured once per
        spec)."""
        if len(spec.servers) < 2:
            return 1.0
        if id(spec) not in self._nic_scale:
            scale = 1.0
            nic = min(spec.servers[0].nic_Bps, spec.servers[1].nic_Bps)
            for _ in range(3):
                topo, hosts = spec.fabric([0, 1], scale)
                net = self._network(topo, spec, [0, 1])
                a, b = hosts[(0, 0)], hosts[(1, 0)]
                conns = (net.connect(a, b), net.connect(b, a))
                for c in conns:           # a first message opens the connections
                    net.post(c, self.hop_bytes)
                net.run()
                t0 = net.now
                for c in conns:           # then one ring step of a 1+1 job, as replayed
                    net.post(c, self.hop_bytes)
                net.run()
                scale *= nic / (self.hop_bytes / ((net.now - t0) / S))
            self._nic_scale[id(spec)] = (spec, scale)
        return self._nic_scale[id(spec)][1]

    def _simulate(self, jobs, spec):
        """Mean all-reduce time of each job (s), averaged over ``phases`` replays
        that start the jobs at different relative phases (a lucky interleaving
        of identical jobs would otherwise never collide)."""
        hop = [sync_bytes(r, self.volume) for r in jobs]
        scale = max(1.0, max(hop) / self.hop_bytes) if self.backend == "packet" else 1.0
        fixed = [0 if isinstance(r, _Stub) else
                 int(round(max(0.0, r.profile.network_s - self.alone_packed(r, spec)) / scale * S)) for r in jobs]
        phases = 1 if len(jobs) == 1 else self.phases
        total = [0.0] * len(jobs)
        for k in range(phases):
            for i, t in enumerate(self._replay(jobs, spec, hop, fixed, scale, k)):
                total[i] += t / phases
        return total

    def _replay(self, jobs, spec, hop, fixed, scale, k):
        used = sorted({s for r in jobs for s in r.servers})
        topo, hosts = spec.fabric(used, self.nic_scale(spec))
        net = self._network(topo, spec, used)
        slot = {s: 0 for s in used}
        runs = []
        for i, r in enumerate(jobs):
            gpus = []
            for s in sorted(r.servers, key=used.index):
                gpus.append(hosts[(s, slot[s])])
                slot[s] += 1
            n = len(gpus)
            conns = [net.connect(gpus[j], gpus[(j + 1) % n]) for j in range(n)]
            runs.append(_JobReplay(net, conns, max(1, int(round(hop[i] / scale))),
                                   int(round(r.profile.compute_s / scale * S)) + fixed[i], self.iterations, runs))
        for i, run in enumerate(runs):
            # job i starts at phase i (k + 1) phi of its iteration: replay k
            # spreads the relative phases of every pair over the period
            tau0 = jobs[i].profile.iteration_s / scale * S
            net.schedule(int(((i * (k + 1) * _PHI) % 1.0) * tau0), run.start_iteration)
        net.run()
        self.events += net.stats.get("events", 0)
        return [run.mean_comm_ps() * scale / S for run in runs]


VOLUME_SOURCES = ("profile", "gradient")


def sync_bytes(r, source="profile"):
    """Bytes each worker sends to its ring successor per iteration.  ``profile``:
    MoSim's per-worker demand times the profiled networking time, V_net / N x
    T_net (what the worker moved in the profiling run); ``gradient``: a ring
    all-reduce of the model's gradient, 2 (N - 1) / N x grad_mb."""
    if source == "gradient":
        return 2.0 * (r.gpus - 1) / r.gpus * r.entry.grad_mb * 1e6
    p = r.profile
    return p.volume_mbps / r.gpus * p.network_s * 1e6


class _JobReplay:
    """One job's iterations on the fabric: pause (compute and the fixed part of
    the synchronisation), ring messages, repeat."""

    def __init__(self, net, conns, hop_bytes, pause_ps, iterations, peers):
        self.net, self.conns, self.hop, self.pause_ps = net, conns, hop_bytes, pause_ps
        self.target = iterations + 1          # one warm-up iteration
        self.peers = peers
        self.done_iters = 0
        self.comm = []

    def all_done(self):
        return all(p.done_iters >= p.target for p in self.peers)

    def start_iteration(self):
        if self.done_iters >= self.target and self.all_done():
            return
        self.net.schedule(self.pause_ps, self._send)

    def _send(self):
        self.t0 = self.net.now
        self.left = len(self.conns)
        for c in self.conns:
            self.net.post(c, self.hop, self._one_done)

    def _one_done(self, _msg):
        self.left -= 1
        if self.left == 0:
            self.comm.append(self.net.now - self.t0)
            self.done_iters += 1
            self.start_iteration()

    def mean_comm_ps(self):
        m = self.comm[1:self.target] if len(self.comm) > 1 else self.comm
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
