"""The accelerator's internals, one piece at a time, through the _py_ wrappers of
wormhole._core.testing (a toy simulation: flow i alone on port i), against hand-computed
values: rate windows, goodput measurement, the horizon, the bytes a skip advances."""
import pytest

from wormhole._core import testing as T

REJECT_PFC, REJECT_SPREAD, REJECT_HALVES, REJECT_NO_ROOM, REJECT_SPAN, REJECT_NO_GOODPUT = 0, 1, 2, 3, 10, 12


# ---------------------------------------------------------------- rate windows

def test_rate_window_slides_max_min_and_sum():
    # window of 4 samples, theta 0.3: steady when (max - min) < 0.3 * sum / 4
    rows, last_dec = T._py_rate_window([100, 110, 105, 120, 90, 95, 60, 62], 4, 0.3)
    assert rows == [
        (100, 100, 100, False),     # fewer than 4 samples: never steady
        (110, 100, 210, False),
        (110, 100, 315, False),
        (120, 100, 435, True),      # [100 110 105 120]: 20 < 0.3 * 108.75 = 32.6
        (120, 90, 425, True),       # [110 105 120 90]: 30 < 0.3 * 106.25 = 31.9
        (120, 90, 410, False),      # [105 120 90 95]: 30 < 0.3 * 102.5 = 30.75, but its halves' means
                                    # 112.5 and 92.5 differ by 20 > 0.3 / 4 * 102.5 = 7.7: drifting
        (120, 60, 365, False),      # [120 90 95 60]: 60 > 0.3 * 91.25
        (95, 60, 307, False),       # [90 95 60 62]: the 120 left the window
    ]
    assert last_dec == 6            # samples 2 (105), 4 (90) and 6 (60) fell; 7 (62) rose


def test_rate_window_of_a_length_that_is_no_power_of_two_slides_exactly():
    """Windows live in rings of the next power of two (5 and 6 samples in rings of 8): the sample leaving
    the window is the one l samples back, not the slot being written; max, min and sum against a
    brute-force slide over 40 samples, and steadiness from them (theta, halves' drift)."""
    rates = [100 + (k * 37) % 23 - (k % 5) * 3 for k in range(40)]
    for l in (5, 6):
        theta = 0.3
        rows, _ = T._py_rate_window(rates, l, theta)
        for k, (mx, mn, total, steady) in enumerate(rows):
            win = rates[max(0, k + 1 - l):k + 1]
            assert (mx, mn, total) == (max(win), min(win), sum(win)), (l, k)
            if k + 1 < l:
                assert not steady
                continue
            h = l // 2
            drift = abs(sum(win[l - h:]) / h - sum(win[:l - h]) / (l - h)) > 0.25 * theta * sum(win) / l
            assert steady == ((max(win) - min(win)) < theta * sum(win) / l and not drift), (l, k)


def test_rate_window_whose_halves_drift_apart_is_not_steady():
    # window 8, theta 0.05: [100 100 100 100 102 102 102 102] spreads 2 < 0.05 * 101 = 5.05, but
    # its halves' means differ by 2 > 0.05 / 4 * 101 = 1.26: a convergence still under way
    rows, _ = T._py_rate_window([100] * 4 + [102] * 4, 8, 0.05)
    assert rows[-1][3] is False
    # [100 102 100 102 100 102 100 102]: the same spread, both halves' means 101: steady
    rows, _ = T._py_rate_window([100, 102] * 4, 8, 0.05)
    assert rows[-1][3] is True
    # halves 1000 and 1012: 12 < 0.05 / 4 * 1006 = 12.575, within a quarter of theta
    rows, _ = T._py_rate_window([1000] * 4 + [1012] * 4, 8, 0.05)
    assert rows[-1][3] is True
    rows, _ = T._py_rate_window([1000] * 4 + [1013] * 4, 8, 0.05)     # 13 > 12.58
    assert rows[-1][3] is False


