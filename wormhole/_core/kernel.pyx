# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The packet kernel: event loop, NICs, switch ports, PFC, ECN, INT.

Everything below ``Kernel`` runs in C over the arrays of one ``Sim`` struct
(see ``defs.pxd``).  Python is entered only between batches: when a user event
is due, when flows with callbacks completed, or when ``until`` is reached.

Per packet and hop the kernel processes two events, as the reference does:
the end of serialisation at the sending port (which starts the next packet)
and the arrival at the peer port after the propagation delay.
"""
from libc.stdlib cimport calloc, malloc, realloc, free
from libc.string cimport memset, memcpy
from libc.stdint cimport int64_t, uint64_t, int32_t, uint32_t, int16_t, uint8_t, INT64_MAX, INT32_MAX
cimport numpy as cnp
import numpy as np

from wormhole._core.defs cimport *
from wormhole._core.heap cimport heap_push, heap_pop
from wormhole._core.mmu cimport (mmu_threshold, mmu_admit, mmu_add, mmu_remove, mmu_should_pause,
                                 mmu_should_resume, mmu_should_mark)
from wormhole._core.cc cimport (dcqcn_init, dcqcn_cnp, dcqcn_alpha_update, dcqcn_decrease, dcqcn_increase,
                                hpcc_init, hpcc_on_ack, timely_init, timely_on_ack, dctcp_init, dctcp_on_ack)
from wormhole._core.cc_swift cimport (swift_target, swift_bound, swift_init, swift_on_ack, swift_on_loss,
                                      swift_on_rto, swift_pace_rate)

cnp.import_array()

# the accelerator's counters (Accel.rejects, skipped_by, backs_by in defs.pxd), by index
REJECT_NAMES = ("pfc", "rate_spread", "goodput_halves", "no_room", "horizon_short", "split_check", "ramping",
                "window_filling", "no_window", "fresh_samples", "goodput_span", "horizon_flow_start",
                "horizon_no_goodput")
SKIPPED_BY = ("steady", "memo_replay", "memo_follow", "mirror")
BACKS_BY = ("flow_start", "post_idle_conn", "dcqcn_increase", "other")
EVENT_NAMES = ("tx_done", "arrive", "nic_wake", "flow_start", "user", "rto", "cc_timer", "sample", "skip_end",
               "msg_note")

include "cc_table.pxi"

cdef void* _grow(void* p, size_t n, size_t size) except NULL:
    """realloc for Python-side growth: raises MemoryError instead of returning NULL."""
    cdef void* q = realloc(p, n * size if n > 0 else size)
    if q == NULL:
        raise MemoryError()
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
    s.pkts_live += 1
    if s.pkts_live > s.pkts_peak:
        s.pkts_peak = s.pkts_live
    return i


cdef inline void pkt_free(Sim* s, int32_t i) noexcept nogil:
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

cdef inline void start_tx(Sim* s, int32_t port, int32_t pk) noexcept nogil:
    """Serialise a packet: the port is busy for its tx time; the peer sees it
    after tx time plus propagation delay."""
    cdef Port* pt = &s.ports[port]
    cdef int64_t tx = wh_tx_time_ps(s.pkts[pk].size, pt.rate_bps, s.p.quantum)
    pt.busy = 1
    pt.tx_packets += 1
    if s.pkts[pk].kind != PK_DATA:
        s.tx_ctrl += 1
    if heap_push(s, s.now + tx, EV_TX_DONE, port, 0) != 0:
        s.fail = 1
    if heap_push(s, s.now + tx + pt.delay_ps, EV_ARRIVE, pt.peer, pk) != 0:
        s.fail = 1


cdef inline int64_t flow_window(Flow* f) noexcept nogil:
    cdef int64_t w
    if f.win == 0:
        return 0
    if f.var_win:
        w = f.win * f.rate // f.max_rate
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


cdef void nic_try_send(Sim* s, int32_t port) noexcept nogil:
    """The host NIC's DequeueAndTransmit: ACK queue first, then one data packet
    of the next eligible QP; if none is eligible only because of pacing, arm a
    wake-up at the earliest pacing time."""
    cdef Port* pt = &s.ports[port]
    cdef int32_t idx, fi, pk, payload, k
    cdef Flow* f
    cdef Packet* pkt
    cdef int64_t t, rate
    if pt.busy or port_frozen(s, port):
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
        pt.wake_per_pkt += (pt.wakes_pending - pt.wake_per_pkt) * (1.0 / 1024)
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
        pt.wake_token += 1
        pt.wake_t = t
        if heap_push(s, t, EV_NIC_WAKE, port, pt.wake_token) != 0:
            s.fail = 1


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
    if s.p.ns3_rng:
        wh_ns3_draw(&s.ns3rng)      # the reference draws a random IP id for every PFC frame
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
    if pt.busy or pt.qbytes_total == 0 or port_frozen(s, port):
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
        if s.p.ecn and mmu_should_mark(s, port, q) and pkt.kind == PK_DATA:
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
    if pt.wake_t >= 0 and f.next_avail < pt.wake_t:
        t = f.next_avail if f.next_avail > s.now else s.now
        pt.wake_token += 1
        pt.wake_t = t
        if heap_push(s, t, EV_NIC_WAKE, f.src_port, pt.wake_token) != 0:
            s.fail = 1
    f.rate = new_rate


cdef inline void flow_complete(Sim* s, int32_t fi) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    CC_TABLE[f.cc].on_finish(s, fi)
    f.finish = s.now
    if s.acc.on:
        part_deactivate(s, fi)
    s.done[s.n_done] = fi
    s.n_done += 1
    if f.has_cb:
        s.n_done_cb += 1


cdef void note_message(Sim* s, int32_t fi) noexcept nogil:
    """A connection's oldest pending message is acknowledged: tell Python."""
    if _append(&s.notes, &s.n_notes, &s.notes_cap, fi) != 0:
        s.fail = 1
        return
    s.flows[fi].msg_end = -1        # Python sets the next one
    if s.acc.on and s.acc.n_mirroring > 0:
        mirrors_end(s, s.acc.part_of[fi])     # partitions mirroring this one part ways here


