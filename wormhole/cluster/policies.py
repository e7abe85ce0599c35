"""Placement policies.  A policy is a callable ``place(gpus, free, capacity)``
that returns one server index per worker, or None if the job does not fit now;
``free`` and ``capacity`` are lists of GPUs per server.  Jobs wait in one FIFO
queue (the head blocks the rest, as the testbed's scheduler did); a policy only
chooses where.  User policies plug in as ``module:callable``.

Ties: Kubernetes' scheduler picks uniformly at random among the nodes with the
highest score (kube-scheduler's selectHost); the built-in policies take the
lowest server index unless given a tie seed (``get_policy(name, tie_seed)``),
then they draw among the tied servers as the scheduler does, one draw per
worker (pod) with a tie.
"""
import importlib
import random
from fractions import Fraction

from ..errors import WormholeError


class PolicyError(WormholeError):
    """Unknown policy or a policy that returned an impossible placement."""


def _score_place(gpus, free, capacity, prefer_full, rng=None):
    """Kubernetes-style scoring, one worker (pod) at a time: MostAllocated picks the
    server with the largest allocated fraction that still has a free GPU,
    LeastAllocated the smallest; ties go to the lower index, or with ``rng``
    (a random.Random) to a server drawn among the tied ones."""
    if sum(free) < gpus:
        return None
    free = list(free)
    out = []
    for _ in range(gpus):
        tied, best_key = [], None
        for i, f in enumerate(free):
            if f <= 0:
                continue
            used = Fraction(capacity[i] - f, capacity[i])     # the allocated fraction, exact (ties compare equal)
            key = -used if prefer_full else used
            if best_key is None or key < best_key:
                tied, best_key = [i], key
            elif key == best_key:
                tied.append(i)
        best = tied[0] if rng is None or len(tied) == 1 else tied[rng.randrange(len(tied))]
        free[best] -= 1
        out.append(best)
    return out


def bin_packing(gpus, free, capacity, rng=None):
    """MostAllocated: fill the fullest servers first (fewest servers per job)."""
    return _score_place(gpus, free, capacity, True, rng)


def load_balancing(gpus, free, capacity, rng=None):
    """LeastAllocated: spread workers over the emptiest servers."""
    return _score_place(gpus, free, capacity, False, rng)


POLICIES = {"bin-packing": bin_packing, "load-balancing": load_balancing}


def get_policy(name, tie_seed=None):
    """A policy by name (or a callable, returned as it is); ``tie_seed``
    (an int) makes a built-in policy break ties at random as Kubernetes does,
    from its own generator seeded with it."""
    if callable(name):
        return name
    if name in POLICIES:
        if tie_seed is None:
            return POLICIES[name]
        if isinstance(tie_seed, bool) or not isinstance(tie_seed, int):
            raise PolicyError("the tie seed must be an integer", value=tie_seed)
        fn, rng = POLICIES[name], random.Random(tie_seed)
        return lambda gpus, free, capacity: fn(gpus, free, capacity, rng)
    if ":" in str(name):
        mod, attr = str(name).split(":", 1)
        try:
            fn = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise PolicyError("cannot load policy %s: %s" % (name, e), value=name)
        if not callable(fn):
            raise PolicyError("policy %s is not callable" % name, value=name)
        return fn
    raise PolicyError("unknown policy %r (%s, or module:callable)" % (name, ", ".join(POLICIES)), value=name)


def checked_place(policy, gpus, free, capacity):
    out = policy(gpus, list(free), list(capacity))
    if out is None:
        return None
    out = list(out)
    used = [0] * len(free)
    for s in out:
        if not isinstance(s, int) or not 0 <= s < len(free):
            raise PolicyError("policy placed a worker on a server that does not exist", value=s)
        used[s] += 1
    if len(out) != gpus or any(u > f for u, f in zip(used, free)):
        raise PolicyError("policy returned an impossible placement for %d GPUs" % gpus, value=out)
    return out
