"""The cluster simulation (MoSim Section IV-B): ARRIVE and COMPLETE events (and
the end of each job's loading phase), a FIFO queue, a placement policy, and a
contention model that sets every running job's iteration time whenever the set
of running jobs changes.  Progress is advanced event to event (Eq. 3-5):
between two events each job's iteration time is constant, so it completes
(t - t_last) / tau iterations."""
from collections import deque
from dataclasses import dataclass, field

from ..errors import WormholeError
from .host import assign_slots, with_host
from .policies import checked_place, get_policy
from .trace import TraceError


@dataclass
class Running:
    key: str
    job: object
    model: str
    gpus: int
    entry: object
    profile: object
    iterations: float          # W_J
    servers: list = None       # server of each worker
    start: float = 0.0
    load_end: float = 0.0
    remaining: float = 0.0
    tau: float = 0.0
    factor: float = 1.0
    last: float = 0.0
    end: float = None
    factor_time: float = 0.0   # integral of the factor over training (for the mean)
    load_s: float = 0.0        # loading phase before the first iteration
    drawn: bool = False        # the model was drawn from the pool (the trace names none)
    slots: list = None         # GPU slot of each worker on its server (the host model's PCIe switch / socket)

    @property
    def loading(self):
        return self.last < self.load_end

    def finish_time(self):
        if self.loading:
            return self.load_end
        return self.last + self.remaining * self.tau


@dataclass
class JobResult:
    job_id: str
    model: str
    gpus: int
    placement: str
    arrival: float
    start: float
    end: float
    standalone: float          # loading + W x profiled iteration
    mean_factor: float
    model_source: str = "trace"  # "trace", or "drawn" when the trace has no model column

    @property
    def wait(self):
        return self.start - self.arrival

    @property
    def training(self):
        return self.end - self.start

    @property
    def jct(self):
        return self.end - self.arrival


@dataclass
class ClusterResult:
    jobs: list
    policy: str
    contention: str
    stats: dict = field(default_factory=dict)


LOADING = ("within", "extra", "none")


def prepare(jobs, pool, spec, default_model_rng=None, loading="within"):
    """Trace jobs -> Running records (model, profile, W_J).

    A model the pool lacks is a PoolError naming the trace file, line and
    model, never replaced; ``default_model_rng`` draws a model only for jobs
    whose trace has no model column (``Job.model == ""``).

    W_J = d_J / T_iter (MoSim Sec. IV-A2) when the trace gives no iteration
    count.  ``loading`` places the profile's loading time: ``within`` the trace
    duration (W_J = (d_J - T_load) / T_iter: a job alone takes d_J, as the
    testbed measured; the loading time is capped at half of d_J so that a short
    job still trains), ``extra`` before it (MoSim's simulator: alone it takes
    T_load + d_J), or ``none``."""
    out = []
    if loading not in LOADING:
        raise WormholeError("loading must be one of %s" % ", ".join(LOADING), value=loading)
    for j in jobs:
        where = (j.source, j.line)
        model = j.model
        drawn = model == ""
        if drawn:
            if default_model_rng is None:
                raise TraceError("job %s has no model (the trace has no model column) and no generator was "
                                 "given to draw one from the pool" % j.job_id, j.source, j.line)
            model = pool.names()[default_model_rng.randrange(len(pool.names()))]
        model = pool.canonical(model)
        entry = pool.entry(model, where)
        prof = pool.profile(model, j.gpus, where)
        if j.gpus > spec.n_gpus:
            raise TraceError("job %s needs %d GPUs, the cluster has %d" % (j.job_id, j.gpus, spec.n_gpus),
                             j.source, j.line, j.gpus)
        load = prof.loading_s if loading != "none" else 0.0
        if j.iterations is not None:
            iters = j.iterations
        elif loading == "within":
            load = min(load, 0.5 * j.duration)
            iters = (j.duration - load) / prof.iteration_s
        else:
            iters = j.duration / prof.iteration_s
        out.append(Running(j.job_id, j, model, j.gpus, entry, prof, iters, load_s=load, drawn=drawn))
    return out


