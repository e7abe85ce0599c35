"""MoSim's pairwise contention experiment (Sec. III-C): two 8-GPU jobs across two
servers, each with 4 workers on each server; the iteration-time change of job A
when co-running with job B is T_pair(A, B) / T_solo(A), both on that placement.
With a spec ``host`` the jobs' GPU slots decide which PCIe switches and sockets
they share (:mod:`wormhole.cluster.host`): ``slots="blocked"`` gives job A the
first ``per_server`` slots of each server and B the next (as a device plugin
handing out the lowest free devices would), ``"interleaved"`` alternates them
(every switch shared: the most host contention the placement allows).

``ranks`` lays the jobs' ranks (the pod index, which orders an NCCL ring when
the contention model follows the rank order, ``ring="rank"``) over the two
servers: ``"blocked"`` (ranks 0 .. per_server - 1 on server 0, as the
block-by-server ring MoSim assumes) or ``"alternate"`` (rank r on server r mod
2: what Kubernetes' LeastAllocated scoring gives when it places an 8-pod job
one pod at a time on two equally free servers, ties to the lower index; every
ring link then crosses the servers).  With the default ``ring="server"`` the
model orders each ring server by server, and the two layouts are the same."""
from .host import with_host
from .sim import Running

SLOTS = ("blocked", "interleaved")
RANKS = ("blocked", "alternate")

# the 12 models of the paper's Table I (its pairwise figure runs each against each)
PAPER_MODELS = ("whisper", "vgg16", "resnet50", "resnet44", "resnet110", "inception3", "gpt2", "googlenet",
                "densenet40_k12", "densenet100_k12", "bert", "alexnet")


def _running(key, pool, model, servers):
    n = len(servers)
    r = Running(key, None, model, n, pool.entry(model), pool.profile(model, n), 1.0, servers=list(servers))
    return r


def rank_layout(per_server, ranks="blocked"):
    """(server of each rank, the index of each rank among its server's workers)
    for a job of 2 x per_server ranks laid out by ``ranks`` (see the module)."""
    if ranks not in RANKS:
        from ..errors import WormholeError
        raise WormholeError("ranks must be one of %s" % ", ".join(RANKS), value=ranks)
    if ranks == "blocked":
        return [0] * per_server + [1] * per_server, list(range(per_server)) * 2
    return [r % 2 for r in range(2 * per_server)], [r // 2 for r in range(2 * per_server)]


def pair_change(pool, spec, contention, a, b, per_server=4, slots="blocked", ranks="blocked"):
    """T_pair(a, b) / T_solo(a) under ``contention`` (a model object)."""
    if slots not in SLOTS:
        from ..errors import WormholeError
        raise WormholeError("slots must be one of %s" % ", ".join(SLOTS), value=slots)
    place, index = rank_layout(per_server, ranks)
    mine = list(range(per_server)) if slots == "blocked" else list(range(0, 2 * per_server, 2))
    other = [g + per_server for g in range(per_server)] if slots == "blocked" else [g + 1 for g in mine]
    ja = _running("A", pool, a, place)
    ja.slots = [mine[i] for i in index]
    solo = with_host(contention.iteration_times([ja], spec), [ja], spec)["A"][0]
    jb = _running("B", pool, b, place)
    jb.slots = [other[i] for i in index]
    pair = with_host(contention.iteration_times([ja, jb], spec), [ja, jb], spec)["A"][0]
    return pair / solo


def pairwise_table(pool, spec, contention, models=None, per_server=4, rows=None, slots="blocked", ranks="blocked"):
    """{(a, b): change} for every ordered pair of pool models with 2 x per_server
    worker profiles (job A only among ``rows`` if given)."""
    n = 2 * per_server
    models = [m for m in (models or pool.names()) if n in pool.entry(m).profiles]
    first = models if rows is None else [m for m in models if m in rows]
    return {(a, b): pair_change(pool, spec, contention, a, b, per_server, slots, ranks) for a in first for b in models}
