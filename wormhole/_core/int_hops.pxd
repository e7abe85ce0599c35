# cython: language_level=3
"""INT hop records through a fast-forward (the accelerator's skip, accel_skip.pxi).

A skip of ``dt`` ps advances the clock, and each port's transmitted-byte counter by what
the skipped packets would have sent (``Port.skip_tx``), without stamping a record.  A
record stamped before the skip (held by a flow's congestion control as its previous
sample, or carried by a packet in flight or by its ACK) must move by as much, so that the
first difference taken after the skip covers only time and bytes outside it, as in the
full run; left as it was, that difference spans the whole skip (and, past 2^24 ns, wraps
the record's clock).  The record's fields stay modulo their widths (defs.pxd, IntHop).
"""
from libc.stdint cimport int64_t, int32_t, uint32_t
from wormhole._core.defs cimport Sim, Flow, Port, IntHop, INT_MAX_HOP


cdef inline void int_hop_shift(IntHop* h, int64_t dt_ns, int64_t d_units) noexcept nogil:
    """One record moved on by dt_ns of switch clock and d_units of its byte counter
    (units of 128 x int_multi bytes), modulo the fields' widths."""
    h.time = <uint32_t>((<int64_t>h.time + dt_ns) & 0xFFFFFF)
    h.bytes = <uint32_t>((<int64_t>h.bytes + d_units) & 0xFFFFF)


cdef inline void int_hops_shift(Sim* s, IntHop* ih, int nhop, Flow* f, int64_t dt) noexcept nogil:
    """The records ih[0:min(nhop, INT_MAX_HOP)] that flow f's data stamped at its first nhop
    switch ports (record j last written by hop j + INT_MAX_HOP k: its path port 1 + hop,
    the NIC being port 0) move by the skip that just ended now (dt ps): the clock by the
    whole ns the switch clock passed, the bytes by the units the port's counter passed
    (its counter is now past the skip's Port.skip_tx)."""
    cdef int j, h
    cdef int64_t unit = 128 * <int64_t>s.cc.int_multi
    cdef int64_t dt_ns = s.now // 1000 - (s.now - dt) // 1000
    cdef Port* pt
    for j in range(nhop if nhop < INT_MAX_HOP else INT_MAX_HOP):
        h = j + (nhop - 1 - j) // INT_MAX_HOP * INT_MAX_HOP
        if 1 + h >= f.path_len:
            continue                # not a port of this path (a record the path never wrote)
        pt = &s.ports[s.paths[f.path_off + 1 + h]]
        int_hop_shift(&ih[j], dt_ns, pt.tx_bytes // unit - (pt.tx_bytes - pt.skip_tx) // unit)
