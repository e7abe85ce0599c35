"""The flow-level backend: max-min / CM02 shares on the textbook cases."""
import networkx as nx
import numpy as np
import pytest

import wormhole as wh
from wormhole.units import US, gbps


INF = float("inf")


def max_min(rates_out, flows, flow_links, weights, caps, bounds):
    """Reference weighted progressive filling from scratch (numpy), against
    which the backend's incremental C solver is checked."""
    if not flows:
        return
    lens = np.fromiter((len(flow_links[f]) for f in flows), dtype=np.int64, count=len(flows))
    raw = np.fromiter((l for f in flows for l in flow_links[f]), dtype=np.int64, count=int(lens.sum()))
    links, li = np.unique(raw, return_inverse=True)
    nf, nl = len(flows), len(links)
    fi = np.repeat(np.arange(nf), lens)
    w = np.fromiter((weights[f] for f in flows), dtype=float, count=nf)
    bnd = np.fromiter((bounds[f] for f in flows), dtype=float, count=nf)
    cap = np.fromiter((caps[int(l)] for l in links), dtype=float, count=nl)
    rate = np.zeros(nf)
    frozen = np.zeros(nf, dtype=bool)
    used = np.zeros(nl)
    while not frozen.all():
        live = ~frozen[fi]
        wsum = np.bincount(li[live], weights=w[fi[live]], minlength=nl)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(wsum > 0, (cap - used) / wsum, INF)
        s = share.min()
        # a flow whose bound is below the link share freezes at its bound first
        wb = np.where(~frozen, bnd / w, INF)
        sb = wb.min()
        if sb <= s:
            k = int(wb.argmin())
            newly = np.zeros(nf, dtype=bool)
            newly[k] = True
            level = sb
        else:
            if not np.isfinite(s):
                rate[~frozen] = bnd[~frozen]
                break
            sat = share <= s * (1 + 1e-12)
            newly = np.zeros(nf, dtype=bool)
            newly[fi[sat[li] & live]] = True
            newly &= ~frozen
            level = s
        r = w[newly] * level
        rate[newly] = r
        frozen |= newly
        contrib = np.zeros(nf)
        contrib[newly] = r
        used += np.bincount(li, weights=contrib[fi], minlength=nl)
    for f, r in zip(flows, rate.tolist()):
        rates_out[f] = r


def random_sends(net, n, seed, sizes, starts_us):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        a, b = rng.choice(16, 2, replace=False)
        net.send(int(a), int(b), int(rng.integers(*sizes)), at=int(rng.integers(0, starts_us)) * US)


def graph(edges):
    g = nx.Graph()
    for a, b, rate, delay in edges:
        for x in (a, b):
            if x not in g:
                g.add_node(x, kind="switch" if x.startswith("s") else "host")
        g.add_edge(a, b, rate=gbps(rate), delay=int(delay * US))
    return wh.Topology.from_networkx(g)


def rates_after_join(net, ids):
    net.run(until=100 * US)
    return np.array([net.backend.rate[i] for i in ids]) * 8e12 / net.backend.eff / 1e9     # back to Gb/s of line rate


def test_backbone_example_of_the_simgrid_slides():
    # flow X crosses the 1000 link; flow Y crosses it and a link of 1: max-min gives 999 and 1
    t = graph([("h0", "s0", 2000, 1), ("h1", "s0", 2000, 1), ("s0", "s1", 1000, 1),
               ("s1", "h2", 2000, 1), ("s1", "h3", 1, 1)])
    net = wh.Network(t, backend="flow", flow_model="maxmin")
    x = net.send("h0", "h2", 10**12)
    y = net.send("h1", "h3", 10**12)
    r = rates_after_join(net, [x, y])
    assert r == pytest.approx([999, 1])


def test_parking_lot():
    # a long flow over two links in series and one short flow on each: all get half
    t = graph([("h0", "s0", 100, 1), ("h1", "s0", 100, 1), ("s0", "s1", 100, 1), ("s1", "h2", 100, 1),
               ("h3", "s1", 100, 1), ("s1", "s2", 100, 1), ("s2", "h4", 100, 1)])
    net = wh.Network(t, backend="flow", flow_model="maxmin")
    long_ = net.send("h0", "h4", 10**12)
    a = net.send("h1", "h2", 10**12)
    b = net.send("h3", "h4", 10**12)
    assert rates_after_join(net, [long_, a, b]) == pytest.approx([50, 50, 50])


def test_packet_model_shares_inversely_to_route_latency():
    # two flows on one bottleneck, route latencies 2 us and 4 us: shares 2:1
    t = graph([("h0", "s0", 100, 0.5), ("h1", "s0", 100, 1.5), ("s0", "s1", 100, 1), ("s1", "h2", 100, 0.5),
               ("s1", "h3", 100, 1.5)])
    net = wh.Network(t, backend="flow")
    a = net.send("h0", "h2", 10**12)
    b = net.send("h1", "h3", 10**12)
    assert net.backend.latency[a] == 2 * US and net.backend.latency[b] == 4 * US
    ra, rb = rates_after_join(net, [a, b])
    assert ra / rb == pytest.approx(2.0)
    assert ra + rb == pytest.approx(100)


