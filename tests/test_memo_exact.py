"""Memo keys hold each flow's exact congestion-control state, and the memo's lookups are
accounted by why nothing was replayed (Memo.accounting, Network.stats)."""
import numpy as np

import wormhole as wh
from wormhole.accel.memo import Memo, conflict_graph

from conftest import contest_rounds


def rounds_of(nbytes, rounds, cc="hpcc", **cfg):
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset(cc, **cfg))
    return contest_rounds(net, nbytes, rounds)


def test_a_colour_holds_the_exact_state_vector():
    """Two flows on mirror-image paths at the same rate share a colour; once one's
    congestion-control state differs in any value, however little, they do not."""
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("dcqcn", accelerate=True))
    a, b = net.connect(0, 2), net.connect(1, 3)
    net.post(a, 1_000_000)
    net.post(b, 1_000_000)
    colours, _ = conflict_graph(net, [a, b])
    assert colours[0] == colours[1]
    assert colours[0][-1] == net.accelerator.cc_vector(a)


def test_flows_that_never_converge_are_accounted_as_unconverged():
    """Rounds of two 1 MB flows through the bottleneck.  Each round looks up two
    partitions: the first flow alone (its start is an event of its own, after which the
    memo acts), then both flows.  They are fresh flows, in the same exact state every
    round, but 1,000 packets cannot fill a 2,000-sample window, so none converges and
    nothing is stored: the first round's two lookups are new keys, every later one a key
    seen before with nothing stored.  Every pending miss is lost when its partition
    changes (the second flow joins, or both finish), except the last round's, still
    pending when the run ends."""
    rounds = 4
    net = rounds_of(1_000_000, rounds, accelerate=True)
    st = net.stats
    assert st["memo_hits"] == 0 and st["memo_stored"] == 0
    assert st["memo_misses"] == 2 * rounds
    assert st["memo_miss_new_key"] == 2
    assert st["memo_miss_unconverged_key"] == 2 * (rounds - 1)
    assert st["memo_pending_lost"] == 2 * rounds - 1 and st["memo_pending"] == 1


def test_recurring_convergences_hit_and_replay_the_full_runs_times():
    """Rounds of two 20 MB flows from fresh state recur exactly.  The first round's
    two partitions (the first flow alone, then both) are new keys; the pair is stored
    when it converges and every later round replays it, while the lone first flow,
    joined by the second before it converges, is never stored (a key seen before, with
    nothing stored, each later round).  Completion times stay within 1% of the full
    run's."""
    rounds = 4
    full = rounds_of(20_000_000, rounds, accelerate=False)
    acc = rounds_of(20_000_000, rounds, accelerate=True)
    st = acc.stats
    assert st["memo_miss_new_key"] == 2 and st["memo_stored"] == 1
    assert st["memo_hits"] == rounds - 1 and st["memo_refused"] == 0
    assert st["memo_miss_unconverged_key"] == rounds - 1 and st["memo_pending_lost"] == rounds
    f0, f1 = full.results["fct"], acc.results["fct"]
    assert (np.abs(f1 - f0) / f0).max() < 0.01


def test_the_fidelity_report_names_the_memo_outcomes():
    from wormhole.fidelity import accounting, format_report
    sa = {"events": 10, "events_skipped": 90, "memo_hits": 2, "memo_refused": 0, "memo_miss_new_key": 3,
          "memo_miss_unconverged_key": 5, "memo_stored": 1, "memo_pending_lost": 4}
    acc = accounting({"events": 100}, sa)
    assert acc["memo"] == {"hits": 2, "refused": 0, "miss_new_key": 3, "miss_unconverged_key": 5, "stored": 1,
                           "pending_lost": 4}
    summary = dict(acc, events_accelerated=10, events_skipped=90, events_full=100)
    assert "memo lookups             hits 2, refused 0, miss_new_key 3" in format_report(summary)


def test_memo_accounting_starts_at_zero():
    net = wh.Network(wh.dumbbell(2, 2), wh.Config.preset("hpcc", accelerate=True))
    acc = Memo(net).accounting()
    assert set(acc) >= {"memo_hits", "memo_misses", "memo_miss_new_key", "memo_miss_unconverged_key",
                        "memo_refused", "memo_pending_lost", "memo_stored", "memo_pending"}
    assert all(v == 0 for v in acc.values())


def test_a_partition_whose_state_class_is_new_is_not_canonicalised(monkeypatch):
    """A key is computed only where one could match (Memo._formed): one round of the two
    1 MB flows forms two partitions, each from a state no earlier formation had, and
    neither converges, so no conflict graph is canonicalised; the accounting is that of
    computed keys (two new keys).  Four rounds canonicalise as many graphs as lookups
    of a class seen before need: each later round's two, and once each the first
    round's, so 'seen before' stays exact (test_flows_that_never_converge...)."""
    import wormhole.accel.memo as memo
    calls = []
    real = memo.canonical_key
    monkeypatch.setattr(memo, "canonical_key", lambda *a: calls.append(1) or real(*a))
    st = rounds_of(1_000_000, 1, accelerate=True).stats
    assert len(calls) == 0
    assert st["memo_misses"] == 2 and st["memo_miss_new_key"] == 2 and st["memo_stored"] == 0
    calls.clear()
    st = rounds_of(1_000_000, 4, accelerate=True).stats
    assert len(calls) == 2 * 3 + 2
    assert st["memo_miss_new_key"] == 2 and st["memo_miss_unconverged_key"] == 6


def test_a_key_computed_when_stored_is_the_key_a_lookup_computes():
    """The pair of the first round is stored under a key computed only when it converged
    (from the start states taken when it formed); each later round computes its key at
    formation and finds that entry."""
    st = rounds_of(20_000_000, 3, accelerate=True).stats
    assert st["memo_stored"] == 1 and st["memo_hits"] == 2