cdef void note_delivered(Sim* s, int32_t fi) noexcept nogil:
    """The receiver holds every byte up to the flow's rcv_end: record the time and
    tell Python if it asked (a connection always does: its next message end)."""
    cdef Flow* f = &s.flows[fi]
    f.delivered = s.now
    f.rcv_end = -1
    if f.persistent or f.rcv_cb:
        if _append(&s.rnotes, &s.n_rnotes, &s.rnotes_cap, fi) != 0:
            s.fail = 1


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
    if s.acc.on and s.acc.active[fi] and s.acc.win[fi].val != NULL:
        win_push(s, fi, CC_TABLE[f.cc].send_rate(s, fi))
        if f.persistent and f.snd_una >= f.size:
            conn_idle(s, fi)
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
    if pt.error_rate > 0.0 and wh_rng_uniform(&s.rng) < pt.error_rate:
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
    if s.acc.on and f.size > f.snd_una:
        part_activate(s, fi)
    if _append(&pt.qps, &pt.nqps, &pt.cap_qps, fi) != 0:
        s.fail = 1
        return
    f.on_nic = 1
    f.started = 1
    f.next_avail = s.now
    nic_try_send(s, f.src_port)


include "accel.pxi"


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
    if s.heap_n > 0:
        if heap_push(s, s.now + s.sample_interval, EV_SAMPLE, 0, 0) != 0:
            s.fail = 1


cdef int run_loop(Sim* s, int64_t until, int32_t* user) noexcept nogil:
    cdef Event e
    while s.heap_n > 0:
        if s.heap[0].t > until or s.budget == 0:
            return RUN_IDLE
        if s.budget > 0:
            s.budget -= 1
        e = heap_pop(s)
        s.now = e.t
        s.pops[e.kind] += 1
        if e.kind == EV_TX_DONE:
            s.ports[e.a].busy = 0
            if s.is_switch[s.ports[e.a].node]:
                switch_try_send(s, e.a)
            else:
                nic_try_send(s, e.a)
            if not s.ports[e.a].busy:
                s.txdone_idle += 1
        elif e.kind == EV_ARRIVE:
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
            if s.ports[e.a].busy:
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
            if s.acc.skips[e.a].token == e.b and s.acc.skips[e.a].part >= 0:
                skip_end(s, e.a, True)
            else:
                s.stale_events += 1
                s.stale_by[<int>EV_SKIP_END] += 1
                continue
        elif e.kind == EV_MSG_NOTE and e.b < 0:     # a delivery at virtual time: not an event of a full run
            rcv_note_due(s, e.a, -1 - e.b)
            if s.fail:
                return RUN_LIMIT
            if s.n_rnotes > 0:
                return RUN_CALLBACKS
            continue
        elif e.kind == EV_MSG_NOTE:
            if not msg_note_due(s, e.a, e.b):
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
        if s.n_done_cb > 0 or s.n_notes > 0 or s.n_rnotes > 0 or s.acc.n_mnotes > 0:
            return RUN_CALLBACKS
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


