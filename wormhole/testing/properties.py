"""Random fabrics and workloads, and the invariants every run must keep.
Shared by the CI property tests (tests/test_properties.py) and the long soak
(bench/soak.py); it uses the Network API only."""
import random

import networkx as nx

import wormhole as wh
from wormhole.cc import REGISTRY
from wormhole.units import NS, US, gbps

RATES = [gbps(25), gbps(50), gbps(100)]
CCS = list(REGISTRY)                   # every algorithm of the registry (wormhole.cc)


def random_fabric(rnd):
    """A star, leaf-spine, fat-tree or random tree of switches, with mixed link
    rates and delays.  Trees and Clos fabrics only: a general graph with
    shortest-path ECMP can hold cyclic buffer dependencies, where PFC deadlocks
    (a real phenomenon, not a simulator fault)."""
    kind = rnd.choice(["star", "leafspine", "fattree", "tree"])
    rate = lambda: rnd.choice(RATES)              # noqa: E731
    delay = lambda: rnd.choice([100, 500, 1000, 2000]) * NS    # noqa: E731
    if kind == "star":
        n = rnd.randrange(2, 10)
        g = nx.Graph()
        g.add_node("s", kind="switch")
        for i in range(n):
            g.add_node(i, kind="host")
            g.add_edge(i, "s", rate=rate(), delay=delay())
    elif kind == "leafspine":
        leaves, hpl, spines = rnd.randrange(2, 4), rnd.randrange(1, 4), rnd.randrange(1, 3)
        t = wh.leaf_spine(leaves, hpl, spines)
        g = t.to_networkx()
        for a, b, d in g.edges(data=True):
            d["rate"] = rate() if g.nodes[a]["kind"] == "host" or g.nodes[b]["kind"] == "host" else gbps(100)
            d["delay"] = delay()
    elif kind == "fattree":
        g = wh.fat_tree(4).to_networkx()
        for _, _, d in g.edges(data=True):
            d["delay"] = delay()
    else:
        ns_ = rnd.randrange(1, 6)
        tree = nx.random_labeled_tree(ns_, seed=rnd.randrange(1 << 30)) if ns_ > 1 else nx.empty_graph(1)
        g = nx.Graph()
        for s in tree.nodes:
            g.add_node(("s", s), kind="switch")
        for a, b in tree.edges:
            g.add_edge(("s", a), ("s", b), rate=rate(), delay=delay())
        h = 0
        for s in tree.nodes:
            for _ in range(rnd.randrange(1, 4)):
                g.add_node(("h", h), kind="host")
                g.add_edge(("h", h), ("s", s), rate=rate(), delay=delay())
                h += 1
        if h < 2:
            g.add_node(("h", h), kind="host")
            g.add_edge(("h", h), ("s", 0), rate=rate(), delay=delay())
    return wh.Topology.from_networkx(g, name=kind), kind


def random_workload(rnd, topo, max_size, max_flows):
    hosts = topo.hosts
    pattern = rnd.choice(["random", "incast", "alltoall"])
    flows = []
    size = lambda: rnd.choice([1, 999, 1000, 1001, 64_000, rnd.randrange(1, max_size + 1)])    # noqa: E731
    if pattern == "incast":
        dst = rnd.choice(hosts)
        for h in hosts:
            if h != dst:
                flows.append((h, dst, size(), rnd.randrange(0, 20) * US))
    elif pattern == "alltoall":
        for a in hosts[:5]:
            for b in hosts[:5]:
                if a != b:
                    flows.append((a, b, size(), 0))
    else:
        for _ in range(rnd.randrange(1, max_flows + 1)):
            a, b = rnd.sample(hosts, 2)
            flows.append((a, b, size(), rnd.randrange(0, 50) * US))
    return flows[:max_flows], pattern


