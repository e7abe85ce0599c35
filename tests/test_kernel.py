"""Whole runs of the packet kernel where the answer is known."""
import math
import os


import pytest

import wormhole as wh
from wormhole._core.testing import _py_tx_time_ps
from wormhole.units import US, gbps

from conftest import parse_fct

RATE = gbps(100)


def tandem_fct(size, hops, rate=RATE, delay=US, mtu=1000, hdr=48, ack=60, quantum=1000):
    """Analytic FCT of one flow on an idle path of `hops` equal links:
    store-and-forward pipeline of the packets, then the last ACK's return."""
    tx = lambda b: _py_tx_time_ps(b, rate, quantum)
    n = math.ceil(size / mtu)
    sizes = [mtu + hdr] * (n - 1) + [size - (n - 1) * mtu + hdr]
    free = [0] * hops            # time each hop's port becomes free
    arrive = 0
    t_send = 0
    for b in sizes:
        t = t_send
        for j in range(hops):
            start = max(t, free[j])
            free[j] = start + tx(b)
            t = free[j] + delay
        arrive = t
        t_send += tx(b)
    return arrive + hops * (tx(ack) + delay)


@pytest.mark.parametrize("quantum", [1000, 1])
@pytest.mark.parametrize("size", [1000, 64_000, 4_000_000])
def test_one_flow_idle_path_exact(size, quantum):
    t = wh.star(2)
    net = wh.Network(t, time_quantum_ps=quantum)
    fid = net.send(0, 1, size)
    net.run()
    r = net.flow(fid)
    closed = (2 * (_py_tx_time_ps(1048 if size >= 1000 else size + 48, RATE, quantum) + US)
              + (math.ceil(size / 1000) - 1) * _py_tx_time_ps(1048, RATE, quantum)
              + 2 * (_py_tx_time_ps(60, RATE, quantum) + US))
    assert r.fct == tandem_fct(size, 2, quantum=quantum) == closed


def test_one_flow_partial_last_packet_and_three_hops():
    t = wh.leaf_spine(2, 1, 1)        # host - leaf - spine - leaf - host: 4 links
    net = wh.Network(t)
    fid = net.send(0, 1, 123_456)
    net.run()
    assert net.flow(fid).fct == tandem_fct(123_456, 4)


def test_one_flow_within_one_percent_of_reference_standalone():
    # With exact picoseconds the analytic FCT is within 1% of the reference's
    # standalone formula; with the reference's ns truncation (the default) a
    # 1048-byte frame lasts 83 ns instead of 83.84 ns and the FCT is 1.0% lower,
    # as in the reference's own runs.
    for size in (1_000_000, 10_000_000):
        net = wh.Network(wh.star(3), time_quantum_ps=1)
        fid = net.send(0, 2, size)
        net.run()
        r = net.flow(fid)
        assert abs(r.fct - r.standalone_fct) / r.standalone_fct < 0.01


def test_int_header_sizes_set_the_packet_format():
    # TIMELY's first RTT has no update yet, so a flow shorter than one RTT runs at line
    # rate: its FCT is the analytic one with 8-byte INT (1056-byte frames, 60-byte ACKs)
    net = wh.Network(wh.star(2), cc="timely")
    fid = net.send(0, 1, 20_000)
    net.run()
    assert net.flow(fid).fct == tandem_fct(20_000, 2, hdr=48 + 8, ack=60)
    # HPCC: 42-byte INT in data, echoed in 88-byte ACKs; the flow cannot beat that bound
    net = wh.Network(wh.star(2), cc="hpcc")
    fid = net.send(0, 1, 20_000)
    net.run()
    assert net.flow(fid).fct >= tandem_fct(20_000, 2, hdr=48 + 42, ack=88)


def test_two_flows_share_a_dumbbell_bottleneck():
    t = wh.dumbbell(2, 2)
    net = wh.Network(t)
    a = net.send(0, 2, 2_000_000)
    b = net.send(1, 3, 2_000_000)
    net.run()
    ra, rb = net.flow(a), net.flow(b)
    alone = 2_000 * _py_tx_time_ps(1048, RATE, 1000)      # serialisation of one flow
    for r in (ra, rb):
        assert 2 * alone <= r.fct <= 2 * alone * 1.03
    assert abs(ra.fct - rb.fct) < 0.01 * ra.fct


def incast(n, size, **cfg):
    net = wh.Network(wh.star(n + 1), **cfg)
    ids = [net.send(i, n, size) for i in range(n)]
    net.run()
    return net, ids


def assert_every_byte_once(net, ids, sizes, allow_duplicates=False):
    rcv_nxt, rcv_bytes, retx = net.delivered()
    for fid in ids:
        assert net.flow(fid).fct > 0
        assert rcv_nxt[fid] == sizes
        if not allow_duplicates:
            assert rcv_bytes[fid] == sizes
            assert retx[fid] == 0


