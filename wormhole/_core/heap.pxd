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
  stays ordered when they become ranks.  A process's slots are its events in the
  order it processed them (since its last compaction, which turns every slot a
  key names into its rank), so rank_val increases with the slot, provisional or
  ranked: two keys that name slots compare by the slots alone, and only a key
  against a rank (an arrival from another process, a compacted key) reads one.

The calendar (``Sim.cal.on``: sequential runs under KEY_INSERTION, and each
logical process of a partitioned run under either of its keys).  Almost every
event a packet makes is due within a few microseconds, so a heap of 10^4 of them
pays ~14 levels per pop.  In front of the heap sits a ring of nanosecond
buckets, ``cal.w`` of them from the window start ``cal.k``: an event due inside
the window goes to its bucket (a list kept sorted by the heap's order,
key_before; an event pushed now nearly always has the largest key of its bucket,
so it is appended, and one pushed under a key taken earlier, a lazy transmission
end or wake-up, is placed by a walk back from the tail), anything later or
earlier to the heap.  A pop takes the earlier of
the first non-empty bucket's head (found by the bucket bitmap) and the heap's
top, and moves the window start to the popped event's bucket: every pending
event is at or after it.  The order is the same total order as the heap's, so
runs are identical; only the cost moves.  Under KEY_RANK a bucket stays sorted
when its slots become ranks for the reason the heap stays ordered (above: the
values keep each process's own order), and a key the event being processed
takes now (ts = cur_ref, seq = kid - 1) follows every key the process holds,
so it is appended without reading a rank.  The accelerator, which scans and
rebuilds the pending set when a partition's events are held, moves the
calendar's events into the heap first (cal_to_heap) and walks them with
cal_next_entry; the partitioned kernel walks them to rewrite their keys
(rank_compact) and finds each process's first event with pending_first.
"""
from libc.stdlib cimport realloc, malloc, free
from libc.stdint cimport int64_t, int32_t, uint64_t
from wormhole._core.defs cimport Sim, Event, KEY_INSERTION, KEY_RANK

cdef extern from "wh_heap.h":
    bint wh_key_lt(int64_t t1, uint64_t q1, int64_t t2, uint64_t q2) nogil
    int wh_ctz64(uint64_t x) nogil

DEF CAL_NS = 1000                       # a bucket's width, ps


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
    if (ts1 & ts2) < 0:                 # two slots: rank_val increases with the slot (above)
        return ts1 > ts2 or (ts1 == ts2 and q1 < q2)
    r1 = key_rank(s, ts1)
    r2 = key_rank(s, ts2)
    return r1 < r2 or (r1 == r2 and q1 < q2)


cdef inline bint _before(Sim* s, Event* x, Event* y) noexcept nogil:
    """KEY_LOCAL, KEY_RANK: x fires before y (a KEY_RANK slot read as its rank)."""
    return key_before(s, x.t, x.ts, x.seq, y.t, y.ts, y.seq)


cdef inline bint _ev_before(Sim* s, Event* x, Event* y) noexcept nogil:
    """x fires before y, in any key mode (the calendar's order: the heap's; the times
    compared here first, as key_before is not always inlined)."""
    if s.key_mode == KEY_INSERTION:
        return _ins_before(x, y)
    if x.t != y.t:
        return x.t < y.t
    return _before(s, x, y)


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


cdef inline int _heap_insert(Sim* s, Event* ev) noexcept nogil:
    """Put event ``ev`` in the binary heap (heap_push_seq, cal_off).  Returns -1 if memory ran out."""
    cdef Event* h
    cdef int64_t i, parent
    cdef Event e = ev[0]
    if s.heap_n == s.heap_cap:
        h = <Event*>realloc(s.heap, (s.heap_cap * 2 + 64) * sizeof(Event))
        if h == NULL:
            return -1
        s.heap = h
        s.heap_cap = s.heap_cap * 2 + 64
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


# ------------------------------------------------------------------ the calendar

cdef inline int cal_setup(Sim* s, int64_t w) noexcept nogil:
    """Turn the calendar on with w buckets (a power of two, at least 64), before
    anything is scheduled.  Returns -1 if memory ran out."""
    cdef int64_t i
    s.cal.head = <int32_t*>malloc(w * sizeof(int32_t))
    s.cal.tail = <int32_t*>malloc(w * sizeof(int32_t))
    s.cal.bits = <uint64_t*>malloc((w // 64) * sizeof(uint64_t))
    s.cal.tt = <int64_t*>malloc(w * sizeof(int64_t))
    s.cal.tq = <uint64_t*>malloc(w * sizeof(uint64_t))
    s.cal.ts = <int64_t*>malloc(w * sizeof(int64_t))
    if (s.cal.head == NULL or s.cal.tail == NULL or s.cal.bits == NULL or s.cal.tt == NULL or s.cal.tq == NULL
            or s.cal.ts == NULL):
        cal_release(s)
        return -1
    for i in range(w):
        s.cal.head[i] = -1
        s.cal.tail[i] = -1
    for i in range(w // 64):
        s.cal.bits[i] = 0
    s.cal.w = w
    s.cal.k = 0
    s.cal.n = 0
    s.cal.free = -1
    s.cal.cap = 0
    s.cal.ev = NULL
    s.cal.next = NULL
    s.cal.prev = NULL
    s.cal.on = 1
    return 0


cdef inline void cal_release(Sim* s) noexcept nogil:
    """Free the calendar's arrays (it must be empty or its events dropped)."""
    free(s.cal.head); free(s.cal.tail); free(s.cal.bits); free(s.cal.ev); free(s.cal.next)
    free(s.cal.prev)
    s.cal.prev = NULL
    free(s.cal.tt); free(s.cal.tq); free(s.cal.ts)
    s.cal.tt = NULL
    s.cal.tq = NULL
    s.cal.ts = NULL
    s.cal.head = NULL
    s.cal.tail = NULL
    s.cal.bits = NULL
    s.cal.ev = NULL
    s.cal.next = NULL
    s.cal.on = 0
    s.cal.n = 0
    s.cal.cap = 0
    s.cal.free = -1


cdef inline int cal_off(Sim* s) noexcept nogil:
    """Turn the calendar off, its events going to the heap.  Returns -1 if memory ran out."""
    if not s.cal.on:
        return 0
    if cal_to_heap(s) != 0:
        return -1
    heap_rebuild(s)
    cal_release(s)
    return 0


cdef inline int _cal_grow(Sim* s) noexcept nogil:
    """Room for more calendar events (the new entries join the free list)."""
    cdef int32_t cap = s.cal.cap * 2 + 1024, i
    cdef Event* ev = <Event*>realloc(s.cal.ev, cap * sizeof(Event))
    cdef int32_t* nx
    if ev == NULL:
        return -1
    s.cal.ev = ev
    nx = <int32_t*>realloc(s.cal.next, cap * sizeof(int32_t))
    if nx == NULL:
        return -1
    s.cal.next = nx
    nx = <int32_t*>realloc(s.cal.prev, cap * sizeof(int32_t))
    if nx == NULL:
        return -1
    s.cal.prev = nx
    nx = s.cal.next
    for i in range(s.cal.cap, cap - 1):
        nx[i] = i + 1
    nx[cap - 1] = s.cal.free
    s.cal.free = s.cal.cap
    s.cal.cap = cap
    return 0


cdef inline bint _cal_appends(Sim* s, int32_t slot, Event* e) noexcept nogil:
    """Event e is not earlier than the last event of the non-empty bucket at slot, so
    it goes after it, by the tail's cached key: (t, seq) under KEY_INSERTION, else
    (t, ts, seq), where at the same picosecond a key taken just now by the event
    being processed (KEY_RANK: ts = cur_ref, seq = kid - 1) follows every key the
    process holds (heap.pxd's docstring)."""
    cdef int64_t ts
    if s.key_mode == KEY_INSERTION:
        return not wh_key_lt(e.t, e.seq, s.cal.tt[slot], s.cal.tq[slot])
    if e.t != s.cal.tt[slot]:
        return e.t > s.cal.tt[slot]
    ts = s.cal.ts[slot]
    if (e.ts & ts) < 0:                 # two slots (KEY_RANK): the later slot, the later key (key_before)
        return e.ts < ts or (e.ts == ts and e.seq >= s.cal.tq[slot])
    if s.key_mode == KEY_RANK and e.ts == s.cur_ref and e.seq + 1 == s.kid:
        return True
    return not key_before(s, e.t, e.ts, e.seq, s.cal.tt[slot], ts, s.cal.tq[slot])


cdef inline int _cal_insert(Sim* s, int64_t k, Event* e) noexcept nogil:
    """Put event e, due in absolute bucket k of the window, in its bucket at its
    place by the heap's order: after the tail if it is not earlier (nearly always),
    else by a walk back from the tail (an event whose key was taken earlier, a lazy
    transmission end or wake-up, belongs near it: a bucket holds events of the same
    picosecond in the order of their keys)."""
    cdef int32_t idx, slot, cur, nxt
    if s.cal.free < 0 and _cal_grow(s) != 0:
        return -1
    idx = s.cal.free
    s.cal.free = s.cal.next[idx]
    s.cal.ev[idx] = e[0]
    slot = <int32_t>(k & (s.cal.w - 1))
    if s.cal.head[slot] < 0:
        s.cal.head[slot] = idx
        s.cal.tail[slot] = idx
        s.cal.next[idx] = -1
        s.cal.prev[idx] = -1
        s.cal.bits[slot >> 6] |= (<uint64_t>1) << (slot & 63)
        s.cal.tt[slot] = e.t
        s.cal.tq[slot] = e.seq
        if s.key_mode != KEY_INSERTION:
            s.cal.ts[slot] = e.ts
    elif _cal_appends(s, slot, e):
        cur = s.cal.tail[slot]
        s.cal.next[cur] = idx
        s.cal.prev[idx] = cur
        s.cal.next[idx] = -1
        s.cal.tail[slot] = idx
        s.cal.tt[slot] = e.t
        s.cal.tq[slot] = e.seq
        if s.key_mode != KEY_INSERTION:
            s.cal.ts[slot] = e.ts
    else:                               # before the tail: after the last event it does not precede
        nxt = s.cal.tail[slot]
        cur = s.cal.prev[nxt]
        while cur >= 0 and _ev_before(s, e, &s.cal.ev[cur]):
            nxt = cur
            cur = s.cal.prev[cur]
        s.cal.next[idx] = nxt
        s.cal.prev[nxt] = idx
        s.cal.prev[idx] = cur
        if cur < 0:
            s.cal.head[slot] = idx
        else:
            s.cal.next[cur] = idx
    s.cal.n += 1
    return 0


cdef inline int32_t _cal_first(Sim* s) noexcept nogil:
    """The calendar's earliest event (its pool index), or -1 if it is empty: the
    head of the first non-empty bucket from the window start, in ring order."""
    cdef int64_t slot0, wi, nw, j, w
    cdef uint64_t m
    cdef int b
    if s.cal.n == 0:
        return -1
    slot0 = s.cal.k & (s.cal.w - 1)
    wi = slot0 >> 6
    b = <int>(slot0 & 63)
    m = s.cal.bits[wi] & ((~(<uint64_t>0)) << b)
    if m != 0:
        return s.cal.head[(wi << 6) + wh_ctz64(m)]
    nw = s.cal.w >> 6
    for j in range(1, nw):
        w = (wi + j) & (nw - 1)
        m = s.cal.bits[w]
        if m != 0:
            return s.cal.head[(w << 6) + wh_ctz64(m)]
    m = s.cal.bits[wi] & (((<uint64_t>1) << b) - 1)     # the window's last buckets share the first word
    if m != 0:
        return s.cal.head[(wi << 6) + wh_ctz64(m)]
    return -1


cdef inline Event _cal_take(Sim* s, int32_t c) noexcept nogil:
    """Remove the calendar's earliest event c (_cal_first)."""
    cdef Event e = s.cal.ev[c]
    cdef int32_t slot = <int32_t>((e.t // CAL_NS) & (s.cal.w - 1))
    s.cal.head[slot] = s.cal.next[c]
    if s.cal.head[slot] < 0:
        s.cal.tail[slot] = -1
        s.cal.bits[slot >> 6] &= ~((<uint64_t>1) << (slot & 63))
    else:
        s.cal.prev[s.cal.head[slot]] = -1
    s.cal.next[c] = s.cal.free
    s.cal.free = c
    s.cal.n -= 1
    return e


cdef inline int32_t cal_bucket(Sim* s, int64_t t) noexcept nogil:
    """The first calendar event of the bucket that holds time t (its others follow
    by cal_next; every event of t is there), -1 if the calendar has none for t."""
    cdef int64_t k = t // CAL_NS
    if not s.cal.on or s.cal.n == 0 or k < s.cal.k or k - s.cal.k >= s.cal.w:
        return -1
    return s.cal.head[<int32_t>(k & (s.cal.w - 1))]


cdef inline int32_t cal_next_entry(Sim* s, int64_t* slot, int32_t c) noexcept nogil:
    """Walk the calendar's events (in slot order, not time order): start with
    slot = -1 and c = -1, pass back what it returned; -1 at the end."""
    cdef int64_t j
    cdef uint64_t m
    if c >= 0 and s.cal.next[c] >= 0:
        return s.cal.next[c]
    if not s.cal.on:
        return -1
    j = slot[0] + 1
    while j < s.cal.w:
        m = s.cal.bits[j >> 6] & ((~(<uint64_t>0)) << (j & 63))
        if m != 0:
            j = (j & ~(<int64_t>63)) + wh_ctz64(m)
            slot[0] = j
            return s.cal.head[j]
        j = (j | 63) + 1
    slot[0] = s.cal.w
    return -1


cdef inline int cal_to_heap(Sim* s) noexcept nogil:
    """Move every calendar event to the end of the heap's array, unordered: the
    caller restores the heap (heap_rebuild), as the accelerator does after taking
    a partition's events out of it.  Returns -1 if memory ran out."""
    cdef int64_t wi, slot, need
    cdef uint64_t m
    cdef int32_t c, nxt
    cdef Event* h
    if s.cal.n == 0:
        return 0
    need = s.heap_n + s.cal.n
    if need > s.heap_cap:
        h = <Event*>realloc(s.heap, (need + 64) * sizeof(Event))
        if h == NULL:
            return -1
        s.heap = h
        s.heap_cap = need + 64
    for wi in range(s.cal.w >> 6):
        m = s.cal.bits[wi]
        while m != 0:
            slot = (wi << 6) + wh_ctz64(m)
            m &= m - 1
            c = s.cal.head[slot]
            while c >= 0:
                s.heap[s.heap_n] = s.cal.ev[c]
                s.heap_n += 1
                nxt = s.cal.next[c]
                s.cal.next[c] = s.cal.free
                s.cal.free = c
                c = nxt
            s.cal.head[slot] = -1
            s.cal.tail[slot] = -1
        s.cal.bits[wi] = 0
    s.cal.n = 0
    return 0


# ------------------------------------------------------------------ the pending set

cdef inline int heap_push_seq(Sim* s, int64_t t, int64_t ts, uint64_t seq, int32_t kind, int32_t a, int64_t b) noexcept nogil:
    """Schedule an event under a tie key taken earlier (key_next): it fires exactly
    where an event pushed when that key was taken would have (in the calendar if
    it is on and the event falls in its window, else in the heap).
    Returns -1 if memory ran out."""
    cdef int64_t k
    cdef Event e
    e.t = t
    e.ts = ts
    e.seq = seq
    e.kind = kind
    e.a = a
    e.b = b
    if s.cal.on:
        k = t // CAL_NS
        if k >= s.cal.k and k - s.cal.k < s.cal.w:
            return _cal_insert(s, k, &e)
    return _heap_insert(s, &e)


cdef inline int64_t pending_n(Sim* s) noexcept nogil:
    """Events scheduled: the heap's and the calendar's."""
    return s.heap_n + s.cal.n


cdef inline Event* pending_first(Sim* s) noexcept nogil:
    """The earliest scheduled event (in the calendar or at the heap's top), or NULL."""
    cdef int32_t c
    if s.cal.n > 0:
        c = _cal_first(s)
        if s.heap_n == 0 or _ev_before(s, &s.cal.ev[c], &s.heap[0]):
            return &s.cal.ev[c]
    if s.heap_n > 0:
        return &s.heap[0]
    return NULL


cdef inline Event pending_take(Sim* s, Event* first) noexcept nogil:
    """Remove and return the earliest event, ``first`` as pending_first gave it."""
    cdef Event e
    cdef int64_t k
    if first != &s.heap[0]:
        e = _cal_take(s, <int32_t>(first - s.cal.ev))
    else:
        e = _heap_take(s)
    if s.cal.on:
        k = e.t // CAL_NS
        if k > s.cal.k:                 # the window starts at the popped event's bucket: every pending
            s.cal.k = k                 # event is at or after it
    return e


cdef inline Event heap_pop(Sim* s) noexcept nogil:
    """Remove and return the earliest scheduled event (there must be one)."""
    return pending_take(s, pending_first(s))


cdef inline int heap_push(Sim* s, int64_t t, int32_t kind, int32_t a, int64_t b) noexcept nogil:
    """Schedule an event under the next tie key; returns -1 if memory ran out."""
    cdef int64_t ts
    cdef uint64_t seq
    key_next(s, &ts, &seq)
    return heap_push_seq(s, t, ts, seq, kind, a, b)


cdef inline Event _heap_take(Sim* s) noexcept nogil:
    """Remove and return the binary heap's earliest event (it must not be empty)."""
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
