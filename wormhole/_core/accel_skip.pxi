# The fast-forward shared by steady skips, memo replays and mirrors (included by
# accel.pyx).  Contract: a Skip slot (defs.pxd) holds a partition's events out of the heap
# (_skip_start) and its flows' goodputs; while it runs, a flow's bytes as of now are
# skip_bytes more than its own (virtual time: accel_virtual.pxi); skip_end, in named
# steps, advances the partition by the skipped time and gives its events back.  The
# kernel is reached only through Accel.k (KernelOps, defs.pxd).


cdef int _ev_cmp(const void* a, const void* b) noexcept nogil:
    cdef Event* x = <Event*>a
    cdef Event* y = <Event*>b
    if x.t != y.t:
        return -1 if x.t < y.t else 1
    if x.seq != y.seq:
        return -1 if x.seq < y.seq else 1
    return 0


cdef bint _owned(Sim* s, Event* e, int32_t P) noexcept nogil:
    """Events that belong to partition P: its ports' transmissions and wake-ups,
    its flows' packets in flight and timers."""
    cdef Accel* a = &s.acc
    cdef int32_t fl
    if e.kind == EV_TX_DONE or e.kind == EV_NIC_WAKE:
        return a.port_part[e.a] == P
    if e.kind == EV_ARRIVE:
        fl = s.pkts[e.b].flow
        return fl >= 0 and a.active[fl] and a.part_of[fl] == P
    if e.kind == EV_CC_TIMER and (s.acc.k.cc[s.flows[e.a].cc].fixed_timers >> (e.b & 3)) & 1:
        return False                # keeps its absolute time (DCQCN's increase: see increase_in_skip)
    if e.kind == EV_RTO or e.kind == EV_CC_TIMER:
        return a.active[e.a] and a.part_of[e.a] == P
    return False


cdef int32_t skip_slot(Sim* s) noexcept nogil:
    """A free skip slot (the table grows as needed); -1 if memory ran out."""
    cdef Accel* a = &s.acc
    cdef int32_t i, slot
    for i in range(a.n_skips):
        if a.skips[i].part < 0:
            return i
    a.skips = <Skip*>realloc(a.skips, (a.n_skips * 2 + 4) * sizeof(Skip))
    if a.skips == NULL:
        s.fail = 1
        return -1
    for i in range(a.n_skips, a.n_skips * 2 + 4):
        memset(&a.skips[i], 0, sizeof(Skip))
        a.skips[i].part = -1
    slot = a.n_skips
    a.n_skips = a.n_skips * 2 + 4
    return slot


cdef int64_t INT64_MAX_ACC = 0x7fffffffffffffff


cdef int _gp_reserve(Sim* s, int32_t n) noexcept nogil:
    """The skip-try scratch (goodputs, on/off marks, cycle goodputs, dry limits) holds
    n flows; -1 if memory ran out."""
    cdef Accel* a = &s.acc
    cdef size_t m = n + 16
    if a.gp_cap < n:
        if (_grow(<void**>&a.gp, m * sizeof(double)) != 0 or _grow(<void**>&a.oo, m * sizeof(uint8_t)) != 0
                or _grow(<void**>&a.cg, m * sizeof(double)) != 0 or _grow(<void**>&a.lim, m * sizeof(int64_t)) != 0
                or _grow(<void**>&a.cm, m * sizeof(uint8_t)) != 0):
            s.fail = 1
            return -1
        a.gp_cap = n + 16
    return 0


cdef int32_t _take_events(Sim* s, int32_t P, Skip* sk) noexcept nogil:
    """Move the partition's events from the heap to the skip; -1 if memory ran out."""
    cdef int64_t k, j = 0
    cdef int32_t* ports
    cdef int32_t n, i
    sk.n_ev = 0
    for k in range(s.n_ports):              # its ports' transmission ends and wake-ups, all in the heap
        if s.acc.port_part[k] != P:
            continue
        s.acc.k.port_settle(s, <int32_t>k)
    for k in range(s.acc.part_nf[P]):       # the partition's packets in flight, all in the heap
        _flow_ports(s, s.acc.part_flows[P][k], &ports, &n)
        for i in range(n):
            s.acc.k.wire_flush(s, ports[i])
    if cal_to_heap(s) != 0:                # the calendar's events too (heap.pxd): the heap is rebuilt below
        s.fail = 1
        return -1
    for k in range(s.heap_n):
        if _owned(s, &s.heap[k], P):
            if sk.n_ev == sk.cap_ev:
                sk.ev = <Event*>realloc(sk.ev, (sk.cap_ev * 2 + 64) * sizeof(Event))
                if sk.ev == NULL:
                    s.fail = 1
                    return -1
                sk.cap_ev = sk.cap_ev * 2 + 64
            sk.ev[sk.n_ev] = s.heap[k]
            sk.n_ev += 1
        else:
            s.heap[j] = s.heap[k]
            j += 1
    s.heap_n = j
    heap_rebuild(s)
    return 0