def test_pfc_incast_16_to_1_is_lossless():
    net, ids = incast(16, 1_000_000, buffer_size=1)
    st = net.stats
    assert st["pfc_pauses"] > 0 and st["pfc_resumes"] > 0
    assert st["drops"] == 0
    assert_every_byte_once(net, ids, 1_000_000)
    rec = net.pfc_records()
    assert len(rec) == st["pfc_pauses"] + st["pfc_resumes"]
    # every pause is eventually followed by a resume on the same port
    assert rec[:, 4].sum() == len(rec) - rec[:, 4].sum()
    # the switch never holds more than its buffer
    assert st["max_switch_buffer_bytes"] <= 1024 * 1024


def test_pause_holds_until_resume():
    net = wh.Network(wh.star(17), buffer_size=1)
    for i in range(16):
        net.send(i, 16, 1_000_000)
    paused_seen = False
    for step in range(1, 400):
        net.run(until=step * US)
        states = [net.port_state(net.fabric.host_nic[i]) for i in range(16)]
        if any(s["paused"][3] for s in states):
            paused_seen = True
            break
    assert paused_seen
    net.run()
    assert all(not net.port_state(net.fabric.host_nic[i])["paused"][3] for i in range(16))


def test_no_pfc_small_buffer_drops_and_go_back_n_recovers():
    net, ids = incast(8, 500_000, buffer_size=0.5, pfc=False, has_win=False, rto=100)
    st = net.stats
    assert st["drops"] > 0 and st["pfc_pauses"] == 0
    assert st["nacks"] > 0
    assert_every_byte_once(net, ids, 500_000, allow_duplicates=True)
    _, _, retx = net.delivered()
    assert retx.sum() > 0


def test_without_rto_a_lost_tail_stalls_like_the_reference():
    net, ids = incast(8, 500_000, buffer_size=0.5, pfc=False, has_win=False)
    assert net.stats["drops"] > 0 and net.stats["timeouts"] == 0
    rcv_nxt, _, _ = net.delivered()
    stalled = [f for f in ids if net.flow(f).fct < 0]
    assert stalled and all(rcv_nxt[f] < 500_000 for f in stalled)


def test_ecn_marks_at_dequeue_above_kmin():
    net, ids = incast(8, 500_000, kmin_map="1 100000000000 10", kmax_map="1 100000000000 40",
                      pmax_map="1 100000000000 1.0")
    assert net.stats["ecn_marks"] > 0
    net2, _ = incast(2, 200_000)    # queue never above the default 400 KB Kmin
    assert net2.stats["ecn_marks"] == 0


def test_identical_runs_write_identical_fct(tmp_path):
    cfg = dict(kmin_map="1 100000000000 10", kmax_map="1 100000000000 400", buffer_size=2)
    outs = []
    for _ in range(2):
        net, _ = incast(8, 300_000, **cfg)
        outs.append("".join(net.fct_lines()) + "".join(net.pfc_lines()))
    assert outs[0] == outs[1]
    assert outs[0].count("\n") >= 8


def test_reference_ring_matches_flow_by_flow(data_dir):
    """The intra-rack ring never congests, so the reference's FCTs are those of
    a fixed-rate run: every flow must match to the nanosecond."""
    runs = os.path.join(data_dir, "hpcc-ns3-runs")
    for name in ("ring_intra_dcqcn", "ring_intra_dctcp"):
        d = os.path.join(runs, name)
        cfg = wh.Config.from_file(os.path.join(d, "config.txt")).copy(cc="none")
        net = wh.Network(os.path.join(d, "topology.txt"), cfg)
        for f in wh.read_flows(os.path.join(d, "flow.txt"), net.topology):
            net.send(f.src, f.dst, f.size, at=f.start_ps, pg=f.pg, dport=f.dport)
        net.run()
        ours = {tuple(l.split()[:4]): tuple(int(x) for x in l.split()[4:]) for l in net.fct_lines()}
        ref = parse_fct(os.path.join(d, "fct.txt"))
        assert ours.keys() == ref.keys()
        for k in ref:
            assert ours[k] == ref[k], k


def test_link_errors_are_recovered_by_go_back_n():
    net = wh.Network(wh.star(2), error_rate_per_link=0.001, seed=3, rto=50)
    fid = net.send(0, 1, 2_000_000)
    net.run()
    st = net.stats
    assert st["corrupted"] > 0
    rcv_nxt, _, retx = net.delivered()
    assert net.flow(fid).fct > 0
    assert rcv_nxt[fid] == 2_000_000
    assert retx[fid] > 0


def test_packet_limit_raises_clear_error():
    net = wh.Network(wh.star(9), max_packets=100)
    for i in range(8):
        net.send(i, 8, 1_000_000)
    with pytest.raises(wh.ResourceLimitError):
        net.run()


def test_flow_limit_raises_clear_error():
    net = wh.Network(wh.star(3), max_flows=2)
    net.send(0, 2, 1000)
    net.send(1, 2, 1000)
    with pytest.raises(wh.ResourceLimitError):
        net.send(0, 1, 1000)
