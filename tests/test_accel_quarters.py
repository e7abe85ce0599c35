"""The quarter-goodput steady test (accel_window.pxi) and who may pass it.

A flow whose rate oscillates around a share by more than theta is still steady when the goodputs of its
window's four quarters agree with no trend.  For a flow that shares a data port with another flow's data
that can freeze a split of the bottleneck still on its way to fairness, so it is only on for every flow
with ``steady_goodput``; a flow alone with its data (only ACKs share its ports: a ring's connection) has no
such split, and with ``steady_goodput_alone`` (on by default) it passes on its quarters alone; it is then
no on/off member of a skip (its goodput is an average over its swing while it sends).
"""
import math

import numpy as np

import wormhole as wh
from wormhole._core import testing as T
from wormhole.units import US

L, THETA = 64, 0.05


def oscillating(n=L, amp=0.04, period=16, gbps=80.0, dt=100_000, drift=0.0):
    """Samples (t ps, snd_una, rate bps) of a flow acknowledging ``gbps`` (plus ``drift`` of it over the
    samples) while its rate swings by +-amp over ``period`` samples."""
    out, una = [], 0
    for k in range(1, n + 1):
        g = gbps * (1 + drift * k / n)
        una += int(g * dt / 8000)
        out.append((k * dt, una, int(gbps * 1e9 * (1 + amp * math.sin(2 * math.pi * k / period)))))
    return out


ALONE = [([0], [1]), ([2], [3])]                # flow 1 shares no port with flow 0
ACKS_ONLY = [([0], [1]), ([2], [0])]            # flow 1's ACKs pass flow 0's data port
SHARED = [([0], [1]), ([0], [3])]               # flow 1's data too


def test_a_flow_alone_with_its_data_passes_on_its_quarters():
    for paths in (ALONE, ACKS_ONLY):
        steady, by_quarters, g = T._py_quarters_test(paths, oscillating(), L, THETA, 0, False)
        assert steady and by_quarters
        assert abs(g * 8000 - 80.0) < 0.5          # bytes per ps -> Gb/s


def test_a_flow_sharing_its_data_port_passes_only_with_the_test_for_every_flow():
    assert T._py_quarters_test(SHARED, oscillating(), L, THETA, 0, False)[:2] == (False, False)
    assert T._py_quarters_test(SHARED, oscillating(), L, THETA, 0, True)[:2] == (True, True)


def test_the_quarter_test_off_trend_and_short_span_refuse():
    assert T._py_quarters_test(ALONE, oscillating(), L, THETA, -1, False)[:2] == (False, False)
    # a goodput still rising 3% over the window: a convergence, not an oscillation around a share
    assert T._py_quarters_test(ALONE, oscillating(drift=0.03), L, THETA, 0, False)[:2] == (False, False)
    # the window must span the CC's slowest loop eight times (gp_span): 6.4 us of samples do not span 10 us
    assert T._py_quarters_test(ALONE, oscillating(), L, THETA, 10 * US, False)[:2] == (False, False)
    # the same rates within theta: steady by their spread, not by the quarters
    assert T._py_quarters_test(ALONE, oscillating(amp=0.01), L, THETA, 0, False)[:2] == (True, False)


