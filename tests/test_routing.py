"""The compiled routing (wormhole._core.routing) against the pure-Python
all-pairs BFS it replaced, kept here verbatim as the reference: next-hop sets
*and their order* fix every ECMP choice, and the reference runs are matched
to the nanosecond, so the tables must be identical, not merely equivalent."""
import os

import numpy as np
import pytest

import wormhole as wh
from wormhole import Fabric
from wormhole.units import NS, US, gbps


def _py_routes(fab):
    """The former ``Fabric._routes`` (pure Python, quadratic in hosts)."""
    t = fab.topo
    n = t.n_nodes
    hosts = fab.hosts
    nh = len(hosts)
    mtu = int(fab.config.mtu)
    if fab.config.route_order == "reference":
        order = lambda v: (t.is_switch[v], -v if t.is_switch[v] else v)   # noqa: E731
    else:
        order = lambda v: v   # noqa: E731
    nbrs = [sorted(fab.nbr_port[u].keys(), key=order) for u in range(n)]
    is_sw = t.is_switch
    rt_lists = [[None] * nh for _ in range(n)]
    out = {k: np.zeros((nh, nh), np.int64) for k in ("pair_delay_ns", "pair_txdelay_ns", "pair_bw")}
    out["pair_hops"] = np.zeros((nh, nh), np.int32)
    for hd, host in enumerate(hosts):
        dis = {host: 0}
        delay = {host: 0}
        txd = {host: 0}
        bw = {host: (1 << 64) - 1}
        q = [host]
        i = 0
        while i < len(q):
            now = q[i]
            i += 1
            d = dis[now]
            for nxt in nbrs[now]:
                p = fab.nbr_port[now][nxt]
                if nxt not in dis:
                    dis[nxt] = d + 1
                    delay[nxt] = delay[now] + int(fab.port_delay[p]) // NS
                    rate = int(fab.port_rate[p])
                    txd[nxt] = txd[now] + mtu * 1000000000 * 8 // rate
                    bw[nxt] = min(bw[now], rate)
                    if is_sw[nxt]:
                        q.append(nxt)
                if d + 1 == dis[nxt]:
                    lst = rt_lists[nxt][hd]
                    if lst is None:
                        lst = rt_lists[nxt][hd] = []
                    lst.append(fab.nbr_port[nxt][now])
        for hs, src in enumerate(hosts):
            if src in dis:
                out["pair_delay_ns"][hs, hd] = delay[src]
                out["pair_txdelay_ns"][hs, hd] = txd[src]
                out["pair_bw"][hs, hd] = bw[src] if bw[src] < (1 << 63) else 0
                out["pair_hops"][hs, hd] = dis[src]
            else:
                out["pair_hops"][hs, hd] = -1
    out["rt_start"] = np.zeros(n * nh, np.int32)
    out["rt_cnt"] = np.zeros(n * nh, np.int32)
    ports = []
    for u in range(n):
        for hd in range(nh):
            lst = rt_lists[u][hd]
            if lst:
                out["rt_start"][u * nh + hd] = len(ports)
                out["rt_cnt"][u * nh + hd] = len(lst)
                ports.extend(lst)
    out["rt_ports"] = np.array(ports, dtype=np.int32)
    out["pair_rtt_ns"] = out["pair_delay_ns"] * 2 + out["pair_txdelay_ns"]
    out["pair_bdp"] = out["pair_rtt_ns"] * out["pair_bw"] // 1000000000 // 8
    reach = out["pair_hops"] >= 0
    out["max_rtt_ns"] = int(out["pair_rtt_ns"][reach].max()) if reach.any() else 0
    out["max_bdp"] = int(out["pair_bdp"][reach].max()) if reach.any() else 0
    return out


def _mixed():
    """Uneven rates and delays (bottlenecks, sub-ns delays that floor), a
    host with two uplinks, a host-to-host link, and a second component."""
    t = wh.Topology("mixed")
    h = [t.add_host() for _ in range(6)]
    s = [t.add_switch() for _ in range(4)]
    t.add_link(h[0], s[0], gbps(100), 1500)
    t.add_link(h[1], s[0], gbps(25), 2 * US)
    t.add_link(h[2], s[1], gbps(40), 999)
    t.add_link(h[2], s[2], gbps(100), US)          # dual-homed host
    t.add_link(s[0], s[1], gbps(400), 3 * US + 7)
    t.add_link(s[0], s[2], gbps(10), US)
    t.add_link(s[1], s[2], gbps(100), US)
    t.add_link(h[3], h[0], gbps(100), US)          # hosts never forward
    t.add_link(h[4], s[3], gbps(100), US)          # an island: unreachable pairs
    t.add_link(h[5], s[3], gbps(50), 10)
    return t


