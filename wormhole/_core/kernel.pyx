# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The packet kernel: event loop, NICs, switch ports, PFC, ECN, INT.

Everything below ``Kernel`` runs in C over the arrays of one ``Sim`` struct
(see ``defs.pxd``).  Python is entered only between batches: when a user event
is due, when flows with callbacks completed, or when ``until`` is reached.

Per packet and hop the reference processes two events: the end of
serialisation at the sending port (which starts the next packet) and the
arrival at the peer port after the propagation delay.  The kernel processes
the arrival and, only where the port may have something to send then, the
end of serialisation (see start_tx); both keep the sequence numbers the
reference's order gives them.
"""
from libc.stdlib cimport calloc, malloc, realloc, free
from libc.string cimport memset, memcpy
from libc.stdint cimport int64_t, uint64_t, int32_t, uint32_t, int16_t, uint8_t, INT64_MAX, INT64_MIN, INT32_MAX
cimport numpy as cnp
import numpy as np

from wormhole._core.defs cimport *
from wormhole._core.heap cimport (heap_push, heap_push_seq, heap_pop, key_next, key_before, key_rank,
                                  cal_setup, cal_off, cal_release, cal_next_entry, pending_n, pending_first,
                                  pending_take)
from wormhole._core.draws cimport draw_defer, draw_orphan
from wormhole._core.vec cimport _append, _grow as _grow_nogil
from wormhole._core cimport accel
from wormhole._core.accel cimport port_frozen, window_prefetch, memo_notes_due
from wormhole._core.mmu cimport (mmu_threshold, mmu_admit, mmu_add, mmu_remove, mmu_should_pause,
                                 mmu_should_resume, mmu_should_mark)
from wormhole._core.cc cimport (dcqcn_init, dcqcn_cnp, dcqcn_alpha_update, dcqcn_decrease, dcqcn_increase,
                                hpcc_init, hpcc_on_ack, timely_init, timely_on_ack, dctcp_init, dctcp_on_ack)
from wormhole._core.cc_swift cimport (swift_target, swift_bound, swift_init, swift_on_ack, swift_on_loss,
                                      swift_on_rto, swift_pace_rate)
from wormhole._core.int_hops cimport int_hops_shift
from wormhole._core.cc_tcp cimport tcp_init, tcp_on_ack, tcp_on_loss, tcp_on_rto, tcp_bound, tcp_pto, tcp_rto, tcp_timer_due, tcp_on_timer

cnp.import_array()

EVENT_NAMES = ("tx_done", "arrive", "nic_wake", "flow_start", "user", "rto", "cc_timer", "sample", "skip_end",
               "msg_note")

include "cc_table.pxi"

DEF CAL_BUCKETS = 8192          # the calendar's window: 8.2 us of nanosecond buckets (heap.pxd)

cdef void* _grow(void* p, size_t n, size_t size) except NULL:
    """realloc for Python-side growth: raises MemoryError instead of returning NULL."""
    cdef void* q = realloc(p, n * size if n > 0 else size)
    if q == NULL:
        raise MemoryError()
    return q

cdef extern from "stdlib.h":
    int posix_memalign(void** memptr, size_t alignment, size_t size) nogil

DEF FLOW_ALIGN = 64             # a cache line: the flows array's alignment (a Flow's lines are its own, defs.pxd),
                                # and calloc_lines'


cdef void* calloc_lines(size_t n, size_t size) noexcept nogil:
    """calloc on a FLOW_ALIGN boundary, rounded up to whole cache lines: what two threads
    write (a link's two ports, two logical processes' Sims and outboxes) never shares a
    line.  NULL if memory ran out; free() releases it."""
    cdef void* q = NULL
    cdef size_t bytes = n * size if n > 0 else size
    bytes = (bytes + FLOW_ALIGN - 1) // FLOW_ALIGN * FLOW_ALIGN
    if posix_memalign(&q, FLOW_ALIGN, bytes) != 0:
        return NULL
    memset(q, 0, bytes)
    return q


cdef void* _grow_aligned(void* p, size_t old_n, size_t n, size_t size) except NULL:
    """_grow for an array that must start on a FLOW_ALIGN boundary (calloc_lines; its first
    old_n entries copied)."""
    cdef void* q = calloc_lines(n, size)
    if q == NULL:
        raise MemoryError()
    if p != NULL and old_n > 0:
        memcpy(q, p, (old_n if old_n < n else n) * size)
    free(p)
    return q

# ---------------------------------------------------------------- packet pool

cdef int32_t pkt_alloc(Sim* s) noexcept nogil:
    cdef int32_t i, old, new_cap
    cdef Packet* np_
    cdef IntHop* ni
    if s.free_head == NO_PKT:
        if s.p.max_packets > 0 and s.pkt_cap >= s.p.max_packets:
            s.fail = 2
            return NO_PKT
        old = s.pkt_cap
        new_cap = old * 2 + 1024
        if s.p.max_packets > 0 and new_cap > s.p.max_packets:
            new_cap = <int32_t>s.p.max_packets
        np_ = <Packet*>realloc(s.pkts, new_cap * sizeof(Packet))
        if np_ == NULL:
            s.fail = 1
            return NO_PKT
        s.pkts = np_
        if s.p.int_mode == INT_HOPS:
            ni = <IntHop*>realloc(s.ints, new_cap * INT_MAX_HOP * sizeof(IntHop))
            if ni == NULL:
                s.fail = 1
                return NO_PKT
            s.ints = ni
        for i in range(old, new_cap - 1):
            s.pkts[i].next = i + 1
        s.pkts[new_cap - 1].next = NO_PKT
        s.free_head = old
        s.pkt_cap = new_cap
    i = s.free_head
    s.free_head = s.pkts[i].next
    s.pkts[i].next = NO_PKT
    s.pkts[i].nhop = 0
    s.pkts[i].ecn = 0
    s.pkts[i].draw = 0
    s.pkts_live += 1
    if s.pkts_live > s.pkts_peak:
        s.pkts_peak = s.pkts_live
    return i


cdef inline void pkt_free(Sim* s, int32_t i) noexcept nogil:
    if s.defer_draws and s.pkts[i].draw != 0:
        draw_orphan(s, i)
    s.pkts[i].next = s.free_head
    s.free_head = i
    s.pkts_live -= 1


cdef inline void fifo_push(Sim* s, Port* pt, int q, int32_t pk) noexcept nogil:
    s.pkts[pk].next = NO_PKT
    if pt.qtail[q] == NO_PKT:
        pt.qhead[q] = pk
    else:
        s.pkts[pt.qtail[q]].next = pk
    pt.qtail[q] = pk
    pt.qbytes[q] += s.pkts[pk].size
    pt.qbytes_total += s.pkts[pk].size
    if pt.qbytes_total > s.max_qbytes:
        s.max_qbytes = pt.qbytes_total


cdef inline int32_t fifo_pop(Sim* s, Port* pt, int q) noexcept nogil:
    cdef int32_t pk = pt.qhead[q]
    pt.qhead[q] = s.pkts[pk].next
    if pt.qhead[q] == NO_PKT:
        pt.qtail[q] = NO_PKT
    pt.qbytes[q] -= s.pkts[pk].size
    pt.qbytes_total -= s.pkts[pk].size
    return pk

# ---------------------------------------------------------------- transmission

# Transmission ends that would find nothing to send are not scheduled.  The
# reference (and a full heap) has an event at the end of every serialisation:
# it clears the port's busy flag and asks the port for its next packet.  When
# the port has nothing else at start_tx (a switch port's queues are empty; a
# NIC's ACK queue is empty and each of its queue pairs has sent all its bytes
# and waits for ACKs), the end is only recorded: its time tx_end and the
# sequence number tx_seq its event would have had (taken from the counter, so
# every other event keeps its number).  Whether it has passed is decided by the
# order of events, (tx_end, tx_seq) against the event being processed (now,
# cur_seq), so a packet arriving at the same picosecond is sent at once if its
# event comes after the end's and queued if before, exactly as the two events
# would be ordered in the heap.  Anything that can give the port something to
# send is followed by a call of switch_try_send / nic_try_send on it (a packet
# queued, a PFC resume, an ACK, NACK or timeout, a post, a flow start); that
# call, on a port still busy, schedules the end under tx_seq (tx_schedule), so
# the event fires where it would have and asks for the packet.  An end that
# passes unscheduled therefore had nothing to send: its only effect, the busy
# flag, is read through port_busy.  A NIC queue pair that can still send, or
# one that finished (compacted at the end's nic_pick), or a pacing wake-up the
# end would arm, keeps the event scheduled.

cdef inline bint tx_passed(Sim* s, Port* pt) noexcept nogil:
    """The port's unscheduled transmission end lies before the event being processed."""
    return key_before(s, pt.tx_end, pt.tx_ts, pt.tx_seq, s.now, s.cur_ts, s.cur_seq)


cdef inline bint port_busy(Sim* s, int32_t port) noexcept nogil:
    """The port is serialising a packet (an unscheduled end that passed clears it)."""
    cdef Port* pt = &s.ports[port]
    if pt.busy and pt.tx_lazy and tx_passed(s, pt):
        pt.busy = 0                     # (tx_lazy stays: the end passed unscheduled)
    return pt.busy


cdef inline void tx_schedule(Sim* s, int32_t port) noexcept nogil:
    """The busy port may have something to send when its serialisation ends:
    schedule that end under the sequence number it was given."""
    cdef Port* pt = &s.ports[port]
    pt.tx_lazy = 0
    s.tx_unsched -= 1
    if pt.tx_ctrl:
        s.tx_ctrl += 1
    if heap_push_seq(s, pt.tx_end, pt.tx_ts, pt.tx_seq, EV_TX_DONE, port, 0) != 0:
        s.fail = 1


cdef inline bint nic_done_after(Sim* s, Port* pt) noexcept nogil:
    """The NIC can send nothing until an ACK, NACK, timeout, post or flow start (each
    followed by nic_try_send): no ACK queued, and each queue pair has sent every byte
    posted and has some unacknowledged."""
    cdef int32_t k
    cdef Flow* f
    if pt.qhead[0] != NO_PKT:
        return False
    for k in range(pt.nqps):
        f = &s.flows[pt.qps[k]]
        if f.snd_nxt < f.size or f.snd_una >= f.size:
            return False
    return True


