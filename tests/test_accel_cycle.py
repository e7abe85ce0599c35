"""Ring connections that join a steady skip by their own steady cycles (steady_cycle, accel_onoff.pxi).

A connection that idles between equal messages shorter than the steady window never has a steady rate
window: each resume's ramp is always in it.  With ``steady_cycle`` such a connection, alone with its data,
joins a skip as an on/off member when its own last two cycles (bytes over busy time from one resume to
the next, ramp included) agree within theta and carry the same bytes as the run under way; the run under
way then ends when a run of that cycle begun at its resume would.
"""
import numpy as np

import wormhole as wh
from wormhole.units import US

MSG = 1_000_000          # 1,000 packets: shorter than the default window (2,000 samples)


def _cycling(accelerate, sizes=(MSG,), n=40, cycle=False, **extra):
    """Four connections on a star, i -> i + 1, each posting its next message 20 us after its last one
    ended (sizes in turn), n messages each; returns (network, FCTs by message id)."""
    cfg = wh.Config.preset("hpcc", accelerate=accelerate, **({"steady_cycle": cycle} if accelerate else {}), **extra)
    net = wh.Network(wh.star(4), cfg)
    conns = [net.connect(i, (i + 1) % 4) for i in range(4)]
    ends = {}
    count = [0] * 4

    def post(i):
        k = count[i]
        count[i] += 1
        net.post(conns[i], sizes[k % len(sizes)], on_done=lambda m, i=i: done(i, m))

    def done(i, m):
        ends[m.id] = m.fct
        if count[i] < n:
            net.schedule(20 * US, lambda i=i: post(i))

    for i in range(4):
        net.schedule((1 + 7 * i) * US, lambda i=i: post(i))
    net.run()
    return net, np.array([ends[k] for k in sorted(ends)], dtype=float)


def test_equal_cycles_join_a_skip_and_end_their_messages_as_the_full_run():
    full, f_full = _cycling(False)
    off, f_off = _cycling(True)
    on, f_on = _cycling(True, cycle=True)
    assert len(f_full) == len(f_on) == len(f_off) == 160
    assert on.stats["onoff_cycle"] > 0
    assert on.stats["events"] < 0.85 * off.stats["events"]      # (measured: 0.80x)
    err = np.abs(f_on / f_full - 1)                             # per message
    assert err.mean() < 0.005 and err.max() < 0.03             # (measured: 0.18%, 1.07%)
    st = on.stats
    assert abs(st["events"] + st["events_skipped"] - full.stats["events"]) < 0.05 * full.stats["events"]


def test_cycles_of_unequal_messages_do_not_join():
    on, _ = _cycling(True, sizes=(MSG, 2 * MSG // 3), cycle=True)
    assert on.stats["onoff_cycle"] == 0


def test_off_by_default_and_nothing_without_steady_onoff():
    assert wh.Config.preset("hpcc").steady_cycle is False
    off, f_off = _cycling(True)
    alone, f_alone = _cycling(True, cycle=True, steady_onoff=False)
    plain, f_plain = _cycling(True, steady_onoff=False)
    assert alone.stats["onoff_cycle"] == 0 and off.stats["onoff_cycle"] == 0
    assert alone.stats["events"] == plain.stats["events"] and (f_alone == f_plain).all()


# own_cycle through its _py_ wrapper: cycles of 1 MB sent in 100 us each (0.01 B/ps), 20 us idle between
RING = [(0, 0, 0, 0), (120_000_000, 1_000_000, 20_000_000, 0), (240_000_000, 2_000_000, 40_000_000, 0)]


def test_own_cycle_steady_and_on_schedule():
    from wormhole._core import testing as T
    ok, g = T._py_own_cycle(RING, 3_000_000, 2_500_000, 290_000_000)      # half its run in half its time
    assert ok and abs(g - 0.01) < 1e-12


def test_own_cycle_refuses_what_it_cannot_stand_for():
    from wormhole._core import testing as T
    now = 290_000_000
    assert not T._py_own_cycle(RING, 3_000_000, 2_100_000, now)[0]        # behind: 1.8x its cycle's pace
    assert not T._py_own_cycle(RING, 3_500_000, 2_500_000, now)[0]        # the run carries other bytes
    assert not T._py_own_cycle(RING, 3_000_000, 2_500_000, now, idle_since=250_000_000)[0]    # idle now
    assert not T._py_own_cycle(RING, 3_000_000, 2_500_000, now, idle_total=45_000_000)[0]     # idle since resume
    assert not T._py_own_cycle(RING[1:], 3_000_000, 2_500_000, now)[0]    # one cycle only
    slow = [RING[0], (130_000_000, 1_000_000, 20_000_000, 0), (250_000_000, 2_000_000, 40_000_000, 0)]
    assert not T._py_own_cycle(slow, 3_000_000, 2_500_000, 300_000_000)[0]           # 0.0091 against 0.01
    assert T._py_own_cycle(slow, 3_000_000, 2_500_000, 300_000_000, theta=0.2)[0]
    other = [(t, u, i, 1) for t, u, i, _ in RING]                         # another connection's resumes
    assert not T._py_own_cycle(other, 3_000_000, 2_500_000, now)[0]


def _segments(mode, *extra):
    from wormhole.runner import workload_parser, run_workload
    argv = "gpt13b --tp 8 --servers-per-segment 2 --oversubscription 2 --gpus 64 --layers 1 --no-progress".split()
    keep = {}
    rep = run_workload(workload_parser().parse_args(argv + ["--mode", mode] + list(extra)), keep=keep)
    msgs = keep["net"].messages
    order = np.lexsort((msgs["posted"], msgs["connection"]))
    return rep, keep["net"].stats, msgs["fct"][order].astype(float)


def test_a_ring_across_oversubscribed_spines_joins_by_its_cycles_where_no_mirror_follows():
    """gpt13b on 64 GPUs in 2:1 rail segments without mirrors: each rail's in-segment ring connections
    idle between chunks, and their rate windows hold each resume's ramp; by their cycles they join
    (measured: 32 joins, 92.46% skipped instead of 91.82%, FCT p99 0.93% instead of 2.90%)."""
    full, _, f_full = _segments("full")
    off, st_off, f_off = _segments("accelerated", "--no-mirrors")
    on, st_on, f_on = _segments("accelerated", "--no-mirrors", "--steady-cycle")
    assert st_off["onoff_cycle"] == 0 and st_on["onoff_cycle"] > 0
    assert on["events"] < off["events"]
    assert abs(on["iteration_time_ps"] / full["iteration_time_ps"] - 1) < 0.005
    err = np.abs(f_on / f_full - 1)
    assert err.mean() < 0.01 and np.percentile(err, 99) < 0.05
