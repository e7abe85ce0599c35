"""The event heap (heap.pxd) through _py_heap: pops come out in (time, tie key)
order whatever the push order, ties by insertion under KEY_INSERTION, by the
given key otherwise, and heap_rebuild restores any permutation of its array."""
import random

import pytest

from wormhole._core.testing import _py_heap, _py_heap_hold

KEY_INSERTION, KEY_LOCAL = 0, 1


def _pops(n):
    return [("pop",)] * n


def test_pops_in_time_then_insertion_order():
    rng = random.Random(3)
    times = [rng.randrange(50) for _ in range(500)]      # many ties
    ops = [("push", t, i) for i, t in enumerate(times)] + _pops(len(times))
    got = _py_heap(ops, KEY_INSERTION)
    want = sorted(range(len(times)), key=lambda i: (times[i], i))
    assert [a for _, _, _, a in got] == want
    assert [seq for _, _, seq, _ in got] == want           # seq is the insertion number
    assert all(ts == 0 for _, ts, _, _ in got)


def test_interleaved_pushes_and_pops_match_a_sorted_list():
    rng = random.Random(7)
    ops, pending, want, now, seq = [], [], [], 0, 0
    for step in range(3000):
        if pending and rng.random() < 0.45:
            ops.append(("pop",))
            pending.sort()
            t, s = pending.pop(0)
            want.append((t, s))
            now = t
        else:
            t = now + rng.randrange(0, 2000)
            ops.append(("push", t, seq))
            pending.append((t, seq))
            seq += 1
    got = _py_heap(ops, KEY_INSERTION)
    assert [(t, s) for t, _, s, _ in got] == want


def test_given_keys_order_ties_by_ts_then_seq():
    keys = [(10, 2, 5), (10, 1, 9), (10, 1, 3), (5, 7, 0), (10, 2, 4)]
    ops = [("push_key", t, ts, q, i) for i, (t, ts, q) in enumerate(keys)] + _pops(len(keys))
    got = _py_heap(ops, KEY_LOCAL)
    assert [(t, ts, q) for t, ts, q, _ in got] == [(5, 7, 0), (10, 1, 3), (10, 1, 9), (10, 2, 4), (10, 2, 5)]


@pytest.mark.parametrize("mode", [KEY_INSERTION, KEY_LOCAL])
@pytest.mark.parametrize("n", [1, 2, 3, 17, 256])
def test_rebuild_after_a_shuffle(mode, n):
    rng = random.Random(n)
    keys = [(rng.randrange(20), rng.randrange(3), i) for i in range(n)]
    if mode == KEY_INSERTION:
        ops = [("push", t, i) for t, _, i in keys]
        want = sorted((t, i) for t, _, i in keys)
    else:
        ops = [("push_key", t, ts, q, q) for t, ts, q in keys]
        want = sorted((t, ts, q) for t, ts, q in keys)
    ops += [("pop",), ("shuffle", 11)]
    ops += [("pop",)] * (n - 1)
    got = _py_heap(ops, mode)
    if mode == KEY_INSERTION:
        assert [(t, s) for t, _, s, _ in got] == want
    else:
        assert [(t, ts, q) for t, ts, q, _ in got] == want


def test_pop_from_empty_heap_is_refused():
    with pytest.raises(IndexError):
        _py_heap([("push", 1, 0), ("pop",), ("pop",)])


def test_hold_model_only_moves_forward():
    # n events due within 1,000 ps, each pop pushing one due 0..1,000 ps later: after
    # 10,000 holds the last event popped lies in [0, 10,000 * 1,000) and has moved
    last = _py_heap_hold(100, 10_000, 1_000, 5)
    assert 0 < last < 10_000 * 1_000


# ------------------------------------------------------------------ the calendar in front of the heap

def _run_both(ops, buckets=64):
    """The same operations on the heap alone and with a calendar of ``buckets``."""
    plain = _py_heap(ops, KEY_INSERTION)
    cal = [x for x in _py_heap(ops, KEY_INSERTION, buckets) if x[0] != "where"]
    return plain, cal


def test_calendar_pops_what_the_heap_pops():
    # pushes relative to the clock (the last pop): inside the 64 ns window, many in one
    # bucket at picosecond times out of order; beyond it (the heap); whole-ns ties
    import heapq
    rng = random.Random(11)
    ops, pend, now, seq = [], [], 0, 0
    for step in range(20000):
        if pend and rng.random() < 0.48:
            ops.append(("pop",))
            now = heapq.heappop(pend)[0]
        else:
            r = rng.random()
            if r < 0.6:
                t = now + rng.randrange(0, 3000)
            elif r < 0.9:
                t = now + rng.randrange(0, 200_000)
            else:
                t = now + 1000 * rng.randrange(0, 64)
            ops.append(("push", t, seq))
            heapq.heappush(pend, (t, seq))
            seq += 1
    ops += [("pop",)] * len(pend)
    plain, cal = _run_both(ops)
    assert cal == plain and len(cal) == seq


def test_calendar_keeps_order_against_the_heap_when_the_clock_runs():
    # a hold model: each pop pushes a successor 0..5 ns after it, and every 7th a far one
    rng = random.Random(5)
    ops, pend, want, seq = [], [], [], 0
    for i in range(50):
        t = rng.randrange(0, 5000)
        ops.append(("push", t, seq)); pend.append((t, seq)); seq += 1
    for step in range(5000):
        ops.append(("pop",))
        pend.sort()
        t, q = pend.pop(0)
        want.append((t, q))
        nt = t + (rng.randrange(0, 5000) if step % 7 else rng.randrange(100_000, 200_000))
        ops.append(("push", nt, seq)); pend.append((nt, seq)); seq += 1
    got = [x for x in _py_heap(ops, KEY_INSERTION, 64) if x[0] != "where"]
    assert [(t, s) for t, _, s, _ in got] == want


