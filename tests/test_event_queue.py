"""event_queue: the calendar in front of the heap (the default, sequential and in each
logical process of a partitioned run) and the heap alone give the same run, event for
event: same FCTs, PFC records, event counts by kind and random draws, on reference
inputs with PFC, ECN draws and timers; and a run that uses the calendar's window edges
(the fixed-rate k=4 fat-tree with drops, flows starting far apart)."""
import os

import pytest

import wormhole as wh
from wormhole.errors import ConfigError

from conftest import DATA, run_dir

CASES = [os.path.join(DATA, "hpcc-ns3-runs", c) for c in sorted(os.listdir(os.path.join(DATA, "hpcc-ns3-runs")))
         if os.path.isdir(os.path.join(DATA, "hpcc-ns3-runs", c))][::3]
CASES += [os.path.join(DATA, d) for d in ("ref_dcqcn_fattree4", "ref_fixed_fattree4_pfc_drops", "ref_fixed_incast16_pfc")]


def _signature(net):
    st = net.stats
    return (sorted(net.fct_lines()), list(net.pfc_lines()), st["events"], st["events_by_kind"],
            st.get("ns3_draws"), st.get("stale_events"), net.now)


@pytest.mark.parametrize("d", CASES, ids=os.path.basename)
def test_calendar_and_heap_give_the_same_run(d):
    a, _ = run_dir(d, event_queue="heap")
    b, _ = run_dir(d, event_queue="calendar")
    assert _signature(a) == _signature(b)
    assert a.stats["events"] > 1000
    assert (a.stats["event_queue"], b.stats["event_queue"]) == ("heap", "calendar")


@pytest.mark.parametrize("d", CASES[:3], ids=os.path.basename)
@pytest.mark.parametrize("threads,lps,tie", [(1, 1, "auto"), (1, 5, "auto"), (2, 3, "auto"), (2, 0, "local")])
def test_the_partitioned_kernel_gives_the_same_run_with_either_queue(d, threads, lps, tie):
    # each logical process's calendar orders by the ranked tie key (or the local one) as its
    # heap does, its keys rewritten with the heap's at compaction and arrivals from other
    # processes put in their buckets: the run is the heap's, and under the rank key the
    # sequential one's
    kw = dict(threads=threads, lps=lps, tie_order=tie)
    if tie == "local":
        kw["ecn_rng"] = "port"
    a, _ = run_dir(d, event_queue="heap", **kw)
    b, _ = run_dir(d, event_queue="calendar", **kw)
    assert (a.stats["event_queue"], b.stats["event_queue"]) == ("heap", "calendar")
    assert _signature(a) == _signature(b)
    if tie == "auto":
        seq, _ = run_dir(d)
        assert _signature(b) == _signature(seq)


@pytest.mark.parametrize("d", CASES[:3], ids=os.path.basename)
def test_accelerated_runs_are_the_same_with_either_queue(d):
    # the accelerator holds a partition's events (from the calendar too) and returns them
    a, _ = run_dir(d, accelerate=True, event_queue="heap")
    b, _ = run_dir(d, accelerate=True, event_queue="calendar")
    assert b.stats["event_queue"] == "calendar"
    assert _signature(a) == _signature(b)
    assert a.stats["events_skipped"] == b.stats["events_skipped"] and a.stats["skips"] == b.stats["skips"]


def test_a_training_iteration_is_the_same_with_either_queue():
    from wormhole.fidelity import _run_bench
    from wormhole import config
    outs = []
    for q in ("heap", "calendar"):
        orig = config.Config.preset.__func__
        def preset(cls, *a, _q=q, **k):
            k["event_queue"] = _q
            return orig(cls, *a, **k)
        config.Config.preset = classmethod(preset)
        try:
            net, wall, fct, it = _run_bench(["gpt13b", "--gpus", "16", "--tp", "2", "--layers", "1"], True)
        finally:
            config.Config.preset = classmethod(orig)
        assert net.stats["event_queue"] == q
        outs.append((list(fct), it, net.stats["events"], net.stats["events_skipped"]))
    assert outs[0] == outs[1] and outs[0][3] > 0


def test_user_events_and_runs_in_steps_keep_their_order():
    # Python's schedule() and run(until=) across the calendar's window: callbacks fire
    # at their times, in order, and the flows finish as with the heap alone
    def build(q):
        net = wh.Network(wh.dumbbell(2), cc="hpcc", event_queue=q)
        fired = []
        for i, t in enumerate((5, 5, 20_000, 3, 9_000_000)):
            net.schedule(t * 1000, lambda i=i: fired.append((i, net.now)))
        net.send(0, 2, 2_000_000)
        net.send(1, 3, 1_000_000, at=40_000_000)
        for until in (1_000_000, 7_000_000, 12_000_000, None):
            net.run(until=until)
        return net, fired
    a, fa = build("heap")
    b, fb = build("calendar")
    assert fa == fb == sorted(fa, key=lambda x: (x[1], x[0]))
    assert sorted(a.fct_lines()) == sorted(b.fct_lines()) and a.stats["events"] == b.stats["events"]


def test_an_unknown_event_queue_is_refused():
    with pytest.raises(ConfigError, match="event_queue"):
        wh.Config(event_queue="ladder")