cdef class Kernel:
    """Owner of one simulation's state.  Built from a compiled fabric (plain
    numpy arrays) and a parameter dict; flows and user events are added from
    Python, ``run`` advances the clock in C."""
    cdef Sim* s

    def __cinit__(self):
        self.s = <Sim*>calloc(1, sizeof(Sim))
        if self.s == NULL:
            raise MemoryError()
        self.s.free_head = NO_PKT
        self.s.budget = -1

    def __dealloc__(self):
        cdef Sim* s = self.s
        cdef int32_t i
        if s == NULL:
            return
        if s.ports != NULL:
            for i in range(s.n_ports):
                free(s.ports[i].qps)
        free(s.heap); free(s.is_switch); free(s.host_idx); free(s.sw_idx)
        free(s.node_ip); free(s.seed); free(s.ports); free(s.mmu); free(s.sw)
        free(s.rt_start); free(s.rt_cnt); free(s.rt_ports); free(s.host_nic)
        free(s.pkts); free(s.ints); free(s.flows); free(s.paths); free(s.done)
        free(s.pfc_log)
        for i in range(8):
            free(s.cc_st[i])
        free(s.samples); free(s.notes); free(s.rnotes)
        if s.acc.on:
            for i in range(s.n_flows):
                win_free(s, i)
            for i in range(s.n_ports):
                free(s.acc.port_flows[i])
            for i in range(s.acc.n_parts):
                free(s.acc.part_flows[i])
            for i in range(s.acc.n_skips):
                free(s.acc.skips[i].ev); free(s.acc.skips[i].flows); free(s.acc.skips[i].goodput)
            free(s.acc.win); free(s.acc.part_of); free(s.acc.active); free(s.acc.mark)
            free(s.acc.port_part); free(s.acc.port_flows); free(s.acc.port_nf); free(s.acc.port_cap)
            free(s.acc.part_flows); free(s.acc.part_nf); free(s.acc.part_cap); free(s.acc.part_skip)
            for i in range(s.acc.n_pool):
                free(s.acc.pool[i])
            for i in range(s.acc.n_skips):
                free(s.acc.skips[i].memo_cc); free(s.acc.skips[i].memo_gp)
                free(s.acc.skips[i].lead_flows); free(s.acc.skips[i].lead_una0)
            free(s.acc.gp)
            free(s.acc.part_ver); free(s.acc.part_watch); free(s.acc.mnotes)
            free(s.acc.free_parts); free(s.acc.skips); free(s.acc.scratch); free(s.acc.part_dirty)
            free(s.acc.pool)
        free(s)

    def build(self, dict fab, dict params):
        """Load the compiled fabric arrays and the behaviour parameters."""
        cdef Sim* s = self.s
        cdef int32_t i, q, nn, npt, nh, nsw
        if s.ports != NULL:
            raise RuntimeError("kernel already built")
        nn = len(fab["is_switch"])
        npt = len(fab["port_node"])
        nh = int(fab["n_hosts"])
        nsw = int(fab["n_switches"])
        s.n_nodes = nn
        s.n_ports = npt
        s.n_hosts = nh
        s.is_switch = <uint8_t*>calloc(nn, 1)
        s.host_idx = <int32_t*>calloc(nn, sizeof(int32_t))
        s.sw_idx = <int32_t*>calloc(nn, sizeof(int32_t))
        s.node_ip = <uint32_t*>calloc(nn, sizeof(uint32_t))
        s.seed = <uint32_t*>calloc(nn, sizeof(uint32_t))
        s.ports = <Port*>calloc(npt, sizeof(Port))
        s.mmu = <MmuPort*>calloc(npt, sizeof(MmuPort))
        s.sw = <SwitchState*>calloc(nsw if nsw > 0 else 1, sizeof(SwitchState))
        s.host_nic = <int32_t*>calloc(nh if nh > 0 else 1, sizeof(int32_t))
        nrt = len(fab["rt_start"])
        s.rt_start = <int32_t*>calloc(nrt if nrt > 0 else 1, sizeof(int32_t))
        s.rt_cnt = <int32_t*>calloc(nrt if nrt > 0 else 1, sizeof(int32_t))
        nrp = len(fab["rt_ports"])
        s.rt_ports = <int32_t*>calloc(nrp if nrp > 0 else 1, sizeof(int32_t))
        s.done = <int32_t*>calloc(64, sizeof(int32_t))
        if (s.is_switch == NULL or s.host_idx == NULL or s.sw_idx == NULL or s.ports == NULL
                or s.mmu == NULL or s.sw == NULL or s.rt_start == NULL or s.rt_cnt == NULL
                or s.rt_ports == NULL or s.done == NULL):
            raise MemoryError()
        for i in range(nn):
            s.is_switch[i] = fab["is_switch"][i]
            s.host_idx[i] = fab["host_idx"][i]
            s.sw_idx[i] = fab["sw_idx"][i]
            s.node_ip[i] = fab["node_ip"][i]
            s.seed[i] = fab["seed"][i]
        for i in range(nh):
            s.host_nic[i] = fab["host_nic"][i]
        for i in range(npt):
            s.ports[i].node = fab["port_node"][i]
            s.ports[i].peer = fab["port_peer"][i]
            s.ports[i].ifindex = fab["port_ifindex"][i]
            s.ports[i].link = fab["port_link"][i]
            s.ports[i].rate_bps = fab["port_rate"][i]
            s.ports[i].delay_ps = fab["port_delay"][i]
            s.ports[i].error_rate = fab["port_error"][i]
            s.ports[i].wake_t = -1
            for q in range(NQ):
                s.ports[i].qhead[q] = NO_PKT
                s.ports[i].qtail[q] = NO_PKT
            s.mmu[i].headroom = fab["port_headroom"][i]
            s.mmu[i].pfc_shift = fab["port_pfc_shift"][i]
            s.mmu[i].kmin = fab["port_kmin"][i]
            s.mmu[i].kmax = fab["port_kmax"][i]
            s.mmu[i].pmax = fab["port_pmax"][i]
        for i in range(nsw):
            s.sw[i].buffer = fab["sw_buffer"][i]
            s.sw[i].total_hdrm = fab["sw_total_hdrm"][i]
            s.sw[i].total_rsrv = fab["sw_total_rsrv"][i]
        for i in range(nrt):
            s.rt_start[i] = fab["rt_start"][i]
            s.rt_cnt[i] = fab["rt_cnt"][i]
        for i in range(nrp):
            s.rt_ports[i] = fab["rt_ports"][i]
        s.p.mtu = params["mtu"]
        s.p.hdr_bytes = params["hdr_bytes"]
        s.p.ack_bytes = params["ack_bytes"]
        s.p.pfc_bytes = params["pfc_bytes"]
        s.p.int_mode = params["int_mode"]
        s.p.ack_qidx = params["ack_qidx"]
        s.p.ack_high_prio = params["ack_high_prio"]
        s.p.ecn = params["ecn"]
        s.p.pfc = params["pfc"]
        s.p.rate_bound = params["rate_bound"]
        s.p.back_to_zero = params["back_to_zero"]
        s.p.chunk = params["chunk"]
        s.p.ack_interval = params["ack_interval"]
        s.p.nack_interval = params["nack_interval"]
        s.p.reserve = params["reserve"]
        s.p.resume_offset = params["resume_offset"]
        s.p.quantum = params["quantum"]
        s.p.max_packets = params["max_packets"]
        s.p.rto = params["rto"]
        rng = params.get("ns3_rng")
        s.p.ns3_rng = rng is not None
        if rng is not None:
            for i in range(6):
                s.ns3rng.base[i] = rng["base"][i]
            for i in range(9):
                s.ns3rng.j1[i] = rng["j1"][i]
                s.ns3rng.j2[i] = rng["j2"][i]
                s.ns3rng.r1[i] = rng["r1"][i]
                s.ns3rng.r2[i] = rng["r2"][i]
        s.rng = <uint64_t>params["seed"] ^ 0x5eed5eed5eed5eedULL
        _fill_cc_params(&s.cc, params["cc"], s.p.mtu)
        s.cc_used = (<uint32_t>1) << s.cc.kind
        acc = params.get("accel")
        if acc is not None and acc["on"]:
            s.acc.on = 1
            s.acc.l = acc["l"]
            s.acc.theta = acc["theta"]
            s.acc.min_skip = acc["min_skip"]
            s.acc.margin = acc["margin"]
            s.acc.check_every = acc["check_every"]
            s.acc.quarters = acc["gp_span"] >= 0
            s.acc.gp_span = acc["gp_span"]
            s.acc.back_why = 3
            s.acc.memo = acc.get("memo", False)
            s.acc.port_part = <int32_t*>malloc(npt * sizeof(int32_t))
            s.acc.port_flows = <int32_t**>calloc(npt, sizeof(int32_t*))
            s.acc.port_nf = <int32_t*>calloc(npt, sizeof(int32_t))
            s.acc.port_cap = <int32_t*>calloc(npt, sizeof(int32_t))
            if (s.acc.port_part == NULL or s.acc.port_flows == NULL or s.acc.port_nf == NULL
                    or s.acc.port_cap == NULL):
                raise MemoryError()
            for i in range(npt):
                s.acc.port_part[i] = -1
        s.sample_interval = params["sample_interval"]
        if s.sample_interval > 0:
            if heap_push(s, 0, EV_SAMPLE, 0, 0) != 0:
                raise MemoryError()

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
        s.flows = <Flow*>_grow(s.flows, cap, sizeof(Flow))
        s.done = <int32_t*>_grow(s.done, cap, sizeof(int32_t))
        if cc_grow(s, cap) != 0:
            raise MemoryError()
        if s.acc.on:
            s.acc.win = <FlowWin*>_grow(s.acc.win, cap, sizeof(FlowWin))
            s.acc.part_of = <int32_t*>_grow(s.acc.part_of, cap, sizeof(int32_t))
            s.acc.active = <uint8_t*>_grow(s.acc.active, cap, sizeof(uint8_t))
            s.acc.mark = <uint8_t*>_grow(s.acc.mark, cap, sizeof(uint8_t))
            memset(&s.acc.win[s.flow_cap], 0, (cap - s.flow_cap) * sizeof(FlowWin))
            for i in range(s.flow_cap, cap):
                s.acc.part_of[i] = -1
                s.acc.active[i] = 0
                s.acc.mark[i] = 0
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
            extended = skip_extend(s, fi, nbytes)
        if extended:                        # a connection sending through a skip: more to send
            if s.fail:
                raise MemoryError("out of memory")
            return f.size
        with nogil:
            skip_back_flow(s, fi)
            if s.acc.on and s.acc.active[fi] and f.snd_una >= f.size:
                conn_resume(s, fi)
        f.size += nbytes
        if f.started and not f.on_nic:
            with nogil:
                flow_start(s, fi)
        elif f.started:
            with nogil:
                if s.acc.on and not s.acc.active[fi]:
                    part_activate(s, fi)
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
                if not note_plan(self.s, fi) and f.snd_una >= end:
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
                if not rcv_plan(self.s, fi) and f.rcv_nxt >= end:
                    note_delivered(self.s, fi)
            if self.s.fail:
                raise MemoryError("out of memory")

    def set_budget(self, int64_t n):
        """Let ``run`` pop at most ``n`` more heap events (-1: no bound)."""
        self.s.budget = n

    def take_rcv_notes(self):
        """Flows and connections whose receiver reached its rcv_end since the last call."""
        cdef Sim* s = self.s
        out = [s.rnotes[i] for i in range(s.n_rnotes)]
        s.n_rnotes = 0
        return out

    def rcv_nxt(self, int32_t fi):
        """Bytes the receiver holds in order; inside a fast-forward, as of the current time."""
        return virt_rcv(self.s, fi)

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
        return virt_una(self.s, fi)

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
        with nogil:
            code = run_loop(self.s, until, &user)
        return code, user

    @property
    def now(self):
        return self.s.now

    def set_now(self, int64_t t):
        if t < self.s.now:
            raise ValueError("the clock cannot go backwards")
        self.s.now = t

    @property
    def fail(self):
        return self.s.fail

    @property
    def n_flows(self):
        return self.s.n_flows

    @property
    def n_done(self):
        return self.s.n_done

    @property
    def pending_events(self):
        return self.s.heap_n

    def next_event_time(self):
        return self.s.heap[0].t if self.s.heap_n > 0 else -1

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
        cdef int64_t win = 6 * s.acc.l * sizeof(int64_t) if s.acc.on else 0
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
        cdef Accel* a = &self.s.acc
        out = [("formed" if a.mnotes[3 * i] == 0 else "steady", a.mnotes[3 * i + 1], a.mnotes[3 * i + 2])
               for i in range(a.n_mnotes)]
        a.n_mnotes = 0
        return out

    def partition_members(self, int32_t P):
        """(version, flows) of one partition (after a pending split check)."""
        cdef Accel* a = &self.s.acc
        if P < 0 or P >= a.n_parts:
            return (-1, [])
        if a.part_dirty[P]:
            return (-1, [])
        return (a.part_ver[P], [a.part_flows[P][i] for i in range(a.part_nf[P])])

    def watch_partition(self, int32_t P, int32_t version):
        """Ask for a 'steady' notice when partition P (at this version) has converged."""
        cdef Accel* a = &self.s.acc
        if 0 <= P < a.n_parts and a.part_ver[P] == version:
            a.part_watch[P] = 1

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
        r = memo_start(self.s, P, dt, fl, nb, cv, gp, n)
        free(fl); free(nb); free(cv); free(gp)
        return r == 0

    def steady_goodput(self, int32_t fi):
        """The goodput (bytes per ps) a fast-forward of flow fi's partition uses
        now: its skip's, or else the one its window measures (0 if none)."""
        cdef Sim* s = self.s
        cdef Skip* sk = NULL
        cdef int32_t i
        if not s.acc.on or fi < 0 or fi >= s.n_flows or not s.acc.active[fi]:
            return 0.0
        i = skip_find(s, fi, &sk)
        if i >= 0:
            return sk.goodput[i]
        if s.acc.win[fi].val == NULL or s.acc.win[fi].n < s.acc.l:
            return 0.0
        return _goodput(s, fi)

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
        una = virt_una(self.s, fi) if self.s.acc.on else f.snd_una
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
        r = mirror_start(self.s, P, lead, fl, lf, n)
        free(fl); free(lf)
        return r == 0

    def mirror_finish(self, int32_t lead):
        """The twin ``lead`` has converged: end its mirrors in its state and fast-
        forward them at its goodputs; returns how many."""
        return mirror_finish(self.s, lead)

    def partitions(self):
        """Current partitions: lists of active flow ids (empty if the accelerator is off)."""
        cdef Accel* a = &self.s.acc
        out = []
        if not a.on:
            return out
        for p in range(a.n_parts):
            if a.part_dirty[p]:
                part_split(self.s, p)
        for p in range(a.n_parts):
            if a.part_nf[p] > 0:
                out.append(sorted(a.part_flows[p][i] for i in range(a.part_nf[p])))
        return out

    def skipping(self):
        """Partitions being fast-forwarded: (flows, start ps, planned end ps)."""
        cdef Accel* a = &self.s.acc
        out = []
        for i in range(a.n_skips):
            if a.skips[i].part >= 0:
                out.append((sorted(a.skips[i].flows[j] for j in range(a.skips[i].n_flows)), a.skips[i].t0,
                            a.skips[i].t1))
        return out

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
            "busy": pt.busy,
            "paused": [pt.paused[q] for q in range(NQ)],
            "qbytes": [pt.qbytes[q] for q in range(NQ)],
            "qbytes_total": pt.qbytes_total,
            "tx_bytes": pt.tx_bytes,
            "tx_packets": pt.tx_packets,
            "ingress": [m.ingress[q] for q in range(NQ)],
            "hdrm": [m.hdrm[q] for q in range(NQ)],
            "egress": [m.egress[q] for q in range(NQ)],
            "pause_sent": [m.pause_sent[q] for q in range(NQ)],
        }

    def switch_state(self, int32_t sw):
        cdef SwitchState* x = &self.s.sw[sw]
        return {"buffer": x.buffer, "shared_used": x.shared_used, "used": x.used,
                "total_hdrm": x.total_hdrm, "total_rsrv": x.total_rsrv}

    def stats(self):
        cdef Sim* s = self.s
        by_kind = {EVENT_NAMES[k]: s.events[k] for k in range(<int>N_EVENT_KINDS)}
        return {
            "events": sum(by_kind.values()),
            "events_by_kind": by_kind,
            "stale_events": s.stale_events,
            "stale_by_kind": {EVENT_NAMES[k]: s.stale_by[k] for k in range(<int>N_EVENT_KINDS)},
            "pops_by_kind": {EVENT_NAMES[k]: s.pops[k] for k in range(<int>N_EVENT_KINDS)},
            "tx_done_ctrl": s.tx_ctrl,
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
            "events_skipped": s.acc.events_skipped,
            "skips": s.acc.skips_started,
            "skip_backs": s.acc.skip_backs,
            "skip_extends": s.acc.skip_extends,
            "time_skipped_ps": s.acc.time_skipped,
            "bytes_skipped": s.acc.bytes_skipped,
            "steady_periods": s.acc.steady_periods,
            "partition_merges": s.acc.merges,
            "partition_splits": s.acc.splits,
            "memo_applied": s.acc.memo_applied,
            "memo_follows": s.acc.memo_follows,
            "memo_mirrors": s.acc.mirrors,
            "memo_mirrors_done": s.acc.mirrors_done,
            "skip_rejects": {name: s.acc.rejects[k] for k, name in enumerate(REJECT_NAMES)},
            "reject_mean_flows": s.acc.rej_flows / max(1, sum(s.acc.rejects[k] for k in range(16))),
            "skip_mean_flows": s.acc.skip_flows / max(1, s.acc.skips_started),
            "events_skipped_by": {name: s.acc.skipped_by[k] for k, name in enumerate(SKIPPED_BY)},
            "skip_backs_by": {name: s.acc.backs_by[k] for k, name in enumerate(BACKS_BY)},
            "max_queue_bytes": s.max_qbytes,
            "max_switch_buffer_bytes": s.max_buffer,
            "packets_live": s.pkts_live,
            "packets_peak": s.pkts_peak,
            "packet_pool": s.pkt_cap,
        }


