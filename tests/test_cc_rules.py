"""Every congestion-control update rule against hand-computed values, through
the kernel's own C functions (``_py_`` wrappers)."""
import pytest

import wormhole as wh
from wormhole import cc as ccmod
from wormhole._core.testing import _py_dcqcn, _py_dctcp_on_ack, _py_hpcc_on_ack, _py_timely_on_ack

G100 = 100 * 10**9


def params(**over):
    return ccmod.kernel_params(wh.Config(**over))


# ---------------------------------------------------------------- DCQCN

DCQCN = dict(cc="dcqcn", ewma_gain=1 / 256, min_rate="1000Mb/s", rate_ai="20Mb/s", rate_hai="200Mb/s",
             fast_recovery_times=1)


def test_dcqcn_alpha_update():
    p = params(**DCQCN)
    st, _, _ = _py_dcqcn("alpha", {"alpha": 0.5, "alpha_cnp": 1, "first_cnp": 0}, p, G100, G100)
    assert st["alpha"] == pytest.approx(0.5 * 255 / 256 + 1 / 256)
    assert st["alpha_cnp"] == 0
    st, _, _ = _py_dcqcn("alpha", {"alpha": 0.5, "alpha_cnp": 0, "first_cnp": 0}, p, G100, G100)
    assert st["alpha"] == 0.5 * 255 / 256


def test_dcqcn_first_cnp_sets_alpha_and_target_and_asks_for_timers():
    p = params(**DCQCN)
    st, rate, first = _py_dcqcn("cnp", {"alpha": 0.3}, p, 80 * 10**9, G100)
    assert first and st["alpha"] == 1.0 and st["target_rate"] == rate == 80 * 10**9
    assert st["alpha_cnp"] == 0 and st["dec_cnp"] == 1 and st["first_cnp"] == 0
    st, rate, first = _py_dcqcn("cnp", st, p, rate, G100)
    assert not first and st["alpha_cnp"] == 1 and st["dec_cnp"] == 1


def test_dcqcn_rate_decrease():
    p = params(**DCQCN)
    base = {"alpha": 0.5, "target_rate": 90 * 10**9, "first_cnp": 0, "dec_cnp": 1, "rp_stage": 0}
    st, rate, cut = _py_dcqcn("decrease", dict(base), p, 80 * 10**9, G100)
    assert cut and rate == int(80e9 * (1 - 0.25))
    assert st["target_rate"] == 90 * 10**9          # no increase since the last cut: Rt kept
    assert st["rp_stage"] == 0 and st["dec_cnp"] == 0
    st, rate, cut = _py_dcqcn("decrease", dict(base, rp_stage=3), p, 80 * 10**9, G100)
    assert st["target_rate"] == 80 * 10**9           # after increases: Rt = Rc before the cut
    st, rate, cut = _py_dcqcn("decrease", dict(base), params(**dict(DCQCN, clamp_target_rate=True)), 80 * 10**9, G100)
    assert st["target_rate"] == 80 * 10**9           # CLAMP_TARGET_RATE
    st, rate, cut = _py_dcqcn("decrease", dict(base, alpha=1.0), p, 1_500_000_000, G100)
    assert rate == 1_000_000_000                     # floored at MIN_RATE
    st, rate, cut = _py_dcqcn("decrease", dict(base, dec_cnp=0), p, 80 * 10**9, G100)
    assert not cut and rate == 80 * 10**9            # no CNP in the period: no cut


def test_dcqcn_increase_stages():
    p = params(**DCQCN)
    s0 = {"alpha": 0.5, "target_rate": 80 * 10**9, "first_cnp": 0, "rp_stage": 0}
    st, rate, _ = _py_dcqcn("increase", dict(s0), p, 50 * 10**9 + 1, G100)       # fast recovery
    assert rate == 25 * 10**9 + 40 * 10**9 and st["target_rate"] == 80 * 10**9 and st["rp_stage"] == 1
    st, rate, _ = _py_dcqcn("increase", dict(s0, rp_stage=1), p, 50 * 10**9, G100)  # additive
    assert st["target_rate"] == 80 * 10**9 + 20 * 10**6 and rate == 25 * 10**9 + 40_010_000_000
    st, rate, _ = _py_dcqcn("increase", dict(s0, rp_stage=2), p, 50 * 10**9, G100)  # hyper
    assert st["target_rate"] == 80 * 10**9 + 200 * 10**6
    st, rate, _ = _py_dcqcn("increase", dict(s0, rp_stage=2, target_rate=G100 - 10), p, 50 * 10**9, G100)
    assert st["target_rate"] == G100                 # capped at line rate