def test_a_rate_settling_inside_the_window_waits_for_the_spread_test():
    """A rate that swung around a share in the window's older half and has settled within theta in its
    later half is leaving a transient: the quarters would pass (their goodputs agree) while the window's
    goodput still holds the transient's tail, so the spread test decides once the tail leaves the window."""
    samples = oscillating()
    settled = samples[:L // 2] + [(t, u, int(80e9 * (1 + 0.004 * math.sin(2 * math.pi * k / 16))))
                                  for k, (t, u, _) in enumerate(samples[L // 2:])]
    assert T._py_quarters_test(ALONE, settled, L, THETA, 0, False)[:2] == (False, False)
    # the swing still in the later half: an oscillation around the share
    late = [(t, u, int(80e9 * (1 + (0.004 if k < L // 2 else 0.04) * math.sin(2 * math.pi * k / 16))))
            for k, (t, u, _) in enumerate(samples)]
    assert T._py_quarters_test(ALONE, late, L, THETA, 0, False)[:2] == (True, True)


def _segments_run(mode, off=False):
    """gpt13b (TP 8, one layer) on 64 GPUs in rail segments of two servers, spines 2:1 oversubscribed:
    each rail's DP ring crosses the spines, every ring connection alone with its data, and the crossing
    ones' HPCC rates swing around their share by more than theta for as long as they send."""
    from wormhole.runner import workload_parser, run_workload
    argv = "gpt13b --tp 8 --servers-per-segment 2 --oversubscription 2 --gpus 64 --layers 1 --no-progress"
    argv = argv.split() + ["--mode", mode] + ["--no-steady-goodput-alone"] * off
    keep = {}
    rep = run_workload(workload_parser().parse_args(argv), keep=keep)
    msgs = keep["net"].messages
    order = np.lexsort((msgs["posted"], msgs["connection"]))
    return rep, msgs["fct"][order].astype(float)


def test_on_by_default_and_a_ring_across_oversubscribed_spines_skips_more_as_faithfully():
    assert wh.Config.preset("hpcc").steady_goodput_alone is True
    full, f_full = _segments_run("full")
    on, f_on = _segments_run("accelerated")
    off, f_off = _segments_run("accelerated", off=True)
    assert on["events"] < 0.95 * off["events"]
    for rep, fct in ((on, f_on), (off, f_off)):
        assert abs(rep["iteration_time_ps"] / full["iteration_time_ps"] - 1) < 0.005
        err = np.abs(fct / f_full - 1)
        assert err.mean() < 0.01 and np.percentile(err, 99) < 0.05


def test_flows_sharing_a_bottleneck_keep_their_split_unfrozen():
    """Two flows into one host: with the quarter test for every flow (steady_goodput) the skip freezes
    their split on its way to fairness (one 2.6% late); with it for flows alone with their data the shared
    flows pass only by their spread, and the split converges as in the full run."""
    def incast(accelerate, **cfg):
        net = wh.Network(wh.star(4), wh.Config.preset("hpcc", accelerate=accelerate, **cfg))
        for s in range(2):
            net.send(s, 3, 40_000_000)
        net.run()
        return net

    full = incast(False)
    errs = {}
    for name, cfg in (("alone", {"steady_goodput_alone": True}), ("all", {"steady_goodput": True})):
        errs[name] = np.abs(incast(True, **cfg).results["fct"] - full.results["fct"]) / full.results["fct"]
    assert errs["alone"].max() < 0.015 < errs["all"].max()


def test_flows_in_lockstep_move_at_one_goodput_the_lowest():
    """Flows of a partition with the same bytes acknowledged and sent, the same at their windows'
    oldest samples and the same latest rate are twins a full run keeps in lockstep: a skip moves them at
    the lowest of their goodputs, so they stay in it; a flow that differs in any of these keeps its own."""
    base = dict(snd_una=5_000_000, snd_nxt=5_040_000, una0=4_000_000, rate=80_000_000_000)
    flows = [dict(base, goodput=0.01001), dict(base, goodput=0.01), dict(base, goodput=0.01002),
             dict(base, snd_una=5_001_000, goodput=0.0103), dict(base, rate=79_000_000_000, goodput=0.0099),
             dict(base, una0=3_999_000, goodput=0.0098)]
    assert T._py_lockstep_goodputs(flows) == [0.01, 0.01, 0.01, 0.0103, 0.0099, 0.0098]


def test_a_flow_steady_by_its_quarters_is_not_carried_through_idle_spells():
    """moe on 128 GPUs, one layer: a DP ring's 2-flow leader steady by its quarters, carried as on/off
    members through its idle spell, stayed in its skip (planned 1 ms ahead), never quiescent, so its seven
    mirrors were still following it when the all-to-all's posts came and parted there (125 partings, 3.07 M
    events instead of 0.44 M). Not carried, it goes quiet as without the test, and the mirrors end with it."""
    from wormhole.runner import workload_parser, run_workload

    def run(*extra):
        keep = {}
        argv = "moe --gpus 128 --layers 1 --no-progress".split() + list(extra)
        rep = run_workload(workload_parser().parse_args(argv), keep=keep)
        return rep, keep["net"].stats

    on, st_on = run()
    off, st_off = run("--no-steady-goodput-alone")
    assert sum(st_on["mirror_parts_by"].values()) == 0 and st_on["skip_backs"] == 0
    assert on["events"] < 1.05 * off["events"]
    assert abs(on["iteration_time_ps"] / off["iteration_time_ps"] - 1) < 5e-4
