"""Contention models: how co-running jobs change each job's iteration time.

Every model maps the running jobs to ``{job id: (iteration time s, factor)}``
where ``factor`` is MoSim's S_J (iteration = T_comp + T_net x S_J, Eq. 2):

- ``none``   the profiled iteration time (Tiresias, Gavel);
- ``fixed``  the whole iteration x (1 + ratio) while another job shares one of
             the job's servers (Pollux, Muri: ratio 0.1);
- ``mosim``  MoSim's Eq. 6-10: per-NIC demand of ring all-reduce, proportional
             share of the NIC, the worst server's shortfall, MIN_BW floor;
- ``flow`` / ``packet``  the co-running jobs' iterations replayed on the cluster
             fabric (see :mod:`wormhole.cluster.fabric`) with the flow backend or
             the packet kernel; results memoized by placement pattern.

A job in its loading phase sends nothing and is not counted by any model.
"""
from ..errors import ContentionError


class NoContention:
    name = "none"

    def iteration_times(self, running, spec):
        return {r.key: (r.profile.iteration_s, 1.0) for r in running}


class FixedContention:
    """A constant slowdown of co-running jobs (default 1.1 = Pollux's 10%)."""
    name = "fixed"

    def __init__(self, factor=1.1):
        if not factor >= 1.0:
            raise ContentionError("fixed contention factor must be >= 1", value=factor)
        self.factor = factor

    def iteration_times(self, running, spec):
        active = [r for r in running if not r.loading]
        users = {}
        for r in active:
            for s in set(r.servers):
                users.setdefault(s, set()).add(r.key)
        out = {}
        for r in running:
            shared = not r.loading and any(len(users[s]) > 1 for s in set(r.servers))
            f = self.factor if shared else 1.0
            out[r.key] = (r.profile.iteration_s * f, f)
        return out


def nic_demand(volume_mbps, workers, on_server):
    """MoSim Eq. 6-7: a job's demand (MB/s) on the NIC of a server where it has
    ``on_server`` of its ``workers``: 0 if all its workers are there, else the
    per-worker demand c = V/N times 2 (the two ring-boundary links), or times 1
    for a two-worker job (its ring is one link)."""
    if on_server == 0 or on_server >= workers or workers < 2:
        return 0.0
    c = volume_mbps / workers
    return c if workers == 2 else 2.0 * c


class MoSimContention:
    """MoSim's network contention model (Eq. 6-10)."""
    name = "mosim"

    def __init__(self, min_bw_mbps=10.0):
        if not min_bw_mbps > 0:
            raise ContentionError("MIN_BW must be positive", value=min_bw_mbps)
        self.min_bw = min_bw_mbps

    def factors(self, running, spec):
        active = [r for r in running if not r.loading]
        demand = {}                                   # server -> {job: MB/s}
        for r in active:
            for s in set(r.servers):
                d = nic_demand(r.profile.volume_mbps, r.gpus, r.servers.count(s))
                if d > 0:
                    demand.setdefault(s, {})[r.key] = d
        out = {r.key: 1.0 for r in running}
        for s, jobs in demand.items():
            cap = spec.goodput_Bps(s) / 1e6
            total = sum(jobs.values())
            for k, d in jobs.items():
                alloc = d * min(1.0, cap / total)                       # Eq. 8
                out[k] = max(out[k], d / max(alloc, self.min_bw))       # Eq. 9-10
        return out

    def iteration_times(self, running, spec):
        f = self.factors(running, spec)
        return {r.key: (r.profile.compute_s + r.profile.network_s * f[r.key], f[r.key]) for r in running}


def make_contention(name, pool=None, spec=None, **kw):
    """A contention model by name: none, fixed, mosim, flow, packet."""
    if name == "none":
        return NoContention()
    if name == "fixed":
        return FixedContention(kw.get("fixed_factor", 1.1))
    if name == "mosim":
        return MoSimContention(kw.get("min_bw_mbps", 10.0))
    if name in ("flow", "packet"):
        from .fabric import FabricContention
        return FabricContention(name, iterations=kw.get("fabric_iterations", 5),
                                hop_bytes=kw.get("packet_hop_bytes", 4 << 20), memo=kw.get("memo"),
                                volume=kw.get("volume", "rate"), phases=kw.get("fabric_phases", 4),
                                overlap=kw.get("overlap", True), bucket_mb=kw.get("bucket_mb", 25.0),
                                first_bucket_mb=kw.get("first_bucket_mb", 1.0), sender=kw.get("sender", "profile"),
                                ring=kw.get("ring"), collective=kw.get("collective", "flows"),
                                offsets=kw.get("offsets", "spread"))
    raise ContentionError("unknown contention model %r (none, fixed, mosim, flow, packet)" % name, value=name)


MODELS = ("none", "fixed", "mosim", "flow", "packet")