class ClusterSimulator:
    def __init__(self, jobs, pool, spec, contention, policy=None, loading="within", model_rng=None, tie_seed=None):
        self.spec = spec
        self.policy_name = policy or spec.policy
        self.policy = get_policy(self.policy_name, tie_seed)
        self.contention = contention
        self.pending = prepare(jobs, pool, spec, model_rng, loading)
        self.recomputes = 0

    def run(self):
        spec = self.spec
        cap = [s.gpus for s in spec.servers]
        free = list(cap)
        free_slots = {i: list(range(c)) for i, c in enumerate(cap)}
        arrivals = deque(self.pending)
        queue, running, done = deque(), [], []
        t = 0.0
        while arrivals or queue or running:
            nxt = [arrivals[0].job.arrival] if arrivals else []
            nxt += [r.finish_time() for r in running]
            if not nxt:
                head = queue[0]
                raise WormholeError("job %s (%d GPUs) can never be placed on %d free GPUs"
                                    % (head.key, head.gpus, sum(free)), value=head.gpus)
            t = max(t, min(nxt))
            for r in running:
                self._advance(r, t)
            changed = False
            still = []
            for r in running:
                # done when its iterations are, or when its finish time is not
                # after now (far from 0, float time cannot resolve what is left)
                if not r.loading and (r.remaining <= 1e-9 * max(1.0, r.iterations) or r.finish_time() <= t):
                    r.end = t
                    for s in r.servers:
                        free[s] += 1
                    for s, g in zip(r.servers, r.slots):
                        free_slots[s].append(g)
                        free_slots[s].sort()
                    done.append(r)
                    changed = True
                else:
                    if r.last == r.load_end and r.load_end > r.start:
                        changed = True      # loading just ended: it starts sending
                    still.append(r)
            running = still
            while arrivals and arrivals[0].job.arrival <= t:
                queue.append(arrivals.popleft())
            while queue:
                head = queue[0]
                place = checked_place(self.policy, head.gpus, free, cap)
                if place is None:
                    break
                queue.popleft()
                for s in place:
                    free[s] -= 1
                head.servers = place
                head.slots = assign_slots(free_slots, place)
                head.start = head.last = t
                head.load_end = t + head.load_s
                head.remaining = head.iterations
                running.append(head)
                changed = True
            if changed and running:
                self._recompute(running)
        results = [JobResult(r.key, r.model, r.gpus, _placement(r.servers), r.job.arrival, r.start, r.end,
                             r.load_s + r.iterations * r.profile.iteration_s,
                             r.factor_time / max(1e-12, r.end - r.load_end) if r.end > r.load_end else 1.0,
                             "drawn" if r.drawn else "trace")
                   for r in done]
        results.sort(key=lambda x: (x.arrival, x.start, x.job_id))
        return ClusterResult(results, self.policy_name, self.contention.name,
                             {"recomputes": self.recomputes, "models_drawn": sum(r.drawn for r in done)})

    def _advance(self, r, t):
        if t <= r.last:
            return
        if r.last < r.load_end:
            r.last = min(t, r.load_end)
            if t <= r.last:
                return
        dt = t - r.last
        r.remaining = max(0.0, r.remaining - dt / r.tau)
        r.factor_time += dt * r.factor
        r.last = t

    def _recompute(self, running):
        self.recomputes += 1
        times = with_host(self.contention.iteration_times(running, self.spec), running, self.spec)
        for r in running:
            r.tau, r.factor = times[r.key]


def _placement(servers):
    counts = {}
    for s in servers:
        counts[s] = counts.get(s, 0) + 1
    return " ".join("%d:%d" % (s, c) for s, c in sorted(counts.items()))
