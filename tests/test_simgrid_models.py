"""The flow backend's SimGrid models (flow_model cm02 / lv08): SimGrid 3.32's own
FCTs (recorded in tests/data/simgrid, see tests/data/README.md) reproduced to
1e-6, and hand-computed cases of the latency phase, the TCP-gamma bound, the
bandwidth factor, weight-S sharing and cross-traffic."""
import os

import networkx as nx
import numpy as np
import pytest

import wormhole as wh
from wormhole.units import US, gbps

DATA = os.path.join(os.path.dirname(__file__), "data", "simgrid")
CASES = ["star", "dumbbell", "leafspine"]


def run_files(case, model, crosstraffic):
    topo = wh.read_topology(os.path.join(DATA, case, "topology.txt"))
    flows = wh.read_flows(os.path.join(DATA, case, "flow.txt"), topo)
    net = wh.Network(topo, backend="flow", flow_model=model, flow_crosstraffic=crosstraffic)
    for f in flows:
        net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
    net.run()
    return net, net.results["fct"] / 1e12


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("model", ["cm02", "lv08"])
@pytest.mark.parametrize("ct", [False, True])
def test_simgrid_fcts_reproduced(case, model, ct):
    sg = np.loadtxt(os.path.join(DATA, case, "simgrid_%s_%s.txt" % (model, "ct" if ct else "noct")))
    net, ours = run_files(case, model, ct)
    assert len(ours) == len(sg) and (ours > 0).all()
    assert (np.abs(ours - sg) / sg).max() < 1e-6


@pytest.mark.parametrize("model", ["cm02", "lv08"])
@pytest.mark.parametrize("ct", [False, True])
def test_surf_precision_is_decided_on_simgrids_doubles(model, ct):
    """The boundary fixture: with LV08 the h0 -> h1 latency phase ends 1 ns (in picoseconds) after
    h2 -> h1 starts, but 1.0000000000157e-9 s after it on SimGrid's doubles (start + 13.01 x the
    link latencies summed in route order), so SimGrid does not take it into that round; taking it
    (joining 1 ns early) makes h0 -> h1's FCT 8.8e-6 short."""
    sg = np.loadtxt(os.path.join(DATA, "boundary", "simgrid_%s_%s.txt" % (model, "ct" if ct else "noct")))
    net, ours = run_files("boundary", model, ct)
    assert [net.backend.start[0], net.backend.start[1]] == [74078000, 171652000]
    assert (np.abs(ours - sg) / sg).max() < 1e-7
    if model == "lv08":
        assert net.backend.start[0] + net.backend._phase[0] == net.backend.start[1] + 1000
        assert net.backend._lat_d[0] + 7.4078e-5 - 1.71652e-4 > 1e-9


def test_the_recorded_cases_exercise_what_they_claim():
    """The fixtures would not catch a model difference that does not show in them."""
    for case in CASES:
        a = np.loadtxt(os.path.join(DATA, case, "simgrid_cm02_noct.txt"))
        b = np.loadtxt(os.path.join(DATA, case, "simgrid_cm02_ct.txt"))
        c = np.loadtxt(os.path.join(DATA, case, "simgrid_lv08_noct.txt"))
        assert (np.abs(a - b) / a).max() > 1e-3          # cross-traffic changes FCTs
        assert (np.abs(a - c) / a).max() > 1e-2          # LV08 is not CM02
    # the dumbbell's 1 ms bottleneck: the TCP-gamma bound holds some flows below the link
    net, _ = run_files("dumbbell", "cm02", False)
    assert min(net.backend.bound) * 8e12 < 100e9
    # the packet-calibrated model is not SimGrid's
    net, packet = run_files("star", "packet", False)
    sg = np.loadtxt(os.path.join(DATA, "star", "simgrid_cm02_noct.txt"))
    assert (np.abs(packet - sg) / sg).max() > 1e-2


