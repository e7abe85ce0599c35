# cython: language_level=3
"""Binary min-heap of events ordered by (time, tie key).

Inline functions over ``Sim.heap``.  The tie key (ts, seq) orders events due at
the same picosecond; ``Sim.key_mode`` chooses it:

- KEY_INSERTION (the sequential default): ts = 0 and seq = a global insertion
  counter, so ties fire in the order they were scheduled, as the reference's.
- KEY_LOCAL: ts = the time the event was scheduled, seq = the scheduling node
  (upper 24 bits) and that node's own push counter (lower 40 bits).  Every part
  is known at the node that schedules, so the order does not depend on how the
  fabric is cut into logical processes (parallel.pxi).  Python's pushes (flow
  starts, between runs) count as node ``n_nodes``.
- KEY_RANK (the partitioned kernel's default): ts = the processing rank of the
  event that scheduled (its place in the sequential run's order of processing),
  seq = that event's own push counter.  Ordering by it is ordering by insertion:
  two keys taken while processing different events compare as those events were
  processed, two taken by one event in the order taken.  A logical process does
  not know an event's rank while it runs its round (parallel.pxi), so a key says
  ts = -1 - slot, the slot in Sim.rank_val of the event that took it, whose value
  is provisional until the round's ranks are merged, then the rank; the
  provisional values keep the order of the process's own events, so the heap
  stays ordered when they become ranks.
"""
from libc.stdlib cimport realloc
from libc.stdint cimport int64_t, int32_t, uint64_t
from wormhole._core.defs cimport Sim, Event, KEY_INSERTION, KEY_RANK

cdef extern from "wh_heap.h":
    bint wh_key_lt(int64_t t1, uint64_t q1, int64_t t2, uint64_t q2) nogil


cdef inline int64_t key_rank(Sim* s, int64_t ts) noexcept nogil:
    """The comparable value of a key's ts (KEY_RANK: a slot's rank, see above)."""
    return ts if ts >= 0 else s.rank_val[-1 - ts]


cdef inline bint _ins_before(Event* x, Event* y) noexcept nogil:
    """KEY_INSERTION: x fires before y (every ts is 0: (t, seq) as one 128-bit key, wh_heap.h)."""
    return wh_key_lt(x.t, x.seq, y.t, y.seq)


cdef inline bint key_before(Sim* s, int64_t t1, int64_t ts1, uint64_t q1, int64_t t2, int64_t ts2, uint64_t q2) noexcept nogil:
    """(t1, ts1, q1) fires before (t2, ts2, q2)."""
    cdef int64_t r1, r2
    if (ts1 | ts2) >= 0:                # no slot (KEY_LOCAL, and KEY_RANK outside a round): plain keys
        return t1 < t2 or (t1 == t2 and (ts1 < ts2 or (ts1 == ts2 and q1 < q2)))
    if t1 != t2:
        return t1 < t2
    r1 = key_rank(s, ts1)
    r2 = key_rank(s, ts2)
    return r1 < r2 or (r1 == r2 and q1 < q2)


cdef inline bint _before(Sim* s, Event* x, Event* y) noexcept nogil:
    """KEY_LOCAL, KEY_RANK: x fires before y (a KEY_RANK slot read as its rank)."""
    return key_before(s, x.t, x.ts, x.seq, y.t, y.ts, y.seq)


cdef inline int64_t _sift_down(Sim* s, Event* h, int64_t n, int64_t i, Event* e) noexcept nogil:
    """KEY_LOCAL, KEY_RANK: the place of ``e`` put at hole i of h[0:n], moving the
    smaller child up while it fires before ``e`` (heap_pop, heap_rebuild)."""
    cdef int64_t child
    while True:
        child = 2 * i + 1
        if child >= n:
            return i
        if child + 1 < n and _before(s, &h[child + 1], &h[child]):
            child += 1
        if not _before(s, &h[child], e):
            return i
        h[i] = h[child]
        i = child


