"""Event counts by kind (net.stats, bench.kernel's per-packet table): behaviour only, no speed."""
import pytest

import wormhole as wh
from wormhole.bench import KIND_COLUMNS, events_per_packet, measure


def _incast(cc, run=True):
    net = wh.Network(wh.star(5), wh.Config(cc="none") if cc == "none" else wh.Config.preset(cc))
    for i in range(4):
        net.send(i, 4, 200_000)
    if run:
        net.run()
    return net


@pytest.mark.parametrize("cc", ["none", "dcqcn", "hpcc", "timely", "dctcp"])
def test_kinds_add_up(cc):
    st = _incast(cc).stats
    k = st["events_by_kind"]
    assert st["events"] == sum(k.values())
    pops = st["pops_by_kind"]
    stale = st["stale_by_kind"]
    for name in k:
        assert stale[name] <= pops[name]
        assert k[name] <= pops[name]
    # stale NIC wake-ups, skip ends and message notes are not events; stale CC timers and RTOs are
    assert st["stale_events"] == sum(stale[n] for n in ("nic_wake", "cc_timer", "skip_end", "msg_note"))
    assert pops["nic_wake"] == k["nic_wake"] + stale["nic_wake"]
    assert pops["tx_done"] == k["tx_done"] and pops["arrive"] == k["arrive"]
    # two chained phases per flow start are popped before the counted one
    assert pops["flow_start"] == 3 * k["flow_start"]
    # every transmission has its arrival (no drops, no corruption here); its end is an event, or was
    # left unscheduled because nothing could be sent then
    assert st["drops"] == 0
    assert k["tx_done"] + st["tx_done_unscheduled"] == k["arrive"]
    assert st["tx_done_ctrl"] <= st["arrive_ctrl"]
    assert 0 <= st["tx_done_idle"] <= k["tx_done"]
    assert 0 <= st["nic_wake_busy"] <= st["nic_wake_idle"] <= k["nic_wake"]


def test_one_switch_hop_counts_per_packet():
    """Star, fixed rate, 4:1 incast: a data packet and its ACK each cross two links (2 arrivals each).
    An ACK leaves the receiver's NIC and the switch's port towards its sender with nothing queued
    behind it (ACKs come one per data packet, far apart for their size), so no ACK transmission end
    is an event.  Data transmission ends are, except the last packet of each flow at its NIC and the
    switch port's first and last packet (nothing queued behind them): at most 4 + 2 unscheduled."""
    st = _incast("none").stats
    assert st["data_packets"] == st["ctrl_packets"] == 800
    per = events_per_packet(st)
    for c in ("arr_data", "arr_ctrl"):
        assert per[c] == pytest.approx(2.0)
    assert st["tx_done_ctrl"] == 0 and per["tx_ctrl"] == 0
    assert 2 * 800 - 6 <= st["events_by_kind"]["tx_done"] <= 2 * 800
    assert st["tx_done_unscheduled"] == 4 * 800 - st["events_by_kind"]["tx_done"]
    assert per["nic_wake"] == 0 and per["cc_timer"] == 0 and per["stale"] == 0
    assert sum(per[c] for c in KIND_COLUMNS if c != "stale") == pytest.approx(st["events"] / st["data_packets"])


def test_dcqcn_timers_and_hpcc_wakes_are_counted():
    d = _incast("dcqcn").stats
    assert d["events_by_kind"]["cc_timer"] > 0
    h = _incast("hpcc").stats
    assert h["events_by_kind"]["nic_wake"] > 0


def test_measure_reports_per_kind_rates():
    r = measure("tiny", lambda cc: _tiny(), 1)
    assert set(r["per_data_packet"]) >= set(KIND_COLUMNS)
    assert r["events_per_data_packet"] == pytest.approx(r["events"] / r["data_packets"], abs=1e-4)
    assert r["events_per_second"] > 0


def _tiny():
    net = wh.Network(wh.star(3), wh.Config(cc="none"))
    net.send(0, 2, 50_000)
    net.send(1, 2, 50_000)
    return net


@pytest.mark.parametrize("cc", ["none", "dcqcn", "hpcc", "timely", "dctcp"])
def test_unscheduled_ends_and_wakes_change_nothing(cc):
    """Stepping (Network.step) makes every transmission end and NIC wake-up a heap event, as in the
    reference; a run leaves out those that find nothing to do.  Both give the same flows byte for byte,
    and the steps are exactly the run's heap pops plus what it left unscheduled."""
    ran = _incast(cc)
    st = ran.stats
    stepped = _incast(cc, run=False)
    steps = 0
    while stepped.step() is not None:
        steps += 1
    assert stepped.fct_lines() == ran.fct_lines()
    assert steps == sum(st["pops_by_kind"].values()) + st["tx_done_unscheduled"] + st["nic_wake_unscheduled"]
    assert stepped.stats["tx_done_unscheduled"] == stepped.stats["nic_wake_unscheduled"] == 0
    assert st["tx_done_unscheduled"] > 0
    if cc == "hpcc":        # paced and window-bound: wake-ups that would find the window closed
        assert st["nic_wake_unscheduled"] > 0
