"""Loss-based TCP (NewReno and CUBIC): each rule against hand-computed values
through the kernel's own C functions (``_py_tcp``), then whole runs on a
drop-tail bottleneck (PFC off)."""
import math

import numpy as np
import pytest

import wormhole as wh
from wormhole import cc as ccmod
from wormhole._core.testing import _py_tcp
from wormhole.units import MS, US

P = ccmod.kernel_params(wh.Config(cc="tcp", mtu=1000))       # Linux's defaults, packets of 1000 bytes


def tcp(step, state, cubic=False, **kw):
    return _py_tcp(step, state, P, cubic, **kw)


def test_preset_is_a_loss_based_tcp_without_pfc():
    c = wh.Config.preset("tcp")
    assert c.cc == "tcp" and not c.pfc and not c.ecn and c.rto == 200000.0 and c.mtu == 1448
    assert wh.Config.preset("cubic").cc == "cubic"
    assert P["tcp_init_cwnd"] == 10.0 and P["tcp_max_cwnd"] == pytest.approx(4194304 / 1000)
    assert P["tcp_beta"] == 0.5 and P["cubic_beta"] == 0.7 and P["cubic_c"] == 0.4
    assert P["tcp_pto_min"] == 10 * MS and P["tcp_rto_min"] == 200 * MS


def test_new_connection_starts_with_ten_packets_in_slow_start():
    st, _, pto, rto = tcp("init", {})
    assert st["cwnd"] == 10.0 and st["ssthresh"] == pytest.approx(4194.304)
    assert pto == 10 * MS and rto == 200 * MS                   # no RTT sample yet: the floors


def test_slow_start_adds_a_packet_per_packet_acked_up_to_ssthresh():
    st, _, _, _ = tcp("ack", {"cwnd": 10.0, "last_acked": 5000}, ack_seq=7000, rtt=20 * US, now=MS)
    assert st["cwnd"] == 12.0 and st["last_acked"] == 7000 and st["srtt"] == 20 * US and st["rttvar"] == 10 * US
    assert st["last_progress"] == MS
    # 3 packets acked with 1 packet left below ssthresh: 1 in slow start, 2 in congestion avoidance
    st, _, _, _ = tcp("ack", {"cwnd": 10.0, "ssthresh": 11.0, "last_acked": 0}, ack_seq=3000, rtt=20 * US, now=MS)
    assert st["cwnd"] == pytest.approx(11.0 + 2 / 11.0)


def test_congestion_avoidance_adds_one_packet_per_window():
    st, _, _, _ = tcp("ack", {"cwnd": 20.0, "ssthresh": 10.0, "last_acked": 0, "srtt": 40 * US}, ack_seq=1000,
                   rtt=80 * US, now=MS)
    assert st["cwnd"] == pytest.approx(20.05)
    assert st["srtt"] == (7 * 40 * US + 80 * US) // 8           # EWMA 1/8 (RFC 6298)
    assert st["rttvar"] == (3 * 0 + 40 * US) // 4               # EWMA 1/4 of |srtt - rtt|, before srtt moves
    st, _, _, _ = tcp("ack", {"cwnd": 20.0, "ssthresh": 10.0, "last_acked": 1000}, ack_seq=1000, rtt=80 * US, now=MS)
    assert st["cwnd"] == 20.0                                   # nothing new acknowledged


def test_a_window_that_does_not_limit_the_sender_does_not_grow():
    # 5 packets in flight before the ACK (snd_nxt - last_acked), cwnd 20 >= 2 x 5: application-limited
    st, _, _, _ = tcp("ack", {"cwnd": 20.0, "last_acked": 10_000}, ack_seq=11_000, rtt=20 * US, now=MS,
                   snd_nxt=15_000)
    assert st["cwnd"] == 20.0 and st["last_acked"] == 11_000
    st, _, _, _ = tcp("ack", {"cwnd": 20.0, "last_acked": 10_000}, ack_seq=11_000, rtt=20 * US, now=MS,
                   snd_nxt=21_000)                              # 11 in flight: it grows
    assert st["cwnd"] == 21.0


def test_a_loss_halves_the_window_once_per_rtt():
    s0 = {"cwnd": 40.0, "srtt": 100 * US, "last_acked": 0}
    st, _, _, _ = tcp("loss", s0, ack_seq=5000, now=MS)
    assert st["cwnd"] == 20.0 and st["ssthresh"] == 20.0 and st["losses"] == 1 and st["last_reduce"] == MS
    assert st["last_acked"] == 5000
    again, _, _, _ = tcp("loss", st, ack_seq=5000, now=MS + 99 * US)     # the same window: no second cut
    assert again["cwnd"] == 20.0 and again["losses"] == 1
    later, _, _, _ = tcp("loss", st, ack_seq=9000, now=MS + 100 * US)    # an RTT later: data sent after the cut
    assert later["cwnd"] == 10.0 and later["losses"] == 2
    small, _, _, _ = tcp("loss", {"cwnd": 3.0}, ack_seq=0, now=MS)
    assert small["ssthresh"] == 2.0 and small["cwnd"] == 2.0          # min_ssthresh