def twin_workload(rnd, topo, max_size):
    """Two to four groups of distinct hosts, each with one or two senders to its
    last host, every flow of the same size and start: on a symmetric fabric the
    groups' partitions form as twins (the accelerator mirrors them)."""
    hosts = list(topo.hosts)
    rnd.shuffle(hosts)
    g = rnd.choice([2, 3]) if len(hosts) >= 6 else 2
    k = max(1, min(rnd.randrange(2, 5), len(hosts) // g))
    size, start = rnd.randrange(1, max_size + 1), rnd.randrange(0, 20) * US
    flows = []
    for i in range(k):
        group = hosts[i * g:(i + 1) * g]
        for src in group[:-1]:
            flows.append((src, group[-1], size, start))
    return flows, "twins"


def symmetric_fabric(rnd):
    """A star, leaf-spine or fat-tree with one link rate and one delay, where
    groups of hosts can be alike."""
    kind = rnd.choice(["star", "leafspine", "fattree"])
    rate, delay = rnd.choice(RATES), rnd.choice([100, 500, 1000, 2000]) * NS
    if kind == "star":
        t = wh.star(rnd.randrange(4, 13), rate=rate, delay=delay)
    elif kind == "leafspine":
        t = wh.leaf_spine(rnd.randrange(2, 4), rnd.randrange(2, 5), rnd.randrange(1, 3), rate=rate, delay=delay)
    else:
        t = wh.fat_tree(4, rate=rate, delay=delay)
    return t, kind


def run_case(seed, max_size=2_000_000, max_flows=24, accelerate=False, cc=None, twins=False, **cfg):
    """One random case: a random fabric and workload, or with ``twins`` a
    symmetric fabric and twin_workload (its own random stream, so the seeds of
    the other cases keep their runs)."""
    rnd = random.Random(seed)
    if twins:
        topo, kind = symmetric_fabric(random.Random(seed ^ 0x7717))
        flows, pattern = twin_workload(random.Random(seed ^ 0x7718), topo, max_size)
    else:
        topo, kind = random_fabric(rnd)
        flows, pattern = random_workload(rnd, topo, max_size, max_flows)
    cc = cc or rnd.choice(CCS)
    pfc = rnd.random() < 0.8
    # headroom floor of 8 frames: the reference's 3 x rate x delay is too small on 100 ns links;
    # the registry's generic parameters (not the run script's presets) for every algorithm
    cfg = wh.Config.generic(cc=cc, pfc=pfc, buffer_size=rnd.choice([1, 4, 16]), rto=0 if pfc else 200,
                            accelerate=accelerate, seed=seed, pfc_headroom_floor=8 * 1090, **cfg)
    net = wh.Network(topo, cfg)
    for a, b, s, t in flows:
        net.send(a, b, s, at=t)
    times = []
    step = 200 * US
    while net.peek() is not None:
        net.run(until=net.now + step)
        times.append(net.now)
        if net.now > 5_000_000 * US:
            break
    return net, dict(seed=seed, kind=kind, pattern=pattern, cc=cc, pfc=pfc, flows=len(flows),
                     buffer=cfg.buffer_size), times


def lower_bound_fct(net, fid):
    """Idle-path bound: the data's propagation there, the ACK's back, and the
    payload alone at the slowest link (true for any packetisation)."""
    f = net.fabric
    path = net.flow_path(fid)
    rpath = net.flow_path(fid, reverse=True)
    prop = sum(int(f.port_delay[p]) for p in path) + sum(int(f.port_delay[p]) for p in rpath)
    slow = min(int(f.port_rate[p]) for p in path)
    size = int(net.results["size"][fid])
    return prop + size * 8 * 10**12 // slow


def check_invariants(net, info, times):
    """Every invariant of a finished run; returns a list of violations."""
    bad = []
    res = net.results
    st = net.stats
    if not (res["fct"] > 0).all():
        bad.append("%d of %d flows did not complete" % (int((res["fct"] <= 0).sum()), len(res)))
    rcv_nxt, rcv_bytes, _ = net.delivered()
    if not (rcv_nxt == res["size"]).all():
        bad.append("bytes delivered in order differ from flow sizes")
    if info["pfc"] and st["drops"] == 0 and not (rcv_bytes == res["size"]).all():
        bad.append("a byte was delivered twice without any loss")
    if info["pfc"] and st["drops"] > 0:
        bad.append("%d drops with PFC on" % st["drops"])
    buf = int(info["buffer"] * 1024 * 1024)
    if st["max_switch_buffer_bytes"] > buf:
        bad.append("switch buffer %d above its size %d" % (st["max_switch_buffer_bytes"], buf))
    for fid in range(len(res)):
        if res["fct"][fid] > 0 and res["fct"][fid] < lower_bound_fct(net, fid):
            bad.append("flow %d faster than its idle path" % fid)
            break
    if any(b < a for a, b in zip(times, times[1:])):
        bad.append("the clock went backwards")
    if st["packets_live"] != 0:
        bad.append("%d packets left in the pool" % st["packets_live"])
    return bad
