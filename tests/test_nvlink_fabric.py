"""NVLink as part of the fabric: NVSwitch nodes, routes, per-domain windows, the kernel at NVLink rates, and
TP traffic as packets."""
import json
from dataclasses import replace

import pytest

import wormhole as wh
from wormhole.bench import main
from wormhole.fabric import Fabric
from wormhole.units import gbps
from wormhole.workload import TrainingJob, load_preset


def test_rail_fabric_with_nvswitches():
    t = wh.rail_optimized(16, nvlink="3600Gbps")
    nv = t.nvlink
    assert (nv.gpus, nv.gpus_per_server, nv.rate_bps, nv.delay_ps) == (16, 8, gbps(3600), 500_000)
    assert len(t.hosts) == 16 + 16 and len(nv.switches) == 2 and len(nv.links) == 32
    assert t.hosts[:16] == list(range(16)) and t.nic_rate() == gbps(100)        # GPUs first, NICs first
    net = wh.Network(t, wh.Config(cc="none", time_quantum_ps=1))
    rates = lambda f: [int(net.fabric.port_rate[p]) for p in net.flow_path(f)]
    assert rates(net.send(0, 5, 1000)) == [gbps(3600)] * 2              # inside a server: the NVSwitch
    assert rates(net.send(0, 8, 1000)) == [gbps(100)] * 2               # same rail, other server: the leaf
    assert rates(net.send(0, 9, 1000)) == [gbps(100)] * 4               # no PXN: hosts do not forward
    assert rates(net.send(3, nv.engine(6), 1000)) == [gbps(3600)] * 2
    with pytest.raises(wh.TopologyError, match="already"):
        wh.add_nvswitches(t)
    with pytest.raises(wh.TopologyError, match="multiple"):
        wh.add_nvswitches(wh.star(6), gpus_per_server=4)


def test_each_domain_keeps_its_window():
    """Under global_t a NIC flow keeps the fabric's largest BDP as its window (as without NVSwitches) and
    an NVLink flow gets NVLink's: 2 x (2 x 0.5 us) + two 1048-byte frames at 3.6 Tb/s, at 450 GB/s."""
    plain = Fabric(wh.rail_optimized(16), wh.Config(cc="none"))
    f = Fabric(wh.rail_optimized(16, nvlink="3600Gbps"), wh.Config(cc="none"))
    assert f.domain_names == ["fabric", "nvlink"]
    assert f.global_window(0, 8) == (plain.max_bdp, plain.max_rtt_ns) == (f.max_bdp, f.max_rtt_ns)
    rtt_ns = 4 * 500 + 2 * (1048 * 8 * 1000 // 3600 // 1000)
    bdp, rtt = f.global_window(0, 1)
    assert rtt == rtt_ns and bdp == rtt_ns * 3600 // 8


def frame_slope(rate_gbps, quantum, cc="none"):
    """ps per 1000-byte packet of a long flow: the difference of two flows' times over 10,000 packets (CC
    parameters of a 100 Gb/s NIC, as on a GPU fabric whose NICs are 100 Gb/s)."""
    def fct(size):
        t = wh.star(2, rate=gbps(rate_gbps), delay="500ns")
        net = wh.Network(t, wh.Config(cc="none", time_quantum_ps=quantum) if cc == "none" else
                         wh.Config.preset(cc, 100, time_quantum_ps=quantum))
        f = net.send(0, 1, size)
        net.run()
        return net.flow(f)
    a, b = fct(10_000_000), fct(20_000_000)
    return (b.fct - a.fct) / 10_000, b


@pytest.mark.parametrize("rate", [2400, 3600, 7200])
def test_nvlink_rates_serialise_to_the_picosecond(rate):
    """A 1048-byte frame lasts 8384 / rate ns: at quantum 1 ps the kernel truncates it by under a ps (rate
    high by at most 0.04 %); at the reference's whole ns it is 14-16 % short."""
    exact = 1048 * 8 / (rate * 1e9) * 1e12
    slope, _ = frame_slope(rate, 1)
    assert slope == int(exact) and (exact - slope) / exact < 4e-4
    coarse, _ = frame_slope(rate, 1000)
    assert coarse < 0.97 * exact


def test_hpcc_window_at_7200gbps():
    """HPCC's window scales with rate / line rate: window x rate passes 2^63 at NVLink rates (1.8 MB at 7.2
    Tb/s; the product used to wrap and the flow took 40 ms instead of 27 us); the flow runs near its
    standalone time."""
    _, r = frame_slope(7200, 1, cc="hpcc")
    assert r.fct < 1.15 * r.standalone_fct


def tiny(gpus=16, **kw):
    pre = load_preset("gpt7b", gpus=gpus, tp=8, **kw)
    pre.model = replace(pre.model, layers=2, hidden=1024, ffn=4096, seq=512, vocab=1000)
    return pre


def run(nvlink, **kw):
    topo = wh.rail_optimized(16, nvlink="2400Gbps" if nvlink else None)
    net = wh.Network(topo, wh.Config(cc="none", time_quantum_ps=1))
    job = TrainingJob(net, tiny(**kw))
    job.start()
    net.run()
    return job, net


def test_tp_traffic_becomes_packets():
    off, net_off = run(False)
    on, net_on = run(True)
    s_off, s_on = off.summary(), on.summary()
    assert not s_off["nvlink_fabric"] and s_on["nvlink_fabric"]
    assert s_on["nvlink_bytes"] == s_off["nvlink_bytes"] == s_on["tp_allreduce_bytes"] > 0
    assert s_on["fabric_bytes"] == s_off["fabric_bytes"]
    # the TP ring's messages are on the network now, each NVLink port carrying its share
    tp = s_on["collectives_by_kind"]["tp allreduce"]
    assert tp["count"] == s_on["tp_allreduces"] and tp["nvlink_bytes"] == s_on["tp_allreduce_bytes"]
    inside = lambda net: int(((net.messages["src"] // 8 == net.messages["dst"] // 8)
                               & (net.messages["dst"] < 16)).sum())
    assert inside(net_off) == 0 and inside(net_on) == s_on["tp_allreduces"] * 8 * 14      # 14 ring steps each
    assert net_on.stats["events"] > net_off.stats["events"]
    # a ring of 8 over 2.4 Tb/s ports (frames with headers, store and forward at the NVSwitch) against the
    # channel's alpha-beta: within 5 %
    t_on, t_off = on.results[0], off.results[0]
    assert abs(t_on.tp - t_off.tp) / t_off.tp < 0.05


def test_bench_nvlink_fabric(capsys):
    args = ["gpt7b", "--gpus", "16", "--layers", "1", "--no-progress", "--json"]
    assert main(args + ["--nvlink-fabric", "--cc", "hpcc"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert on["nvlink_fabric"] and on["topology"].endswith("NVSwitches")
    assert main(args + ["--time-quantum-ps", "1"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert not off["nvlink_fabric"] and on["tp_allreduce_bytes"] == off["tp_allreduce_bytes"]
    assert main(args + ["--nvlink-fabric", "--time-quantum-ps", "1000"]) == 2
    assert "needs --time-quantum-ps 1" in capsys.readouterr().err
