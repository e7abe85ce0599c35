"""Swift (delay-based window, SIGCOMM 2020): each rule against hand-computed
values through the kernel's own C functions (``_py_swift``), then whole runs."""
import math

import numpy as np
import pytest

import wormhole as wh
from wormhole import cc as ccmod
from wormhole._core.testing import _py_swift, _py_swift_pace_rate, _py_tx_time_ps
from wormhole.units import MS, US

SWIFT = dict(cc="swift", swift_base_target=20.0, swift_hop_scale=3.0, swift_fs_range=100.0,
             swift_fs_min_cwnd=0.1, swift_fs_max_cwnd=100.0, swift_ai=1.0, swift_beta=0.8, swift_max_mdf=0.5,
             swift_min_cwnd=0.01, swift_max_cwnd=1000.0)
P = ccmod.kernel_params(wh.Config(**SWIFT))
# flow scaling by hand: fs(cwnd) = alpha / sqrt(cwnd) + beta is 100 us at 0.1 packets and 0 at 100
ALPHA = 100e6 / (1 / math.sqrt(0.1) - 1 / math.sqrt(100))
BETA = -ALPHA / 10


def target(cwnd, hops=0):
    return 20e6 + min(max(ALPHA / math.sqrt(cwnd) + BETA, 0.0), 100e6) + hops * 3e6


def swift(step, state, **kw):
    return _py_swift(step, state, P, **kw)


def test_flow_scaling_target_by_hand():
    _, t = swift("target", {"cwnd": 25.0, "hops": 2})
    assert t == pytest.approx(20e6 + ALPHA / 5 - ALPHA / 10 + 2 * 3e6)       # fs(25) = alpha (1/5 - 1/10)
    assert t == pytest.approx(target(25.0, 2))
    assert swift("target", {"cwnd": 0.1})[1] == pytest.approx(20e6 + 100e6)   # fs(fs_min_cwnd) = fs_range
    assert swift("target", {"cwnd": 100.0})[1] == pytest.approx(20e6)         # fs(fs_max_cwnd) = 0
    assert swift("target", {"cwnd": 0.02})[1] == pytest.approx(120e6)         # clamped to the range
    assert swift("target", {"cwnd": 400.0, "hops": 1})[1] == pytest.approx(23e6)   # never negative


def test_one_ack_below_target_adds_ai_over_cwnd():
    st, _ = swift("ack", {"cwnd": 10.0, "srtt": 10 * US, "last_acked": 5000}, ack_seq=6000, delay=15 * US,
                  now=100 * US)
    assert st["cwnd"] == pytest.approx(10.0 + 1.0 / 10.0)
    assert st["last_acked"] == 6000 and st["delay"] == 15 * US
    assert st["srtt"] == (7 * 10 * US + 15 * US) // 8                         # EWMA 1/8
    st, _ = swift("ack", {"cwnd": 10.0, "last_acked": 5000}, ack_seq=7000, delay=15 * US, now=100 * US)
    assert st["cwnd"] == pytest.approx(10.0 + 2 / 10.0)                       # two packets acknowledged
    st, _ = swift("ack", {"cwnd": 10.0, "last_acked": 5000}, ack_seq=5000, delay=15 * US, now=100 * US)
    assert st["cwnd"] == 10.0                                                 # nothing new acknowledged


def test_below_one_packet_the_increase_is_ai_per_packet():
    st, _ = swift("ack", {"cwnd": 0.5, "srtt": 10 * US}, ack_seq=1000, delay=15 * US, now=100 * US)
    assert st["cwnd"] == pytest.approx(1.5) and st["pace_gap"] == 0         # back above a packet: no pacing