def test_dcqcn_timers_armed_only_after_a_cnp():
    net = wh.Network(wh.star(2), cc="dcqcn")
    net.send(0, 1, 1_000_000)
    net.run()
    assert net.stats["events_by_kind"]["cc_timer"] == 0      # uncongested: no CNP, no timer
    net = wh.Network(wh.star(9), cc="dcqcn", kmin_map="1 100000000000 10", kmax_map="1 100000000000 50")
    for i in range(8):
        net.send(i, 8, 500_000)
    net.run()
    assert net.stats["events_by_kind"]["cc_timer"] > 0
    assert net.stats["ecn_marks"] > 0                         # the timers follow CNPs, which follow marks
    assert net.peek() is None                                # finished flows leave no timer behind


# ---------------------------------------------------------------- HPCC

HPCC = dict(cc="hpcc", rate_ai="50Mb/s", min_rate="1000Mb/s", u_target=0.95, mi_thresh=5, fast_react=True,
            int_multi=1)
WIN = 104_000
T = 8320


def hop(t, b, q):
    return (t, b, q, G100)


def test_hpcc_first_ack_only_records():
    st, changed, _ = _py_hpcc_on_ack({}, params(**HPCC), [hop(1000, 128 * 10, 0)], 1000, 50_000, G100, T, WIN)
    assert not changed and st["last_update_seq"] == 50_000 and st["hops"][0][:3] == (1000, 1280, 0)


def test_hpcc_multiplicative_update_with_ewma():
    prev = {"last_update_seq": 10_000, "cur_rate": G100, "inc_stage": 0, "u": 1.0, "hops": [hop(1000, 0, 0)]}
    st, changed, rate = _py_hpcc_on_ack(prev, params(**HPCC), [hop(2000, 12_800, 8_000)], 20_000, 60_000,
                                        G100, T, WIN)
    u = 12_800 * 8 / 1e-6 / G100 + 0.0                 # min(qlen) = 0 with the previous record
    U = (1.0 * (T - 1000) + u * 1000) / T
    expect = int(G100 / (U / 0.95)) + 50 * 10**6
    assert changed and rate == expect
    assert st["cur_rate"] == expect and st["inc_stage"] == 0 and st["u"] == pytest.approx(U)
    assert st["last_update_seq"] == 60_000


def test_hpcc_uses_min_of_the_two_queue_lengths():
    prev = {"last_update_seq": 10_000, "cur_rate": G100, "u": 1.0, "hops": [hop(1000, 0, 40_000)]}
    st, _, _ = _py_hpcc_on_ack(prev, params(**HPCC), [hop(2000, 0, 80_000)], 20_000, 60_000, G100, T, WIN)
    u = 40_000 * G100 / G100 / WIN
    assert st["u"] == pytest.approx((T - 1000 + u * 1000) / T)


def test_hpcc_additive_stage_below_target_and_mi_thresh():
    prev = {"last_update_seq": 10_000, "cur_rate": 50 * 10**9, "inc_stage": 2, "u": 0.5, "hops": [hop(1000, 0, 0)]}
    st, changed, rate = _py_hpcc_on_ack(prev, params(**HPCC), [hop(2000, 6_400, 0)], 20_000, 60_000, G100, T, WIN)
    assert rate == 50 * 10**9 + 50 * 10**6 and st["inc_stage"] == 3
    st, changed, rate = _py_hpcc_on_ack(dict(prev, inc_stage=5), params(**HPCC), [hop(2000, 6_400, 0)],
                                        20_000, 60_000, G100, T, WIN)
    U = (0.5 * (T - 1000) + 0.512 * 1000) / T
    assert st["inc_stage"] == 0 and rate == int(50e9 / (U / 0.95)) + 50 * 10**6


def test_hpcc_fast_react_does_not_commit():
    prev = {"last_update_seq": 30_000, "cur_rate": G100, "inc_stage": 0, "u": 1.0, "hops": [hop(1000, 0, 0)]}
    st, changed, rate = _py_hpcc_on_ack(prev, params(**HPCC), [hop(2000, 12_800, 0)], 20_000, 60_000, G100, T, WIN)
    assert changed and rate < G100
    assert st["cur_rate"] == G100 and st["last_update_seq"] == 30_000     # Rc and the RTT mark kept
    st, changed, _ = _py_hpcc_on_ack(prev, params(**dict(HPCC, fast_react=False)), [hop(2000, 12_800, 0)], 20_000,
                                     60_000, G100, T, WIN)
    assert not changed