cdef inline int64_t _room(Sim* s, Flow* f) noexcept nogil:
    """Bytes a flow may still send packet-free: what was posted, less the margin
    it simulates packet by packet before an interrupt."""
    return f.size - f.snd_nxt - s.acc.margin


cdef bint _members(Sim* s, int32_t P, int32_t* flows, int32_t n) noexcept nogil:
    """flows[0:n] are exactly the flows of partition P, which is not skipping."""
    cdef Accel* a = &s.acc
    cdef int32_t i, fi
    if P < 0 or P >= a.n_parts or a.part_skip[P] >= 0 or a.part_nf[P] != n or a.part_dirty[P]:
        return False
    for i in range(n):
        fi = flows[i]
        if fi < 0 or fi >= s.n_flows or not a.active[fi] or a.part_of[fi] != P:
            return False
    return True


cdef Skip* _skip_alloc(Sim* s, int32_t n, bint memo, int32_t* slot) noexcept nogil:
    """A free skip slot with room for n flows (and, for a memo skip, their
    stored state); NULL if memory ran out."""
    cdef Skip* sk
    cdef int32_t m = n if n > 0 else 1
    slot[0] = skip_slot(s)
    if slot[0] < 0:
        return NULL
    sk = &s.acc.skips[slot[0]]
    if sk.cap_flows < m:
        sk.flows = <int32_t*>realloc(sk.flows, m * sizeof(int32_t))
        sk.goodput = <double*>realloc(sk.goodput, m * sizeof(double))
        sk.cap_flows = m
    if memo:
        sk.memo_cc = <double*>realloc(sk.memo_cc, 4 * m * sizeof(double))
        sk.memo_gp = <double*>realloc(sk.memo_gp, m * sizeof(double))
    if sk.flows == NULL or sk.goodput == NULL or (memo and (sk.memo_cc == NULL or sk.memo_gp == NULL)):
        s.fail = 1
        return NULL
    sk.n_flows = n
    sk.memo = memo
    sk.has_onoff = 0
    return sk


cdef int _skip_start(Sim* s, int32_t slot, int32_t P, int64_t t1, int64_t t_limit) noexcept nogil:
    """Start the skip in ``slot`` (flows and goodputs filled): P's events leave
    the heap, its planned end (none if t1 is INT64_MAX) and the message ends
    its flows reach inside it are scheduled.  -1 if memory ran out."""
    cdef Accel* a = &s.acc
    cdef Skip* sk = &a.skips[slot]
    cdef int32_t i
    if _take_events(s, P, sk) != 0:
        return -1
    sk.part = P
    sk.t0 = s.now
    sk.t1 = t1
    sk.t_limit = t_limit
    sk.token += 1
    a.part_skip[P] = slot
    a.part_why[P] = -1                  # (a refusal before the skip does not say why its flows wait after it)
    a.skips_started += 1
    sk.note_token = a.skips_started
    if t1 < INT64_MAX_ACC and heap_push(s, t1, EV_SKIP_END, slot, sk.token) != 0:
        s.fail = 1
    for i in range(sk.n_flows):
        note_plan(s, sk.flows[i])
        rcv_plan(s, sk.flows[i])
    return 0


cdef int32_t skip_find(Sim* s, int32_t fi, Skip** out) noexcept nogil:
    """Index of flow fi in the fast-forward of its partition (and the skip), or -1."""
    cdef Accel* a = &s.acc
    cdef int32_t P, i
    cdef Skip* sk
    if not a.on or fi < 0 or fi >= s.n_flows or not a.active[fi]:
        return -1
    P = a.part_of[fi]
    if P < 0 or a.part_skip[P] < 0:
        return -1
    sk = &a.skips[a.part_skip[P]]
    for i in range(sk.n_flows):
        if sk.flows[i] == fi:
            out[0] = sk
            return i
    return -1


