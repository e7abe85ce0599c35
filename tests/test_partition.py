"""Cutting a fabric into logical processes (wormhole.partition): what a cut keeps together,
that METIS's parts are about even and cross few links, and that the ranking of a round
over many processes (a loser tree padded to a power of two) keeps the sequential order."""
import numpy as np
import pytest

import wormhole as wh
from wormhole import partition
from wormhole.units import US, gbps


def _fabric(topo, **cfg):
    return wh.Network(topo, wh.Config.preset("hpcc", **cfg)).fabric


def _part_weights(fab, lp):
    g, roots, weight, _, _ = partition.weights(fab)
    out = np.zeros(lp.max() + 1)
    for r in roots:
        out[lp[r]] += weight[r]
    return out


def test_hosts_stay_with_their_switch_and_every_process_is_used():
    fab = _fabric(wh.fat_tree(8))
    for k in (2, 3, 4, 8):
        lp = partition.cut(fab, k)
        assert sorted(set(lp.tolist())) == list(range(k))
        node, peer = fab.port_node, fab.port_peer
        for p in range(len(node)):
            a, b = int(node[p]), int(node[int(peer[p])])
            if not fab.is_switch[a]:
                assert lp[a] == lp[b], (k, a, b)        # a host's NIC link is never cut
        assert (partition.cut(fab, k) == lp).all()      # the same cut every time


def test_parts_are_about_even():
    fab = _fabric(wh.fat_tree(8))
    for k in (2, 4):
        w = _part_weights(fab, partition.cut(fab, k))
        assert w.max() <= 1.3 * w.mean(), (k, w)


def test_two_clusters_are_cut_at_the_link_between_them():
    """Two leaf-spine clusters joined by one link: two processes cut that link alone."""
    t = wh.Topology("two")
    halves = []
    for c in range(2):
        spine = t.add_switch("spine%d" % c)
        leaves = [t.add_switch("leaf%d_%d" % (c, i)) for i in range(3)]
        for leaf in leaves:
            t.add_link(leaf, spine, gbps(400), US)
            for _ in range(4):
                t.add_link(t.add_host(), leaf, gbps(100), US)
        halves.append([spine] + leaves)
    t.add_link(halves[0][0], halves[1][0], gbps(100), US)
    fab = _fabric(t)
    lp = partition.cut(fab, 2)
    node, peer = fab.port_node, fab.port_peer
    cut = {tuple(sorted((int(node[p]), int(node[int(peer[p])])))) for p in range(len(node))
           if lp[int(node[p])] != lp[int(node[int(peer[p])])]}
    assert cut == {tuple(sorted((halves[0][0], halves[1][0])))}


def test_zero_delay_links_are_never_cut():
    t = wh.Topology("nvl")
    sw = [t.add_switch() for _ in range(4)]
    for i in range(4):
        t.add_link(sw[i], sw[(i + 1) % 4], gbps(100), US if i % 2 else 0)
        for _ in range(2):
            t.add_link(t.add_host(), sw[i], gbps(100), US)
    fab = _fabric(t)
    lp = partition.cut(fab, 4)
    assert lp[sw[0]] == lp[sw[1]] and lp[sw[2]] == lp[sw[3]]
    assert lp.max() == 1                    # two groups: no more processes than that


def test_many_processes_rank_in_the_sequential_order():
    """12 processes (a loser tree of 16 leaves, 4 of them empty) on two threads: the
    sequential run's output."""
    topo = wh.fat_tree(4)
    rnd = np.random.default_rng(3)
    hosts = topo.hosts
    flows = []
    for _ in range(60):
        s, d = rnd.choice(len(hosts), 2, replace=False)
        flows.append((hosts[s], hosts[d], int(rnd.choice([3_000, 60_000, 300_000])), int(rnd.integers(0, 30)) * 1_000_000))
    out = []
    for cfg in (wh.Config.preset("hpcc"), wh.Config.preset("hpcc").copy(threads=2, lps=12)):
        net = wh.Network(topo, cfg)
        for s, d, n, at in flows:
            net.send(s, d, n, at=at)
        net.run()
        out.append((net.fct_lines(), net.stats["events"]))
        if cfg.threads:
            p = net.stats["parallel"]
            assert p["lps"] == 12 and p["ties_across"] > 0
            assert len(p["wait_seconds"]) == 2 and all(len(w) == 4 for w in p["wait_seconds"])
    assert out[0] == out[1]


