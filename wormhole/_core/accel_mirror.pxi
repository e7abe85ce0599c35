# Mirrors (included by accel.pyx).  Contract: a partition that formed at the same moment
# as an isomorphic twin in the same state is held as a skip whose flows advance as the
# twin's do (mirror_start, skip_bytes).  It follows the twin through its connections'
# message ends (mirror_follow_message: its own are reported at the same moment), through
# its connections going idle (mirror_follow_idle), through flows that join the twin at a
# moment when their own twins join the mirror (mirrors_on_join, mirror_admit, mirror_add)
# and, a mirror of connections, through the twin's steady skip; it ends exactly when the
# twin is quiescent, everything acknowledged (mirror_quiet_end), a mirror of plain flows
# in the twin's state when the twin converges (mirror_finish, then a steady skip at its
# goodputs), or, when the twin changes otherwise (a flow joins whose twin does not, data
# is posted to an idle connection) or the two part ways, with its own pipeline
# (mirrors_end); Accel.mirror_parts_by counts the partings by cause.


cdef int mirror_start(Sim* s, int32_t P, int32_t lead, int32_t* flows, int32_t* lead_flows,
                      int32_t n) noexcept nogil:
    """Partition P formed at the same moment as partition ``lead``, with an
    isomorphic graph and flows in the same state (flows[i] like lead_flows[i];
    -1 for an idle connection): P is held as a skip whose flows advance as the
    leader's do, until the leader converges (mirror_finish) or changes
    (mirrors_end).  Returns 0, or -1 if the partitions do not allow it."""
    cdef Accel* a = &s.acc
    cdef int32_t i, slot, fi
    cdef Skip* sk
    if lead < 0 or lead >= a.n_parts or P == lead or a.part_dirty[lead] or not _members(s, P, flows, n):
        return -1
    for i in range(n):
        fi = lead_flows[i]
        if fi >= s.n_flows or (fi >= 0 and (not a.active[fi] or a.part_of[fi] != lead)):
            return -1
    sk = _skip_alloc(s, n, True, &slot)
    if sk == NULL:
        return -1
    sk.lead_flows = <int32_t*>realloc(sk.lead_flows, (n if n > 0 else 1) * sizeof(int32_t))
    sk.lead_una0 = <int64_t*>realloc(sk.lead_una0, (n if n > 0 else 1) * sizeof(int64_t))
    sk.lead_rcv0 = <int64_t*>realloc(sk.lead_rcv0, (n if n > 0 else 1) * sizeof(int64_t))
    if sk.lead_flows == NULL or sk.lead_una0 == NULL or sk.lead_rcv0 == NULL:
        s.fail = 1
        return -1
    for i in range(n):
        sk.flows[i] = flows[i]
        sk.goodput[i] = 0.0             # no planned message notes: the leader's tell (mirrors_end)
        sk.lead_flows[i] = lead_flows[i]
        sk.lead_una0[i] = virt_una(s, lead_flows[i]) if lead_flows[i] >= 0 else 0
        sk.lead_rcv0[i] = s.flows[lead_flows[i]].rcv_nxt if lead_flows[i] >= 0 else 0
    sk.mirror = 1
    sk.wait_posts = 0
    sk.n_join = 0
    sk.lead_part = lead
    sk.lead_ver = a.part_ver[lead]
    if _skip_start(s, slot, P, INT64_MAX_ACC, INT64_MAX_ACC) != 0:
        sk.mirror = 0
        return -1
    for i in range(n):
        _mirror_mark(s, sk, i)
    a.mirrors += 1
    a.n_mirroring += 1
    return 0


cdef inline bint _twin_paths(Sim* s, Skip* sk, int32_t i) noexcept nogil:
    """The mirror's flow i follows a twin whose data and ACK paths have as many ports
    as its own: hop j of one stands for hop j of the other (their events too)."""
    cdef int32_t g = sk.lead_flows[i]
    cdef Flow* f = &s.flows[sk.flows[i]]
    if g < 0:
        return False
    return f.path_len == s.flows[g].path_len and f.rpath_len == s.flows[g].rpath_len


cdef void _mirror_mark(Sim* s, Skip* sk, int32_t i) noexcept nogil:
    """The mirror's flow i begins following its twin: each port of its paths not yet
    marked takes its twin port's event count (processed, skipped, and what a skip of
    the twin's partition under way has skipped there so far: _skip_pending), which
    the mirror's end counts from (_mirror_count)."""
    cdef Flow* f = &s.flows[sk.flows[i]]
    cdef Flow* g
    cdef Port* pf
    cdef int32_t j
    if not _twin_paths(s, sk, i):
        return
    g = &s.flows[sk.lead_flows[i]]
    for j in range(f.path_len + f.rpath_len):       # (data then ACK ports: contiguous in s.paths)
        pf = &s.ports[s.paths[f.path_off + j]]
        if pf.ev_mark < 0:
            pf.ev_mark = _port_events_now(s, s.paths[g.path_off + j])