cdef inline void key_next(Sim* s, int64_t* ts, uint64_t* seq) noexcept nogil:
    """Take the tie key of an event scheduled now (pushed now or kept out of the heap
    under that key, see heap_push_seq)."""
    cdef int32_t n
    if s.key_mode == KEY_INSERTION:
        ts[0] = 0
        seq[0] = s.seq
    elif s.key_mode == KEY_RANK:
        ts[0] = s.cur_ref
        seq[0] = s.kid
        s.kid += 1
    else:
        n = s.cur_node
        ts[0] = s.now
        seq[0] = (<uint64_t>n << 40) | s.node_cnt[n]
        s.node_cnt[n] += 1
    s.seq += 1


cdef inline int heap_push_seq(Sim* s, int64_t t, int64_t ts, uint64_t seq, int32_t kind, int32_t a, int64_t b) noexcept nogil:
    """Schedule an event under a tie key taken earlier (key_next): it fires exactly
    where an event pushed when that key was taken would have.
    Returns -1 if memory ran out."""
    cdef Event* h
    cdef int64_t i, parent
    cdef Event e
    if s.heap_n == s.heap_cap:
        h = <Event*>realloc(s.heap, (s.heap_cap * 2 + 64) * sizeof(Event))
        if h == NULL:
            return -1
        s.heap = h
        s.heap_cap = s.heap_cap * 2 + 64
    e.t = t
    e.ts = ts
    e.seq = seq
    e.kind = kind
    e.a = a
    e.b = b
    h = s.heap
    i = s.heap_n
    s.heap_n += 1
    if s.key_mode == KEY_INSERTION:     # the sequential kernel's loop: (t, seq)
        while i > 0:
            parent = (i - 1) >> 1
            if _ins_before(&e, &h[parent]):
                h[i] = h[parent]
                i = parent
            else:
                break
    else:
        while i > 0:
            parent = (i - 1) >> 1
            if _before(s, &e, &h[parent]):
                h[i] = h[parent]
                i = parent
            else:
                break
    h[i] = e
    return 0


cdef inline int heap_push(Sim* s, int64_t t, int32_t kind, int32_t a, int64_t b) noexcept nogil:
    """Schedule an event under the next tie key; returns -1 if memory ran out."""
    cdef int64_t ts
    cdef uint64_t seq
    key_next(s, &ts, &seq)
    return heap_push_seq(s, t, ts, seq, kind, a, b)


cdef inline Event heap_pop(Sim* s) noexcept nogil:
    """Remove and return the earliest event (the heap must not be empty)."""
    cdef Event* h = s.heap
    cdef Event top = h[0]
    cdef Event last
    cdef int64_t n, i, child
    s.heap_n -= 1
    n = s.heap_n
    if n > 0:
        last = h[n]
        i = 0
        if s.key_mode == KEY_INSERTION:
            # The sequential kernel's loop, bottom-up: the hole left at the root moves
            # down to a leaf along the smaller children (one comparison per level, the
            # pick a 0/1 step), then the last event rises from there; it came from the
            # bottom, so it rarely rises far (about half the comparisons of a top-down
            # sift, whose exit branch is the one a CPU cannot predict).
            while True:
                child = 2 * i + 1
                if child + 1 < n:
                    child += _ins_before(&h[child + 1], &h[child])
                elif child >= n:
                    break
                h[i] = h[child]
                i = child
            while i > 0:
                parent = (i - 1) >> 1
                if _ins_before(&last, &h[parent]):
                    h[i] = h[parent]
                    i = parent
                else:
                    break
        else:
            i = _sift_down(s, h, n, 0, &last)
        h[i] = last
    return top


cdef inline void heap_rebuild(Sim* s) noexcept nogil:
    """Restore the heap property of s.heap[0:heap_n] (bottom-up)."""
    cdef int64_t n = s.heap_n, i
    cdef Event e
    cdef Event* h = s.heap
    i = n // 2 - 1
    while i >= 0:
        e = h[i]
        h[_sift_down(s, h, n, i, &e)] = e
        i -= 1
