# cython: language_level=3
"""Switch shared-buffer MMU: ingress admission with reserve, dynamic threshold
and headroom; PFC pause / resume decisions; RED-style ECN marking at dequeue.

Follows the reference simulator's switch MMU: each (ingress port, queue) first
uses a private reserve, then the shared pool up to a dynamic threshold
(free shared space >> shift), then headroom; a pause is due when headroom is in
use or the shared part reaches the threshold, a resume when headroom is empty
and the shared part is zero or ``resume_offset`` below the threshold.
"""
from libc.stdint cimport int64_t, int32_t
from wormhole._core.defs cimport Sim, MmuPort, SwitchState, wh_rng_uniform, wh_ns3_draw
from wormhole._core.draws cimport draw_defer


cdef inline int64_t mmu_threshold(Sim* s, int32_t port, SwitchState* sw) noexcept nogil:
    cdef int64_t free_shared = sw.buffer - sw.total_hdrm - sw.total_rsrv - sw.shared_used
    if free_shared < 0:
        return 0
    return free_shared >> s.mmu[port].pfc_shift


cdef inline int64_t mmu_shared_used(Sim* s, int32_t port, int q) noexcept nogil:
    cdef int64_t used = s.mmu[port].ingress[q]
    return used - s.p.reserve if used > s.p.reserve else 0


cdef inline bint mmu_admit(Sim* s, int32_t port, int q, int64_t size, SwitchState* sw) noexcept nogil:
    """False when headroom is full and the shared threshold is exceeded (drop)."""
    cdef MmuPort* m = &s.mmu[port]
    if size + m.hdrm[q] > m.headroom and size + mmu_shared_used(s, port, q) > mmu_threshold(s, port, sw):
        return False
    return True


cdef inline void mmu_add(Sim* s, int32_t in_port, int32_t out_port, int q, int64_t size, SwitchState* sw) noexcept nogil:
    cdef MmuPort* m = &s.mmu[in_port]
    cdef int64_t new_bytes = m.ingress[q] + size
    cdef int64_t thresh
    if new_bytes <= s.p.reserve:
        m.ingress[q] += size
    else:
        thresh = mmu_threshold(s, in_port, sw)
        if new_bytes - s.p.reserve > thresh:
            m.hdrm[q] += size
        else:
            m.ingress[q] += size
            sw.shared_used += size if size < new_bytes - s.p.reserve else new_bytes - s.p.reserve
    s.mmu[out_port].egress[q] += size
    sw.used += size


cdef inline void mmu_remove(Sim* s, int32_t in_port, int32_t out_port, int q, int64_t size, SwitchState* sw) noexcept nogil:
    cdef MmuPort* m = &s.mmu[in_port]
    cdef int64_t from_hdrm = m.hdrm[q] if m.hdrm[q] < size else size
    cdef int64_t over = m.ingress[q] - s.p.reserve if m.ingress[q] > s.p.reserve else 0
    cdef int64_t from_shared = size - from_hdrm
    if over < from_shared:
        from_shared = over
    m.hdrm[q] -= from_hdrm
    m.ingress[q] -= size - from_hdrm
    sw.shared_used -= from_shared
    s.mmu[out_port].egress[q] -= size
    sw.used -= size


cdef inline bint mmu_should_pause(Sim* s, int32_t port, int q, SwitchState* sw) noexcept nogil:
    cdef MmuPort* m = &s.mmu[port]
    return (not m.pause_sent[q]) and (m.hdrm[q] > 0 or mmu_shared_used(s, port, q) >= mmu_threshold(s, port, sw))


cdef inline bint mmu_should_resume(Sim* s, int32_t port, int q, SwitchState* sw) noexcept nogil:
    cdef MmuPort* m = &s.mmu[port]
    cdef int64_t used
    if not m.pause_sent[q]:
        return False
    used = mmu_shared_used(s, port, q)
    return m.hdrm[q] == 0 and (used == 0 or used + s.p.resume_offset <= mmu_threshold(s, port, sw))


cdef inline bint mmu_should_mark(Sim* s, int32_t port, int q, int32_t pk) noexcept nogil:
    """RED on the egress queue's bytes (after the dequeue): mark above kmax,
    with probability pmax * (bytes - kmin) / (kmax - kmin) above kmin.  A logical
    process that defers draws (draws.pxd) records the draw for data packet ``pk``
    (-1: not a data packet) and answers False: the mark comes at its round's end."""
    cdef MmuPort* m = &s.mmu[port]
    cdef int64_t b = m.egress[q]
    cdef double p
    if q == 0:
        return False
    if b > m.kmax:
        return True
    if b > m.kmin:
        p = m.pmax * <double>(b - m.kmin) / <double>(m.kmax - m.kmin)
        if s.defer_draws:
            draw_defer(s, pk, p)
            return False
        if s.p.ns3_rng:
            return wh_ns3_draw(&s.ns3rng) < p
        return wh_rng_uniform(&s.port_rng[port] if s.port_rng != NULL else &s.rng) < p
    return False
