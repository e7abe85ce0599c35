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
