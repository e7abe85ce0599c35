# Virtual time inside a skip (included by accel.pyx).  Contract: while a flow's partition
# is fast-forwarded its bytes as of now are its own plus skip_bytes (virt_una); its
# connection's message end and its receiver's rcv_end are reported at the virtual times its
# goodput reaches them (note_plan, rcv_plan plan an EV_MSG_NOTE; msg_note_due, rcv_note_due
# report it if still due), and data posted to it may lengthen the skip (skip_extend).


cdef int64_t virt_bytes(Sim* s, Skip* sk, int32_t i) noexcept nogil:
    """Bytes flow sk.flows[i] has moved in its skip as of now: skip_bytes, or in a
    mirror exactly what its leader's flow has had acknowledged since the mirror
    began (not rounded to packets: the twins' messages end at the same bytes),
    up to its own posted data."""
    cdef Flow* f
    cdef int64_t B
    if sk.mirror and sk.lead_flows[i] >= 0:
        f = &s.flows[sk.flows[i]]
        B = virt_una(s, sk.lead_flows[i]) - sk.lead_una0[i]
        if B > f.size - f.snd_una:
            B = f.size - f.snd_una
        return B if B > 0 else 0
    if _is_onoff(sk, i):
        return onoff_acked(s, sk, i, s.now)     # (beyond the tail: its last packets' ACKs)
    return skip_bytes(s, sk, i, s.now - sk.t0)


cdef int64_t virt_rcv_bytes(Sim* s, Skip* sk, int32_t i) noexcept nogil:
    """virt_bytes at the receiver: in a mirror, what its leader's receiver has
    got since the mirror began (ahead of its sender by what is in flight)."""
    cdef Flow* f
    cdef Skip* lsk = NULL
    cdef int32_t lf = sk.lead_flows[i] if sk.mirror else -1, k
    cdef int64_t B
    if lf < 0:
        if _is_onoff(sk, i):
            return onoff_delivered(s, sk, i, s.now)
        return skip_bytes(s, sk, i, s.now - sk.t0)
    f = &s.flows[sk.flows[i]]
    k = skip_find(s, lf, &lsk)
    B = s.flows[lf].rcv_nxt + (0 if k < 0 else virt_rcv_bytes(s, lsk, k)) - sk.lead_rcv0[i]
    if B > f.size - f.rcv_nxt:
        B = f.size - f.rcv_nxt
    return B if B > 0 else 0


cdef int64_t virt_una(Sim* s, int32_t fi) noexcept nogil:
    """snd_una, or inside a fast-forward what it is at the current time."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    if i < 0:
        return s.flows[fi].snd_una
    return s.flows[fi].snd_una + virt_bytes(s, sk, i)


cdef bint note_plan(Sim* s, int32_t fi, int64_t after=-1) noexcept nogil:
    """A skipping connection's pending message end: report it now if passed,
    else plan an EV_MSG_NOTE at the virtual time it is acknowledged if that is
    within the skip (and not before ``after``: a skip that was extended plans
    only the notes its old end left out).  False if the flow is not in a skip."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    cdef int64_t need, dt
    if i < 0:
        return False
    if not f.persistent or f.msg_end < 0:
        return True
    need = f.msg_end - f.snd_una
    if need <= virt_bytes(s, sk, i):
        if after < 0:
            s.acc.k.note_message(s, fi)
        return True
    if _is_onoff(sk, i):
        if sk.goodput[i] > 0 and need <= f.size - f.snd_una:
            dt = onoff_note_time(s, sk, i, need, False)
            if sk.t0 <= dt < sk.t1 and dt >= after:
                if heap_push(s, dt, EV_MSG_NOTE, fi, sk.note_token) != 0:
                    s.fail = 1
        return True
    if sk.goodput[i] <= 0 or need > f.size - f.snd_nxt:
        return True                 # not before the skip ends: the ACKs after it will tell
    need = (need + s.p.mtu - 1) // s.p.mtu * s.p.mtu
    dt = <int64_t>(<double>need / sk.goodput[i]) + 1
    if sk.t0 + dt < sk.t1 and sk.t0 + dt >= after:
        if heap_push(s, sk.t0 + dt, EV_MSG_NOTE, fi, sk.note_token) != 0:
            s.fail = 1
    return True