def test_rate_window_spread_at_theta_is_not_steady():
    # [110 100 100 120]: spread 20, mean 107.5; steady needs 20 < theta * 107.5 (its halves'
    # means, 105 and 110, differ by 5 = theta / 4 * 107.5 there: no drift)
    rows, _ = T._py_rate_window([110, 100, 100, 120], 4, 20 / 107.5)
    assert rows[-1][3] is False
    rows, _ = T._py_rate_window([110, 100, 100, 120], 4, 20 / 107.5 + 1e-9)
    assert rows[-1][3] is True
    rows, last_dec = T._py_rate_window([7, 7, 7, 7, 7], 4, 0.0)
    assert [r[3] for r in rows] == [False] * 5 and last_dec == -1   # theta 0: never steady


# ---------------------------------------------------------------- goodput measurement

def steady_samples():
    # one sample per 1000 ps, 1000 bytes acknowledged per 1000 ps
    return [(1000 * k, 1000 * k, 100) for k in range(1, 9)]


def slow_then_fast():
    # 500 bytes per 1000 ps up to t = 4000, then 1500: una 500 1000 1500 2000 3500 5000 6500 8000
    return [(1000 * k, 500 * k if k <= 4 else 2000 + 1500 * (k - 4), 100) for k in range(1, 9)]


def test_goodput_over_the_window():
    # from the oldest sample (t 1000, una 1000) to now (t 8000, una 8000): 7000 B / 7000 ps;
    # halves split at sample 4 (t 5000, una 5000): 4000/4000 and 3000/3000 agree
    assert T._py_goodput(steady_samples(), 8, 0.05, 8000, 8000) == (1.0, 1.0, None)


def test_goodput_whose_halves_disagree_is_not_steady():
    g, sg, why = T._py_goodput(slow_then_fast(), 8, 0.05, 8000, 8000)
    assert g == pytest.approx(7500 / 7000)          # (8000 - 500) / (8000 - 1000)
    # halves: (3500 - 500) / 4000 = 0.75 and (8000 - 3500) / 3000 = 1.5 differ by more than 5%
    assert sg == 0.0 and why == REJECT_HALVES


def test_goodput_is_measured_from_the_last_change_on_the_ports():
    # a change at t 4500: measured from the first sample at or after it (t 5000, una 3500)
    g, sg, why = T._py_goodput(slow_then_fast(), 8, 0.05, 8000, 8000, epoch=4500)
    assert g == 1.5 and sg == 1.5 and why is None   # 4500 / 3000; halves at t 7000: 3000/2000, 1500/1000
    # a change at t 7500 leaves one sample (fewer than l / 4 = 2): no steady goodput yet
    g, sg, why = T._py_goodput(slow_then_fast(), 8, 0.05, 8000, 8000, epoch=7500)
    assert sg == 0.0 and why == REJECT_SPAN


def test_goodput_leaves_idle_time_out():
    # a connection idle for 2000 ps between t 4000 and 6000: samples 5..8 come 2000 ps later
    # with an idle total of 2000; 7000 bytes over (10000 - 1000) - 2000 busy ps
    s = [(1000 * k if k <= 4 else 1000 * k + 2000, 1000 * k, 100, 0 if k <= 4 else 2000) for k in range(1, 9)]
    assert T._py_goodput(s, 8, 0.05, 10000, 8000, idle_now=2000) == (1.0, 1.0, None)
    assert T._py_rate_between(0, 0, 0, 10000, 5000, 5000) == 1.0       # 5000 B over 5000 busy ps
    assert T._py_rate_between(0, 0, 0, 10000, 5000, 10000) == 0.0      # no busy time
    assert T._py_rate_between(0, 100, 0, 10000, 100, 0) == 0.0         # nothing acknowledged


# ---------------------------------------------------------------- horizon

FLOWS = [dict(size=1_000_000, snd_nxt=400_000, goodput=2.0),
         dict(size=2_000_000, snd_nxt=1_000_000, goodput=5.0),
         dict(size=500_000, snd_nxt=500_000, snd_una=500_000, persistent=True, goodput=3.0)]


def test_horizon_is_the_first_flow_to_run_short():
    # room = size - snd_nxt - margin: 599000 B at 2 B/ps = 299500 ps, 999000 B at 5 B/ps =
    # 199800 ps; the idle connection (all acknowledged) has no horizon and gets goodput 0
    h, gp, rejects = T._py_horizon(FLOWS, margin=1000)
    assert h == 199_800.0 and gp == [2.0, 5.0, 0.0] and rejects == {}
    h, _, _ = T._py_horizon(FLOWS[:1], margin=0)
    assert h == 300_000.0


