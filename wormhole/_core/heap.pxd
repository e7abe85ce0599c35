# cython: language_level=3
"""Binary min-heap of events ordered by (time, insertion sequence).

Inline functions over ``Sim.heap``; the sequence number makes ties fire in the
order they were scheduled, which keeps runs deterministic.
"""
from libc.stdlib cimport realloc
from libc.stdint cimport int64_t, int32_t, uint64_t
from wormhole._core.defs cimport Sim, Event


cdef inline bint _before(Event* x, Event* y) noexcept nogil:
    return x.t < y.t or (x.t == y.t and x.seq < y.seq)


cdef inline int heap_push_seq(Sim* s, int64_t t, uint64_t seq, int32_t kind, int32_t a, int64_t b) noexcept nogil:
    """Schedule an event under a sequence number taken earlier (``seq`` < s.seq): it
    fires exactly where an event pushed when that number was taken would have.
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
    e.seq = seq
    e.kind = kind
    e.a = a
    e.b = b
    h = s.heap
    i = s.heap_n
    s.heap_n += 1
    while i > 0:
        parent = (i - 1) >> 1
        if _before(&e, &h[parent]):
            h[i] = h[parent]
            i = parent
        else:
            break
    h[i] = e
    return 0


cdef inline int heap_push(Sim* s, int64_t t, int32_t kind, int32_t a, int64_t b) noexcept nogil:
    """Schedule an event under the next sequence number; returns -1 if memory ran out."""
    s.seq += 1
    return heap_push_seq(s, t, s.seq - 1, kind, a, b)


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
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and _before(&h[child + 1], &h[child]):
                child += 1
            if _before(&h[child], &last):
                h[i] = h[child]
                i = child
            else:
                break
        h[i] = last
    return top


cdef inline void heap_rebuild(Sim* s) noexcept nogil:
    """Restore the heap property of s.heap[0:heap_n] (bottom-up)."""
    cdef int64_t n = s.heap_n, i, j, child
    cdef Event e
    cdef Event* h = s.heap
    i = n // 2 - 1
    while i >= 0:
        e = h[i]
        j = i
        while True:
            child = 2 * j + 1
            if child >= n:
                break
            if child + 1 < n and (h[child + 1].t < h[child].t or
                                  (h[child + 1].t == h[child].t and h[child + 1].seq < h[child].seq)):
                child += 1
            if h[child].t < e.t or (h[child].t == e.t and h[child].seq < e.seq):
                h[j] = h[child]
                j = child
            else:
                break
        h[j] = e
        i -= 1