def _py_tx_time_ps(int64_t nbytes, int64_t bps, int64_t quantum_ps=1000):
    """Serialisation time in ps (wrapper of the kernel's C helper, for tests)."""
    return wh_tx_time_ps(nbytes, bps, quantum_ps)


def _py_ns3_seconds_to_ns(double v):
    """The reference's double-seconds to integer-ns conversion (for tests)."""
    return wh_ns3_seconds_to_ns(v)


def _py_ecmp_hash(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed):
    """The reference switch's ECMP hash (MurmurHash3 x86_32 over 12 bytes)."""
    return wh_ecmp_hash3(w0, w1, w2, seed)


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


def _py_dcqcn(str step, dict state, dict cc, int64_t rate, int64_t line_rate=0):
    """Apply one DCQCN rule ('cnp', 'alpha', 'decrease', 'increase') to a state
    dict; returns (state, rate, flag) where flag is 'first CNP' or 'cut'."""
    cdef CcParams p
    cdef DcqcnState st
    cdef bint flag = False
    _fill_cc_params(&p, cc, 1000)
    memset(&st, 0, sizeof(DcqcnState))
    dcqcn_init(&st, line_rate)
    st.alpha = state.get("alpha", st.alpha)
    st.target_rate = state.get("target_rate", st.target_rate)
    st.rp_stage = state.get("rp_stage", st.rp_stage)
    st.first_cnp = state.get("first_cnp", st.first_cnp)
    st.alpha_cnp = state.get("alpha_cnp", st.alpha_cnp)
    st.dec_cnp = state.get("dec_cnp", st.dec_cnp)
    if step == "cnp":
        flag = dcqcn_cnp(&st, &p, &rate)
    elif step == "alpha":
        dcqcn_alpha_update(&st, &p)
    elif step == "decrease":
        flag = dcqcn_decrease(&st, &p, &rate)
    elif step == "increase":
        dcqcn_increase(&st, &p, &rate, line_rate)
    else:
        raise ValueError(step)
    return ({"alpha": st.alpha, "target_rate": st.target_rate, "rp_stage": st.rp_stage,
             "first_cnp": st.first_cnp, "alpha_cnp": st.alpha_cnp, "dec_cnp": st.dec_cnp}, rate, flag)