def test_above_target_decreases_by_the_computed_factor_once_per_rtt():
    t0 = 1000 * US
    s0 = {"cwnd": 50.0, "srtt": 30 * US, "last_acked": 10_000}
    st, _ = swift("ack", s0, ack_seq=11_000, delay=40 * US, now=t0)
    T = target(50.0)
    assert st["target"] == pytest.approx(T)
    factor = 1 - 0.8 * (40e6 - T) / 40e6
    assert 0.5 < factor < 1
    assert st["cwnd"] == pytest.approx(50.0 * factor) and st["last_decrease"] == t0
    srtt = (7 * 30 * US + 40 * US) // 8
    assert st["srtt"] == srtt
    # within one srtt of that decrease: no second one
    st2, _ = swift("ack", st, ack_seq=12_000, delay=40 * US, now=t0 + 10 * US)
    assert st2["cwnd"] == st["cwnd"] and st2["last_decrease"] == t0
    # one srtt (as it stands before this ACK) later: the next decrease
    st3, _ = swift("ack", st2, ack_seq=13_000, delay=40 * US, now=t0 + st2["srtt"])
    w = st["cwnd"]
    assert st3["cwnd"] == pytest.approx(w * (1 - 0.8 * (40e6 - target(w)) / 40e6))
    assert st3["last_decrease"] == t0 + st2["srtt"]


def test_decrease_is_bounded_by_max_mdf():
    st, _ = swift("ack", {"cwnd": 50.0, "srtt": 30 * US}, ack_seq=1000, delay=1000 * US, now=MS)
    assert st["cwnd"] == pytest.approx(25.0)           # 1 - 0.8 (1000 - 20.x) / 1000 < 1 - max_mdf


def test_window_stays_within_its_bounds():
    st, _ = swift("ack", {"cwnd": 0.012, "srtt": 30 * US}, ack_seq=1000, delay=1000 * US, now=MS)
    assert st["cwnd"] == pytest.approx(0.01)           # min_cwnd
    st, _ = swift("ack", {"cwnd": 999.9995}, ack_seq=1000, delay=US, now=MS)
    assert st["cwnd"] == 1000.0                       # max_cwnd


def test_pacing_interval_below_one_packet():
    st, _ = swift("target", {"cwnd": 0.25, "srtt": 10 * US})
    assert st["pace_gap"] == 40 * US                  # one packet every srtt / cwnd
    pkt = 1000 + 48 + 8                               # payload, headers, Swift's timestamp
    rate = _py_swift_pace_rate(pkt, st["pace_gap"], 100 * 10**9)
    assert rate == int(pkt * 8e12 / (40 * US))
    assert abs(_py_tx_time_ps(pkt, rate) - 40 * US) <= 1000      # the NIC spaces packets by that gap (ns)
    assert swift("target", {"cwnd": 1.0, "srtt": 10 * US})[0]["pace_gap"] == 0
    assert _py_swift_pace_rate(pkt, 0, 100 * 10**9) == 100 * 10**9
    st, _ = swift("target", {"cwnd": 0.5}, base_rtt=8 * US)
    assert st["pace_gap"] == 16 * US                  # before the first ACK: the base RTT


def test_loss_and_timeouts():
    st, _ = swift("loss", {"cwnd": 40.0, "srtt": 10 * US}, ack_seq=3000, now=MS)
    assert st["cwnd"] == 20.0 and st["last_acked"] == 3000 and st["last_decrease"] == MS
    st2, _ = swift("loss", st, ack_seq=3000, now=MS + 5 * US)
    assert st2["cwnd"] == 20.0                        # once per RTT
    st, _ = swift("rto", {"cwnd": 40.0, "srtt": 10 * US}, now=MS)
    assert st["cwnd"] == 20.0 and st["retx_cnt"] == 1
    st, _ = swift("rto", {"cwnd": 40.0, "srtt": 10 * US, "retx_cnt": 4, "last_decrease": MS}, now=MS + US)
    assert st["cwnd"] == pytest.approx(0.01) and st["retx_cnt"] == 5    # swift_retx_reset in a row: min_cwnd
    st, _ = swift("ack", st, ack_seq=1000, delay=15 * US, now=MS + 2 * US)
    assert st["retx_cnt"] == 0