cdef void _mirror_count(Sim* s, Skip* sk) noexcept nogil:
    """The mirror ends: the events it skipped are its twin ports' events since each was
    marked (what the twin processed there, what the twin's own fast-forwards counted,
    and what one of them still under way has skipped so far: a mirror parting while
    its leader fast-forwards), each port of the mirror counted once; the mirror's
    ports keep them (Port.ev_skipped) and their marks are cleared."""
    cdef Accel* a = &s.acc
    cdef Flow* f
    cdef Flow* g
    cdef Port* pf
    cdef int32_t i, j
    cdef double d, total = 0.0
    cdef int64_t n
    for i in range(sk.n_flows):
        if not _twin_paths(s, sk, i):
            continue
        f = &s.flows[sk.flows[i]]
        g = &s.flows[sk.lead_flows[i]]
        for j in range(f.path_len + f.rpath_len):
            pf = &s.ports[s.paths[f.path_off + j]]
            if pf.ev_mark < 0:
                continue
            d = _port_events_now(s, s.paths[g.path_off + j]) - pf.ev_mark
            pf.ev_mark = -1.0
            if d > 0:
                pf.ev_skipped += d
                total += d
    n = <int64_t>(total + 0.5)
    a.events_skipped += n
    a.skipped_by[3] += n


cdef void _mirror_state(Sim* s, Skip* sk) noexcept nogil:
    """The state a mirror ends in: its leader's flows' congestion-control state
    (and their ports' per-packet event records, which count the skipped events:
    the NIC's wake-ups, each port's transmission ends)."""
    cdef int32_t i, k, j
    cdef Flow* f
    cdef Flow* g
    for i in range(sk.n_flows):
        if sk.lead_flows[i] >= 0:
            s.acc.k.cc_vector(s, sk.lead_flows[i], &sk.memo_cc[4 * i])
            f = &s.flows[sk.flows[i]]
            g = &s.flows[sk.lead_flows[i]]
            s.ports[s.paths[f.path_off]].wake_per_pkt = s.ports[s.paths[g.path_off]].wake_per_pkt
            s.ports[s.paths[f.path_off]].wake_samples = s.ports[s.paths[g.path_off]].wake_samples
            if f.path_len + f.rpath_len == g.path_len + g.rpath_len:
                for j in range(f.path_len + f.rpath_len):
                    s.ports[s.paths[f.path_off + j]].txd_per_pkt = s.ports[s.paths[g.path_off + j]].txd_per_pkt
                    s.ports[s.paths[f.path_off + j]].txd_samples = s.ports[s.paths[g.path_off + j]].txd_samples
        else:
            for k in range(4):
                sk.memo_cc[4 * i + k] = 0.0


cdef inline int32_t _lead_index(Skip* sk, int32_t fi) noexcept nogil:
    """Index of the mirror's flow that follows the leader's flow fi, or -1."""
    cdef int32_t i
    for i in range(sk.n_flows):
        if sk.lead_flows[i] == fi:
            return i
    return -1


cdef bint _leads_in(Sim* s, Skip* sk, int32_t P) noexcept nogil:
    """One of the flows the mirror follows is active in partition P."""
    cdef int32_t i, lf
    for i in range(sk.n_flows):
        lf = sk.lead_flows[i]
        if lf >= 0 and s.acc.active[lf] and s.acc.part_of[lf] == P:
            return True
    return False


cdef inline bint _mirror_of(Sim* s, Skip* sk, int32_t P) noexcept nogil:
    """Skip slot sk is a mirror in progress that follows flows of partition P."""
    return sk.part >= 0 and sk.mirror and _leads_in(s, sk, P)


cdef bint _led(Sim* s, int32_t P) noexcept nogil:
    """Some mirror follows flows of partition P."""
    cdef Accel* a = &s.acc
    cdef int32_t i
    if a.n_mirroring == 0 or P < 0:
        return False
    for i in range(a.n_skips):
        if _mirror_of(s, &a.skips[i], P):
            return True
    return False


cdef void _mirror_part(Sim* s, int32_t slot, int32_t why) noexcept nogil:
    """The mirror in ``slot`` parts from its leader now, in the leader's state with its
    own pipeline; ``why`` indexes Accel.mirror_parts_by (PARTED_BY in accel.pyx)."""
    s.acc.mirror_parts_by[why] += 1
    s.acc.skips[slot].parted = 1
    skip_end(s, slot, False)


cdef void mirrors_end(Sim* s, int32_t P) noexcept nogil:
    """Partition P is about to change in a way its mirrors cannot follow (a flow
    joins, an idle connection gets data): the mirrors of the flows it holds end
    now, in its current state."""
    cdef Accel* a = &s.acc
    cdef int32_t i
    if a.n_mirroring == 0 or P < 0:
        return
    for i in range(a.n_skips):
        if _mirror_of(s, &a.skips[i], P):
            _mirror_part(s, i, 2)


cdef bint _all_led(Sim* s, Skip* sk, int32_t P) noexcept nogil:
    """Every flow of partition P is one the mirror follows."""
    cdef int32_t k
    for k in range(s.acc.part_nf[P]):
        if _lead_index(sk, s.acc.part_flows[P][k]) < 0:
            return False
    return True