cdef bint rcv_plan(Sim* s, int32_t fi, int64_t after=-1) noexcept nogil:
    """note_plan at the receiver: a skipping flow's rcv_end is reported now if passed,
    else an EV_MSG_NOTE (b = -1 - note token) is planned at the virtual time the
    steady goodput delivers it, if within the skip.  False if not in a skip."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    cdef int64_t need, dt
    if i < 0:
        return False
    if f.rcv_end < 0:
        return True
    need = f.rcv_end - f.rcv_nxt
    if need <= virt_rcv_bytes(s, sk, i):
        if after < 0:
            s.acc.k.note_delivered(s, fi)
        return True
    if _is_onoff(sk, i):
        if sk.goodput[i] > 0 and need <= f.size - f.rcv_nxt:
            dt = onoff_note_time(s, sk, i, need, True)
            if sk.t0 <= dt < sk.t1 and dt >= after:
                if heap_push(s, dt, EV_MSG_NOTE, fi, -1 - sk.note_token) != 0:
                    s.fail = 1
        return True
    if sk.goodput[i] <= 0 or need > f.size - f.snd_nxt:
        return True                 # not before the skip ends: the packets after it will tell
    need = (need + s.p.mtu - 1) // s.p.mtu * s.p.mtu
    dt = <int64_t>(<double>need / sk.goodput[i]) + 1
    if sk.t0 + dt < sk.t1 and sk.t0 + dt >= after:
        if heap_push(s, sk.t0 + dt, EV_MSG_NOTE, fi, -1 - sk.note_token) != 0:
            s.fail = 1
    return True


cdef bint rcv_note_due(Sim* s, int32_t fi, int64_t token) noexcept nogil:
    """A planned delivery: report it if its skip still runs and the receiver has the bytes."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    if i < 0 or sk.note_token != token or f.rcv_end < 0:
        return False
    if f.rcv_nxt + virt_rcv_bytes(s, sk, i) < f.rcv_end:
        return False
    s.acc.k.note_delivered(s, fi)
    return True


cdef bint msg_note_due(Sim* s, int32_t fi, int64_t token) noexcept nogil:
    """EV_MSG_NOTE: report the message if its skip still runs and it is acknowledged."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    cdef Flow* f = &s.flows[fi]
    if i < 0 or sk.note_token != token or f.msg_end < 0:
        return False
    if f.snd_una + virt_bytes(s, sk, i) < f.msg_end:
        return False
    s.acc.k.note_message(s, fi)
    return True


cdef bint skip_extend(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil:
    """Data posted to a connection that is sending through a (non-memo) skip:
    it joins the flow's stream and the skip may last longer (until the data of
    some flow runs short, or a known flow start).  False if the flow is not
    sending through a skip (then the caller skips back)."""
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk), j, slot
    cdef Flow* f
    cdef int64_t t_end, t
    if i < 0 or sk.memo or sk.goodput[i] <= 0:
        return False
    if _is_onoff(sk, i):
        onoff_resume(s, sk, i)          # a member that had moved all it had starts a new run now
    s.flows[fi].size += nbytes
    t_end = onoff_bound(s, sk, sk.t_limit)      # (the first flow running short, members aside)
    if t_end > sk.t1:
        slot = s.acc.part_skip[sk.part]
        t = sk.t1
        sk.t1 = t_end
        sk.token += 1
        s.acc.skip_extends += 1
        if heap_push(s, t_end, EV_SKIP_END, slot, sk.token) != 0:
            s.fail = 1
        for j in range(sk.n_flows):     # message ends the old end left to the ACKs
            note_plan(s, sk.flows[j], t)
            rcv_plan(s, sk.flows[j], t)
    if _is_onoff(sk, i):                # its message ends in the new data (a note planned twice is reported once)
        note_plan(s, fi, s.now)
        rcv_plan(s, fi, s.now)
    return True