def test_a_timeout_restarts_slow_start_from_one_packet():
    st, _, _, _ = tcp("rto", {"cwnd": 40.0, "srtt": 100 * US}, now=5 * MS)
    assert st["cwnd"] == 1.0 and st["ssthresh"] == 20.0 and st["timeouts"] == 1
    st2, _, _, _ = tcp("rto", st, now=5 * MS + 50 * US)                  # within the RTT: ssthresh stays
    assert st2["cwnd"] == 1.0 and st2["ssthresh"] == 20.0 and st2["timeouts"] == 2
    st3, _, _, _ = tcp("ack", st, ack_seq=1000, rtt=100 * US, now=6 * MS, snd_nxt=1000)
    assert st3["cwnd"] == 2.0                                         # slow start again


def test_loss_timer_probes_then_times_out_with_backoff():
    assert tcp("init", {"srtt": MS})[2] == 10 * MS                   # PTO = max(2 srtt, 10 ms)
    assert tcp("init", {"srtt": 8 * MS})[2] == 16 * MS
    assert tcp("init", {"srtt": 10 * MS, "rttvar": 2 * MS})[3] == 200 * MS     # RTO = max(200 ms, srtt + 4 rttvar)
    assert tcp("init", {"srtt": 100 * MS, "rttvar": 30 * MS})[3] == 220 * MS
    assert tcp("init", {"srtt": MS, "backoff": 2})[3] == 800 * MS             # doubled per timeout in a row
    # the first time the timer is due: a probe, the window cut as on a loss, the next due an RTO later
    st, _, _, _ = tcp("timer", {"cwnd": 30.0, "srtt": MS}, now=20 * MS)
    assert st["cwnd"] == 15.0 and st["probes"] == 1 and st["probed"] == 1 and st["timeouts"] == 0
    assert st["last_progress"] == 20 * MS
    # due again without progress: a retransmission timeout, one packet, the timeout doubled
    st2, _, _, rto = tcp("timer", st, now=220 * MS)
    assert st2["cwnd"] == 1.0 and st2["timeouts"] == 1 and st2["backoff"] == 1 and rto == 400 * MS
    assert st2["ssthresh"] == 7.5                                     # an RTT after the probe's cut: cut again
    # progress clears the probe and the backoff
    st3, _, _, _ = tcp("ack", st2, ack_seq=1000, rtt=MS, now=230 * MS, snd_nxt=2000)
    assert st3["probed"] == 0 and st3["backoff"] == 0 and st3["cwnd"] == 2.0


def test_window_stays_within_its_bounds():
    st, _, _, _ = tcp("ack", {"cwnd": 4194.0, "ssthresh": 1.0, "last_acked": 0}, ack_seq=10_000_000, now=MS)
    assert st["cwnd"] == pytest.approx(4194.304)
    st, _, _, _ = tcp("init", {"cwnd": 0.2})
    assert st["cwnd"] == 0.2                                          # init applies no bound to a given state
    st, _, _, _ = tcp("rto", {"cwnd": 0.2}, now=MS)
    assert st["cwnd"] == 1.0


def test_cubic_loss_keeps_seven_tenths_and_remembers_w_max():
    st, _, _, _ = tcp("loss", {"cwnd": 100.0}, cubic=True, ack_seq=0, now=MS)
    assert st["cwnd"] == pytest.approx(70.0) and st["ssthresh"] == pytest.approx(70.0)
    assert st["w_max"] == 100.0 and st["epoch_start"] == -1
    # fast convergence: a loss below the previous W_max remembers less
    st, _, _, _ = tcp("loss", {"cwnd": 80.0, "w_max": 100.0}, cubic=True, ack_seq=0, now=MS)
    assert st["w_max"] == pytest.approx(80.0 * 1.7 / 2) and st["cwnd"] == pytest.approx(56.0)