def test_calendar_takes_near_events_and_leaves_far_ones_to_the_heap():
    # 64 one-ns buckets from 0: t < 64,000 ps go to the calendar, later ones to the heap;
    # after popping the event at 50 ns the window starts there, so 100 ns fits
    ops = [("push", 10_000, 0), ("push", 63_999, 1), ("push", 64_000, 2), ("push", 500_000, 3), ("where",),
           ("pop",), ("pop",), ("push", 100_000, 4), ("where",), ("pop",), ("pop",), ("pop",)]
    got = _py_heap(ops, KEY_INSERTION, 64)
    assert got[0] == ("where", 2, 2)
    assert got[3] == ("where", 1, 2)                        # 100 ns in the calendar; 64 and 500 ns in the heap
    assert [x[0] for x in got if x[0] != "where"] == [10_000, 63_999, 64_000, 100_000, 500_000]


def test_calendar_orders_a_reserved_older_key_before_later_pushes_of_its_time():
    # heap_push_seq under an older insertion number (an unscheduled end taken earlier) must
    # fire before events of the same picosecond pushed after that number was taken
    ops = [("push_key", 5000, 0, 10, 0), ("push_key", 5000, 0, 12, 1), ("push_key", 5000, 0, 3, 2),
           ("push_key", 5400, 0, 1, 3), ("push_key", 5000, 0, 11, 4)]
    ops += [("pop",)] * 5
    plain, cal = _run_both(ops)
    assert cal == plain
    assert [a for _, _, _, a in cal] == [2, 0, 4, 1, 3]


@pytest.mark.parametrize("buckets", [64, 128, 8192])
def test_calendar_with_a_shuffle_free_hold_model_matches_the_heap(buckets):
    a = _py_heap_hold(300, 20_000, 3_000_000, 9)
    b = _py_heap_hold(300, 20_000, 3_000_000, 9, buckets)
    assert a == b


KEY_RANK = 2


def test_calendar_under_the_local_key_pops_what_the_heap_pops():
    # given keys (ts, seq) in any order at whole-ns ties: the buckets keep the heap's order
    import heapq
    rng = random.Random(17)
    ops, pend, now = [], [], 0
    for i in range(20000):
        if pend and rng.random() < 0.48:
            ops.append(("pop",))
            now = heapq.heappop(pend)[0]
        else:
            t = now + (1000 * rng.randrange(0, 6) if rng.random() < 0.8 else rng.randrange(0, 200_000))
            key = (rng.randrange(0, 50), rng.randrange(0, 1 << 40))
            ops.append(("push_key", t) + key + (i,))
            heapq.heappush(pend, (t,) + key + (i,))
    ops += [("pop",)] * len(pend)
    plain = _py_heap(ops, KEY_LOCAL)
    cal = _py_heap(ops, KEY_LOCAL, 64)
    assert cal == plain and len(cal) == sum(1 for o in ops if o[0] == "push_key")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_calendar_under_the_rank_key_keeps_its_order_through_rankings(seed):
    # A logical process's pending set (parallel.pxi): each pop takes the next slot,
    # provisional value base + its place; what it schedules is keyed by that slot (most
    # at whole-ns ties, appended without reading a rank), some under a key an earlier
    # event took (the bucket walked); now and then the round is ranked (every value
    # raised, their order kept).  Calendar and heap pop what the model pops.
    rng = random.Random(seed)
    vals = list(range(40))                       # 40 ranked slots (an earlier round)
    ops = [("ranks", list(vals))]
    pend = []                                    # the model: (t, ts, seq, a)
    for a in range(60):
        pend.append((1000 * rng.randrange(0, 20), -1 - rng.randrange(0, 40), 100 + a, a))    # (keys unique)
        ops.append(("push_key",) + pend[-1])
    a, base, popped = 60, 100, []

    def take():
        e = min(pend, key=lambda k: (k[0], vals[-1 - k[1]], k[2]))
        pend.remove(e)
        ops.append(("pop",))
        popped.append(e[3])
        return e

    for step in range(6000):
        e = take()
        i = len(vals)                            # the popped event's slot
        vals.append(base + i)
        ops += [("ranks", [vals[i]], i), ("current", i)]
        kid = 0
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            t = e[0] + (1000 * rng.randrange(0, 4) if rng.random() < 0.85 else rng.randrange(0, 150_000))
            if rng.random() < 0.8:               # key_next: (this slot, its counter)
                pend.append((t, -1 - i, kid, a))
                ops.append(("push", t, a))
                kid += 1
            else:                                # a key an earlier event took
                pend.append((t, -1 - rng.randrange(0, i), 100 + a, a))
                ops.append(("push_key",) + pend[-1])
            a += 1
        if not pend:
            break
        if step % 97 == 96:                      # the round ranked: values rise, order kept
            inc, new = 0, []
            for v in vals:
                inc += rng.randrange(0, 3)
                new.append(v + inc)
            vals = new
            base = vals[-1] + 1 - len(vals)
            ops.append(("ranks", list(vals)))
    while pend:
        take()
    plain = _py_heap(ops, KEY_RANK)
    cal = _py_heap(ops, KEY_RANK, 64)
    assert [x[3] for x in plain] == popped
    assert cal == plain