cdef int64_t skip_bytes(Sim* s, Skip* sk, int32_t i, int64_t dt) noexcept nogil:
    """Whole packets flow sk.flows[i] has advanced after ``dt`` of its skip (in
    a mirror: what the leader's flow has advanced since the mirror began; an on/off
    member: what its runs acknowledged), at most up to the tail of its posted data
    with what it had in flight at the start still in flight."""
    cdef Flow* f = &s.flows[sk.flows[i]]
    cdef int64_t B
    if sk.mirror:
        B = 0 if sk.lead_flows[i] < 0 else _lead_advance(s, sk, i) // s.p.mtu * s.p.mtu
    elif _is_onoff(sk, i):
        B = onoff_acked(s, sk, i, sk.t0 + dt)
    else:
        B = <int64_t>(sk.goodput[i] * <double>dt) // s.p.mtu * s.p.mtu
    if B > f.size - f.snd_nxt:
        B = (f.size - f.snd_nxt) // s.p.mtu * s.p.mtu
    return B if B > 0 else 0


cdef inline void _shift_packet(Sim* s, int32_t pk, int64_t dt) noexcept nogil:
    """A packet of the partition held through the skip: its sequence number and send
    time move with its flow, and the INT records it carries (a data packet's, or those
    its ACK echoes) with the clock and its ports' counters (int_hops.pxd)."""
    cdef Packet* pkt = &s.pkts[pk]
    if pkt.kind != PK_PFC and pkt.flow >= 0:
        pkt.seq += s.flows[pkt.flow].skip_shift
        pkt.ts += dt
        if s.p.int_mode == INT_HOPS and pkt.nhop > 0:
            int_hops_shift(s, &s.ints[<int64_t>pk * INT_MAX_HOP], pkt.nhop, &s.flows[pkt.flow], dt)


# ---- the end of a fast-forward, in named steps (skip_end runs them in this order)

cdef void skip_end(Sim* s, int32_t slot, bint planned) noexcept nogil:
    """End the fast-forward in ``slot`` now: planned (its EV_SKIP_END, the end of a
    memo replay, a mirror whose leader converged) or not (a skip-back: an unplanned
    event touches the partition, or a mirror's leader changed).  Re-entrant: the
    notices of step 4 may end the mirrors of other partitions (mirrors_end)."""
    cdef Skip* sk = &s.acc.skips[slot]
    cdef int32_t P = sk.part
    cdef int64_t dt = s.now - sk.t0
    cdef bint follow
    if P < 0:
        return
    if sk.mirror:
        if not planned and not sk.parted:
            s.acc.mirror_parts_by[7] += 1   # a skip-back of the mirror itself
        _mirror_state(s, sk)            # however it ends, a mirror takes its leader's state
        _mirror_count(s, sk)            # and counts its leader's events since it began
    _advance_flows(s, sk, dt)           # 1. each flow moves on by what it sent in the skip
    _shift_queues(s, P, dt)             # 2. packets waiting in the partition's queues
    _return_events(s, sk, dt)           # 3. its held events, shifted, back into the heap
    _clear_port_shift(s, sk)            #    (the ports' skip_tx scratch of steps 1-3)
    follow = sk.memo and planned and _gp_reserve(s, s.acc.part_nf[P]) == 0
    _report_flows(s, slot, planned)     # 4. message ends and deliveries passed; a replay's state
    sk = &s.acc.skips[slot]             # (step 4 may have grown the skip table)
    if follow:
        follow = _follow_goodputs(s, sk, P)     # 5. a replay's stored goodputs (s.acc.gp)
    _release_slot(s, sk, P)             # 6. the slot is free, the partition runs again
    _kick_ports(s, P)                   # 7. its idle ports send what reached them while frozen
    _count_end(s, sk, dt, planned)      # 8. statistics
    if follow:
        memo_follow(s, P)               # 9. a replay ends in a steady skip at the stored goodputs


cdef void _advance_flows(Sim* s, Skip* sk, int64_t dt) noexcept nogil:
    """Step 1: every flow of the skip advances by the whole packets it sent in it
    (skip_bytes), at sender, receiver and in flight, and its ports' counters with it;
    then, with every port's advance known (Port.skip_tx), its CC state (whose INT
    records follow the ports) and rate window."""
    cdef int32_t i, fi
    cdef int64_t B
    cdef Flow* f
    for i in range(sk.n_flows):
        fi = sk.flows[i]
        f = &s.flows[fi]
        B = skip_bytes(s, sk, i, dt)
        f.skip_shift = B
        f.snd_nxt += B
        f.snd_una += B
        f.max_sent += B
        f.rcv_nxt += B
        f.rcv_bytes += B
        if f.last_nack > 0:
            f.last_nack += B
        if f.nack_timer > 0:
            f.nack_timer += dt
        f.next_avail += dt
        f.rto_mark += B
        _count_packets(s, sk, f, B, not sk.mirror or not _twin_paths(s, sk, i))
    for i in range(sk.n_flows):
        fi = sk.flows[i]
        f = &s.flows[fi]
        s.acc.k.cc[f.cc].shift(s, fi, f.skip_shift, dt)
        _shift_window(s, fi, f.skip_shift, dt, sk.t0)


