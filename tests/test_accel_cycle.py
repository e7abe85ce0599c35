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


def _cycling(accelerate, sizes=(MSG,), n=40, cycle=False):
    """Four connections on a star, i -> i + 1, each posting its next message 20 us after its last one
    ended (sizes in turn), n messages each; returns (network, end times by message id)."""
    cfg = wh.Config.preset("hpcc", accelerate=accelerate, **({"steady_cycle": cycle} if accelerate else {}))
    net = wh.Network(wh.star(4), cfg)
    conns = [net.connect(i, (i + 1) % 4) for i in range(4)]
    ends = {}
    count = [0] * 4

    def post(i):
        k = count[i]
        count[i] += 1
        net.post(conns[i], sizes[k % len(sizes)], on_done=lambda m, i=i: done(i, m))

    def done(i, m):
        ends[m.id] = m.done
        if count[i] < n:
            net.schedule(20 * US, lambda i=i: post(i))

    for i in range(4):
        net.schedule((1 + 7 * i) * US, lambda i=i: post(i))
    net.run()
    return net, np.array([ends[k] for k in sorted(ends)], dtype=float)


def test_equal_cycles_join_a_skip_and_end_their_messages_as_the_full_run():
    full, e_full = _cycling(False)
    off, e_off = _cycling(True)
    on, e_on = _cycling(True, cycle=True)
    assert len(e_full) == len(e_on) == len(e_off) == 160
    assert off.stats["onoff_cycle"] == 0
    assert on.stats["onoff_cycle"] > 0
    assert on.stats["events"] < 0.85 * off.stats["events"]      # (measured: 0.76x)
    err = np.abs(e_on - e_full) / e_full.max()
    assert err.max() < 0.01
    st = on.stats
    assert abs(st["events"] + st["events_skipped"] - full.stats["events"]) < 0.05 * full.stats["events"]


def test_cycles_of_unequal_messages_do_not_join():
    on, _ = _cycling(True, sizes=(MSG, 2 * MSG // 3), cycle=True)
    assert on.stats["onoff_cycle"] == 0


def test_off_by_default_and_nothing_without_steady_onoff():
    assert wh.Config.preset("hpcc").steady_cycle is False
    cfg = wh.Config.preset("hpcc", accelerate=True, steady_cycle=True, steady_onoff=False)
    net = wh.Network(wh.star(4), cfg)
    c = net.connect(0, 1)
    net.post(c, MSG)
    net.run()
    assert net.stats["onoff_cycle"] == 0
