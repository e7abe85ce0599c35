import os

import networkx as nx
import pytest

import wormhole as wh
from wormhole import Fabric, TopologyError
from wormhole.units import NS, US, gbps


def write(tmp_path, text, name="topo.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_reads_reference_topology(data_dir):
    t = wh.read_topology(os.path.join(data_dir, "hpcc-ns3-runs", "ring_intra_dcqcn", "topology.txt"))
    assert t.n_nodes == 22 and len(t.switches) == 6 and len(t.links) == 24
    assert t.links[0].rate_bps == gbps(100) and t.links[0].delay_ps == 1000 * NS


@pytest.mark.parametrize("text,msg,line", [
    ("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n0 9 100Gbps 0.001ms 0\n", "unknown node", 4),
    ("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n2 0 100Gbps 0.001ms 0\n", "duplicate link", 4),
    ("3 1 2\n2\n0 2 0Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n", "rate must be positive", 3),
    ("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n", "file ends after 1 of 2 links", 4),
    ("3 1 1\n2\n0 2 100Gbps 0.001ms 0\n", "dangling", None),
    ("3 1 2\n2\n0 2 100Gbps fast 0\n1 2 100Gbps 0.001ms 0\n", "bad link delay", 3),
    ("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 1 100Gbps 0.001ms 0\n", "itself", 4),
    ("3 1\n2\n", "first line", 1),
    ("3 1 2\n7\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n", "switch id is not a node", 2),
    ("3 1 2\n2\n0 2 100Gbps 0.001ms 2\n1 2 100Gbps 0.001ms 0\n", "error rate", 3),
])
def test_bad_topology_names_file_line_value(tmp_path, text, msg, line):
    path = write(tmp_path, text)
    with pytest.raises(TopologyError) as e:
        wh.read_topology(path)
    assert msg in str(e.value)
    assert e.value.file == path or (line is None and e.value.file is not None)
    if line is not None:
        assert e.value.line == line


def test_binary_garbage_is_a_topology_error(tmp_path):
    p = tmp_path / "bin.txt"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TopologyError):
        wh.read_topology(str(p))


def test_builders_sizes():
    ft = wh.fat_tree(8)
    assert len(ft.hosts) == 128 and len(ft.switches) == 80
    assert len(ft.links) == 128 + 8 * 16 + 8 * 16
    ls = wh.leaf_spine(4, 4, 2)
    assert len(ls.hosts) == 16 and len(ls.switches) == 6
    db = wh.dumbbell(2, 3)
    assert len(db.hosts) == 5 and len(db.links) == 6
    assert len(wh.star(16).hosts) == 16


def test_networkx_round_trip():
    g = nx.Graph()
    g.add_node("a", kind="host")
    g.add_node("b", kind="host")
    g.add_node("s", kind="switch")
    g.add_edge("a", "s", rate="100Gbps", delay="1us")
    g.add_edge("b", "s", rate=gbps(50), delay=2 * US)
    t = wh.Topology.from_networkx(g)
    assert t.node("a") == 0 and t.node("s") == 2
    assert t.links[1].rate_bps == gbps(50) and t.links[1].delay_ps == 2 * US
    assert set(t.to_networkx().nodes) == {0, 1, 2}


def test_routing_tables_follow_shortest_paths():
    t = wh.fat_tree(4)
    fab = Fabric(t)
    nh = len(fab.hosts)
    # a core-crossing pair: host 0 (pod 0) to host 15 (pod 3): 6 hops, and
    # every edge switch has 2 next hops (the 2 aggregation switches) towards it
    assert fab.pair_hops[0, 15] == 6
    edge0 = t.node("edge0")
    assert fab.rt_cnt[edge0 * nh + 15] == 2
    # next hops of a host towards any other host: its single uplink
    assert fab.rt_cnt[0 * nh + 15] == 1
    # intra-edge pair: 2 hops, base RTT = 2 * 2 us + 2 * 80 ns
    assert fab.pair_hops[0, 1] == 2
    assert fab.pair_rtt_ns[0, 1] == 4160


def test_paths_use_ecmp_and_are_deterministic():
    t = wh.fat_tree(4)
    net = wh.Network(t)
    ids = [net.send(0, 15, 1000) for _ in range(8)]   # sports 10000..10007
    paths = [tuple(net.flow_path(i)) for i in ids]
    assert all(len(p) == 6 for p in paths)
    assert len(set(paths)) > 1            # different source ports hash to different paths
    net2 = wh.Network(t)
    ids2 = [net2.send(0, 15, 1000) for _ in range(8)]
    assert paths == [tuple(net2.flow_path(i)) for i in ids2]
    # each path is connected: the next port starts where the previous one ends
    f = net.fabric
    for p in paths:
        for a, b in zip(p, p[1:]):
            assert f.port_node[b] == f.port_node[f.port_peer[a]]
        assert f.port_node[f.port_peer[p[-1]]] == 15


def test_reference_route_order_lists_switches_by_decreasing_id():
    t = wh.fat_tree(4)
    nh = len(t.hosts)
    edge0, agg0, agg1 = t.node("edge0"), t.node("agg0"), t.node("agg1")
    for order, first in (("reference", agg1), ("id", agg0)):
        fab = Fabric(t, wh.Config(route_order=order))
        r = edge0 * nh + 15
        hops = [fab.port_node[fab.port_peer[p]] for p in fab.rt_ports[fab.rt_start[r]:fab.rt_start[r] + 2]]
        assert hops[0] == first and sorted(hops) == [agg0, agg1]


# ------------------------------------------------------------------ the shipped topology files
_SHIPPED = {
    "fattree_k8_100g.txt": lambda: wh.fat_tree(8),
    "leafspine_128host_100g.txt": lambda: wh.leaf_spine(8, 16, 8),
    "rail_16gpu_100g.txt": lambda: wh.rail_optimized(16),
    "rail_32gpu_100g.txt": lambda: wh.rail_optimized(32),
    "rail_64gpu_100g.txt": lambda: wh.rail_optimized(64),
    "rail_128gpu_100g.txt": lambda: wh.rail_optimized(128),
    "rail_128gpu_400g.txt": lambda: wh.rail_optimized(128, rate=gbps(400)),
    "rail_256gpu_100g.txt": lambda: wh.rail_optimized(256),
    "rail_1024gpu_100g.txt": lambda: wh.rail_optimized(1024),
}
_TOPOLOGIES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "topologies")


def test_every_shipped_topology_file_is_pinned():
    assert sorted(f for f in os.listdir(_TOPOLOGIES) if f.endswith(".txt")) == sorted(_SHIPPED)


@pytest.mark.parametrize("name", sorted(_SHIPPED))
def test_shipped_topology_files_equal_the_builders_output(name, tmp_path):
    """topologies/*.txt are the builders' output written by write_topology (same bytes)."""
    out = tmp_path / name
    wh.write_topology(_SHIPPED[name](), str(out))
    with open(os.path.join(_TOPOLOGIES, name)) as f:
        assert out.read_text() == f.read()
