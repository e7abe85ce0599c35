"""Cutting a fabric into logical processes for the partitioned kernel (threads=N).

A logical process (LP) is a set of nodes; a link between two LPs is cut, and the
smallest delay of a cut link is the lookahead of the conservative rounds
(``_core/parallel.pxi``).  The cut never changes a run's outcome (the kernel's
tie key does not depend on it), only its speed, which two things set: how evenly
the LPs share the events (the threads wait at each round's end for the slowest), and
how many packets cross a cut (each is copied out and into the receiving LP's pool,
~100 ns apiece).  Every host stays with the switch of its first NIC (its NIC events
and that switch's are the bulk of the work), links without delay are never cut, and
the resulting groups are split by METIS (``pymetis``): parts of about equal weight
(a port's weight grows with its link's rate, as the packets over it do) across the
fewest links (weighted by rate).
"""
import numpy as np


HOST_WEIGHT = 2.0      # a host port's weight per unit of rate, against a switch port's 1 (weights)
WEIGHT_SCALE = 10      # METIS takes integer weights: rate units x this, rounded
METIS_SEED = 1         # METIS's random choices (the same cut for the same fabric)


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
    """LPs when the configuration leaves it open (lps=0): one per thread in the sequential
    order (``exact``: each LP more adds cut packets and ranking work, and with METIS's
    cut the LPs are even enough that the threads gain little from taking them one at a
    time: on the reference's paper benchmark, 2 threads, 2 LPs ran 6.9-7.0 s, 4 LPs
    7.3-7.4 s), and eight per thread with tie_order=local (no ranking: the threads take
    them one at a time, so the load evens out)."""
    if threads <= 1:
        return 1
    return (1 if exact else 8) * threads


def weights(fabric):
    """(groups, the groups' roots, each root's weight, {(root a, root b): rate units of the
    links between them}): a port weighs its rate in units of the fabric's slowest, a host's
    port HOST_WEIGHT times that."""
    g = groups(fabric)
    roots = sorted(set(int(x) for x in g))
    weight = {r: 0.0 for r in roots}
    links = {}
    node, peer, rate = fabric.port_node, fabric.port_peer, fabric.port_rate
    unit = float(rate.min()) if len(rate) else 1.0
    for p in range(len(node)):
        a, b = int(node[p]), int(node[int(peer[p])])
        u = float(rate[p]) / unit
        # a port's events grow with the packets over its link, so with its rate; a host's port
        # also carries its NIC's wake-ups and queue pairs (on the reference's fat.txt a host port
        # processed 66 k events per 100 Gb/s, a switch port 41 k)
        weight[int(g[a])] += u * (1.0 if fabric.is_switch[a] else HOST_WEIGHT)
        ra, rb = int(g[a]), int(g[b])
        if ra != rb:
            links[(ra, rb)] = links.get((ra, rb), 0.0) + u
    return g, roots, weight, links


def cut(fabric, n_lp):
    """Per node, its LP (0 .. k-1, k <= n_lp: no more LPs than groups; numbered in the order
    of their first node)."""
    import pymetis
    g, roots, weight, links = weights(fabric)
    k = max(1, min(int(n_lp), len(roots)))
    if k == 1:
        return np.zeros(len(g), dtype=np.int32)
    idx = {r: i for i, r in enumerate(roots)}
    adj = [dict() for _ in roots]
    for (ra, rb), u in links.items():               # (both directions of a link: METIS wants both)
        adj[idx[ra]][idx[rb]] = u
    xadj, adjncy, ew = [0], [], []
    for i in range(len(roots)):
        for j in sorted(adj[i]):
            adjncy.append(j)
            ew.append(max(1, int(round(adj[i][j] * WEIGHT_SCALE))))
        xadj.append(len(adjncy))
    vw = [max(1, int(round(weight[r] * WEIGHT_SCALE))) for r in roots]
    part = pymetis.part_graph(k, adjacency=pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy), vweights=vw,
                              eweights=ew, recursive=False, options=pymetis.Options(seed=METIS_SEED))[1]
    number = {}                                     # parts renumbered by their first group (METIS may leave one empty)
    for q in part:
        number.setdefault(int(q), len(number))
    return np.array([number[int(part[idx[int(x)]])] for x in g], dtype=np.int32)