cdef void _shift_window(Sim* s, int32_t fi, int64_t B, int64_t dt, int64_t t0) noexcept nogil:
    """The flow's rate window lives in the partition's own time: its sample times and
    snd_una marks move by the skip (dt ps, B bytes), its rates stay; its cycle anchors
    (accel_onoff.pxi) do not move."""
    cdef FlowWin* w = &s.acc.win[fi]
    cdef int64_t L = s.acc.l, M = s.acc.lmask, j
    if w.val == NULL:
        return
    for j in range(w.n - L if w.n > L else 0, w.n):    # the window's samples (no older one is read)
        w.t[j & M] += dt
        w.una[j & M] += B
    w.act_t += dt
    w.act_una += B
    # (the cycle anchors stay in real time and bytes: a cycle's goodput is its bytes over its
    # busy time, a skip inside it included, which moved it at its measured goodput)
    if w.ep_t <= t0:
        w.ep_t += dt            # measured in the partition's own (shifted) time
    if w.idle_since >= 0:
        w.idle_since += dt


cdef inline double _hop_events(Port* pt) noexcept nogil:
    """Events a full run processes per packet at one hop, counted on its egress port: the
    arrival over its link and the transmission ends that were events there (txd_per_pkt).
    (A flow's first data port also has its NIC's wake-ups: Port.wake_per_pkt.)"""
    return 1.0 + pt.txd_per_pkt