def test_horizon_refuses_pause_no_goodput_and_no_room():
    h, _, rejects = T._py_horizon(FLOWS, margin=1000, paused=1)
    assert h == -1 and rejects == {REJECT_PFC: 1}
    h, _, rejects = T._py_horizon([FLOWS[0], dict(FLOWS[1], goodput=0.0)])
    assert h == -1 and rejects == {REJECT_NO_GOODPUT: 1}
    h, _, rejects = T._py_horizon([dict(FLOWS[0], snd_nxt=999_500)], margin=1000)   # 500 B left < margin
    assert h == -1 and rejects == {REJECT_NO_ROOM: 1}



# ---------------------------------------------------------------- how close a refused partition was

STEADY, JUMPY, IDLE = [100, 102, 98, 100], [100, 150, 100, 150], []


def test_refusal_counts_the_sending_flows_whose_window_was_steady():
    # window 4, theta 0.1: [100 102 98 100] spreads 4 < 10 (steady); [100 150 100 150]
    # spreads 50 > 12.5 (not); the idle connection sends nothing and is not counted
    tested, steady, one_short, rejects = T._py_reject_flow([STEADY, JUMPY, IDLE, STEADY], 4, 0.1)
    assert (tested, steady, one_short) == (3, 2, 1)         # all but one of 3 sending flows steady
    assert rejects == {REJECT_SPREAD: 1}
    tested, steady, one_short, _ = T._py_reject_flow([STEADY, JUMPY, JUMPY], 4, 0.1)
    assert (tested, steady, one_short) == (3, 1, 0)
    tested, steady, one_short, _ = T._py_reject_flow([STEADY[:3], STEADY], 4, 0.1)
    assert (tested, steady, one_short) == (2, 1, 1)         # a window still filling is not steady
    tested, steady, one_short, _ = T._py_reject_flow([JUMPY], 4, 0.1)
    assert (tested, steady, one_short) == (1, 0, 0)         # one flow alone: nothing to agree with


# ---------------------------------------------------------------- bytes advanced in a skip

def test_skip_advances_whole_packets_at_the_goodput():
    assert T._py_skip_bytes(1.5, 10_000, 10**9, 0) == 15_000        # 1.5 B/ps x 10000 ps
    assert T._py_skip_bytes(1.5, 10_333, 10**9, 0) == 15_000        # 15499.5 B: 15 whole packets
    assert T._py_skip_bytes(1.5, 10_333, 10**9, 0, mtu=4000) == 12_000
    assert T._py_skip_bytes(1.5, 10_000, 12_345, 0) == 12_000       # no further than what was posted
    assert T._py_skip_bytes(1.5, 10_000, 12_345, 12_000) == 0       # 345 B left: not a whole packet
    assert T._py_skip_bytes(0.0, 10_000, 10**9, 0) == 0


def test_mirror_advances_as_its_leader():
    # the leader's flow moved from snd_una 1000 to 8800: 7800 B, 7 whole packets
    assert T._py_skip_bytes(0.0, 10_000, 10**9, 0, lead_una0=1000, lead_una=8800) == 7000
    assert T._py_skip_bytes(0.0, 10_000, 5_500, 0, lead_una0=1000, lead_una=8800) == 5000


# ---------------------------------------------------------------- a skip begins between moments

REJECT_SAME_MOMENT = 13


def test_no_skip_while_a_sample_of_the_partition_is_due_at_this_moment():
    # flows 0 and 1 (sending from ports 0 and 1) form partition 0 and are steady at t = 100;
    # flow 2 is in partition 1
    due, rejects, _ = T._py_skip_try_moment(2, [(100, "ack", 1, 1)], 100, other=[2])
    assert due and rejects == {REJECT_SAME_MOMENT: 1}       # flow 1's ACK at this very ps comes first
    due, rejects, _ = T._py_skip_try_moment(2, [(100, "tx", 0, 0), (100, "ack", 0, 0)], 100, other=[2])
    assert due and rejects == {REJECT_SAME_MOMENT: 1}
    assert T._py_skip_try_moment(2, [(101, "ack", 1, 1)], 100, other=[2])[0] is False     # a later moment
    assert T._py_skip_try_moment(2, [(100, "ack", 1, 2)], 100, other=[2])[0] is False     # not at its sender yet
    assert T._py_skip_try_moment(2, [(100, "data", 1, 1)], 100, other=[2])[0] is False    # a data packet
    assert T._py_skip_try_moment(2, [(100, "tx", 0, 0)], 100, other=[2])[0] is False      # no sample in it
    assert T._py_skip_try_moment(2, [(100, "ack", 2, 2)], 100, other=[2])[0] is False     # another partition's
    assert T._py_skip_try_moment(2, [], 100)[0] is False