def test_packet_model_latency_phase_and_window_bound():
    t = graph([("h0", "s0", 100, 1), ("s0", "h1", 100, 1)])
    net = wh.Network(t, backend="flow")
    f = net.send("h0", "h1", 1_000_000)
    net.run()
    r = net.flow(f)
    payload = 100e9 * net.backend.eff / 8
    assert r.fct == pytest.approx(2 * US + 1_000_000 / payload * 1e12, abs=1)
    w = wh.Network(t, backend="flow", flow_window=20_000)
    g = w.send("h0", "h1", 10**12)
    assert rates_after_join(w, [g])[0] == pytest.approx(20_000 / (2 * 2e-6) * 8 / 1e9 / w.backend.eff)  # below the link


def test_identical_runs_and_byte_conservation():
    def run():
        net = wh.Network(wh.leaf_spine(4, 4, 2), backend="flow")
        random_sends(net, 200, 3, (1, 5_000_000), 200)
        net.run()
        return net
    a, b = run(), run()
    assert a.fct_lines() == b.fct_lines()
    res = a.results
    assert (res["fct"] > 0).all()
    done, _, _ = a.delivered()
    assert (done == res["size"]).all()


def test_incremental_solves_equal_a_full_solve():
    net = wh.Network(wh.leaf_spine(4, 4, 2), backend="flow")
    random_sends(net, 120, 5, (100_000, 3_000_000), 300)
    for step in range(1, 40):
        net.run(until=step * 10 * US)
        full = dict(enumerate(net.backend.rate))
        active = sorted(net.backend.active)
        max_min(full, active, net.backend.links, net.backend.weight, net.backend.caps, net.backend.bound)
        for f in active:
            assert net.backend.rate[f] == pytest.approx(full[f], rel=1e-9)


@pytest.mark.parametrize("model,topo", [("maxmin", "leafspine_2to1"), ("packet", "fat_tree")])
def test_restricted_re_solves_equal_a_full_solve_under_load(model, topo):
    """Hundreds of concurrent flows on oversubscribed fabrics, where most links
    are saturated and a change ripples far: the re-solved region (flows reached
    through saturated links, grown on violations) still gives the full solution."""
    t = wh.leaf_spine(4, 8, 2, uplink_rate=gbps(25)) if topo == "leafspine_2to1" else wh.fat_tree(4)
    net = wh.Network(t, backend="flow", flow_model=model)
    rng = np.random.default_rng(7)
    n_hosts = len(t.hosts)
    for _ in range(600):
        a, b = rng.choice(n_hosts, 2, replace=False)
        net.send(int(a), int(b), int(rng.integers(10_000, 2_000_000)), at=int(rng.integers(0, 400)) * US)
    for step in range(1, 60):
        net.run(until=step * 10 * US)
        full = dict(enumerate(net.backend.rate))
        active = sorted(net.backend.active)
        max_min(full, active, net.backend.links, net.backend.weight, net.backend.caps, net.backend.bound)
        rate = net.backend.rate
        for f in active:
            assert rate[f] == pytest.approx(full[f], rel=1e-9)
    assert net.backend.solver.region_flows > 0


def test_the_workload_layer_runs_on_the_flow_backend():
    from wormhole.workload import RingAllReduce, Transport
    net = wh.Network(wh.rail_optimized(32), backend="flow")
    done = []
    c = RingAllReduce(Transport(net), [0, 8, 16, 24], 8_000_000, on_done=done.append).start()
    net.run()
    assert done == [c] and c.sent_bytes == [12_000_000] * 4


def test_the_flow_backend_names_itself_for_what_it_lacks():
    """No packets, CC, queues, PFC or accelerator: NotAvailableError naming the
    backend, not AttributeError; no packet counters in its stats."""
    net = wh.Network(wh.star(3), backend="flow")
    net.send(0, 2, 1_000_000)
    net.run()
    for call in (net.samples, lambda: net.cc_state(0), lambda: net.port_state(0), net.pfc_records, net.pfc_lines,
                 net.partitions):
        with pytest.raises(wh.NotAvailableError, match="not available on the flow backend"):
            call()
    st = net.stats
    assert st["backend"] == "flow" and st["events"] > 0
    assert not {"data_packets", "events_skipped", "pfc_pauses", "drops"} & set(st)


def test_flow_paths_are_the_packet_kernels():
    """Routes, data and ACK directions, equal the packet kernel's ECMP choices."""
    topo = wh.fat_tree(4)
    nets = [wh.Network(topo, wh.Config(cc="none"), backend=b) for b in ("packet", "flow")]
    rng = np.random.default_rng(5)
    hosts = topo.hosts
    for _ in range(60):
        a, b = (int(x) for x in rng.choice(hosts, 2, replace=False))
        dport = int(rng.integers(100, 200))
        ids = [n.send(a, b, 1000, dport=dport) for n in nets]
        assert ids[0] == ids[1]
    for fid in range(60):
        for rev in (False, True):
            assert nets[1].flow_path(fid, reverse=rev) == nets[0].flow_path(fid, reverse=rev)
    with pytest.raises(wh.WormholeError, match="no such flow"):
        nets[1].flow_path(60)