cdef void mirror_join(Sim* s, int32_t fi) noexcept nogil:
    """Connection fi, idle, gets data and joins a partition again.  A mirror that
    follows it goes on following if the partitions its ports touch hold only flows
    it follows (the leader's own, nothing else joins it), else it parts."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, n, p
    cdef int32_t* ports
    if a.n_mirroring == 0:
        return
    _flow_ports(s, fi, &ports, &n)
    for i in range(a.n_skips):
        if a.skips[i].part < 0 or not a.skips[i].mirror or _lead_index(&a.skips[i], fi) < 0:
            continue
        for j in range(n):
            p = a.port_part[ports[j]]
            if p >= 0 and not _all_led(s, &a.skips[i], p):
                _mirror_part(s, i, 0)
                break


cdef void mirror_lead_post(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil:
    """Data posted to connection fi.  A mirror that follows it waits for the same
    data on its own connection at this moment (mirror_take_post); a check at this
    moment, after the workload's other posts, parts the two if it did not come."""
    cdef Accel* a = &s.acc
    cdef int32_t i
    if a.n_mirroring == 0:
        return
    for i in range(a.n_skips):
        if a.skips[i].part < 0 or not a.skips[i].mirror or _lead_index(&a.skips[i], fi) < 0:
            continue
        a.skips[i].wait_posts += 1
        if heap_push(s, s.now, EV_MSG_NOTE, -1 - i, a.skips[i].token) != 0:
            s.fail = 1