cdef inline void start_tx(Sim* s, int32_t port, int32_t pk) noexcept nogil:
    """Serialise a packet: the port is busy for its tx time; the peer sees it
    after tx time plus propagation delay."""
    cdef Port* pt = &s.ports[port]
    cdef int64_t tx = wh_tx_time_ps(s.pkts[pk].size, pt.rate_bps, s.p.quantum)
    if pt.tx_packets > 0:               # the last transmission's end: scheduled (an event) or not;
        # the mean of the samples since the port's epoch up to 1024, then over the last ~1024 (no bias
        # from the start value, nor from the traffic before the epoch)
        pt.txd_samples += 1
        pt.txd_per_pkt += ((0.0 if pt.tx_lazy else 1.0) - pt.txd_per_pkt) / (
            <double>pt.txd_samples if pt.txd_samples < 1024 else 1024.0)
    pt.busy = 1
    pt.tx_packets += 1
    pt.tx_ctrl = s.pkts[pk].kind != PK_DATA
    pt.tx_end = s.now + tx
    key_next(s, &pt.tx_ts, &pt.tx_seq)
    if not s.eager_tx and (pt.qbytes_total == 0 if s.is_switch[pt.node] else nic_done_after(s, pt)):
        pt.tx_lazy = 1
        s.tx_unsched += 1
    else:
        pt.tx_lazy = 0
        if pt.tx_ctrl:
            s.tx_ctrl += 1
        if heap_push_seq(s, pt.tx_end, pt.tx_ts, pt.tx_seq, EV_TX_DONE, port, 0) != 0:
            s.fail = 1
    if s.port_cut != NULL and s.port_cut[port]:
        lp_send(s, port, pk, s.now + tx + pt.delay_ps)      # another logical process receives it
    elif pt.wire_heap == 0 or s.cal.on:   # (the calendar takes every arrival: above)
        if heap_push(s, s.now + tx + pt.delay_ps, EV_ARRIVE, pt.peer, pk) != 0:
            s.fail = 1
        pt.wire_heap += 1
    else:
        wire_append(s, pt, pk, s.now + tx + pt.delay_ps)


# A link delivers in the order it sends (an arrival is the send time plus the tx time
# plus a fixed delay, and a port sends one packet at a time).  With the calendar on
# (heap.pxd) every arrival is pushed when its packet is sent: it lands at the tail of
# its nanosecond's bucket, its key being the newest.  Without it the heap holds one
# arrival per port: the packets behind it wait on the port's wire with the arrival time
# and the sequence number their event would have had, and each enters the heap under
# that number when the one ahead arrives, so the heap orders every arrival exactly as
# if all were pushed when sent, with a pending set of about one event per busy link
# instead of one per packet in flight.  The wire is not used with the calendar: an
# arrival entering late under an old number belongs before the newer events of its
# picosecond, and in a fabric of equal links many arrivals share one (measured on the
# reference's paper benchmark: 52.7 M of 87 M calendar inserts walked a bucket of about
# 8 events, against 5.1 M with arrivals pushed when sent; 27% less wall-clock).

cdef inline void wire_append(Sim* s, Port* pt, int32_t pk, int64_t t) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    pkt.arr_t = t
    key_next(s, &pkt.arr_ts, &pkt.arr_seq)
    pkt.next = NO_PKT
    if pt.wire_tail == NO_PKT:
        pt.wire_head = pk
    else:
        s.pkts[pt.wire_tail].next = pk
    pt.wire_tail = pk
    s.wire_n += 1


cdef inline void wire_next(Sim* s, int32_t port) noexcept nogil:
    """One of the port's arrivals left the heap: the next packet on its wire enters it."""
    cdef Port* pt = &s.ports[port]
    cdef int32_t pk
    pt.wire_heap -= 1
    if pt.wire_heap == 0 and pt.wire_head != NO_PKT:
        pk = pt.wire_head
        pt.wire_head = s.pkts[pk].next
        if pt.wire_head == NO_PKT:
            pt.wire_tail = NO_PKT
        s.wire_n -= 1
        if heap_push_seq(s, s.pkts[pk].arr_t, s.pkts[pk].arr_ts, s.pkts[pk].arr_seq, EV_ARRIVE, pt.peer, pk) != 0:
            s.fail = 1
        pt.wire_heap = 1


cdef void wire_flush(Sim* s, int32_t port) noexcept nogil:
    """Every packet on the port's wire enters the heap (for a fast-forward that takes
    a partition's events out of it)."""
    cdef Port* pt = &s.ports[port]
    cdef int32_t pk
    while pt.wire_head != NO_PKT:
        pk = pt.wire_head
        pt.wire_head = s.pkts[pk].next
        s.wire_n -= 1
        if heap_push_seq(s, s.pkts[pk].arr_t, s.pkts[pk].arr_ts, s.pkts[pk].arr_seq, EV_ARRIVE, pt.peer, pk) != 0:
            s.fail = 1
        pt.wire_heap += 1
    pt.wire_tail = NO_PKT


cdef inline int64_t flow_window(Flow* f) noexcept nogil:
    cdef int64_t w
    if f.win == 0:
        return 0
    if f.var_win:
        w = wh_muldiv(f.win, f.rate, f.max_rate)
        return w if w > 0 else 1
    return f.win


cdef int32_t nic_pick(Sim* s, Port* pt) noexcept nogil:
    """Round-robin over the NIC's queue pairs, as the reference NIC: the next QP
    after the last one served that is not paused, has bytes left, is not window
    bound and whose pacing time has come.  Finished QPs are compacted away."""
    cdef int32_t fcount = pt.nqps, k, idx, res = -1, min_fin = INT32_MAX, nxt, i
    cdef Flow* f
    cdef int64_t w
    for k in range(1, fcount + 1):
        idx = (k + pt.rrlast) % fcount
        f = &s.flows[pt.qps[idx]]
        w = flow_window(f)
        if (not pt.paused[f.pg]) and f.size > f.snd_nxt and not (w != 0 and f.snd_nxt - f.snd_una >= w):
            if f.next_avail > s.now:
                continue
            res = idx
            break
        elif f.snd_una >= f.size:
            if idx < min_fin:
                min_fin = idx
    if min_fin < INT32_MAX:
        nxt = min_fin
        s.flows[pt.qps[min_fin]].on_nic = 0
        for i in range(min_fin + 1, fcount):
            f = &s.flows[pt.qps[i]]
            if f.snd_una < f.size:
                if i == res:
                    res = nxt
                pt.qps[nxt] = pt.qps[i]
                nxt += 1
            else:
                f.on_nic = 0
        pt.nqps = nxt
    return res


# NIC wake-ups that would find nothing to do are not scheduled either (as the
# transmission ends above).  A wake-up is armed for the earliest pacing time of
# the NIC's queue pairs that have data; when each of those is window-bound or
# paused, the wake-up finds them so unless an ACK, NACK, timeout, post, flow
# start or PFC resume comes first, and each of those ends in nic_try_send.  Nor
# does it arm a later one as long as some pacing time is not after it.  So such
# a wake-up gets its time and its sequence number (wake_t, wake_seq) and stays
# out of the heap; nic_try_send, on each call, schedules it under that number
# once that no longer holds (wake_check).  One that passes unscheduled clears
# wake_t where its event would have.  A window that moves without an ACK
# (DCQCN's rate timers with var_win) keeps every wake-up an event.

cdef inline bint wake_passed(Sim* s, Port* pt) noexcept nogil:
    return key_before(s, pt.wake_t, pt.wake_ts, pt.wake_seq, s.now, s.cur_ts, s.cur_seq)


cdef inline void wake_settle(Sim* s, Port* pt) noexcept nogil:
    """An unscheduled wake-up that passed leaves no wake-up pending."""
    if pt.wake_lazy and wake_passed(s, pt):
        pt.wake_lazy = 0
        pt.wake_t = -1


cdef inline void wake_schedule(Sim* s, int32_t port) noexcept nogil:
    cdef Port* pt = &s.ports[port]
    pt.wake_lazy = 0
    s.wake_unsched -= 1
    if heap_push_seq(s, pt.wake_t, pt.wake_ts, pt.wake_seq, EV_NIC_WAKE, port, pt.wake_token) != 0:
        s.fail = 1


cdef inline bint nic_blocked(Sim* s, Port* pt, int64_t t) noexcept nogil:
    """A wake-up at ``t`` would find nothing to do: each queue pair with data to send
    is window-bound or paused (and only an ACK can move its window), and one of them
    may send by ``t`` (so the wake-up would arm no later one)."""
    cdef int32_t k
    cdef Flow* f
    cdef int64_t w, first = INT64_MAX
    for k in range(pt.nqps):
        f = &s.flows[pt.qps[k]]
        if f.size > f.snd_nxt:
            if f.var_win and CC_TABLE[f.cc].timer_rate:     # rate (so window) moved by timers
                return False
            w = flow_window(f)
            if not (pt.paused[f.pg] or (w != 0 and f.snd_nxt - f.snd_una >= w)):
                return False
            if f.next_avail < first:
                first = f.next_avail
    return first <= t


cdef inline void wake_check(Sim* s, int32_t port) noexcept nogil:
    """Settle or schedule the NIC's unscheduled wake-up, before anything else reads it."""
    cdef Port* pt = &s.ports[port]
    if pt.wake_lazy:
        if wake_passed(s, pt):
            pt.wake_lazy = 0
            pt.wake_t = -1
        elif not nic_blocked(s, pt, pt.wake_t):
            wake_schedule(s, port)


cdef inline void nic_arm(Sim* s, int32_t port, int64_t t) noexcept nogil:
    """Arm the NIC's wake-up at ``t`` (scheduled unless it would find nothing to send)."""
    cdef Port* pt = &s.ports[port]
    pt.wake_token += 1
    pt.wake_t = t
    key_next(s, &pt.wake_ts, &pt.wake_seq)
    if not s.eager_tx and nic_blocked(s, pt, t):
        pt.wake_lazy = 1
        s.wake_unsched += 1
        return
    if heap_push_seq(s, t, pt.wake_ts, pt.wake_seq, EV_NIC_WAKE, port, pt.wake_token) != 0:
        s.fail = 1


cdef void nic_try_send(Sim* s, int32_t port) noexcept nogil:
    """The host NIC's DequeueAndTransmit: ACK queue first, then one data packet
    of the next eligible QP; if none is eligible only because of pacing, arm a
    wake-up at the earliest pacing time."""
    cdef Port* pt = &s.ports[port]
    cdef int32_t idx, fi, pk, payload, k
    cdef Flow* f
    cdef Packet* pkt
    cdef int64_t t, rate
    wake_check(s, port)
    if port_busy(s, port):
        if pt.tx_lazy:
            tx_schedule(s, port)
        return
    if port_frozen(s, port):
        return
    if (not pt.paused[s.p.ack_qidx]) and pt.qhead[0] != NO_PKT:
        pk = fifo_pop(s, pt, 0)
        s.ctrl_pkts += 1
        pt.tx_bytes += s.pkts[pk].size
        start_tx(s, port, pk)
        return
    idx = nic_pick(s, pt)
    if idx >= 0:
        fi = pt.qps[idx]
        pk = pkt_alloc(s)
        if pk == NO_PKT:
            return
        f = &s.flows[fi]
        payload = <int32_t>(f.size - f.snd_nxt if f.size - f.snd_nxt < s.p.mtu else s.p.mtu)
        pkt = &s.pkts[pk]
        pkt.kind = PK_DATA
        pkt.flow = fi
        pkt.payload = payload
        pkt.size = payload + s.p.hdr_bytes
        pkt.seq = f.snd_nxt
        pkt.ts = s.now
        pkt.hop = 1
        pkt.qidx = <uint8_t>f.pg
        pkt.in_port = -1
        if f.snd_nxt < f.max_sent:
            f.retx_bytes += payload
        f.snd_nxt += payload
        if f.snd_nxt > f.max_sent:
            f.max_sent = f.snd_nxt
        pt.rrlast = idx
        s.data_pkts += 1
        pt.wake_samples += 1            # as txd_per_pkt: the plain mean until 1024 samples
        pt.wake_per_pkt += (pt.wakes_pending - pt.wake_per_pkt) / (
            <double>pt.wake_samples if pt.wake_samples < 1024 else 1024.0)
        pt.wakes_pending = 0
        pt.tx_bytes += pkt.size
        start_tx(s, port, pk)
        f.last_pkt_size = pkt.size
        rate = f.rate if s.p.rate_bound else f.max_rate
        f.next_avail = s.now + wh_tx_time_ps(f.last_pkt_size, rate, s.p.quantum)
        if s.p.rto > 0 and not f.rto_armed:
            rto_arm(s, fi)
        return
    t = INT64_MAX
    for k in range(pt.nqps):
        f = &s.flows[pt.qps[k]]
        if f.size > f.snd_nxt and f.next_avail < t:
            t = f.next_avail
    if pt.wake_t < 0 and t < INT64_MAX and t > s.now:
        nic_arm(s, port, t)


