"""Cutting a fabric into logical processes for the partitioned kernel (threads=N).

A logical process (LP) is a set of nodes; a link between two LPs is cut, and the
smallest delay of a cut link is the lookahead of the conservative rounds
(``_core/parallel.pxi``).  The cut never changes a run's outcome (the kernel's
tie key does not depend on it), only its speed, which two things set: how evenly
the LPs share the events (the threads wait at each round's end for the slowest), and
how many packets cross a cut (each is copied out and into the receiving LP's pool,
~100 ns apiece).  Every host stays with the switch of its first NIC (its NIC events
and that switch's are the bulk of the work), links without delay are never cut, and
the resulting groups are split by METIS (``pymetis``) into parts of about equal weight
across links of the least weight.  Before a run the weights are the traffic of the
flows known then (``port_load``, per port the packets they would send out of it: a
group weighs the packets its ports send and receive, a link the packets over it); with
no flows yet, a port's rate stands for its traffic (a port weighs its link's rate, a
host's twice that, a link its rate).  On the reference's paper benchmark the traffic
cut of two processes takes 8.5 M of 10.7 M crossing packets: 2 threads 6.3 s against
6.8-7.0 s.
"""
import numpy as np


HOST_WEIGHT = 2.0      # a host port's weight per unit of rate, against a switch port's 1 (weights)
WEIGHT_SCALE = 10      # METIS takes integer weights: rate units x this, rounded
LOAD_SCALE = 1 << 24   # with port_load: the groups' weights scaled to sum to about this (METIS's are 32-bit)
METIS_SEED = 1         # METIS's random choices (the same cut for the same fabric)
METIS_CUTS = 10        # cuts METIS tries, keeping the least (paper benchmark, 2 processes: 8.73 M crossing
                       # packets with 1, 8.53 M with 10; milliseconds on fabrics of thousands of groups)


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


def weights(fabric, port_load=None):
    """(groups, the groups' roots, each root's weight, {(root a, root b), a < b: weight of the
    links between them, both ways}, the unit of both), for METIS to scale into integers.  With ``port_load``
    (per port, the packets sent out of it) a group weighs the packets its ports send and
    receive (a hop's transmission ends at its port, its arrival at the peer's) and a link
    the packets over it, both ways; else a port weighs its rate in units of the fabric's
    slowest, a host's port HOST_WEIGHT times that, and a link its rate."""
    g = groups(fabric)
    roots = sorted(set(int(x) for x in g))
    weight = {r: 0.0 for r in roots}
    links = {}
    node, peer, rate = fabric.port_node, fabric.port_peer, fabric.port_rate
    if port_load is not None:
        unit = max(1.0, float(np.sum(port_load)) * 2.0 / LOAD_SCALE)
    else:
        unit = float(rate.min()) / WEIGHT_SCALE if len(rate) else 1.0
    for p in range(len(node)):
        a, b = int(node[p]), int(node[int(peer[p])])
        ra, rb = int(g[a]), int(g[b])
        if port_load is not None:
            u = float(port_load[p])
            weight[ra] += u
            weight[rb] += u
        else:
            u = float(rate[p])
            # a port's events grow with the packets over its link, so with its rate; a host's port
            # also carries its NIC's wake-ups and queue pairs (on the reference's fat.txt a host port
            # processed 66 k events per 100 Gb/s, a switch port 41 k)
            weight[ra] += u * (1.0 if fabric.is_switch[a] else HOST_WEIGHT)
        if ra != rb:
            key = (ra, rb) if ra < rb else (rb, ra)
            links[key] = links.get(key, 0.0) + u
    return g, roots, weight, links, unit


def _fill_empty(part, k, vw):
    """METIS may leave parts empty (small graphs, a few heavy groups among many light ones):
    while one is, the part with the most groups gives its lightest to it, so that k parts
    are used (k is at most the groups' count)."""
    while len(set(part)) < k:
        count = {}
        for q in part:
            count[q] = count.get(q, 0) + 1
        donor = max(sorted(count), key=lambda q: count[q])
        if count[donor] < 2:
            break
        i = min((i for i in range(len(part)) if part[i] == donor), key=lambda i: (vw[i], i))
        part[i] = min(q for q in range(k) if q not in count)
    return part


def cut(fabric, n_lp, port_load=None):
    """Per node, its LP (0 .. k-1, k <= n_lp: no more LPs than groups; numbered in the order
    of their first node); ``port_load``: see weights (None: by rate)."""
    import pymetis
    g, roots, weight, links, unit = weights(fabric, port_load)
    k = max(1, min(int(n_lp), len(roots)))
    if k == 1:
        return np.zeros(len(g), dtype=np.int32)
    idx = {r: i for i, r in enumerate(roots)}
    adj = [dict() for _ in roots]
    for (ra, rb), u in links.items():               # (METIS wants each edge from both ends)
        adj[idx[ra]][idx[rb]] = u
        adj[idx[rb]][idx[ra]] = u
    xadj, adjncy, ew = [0], [], []
    for i in range(len(roots)):
        for j in sorted(adj[i]):
            adjncy.append(j)
            ew.append(max(1, int(round(adj[i][j] / unit))))
        xadj.append(len(adjncy))
    vw = [max(1, int(round(weight[r] / unit))) for r in roots]
    part = pymetis.part_graph(k, adjacency=pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy), vweights=vw,
                              eweights=ew, recursive=False,
                              options=pymetis.Options(seed=METIS_SEED, ncuts=METIS_CUTS))[1]
    part = _fill_empty(list(part), k, vw)
    number = {}                                     # parts renumbered in the order of their first group
    for q in part:
        number.setdefault(int(q), len(number))
    return np.array([number[int(part[idx[int(x)]])] for x in g], dtype=np.int32)
