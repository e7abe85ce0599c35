"""Cutting a fabric into logical processes for the partitioned kernel (threads=N).

A logical process (LP) is a set of nodes; a link between two LPs is cut, and the
smallest delay of a cut link is the lookahead of the conservative rounds
(``_core/parallel.pxi``).  The cut never changes a run's outcome (the kernel's
tie key does not depend on it), only its speed: every host stays with the switch
of its first NIC (its NIC events and that switch's are the bulk of the work),
links without delay are never cut, and the resulting groups are packed, in node
order (which keeps a pod's or a rail's switches together in the usual
numberings), into ``n_lp`` contiguous pieces of about equal weight.
"""
import numpy as np


def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _union(parent, a, b):
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)


def groups(fabric):
    """Per node, the smallest node id of its group: a switch with the hosts whose first
    NIC it holds, nodes joined by links of zero delay."""
    n = len(fabric.is_switch)
    parent = list(range(n))
    node, peer, delay = fabric.port_node, fabric.port_peer, fabric.port_delay
    first = {}
    for p in range(len(node)):
        a, b = int(node[p]), int(node[int(peer[p])])
        if int(delay[p]) <= 0:
            _union(parent, a, b)
        if not fabric.is_switch[a] and a not in first:
            first[a] = b
    for h, sw in first.items():
        _union(parent, h, sw)
    return np.array([_find(parent, x) for x in range(n)], dtype=np.int64)


def default_lps(fabric, threads, exact=True):
    """LPs when the configuration leaves it open (lps=0): one for one thread, else two
    per thread in the sequential order (``exact``: its ranking merges every pair of LPs at
    each round's end, a cost that grows with the count; two per thread let the load even
    out) and eight per thread with tie_order=local (no ranking: the threads take them one
    at a time, so the load evens out)."""
    if threads <= 1:
        return 1
    return (2 if exact else 8) * threads


def cut(fabric, n_lp):
    """Per node, its LP (0 .. k-1, k <= n_lp: no more LPs than groups)."""
    g = groups(fabric)
    roots = sorted(set(int(x) for x in g))
    weight = {r: 0 for r in roots}
    node = fabric.port_node
    for p in range(len(node)):
        a = int(node[p])
        weight[int(g[a])] += 1 if fabric.is_switch[a] else 4     # a host port: NIC, QPs, ACKs
    k = max(1, min(int(n_lp), len(roots)))
    total = sum(weight.values())
    lp_of_root, acc, cur = {}, 0, 0
    for i, r in enumerate(roots):
        lp_of_root[r] = cur
        acc += weight[r]
        left_groups, left_lps = len(roots) - i - 1, k - cur - 1
        if left_lps > 0 and (acc >= total * (cur + 1) / k or left_groups == left_lps):
            cur += 1
    return np.array([lp_of_root[int(x)] for x in g], dtype=np.int32)