def test_a_flows_receiver_fields_have_a_cache_line_of_their_own():
    """The two ends of a flow may run on two threads: the receiver's fields fill the
    last 64-byte line of a 256-byte Flow, whose array is 64-byte aligned."""
    from wormhole._core.testing import _py_flow_layout
    size, rcv0, rcv1 = _py_flow_layout()
    assert size == 256 and rcv0 == 192 and rcv1 <= 256


def _ring_fabric():
    """Four switches in a ring, two hosts on each."""
    t = wh.Topology("ring")
    sw = [t.add_switch("sw%d" % i) for i in range(4)]
    hosts = []
    for i in range(4):
        t.add_link(sw[i], sw[(i + 1) % 4], gbps(100), US)
        hosts.append([t.add_host() for _ in range(2)])
        for h in hosts[-1]:
            t.add_link(h, sw[i], gbps(100), US)
    return t, sw, hosts


def test_the_traffic_cut_counts_data_on_the_path_and_acks_on_the_way_back():
    t, sw, hosts = _ring_fabric()
    net = wh.Network(t, wh.Config.preset("hpcc", threads=2))
    net.send(hosts[0][0], hosts[1][0], 10_500, at=0)      # 11 packets of 1,000 bytes, an ACK each
    assert net.processes()["cut"] == "rate" and net.processes()["port_load"] is None
    net.run()
    load = net.processes()["port_load"]
    fwd, rev = net.flow_path(0), net.flow_path(0, reverse=True)
    assert len(fwd) == 3 and len(rev) == 3                  # host, its switch, the next switch
    assert all(load[p] == 11 for p in fwd) and all(load[p] == 11 for p in rev)
    assert sum(load) == 66
    assert wh.Network(t, wh.Config.preset("hpcc")).processes() is None


def test_the_first_run_cuts_by_the_flows_traffic():
    """Switches 1 and 2 talk to each other, and 3 and 0: two processes by traffic keep each
    pair together (the cut by rate, which sees a ring of four equal switches, splits them),
    so no packet crosses, and the run's output is the sequential run's."""
    t, sw, hosts = _ring_fabric()
    by_rate = partition.cut(_fabric(t), 2)
    assert by_rate[sw[1]] != by_rate[sw[2]]
    out = []
    for cfg in (wh.Config.preset("hpcc"), wh.Config.preset("hpcc", threads=2)):
        net = wh.Network(t, cfg)
        for a, b in ((1, 2), (3, 0)):
            for i in range(2):
                net.send(hosts[a][i], hosts[b][i], 200_000, at=0)
                net.send(hosts[b][i], hosts[a][i], 150_000, at=0)
        net.run()
        out.append(net.fct_lines())
        if cfg.threads:
            p = net.stats["parallel"]
            assert p["cut"] == "traffic" and p["lps"] == 2
            lp = net.processes()["lp_of_node"]
            assert lp[sw[1]] == lp[sw[2]] != lp[sw[3]] == lp[sw[0]]
            assert p["cut_packets"] == 0
    assert out[0] == out[1]


def test_a_links_two_ports_never_share_a_cache_line():
    """A link's two ports are adjacent in the ports array and may be two threads': Port and
    MmuPort fill whole 64-byte lines (the arrays are 64-byte aligned), as a switch's state
    does."""
    from wormhole._core.testing import _py_port_layout
    port, mmu, sw = _py_port_layout()
    assert port % 64 == 0 and mmu % 64 == 0 and sw % 64 == 0, (port, mmu, sw)