cdef double _skip_pending(Sim* s, int32_t port) noexcept nogil:
    """The events a fast-forward under way (a steady skip or a memo replay of the port's
    partition; a mirror's are its own end's) has skipped on ``port`` so far: what
    _count_packets would count there if the skip ended now.  A skip's ports get their
    counts only at its end, so a mirror that marks or counts its twin's ports mid-skip
    adds this (_mirror_mark, _mirror_count).  Called only when a mirror begins, takes
    a flow, or ends."""
    cdef Accel* a = &s.acc
    cdef int32_t P = a.port_part[port], i, j, n
    cdef int32_t* ports
    cdef Skip* sk
    cdef Port* pt = &s.ports[port]
    cdef double npk, total = 0.0
    if P < 0 or a.part_skip[P] < 0:
        return 0.0
    sk = &a.skips[a.part_skip[P]]
    if sk.mirror:
        return 0.0
    for i in range(sk.n_flows):
        _flow_ports(s, sk.flows[i], &ports, &n)
        npk = -1.0
        for j in range(n):
            if ports[j] != port:
                continue
            if npk < 0:
                npk = <double>(skip_bytes(s, sk, i, s.now - sk.t0) // s.p.mtu)
            total += npk * _hop_events(pt)
            if j == 0:
                total += npk * pt.wake_per_pkt
    return total


cdef inline double _port_events_now(Sim* s, int32_t port) noexcept nogil:
    """The events ``port`` has had so far: processed, counted skipped, and what a fast-forward
    under way has skipped there (_skip_pending).  A mirror marks its ports with their twins'
    value and counts the difference at its end (_mirror_mark, _mirror_count)."""
    cdef Port* pt = &s.ports[port]
    return <double>pt.ev_done + pt.ev_skipped + _skip_pending(s, port)


cdef inline int32_t _skip_source(Skip* sk) noexcept nogil:
    """Where a fast-forward's skipped events are counted (Accel.skipped_by, SKIPPED_BY)."""
    return 3 if sk.mirror else (1 if sk.memo else (2 if sk.follow else 0))


cdef double port_under_way(Sim* s, int32_t port) noexcept nogil:
    """What the fast-forward of the port's partition under way has skipped there so far,
    counted only when it ends: a skip's or replay's _skip_pending, or a mirror's twin
    port's events since the mark (as _mirror_count will count them)."""
    cdef Accel* a = &s.acc
    cdef int32_t P = a.port_part[port], i, j
    cdef Skip* sk
    cdef Flow* f
    cdef double d
    if P < 0 or a.part_skip[P] < 0:
        return 0.0
    sk = &a.skips[a.part_skip[P]]
    if not sk.mirror:
        return _skip_pending(s, port)
    if s.ports[port].ev_mark < 0:
        return 0.0
    for i in range(sk.n_flows):
        if not _twin_paths(s, sk, i):
            continue
        f = &s.flows[sk.flows[i]]
        for j in range(f.path_len + f.rpath_len):
            if s.paths[f.path_off + j] == port:
                d = _port_events_now(s, s.paths[s.flows[sk.lead_flows[i]].path_off + j]) - s.ports[port].ev_mark
                return d if d > 0 else 0.0
    return 0.0


cdef void skipped_under_way(Sim* s, double* by) noexcept nogil:
    """The events the fast-forwards under way have skipped so far, by source (by[0..3]:
    SKIPPED_BY), which they count only when they end: port_under_way over the ports of
    the partitions being fast-forwarded, each port once.  A run stopped with fast-forwards
    under way (a workload stops when its job is done) reports them (stats: events_skipped)."""
    cdef Accel* a = &s.acc
    cdef int32_t k, port, P
    for k in range(4):
        by[k] = 0.0
    if not a.on:                        # (no partitions: acceleration off)
        return
    for port in range(s.n_ports):
        P = a.port_part[port]
        if P >= 0 and a.part_skip[P] >= 0:
            by[_skip_source(&a.skips[a.part_skip[P]])] += port_under_way(s, port)


cdef void _count_packets(Sim* s, Skip* sk, Flow* f, int64_t B, bint events) noexcept nogil:
    """The ports' counters (INT bytes, packets) advance by the B bytes' packets and,
    with ``events``, the events a full run would have processed for them are counted
    as skipped, each on the port of its hop (Port.ev_skipped).  (A mirror's flow that
    follows a twin on paths as long as its own counts its twin's events instead:
    _mirror_count.)"""
    cdef Accel* a = &s.acc
    cdef int64_t npk = B // s.p.mtu
    cdef double per = s.ports[s.paths[f.path_off]].wake_per_pkt, hop
    cdef int32_t j
    cdef Port* pt
    if events:
        s.ports[s.paths[f.path_off]].ev_skipped += <double>npk * per
    for j in range(f.path_len):
        pt = &s.ports[s.paths[f.path_off + j]]
        pt.tx_bytes += npk * (s.p.mtu + s.p.hdr_bytes)
        pt.skip_tx += npk * (s.p.mtu + s.p.hdr_bytes)
        pt.tx_packets += npk
        hop = _hop_events(pt)
        per += hop
        if events:
            pt.ev_skipped += <double>npk * hop
    for j in range(f.rpath_len):
        pt = &s.ports[s.paths[f.rpath_off + j]]
        pt.tx_bytes += npk * s.p.ack_bytes
        pt.skip_tx += npk * s.p.ack_bytes
        pt.tx_packets += npk
        hop = _hop_events(pt)
        per += hop
        if events:
            pt.ev_skipped += <double>npk * hop
    a.bytes_skipped += B
    if not events:
        return
    # each packet: an arrival per hop of data and ACK, the transmission ends that
    # were events there (txd_per_pkt), and the NIC wake-ups that pacing cost per
    # packet before the skip
    npk = <int64_t>(<double>npk * per + 0.5)
    a.events_skipped += npk
    a.skipped_by[_skip_source(sk)] += npk


cdef void _shift_queues(Sim* s, int32_t P, int64_t dt) noexcept nogil:
    """Step 2: the packets waiting in the partition's queues carry their flows' new
    sequence numbers and send times; its NICs' pending wake-ups move by the skip."""
    cdef int32_t i, q, pk
    cdef Port* pt
    for i in range(s.n_ports):
        if s.acc.port_part[i] != P:
            continue
        pt = &s.ports[i]
        if pt.wake_t >= 0:
            pt.wake_t += dt
        for q in range(NQ):
            pk = pt.qhead[q]
            while pk != NO_PKT:
                _shift_packet(s, pk, dt)
                pk = s.pkts[pk].next


cdef void _return_events(Sim* s, Skip* sk, int64_t dt) noexcept nogil:
    """Step 3: the events held since the skip began go back into the heap dt later,
    in their (time, sequence) order; the packets in flight shift like queued ones."""
    cdef int64_t k
    cdef Event e
    qsort(sk.ev, sk.n_ev, sizeof(Event), _ev_cmp)
    for k in range(sk.n_ev):
        e = sk.ev[k]
        if e.kind == EV_ARRIVE:
            _shift_packet(s, e.b, dt)
        if heap_push(s, e.t + dt, e.kind, e.a, e.b) != 0:
            s.fail = 1


cdef void _clear_port_shift(Sim* s, Skip* sk) noexcept nogil:
    """After step 3: the ports' skip_tx (what step 1 added to their counters, read by
    the INT records' shift) back to zero, on every port the skip's flows use."""
    cdef int32_t i, j
    cdef Flow* f
    for i in range(sk.n_flows):
        f = &s.flows[sk.flows[i]]
        for j in range(f.path_len):
            s.ports[s.paths[f.path_off + j]].skip_tx = 0
        for j in range(f.rpath_len):
            s.ports[s.paths[f.rpath_off + j]].skip_tx = 0


cdef void _report_flows(Sim* s, int32_t slot, bint planned) noexcept nogil:
    """Step 4: message ends and deliveries the skip passed are reported (the kernel's
    notices); a memo replay that ran to its end, or a mirror, sets its flows' stored
    state.  The notices may end mirrors (re-entrant skip_end of other slots)."""
    cdef Skip* sk
    cdef Flow* f
    cdef int32_t i, fi, n = s.acc.skips[slot].n_flows
    for i in range(n):
        sk = &s.acc.skips[slot]
        fi = sk.flows[i]
        f = &s.flows[fi]
        f.skip_shift = 0
        if f.persistent and f.msg_end >= 0 and f.snd_una >= f.msg_end:
            s.acc.k.note_message(s, fi)
        if f.rcv_end >= 0 and f.rcv_nxt >= f.rcv_end:
            s.acc.k.note_delivered(s, fi)
        sk = &s.acc.skips[slot]
        if sk.memo and (planned or sk.mirror):
            memo_set_state(s, fi, &sk.memo_cc[4 * i])


cdef bint _follow_goodputs(Sim* s, Skip* sk, int32_t P) noexcept nogil:
    """Step 5 (a memo replay that ran to its end): its stored steady goodputs into
    s.acc.gp in partition order; False if a flow of the partition has none."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, fi
    cdef bint ok = True
    for j in range(a.part_nf[P]):
        fi = a.part_flows[P][j]
        a.gp[j] = -1.0
        for i in range(sk.n_flows):
            if sk.flows[i] == fi:
                a.gp[j] = sk.memo_gp[i]
        if a.gp[j] < 0:
            ok = False
    return ok


cdef void _release_slot(Sim* s, Skip* sk, int32_t P) noexcept nogil:
    """Step 6: the slot is free (its token moves on: a pending EV_SKIP_END is stale)."""
    sk.memo = 0
    if sk.mirror:
        sk.mirror = 0
        s.acc.n_mirroring -= 1
    sk.n_ev = 0
    sk.part = -1
    sk.token += 1
    s.acc.part_skip[P] = -1


cdef void _kick_ports(Sim* s, int32_t P) noexcept nogil:
    """Step 7: ports that received something while frozen may need a kick."""
    cdef int32_t i
    for i in range(s.n_ports):
        if s.acc.port_part[i] == P:
            s.acc.k.port_kick(s, i)


cdef void _count_end(Sim* s, Skip* sk, int64_t dt, bint planned) noexcept nogil:
    """Step 8: skipped time; a skip-back (not a mirror parting) counted by its cause."""
    cdef Accel* a = &s.acc
    a.time_skipped += dt
    if not planned and not sk.parted:
        a.skip_backs += 1
        a.backs_by[a.back_why] += 1
    sk.parted = 0
    sk.follow = 0



cdef void skip_back_flow(Sim* s, int32_t fi, int32_t keep=-1) noexcept nogil:
    """End every fast-forward whose partition uses one of the flow's ports (but the
    one in slot ``keep``: a mirror that takes the flow, accel_mirror.pxi mirror_awaits)."""
    cdef int32_t* ports
    cdef int32_t n, i, p
    if not s.acc.on:
        return
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        p = s.acc.port_part[ports[i]]
        if p >= 0 and s.acc.part_skip[p] >= 0 and s.acc.part_skip[p] != keep:
            s.acc.back_why = 1
            skip_end(s, s.acc.part_skip[p], False)
            s.acc.back_why = 3