def two_hosts(delay_us=1.0, rate=100):
    g = nx.Graph()
    g.add_node("h0", kind="host")
    g.add_node("h1", kind="host")
    g.add_node("s0", kind="switch")
    g.add_edge("h0", "s0", rate=gbps(rate), delay=int(delay_us * US))
    g.add_edge("s0", "h1", rate=gbps(rate), delay=int(delay_us * US))
    return wh.Topology.from_networkx(g)


def test_latency_phase_and_bandwidth_factor_single_flow():
    # CM02: 2 us of latency, then 1 MB at the full 12.5 GB/s (no headers): 2 + 80 us
    net = wh.Network(two_hosts(), backend="flow", flow_model="cm02", flow_crosstraffic=False)
    f = net.send("h0", "h1", 1_000_000)
    net.run()
    assert net.flow(f).fct == 2 * US + 80 * US
    # LV08: latency x 13.01, bytes at 0.97 x the share
    net = wh.Network(two_hosts(), backend="flow", flow_model="lv08", flow_crosstraffic=False)
    f = net.send("h0", "h1", 1_000_000)
    net.run()
    assert net.flow(f).fct == pytest.approx(13.01 * 2 * US + 1_000_000 / (0.97 * 12.5e9) * 1e12, abs=1)
    assert net.flow(f).fct == net.flow(f).standalone_fct


def test_tcp_gamma_bound():
    # 1 ms per link: route latency 2 ms, bound 4194304 / (2 x 2 ms) = 1.048576e9 B/s, below the 12.5 GB/s link
    net = wh.Network(two_hosts(delay_us=1000), backend="flow", flow_model="cm02", flow_crosstraffic=False)
    f = net.send("h0", "h1", 10_000_000)
    net.run()
    assert net.flow(f).fct == pytest.approx(2e9 + 10_000_000 / 1.048576e9 * 1e12, abs=1)
    net = wh.Network(two_hosts(delay_us=1000), backend="flow", flow_model="cm02", flow_crosstraffic=False,
                     flow_tcp_gamma=0)
    f = net.send("h0", "h1", 10_000_000)
    net.run()
    assert net.flow(f).fct == pytest.approx(2e9 + 800 * US, abs=1)


def test_weight_s_sharing_on_two_flows():
    """Two flows on one 100 Gb/s bottleneck, route latencies 2 us and 4 us.
    LV08 penalty = latency + sum over the route of 20537 / bandwidth (B/s):
    each route has 3 links at 12.5e9 B/s, so 2 us + 4.92888 us vs 4 us + 4.92888 us;
    CM02 shares 2:1 (penalty = latency)."""
    g = nx.Graph()
    for n in ("h0", "h1", "h2", "h3"):
        g.add_node(n, kind="host")
    g.add_node("s0", kind="switch")
    g.add_node("s1", kind="switch")
    for a, b, d in [("h0", "s0", 0.5), ("h1", "s0", 1.5), ("s0", "s1", 1), ("s1", "h2", 0.5), ("s1", "h3", 1.5)]:
        g.add_edge(a, b, rate=gbps(100), delay=int(d * US))
    t = wh.Topology.from_networkx(g)
    ws = 3 * 20537 / 12.5e9
    for model, ratio in (("cm02", 4e-6 / 2e-6), ("lv08", (4e-6 + ws) / (2e-6 + ws))):
        net = wh.Network(t, backend="flow", flow_model=model, flow_crosstraffic=False)
        a = net.send("h0", "h2", 10**12)
        b = net.send("h1", "h3", 10**12)
        net.run(until=200 * US)                     # both past their latency phases (LV08: 52 us)
        ra, rb = net.backend.rate[a], net.backend.rate[b]
        assert ra / rb == pytest.approx(ratio, rel=1e-12)
        factor = 0.97 if model == "lv08" else 1.0
        assert (ra + rb) * 1e12 == pytest.approx(factor * 12.5e9, rel=1e-12)