def test_cubic_growth_follows_the_cubic_or_its_reno_friendly_floor():
    # the epoch begins at the first ACK after the cut: K = cbrt((W_max - cwnd) / C) seconds
    s0 = {"cwnd": 70.0, "ssthresh": 70.0, "w_max": 100.0, "epoch_start": -1, "last_acked": 0, "srtt": 0}
    st, w, _, _ = tcp("ack", s0, cubic=True, ack_seq=1000, rtt=100 * US, now=MS)
    k = (30 / 0.4) ** (1 / 3)
    assert st["epoch_start"] == MS and st["k"] == pytest.approx(k * 1e12)
    target = 0.4 * (100e-6 - k) ** 3 + 100.0                  # W(srtt): hardly above cwnd this early
    assert w == pytest.approx(0.4 * (0 - k) ** 3 + 100.0) and w == pytest.approx(70.0)   # W(0) = cwnd
    cubic = 70.0 + (target - 70.0) / 70.0
    reno = 70.0 + 3 * 0.3 / 1.7 / cubic                       # W_est after one packet
    assert cubic - 70.0 < 1e-4 and reno > cubic
    assert st["w_est"] == pytest.approx(reno)
    assert st["cwnd"] == pytest.approx(reno)                  # the Reno-friendly floor wins at a 100 us RTT
    # seconds later (a long RTT), the cubic is above the window: cwnd += (W - cwnd) / cwnd
    late = dict(st, epoch_start=0, last_acked=0, srtt=100 * MS, w_est=0.0)
    t = 2 * 10**12
    st2, _, _, _ = tcp("ack", late, cubic=True, ack_seq=1000, rtt=100 * MS, now=t)
    target = 0.4 * (2.1 - k) ** 3 + 100.0
    assert st2["cwnd"] == pytest.approx(st["cwnd"] + (target - st["cwnd"]) / st["cwnd"])


def test_parameters_are_checked():
    with pytest.raises(wh.ConfigError):
        wh.Config(cc="tcp", tcp_beta=1.0)
    with pytest.raises(wh.ConfigError):
        wh.Config(cc="cubic", tcp_init_cwnd=0.5)


# ---------------------------------------------------------------- whole runs

@pytest.mark.parametrize("cc", ["tcp", "cubic"])
def test_two_flows_on_a_drop_tail_bottleneck_share_it_with_a_sawtooth(cc):
    """A second flow joins 2 ms after the first on a 10 Gb/s bottleneck fed by
    40 Gb/s hosts: the buffer overflows, each flow's window saws (cut on a
    loss, regrown), and the two end up with the same share of a busy link."""
    net = wh.Network(wh.dumbbell(2, 2, rate="40Gbps", bottleneck="10Gbps"), wh.Config.preset(cc, buffer_size=1.0))
    flows = [net.send(i, 2 + i, 10**11, at=2 * i * MS) for i in range(2)]
    t1, t2 = 40 * MS, 120 * MS
    net.run(until=t1)
    r1, _, _ = net.delivered()
    cw = [[], []]
    for k in range(1, 81):
        net.run(until=t1 + k * MS)
        for i, f in enumerate(flows):
            cw[i].append(net.cc_state(f)["cwnd"])
    r2, _, _ = net.delivered()
    x = (r2 - r1)[flows] * 8 / ((t2 - t1) / 1e12)
    assert abs(x[0] - x[1]) / x.mean() < 0.1, x
    assert x.sum() > 0.9 * 10e9 * 1448 / (1448 + 56), x       # the bottleneck stays busy (payload share)
    assert net.stats["drops"] > 0 and net.stats["pfc_pauses"] == 0
    for i, f in enumerate(flows):
        st = net.cc_state(f)
        w = np.array(cw[i])
        assert st["losses"] >= 5 and w.min() < 0.75 * w.max(), (st, w.min(), w.max())
        assert st["timeouts"] == 0


@pytest.mark.parametrize("cc", ["tcp", "cubic"])
def test_a_short_flow_behind_a_long_one_waits_for_the_queue(cc):
    """The long flow keeps the drop-tail buffer full; a 20 kB flow through the
    same bottleneck waits behind that queue (DCTCP keeps it short)."""
    fct = {}
    for c in (cc, "dctcp"):
        net = wh.Network(wh.dumbbell(2, 2, rate="40Gbps", bottleneck="10Gbps"),
                         wh.Config.preset(c, buffer_size=1.0, sample_interval=10))
        net.send(0, 2, 10**10)
        short = net.send(1, 3, 20_000, at=20 * MS)
        net.run(until=30 * MS)
        s = net.samples()
        port = net.fabric.nbr_port[4][5]                        # left switch -> right switch
        q = s[(s["kind"] == "queue") & (s["index"] == port) & (s["time"] >= 10 * MS) & (s["time"] < 20 * MS)]
        qdelay = q["value"].mean() * 8 / 10e9 * 1e12            # ps behind the standing queue
        fct[c] = (net.flow(short).fct, net.flow(short).standalone_fct, qdelay, q["value"].max() * 8 / 10e9 * 1e12)
    f, alone, qd, qmax = fct[cc]
    assert qd > 40 * US                                         # a standing queue of tens of kB
    assert f >= alone + qd and f < alone + 3 * qmax, fct[cc]    # behind the queue, no timeout
    assert f > 2.5 * fct["dctcp"][0], fct
