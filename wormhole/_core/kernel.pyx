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
from wormhole._core.mmu cimport (mmu_admit, mmu_add, mmu_remove, mmu_should_pause,
                                 mmu_should_resume, mmu_should_mark)

cnp.import_array()

EVENT_NAMES = ("tx_done", "arrive", "nic_wake", "flow_start", "user", "rto")

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
        for i in range(min_fin + 1, fcount):
            f = &s.flows[pt.qps[i]]
            if f.snd_una < f.size:
                if i == res:
                    res = nxt
                pt.qps[nxt] = pt.qps[i]
                nxt += 1
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
    if pt.busy:
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
    if pt.busy or pt.qbytes_total == 0:
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
        rec.ts_ns = s.now // 1000
        rec.tx_bytes = pt.tx_bytes
        rec.qlen = pt.qbytes_total
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


cdef inline void flow_complete(Sim* s, int32_t fi) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    f.finish = s.now
    s.done[s.n_done] = fi
    s.n_done += 1
    if f.has_cb:
        s.n_done_cb += 1


cdef void host_receive_ack(Sim* s, int32_t pk) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    cdef int32_t fi = pkt.flow
    cdef Flow* f = &s.flows[fi]
    cdef int64_t seq = pkt.seq
    cdef uint8_t kind = pkt.kind
    pkt_free(s, pk)
    if f.finish >= 0:
        return      # the reference deletes a finished QP and ignores late ACKs
    if s.p.back_to_zero and s.p.chunk > 0:
        seq = seq // s.p.chunk * s.p.chunk
    if seq > f.snd_una:
        f.snd_una = seq
    if f.snd_una >= f.size:
        flow_complete(s, fi)
    if kind == PK_NACK:
        f.snd_nxt = f.snd_una
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
        if f.rcv_nxt >= f.milestone:
            f.milestone += s.p.ack_interval
            action = 1
        elif s.p.chunk > 0 and f.rcv_nxt % s.p.chunk == 0:
            action = 1
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
    cdef int32_t* q
    if pt.nqps == pt.cap_qps:
        q = <int32_t*>realloc(pt.qps, (pt.cap_qps * 2 + 8) * sizeof(int32_t))
        if q == NULL:
            s.fail = 1
            return
        pt.qps = q
        pt.cap_qps = pt.cap_qps * 2 + 8
    pt.qps[pt.nqps] = fi
    pt.nqps += 1
    f.started = 1
    f.next_avail = s.now
    nic_try_send(s, f.src_port)


cdef int run_loop(Sim* s, int64_t until, int32_t* user) noexcept nogil:
    cdef Event e
    while s.heap_n > 0:
        if s.heap[0].t > until:
            return RUN_IDLE
        e = heap_pop(s)
        s.now = e.t
        if e.kind == EV_TX_DONE:
            s.ports[e.a].busy = 0
            if s.is_switch[s.ports[e.a].node]:
                switch_try_send(s, e.a)
            else:
                nic_try_send(s, e.a)
        elif e.kind == EV_ARRIVE:
            on_arrive(s, e.a, <int32_t>e.b)
        elif e.kind == EV_NIC_WAKE:
            if e.b != s.ports[e.a].wake_token:
                s.stale_events += 1
                continue
            s.ports[e.a].wake_t = -1
            nic_try_send(s, e.a)
        elif e.kind == EV_FLOW_START:
            flow_start(s, e.a)
        elif e.kind == EV_RTO:
            rto_fire(s, e.a, e.b)
        else:
            s.events[<int>EV_USER] += 1
            user[0] = e.a
            return RUN_USER
        s.events[e.kind] += 1
        if s.fail:
            return RUN_LIMIT
        if s.n_done_cb > 0:
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
        s.rng = <uint64_t>params["seed"] ^ 0x5eed5eed5eed5eedULL

    def add_flow(self, int src, int dst, int64_t size, int64_t start, int sport, int dport,
                 int pg, int64_t win, int64_t base_rtt, bint var_win, bint has_cb):
        """Add a flow (one queue pair) that starts at `start` ps; returns its index
        or raises ValueError when no path exists."""
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
        n = compute_path(s, src, dst, <uint32_t>sport | (<uint32_t>dport << 16), buf, 256)
        rn = compute_path(s, dst, src, <uint32_t>dport | (<uint32_t>sport << 16), rbuf, 256)
        if n < 0 or rn < 0:
            raise ValueError("no route between node %d and node %d" % (src, dst))
        if s.n_flows == s.flow_cap:
            nf = <Flow*>realloc(s.flows, (s.flow_cap * 2 + 64) * sizeof(Flow))
            nd = <int32_t*>realloc(s.done, (s.flow_cap * 2 + 64) * sizeof(int32_t))
            if nf == NULL or nd == NULL:
                raise MemoryError()
            s.flows = nf
            s.done = nd
            s.flow_cap = s.flow_cap * 2 + 64
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
        f.cc = CC_NONE
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
        f.last_nack = 0
        f.milestone = 0
        if heap_push(s, start, EV_FLOW_START, fi, 0) != 0:
            raise MemoryError()
        return fi

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
        cdef cnp.ndarray[cnp.int64_t, ndim=2] a = np.empty((n, 12), dtype=np.int64)
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
        return a

    def flow_path(self, int32_t fi, bint reverse=False):
        cdef Flow* f = &self.s.flows[fi]
        cdef int32_t off = f.rpath_off if reverse else f.path_off
        cdef int32_t n = f.rpath_len if reverse else f.path_len
        return [self.s.paths[off + i] for i in range(n)]

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
            "data_packets": s.data_pkts,
            "ctrl_packets": s.ctrl_pkts,
            "drops": s.drops,
            "corrupted": s.corrupt,
            "pfc_pauses": s.pfc_pauses,
            "pfc_resumes": s.pfc_resumes,
            "ecn_marks": s.ecn_marks,
            "nacks": s.nacks,
            "timeouts": s.timeouts,
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