cdef inline void rto_arm(Sim* s, int32_t fi) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    f.rto_armed = 1
    f.rto_mark = f.snd_una
    f.rto_token += 1
    if heap_push(s, s.now + s.p.rto, EV_RTO, fi, f.rto_token) != 0:
        s.fail = 1


cdef void rto_fire(Sim* s, int32_t fi, int64_t token) noexcept nogil:
    """Retransmission timeout (an extension; the reference has none): with no
    acknowledgement progress for a whole timeout, go back to snd_una."""
    cdef Flow* f = &s.flows[fi]
    if token != f.rto_token:
        s.stale_by[<int>EV_RTO] += 1     # counted among the events too (as a stale DCQCN timer is)
        return
    f.rto_armed = 0
    if f.finish >= 0:
        return
    if f.snd_una > f.rto_mark:
        rto_arm(s, fi)
        return
    if f.snd_nxt > f.snd_una:
        s.timeouts += 1
        f.snd_nxt = f.snd_una
        CC_TABLE[f.cc].on_rto(s, fi)
        nic_try_send(s, f.src_port)


cdef void send_pfc(Sim* s, int32_t port, int q, int pause) noexcept nogil:
    """A switch emits a PFC frame on `port` (towards the upstream sender),
    through the strict-priority queue 0."""
    cdef int32_t pk = pkt_alloc(s)
    cdef Packet* pkt
    if pk == NO_PKT:
        return
    pkt = &s.pkts[pk]
    pkt.kind = PK_PFC
    pkt.flow = -1
    pkt.size = s.p.pfc_bytes
    pkt.payload = 0
    pkt.seq = 0
    pkt.ts = s.now
    pkt.hop = 0
    pkt.qidx = <uint8_t>q
    pkt.pfc_pause = <uint8_t>pause
    pkt.in_port = -1
    if s.p.ns3_rng:                 # the reference draws a random IP id for every PFC frame
        if s.defer_draws:
            draw_defer(s, -1, -1.0)
        else:
            wh_ns3_draw(&s.ns3rng)
    if pause:
        s.pfc_pauses += 1
    else:
        s.pfc_resumes += 1
    fifo_push(s, &s.ports[port], 0, pk)
    switch_try_send(s, port)