def test_same_moment_refusal_is_named_in_the_stats():
    from wormhole._core.accel import REJECT_NAMES
    assert REJECT_NAMES[REJECT_SAME_MOMENT] == "same_moment"


# ---------------------------------------------------------------- what the steady test samples

CC_DCQCN, CC_HPCC, CC_TIMELY = 1, 2, 3


def test_hpcc_windows_sample_the_committed_rate():
    # HPCC with fast react paces at the rate of its last ACK (80 Gb/s here) and commits Rc
    # (78 Gb/s) once per RTT: the steady test samples Rc, everything else sees the pacing rate
    assert T._py_cc_rates(CC_HPCC, 80_000_000_000, 78_000_000_000) == (80_000_000_000, 78_000_000_000)
    # the others: their send rate (DCQCN paces at its current rate; TIMELY's rate is its committed one)
    assert T._py_cc_rates(CC_DCQCN, 55_000_000_000, 78_000_000_000) == (55_000_000_000, 55_000_000_000)
    assert T._py_cc_rates(CC_TIMELY, 55_000_000_000, 78_000_000_000) == (55_000_000_000, 55_000_000_000)


def test_no_memo_replay_starts_while_the_moment_of_its_partition_is_open():
    # a replay applies stored bytes and state to every flow at once: a transmission end still
    # due at this ps on one twin's NIC would leave that twin a packet behind the others
    assert T._py_skip_try_moment(2, [(100, "tx", 0, 0)], 100, other=[2])[2] is True
    assert T._py_skip_try_moment(2, [(100, "data", 1, 5)], 100, other=[2])[2] is True     # flow 1's packet at a switch
    assert T._py_skip_try_moment(2, [(100, "ack", 1, 1)], 100, other=[2])[2] is True
    assert T._py_skip_try_moment(2, [(101, "tx", 0, 0)], 100, other=[2])[2] is False      # a later moment
    assert T._py_skip_try_moment(2, [(100, "tx", 2, 2)], 100, other=[2])[2] is False      # another partition's port
    assert T._py_skip_try_moment(2, [], 100)[2] is False


def test_a_mirror_takes_posts_in_either_order_and_the_moment_s_end_compares_them():
    """A mirror's connection (flow 0) and its leader's (flow 1), 1,000 bytes posted to each when
    the mirror began.  The workload may post to the twins of one moment in either order: a post to
    the mirror's connection before the leader's is taken ahead (wait_posts -1), and the leader's,
    later in the moment, evens it; each post schedules the end-of-moment check (one event each).
    The check keeps the mirror (-1) only if every post matched and both have the same data (1,100
    bytes each); otherwise it parts them as post_missing (PARTED_BY index 5)."""
    from wormhole._core.testing import _py_mirror_posts as posts
    assert posts([("l", 100), ("m", 100)]) == ([True], 0, -1, 1)      # the leader's first (as before)
    assert posts([("m", 100), ("l", 100)]) == ([True], 0, -1, 2)      # the mirror's first
    assert posts([("m", 100)]) == ([True], -1, 5, 1)                  # the leader never gets its own
    assert posts([("m", 100), ("l", 200)]) == ([True], 0, 5, 2)       # 1,100 against 1,200 bytes
    assert posts([("m", 50), ("m", 50), ("l", 100)]) == ([True, True], -1, 5, 3)   # other message ends
    # more than the leader's has (1,200 against 1,100): refused, the caller ends the mirror
    assert posts([("l", 100), ("m", 200)]) == ([False], 1, 5, 1)
    # the leader's connection is idle (the mirror follows it idle): nothing is taken ahead
    assert posts([("m", 100)], lead_sending=False) == ([False], 0, -1, 0)