def _py_hpcc_on_ack(dict state, dict cc, list hops, int64_t ack_seq, int64_t snd_nxt, int64_t max_rate,
                    int64_t base_rtt_ns, int64_t win):
    """One HPCC ACK. hops: [(time_ns, tx_bytes, qlen_bytes, rate_bps)] as a switch
    measured them (packed here as on the wire). Returns (state, changed, new_rate)."""
    cdef CcParams p
    cdef HpccState st
    cdef IntHop ih[5]
    cdef int i, n = len(hops)
    cdef int64_t nr = 0
    cdef bint changed
    _fill_cc_params(&p, cc, 1000)
    hpcc_init(&st, max_rate)
    st.last_update_seq = state.get("last_update_seq", 0)
    st.cur_rate = state.get("cur_rate", max_rate)
    st.inc_stage = state.get("inc_stage", 0)
    st.u = state.get("u", 1.0)
    for i, h in enumerate(state.get("hops", [])):
        st.hop[i].time = <uint32_t>((h[0]) & 0xFFFFFF)
        st.hop[i].bytes = <uint32_t>((h[1] // (128 * p.int_multi)) & 0xFFFFF)
        st.hop[i].qlen = <uint32_t>((h[2] // (80 * p.int_multi)) & 0x1FFFF)
        st.hop[i].rate_bps = h[3]
    for i in range(n):
        ih[i].time = <uint32_t>(hops[i][0] & 0xFFFFFF)
        ih[i].bytes = <uint32_t>((hops[i][1] // (128 * p.int_multi)) & 0xFFFFF)
        ih[i].qlen = <uint32_t>((hops[i][2] // (80 * p.int_multi)) & 0x1FFFF)
        ih[i].rate_bps = hops[i][3]
    changed = hpcc_on_ack(&st, &p, ih, n, ack_seq, snd_nxt, max_rate, base_rtt_ns, win, &nr)
    return ({"last_update_seq": st.last_update_seq, "cur_rate": st.cur_rate, "inc_stage": st.inc_stage,
             "u": st.u, "hops": [(st.hop[i].time, st.hop[i].bytes * 128 * p.int_multi,
                                  st.hop[i].qlen * 80 * p.int_multi, st.hop[i].rate_bps) for i in range(n)]},
            changed, nr)


def _py_timely_on_ack(dict state, dict cc, int64_t ack_seq, int64_t snd_nxt, int64_t rtt_ns, int64_t max_rate,
                      int64_t rate):
    cdef CcParams p
    cdef TimelyState st
    cdef bint changed
    _fill_cc_params(&p, cc, 1000)
    timely_init(&st, max_rate)
    st.last_update_seq = state.get("last_update_seq", 0)
    st.cur_rate = state.get("cur_rate", max_rate)
    st.inc_stage = state.get("inc_stage", 0)
    st.last_rtt = state.get("last_rtt", 0)
    st.rtt_diff = state.get("rtt_diff", 0.0)
    changed = timely_on_ack(&st, &p, ack_seq, snd_nxt, rtt_ns, max_rate, &rate)
    return ({"last_update_seq": st.last_update_seq, "cur_rate": st.cur_rate, "inc_stage": st.inc_stage,
             "last_rtt": st.last_rtt, "rtt_diff": st.rtt_diff}, changed, rate)


def _py_dctcp_on_ack(dict state, dict cc, int64_t ack_seq, bint ecn, int64_t snd_nxt, int64_t max_rate,
                     int64_t rate, int64_t mtu=1000):
    cdef CcParams p
    cdef DctcpState st
    _fill_cc_params(&p, cc, mtu)
    dctcp_init(&st)
    st.last_update_seq = state.get("last_update_seq", 0)
    st.high_seq = state.get("high_seq", 0)
    st.ecn_cnt = state.get("ecn_cnt", 0)
    st.batch = state.get("batch", 0)
    st.alpha = state.get("alpha", 1.0)
    st.ca_state = state.get("ca_state", 0)
    dctcp_on_ack(&st, &p, ack_seq, ecn, snd_nxt, max_rate, &rate)
    return ({"last_update_seq": st.last_update_seq, "high_seq": st.high_seq, "ecn_cnt": st.ecn_cnt,
             "batch": st.batch, "alpha": st.alpha, "ca_state": st.ca_state}, rate)


def _py_swift(str step, dict state, dict cc, int64_t now=0, int64_t ack_seq=0, int64_t delay=0,
              int64_t base_rtt=0, int64_t mtu=1000):
    """Apply one Swift rule to a state dict (SwiftState's fields; unset ones as
    a new flow's with cwnd = state['cwnd']): 'ack' (an ACK up to ack_seq with
    this delay, ps), 'loss' (a NACK), 'rto' (a timeout), 'target' (no event:
    the bounds and pacing gap of the state as given).  Returns (state, the
    target delay of the resulting state, ps)."""
    cdef CcParams p
    cdef SwiftState st
    cdef dict full
    _fill_cc_params(&p, cc, mtu)
    swift_init(&st, &p, state.get("cwnd", 1.0), state.get("hops", 0), base_rtt)
    full = st                       # as a dict, the given fields on top, back to the struct
    for name in state:
        if name not in full:
            raise KeyError(name)
    full.update(state)
    st = full
    if step == "ack":
        swift_on_ack(&st, &p, ack_seq, delay, now, base_rtt)
    elif step == "loss":
        swift_on_loss(&st, &p, ack_seq, now, base_rtt)
    elif step == "rto":
        swift_on_rto(&st, &p, now, base_rtt)
    elif step == "target":
        swift_bound(&st, &p, st.cwnd, now, base_rtt)       # the pacing gap of the state as given
    else:
        raise ValueError(step)
    return st, swift_target(&st, &p)


def _py_swift_pace_rate(int64_t pkt_bytes, int64_t gap, int64_t max_rate):
    """Swift's pacing rate (bps) for one packet of pkt_bytes every gap ps."""
    return swift_pace_rate(pkt_bytes, gap, max_rate)


# ------------------------------------------------------------------ MMU rules for tests

_MMU_PORT_ARRAYS = ("ingress", "hdrm", "egress", "pause_sent")
_MMU_PORT_SCALARS = ("headroom", "pfc_shift", "kmin", "kmax", "pmax")
_MMU_SWITCH = ("buffer", "shared_used", "total_hdrm", "total_rsrv", "used")


def _py_mmu(str op, dict port, dict switch, int64_t reserve=4096, int64_t resume_offset=3072, int q=3,
            int64_t size=0, int draws=1, uint64_t seed=1):
    """Apply one switch-MMU rule of mmu.pxd on a two-port switch (port 0 the
    ingress, port 1 the egress) built from dicts; returns (result, port 0,
    port 1, switch) as dicts.  ``op``: 'threshold', 'admit', 'add', 'remove',
    'pause', 'resume' (on port 0, queue q) or 'mark' (egress port 1, queue q:
    the number of marks in ``draws`` draws).  ``port`` gives port 0's fields
    (the arrays as lists of 8 or {queue: value}); port 1 copies its scalars,
    and ``port['egress']`` is put on port 1."""
    cdef Sim s
    cdef MmuPort mm[2]
    cdef SwitchState sw
    cdef int i, k
    cdef object result
    memset(&s, 0, sizeof(Sim))
    memset(mm, 0, sizeof(mm))
    memset(&sw, 0, sizeof(SwitchState))
    if not 0 <= q < 8:
        raise ValueError("queue must be 0..7")
    for name in port:
        if name not in _MMU_PORT_ARRAYS and name not in _MMU_PORT_SCALARS:
            raise KeyError(name)
    for name in switch:
        if name not in _MMU_SWITCH:
            raise KeyError(name)
    for k in range(2):
        mm[k].headroom = port.get("headroom", 0)
        mm[k].pfc_shift = port.get("pfc_shift", 3)
        mm[k].kmin = port.get("kmin", 0)
        mm[k].kmax = port.get("kmax", 0)
        mm[k].pmax = port.get("pmax", 0.0)
    for name in _MMU_PORT_ARRAYS:
        v = port.get(name, {})
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for i, x in items:
            if name == "ingress":
                mm[0].ingress[i] = x
            elif name == "hdrm":
                mm[0].hdrm[i] = x
            elif name == "egress":
                mm[1].egress[i] = x
            else:
                mm[0].pause_sent[i] = x
    sw.buffer = switch.get("buffer", 0)
    sw.shared_used = switch.get("shared_used", 0)
    sw.total_hdrm = switch.get("total_hdrm", 0)
    sw.total_rsrv = switch.get("total_rsrv", 0)
    sw.used = switch.get("used", 0)
    s.mmu = mm
    s.sw = &sw
    s.p.reserve = reserve
    s.p.resume_offset = resume_offset
    s.rng = seed
    if op == "threshold":
        result = mmu_threshold(&s, 0, &sw)
    elif op == "admit":
        result = bool(mmu_admit(&s, 0, q, size, &sw))
    elif op == "add":
        mmu_add(&s, 0, 1, q, size, &sw)
        result = None
    elif op == "remove":
        mmu_remove(&s, 0, 1, q, size, &sw)
        result = None
    elif op == "pause":
        result = bool(mmu_should_pause(&s, 0, q, &sw))
    elif op == "resume":
        result = bool(mmu_should_resume(&s, 0, q, &sw))
    elif op == "mark":
        result = 0
        for i in range(draws):
            if mmu_should_mark(&s, 1, q):
                result += 1
    else:
        raise ValueError("unknown MMU rule %r" % op)

    def _port(k):
        return {"ingress": [mm[k].ingress[i] for i in range(8)], "hdrm": [mm[k].hdrm[i] for i in range(8)],
                "egress": [mm[k].egress[i] for i in range(8)],
                "pause_sent": [mm[k].pause_sent[i] for i in range(8)]}
    return (result, _port(0), _port(1),
            {"buffer": sw.buffer, "shared_used": sw.shared_used, "total_hdrm": sw.total_hdrm,
             "total_rsrv": sw.total_rsrv, "used": sw.used})