cdef void switch_try_send(Sim* s, int32_t port) noexcept nogil:
    """Switch egress: queue 0 strictly first, then round-robin over the queues
    that are not paused.  MMU release, ECN marking, PFC resume and the INT
    hop record all happen here, at dequeue."""
    cdef Port* pt = &s.ports[port]
    cdef int q = -1, k, qq, in_port
    cdef int32_t pk
    cdef Packet* pkt
    cdef SwitchState* sw
    cdef IntHop* rec
    if port_busy(s, port):
        if pt.tx_lazy and pt.qbytes_total > 0:
            tx_schedule(s, port)
        return
    if pt.qbytes_total == 0 or port_frozen(s, port):
        return
    if pt.qhead[0] != NO_PKT:
        q = 0
    else:
        for k in range(1, NQ + 1):
            qq = (k + pt.rrlast) % NQ
            if (not pt.paused[qq]) and pt.qhead[qq] != NO_PKT:
                q = qq
                break
        if q < 0:
            return
    pk = fifo_pop(s, pt, q)
    if q != 0:
        pt.rrlast = q
        pkt = &s.pkts[pk]
        in_port = pkt.in_port
        sw = &s.sw[s.sw_idx[pt.node]]
        mmu_remove(s, in_port, port, q, pkt.size, sw)
        if s.p.ecn and mmu_should_mark(s, port, q, pk if pkt.kind == PK_DATA else -1) and pkt.kind == PK_DATA:
            if not pkt.ecn:
                s.ecn_marks += 1
            pkt.ecn = 1
        if mmu_should_resume(s, in_port, q, sw):
            s.mmu[in_port].pause_sent[q] = 0
            if s.p.pfc:
                send_pfc(s, in_port, q, 0)
    pkt = &s.pkts[pk]
    if pkt.kind == PK_DATA and s.p.int_mode == INT_HOPS:
        rec = &s.ints[<int64_t>pk * INT_MAX_HOP + (pkt.nhop % INT_MAX_HOP)]
        rec.time = <uint32_t>((s.now // 1000) & 0xFFFFFF)
        rec.bytes = <uint32_t>((pt.tx_bytes // (128 * s.cc.int_multi)) & 0xFFFFF)
        rec.qlen = <uint32_t>((pt.qbytes_total // (80 * s.cc.int_multi)) & 0x1FFFF)
        rec.rate_bps = pt.rate_bps
        pkt.nhop += 1
    pt.tx_bytes += pkt.size
    start_tx(s, port, pk)


cdef void switch_receive(Sim* s, int32_t in_port, int32_t pk) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    cdef Flow* f = &s.flows[pkt.flow]
    cdef int32_t out
    cdef int q
    cdef SwitchState* sw
    if pkt.kind == PK_DATA:
        out = s.paths[f.path_off + pkt.hop]
        q = pkt.qidx
    else:
        out = s.paths[f.rpath_off + pkt.hop]
        q = 0 if s.p.ack_high_prio else pkt.qidx
    pkt.hop += 1
    pkt.in_port = in_port
    if q != 0:
        sw = &s.sw[s.sw_idx[s.ports[in_port].node]]
        if not mmu_admit(s, in_port, q, pkt.size, sw):
            s.drops += 1
            pkt_free(s, pk)
            return
        mmu_add(s, in_port, out, q, pkt.size, sw)
        if sw.used > s.max_buffer:
            s.max_buffer = sw.used
        if mmu_should_pause(s, in_port, q, sw):
            s.mmu[in_port].pause_sent[q] = 1
            if s.p.pfc:
                send_pfc(s, in_port, q, 1)
    fifo_push(s, &s.ports[out], q, pk)
    switch_try_send(s, out)


cdef void change_rate(Sim* s, int32_t fi, int64_t new_rate) noexcept nogil:
    """The reference's ChangeRate: shift the pacing time of the next packet by
    the change of the last packet's tx time, and pull the NIC's pending
    wake-up earlier if needed."""
    cdef Flow* f = &s.flows[fi]
    cdef Port* pt = &s.ports[f.src_port]
    cdef int64_t t
    f.next_avail += (wh_tx_time_ps(f.last_pkt_size, new_rate, s.p.quantum)
                     - wh_tx_time_ps(f.last_pkt_size, f.rate, s.p.quantum))
    wake_settle(s, pt)
    if pt.wake_t >= 0 and f.next_avail < pt.wake_t:
        t = f.next_avail if f.next_avail > s.now else s.now
        pt.wake_lazy = 0                # an unscheduled one is superseded (its event: a stale pop)
        pt.wake_token += 1
        pt.wake_t = t
        key_next(s, &pt.wake_ts, &pt.wake_seq)
        if heap_push_seq(s, t, pt.wake_ts, pt.wake_seq, EV_NIC_WAKE, f.src_port, pt.wake_token) != 0:
            s.fail = 1
    f.rate = new_rate


cdef inline void flow_complete(Sim* s, int32_t fi) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    CC_TABLE[f.cc].on_finish(s, fi)
    f.finish = s.now
    s.hooks.flow_done(s, fi)
    s.done[s.n_done] = fi
    if s.done_key != NULL:
        if s.key_mode == KEY_RANK:      # the completing event itself (its rank, once its round is ranked)
            s.done_key[2 * s.n_done] = s.cur_ref
            s.done_key[2 * s.n_done + 1] = 0
        else:
            s.done_key[2 * s.n_done] = s.cur_ts
            s.done_key[2 * s.n_done + 1] = <int64_t>s.cur_seq
    s.n_done += 1
    if f.has_cb:
        s.n_done_cb += 1


cdef void note_message(Sim* s, int32_t fi) noexcept nogil:
    """A connection's oldest pending message is acknowledged: tell Python."""
    if _append(&s.notes, &s.n_notes, &s.notes_cap, fi) != 0:
        s.fail = 1
        return
    s.flows[fi].msg_end = -1        # Python sets the next one
    s.hooks.on_message(s, fi)


cdef void note_delivered(Sim* s, int32_t fi) noexcept nogil:
    """The receiver holds every byte up to the flow's rcv_end: record the time and
    tell Python if it asked (a connection always does: its next message end)."""
    cdef Flow* f = &s.flows[fi]
    f.delivered = s.now
    f.rcv_end = -1
    if f.persistent or f.rcv_cb:
        if _append(&s.rnotes, &s.n_rnotes, &s.rnotes_cap, fi) != 0:
            s.fail = 1
    s.hooks.on_delivered(s, fi)


cdef void host_receive_ack(Sim* s, int32_t pk) noexcept nogil:
    """Sender: cumulative ACK, completion, go-back-N on NACK, then the
    congestion-control reaction (in the reference's order)."""
    cdef Packet* pkt = &s.pkts[pk]
    cdef int32_t fi = pkt.flow
    cdef Flow* f = &s.flows[fi]
    cdef int64_t seq = pkt.seq
    if f.finish >= 0:
        pkt_free(s, pk)
        return      # the reference deletes a finished QP and ignores late ACKs
    window_prefetch(s, fi)
    if s.p.back_to_zero and s.p.chunk > 0:
        seq = seq // s.p.chunk * s.p.chunk
    if seq > f.snd_una:
        f.snd_una = seq
    if f.persistent:
        if f.msg_end >= 0 and f.snd_una >= f.msg_end:
            note_message(s, fi)
    elif f.snd_una >= f.size:
        flow_complete(s, fi)
    if pkt.kind == PK_NACK:
        f.snd_nxt = f.snd_una
    CC_TABLE[f.cc].on_ack(s, fi, pk)
    pkt_free(s, pk)
    s.hooks.on_ack(s, fi)
    nic_try_send(s, f.src_port)


cdef void host_receive_data(Sim* s, int32_t port, int32_t pk) noexcept nogil:
    """Receiver: in-order data advances rcv_nxt and is ACKed; a gap is NACKed
    (rate-limited per hole by nack_interval); duplicates are ignored."""
    cdef Packet* pkt = &s.pkts[pk]
    cdef int32_t fi = pkt.flow
    cdef Flow* f = &s.flows[fi]
    cdef int64_t seq = pkt.seq, expected
    cdef int32_t payload = pkt.payload, ack
    cdef uint8_t ecn = pkt.ecn, nhop = pkt.nhop
    cdef int64_t ts = pkt.ts
    cdef int action = 0     # 1 ACK, 2 NACK
    cdef Packet* a
    f.rcv_bytes += payload
    f.milestone = s.p.ack_interval
    expected = f.rcv_nxt
    if seq == expected:
        f.rcv_nxt = expected + payload
        if f.rcv_end >= 0 and f.rcv_nxt >= f.rcv_end:
            note_delivered(s, fi)
        if f.rcv_nxt >= f.milestone:
            f.milestone += s.p.ack_interval
            action = 1
        elif s.p.chunk > 0 and f.rcv_nxt % s.p.chunk == 0:
            action = 1
    elif seq < expected:
        if s.p.rto > 0:
            action = 1      # with the RTO extension a duplicate is ACKed again (its ACK may have been lost)
    elif seq > expected:
        if s.now >= f.nack_timer or f.last_nack != expected:
            f.nack_timer = s.now + s.p.nack_interval
            f.last_nack = expected
            if s.p.back_to_zero and s.p.chunk > 0:
                f.rcv_nxt = f.rcv_nxt // s.p.chunk * s.p.chunk
            action = 2
    if action == 0:
        pkt_free(s, pk)
        return
    ack = pkt_alloc(s)
    if ack == NO_PKT:
        pkt_free(s, pk)
        return
    a = &s.pkts[ack]
    f = &s.flows[fi]
    a.kind = PK_ACK if action == 1 else PK_NACK
    a.flow = fi
    a.size = s.p.ack_bytes
    a.payload = 0
    a.seq = f.rcv_nxt
    a.ts = ts
    a.ecn = ecn
    a.hop = 1
    a.qidx = <uint8_t>f.pg
    a.in_port = -1
    a.nhop = nhop
    if s.p.int_mode == INT_HOPS:
        memcpy(&s.ints[<int64_t>ack * INT_MAX_HOP], &s.ints[<int64_t>pk * INT_MAX_HOP],
               INT_MAX_HOP * sizeof(IntHop))
    if action == 2:
        s.nacks += 1
    pkt_free(s, pk)
    fifo_push(s, &s.ports[f.dst_port], 0, ack)
    nic_try_send(s, f.dst_port)


cdef void on_arrive(Sim* s, int32_t port, int32_t pk) noexcept nogil:
    cdef Port* pt = &s.ports[port]
    cdef Packet* pkt = &s.pkts[pk]
    cdef int q
    cdef uint8_t pause
    cdef PfcRecord* rec
    if pt.error_rate > 0.0 and wh_rng_uniform(&s.port_rng[port] if s.port_rng != NULL else &s.rng) < pt.error_rate:
        s.corrupt += 1
        pkt_free(s, pk)
        return
    if pkt.kind == PK_PFC:
        q = pkt.qidx
        pause = pkt.pfc_pause
        pkt_free(s, pk)
        if not s.p.pfc:
            return
        if s.pfc_n == s.pfc_cap:
            rec = <PfcRecord*>realloc(s.pfc_log, (s.pfc_cap * 2 + 64) * sizeof(PfcRecord))
            if rec == NULL:
                s.fail = 1
                return
            s.pfc_log = rec
            s.pfc_cap = s.pfc_cap * 2 + 64
        rec = &s.pfc_log[s.pfc_n]
        s.pfc_n += 1
        rec.t = s.now
        rec.node = pt.node
        rec.is_switch = s.is_switch[pt.node]
        rec.ifindex = pt.ifindex
        rec.pause = 1 if pause else 0
        if s.key_mode == KEY_RANK:
            rec.ts = s.cur_ref
            rec.seq = 0
        else:
            rec.ts = s.cur_ts
            rec.seq = s.cur_seq
        if rec.pause:
            pt.paused[q] = 1
        else:
            pt.paused[q] = 0
            if s.is_switch[pt.node]:
                switch_try_send(s, port)
            else:
                nic_try_send(s, port)
        return
    if s.is_switch[pt.node]:
        switch_receive(s, port, pk)
    elif pkt.kind == PK_DATA:
        host_receive_data(s, port, pk)
    else:
        host_receive_ack(s, pk)


cdef void flow_start(Sim* s, int32_t fi) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    cdef Port* pt = &s.ports[f.src_port]
    s.hooks.flow_active(s, fi)
    if _append(&pt.qps, &pt.nqps, &pt.cap_qps, fi) != 0:
        s.fail = 1
        return
    f.on_nic = 1
    f.started = 1
    f.next_avail = s.now
    nic_try_send(s, f.src_port)


# ---------------------------------------------------------------- the accelerator's seam

cdef void _port_settle(Sim* s, int32_t port) noexcept nogil:
    """KernelOps.port_settle: the port's unscheduled wake-up and transmission end enter the heap."""
    wake_settle(s, &s.ports[port])
    if s.ports[port].wake_lazy:
        wake_schedule(s, port)
    if port_busy(s, port) and s.ports[port].tx_lazy:
        tx_schedule(s, port)


cdef void _port_kick(Sim* s, int32_t port) noexcept nogil:
    """KernelOps.port_kick: an idle port tries to send."""
    if not port_busy(s, port):
        if s.is_switch[s.ports[port].node]:
            switch_try_send(s, port)
        else:
            nic_try_send(s, port)


cdef void _pkt_free(Sim* s, int32_t pk) noexcept nogil:
    """KernelOps.pkt_free: a packet the accelerator took out of the run is freed."""
    pkt_free(s, pk)


cdef const CcOps* cc_row(int kind) noexcept nogil:
    return &CC_TABLE[kind]


cdef KernelOps KOPS
KOPS.cc = CC_TABLE
KOPS.port_settle = _port_settle
KOPS.wire_flush = wire_flush
KOPS.port_kick = _port_kick
KOPS.note_message = note_message
KOPS.note_delivered = note_delivered
KOPS.cc_vector = cc_vector
KOPS.pkt_free = _pkt_free



cdef void sample(Sim* s) noexcept nogil:
    """Record every running flow's rate and every non-empty switch queue."""
    cdef int32_t i
    cdef int64_t* row
    cdef int64_t need = s.n_flows + s.n_ports
    cdef int64_t* ns_
    if s.n_samples + need > s.samples_cap:
        ns_ = <int64_t*>realloc(s.samples, (s.samples_cap * 2 + need + 1024) * 4 * sizeof(int64_t))
        if ns_ == NULL:
            s.fail = 1
            return
        s.samples = ns_
        s.samples_cap = s.samples_cap * 2 + need + 1024
    for i in range(s.n_flows):
        if s.flows[i].started and s.flows[i].finish < 0:
            row = &s.samples[s.n_samples * 4]
            row[0] = s.now
            row[1] = 0
            row[2] = i
            row[3] = s.flows[i].rate
            s.n_samples += 1
    for i in range(s.n_ports):
        if s.is_switch[s.ports[i].node] and s.ports[i].qbytes_total > 0:
            row = &s.samples[s.n_samples * 4]
            row[0] = s.now
            row[1] = 1
            row[2] = i
            row[3] = s.ports[i].qbytes_total
            s.n_samples += 1
    if pending_n(s) > 0:
        if heap_push(s, s.now + s.sample_interval, EV_SAMPLE, 0, 0) != 0:
            s.fail = 1


cdef void tx_settle(Sim* s, int64_t until) noexcept nogil:
    """No event is left up to ``until``: put the clock where the last of them would
    have left it, an unscheduled transmission end included (as a full heap's pop would)."""
    cdef int32_t i
    cdef Port* pt
    cdef int64_t t = s.now, ts = s.cur_ts
    cdef uint64_t q = s.cur_seq
    for i in range(s.n_ports):
        pt = &s.ports[i]
        if (pt.busy and pt.tx_lazy and pt.tx_end <= until
                and key_before(s, t, ts, q, pt.tx_end, pt.tx_ts, pt.tx_seq)):
            t = pt.tx_end
            ts = pt.tx_ts
            q = pt.tx_seq
        if (pt.wake_lazy and pt.wake_t <= until
                and key_before(s, t, ts, q, pt.wake_t, pt.wake_ts, pt.wake_seq)):
            t = pt.wake_t
            ts = pt.wake_ts
            q = pt.wake_seq
    s.now = t
    s.cur_ts = ts
    s.cur_seq = q


cdef void tx_schedule_all(Sim* s) noexcept nogil:
    """Every unscheduled transmission end and wake-up still to come goes into the heap."""
    cdef int32_t i
    for i in range(s.n_ports):
        wake_settle(s, &s.ports[i])
        if s.ports[i].wake_lazy:
            wake_schedule(s, i)
        if not port_busy(s, i):
            continue
        if s.ports[i].tx_lazy:
            tx_schedule(s, i)


cdef int64_t tx_pending(Sim* s, int64_t* first) noexcept nogil:
    """Unscheduled transmission ends and wake-ups still to come, and the earliest
    (first[0], if earlier)."""
    cdef int32_t i
    cdef int64_t n = 0
    cdef Port* pt
    for i in range(s.n_ports):
        pt = &s.ports[i]
        if pt.busy and pt.tx_lazy and not tx_passed(s, pt):
            n += 1
            if first[0] < 0 or pt.tx_end < first[0]:
                first[0] = pt.tx_end
        if pt.wake_lazy and not wake_passed(s, pt):
            n += 1
            if first[0] < 0 or pt.wake_t < first[0]:
                first[0] = pt.wake_t
    return n


cdef inline int32_t event_node(Sim* s, Event* e) noexcept nogil:
    """The node whose state an event works on (KEY_LOCAL keys of what it schedules):
    a port's node for the port events, the sender's for a flow's own events, and
    n_nodes (Python's) for the sampler, the accelerator's and user events."""
    if e.kind == EV_TX_DONE or e.kind == EV_ARRIVE or e.kind == EV_NIC_WAKE:
        return s.ports[e.a].node
    if e.kind == EV_FLOW_START or e.kind == EV_RTO or e.kind == EV_CC_TIMER or (e.kind == EV_MSG_NOTE and e.a >= 0):
        return s.flows[e.a].src
    return s.n_nodes                # (an EV_MSG_NOTE with a < 0: a mirror's check, accel_mirror.pxi)


cdef int _slots_grow(Sim* s) noexcept nogil:
    """KEY_RANK: room for more slots in rank_val and the round log (out of rank_slot's
    inline path); -1 if memory ran out (the arrays grown so far are kept)."""
    cdef int64_t cap = s.cap_slot * 2 + 4096
    if (_grow_nogil(<void**>&s.rank_val, cap * sizeof(int64_t)) != 0 or _grow_nogil(<void**>&s.log_t, cap * sizeof(int64_t)) != 0
            or _grow_nogil(<void**>&s.log_pv, cap * sizeof(int64_t)) != 0
            or _grow_nogil(<void**>&s.log_seq, cap * sizeof(uint64_t)) != 0):
        return -1
    s.cap_slot = cap
    return 0


cdef inline int rank_slot(Sim* s, Event* e) noexcept nogil:
    """KEY_RANK: the popped event takes the next slot (provisional rank: the round's base
    plus its place among the process's events of the round) and logs its key for the
    round's ranking (parallel.pxi); what it schedules is keyed by that slot.
    Returns -1 if memory ran out."""
    cdef int64_t i = s.n_slot, ts = e.ts, sl
    if i == s.cap_slot and _slots_grow(s) != 0:
        return -1
    s.rank_val[i] = s.rank_base + (i - s.slot0)
    if s.rank_log:
        s.log_t[i] = e.t
        if ts < 0:
            sl = -1 - ts
            ts = s.rank_val[sl] if sl < s.slot0 else -1 - (sl - s.slot0)    # ranked, or this round's
        s.log_pv[i] = ts
        s.log_seq[i] = e.seq
    s.cur_ref = -1 - i
    s.kid = 0
    s.n_slot = i + 1
    return 0


cdef inline void event_prefetch(Sim* s, Event* e) noexcept nogil:
    """Start loading what the event at the heap's top works on (its port; an arrival's
    packet and MMU port) while the current one is processed: the packet pool, the ports and the
    flows outgrow the cache, and waiting for those lines is much of an event's time.
    A hint only: nothing is read or written."""
    cdef char* pt
    cdef size_t off
    if e.kind == EV_ARRIVE:
        wh_prefetch(&s.pkts[e.b])
        wh_prefetch(&s.mmu[e.a])
    if e.kind == EV_ARRIVE or e.kind == EV_TX_DONE or e.kind == EV_NIC_WAKE:
        pt = <char*>&s.ports[e.a]      # (every line of it: the queues, counters and wake-up are read)
        for off in range(0, sizeof(Port), FLOW_ALIGN):
            wh_prefetch(pt + off)


cdef int run_loop(Sim* s, int64_t until, int32_t* user) noexcept nogil:
    cdef Event e
    cdef Event* first
    while True:
        first = pending_first(s)
        if first == NULL or first.t > until:
            break
        if s.budget == 0:
            return RUN_IDLE
        if s.budget > 0:
            s.budget -= 1
        e = pending_take(s, first)
        first = pending_first(s)
        if first != NULL:
            event_prefetch(s, first)
        s.now = e.t
        s.cur_ts = e.ts
        s.cur_seq = e.seq
        if s.key_mode == KEY_RANK:
            if rank_slot(s, &e) != 0:
                s.fail = 1
                return RUN_LIMIT
        elif s.key_mode != KEY_INSERTION:
            s.cur_node = event_node(s, &e)
        s.pops[e.kind] += 1
        if e.kind == EV_TX_DONE:
            s.ports[e.a].busy = 0
            s.ports[e.a].ev_done += 1
            if s.is_switch[s.ports[e.a].node]:
                switch_try_send(s, e.a)
            else:
                nic_try_send(s, e.a)
            if not s.ports[e.a].busy:
                s.txdone_idle += 1
        elif e.kind == EV_ARRIVE:
            if s.port_cut == NULL or not s.port_cut[s.ports[e.a].peer]:
                s.ports[s.ports[e.a].peer].ev_done += 1     # (the link's egress port: wire_next's)
                wire_next(s, s.ports[e.a].peer)
            else:                       # a cut link's egress port is another thread's: counted here
                s.ports[e.a].ev_done += 1
            if s.pkts[e.b].kind != PK_DATA:
                s.arrive_ctrl += 1
            on_arrive(s, e.a, <int32_t>e.b)
        elif e.kind == EV_NIC_WAKE:
            if e.b != s.ports[e.a].wake_token:
                s.stale_events += 1
                s.stale_by[<int>EV_NIC_WAKE] += 1
                continue
            s.ports[e.a].wake_t = -1
            s.ports[e.a].wakes_pending += 1
            s.ports[e.a].ev_done += 1
            if port_busy(s, e.a):
                s.wake_idle += 1        # nothing can start: the TX_DONE ahead will try again
                s.wake_busy += 1
            else:
                nic_try_send(s, e.a)
                if not s.ports[e.a].busy:
                    s.wake_idle += 1
        elif e.kind == EV_FLOW_START:
            if e.b < 2:
                # The reference starts a queue pair two events after its start
                # time is reached (ScheduleFlowInputs installs the application,
                # Node::AddApplication schedules Application::Start at "now",
                # which schedules StartApplication at "now"), so the QP joins its
                # NIC after every event already due at that time: a packet of
                # another flow leaving at the same nanosecond goes first.
                if heap_push(s, e.t, EV_FLOW_START, e.a, e.b + 1) != 0:
                    s.fail = 1
                    return RUN_LIMIT
                continue
            flow_start(s, e.a)
        elif e.kind == EV_RTO:
            rto_fire(s, e.a, e.b)
        elif e.kind == EV_CC_TIMER:
            cc_timer_fire(s, e.a, e.b)
        elif e.kind == EV_SAMPLE:
            sample(s)
        elif e.kind == EV_SKIP_END:
            if not s.hooks.skip_end(s, e.a, e.b):
                s.stale_events += 1
                s.stale_by[<int>EV_SKIP_END] += 1
                continue
        elif e.kind == EV_MSG_NOTE and e.b < 0:     # a delivery at virtual time: not an event of a full run
            s.hooks.note_due(s, e.a, e.b)
            if s.fail:
                return RUN_LIMIT
            if s.n_rnotes > 0:
                return RUN_CALLBACKS
            continue
        elif e.kind == EV_MSG_NOTE:
            if not s.hooks.note_due(s, e.a, e.b):
                s.stale_events += 1
                s.stale_by[<int>EV_MSG_NOTE] += 1
                continue
        else:
            s.events[<int>EV_USER] += 1
            user[0] = e.a
            return RUN_USER
        s.events[e.kind] += 1
        if s.fail:
            return RUN_LIMIT
        if s.n_done_cb > 0 or s.n_notes > 0 or s.n_rnotes > 0 or memo_notes_due(s):
            return RUN_CALLBACKS
    if s.lp == NULL:        # (a logical process's clock is settled by the parallel driver, over every port)
        tx_settle(s, until)
    return RUN_IDLE


cdef int compute_path(Sim* s, int32_t src, int32_t dst, uint32_t w2, int32_t* out, int maxlen) noexcept nogil:
    """Egress ports from host `src` to host `dst` for the ECMP key
    (ip(src), ip(dst), w2): the reference's per-switch MurmurHash3 choice
    among the shortest-path next hops.  Returns the length, or -1."""
    cdef int n = 0, cnt
    cdef int32_t node = src, port
    cdef int64_t r
    cdef int32_t hd = s.host_idx[dst]
    cdef uint32_t sip = s.node_ip[src], dip = s.node_ip[dst]
    while True:
        if n >= maxlen:
            return -1
        r = <int64_t>node * s.n_hosts + hd
        cnt = s.rt_cnt[r]
        if cnt == 0:
            return -1
        if cnt == 1:
            port = s.rt_ports[s.rt_start[r]]
        else:
            port = s.rt_ports[s.rt_start[r] + wh_ecmp_hash3(sip, dip, w2, s.seed[node]) % <uint32_t>cnt]
        out[n] = port
        n += 1
        node = s.ports[s.ports[port].peer].node
        if node == dst:
            return n
        if not s.is_switch[node]:
            return -1


cdef void _load_fabric(Sim* s, fab) except *:
    """Copy a FabricArrays into the Sim's node, port, switch and routing arrays."""
    cdef const uint8_t[::1] is_switch = fab.is_switch
    cdef const int32_t[::1] host_idx = fab.host_idx, sw_idx = fab.sw_idx, host_nic = fab.host_nic
    cdef const uint32_t[::1] node_ip = fab.node_ip, seed = fab.seed
    cdef const int32_t[::1] port_node = fab.port_node, port_peer = fab.port_peer, port_ifindex = fab.port_ifindex
    cdef const int64_t[::1] port_rate = fab.port_rate, port_delay = fab.port_delay
    cdef const double[::1] port_error = fab.port_error, pmax = fab.port_pmax
    cdef const int64_t[::1] headroom = fab.port_headroom, kmin = fab.port_kmin, kmax = fab.port_kmax
    cdef const int32_t[::1] pfc_shift = fab.port_pfc_shift
    cdef const int64_t[::1] sw_buffer = fab.sw_buffer, sw_hdrm = fab.sw_total_hdrm, sw_rsrv = fab.sw_total_rsrv
    cdef const int32_t[::1] rt_start = fab.rt_start, rt_cnt = fab.rt_cnt, rt_ports = fab.rt_ports
    cdef int32_t nn = is_switch.shape[0], npt = port_node.shape[0], nh = host_nic.shape[0]
    cdef int32_t nsw = sw_buffer.shape[0], q
    cdef int64_t i, nrt = rt_start.shape[0], nrp = rt_ports.shape[0]
    s.n_ports = npt
    s.n_hosts = nh
    s.is_switch = <uint8_t*>calloc(nn, 1)
    s.host_idx = <int32_t*>calloc(nn, sizeof(int32_t))
    s.sw_idx = <int32_t*>calloc(nn, sizeof(int32_t))
    s.node_ip = <uint32_t*>calloc(nn, sizeof(uint32_t))
    s.seed = <uint32_t*>calloc(nn, sizeof(uint32_t))
    s.ports = <Port*>calloc_lines(npt, sizeof(Port))
    s.mmu = <MmuPort*>calloc_lines(npt, sizeof(MmuPort))
    s.sw = <SwitchState*>calloc_lines(nsw if nsw > 0 else 1, sizeof(SwitchState))
    s.host_nic = <int32_t*>calloc(nh if nh > 0 else 1, sizeof(int32_t))
    s.rt_start = <int32_t*>calloc(nrt if nrt > 0 else 1, sizeof(int32_t))
    s.rt_cnt = <int32_t*>calloc(nrt if nrt > 0 else 1, sizeof(int32_t))
    s.rt_ports = <int32_t*>calloc(nrp if nrp > 0 else 1, sizeof(int32_t))
    s.done = <int32_t*>calloc(64, sizeof(int32_t))
    s.n_nodes = nn
    s.cur_node = nn
    s.node_cnt = <uint64_t*>calloc(nn + 1, sizeof(uint64_t))
    if (s.node_cnt == NULL or s.is_switch == NULL or s.host_idx == NULL or s.sw_idx == NULL or s.node_ip == NULL or s.seed == NULL
            or s.ports == NULL or s.mmu == NULL or s.sw == NULL or s.host_nic == NULL or s.rt_start == NULL
            or s.rt_cnt == NULL or s.rt_ports == NULL or s.done == NULL):
        raise MemoryError()
    for i in range(nn):
        s.is_switch[i] = is_switch[i]
        s.host_idx[i] = host_idx[i]
        s.sw_idx[i] = sw_idx[i]
        s.node_ip[i] = node_ip[i]
        s.seed[i] = seed[i]
    for i in range(nh):
        s.host_nic[i] = host_nic[i]
    for i in range(npt):
        s.ports[i].node = port_node[i]
        s.ports[i].peer = port_peer[i]
        s.ports[i].ifindex = port_ifindex[i]
        s.ports[i].rate_bps = port_rate[i]
        s.ports[i].delay_ps = port_delay[i]
        s.ports[i].error_rate = port_error[i]
        s.ports[i].wake_t = -1
        s.ports[i].txd_per_pkt = 1.0
        s.ports[i].ev_mark = -1.0
        s.ports[i].wire_head = NO_PKT
        s.ports[i].wire_tail = NO_PKT
        for q in range(NQ):
            s.ports[i].qhead[q] = NO_PKT
            s.ports[i].qtail[q] = NO_PKT
        s.mmu[i].headroom = headroom[i]
        s.mmu[i].pfc_shift = pfc_shift[i]
        s.mmu[i].kmin = kmin[i]
        s.mmu[i].kmax = kmax[i]
        s.mmu[i].pmax = pmax[i]
    for i in range(nsw):
        s.sw[i].buffer = sw_buffer[i]
        s.sw[i].total_hdrm = sw_hdrm[i]
        s.sw[i].total_rsrv = sw_rsrv[i]
    for i in range(nrt):
        s.rt_start[i] = rt_start[i]
        s.rt_cnt[i] = rt_cnt[i]
    for i in range(nrp):
        s.rt_ports[i] = rt_ports[i]


cdef void _load_params(Sim* s, params) except *:
    """Copy a KernelParams: the Params struct, the ns-3 streams, the seed, CC, the accelerator, the sampler."""
    cdef int32_t i
    s.p = params.params_struct()
    rng = params.ns3_rng
    if rng is not None:
        for i in range(6):
            s.ns3rng.base[i] = rng.base[i]
        for i in range(9):
            s.ns3rng.j1[i] = rng.j1[i]
            s.ns3rng.j2[i] = rng.j2[i]
            s.ns3rng.r1[i] = rng.r1[i]
            s.ns3rng.r2[i] = rng.r2[i]
    s.rng = <uint64_t>params.seed ^ 0x5eed5eed5eed5eedULL
    if params.port_rng:
        s.port_rng = <uint64_t*>malloc((s.n_ports if s.n_ports > 0 else 1) * sizeof(uint64_t))
        if s.port_rng == NULL:
            raise MemoryError()
        for i in range(s.n_ports):      # one stream per port, from the seed and the port's index
            s.port_rng[i] = s.rng ^ ((<uint64_t>i + 1) * 0x9E3779B97F4A7C15ULL)
            wh_rng_next(&s.port_rng[i])
    _fill_cc_params(&s.cc, params.cc, s.p.mtu)
    s.cc_used = (<uint32_t>1) << s.cc.kind
    accel.accel_setup(s, params.accel, &KOPS)
    if s.key_mode == KEY_INSERTION and params.calendar and s.p.quantum % 1000 == 0:
        if cal_setup(s, CAL_BUCKETS) != 0:
            raise MemoryError()
    s.sample_interval = params.sample_interval
    if s.sample_interval > 0:
        if heap_push(s, 0, EV_SAMPLE, 0, 0) != 0:
            raise MemoryError()


cdef class Kernel:
    """Owner of one simulation's state.  Built from typed inputs (the compiled
    fabric's arrays and the parameters, ``wormhole.kernel_inputs``); flows and
    user events are added from Python, ``run`` advances the clock in C.  Its
    state ``s`` (a Sim) is declared in kernel.pxd."""

    def __cinit__(self):
        self.s = <Sim*>calloc(1, sizeof(Sim))
        if self.s == NULL:
            raise MemoryError()
        self.s.free_head = NO_PKT
        self.s.budget = -1
        self.s.hooks = accel.accel_hooks_off()

    def __dealloc__(self):
        cdef Sim* s = self.s
        cdef int32_t i
        if s == NULL:
            return
        if s.ports != NULL:
            for i in range(s.n_ports):
                free(s.ports[i].qps)
        free(s.heap); cal_release(s); free(s.is_switch); free(s.host_idx); free(s.sw_idx)
        free(s.node_ip); free(s.seed); free(s.ports); free(s.mmu); free(s.sw)
        free(s.rt_start); free(s.rt_cnt); free(s.rt_ports); free(s.host_nic)
        free(s.pkts); free(s.ints); free(s.flows); free(s.paths); free(s.done)
        free(s.pfc_log); free(s.node_cnt); free(s.port_rng)
        if s.par != NULL:
            par_free(<Par*>s.par)
        for i in range(8):
            free(s.cc_st[i])
        free(s.samples); free(s.notes); free(s.rnotes)
        s.hooks.release(s)
        free(s)

    def build(self, fab, params):
        """Load the compiled fabric (a ``kernel_inputs.FabricArrays``) and the
        behaviour parameters (a ``kernel_inputs.KernelParams``), both checked
        when they were made: lengths, index ranges and C types."""
        if self.s.ports != NULL:
            raise RuntimeError("kernel already built")
        _load_fabric(self.s, fab)
        _load_params(self.s, params)

    def add_flow(self, int src, int dst, int64_t size, int64_t start, int sport, int dport,
                 int pg, int64_t win, int64_t base_rtt, bint var_win, bint has_cb, bint persistent=False,
                 bint rcv_cb=False, int cc=-1):
        """Add a flow (one queue pair) that starts at `start` ps, under algorithm
        ``cc`` (a CcKind; -1: the simulation's); returns its index or raises
        ValueError when no path exists or the packets lack the algorithm's feedback."""
        cdef Sim* s = self.s
        cdef Flow* f
        cdef int32_t fi, n, rn
        cdef int32_t buf[256]
        cdef int32_t rbuf[256]
        cdef Flow* nf
        cdef int32_t* nd
        cdef int32_t* npth
        if start < s.now:
            raise ValueError("flow start %d ps is before the clock (%d ps)" % (start, s.now))
        if cc < 0:
            cc = s.cc.kind
        if cc >= <int>N_CC_KINDS:
            raise ValueError("no congestion control of kind %d" % cc)
        if CC_TABLE[cc].int_mode == INT_HOPS and s.p.int_mode != INT_HOPS:
            raise ValueError("%s needs INT hop records, which the simulation's packets do not carry"
                             % CC_TABLE[cc].name.decode())
        n = compute_path(s, src, dst, <uint32_t>sport | (<uint32_t>dport << 16), buf, 256)
        rn = compute_path(s, dst, src, <uint32_t>dport | (<uint32_t>sport << 16), rbuf, 256)
        if n < 0 or rn < 0:
            raise ValueError("no route between node %d and node %d" % (src, dst))
        if s.n_flows == s.flow_cap:
            self._grow_flows(s.flow_cap * 2 + 64)
        if cc_use(s, cc) != 0:
            raise MemoryError()
        if s.paths_n + n + rn > s.paths_cap:
            npth = <int32_t*>realloc(s.paths, (s.paths_cap * 2 + n + rn + 256) * sizeof(int32_t))
            if npth == NULL:
                raise MemoryError()
            s.paths = npth
            s.paths_cap = s.paths_cap * 2 + n + rn + 256
        fi = s.n_flows
        s.n_flows += 1
        f = &s.flows[fi]
        memset(f, 0, sizeof(Flow))
        f.src = src
        f.dst = dst
        f.sport = sport
        f.dport = dport
        f.pg = pg
        f.size = size
        f.start = start
        f.finish = -1
        f.win = win
        f.base_rtt = base_rtt
        f.var_win = var_win
        f.has_cb = has_cb
        f.persistent = persistent
        f.msg_end = -1
        f.rcv_end = -1 if persistent else size
        f.delivered = -1
        f.rcv_cb = rcv_cb
        f.path_off = <int32_t>s.paths_n
        f.path_len = n
        memcpy(&s.paths[s.paths_n], buf, n * sizeof(int32_t))
        s.paths_n += n
        f.rpath_off = <int32_t>s.paths_n
        f.rpath_len = rn
        memcpy(&s.paths[s.paths_n], rbuf, rn * sizeof(int32_t))
        s.paths_n += rn
        f.src_port = buf[0]
        f.dst_port = rbuf[0]
        f.max_rate = s.ports[f.src_port].rate_bps
        f.rate = f.max_rate
        f.cc = <uint8_t>cc
        cc_flow_init(s, fi)
        f.last_nack = 0
        f.milestone = 0
        if heap_push(s, start, EV_FLOW_START, fi, 0) != 0:
            raise MemoryError()
        return fi

    cdef _grow_flows(self, int32_t cap):
        """Grow every per-flow array (flows, completions, the algorithm's states,
        the accelerator's) to ``cap`` entries."""
        cdef Sim* s = self.s
        cdef int32_t i
        s.flows = <Flow*>_grow_aligned(s.flows, s.flow_cap, cap, sizeof(Flow))
        s.done = <int32_t*>_grow(s.done, cap, sizeof(int32_t))
        if cc_grow(s, cap) != 0:
            raise MemoryError()
        if s.hooks.grow_flows(s, s.flow_cap, cap) != 0:
            raise MemoryError()
        s.flow_cap = cap

    def post(self, int32_t fi, int64_t nbytes):
        """Append a message of ``nbytes`` to connection ``fi``; returns its end offset."""
        cdef Sim* s = self.s
        cdef Flow* f
        cdef bint extended
        if fi < 0 or fi >= s.n_flows or not s.flows[fi].persistent:
            raise ValueError("not a connection: %d" % fi)
        if nbytes <= 0:
            raise ValueError("message size must be positive")
        f = &s.flows[fi]
        with nogil:
            extended = s.hooks.on_post(s, fi, nbytes)
        if extended:                        # a connection sending through a skip: more to send
            if s.fail:
                raise MemoryError("out of memory")
            return f.size
        f.size += nbytes
        if f.started and not f.on_nic:
            with nogil:
                flow_start(s, fi)
        elif f.started:
            with nogil:
                s.hooks.flow_active(s, fi)
                nic_try_send(s, f.src_port)
        if s.fail:
            raise MemoryError("out of memory")
        return f.size

    def set_msg_end(self, int32_t fi, int64_t end):
        """Ask for a notice when the connection's snd_una reaches ``end`` (-1: none)."""
        cdef Flow* f = &self.s.flows[fi]
        f.msg_end = end
        if end >= 0:
            with nogil:
                if not self.s.hooks.plan_note(self.s, fi, False) and f.snd_una >= end:
                    note_message(self.s, fi)
            if self.s.fail:
                raise MemoryError("out of memory")

    def set_rcv_end(self, int32_t fi, int64_t end):
        """Ask for a notice when the connection's receiver has every byte up to ``end``
        (-1: none); inside a fast-forward, at the virtual time its goodput delivers it."""
        cdef Flow* f = &self.s.flows[fi]
        f.rcv_end = end
        if end >= 0:
            with nogil:
                if not self.s.hooks.plan_note(self.s, fi, True) and f.rcv_nxt >= end:
                    note_delivered(self.s, fi)
            if self.s.fail:
                raise MemoryError("out of memory")

    def set_budget(self, int64_t n):
        """Let ``run`` pop at most ``n`` more heap events (-1: no bound).  While bounded,
        every transmission end is a heap event (Network.step steps through them all)."""
        self.s.budget = n
        self.s.eager_tx = n >= 0
        if n >= 0:
            with nogil:
                tx_schedule_all(self.s)

    def take_rcv_notes(self):
        """Flows and connections whose receiver reached its rcv_end since the last call."""
        cdef Sim* s = self.s
        out = [s.rnotes[i] for i in range(s.n_rnotes)]
        s.n_rnotes = 0
        return out

    def rcv_nxt(self, int32_t fi):
        """Bytes the receiver holds in order; inside a fast-forward, as of the current time."""
        return self.s.flows[fi].rcv_nxt + self.s.hooks.skipped_bytes(self.s, fi, True)

    def delivered_time(self, int32_t fi):
        """Time the receiver last reached the flow's rcv_end (a flow: its last byte), -1."""
        return self.s.flows[fi].delivered

    def take_notes(self):
        cdef Sim* s = self.s
        out = [s.notes[i] for i in range(s.n_notes)]
        s.n_notes = 0
        return out

    def snd_una(self, int32_t fi):
        """Acknowledged bytes; inside a fast-forward, as of the current time."""
        return self.s.flows[fi].snd_una + self.s.hooks.skipped_bytes(self.s, fi, False)

    def schedule_user(self, int64_t t, int cb_id):
        if t < self.s.now:
            raise ValueError("event time %d ps is before the clock (%d ps)" % (t, self.s.now))
        if heap_push(self.s, t, EV_USER, cb_id, 0) != 0:
            raise MemoryError()

    def run(self, int64_t until):
        """Advance until `until` ps (inclusive) or until Python is needed.
        Returns (code, user_id): 0 idle, 1 callbacks due, 2 user event, 3 limit."""
        cdef int32_t user = -1
        cdef int code
        if self.s.par != NULL:
            with nogil:
                code = par_run(self.s, <Par*>self.s.par, until)
            self.s.cur_node = self.s.n_nodes
            return code, user
        with nogil:
            code = run_loop(self.s, until, &user)
        self.s.cur_node = self.s.n_nodes     # what Python schedules next is its own (KEY_LOCAL)
        return code, user

    @property
    def now(self):
        return self.s.now

    def set_parallel(self, lp_of_node, int threads, bint exact=True):
        """Run partitioned from now on: logical process lp_of_node[n] for node n (0 ..
        max), on ``threads`` OpenMP threads (parallel.pxi).  Before any event is
        scheduled, or again with another cut before the first partitioned run (under the
        same tie key).  ``exact``: the KEY_RANK tie key, the sequential kernel's order (its
        random draws from one stream deferred to each round's end); else KEY_LOCAL.
        Returns the lookahead, ps."""
        cdef Sim* s = self.s
        cdef const int32_t[::1] lp = np.ascontiguousarray(lp_of_node, dtype=np.int32)
        cdef int32_t k, n_lp
        cdef bint cal
        cdef Par* old = <Par*>s.par
        if old != NULL:                 # a new cut before the first partitioned run (the events scheduled
            if old.rounds != 0 or any(old.lps[k].started for k in range(old.n_lp)):    # since wait in the
                raise RuntimeError("the kernel has run partitioned: its cut stays")     # Kernel's heap)
            if exact != (s.key_mode == KEY_RANK):
                raise ValueError("a new cut keeps the tie key the events were scheduled under")
        if lp.shape[0] != s.n_nodes:
            raise ValueError("lp_of_node has %d entries for %d nodes" % (lp.shape[0], s.n_nodes))
        if threads < 1:
            raise ValueError("threads must be >= 1, not %d" % threads)
        if s.acc.on:
            raise ValueError("the partitioned kernel takes no accelerator")
        if old == NULL and (s.seq != 0 or sum(s.pops[k] for k in range(<int>N_EVENT_KINDS)) != 0):
            raise RuntimeError("the kernel is partitioned before anything is scheduled")
        n_lp = (max(lp) + 1) if lp.shape[0] > 0 else 1
        if min(lp) < 0:
            raise ValueError("lp_of_node has a negative entry")
        if old != NULL:
            s.par = par_new(s, lp, n_lp, threads, old.calendar)     # (raises: the old cut stays)
            par_free(old)
            return (<Par*>s.par).lookahead
        cal = s.cal.on                  # (the LPs get one each where the sequential run has it)
        if cal_off(s) != 0:             # (empty: nothing is scheduled yet)
            raise MemoryError()
        s.key_mode = KEY_RANK if exact else KEY_LOCAL
        s.par = par_new(s, lp, n_lp, threads, cal)
        return (<Par*>s.par).lookahead

    def port_packets(self):
        """Per port, the packets the flows not yet finished would send out of it if they ran
        alone: a flow's data packets (its remaining bytes over the MTU) on its path, and
        its ACKs (one per ``ack_interval`` bytes, at most one per data packet) on its
        reverse path.  Retransmissions, NACKs, PFC frames and CC timers are left out
        (partition.cut's estimate of where a run's events fall)."""
        cdef Sim* s = self.s
        cdef cnp.ndarray[cnp.float64_t, ndim=1] out = np.zeros(max(s.n_ports, 1), dtype=np.float64)
        cdef int32_t fi, i
        cdef Flow* f
        cdef int64_t left, per_ack
        cdef double data, acks
        per_ack = s.p.ack_interval if s.p.ack_interval > s.p.mtu else s.p.mtu
        for fi in range(s.n_flows):
            f = &s.flows[fi]
            if f.finish >= 0 or f.persistent:
                continue
            left = f.size - f.snd_una
            if left <= 0:
                continue
            data = <double>((left + s.p.mtu - 1) // s.p.mtu)
            acks = <double>((left + per_ack - 1) // per_ack)
            for i in range(f.path_len):
                out[s.paths[f.path_off + i]] += data
            for i in range(f.rpath_len):
                out[s.paths[f.rpath_off + i]] += acks
        return out[:s.n_ports]

    @property
    def parallel_stats(self):
        """{'lps', 'threads', 'lookahead_ps', 'round_ps', 'rounds', 'cut_packets', 'tie_key', 'deferred_draws',
        'ties_across', 'merge_seconds', 'wait_seconds' (per thread, the seconds it waited at each of a round's
        barriers: after the processes' events, the ranks, the draws, the imports), 'per_process' (per process,
        over every run: 'events' it processed, 'busy_seconds' its rounds took, 'cut_packets' it sent over cut
        links), 'lp_of_port'} of a partitioned kernel, else None."""
        cdef Par* P = <Par*>self.s.par
        if P == NULL:
            return None
        return {"lps": P.n_lp, "threads": P.threads, "lookahead_ps": P.lookahead, "round_ps": P.round_len,
                "rounds": P.rounds, "cut_packets": P.xfers,
                "tie_key": "rank" if self.s.key_mode == KEY_RANK else "local",
                "deferred_draws": P.deferred, "ties_across": P.ties_across, "merge_seconds": P.merge_s,
                "wait_seconds": [[P.wait_s[t * WAIT_SITES + w] for w in range(WAIT_SITES)] for t in range(P.threads)],
                "per_process": [{"events": P.lps[j].ev_total, "busy_seconds": P.lps[j].busy_s,
                                 "cut_packets": P.lps[j].sent_total} for j in range(P.n_lp)],
                "lp_of_port": [P.lp_of_port[i] for i in range(self.s.n_ports)]}

    def set_tie_key(self, int mode):
        """Order same-time events by insertion (0, KEY_INSERTION, the default) or by the
        partition-independent key (1, KEY_LOCAL; heap.pxd): before anything is scheduled."""
        if mode != KEY_INSERTION and mode != KEY_LOCAL:
            raise ValueError("tie key mode must be 0 (insertion) or 1 (local), not %r" % mode)
        if self.s.seq != 0:
            raise RuntimeError("the tie key is chosen before any event is scheduled")
        if mode != KEY_INSERTION and cal_off(self.s) != 0:     # the calendar orders by insertion only
            raise MemoryError()
        self.s.key_mode = <uint8_t>mode

    @property
    def tie_key(self):
        return self.s.key_mode

    def set_now(self, int64_t t):
        """Move the clock to ``t``, every event up to ``t`` being done."""
        if t < self.s.now:
            raise ValueError("the clock cannot go backwards")
        if t > self.s.now:
            self.s.now = t
            if self.s.key_mode == KEY_INSERTION:
                self.s.cur_seq = self.s.seq     # after every event numbered so far
            elif self.s.key_mode == KEY_RANK:   # a rank after every event processed so far
                par_fresh_rank(self.s, <Par*>self.s.par)
            else:
                self.s.cur_ts = t               # (every key taken so far has an earlier ts)
                self.s.cur_seq = 0

    @property
    def n_flows(self):
        return self.s.n_flows

    @property
    def n_done(self):
        return self.s.n_done

    @property
    def pending_events(self):
        """Events still to come: the heap's, the arrivals waiting on wires and the
        unscheduled transmission ends."""
        cdef int64_t first = -1
        cdef int64_t held = 0
        if self.s.par != NULL:
            held = par_pending(self.s, <Par*>self.s.par, &first)
        return pending_n(self.s) + self.s.wire_n + held + tx_pending(self.s, &first)

    def next_event_time(self):
        cdef Event* e = pending_first(self.s)
        cdef int64_t first = e.t if e != NULL else -1
        if self.s.par != NULL:
            par_pending(self.s, <Par*>self.s.par, &first)
        tx_pending(self.s, &first)
        return first

    def take_callbacks(self, int32_t start):
        """Completed flows with callbacks among done[start:]; clears the count."""
        cdef Sim* s = self.s
        cdef int32_t i
        out = []
        for i in range(start, s.n_done):
            if s.flows[s.done[i]].has_cb:
                out.append(s.done[i])
        s.n_done_cb = 0
        return out

    def done_order(self):
        cdef Sim* s = self.s
        cdef cnp.ndarray[cnp.int32_t, ndim=1] out = np.empty(s.n_done, dtype=np.int32)
        cdef int32_t i
        for i in range(s.n_done):
            out[i] = s.done[i]
        return out

    def flow_table(self):
        """Per-flow state as numpy arrays (one entry per flow, index = flow id)."""
        cdef Sim* s = self.s
        cdef int32_t n = s.n_flows, i
        cdef cnp.ndarray[cnp.int64_t, ndim=2] a = np.empty((n, 14), dtype=np.int64)
        cdef Flow* f
        for i in range(n):
            f = &s.flows[i]
            a[i, 0] = f.src
            a[i, 1] = f.dst
            a[i, 2] = f.size
            a[i, 3] = f.start
            a[i, 4] = f.finish
            a[i, 5] = f.sport
            a[i, 6] = f.dport
            a[i, 7] = f.rcv_nxt
            a[i, 8] = f.rcv_bytes
            a[i, 9] = f.retx_bytes
            a[i, 10] = f.snd_una
            a[i, 11] = f.path_len
            a[i, 12] = f.rate
            a[i, 13] = f.delivered if not f.persistent else -1
        return a

    def flow_row(self, int32_t fi):
        """(src, dst, size, start, finish, sport, dport) of one flow."""
        cdef Flow* f
        if fi < 0 or fi >= self.s.n_flows:
            raise IndexError(fi)
        f = &self.s.flows[fi]
        return (f.src, f.dst, f.size, f.start, f.finish, f.sport, f.dport)

    def flow_path(self, int32_t fi, bint reverse=False):
        cdef Flow* f = &self.s.flows[fi]
        cdef int32_t off = f.rpath_off if reverse else f.path_off
        cdef int32_t n = f.rpath_len if reverse else f.path_len
        return [self.s.paths[off + i] for i in range(n)]

    def samples(self):
        """Sampler rows: (time ps, kind 0 = flow rate bps / 1 = port queue bytes, index, value)."""
        cdef Sim* s = self.s
        cdef int64_t i, k
        out = np.empty((s.n_samples, 4), dtype=np.int64)
        for i in range(s.n_samples):
            for k in range(4):
                out[i, k] = s.samples[i * 4 + k]
        return out

    def cc_state(self, int32_t fi):
        """The flow's congestion-control state as a dict (for tests and traces)."""
        cdef Sim* s = self.s
        cdef Flow* f = &s.flows[fi]
        d = {"cc": CC_TABLE[f.cc].name.decode(), "rate": f.rate, "max_rate": f.max_rate, "next_avail": f.next_avail}
        d.update(CC_TABLE[f.cc].as_dict(s, fi))
        return d

    def memory(self):
        """Bytes held by the simulation's C arrays, by component, and the unit sizes."""
        cdef Sim* s = self.s
        cdef int64_t per_pkt = sizeof(Packet) + (INT_MAX_HOP * sizeof(IntHop) if s.p.int_mode == INT_HOPS else 0)
        cdef int64_t cc = sum(CC_TABLE[k].state_size for k in range(<int>N_CC_KINDS) if (s.cc_used >> k) & 1)
        cdef int64_t win = 6 * (s.acc.lmask + 1) * sizeof(int64_t) if s.acc.on else 0
        return {
            "per_flow": sizeof(Flow) + cc + sizeof(int32_t) + (sizeof(FlowWin) if s.acc.on else 0),
            "per_packet": per_pkt,
            "per_event": sizeof(Event),
            "window_per_active_flow": win,
            "flows": <int64_t>s.flow_cap * (sizeof(Flow) + cc + sizeof(int32_t)),
            "packets": <int64_t>s.pkt_cap * per_pkt,
            "events": s.heap_cap * sizeof(Event),
            "paths": s.paths_cap * sizeof(int32_t),
            "ports": s.n_ports * (sizeof(Port) + sizeof(MmuPort)),
        }

    def take_memo_notes(self):
        """Memo notices since the last call: (kind 'formed'/'steady', partition, version)."""
        return accel.take_memo_notes(self.s)

    def partition_members(self, int32_t P):
        """(version, flows) of one partition (after a pending split check)."""
        return accel.partition_members(self.s, P)

    def watch_partition(self, int32_t P, int32_t version):
        """Ask for a 'steady' notice when partition P (at this version) has converged."""
        accel.watch_partition(self.s, P, version)

    def memo_apply(self, int32_t P, int64_t dt, list flows, list nbytes, list cc, list goodput):
        """Apply a stored convergence (see memo_start); returns True if applied."""
        cdef int32_t n = len(flows), i, r
        cdef int32_t* fl = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        cdef int64_t* nb = <int64_t*>malloc((n + 1) * sizeof(int64_t))
        cdef double* cv = <double*>malloc((4 * n + 1) * sizeof(double))
        cdef double* gp = <double*>malloc((n + 1) * sizeof(double))
        if fl == NULL or nb == NULL or cv == NULL or gp == NULL:
            free(fl); free(nb); free(cv); free(gp)
            raise MemoryError()
        for i in range(n):
            fl[i] = flows[i]
            nb[i] = nbytes[i]
            gp[i] = goodput[i]
            for k in range(4):
                cv[4 * i + k] = cc[i][k]
        r = accel.memo_start(self.s, P, dt, fl, nb, cv, gp, n)
        free(fl); free(nb); free(cv); free(gp)
        return r == 0

    def steady_goodput(self, int32_t fi):
        """The goodput (bytes per ps) a fast-forward of flow fi's partition uses
        now: its skip's, or else the one its window measures (0 if none)."""
        return accel.steady_goodput(self.s, fi)

    def cc_vector(self, int32_t fi):
        """(rate, and the 3 algorithm values memo entries store) of one flow."""
        cdef double v[4]
        cdef int ints = CC_TABLE[self.s.flows[fi].cc].vec_ints
        cc_vector(self.s, fi, v)
        return tuple(int(v[k]) if (ints >> k) & 1 else v[k] for k in range(4))

    def remaining(self, int32_t fi):
        """(bytes posted and not yet acknowledged, bytes to the end of the current
        message or -1) of one flow or connection."""
        cdef Flow* f = &self.s.flows[fi]
        una = f.snd_una + self.s.hooks.skipped_bytes(self.s, fi, False)
        return (f.size - una, f.msg_end - una if f.msg_end >= 0 else -1)

    def mirror_start(self, int32_t P, int32_t lead, list flows, list lead_flows):
        """Hold partition P as a mirror of its twin ``lead`` (see mirror_start);
        True if it was started."""
        cdef int32_t n = len(flows), i, r
        cdef int32_t* fl = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        cdef int32_t* lf = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        if fl == NULL or lf == NULL:
            free(fl); free(lf)
            raise MemoryError()
        for i in range(n):
            fl[i] = flows[i]
            lf[i] = lead_flows[i]
        r = accel.mirror_start(self.s, P, lead, fl, lf, n)
        free(fl); free(lf)
        return r == 0

    def mirror_finish(self, int32_t lead):
        """The twin ``lead`` has converged: end its mirrors in its state and fast-
        forward them at its goodputs; returns how many."""
        return accel.mirror_finish(self.s, lead)

    def partitions(self):
        """Current partitions: lists of active flow ids (empty if the accelerator is off).
        Looking changes nothing: a split check the accelerator has pending stays pending."""
        return accel.partitions(self.s)

    def skipping(self):
        """Partitions being fast-forwarded: (flows, start ps, planned end ps)."""
        return accel.skipping(self.s)

    def pfc_records(self):
        cdef Sim* s = self.s
        cdef int64_t i
        out = np.empty((s.pfc_n, 5), dtype=np.int64)
        for i in range(s.pfc_n):
            out[i, 0] = s.pfc_log[i].t
            out[i, 1] = s.pfc_log[i].node
            out[i, 2] = s.pfc_log[i].is_switch
            out[i, 3] = s.pfc_log[i].ifindex
            out[i, 4] = s.pfc_log[i].pause
        return out

    def port_state(self, int32_t port):
        """Queue and pause state of one port (for tests and traces)."""
        cdef Port* pt = &self.s.ports[port]
        cdef MmuPort* m = &self.s.mmu[port]
        return {
            "busy": port_busy(self.s, port),
            "paused": [pt.paused[q] for q in range(NQ)],
            "qbytes": [pt.qbytes[q] for q in range(NQ)],
            "qbytes_total": pt.qbytes_total,
            "tx_bytes": pt.tx_bytes,
            "tx_packets": pt.tx_packets,
            "events": pt.ev_done,
            "events_skipped": pt.ev_skipped + self.s.hooks.port_skipped(self.s, port),   # (fast-forwards under way too)
            "ingress": [m.ingress[q] for q in range(NQ)],
            "hdrm": [m.hdrm[q] for q in range(NQ)],
            "egress": [m.egress[q] for q in range(NQ)],
            "pause_sent": [m.pause_sent[q] for q in range(NQ)],
        }

    def stats(self):
        cdef Sim* s = self.s
        by_kind = {EVENT_NAMES[k]: s.events[k] for k in range(<int>N_EVENT_KINDS)}
        d = {
            "events": sum(by_kind.values()),
            "events_by_kind": by_kind,
            "stale_events": s.stale_events,
            "event_queue": "calendar" if s.cal.on or (s.par != NULL and (<Par*>s.par).calendar) else "heap",   # heap.pxd
            "stale_by_kind": {EVENT_NAMES[k]: s.stale_by[k] for k in range(<int>N_EVENT_KINDS)},
            "pops_by_kind": {EVENT_NAMES[k]: s.pops[k] for k in range(<int>N_EVENT_KINDS)},
            "tx_done_ctrl": s.tx_ctrl,
            "tx_done_unscheduled": s.tx_unsched,
            "nic_wake_unscheduled": s.wake_unsched,
            "arrive_ctrl": s.arrive_ctrl,
            "tx_done_idle": s.txdone_idle,
            "nic_wake_idle": s.wake_idle,
            "nic_wake_busy": s.wake_busy,
            "data_packets": s.data_pkts,
            "ctrl_packets": s.ctrl_pkts,
            "drops": s.drops,
            "corrupted": s.corrupt,
            "pfc_pauses": s.pfc_pauses,
            "pfc_resumes": s.pfc_resumes,
            "ecn_marks": s.ecn_marks,
            "nacks": s.nacks,
            "timeouts": s.timeouts,
            "ns3_draws": s.ns3rng.draws,
        }
        d.update(accel.stats(s))            # the accelerator's counters (zero while it is off)
        d.update({
            "max_queue_bytes": s.max_qbytes,
            "max_switch_buffer_bytes": s.max_buffer,
            "packets_live": s.pkts_live,
            "packets_peak": s.pkts_peak,
            "packet_pool": s.pkt_cap,
        })
        return d


# ------------------------------------------------------------------ CC rules for tests

cdef void _fill_cc_params(CcParams* c, dict cc, int64_t mtu) except *:
    c.kind = CC_KINDS[cc["name"]]
    c.min_rate = cc["min_rate"]
    c.rai = cc["rai"]
    c.rhai = cc["rhai"]
    c.dctcp_rai = cc["dctcp_rai"]
    c.g = cc["g"]
    c.rate_on_first_cnp = cc["rate_on_first_cnp"]
    c.clamp_target = cc["clamp_target"]
    c.fast_react = cc["fast_react"]
    c.multi_rate = cc["multi_rate"]
    c.sample_feedback = cc["sample_feedback"]
    c.fast_recovery_times = cc["fast_recovery_times"]
    c.mi_thresh = cc["mi_thresh"]
    c.int_multi = cc["int_multi"]
    c.t_alpha = cc["t_alpha"]
    c.t_decrease = cc["t_decrease"]
    c.t_increase = cc["t_increase"]
    c.u_target = cc["u_target"]
    c.tmly_alpha = cc["tmly_alpha"]
    c.tmly_beta = cc["tmly_beta"]
    c.tmly_tlow = cc["tmly_tlow"]
    c.tmly_thigh = cc["tmly_thigh"]
    c.tmly_min_rtt = cc["tmly_min_rtt"]
    c.mtu = mtu
    c.sw_base_target = cc["sw_base_target"]
    c.sw_hop_scale = cc["sw_hop_scale"]
    c.sw_fs_range = cc["sw_fs_range"]
    c.sw_fs_alpha = cc["sw_fs_alpha"]
    c.sw_fs_beta = cc["sw_fs_beta"]
    c.sw_ai = cc["sw_ai"]
    c.sw_beta = cc["sw_beta"]
    c.sw_max_mdf = cc["sw_max_mdf"]
    c.sw_min_cwnd = cc["sw_min_cwnd"]
    c.sw_max_cwnd = cc["sw_max_cwnd"]
    c.sw_init_cwnd = cc["sw_init_cwnd"]
    c.sw_retx_reset = cc["sw_retx_reset"]
    c.tcp_init_cwnd = cc["tcp_init_cwnd"]
    c.tcp_min_ssthresh = cc["tcp_min_ssthresh"]
    c.tcp_max_cwnd = cc["tcp_max_cwnd"]
    c.tcp_beta = cc["tcp_beta"]
    c.cubic_beta = cc["cubic_beta"]
    c.cubic_c = cc["cubic_c"]
    c.tcp_pto_min = cc["tcp_pto_min"]
    c.tcp_rto_min = cc["tcp_rto_min"]


include "parallel.pxi"