def _ref_topology(name):
    path = os.path.join(os.path.dirname(__file__), "data", name, "topology.txt")
    return wh.read_topology(path)


def _shipped(name):
    return wh.read_topology(os.path.join(os.path.dirname(os.path.dirname(__file__)), "topologies", name))


TOPOLOGIES = {
    "fat_tree4": lambda: wh.fat_tree(4),
    "fat_tree6": lambda: wh.fat_tree(6, rate=gbps(200)),
    "leaf_spine": lambda: wh.leaf_spine(4, 3, 3, rate=gbps(100), uplink_rate=gbps(400)),
    "rail_optimized": lambda: wh.rail_optimized(64, 8, servers_per_segment=4, oversubscription=2.0),
    "dumbbell": lambda: wh.dumbbell(3, 2, bottleneck=gbps(10)),
    "star": lambda: wh.star(5),
    "mixed": _mixed,
    "ref_dcqcn_fattree4": lambda: _ref_topology("ref_dcqcn_fattree4"),
    "ref_fixed_incast16_pfc": lambda: _ref_topology("ref_fixed_incast16_pfc"),
    "ring_intra_hpcc": lambda: _ref_topology(os.path.join("hpcc-ns3-runs", "ring_intra_hpcc")),
    "fattree_k8_100g": lambda: _shipped("fattree_k8_100g.txt"),
    "rail_128gpu_400g": lambda: _shipped("rail_128gpu_400g.txt"),
}

FIELDS = ("rt_start", "rt_cnt", "rt_ports", "pair_delay_ns", "pair_txdelay_ns", "pair_bw", "pair_hops",
          "pair_rtt_ns", "pair_bdp")


@pytest.mark.parametrize("order", ["reference", "id"])
@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_compiled_routes_equal_the_python_bfs(name, order):
    cfg = wh.Config(route_order=order, mtu=1000 if order == "reference" else 9000)
    fab = Fabric(TOPOLOGIES[name](), cfg)
    want = _py_routes(fab)
    for k in FIELDS:
        got = getattr(fab, k)
        assert got.dtype == want[k].dtype and got.shape == want[k].shape, k
        assert np.array_equal(got, want[k]), k
    assert fab.max_rtt_ns == want["max_rtt_ns"] and fab.max_bdp == want["max_bdp"]


def test_route_orders_differ_where_they_should():
    # the two orders give the same next-hop sets, in different orders
    t = wh.fat_tree(4)
    a, b = Fabric(t, wh.Config(route_order="reference")), Fabric(t, wh.Config(route_order="id"))
    assert np.array_equal(a.rt_cnt, b.rt_cnt) and np.array_equal(a.rt_start, b.rt_start)
    assert not np.array_equal(a.rt_ports, b.rt_ports)
    for r in np.flatnonzero(a.rt_cnt):
        s, c = a.rt_start[r], a.rt_cnt[r]
        assert sorted(a.rt_ports[s:s + c]) == sorted(b.rt_ports[s:s + c])


def test_adjacency_follows_route_order():
    t = wh.fat_tree(4)
    fab = Fabric(t)
    start, nbr, port, back = fab.adjacency()
    edge0 = t.node("edge0")
    got = list(nbr[start[edge0]:start[edge0 + 1]])
    assert got == [0, 1, t.node("agg1"), t.node("agg0")]      # hosts up, then switches down
    for e in range(len(nbr)):
        assert fab.port_node[port[e]] == np.searchsorted(start, e, side="right") - 1
        assert fab.port_node[back[e]] == nbr[e] and fab.port_peer[port[e]] == back[e]


def test_a_large_fat_tree_routes_every_pair():
    fab = Fabric(wh.fat_tree(12))        # 432 hosts
    nh = len(fab.hosts)
    assert (fab.pair_hops[~np.eye(nh, dtype=bool)] > 0).all()
    assert set(np.unique(fab.pair_hops)) == {0, 2, 4, 6}
    edge0 = fab.topo.node("edge0")      # k/2 next hops up towards another pod, 1 down to its own host
    assert fab.rt_cnt[edge0 * nh + nh - 1] == 6 and fab.rt_cnt[edge0 * nh + 1] == 1