def test_hpcc_tau_capped_at_base_rtt_and_time_wraps():
    prev = {"last_update_seq": 10_000, "cur_rate": G100, "u": 1.0, "hops": [hop((1 << 24) - 500, 0, 0)]}
    st, _, _ = _py_hpcc_on_ack(prev, params(**HPCC), [hop(500, 1280, 0)], 20_000, 60_000, G100, T, WIN)
    u = 1280 * 8 / 1e-6 / G100                          # tau = 1000 ns across the 24-bit wrap
    assert st["u"] == pytest.approx((T - 1000 + u * 1000) / T)
    st, _, _ = _py_hpcc_on_ack(prev, params(**HPCC), [hop(20_000 - 500, 128, 0)], 20_000, 60_000, G100, T, WIN)
    assert st["u"] == pytest.approx(128 * 8 / 20e-6 / G100)    # tau = 20 us > T: the sample replaces U
    st, _, _ = _py_hpcc_on_ack(prev, params(**HPCC), [hop(20_000 - 500, 0, 0)], 20_000, 60_000, G100, T, WIN)
    assert st["u"] == 1.0      # u = 0 never beats the initial max (0): dt stays 0, U unchanged (as the reference)


# ---------------------------------------------------------------- TIMELY

TIMELY = dict(cc="timely", rate_ai="100Mb/s", rate_hai="500Mb/s", min_rate="1000Mb/s")
R50 = 50 * 10**9


def timely(state, rtt, ack=2000, snd=5000):
    return _py_timely_on_ack(dict({"last_update_seq": 1000, "cur_rate": R50, "inc_stage": 0, "last_rtt": 60_000,
                                   "rtt_diff": 0.0}, **state), params(**TIMELY), ack, snd, rtt, G100, R50)


def test_timely_low_rtt_increases():
    st, changed, rate = timely({}, 40_000)
    assert changed and rate == R50 + 100 * 10**6 and st["inc_stage"] == 1
    assert st["rtt_diff"] == pytest.approx(0.875 * (40_000 - 60_000))
    assert st["last_rtt"] == 40_000 and st["last_update_seq"] == 5000


def test_timely_high_rtt_decreases():
    st, _, rate = timely({}, 600_000)
    assert rate == int(R50 * (1 - 0.8 * (1 - 500_000 / 600_000))) and st["inc_stage"] == 0


def test_timely_negative_gradient_increases_and_hai_after_five():
    st, _, rate = timely({"last_rtt": 80_000}, 70_000)
    assert rate == R50 + 100 * 10**6
    st, _, rate = timely({"last_rtt": 80_000, "inc_stage": 5}, 70_000)
    assert rate == R50 + 500 * 10**6


def test_timely_positive_gradient_decreases():
    st, _, rate = timely({"last_rtt": 60_000}, 70_000)
    g = 0.875 * 10_000 / 20_000
    assert rate == int(R50 * (1 - 0.8 * g))


def test_timely_once_per_rtt_and_first_rtt():
    st, changed, rate = timely({"last_update_seq": 6000}, 40_000, ack=5000)
    assert not changed and rate == R50
    st, changed, rate = timely({"last_update_seq": 0}, 40_000)
    assert not changed and st["last_rtt"] == 40_000 and st["last_update_seq"] == 5000


# ---------------------------------------------------------------- DCTCP

DCTCP = dict(cc="dctcp", ewma_gain=1 / 16, dctcp_rate_ai="615Mb/s", min_rate="1000Mb/s")


def test_dctcp_alpha_update_per_window():
    st, rate = _py_dctcp_on_ack({"last_update_seq": 10_000, "batch": 10, "ecn_cnt": 4, "alpha": 1.0},
                                params(**DCTCP), 12_000, False, 30_000, G100, R50)
    assert st["alpha"] == pytest.approx(15 / 16 + 0.4 / 16)
    assert st["batch"] == (30_000 - 12_000) // 1000 + 1 and st["ecn_cnt"] == 0
    assert rate == R50 + 615 * 10**6                  # new window outside CWR: additive increase


def test_dctcp_cut_once_per_window_cwr():
    p = params(**DCTCP)
    st, rate = _py_dctcp_on_ack({"last_update_seq": 50_000, "alpha": 0.5, "batch": 10}, p, 12_000, True, 30_000,
                                G100, R50)
    assert rate == int(R50 * 0.75) and st["ca_state"] == 1 and st["high_seq"] == 30_000
    st, rate2 = _py_dctcp_on_ack(st, p, 13_000, True, 31_000, G100, rate)
    assert rate2 == rate                              # in CWR: no second cut
    st, rate3 = _py_dctcp_on_ack(st, p, 30_001, False, 40_000, G100, rate2)
    assert st["ca_state"] == 0                        # ACK past high_seq ends CWR