cdef bint mirror_take_post(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil:
    """Data posted to connection fi, held in a mirror: taken (its size grows; True)
    if its leader's connection has had data posted at this moment and has as much
    since the mirror began (several posts of this moment: at least as much), or if
    no post of the leader's is waiting for it: the workload may post to the twins
    of one moment in any order (measured: moe 32 GPUs, HPCC, the DP ring posts of
    rails 2-7 came before rail 0's, at the same picosecond), so the mirror takes it
    ahead of its leader (Skip.wait_posts below 0) and a check at the end of this
    moment (mirror_check) wants the same data on both, or parts them; only while
    the leader's connection is still sending (a mirror that follows an idle one
    would end quiet in the leader's state before that check, with data its leader
    never had).  False if fi is no mirror's connection, or the post is not taken
    (the caller ends the mirror)."""
    cdef Skip* sk = NULL
    cdef int32_t j = skip_find(s, fi, &sk), lf, slot
    cdef Flow* f = &s.flows[fi]
    if j < 0 or not sk.mirror:
        return False
    lf = sk.lead_flows[j]
    if lf < 0:
        return False
    if sk.wait_posts > 0:
        if f.size + nbytes - f.snd_una > s.flows[lf].size - sk.lead_una0[j]:
            return False
    else:
        slot = s.acc.part_skip[s.acc.part_of[fi]]
        if slot < 0 or &s.acc.skips[slot] != sk or not s.acc.active[lf]:
            return False
        if heap_push(s, s.now, EV_MSG_NOTE, -1 - slot, sk.token) != 0:
            s.fail = 1
            return False
    f.size += nbytes
    sk.wait_posts -= 1
    return True


cdef bint _same_data(Sim* s, Skip* sk) noexcept nogil:
    """Each of the mirror's connections has had as much data posted as its leader's
    since it began following it."""
    cdef int32_t j, lf
    cdef Flow* f
    for j in range(sk.n_flows):
        lf = sk.lead_flows[j]
        f = &s.flows[sk.flows[j]]
        if lf >= 0 and f.persistent and f.size - f.snd_una != s.flows[lf].size - sk.lead_una0[j]:
            return False
    return True


cdef bint mirror_check(Sim* s, int32_t slot, int64_t token) noexcept nogil:
    """The moment data was posted to a leader's connection (or a flow joined the
    leader) has passed: a mirror whose own connections did not all get theirs (whose
    twins did not all join) parts.  False if stale."""
    cdef Skip* sk
    cdef int32_t why
    if slot < 0 or slot >= s.acc.n_skips:
        return False
    sk = &s.acc.skips[slot]
    if sk.part < 0 or not sk.mirror or sk.token != token:
        return False
    why = mirror_check_why(s, sk)
    if why >= 0:
        sk.wait_posts = 0
        sk.n_join = 0
        _mirror_part(s, slot, why)
    return True


cdef int32_t mirror_check_why(Sim* s, Skip* sk) noexcept nogil:
    """At the end of a moment of posts or joins: -1 if the mirror and its leader
    had the same (every post matched, in either order, and each connection has as
    much data as its leader's twin), else why they part (PARTED_BY: 5 a post
    missing on one side or data that differ, 8 a twin that did not join)."""
    if sk.wait_posts != 0 or sk.n_join > 0 or not _same_data(s, sk):
        return 5 if sk.wait_posts != 0 or sk.n_join == 0 else 8
    return -1


cdef void mirrors_end_but(Sim* s, int32_t P, int32_t fi) noexcept nogil:
    """mirrors_end, except for the mirrors that follow flow fi and every flow of P
    (fi, a connection of theirs, resumes among them: mirror_join)."""
    cdef Accel* a = &s.acc
    cdef int32_t i
    if a.n_mirroring == 0 or P < 0:
        return
    for i in range(a.n_skips):
        if _mirror_of(s, &a.skips[i], P):
            if _lead_index(&a.skips[i], fi) >= 0 and _all_led(s, &a.skips[i], P):
                continue
            _mirror_part(s, i, s.acc.join_why)


cdef inline int64_t _lead_advance(Sim* s, Skip* sk, int32_t j) noexcept nogil:
    """Bytes the leader's flow j has had acknowledged since the mirror began (exact, not in packets)."""
    return virt_una(s, sk.lead_flows[j]) - sk.lead_una0[j]


cdef void mirror_follow_message(Sim* s, int32_t fi) noexcept nogil:
    """A message of connection fi was acknowledged.  A mirror that follows fi
    reports its own flow's pending message at this moment if the leader's bytes
    reach its end (the twins carry the same messages: the workload posted the
    same data to both); else the two part ways (mirrors_end of this mirror)."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, mf
    cdef Flow* f
    if a.n_mirroring == 0:
        return
    for i in range(a.n_skips):
        if a.skips[i].part < 0 or not a.skips[i].mirror:
            continue
        j = _lead_index(&a.skips[i], fi)
        if j < 0:
            continue
        mf = a.skips[i].flows[j]
        f = &s.flows[mf]
        if f.persistent and f.msg_end >= 0 and f.msg_end - f.snd_una <= _lead_advance(s, &a.skips[i], j):
            a.mirror_follows += 1
            a.k.note_message(s, mf)     # its message, at the leader's moment
        else:
            _mirror_part(s, i, 3)


cdef void mirror_follow_delivered(Sim* s, int32_t fi) noexcept nogil:
    """Flow fi's receiver got every byte up to its rcv_end.  A mirror that follows
    it reports its own flow's delivery at this moment if the leader's receiver
    has got as far (the same messages); otherwise it is reported when due."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, mf
    cdef Flow* f
    if a.n_mirroring == 0:
        return
    for i in range(a.n_skips):
        if a.skips[i].part < 0 or not a.skips[i].mirror:
            continue
        j = _lead_index(&a.skips[i], fi)
        if j < 0:
            continue
        mf = a.skips[i].flows[j]
        f = &s.flows[mf]
        if f.rcv_end >= 0 and f.rcv_nxt + virt_rcv_bytes(s, &a.skips[i], j) >= f.rcv_end:
            a.k.note_delivered(s, mf)


cdef bint _quiet(Sim* s, Skip* sk, int32_t going) noexcept nogil:
    """Every flow the mirror follows has left its partition (``going`` is leaving now)."""
    cdef int32_t i, lf
    for i in range(sk.n_flows):
        lf = sk.lead_flows[i]
        if lf >= 0 and lf != going and s.acc.active[lf]:
            return False
    return True


cdef void mirror_follow_idle(Sim* s, int32_t fi) noexcept nogil:
    """Flow fi leaves its partition (a connection with everything acknowledged,
    or a finished flow).  A mirror that follows a connection whose own flow has
    exactly the data the leader's had goes on following (its flow is idle too);
    once every flow it follows is idle it ends in the leader's final state
    (mirror_quiet_end).  Otherwise (a finished flow, whose completion the mirror
    cannot report at this moment, or data that differ) the two part ways."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, mf
    cdef Flow* f
    if a.n_mirroring == 0:
        return
    for i in range(a.n_skips):
        if a.skips[i].part < 0 or not a.skips[i].mirror:
            continue
        j = _lead_index(&a.skips[i], fi)
        if j < 0:
            continue
        mf = a.skips[i].flows[j]
        f = &s.flows[mf]
        if a.skips[i].wait_posts < 0 or not (s.flows[fi].persistent and f.persistent
                and f.size - f.snd_una == _lead_advance(s, &a.skips[i], j)):
            _mirror_part(s, i, 4)
        elif _quiet(s, &a.skips[i], fi):
            mirror_quiet_end(s, i)


cdef void mirror_quiet_end(Sim* s, int32_t slot) noexcept nogil:
    """The leader of the mirror in ``slot`` is quiescent: each of its flows has
    had all its data acknowledged and nothing of it is in flight.  The mirror ends
    exactly in that state: its flows take the leader's (all their data
    acknowledged, the leader's sender, receiver and congestion-control state), the
    packets it held from the moment it began are gone (they stood for packets the
    leader has delivered since), and its connections go idle.  If it holds queued
    packets (which the switches' buffers count), it parts as mirrors_end would."""
    cdef Accel* a = &s.acc
    cdef Skip* sk = &a.skips[slot]
    cdef int32_t P = sk.part, i, j, mf, lf
    cdef int64_t dt = s.now - sk.t0, B, D
    cdef Flow* f
    cdef Flow* g
    for i in range(s.n_ports):
        if a.port_part[i] == P and s.ports[i].qbytes_total > 0:
            _mirror_part(s, slot, 6)
            return
    _mirror_state(s, sk)
    _mirror_count(s, sk)
    for j in range(sk.n_flows):
        mf = sk.flows[j]
        lf = sk.lead_flows[j]
        if lf < 0:
            continue
        f = &s.flows[mf]
        g = &s.flows[lf]
        B = f.size - f.snd_una
        D = f.size - g.size             # offset of the mirror's byte stream against the leader's
        f.skip_shift = B
        f.snd_una = f.size
        f.snd_nxt = f.size
        if g.max_sent + D > f.max_sent:
            f.max_sent = g.max_sent + D
        f.rcv_nxt = g.rcv_nxt + D
        f.rcv_bytes += B
        f.milestone = g.milestone + D
        f.last_nack = g.last_nack + D if g.last_nack > 0 else g.last_nack
        f.nack_timer = g.nack_timer
        f.next_avail = g.next_avail
        f.rto_mark = g.rto_mark + D
        f.rto_armed = 0                 # its held timer goes with its held packets
        _count_packets(s, sk, f, B, not _twin_paths(s, sk, j))
    for j in range(sk.n_flows):         # (as _advance_flows: the CC state once every port's advance is known)
        if sk.lead_flows[j] < 0:
            continue
        f = &s.flows[sk.flows[j]]
        a.k.cc[f.cc].shift(s, sk.flows[j], f.skip_shift, dt)
        _shift_window(s, sk.flows[j], f.skip_shift, dt, sk.t0)
    _shift_queues(s, P, dt)
    _return_quiet(s, sk, P, dt)
    _clear_port_shift(s, sk)
    _report_flows(s, slot, True)        # messages not reported yet, deliveries; the leader's CC state
    sk = &a.skips[slot]
    for j in range(sk.n_flows):         # and what cc_vector leaves out: HPCC's INT records, the rate window
        if sk.lead_flows[j] >= 0:
            _copy_twin(s, sk.flows[j], sk.lead_flows[j])
    _release_slot(s, sk, P)
    _kick_ports(s, P)
    _count_end(s, sk, dt, True)
    a.mirrors_quiet += 1
    for j in range(sk.n_flows):         # its connections are idle, as the leader's
        mf = sk.flows[j]
        if sk.lead_flows[j] >= 0 and a.active[mf] and s.flows[mf].persistent:
            conn_idle(s, mf)
            part_deactivate(s, mf)


cdef void _copy_twin(Sim* s, int32_t mf, int32_t lf) noexcept nogil:
    """Flow mf (a mirror's, quiescent with its leader's flow lf) takes the rest of lf's
    state, with its own byte offsets: HPCC's once-per-RTT mark and its previous INT
    record per hop, its ports' byte counters (twins' ports have carried the same
    bytes: the full run has them equal), round-robin positions and per-packet event
    records, and its rate window (snd_una marks moved by the streams' offset)."""
    cdef Flow* f = &s.flows[mf]
    cdef Flow* g = &s.flows[lf]
    cdef int64_t D = f.snd_una - g.snd_una, unit = 128 * <int64_t>s.cc.int_multi, du
    cdef int32_t j, h, n
    cdef int64_t C = s.acc.lmask + 1
    cdef HpccState* hf
    cdef HpccState* hg
    cdef FlowWin* wf = &s.acc.win[mf]
    cdef FlowWin* wg = &s.acc.win[lf]
    cdef int64_t* arrs[6]
    cdef int64_t k
    cdef Port* pf
    cdef Port* pg
    for j in range(f.path_len + f.rpath_len if f.path_len + f.rpath_len == g.path_len + g.rpath_len else 0):
        pf = &s.ports[s.paths[f.path_off + j]]  # (data then ACK ports: contiguous in s.paths)
        pg = &s.ports[s.paths[g.path_off + j]]
        pf.rrlast = pg.rrlast                   # the NIC's round-robin over its queue pairs, a switch's over queues
        pf.wakes_pending = pg.wakes_pending
        pf.wake_per_pkt = pg.wake_per_pkt
        pf.txd_per_pkt = pg.txd_per_pkt
        pf.txd_samples = pg.txd_samples
        pf.tx_bytes = pg.tx_bytes               # twins' ports have carried the same: the INT records the
        pf.tx_packets = pg.tx_packets           # leader's flow keeps then fit them exactly
    if f.cc == CC_HPCC and g.cc == CC_HPCC and f.path_len == g.path_len:
        hf = &(<HpccState*>s.cc_st[<int>CC_HPCC])[mf]
        hg = &(<HpccState*>s.cc_st[<int>CC_HPCC])[lf]
        memcpy(hf, hg, sizeof(HpccState))
        if hf.last_update_seq > 0:
            hf.last_update_seq += D
        n = f.path_len - 1
        for j in range(n if n < INT_MAX_HOP else INT_MAX_HOP):
            h = j + (n - 1 - j) // INT_MAX_HOP * INT_MAX_HOP
            if 1 + h >= f.path_len:
                continue
            du = (s.ports[s.paths[f.path_off + 1 + h]].tx_bytes // unit
                  - s.ports[s.paths[g.path_off + 1 + h]].tx_bytes // unit)
            hf.hop[j].bytes = <uint32_t>((<int64_t>hf.hop[j].bytes + du) & 0xFFFFF)
    if wf.val == NULL or wg.val == NULL:
        return
    arrs[0] = wf.val
    arrs[1] = wf.t
    arrs[2] = wf.una
    arrs[3] = wf.qmax
    arrs[4] = wf.qmin
    arrs[5] = wf.idl
    memcpy(wf, wg, sizeof(FlowWin))
    wf.val = arrs[0]
    wf.t = arrs[1]
    wf.una = arrs[2]
    wf.qmax = arrs[3]
    wf.qmin = arrs[4]
    wf.idl = arrs[5]
    if wg.n < C:
        C = wg.n                        # the slots holding samples (the deques' too: at most one entry each)
    memcpy(wf.val, wg.val, C * sizeof(int64_t))
    memcpy(wf.t, wg.t, C * sizeof(int64_t))
    memcpy(wf.qmax, wg.qmax, C * sizeof(int64_t))
    memcpy(wf.qmin, wg.qmin, C * sizeof(int64_t))
    memcpy(wf.idl, wg.idl, C * sizeof(int64_t))
    for k in range(C):
        wf.una[k] = wg.una[k] + D
    wf.act_una = wg.act_una + D


cdef void _return_quiet(Sim* s, Skip* sk, int32_t P, int64_t dt) noexcept nogil:
    """The held events of a mirror ending quiescent: its flows' packets in flight
    are freed (each one's wire counts one arrival less) and their retransmission
    timers dropped, and so are its ports' transmission ends and NIC wake-ups (they
    stood for the leader's, which have passed: the ports are idle, as the leader's);
    the rest (PFC frames, CC timers) go back into the heap dt later, in order."""
    cdef int64_t k
    cdef int32_t fl
    cdef Event e
    qsort(sk.ev, sk.n_ev, sizeof(Event), _ev_cmp)
    for k in range(sk.n_ev):
        e = sk.ev[k]
        if e.kind == EV_ARRIVE:
            fl = s.pkts[e.b].flow
            if s.pkts[e.b].kind != PK_PFC and fl >= 0 and _lead_of(sk, fl) >= 0:
                s.ports[s.ports[e.a].peer].wire_heap -= 1
                s.acc.k.pkt_free(s, <int32_t>e.b)
                continue
            _shift_packet(s, <int32_t>e.b, dt)
        elif e.kind == EV_RTO and _lead_of(sk, e.a) >= 0:
            continue
        elif e.kind == EV_TX_DONE and s.acc.port_part[e.a] == P:
            s.ports[e.a].busy = 0       # its serialisation stood for one the leader has ended
            continue
        elif e.kind == EV_NIC_WAKE and s.acc.port_part[e.a] == P:
            s.ports[e.a].wake_t = -1    # and so did its wake-up: the leader's NIC has nothing to send
            continue
        if heap_push(s, e.t + dt, e.kind, e.a, e.b) != 0:
            s.fail = 1


cdef inline int32_t _lead_of(Skip* sk, int32_t mf) noexcept nogil:
    """The index of the mirror's flow mf if it follows a leader's flow, else -1."""
    cdef int32_t i
    for i in range(sk.n_flows):
        if sk.flows[i] == mf:
            return i if sk.lead_flows[i] >= 0 else -1
    return -1


cdef bint _connections(Sim* s, Skip* sk) noexcept nogil:
    """Every flow of the mirror is a connection (whose message ends and idle spells it
    follows, to an exact end when the leader is quiescent: mirror_quiet_end)."""
    cdef int32_t i
    for i in range(sk.n_flows):
        if not s.flows[sk.flows[i]].persistent:
            return False
    return True


cdef bint _follows_all(Sim* s, Skip* sk, int32_t P) noexcept nogil:
    """The mirror follows exactly partition P: every flow of P, and no active flow elsewhere
    (a partition id is reused once its flows are gone)."""
    cdef int32_t i, lf
    for i in range(sk.n_flows):
        lf = sk.lead_flows[i]
        if lf >= 0 and s.acc.active[lf] and s.acc.part_of[lf] != P:
            return False
    return _all_led(s, sk, P)


cdef int32_t mirror_finish(Sim* s, int32_t lead) noexcept nogil:
    """The leader has converged: its mirrors end as a replayed convergence would
    (its state), then fast-forward at its steady goodputs.  Returns how many.  A
    mirror of connections goes on following instead: the leader's steady skip moves
    its bytes as exactly (virt_una), and ending now would leave it its own pipeline
    of packets in flight, not the leader's, so that the twins drift apart."""
    cdef Accel* a = &s.acc
    cdef int32_t i, j, k, lf, done = 0
    cdef Skip* sk
    cdef Skip* lsk = NULL
    if a.n_mirroring == 0 or lead < 0:
        return 0
    for i in range(a.n_skips):
        sk = &a.skips[i]
        if sk.part < 0 or not sk.mirror or sk.lead_part != lead or not _follows_all(s, sk, lead):
            continue
        if _connections(s, sk):
            continue                    # it follows the leader's steady skip too, to an exact end
        for j in range(sk.n_flows):
            lf = sk.lead_flows[j]
            sk.memo_gp[j] = 0.0
            if lf >= 0:
                k = skip_find(s, lf, &lsk)
                sk.memo_gp[j] = lsk.goodput[k] if k >= 0 else _steady_goodput(s, lf)
        a.mirrors_done += 1
        done += 1
        skip_end(s, i, True)
    return done


# ---- flows that join a leader and its mirror at the same moment (an all-to-all's connections
# resuming beside a ring's, on each of the twins)

cdef bint _ports_free_or(Sim* s, int32_t fi, int32_t P) noexcept nogil:
    """Every port of flow fi is in partition P, or in none with nothing of a flow in
    the heap: nothing queued, no data packet being serialised (a control frame may
    be: its end only completes it, as on the twin's port) and no NIC wake-up in the
    heap; so the partition, when frozen, holds everything of fi."""
    cdef int32_t* ports
    cdef int32_t n, i, p
    cdef Port* pt
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        p = s.acc.port_part[ports[i]]
        if p == P:
            continue
        if p >= 0:
            return False
        pt = &s.ports[ports[i]]
        if pt.qbytes_total > 0 or (pt.busy and not pt.tx_ctrl) or (pt.wake_t >= 0 and not pt.wake_lazy):
            return False
    return True


cdef int32_t _only_part(Sim* s, int32_t fi) noexcept nogil:
    """The one partition flow fi's ports touch; -1 if none, -2 if several."""
    cdef int32_t* ports
    cdef int32_t n, i, p, P = -1
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        p = s.acc.port_part[ports[i]]
        if p >= 0 and P >= 0 and p != P:
            return -2
        if p >= 0:
            P = p
    return P


cdef int _expect_join(Sim* s, int32_t slot, int32_t fi) noexcept nogil:
    """The leader's flow fi joins the partition the mirror in ``slot`` follows: the
    mirror waits, until this moment's callbacks are done, for its twin to join its own
    (mirror_admit); a check then parts the two if it did not.  -1 if memory ran out."""
    cdef Skip* sk = &s.acc.skips[slot]
    cdef int32_t i
    for i in range(sk.n_join):
        if sk.join_lead[i] == fi:
            return 0
    if sk.n_join == sk.cap_join:
        sk.join_lead = <int32_t*>realloc(sk.join_lead, (sk.cap_join * 2 + 8) * sizeof(int32_t))
        if sk.join_lead == NULL:
            s.fail = 1
            return -1
        sk.cap_join = sk.cap_join * 2 + 8
    sk.join_lead[sk.n_join] = fi
    sk.n_join += 1
    if heap_push(s, s.now, EV_MSG_NOTE, -1 - slot, sk.token) != 0:
        s.fail = 1
        return -1
    return 0


cdef void mirrors_on_join(Sim* s, int32_t fi) noexcept nogil:
    """Flow fi starts sending (part_activate, before the merge).  Mirrors that follow a
    partition its ports touch, unless they follow fi and all of that partition
    (mirror_join), part ways, except when fi joins exactly one partition through
    ports otherwise idle: then each of its mirrors waits for fi's twin to join it
    at this moment (_expect_join)."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, P
    cdef Skip* sk
    if a.n_mirroring == 0:
        return
    P = _only_part(s, fi)
    if P == -1:
        return
    if P == -2:
        a.join_why = 10
        _flow_ports(s, fi, &ports, &n)
        for i in range(n):
            if a.port_part[ports[i]] >= 0:
                mirrors_end_but(s, a.port_part[ports[i]], fi)
        a.join_why = 1
        return
    for i in range(a.n_skips):
        sk = &a.skips[i]
        if not _mirror_of(s, sk, P):
            continue
        if _lead_index(sk, fi) >= 0:
            if not _all_led(s, sk, P):
                _mirror_part(s, i, 1)
            continue
        if _expect_join(s, i, fi) != 0:
            return


cdef bint _same_cc(Sim* s, int32_t fi, int32_t g) noexcept nogil:
    cdef double u[4]
    cdef double v[4]
    cdef int k
    s.acc.k.cc_vector(s, fi, &u[0])
    s.acc.k.cc_vector(s, g, &v[0])
    for k in range(4):
        if u[k] != v[k]:
            return False
    return True


cdef bint _twin_join(Sim* s, Skip* sk, int32_t fi, int32_t g, int64_t extra) noexcept nogil:
    """Flow fi, joining the mirror's partition (``extra`` bytes about to be posted to
    it), is the twin of the leader's flow g that joined the leader's at this moment:
    the same kind, data left and congestion-control state, and port by port the same
    links shared with the same flows (those of the mirror following those of the
    leader; leader's flows whose twins have not joined yet are left to their own
    check)."""
    cdef Accel* a = &s.acc
    cdef Flow* f = &s.flows[fi]
    cdef Flow* h = &s.flows[g]
    cdef int32_t* fp
    cdef int32_t* gp
    cdef int32_t n, m, i, k, q, j, cnt, x
    cdef bint found
    if (f.persistent != h.persistent or f.path_len != h.path_len or f.rpath_len != h.rpath_len
            or f.cc != h.cc or f.size + extra - f.snd_una != h.size - virt_una(s, g) or not _same_cc(s, fi, g)):
        return False
    _flow_ports(s, fi, &fp, &n)
    _flow_ports(s, g, &gp, &m)
    for i in range(n):
        if (s.ports[fp[i]].rate_bps != s.ports[gp[i]].rate_bps
                or s.ports[fp[i]].delay_ps != s.ports[gp[i]].delay_ps):
            return False
        cnt = 0
        for k in range(a.port_nf[gp[i]]):
            q = a.port_flows[gp[i]][k]
            if q == g:
                continue
            j = _lead_index(sk, q)
            if j < 0:
                continue
            found = False
            for x in range(a.port_nf[fp[i]]):
                if a.port_flows[fp[i]][x] == sk.flows[j]:
                    found = True
                    break
            if not found:
                return False
            cnt += 1
        if cnt != a.port_nf[fp[i]]:
            return False
    return True


cdef int32_t mirror_awaits(Sim* s, int32_t fi, int64_t extra, int32_t* which) noexcept nogil:
    """The slot of a mirror that waits for flow fi (about to get ``extra`` bytes) to join
    it as the twin of a leader's flow (which[0]: its index in join_lead), or -1."""
    cdef Accel* a = &s.acc
    cdef int32_t P, i, k
    cdef Skip* sk
    if a.n_mirroring == 0 or a.active[fi]:
        return -1
    P = _only_part(s, fi)
    if P < 0 or a.part_skip[P] < 0:
        return -1
    i = a.part_skip[P]
    sk = &a.skips[i]
    if not sk.mirror or sk.n_join == 0 or not _ports_free_or(s, fi, P):
        return -1
    for k in range(sk.n_join):
        if _twin_join(s, sk, fi, sk.join_lead[k], extra):
            which[0] = k
            return i
    return -1


cdef int32_t mirror_admit(Sim* s, int32_t fi, int32_t* which) noexcept nogil:
    """Flow fi starts sending (part_activate, before the merge): the slot of the
    mirror that takes it as the twin of the leader's flow join_lead[which[0]] joining
    at this moment (mirror_add follows once it is in the partition), or -1."""
    return mirror_awaits(s, fi, 0, which)


cdef void mirror_add(Sim* s, int32_t slot, int32_t fi, int32_t k) noexcept nogil:
    """Flow fi has joined the partition of the mirror in ``slot`` (mirror_admit: the
    twin of join_lead[k]): it follows its twin from now on, as the mirror's other
    flows follow theirs.  Its times are set back by the time the mirror has run, so
    that the end of the mirror moves them by the time since it joined."""
    cdef Accel* a = &s.acc
    cdef Skip* sk = &a.skips[slot]
    cdef int32_t n, g, j
    cdef Skip* lsk = NULL
    cdef Flow* f = &s.flows[fi]
    cdef int64_t d = s.now - sk.t0
    if sk.part < 0 or not sk.mirror or k < 0 or k >= sk.n_join or not a.active[fi] or a.part_of[fi] != sk.part:
        if sk.part >= 0 and sk.mirror:
            _mirror_part(s, slot, 9)
        return
    g = sk.join_lead[k]
    sk.n_join -= 1
    sk.join_lead[k] = sk.join_lead[sk.n_join]
    n = sk.n_flows + 1
    if sk.cap_flows < n:                # (flows and goodput keep their capacity: _skip_alloc reuses it)
        sk.flows = <int32_t*>realloc(sk.flows, (2 * n + 8) * sizeof(int32_t))
        sk.goodput = <double*>realloc(sk.goodput, (2 * n + 8) * sizeof(double))
        sk.cap_flows = 2 * n + 8
    sk.memo_cc = <double*>realloc(sk.memo_cc, 4 * n * sizeof(double))
    sk.memo_gp = <double*>realloc(sk.memo_gp, n * sizeof(double))
    sk.lead_flows = <int32_t*>realloc(sk.lead_flows, n * sizeof(int32_t))
    sk.lead_una0 = <int64_t*>realloc(sk.lead_una0, n * sizeof(int64_t))
    sk.lead_rcv0 = <int64_t*>realloc(sk.lead_rcv0, n * sizeof(int64_t))
    if (sk.flows == NULL or sk.goodput == NULL or sk.memo_cc == NULL or sk.memo_gp == NULL
            or sk.lead_flows == NULL or sk.lead_una0 == NULL or sk.lead_rcv0 == NULL):
        s.fail = 1
        return
    n -= 1
    sk.flows[n] = fi
    sk.goodput[n] = 0.0
    sk.memo_gp[n] = 0.0
    for j in range(4):
        sk.memo_cc[4 * n + j] = 0.0
    sk.lead_flows[n] = g
    sk.lead_una0[n] = virt_una(s, g)
    j = skip_find(s, g, &lsk)
    sk.lead_rcv0[n] = s.flows[g].rcv_nxt + (0 if j < 0 else virt_rcv_bytes(s, lsk, j))
    sk.n_flows = n + 1
    _mirror_mark(s, sk, n)
    f.next_avail -= d
    if f.nack_timer > 0:
        f.nack_timer -= d
    a.mirror_joins += 1
