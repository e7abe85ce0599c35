# cython: language_level=3
"""Deferred random draws of a logical process (the partitioned kernel under KEY_RANK).

The sequential kernel draws ECN marks (and, with the reference's streams, a PFC
frame's IP id) from one stream in the order it processes events: the k-th draw
of the run is the k-th value of the stream.  A logical process does not know,
while it runs its round, how many draws the other processes make before its own
in that order, so it records each draw with the event that made it (its slot)
and the packet it may mark; when the round's events are ranked, the driver
takes the draws of every process in rank order from the one stream and marks
the packets (parallel.pxi).  A mark is read only where the packet reaches a host,
which a round's length keeps past the round's end.
"""
from libc.stdlib cimport realloc
from libc.stdint cimport int32_t, int64_t
from wormhole._core.defs cimport Sim, DrawRec


cdef inline void draw_defer(Sim* s, int32_t pk, double p) noexcept nogil:
    """Record a draw made now: the mark probability ``p`` of packet ``pk`` (pk < 0 or p < 0:
    a draw whose value nothing reads)."""
    cdef DrawRec* d
    cdef int64_t cap
    if s.n_draws == s.cap_draws:
        cap = s.cap_draws * 2 + 256
        d = <DrawRec*>realloc(s.draws, cap * sizeof(DrawRec))
        if d == NULL:
            s.fail = 1
            return
        s.draws = d
        s.cap_draws = cap
    d = &s.draws[s.n_draws]
    d.ref = s.cur_ref
    d.p = p
    d.pk = pk
    d.prev = -1
    d.xlp = -1
    d.xk = 0
    if pk >= 0:
        d.prev = s.pkts[pk].draw - 1
        s.pkts[pk].draw = <int32_t>(s.n_draws + 1)
    s.n_draws += 1


cdef inline void draw_orphan(Sim* s, int32_t pk) noexcept nogil:
    """Packet ``pk`` leaves the pool before its draws are decided: they mark nothing."""
    cdef int32_t d = s.pkts[pk].draw - 1
    while d >= 0:
        s.draws[d].pk = -1
        d = s.draws[d].prev
    s.pkts[pk].draw = 0