def test_crosstraffic_uses_the_reverse_route():
    """Two opposite flows h0 -> h1 and h1 -> h0 (CM02, equal latencies): each
    uses x on its forward links and 0.05 x on the other's, so x + 0.05 x = link
    capacity: x = 12.5e9 / 1.05 B/s; without cross-traffic each gets the link."""
    for ct, share in ((True, 12.5e9 / 1.05), (False, 12.5e9)):
        net = wh.Network(two_hosts(), backend="flow", flow_model="cm02", flow_crosstraffic=ct)
        a = net.send("h0", "h1", 10**12)
        b = net.send("h1", "h0", 10**12)
        net.run(until=10 * US)
        assert net.backend.rate[a] * 1e12 == pytest.approx(share, rel=1e-12)
        assert net.backend.rate[b] * 1e12 == pytest.approx(share, rel=1e-12)


def test_events_within_surf_precision_are_now():
    """SimGrid's engine handles every date within 1e-9 s of now as now: a flow
    finishing 0.5 ns after another one finishes with it."""
    net = wh.Network(two_hosts(), backend="flow", flow_model="cm02", flow_crosstraffic=False,
                     flow_tcp_gamma=0)
    a = net.send("h0", "h1", 1_000_000)
    b = net.send("h0", "h1", 1_000_003)     # 3 more bytes, at 6.25 GB/s each: 0.48 ns later
    net.run()
    assert net.flow(a).finish == net.flow(b).finish == 2 * US + 160 * US


def test_flow_model_names_and_bad_values():
    with pytest.raises(wh.ConfigError, match="flow_model"):
        wh.Network(two_hosts(), backend="flow", flow_model="simgrid")
    with pytest.raises(wh.ConfigError, match="flow_tcp_gamma"):
        wh.Network(two_hosts(), backend="flow", flow_model="cm02", flow_window=1000)
    with pytest.raises(wh.ConfigError):
        wh.Network(two_hosts(), backend="flow", flow_model="cm02", flow_tcp_gamma=-1)
    net = wh.Network(two_hosts(), backend="flow")
    assert net.stats["flow_model"] == "packet"


def test_cli_flow_model(tmp_path):
    import subprocess
    import sys
    d = os.path.join(DATA, "star")
    for model in ("cm02", "lv08", "packet"):
        out = tmp_path / model
        p = subprocess.run([sys.executable, "-m", "wormhole", "run", "--topology", os.path.join(d, "topology.txt"),
                            "--flows", os.path.join(d, "flow.txt"), "--backend", "flow", "--flow-model", model,
                            "--out", str(out)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert "flow (%s" % model in p.stdout
        assert len((out / "fct.txt").read_text().splitlines()) == 60
    p = subprocess.run([sys.executable, "-m", "wormhole", "run", "--topology", os.path.join(d, "topology.txt"),
                        "--flows", os.path.join(d, "flow.txt"), "--flow-model", "cm02", "--out",
                        str(tmp_path / "x")], capture_output=True, text=True)
    assert p.returncode != 0 and "--flow-model applies to the flow backend" in p.stderr


def test_a_start_exactly_one_ns_after_now_is_now():
    """Starts on the reference's nanosecond grid: SimGrid compares dates in
    seconds, |1.000e-6 - 0.999e-6| < 1e-9 after rounding, so the flow starting
    1 ns after another starts with it.  SimGrid 3.32 (CM02, cross-traffic on) on
    this input (starts 999, 1000, 1002 ns) gives FCTs of 126, 125.999 and 84 us."""
    topo = wh.star(2, delay=1000 * 1000)
    net = wh.Network(topo, backend="flow", flow_model="cm02")
    a = net.send(0, 1, 1_000_000, at=999 * 1000)
    b = net.send(1, 0, 1_000_000, at=1000 * 1000)
    c = net.send(0, 1, 500_000, at=1002 * 1000)
    net.run()
    assert [net.flow(f).fct for f in (a, b, c)] == [126 * US, 125_999 * 1000, 84 * US]
