"""Topology builders.  Rates in bps or strings with a unit ('100Gbps'), delays in ps or strings ('1us').

Node numbering is hosts first, then switches, as the reference's own files do,
so host ids are 0..H-1."""
import math

from .errors import TopologyError
from .topology import Topology
from .units import US, as_rate, as_time, gbps


def _units(call, delay, **rates):
    """The builder's link arguments in bps and ps (numbers, or strings with a unit); None stays None."""
    out = {k: None if v is None else as_rate(v, k, call) for k, v in rates.items()}
    out["delay"] = as_time(delay, "delay", call)
    return out


def _check(cond, msg, value):
    if not cond:
        raise TopologyError(msg, value=value)


def star(n_hosts, rate=gbps(100), delay=US):
    """n hosts on one switch (incast and permutation tests)."""
    u = _units("star", delay, rate=rate)
    rate, delay = u["rate"], u["delay"]
    _check(n_hosts >= 2, "a star needs at least 2 hosts", n_hosts)
    t = Topology("star-%d" % n_hosts)
    hs = [t.add_host() for _ in range(n_hosts)]
    sw = t.add_switch("sw")
    for h in hs:
        t.add_link(h, sw, rate, delay)
    return t


def dumbbell(n_left, n_right=None, rate=gbps(100), bottleneck=None, delay=US):
    """Hosts 0..n_left-1 on the left switch, the rest on the right one; the two
    switches joined by one link of rate ``bottleneck`` (default ``rate``)."""
    u = _units("dumbbell", delay, rate=rate, bottleneck=bottleneck)
    rate, bottleneck, delay = u["rate"], u["bottleneck"], u["delay"]
    n_right = n_left if n_right is None else n_right
    _check(n_left >= 1 and n_right >= 1, "a dumbbell needs hosts on both sides", (n_left, n_right))
    t = Topology("dumbbell-%d-%d" % (n_left, n_right))
    left = [t.add_host() for _ in range(n_left)]
    right = [t.add_host() for _ in range(n_right)]
    sl, sr = t.add_switch("left"), t.add_switch("right")
    for h in left:
        t.add_link(h, sl, rate, delay)
    for h in right:
        t.add_link(h, sr, rate, delay)
    t.add_link(sl, sr, rate if bottleneck is None else bottleneck, delay)
    return t


def leaf_spine(n_leaves, hosts_per_leaf, n_spines, rate=gbps(100), uplink_rate=None, delay=US):
    """Two tiers: each leaf joins ``hosts_per_leaf`` hosts and every spine."""
    u = _units("leaf_spine", delay, rate=rate, uplink_rate=uplink_rate)
    rate, uplink_rate, delay = u["rate"], u["uplink_rate"], u["delay"]
    _check(n_leaves >= 1 and hosts_per_leaf >= 1 and n_spines >= 1, "leaf-spine sizes must be positive",
           (n_leaves, hosts_per_leaf, n_spines))
    t = Topology("leafspine-%dx%d-%d" % (n_leaves, hosts_per_leaf, n_spines))
    hosts = [t.add_host() for _ in range(n_leaves * hosts_per_leaf)]
    leaves = [t.add_switch("leaf%d" % i) for i in range(n_leaves)]
    spines = [t.add_switch("spine%d" % i) for i in range(n_spines)]
    for i, h in enumerate(hosts):
        t.add_link(h, leaves[i // hosts_per_leaf], rate, delay)
    for l in leaves:
        for s in spines:
            t.add_link(l, s, rate if uplink_rate is None else uplink_rate, delay)
    return t


def fat_tree(k, rate=gbps(100), delay=US):
    """k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches,
    (k/2)^2 cores, k^3/4 hosts (k=8: 128 hosts, 80 switches)."""
    u = _units("fat_tree", delay, rate=rate)
    rate, delay = u["rate"], u["delay"]
    _check(k >= 2 and k % 2 == 0, "fat-tree k must be even and >= 2", k)
    h = k // 2
    t = Topology("fattree-k%d" % k)
    hosts = [t.add_host() for _ in range(k * h * h)]
    edges = [t.add_switch("edge%d" % i) for i in range(k * h)]
    aggs = [t.add_switch("agg%d" % i) for i in range(k * h)]
    cores = [t.add_switch("core%d" % i) for i in range(h * h)]
    for i, host in enumerate(hosts):
        t.add_link(host, edges[i // h], rate, delay)
    for pod in range(k):
        for e in range(h):
            for a in range(h):
                t.add_link(edges[pod * h + e], aggs[pod * h + a], rate, delay)
    for pod in range(k):
        for a in range(h):
            for c in range(h):
                t.add_link(aggs[pod * h + a], cores[a * h + c], rate, delay)
    return t


def rail_optimized(n_gpus, gpus_per_server=8, servers_per_segment=None, oversubscription=1.0, rate=gbps(100),
                   spine_rate=None, delay=US, nvlink=None, nvlink_delay="500ns"):
    """The rail-optimized two-tier fabric of SimAI and the Wormhole evaluation.

    Every GPU has its own NIC (one host node per GPU, GPU g of server k is node
    k * gpus_per_server + g).  Servers are grouped into segments; in each
    segment GPU g of every server connects to rail leaf g.  Every leaf connects
    to every spine; there are servers_per_segment / oversubscription spines.
    NVLink inside a server is not part of this graph (the workload layer models
    it as a fixed-bandwidth channel) unless ``nvlink`` gives its bandwidth per
    GPU and direction ('2400Gbps'): then each server gets an NVSwitch with a
    link of that rate and ``nvlink_delay`` to each of its GPUs, and an NVLS
    engine (``wormhole.nvswitch.add_nvswitches``)."""
    u = _units("rail_optimized", delay, rate=rate, spine_rate=spine_rate)
    rate, spine_rate, delay = u["rate"], u["spine_rate"], u["delay"]
    _check(n_gpus >= 1 and gpus_per_server >= 1 and n_gpus % gpus_per_server == 0,
           "n_gpus must be a positive multiple of gpus_per_server", (n_gpus, gpus_per_server))
    _check(oversubscription >= 1.0, "oversubscription must be >= 1", oversubscription)
    servers = n_gpus // gpus_per_server
    sps = servers_per_segment or min(servers, 32)
    _check(sps >= 1, "servers_per_segment must be positive", sps)
    segments = math.ceil(servers / sps)
    n_spines = max(1, int(round(sps / oversubscription)))
    t = Topology("rail-%dgpu" % n_gpus)
    for k in range(servers):
        for g in range(gpus_per_server):
            t.add_host("gpu%d.%d" % (k, g))
    leaves = [[t.add_switch("leaf%d.%d" % (seg, g)) for g in range(gpus_per_server)] for seg in range(segments)]
    spines = [t.add_switch("spine%d" % i) for i in range(n_spines)]
    for k in range(servers):
        for g in range(gpus_per_server):
            t.add_link(k * gpus_per_server + g, leaves[k // sps][g], rate, delay)
    for seg in leaves:
        for leaf in seg:
            for sp in spines:
                t.add_link(leaf, sp, rate if spine_rate is None else spine_rate, delay)
    t.gpus_per_server = gpus_per_server
    if nvlink is not None:
        from .nvswitch import add_nvswitches
        add_nvswitches(t, n_gpus, gpus_per_server, as_rate(nvlink, "nvlink", "rail_optimized"),
                       as_time(nvlink_delay, "nvlink_delay", "rail_optimized"))
    return t
