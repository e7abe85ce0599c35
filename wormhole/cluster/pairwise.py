"""MoSim's pairwise contention experiment (Sec. III-C): two 8-GPU jobs across two
servers, each with 4 workers on each server; the iteration-time change of job A
when co-running with job B is T_pair(A, B) / T_solo(A), both on that placement."""
from .sim import Running

# the 12 models of the paper's Table I (its pairwise figure runs each against each)
PAPER_MODELS = ("whisper", "vgg16", "resnet50", "resnet44", "resnet110", "inception3", "gpt2", "googlenet",
                "densenet40_k12", "densenet100_k12", "bert", "alexnet")


def _running(key, pool, model, servers):
    n = len(servers)
    r = Running(key, None, model, n, pool.entry(model), pool.profile(model, n), 1.0, servers=list(servers))
    return r


def pair_change(pool, spec, contention, a, b, per_server=4):
    """T_pair(a, b) / T_solo(a) under ``contention`` (a model object)."""
    place = [0] * per_server + [1] * per_server
    ja = _running("A", pool, a, place)
    solo = contention.iteration_times([ja], spec)["A"][0]
    jb = _running("B", pool, b, place)
    pair = contention.iteration_times([ja, jb], spec)["A"][0]
    return pair / solo


def pairwise_table(pool, spec, contention, models=None, per_server=4, rows=None):
    """{(a, b): change} for every ordered pair of pool models with 2 x per_server
    worker profiles (job A only among ``rows`` if given)."""
    n = 2 * per_server
    models = [m for m in (models or pool.names()) if n in pool.entry(m).profiles]
    first = models if rows is None else [m for m in models if m in rows]
    return {(a, b): pair_change(pool, spec, contention, a, b, per_server) for a in first for b in models}