def test_parameters_are_checked():
    with pytest.raises(wh.ConfigError, match="swift_fs_min_cwnd"):
        wh.Network(wh.star(2), cc="swift", swift_fs_min_cwnd=200.0)
    with pytest.raises(wh.ConfigError, match="swift_min_cwnd"):
        wh.Network(wh.star(2), cc="swift", swift_min_cwnd=10.0, swift_max_cwnd=5.0)
    with pytest.raises(wh.ConfigError):
        wh.Config(cc="swift", swift_max_mdf=1.0)


# ---------------------------------------------------------------- whole runs

def test_a_flow_paced_below_one_packet_sends_one_packet_per_two_rtts():
    net = wh.Network(wh.star(2), cc="swift", swift_init_cwnd=0.5, swift_ai=0.0, swift_base_target=1000.0)
    f = net.send(0, 1, 20_000)
    net.run()
    st = net.cc_state(f)
    assert st["cwnd"] == 0.5 and st["pace_gap"] == 2 * st["srtt"]
    fct = net.flow(f).fct
    gap = 2 * st["srtt"]                               # every packet sees the same delay: srtt is that delay
    assert 19 * gap - 2 * US <= fct <= 19 * gap + 2 * st["srtt"] + 2 * US, (fct, gap)


@pytest.mark.parametrize("n, gbps, late", [(2, 10, 2 * MS), (4, 100, MS)])
def test_flows_joining_a_dumbbell_converge_to_the_fair_share_near_the_target_delay(n, gbps, late):
    """Flows join one after the other (line-rate starts, one BDP each); flow
    scaling (a smaller window aims at a longer delay) evens their windows out."""
    net = wh.Network(wh.dumbbell(n, n, rate="%dGbps" % gbps), wh.Config.preset("swift", sample_interval=5))
    flows = [net.send(i, n + i, 10**10, at=i * late) for i in range(n)]
    t1, t2 = 9 * MS, 15 * MS
    net.run(until=t1)
    r1, _, _ = net.delivered()
    net.run(until=t2)
    r2, _, _ = net.delivered()
    x = (r2 - r1)[flows] * 8 / ((t2 - t1) / 1e12)
    fair = x.sum() / n
    assert np.all(np.abs(x - fair) / fair < 0.05), x
    assert x.sum() > 0.95 * gbps * 1e9 * 1000 / 1056                   # the bottleneck stays busy
    # the delay each flow sees is held near its target, and the bottleneck's queue is what makes it
    for f in flows:
        st = net.cc_state(f)
        assert abs(st["srtt"] - st["target"]) < 0.1 * st["target"], st
    s = net.samples()
    port = net.fabric.nbr_port[2 * n][2 * n + 1]                        # left switch -> right switch
    q = s[(s["kind"] == "queue") & (s["index"] == port) & (s["time"] >= t1)]["value"]
    qdelay = q.mean() * 8 / (gbps * 1e9) * 1e12                         # ps
    base = net.fabric.max_rtt_ns * 1000
    target = np.mean([net.cc_state(f)["target"] for f in flows])
    assert abs(qdelay - (target - base)) < 0.15 * (target - base), (qdelay, target, base)


def test_incast_fcts_are_sane():
    n, size = 4, 2_000_000
    net = wh.Network(wh.star(n + 1), cc="swift")
    flows = [net.send(i, n, size) for i in range(n)]
    net.run()
    fct = np.array([net.flow(f).fct for f in flows])
    ideal = n * size * 1056 / 1000 * 8 / 100e9 * 1e12                   # the receiver's link, all headers
    assert net.stats["flows_completed"] == n and net.stats["drops"] == 0
    assert fct.max() >= ideal and fct.max() < 1.2 * ideal, (fct, ideal)
    assert fct.min() > 0.8 * fct.max()                                   # no flow starved
