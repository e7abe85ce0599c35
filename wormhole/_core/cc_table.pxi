# Congestion control as one table of operations (CcOps, defs.pxd): a row per
# algorithm, indexed by its CcKind, chosen per flow (Flow.cc).  The kernel and
# the accelerator call the table and nothing else that is algorithm-specific;
# the update rules themselves are pure functions of a flow's state (cc.pxd).
#
# Included by kernel.pyx: the operations use the kernel's change_rate and the
# accelerator's rate_timer hook (AccelHooks, defs.pxd).


cdef CcOps CC_TABLE[<int>N_CC_KINDS]


cdef inline char* cc_state_of(Sim* s, int32_t fi, int kind) noexcept nogil:
    return <char*>s.cc_st[kind] + <size_t>fi * CC_TABLE[kind].state_size


cdef void _cc_nop(Sim* s, int32_t fi) noexcept nogil:
    pass


cdef void _cc_nop_ack(Sim* s, int32_t fi, int32_t pk) noexcept nogil:
    pass


cdef void _cc_nop_timer(Sim* s, int32_t fi, int64_t b) noexcept nogil:
    pass


cdef void _cc_nop_shift(Sim* s, int32_t fi, int64_t nbytes, int64_t dt) noexcept nogil:
    pass


cdef void _cc_nop_vec(Sim* s, int32_t fi, double* v) noexcept nogil:
    pass


cdef object _cc_no_dict(Sim* s, int32_t fi):
    return {}


cdef int64_t _cc_pacing_rate(Sim* s, int32_t fi) noexcept nogil:
    return s.flows[fi].rate


cdef void _cc_row(int kind, const char* name, int int_mode, int int_bytes, size_t state_size,
                  int vec_ints) noexcept:
    """A row with every operation a no-op; the algorithm's section sets its own."""
    cdef CcOps* o = &CC_TABLE[kind]
    o.name = name
    o.int_mode = int_mode
    o.int_bytes = int_bytes
    o.state_size = state_size
    o.vec_ints = <uint8_t>vec_ints
    o.fixed_timers = 0
    o.timer_rate = 0
    o.init = _cc_nop
    o.on_ack = _cc_nop_ack
    o.on_timer = _cc_nop_timer
    o.on_rto = _cc_nop
    o.on_finish = _cc_nop
    o.shift = _cc_nop_shift
    o.get_vec = _cc_nop_vec
    o.set_vec = _cc_nop_vec
    o.as_dict = _cc_no_dict
    o.send_rate = _cc_pacing_rate
    o.steady_rate = NULL            # send_rate, unless the algorithm's section sets its own

# ------------------------------------------------------------------ DCQCN

cdef inline DcqcnState* _dcqcn(Sim* s, int32_t fi) noexcept nogil:
    return &(<DcqcnState*>s.cc_st[<int>CC_DCQCN])[fi]


cdef inline void dcqcn_timer(Sim* s, int32_t fi, int timer, int64_t delay) noexcept nogil:
    """(Re)arm one of a flow's DCQCN timers; a pending one becomes stale."""
    cdef DcqcnState* st = _dcqcn(s, fi)
    st.tok[timer] += 1
    if heap_push(s, s.now + delay, EV_CC_TIMER, fi, st.tok[timer] * 4 + timer) != 0:
        s.fail = 1


cdef void _dcqcn_init(Sim* s, int32_t fi) noexcept nogil:
    dcqcn_init(_dcqcn(s, fi), s.flows[fi].max_rate)


cdef void _dcqcn_ack(Sim* s, int32_t fi, int32_t pk) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    if s.pkts[pk].ecn and dcqcn_cnp(_dcqcn(s, fi), &s.cc, &f.rate) and f.finish < 0:
        dcqcn_timer(s, fi, TM_ALPHA, s.cc.t_alpha)
        dcqcn_timer(s, fi, TM_DECREASE, s.cc.t_decrease + 1000)


cdef void _dcqcn_timer_fire(Sim* s, int32_t fi, int64_t b) noexcept nogil:
    cdef int timer = <int>(b & 3)
    cdef DcqcnState* st = _dcqcn(s, fi)
    cdef Flow* f = &s.flows[fi]
    if (b >> 2) != st.tok[timer]:
        s.stale_events += 1
        s.stale_by[<int>EV_CC_TIMER] += 1
        return
    if timer == TM_ALPHA:
        dcqcn_alpha_update(st, &s.cc)
        dcqcn_timer(s, fi, TM_ALPHA, s.cc.t_alpha)
    elif timer == TM_DECREASE:
        dcqcn_timer(s, fi, TM_DECREASE, s.cc.t_decrease)
        if dcqcn_decrease(st, &s.cc, &f.rate):
            dcqcn_timer(s, fi, TM_INCREASE, s.cc.t_increase)
    else:
        dcqcn_timer(s, fi, TM_INCREASE, s.cc.t_increase)
        if s.hooks.rate_timer(s, fi):
            return                  # a steady flow with cuts: the timer is re-armed, not fired
        dcqcn_increase(st, &s.cc, &f.rate, f.max_rate)


cdef void _dcqcn_finish(Sim* s, int32_t fi) noexcept nogil:
    cdef DcqcnState* st = _dcqcn(s, fi)
    cdef int k
    for k in range(3):
        st.tok[k] += 1              # cancel the flow's timers


cdef void _dcqcn_get(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef DcqcnState* st = _dcqcn(s, fi)
    v[1] = st.target_rate
    v[2] = st.alpha
    v[3] = st.rp_stage


cdef void _dcqcn_set(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef DcqcnState* st = _dcqcn(s, fi)
    st.target_rate = <int64_t>v[1]
    st.alpha = v[2]
    st.rp_stage = <int32_t>v[3]


cdef object _dcqcn_dict(Sim* s, int32_t fi):
    cdef DcqcnState* st = _dcqcn(s, fi)
    return {"alpha": st.alpha, "target_rate": st.target_rate, "rp_stage": st.rp_stage, "first_cnp": st.first_cnp}

# ------------------------------------------------------------------ HPCC

cdef inline HpccState* _hpcc(Sim* s, int32_t fi) noexcept nogil:
    return &(<HpccState*>s.cc_st[<int>CC_HPCC])[fi]


cdef void _hpcc_init(Sim* s, int32_t fi) noexcept nogil:
    hpcc_init(_hpcc(s, fi), s.flows[fi].max_rate)


cdef void _hpcc_ack(Sim* s, int32_t fi, int32_t pk) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    cdef Flow* f = &s.flows[fi]
    cdef int64_t nr
    if hpcc_on_ack(_hpcc(s, fi), &s.cc, &s.ints[<int64_t>pk * INT_MAX_HOP], pkt.nhop, pkt.seq,
                   f.snd_nxt, f.max_rate, f.base_rtt // 1000, f.win, &nr):
        change_rate(s, fi, nr)


cdef void _hpcc_shift(Sim* s, int32_t fi, int64_t nbytes, int64_t dt) noexcept nogil:
    """After a skip: the once-per-RTT mark moves with the flow's bytes, and the stored
    per-hop records (the previous INT sample) with the clock and its ports' counters, so
    that the first sample after the skip measures no skipped interval (int_hops.pxd)."""
    cdef HpccState* st = _hpcc(s, fi)
    cdef Flow* f = &s.flows[fi]
    if st.last_update_seq > 0:
        st.last_update_seq += nbytes
        int_hops_shift(s, &st.hop[0], f.path_len - 1, f, dt)


cdef void _hpcc_get(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef HpccState* st = _hpcc(s, fi)
    v[1] = st.cur_rate
    v[2] = st.u
    v[3] = st.inc_stage


cdef void _hpcc_set(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef HpccState* st = _hpcc(s, fi)
    st.cur_rate = <int64_t>v[1]
    st.u = v[2]
    st.inc_stage = <int32_t>v[3]
    st.last_update_seq = 0          # the next ACK only records fresh INT hops (a new first RTT)


cdef int64_t _hpcc_steady_rate(Sim* s, int32_t fi) noexcept nogil:
    """Rc, the rate the last once-per-RTT update committed: with fast react every ACK
    sets the sending rate from Rc and that ACK's INT sample, so the sending rate
    scatters around Rc by the per-packet noise of U (measured: gpt13b 32 GPUs in 2:1
    rail segments, a spine flow's rate spread 6.0-7.9% over 2,000 ACKs, Rc's 3.1-4.0%,
    same mean) while Rc moves only as the control loop does."""
    return _hpcc(s, fi).cur_rate


cdef object _hpcc_dict(Sim* s, int32_t fi):
    cdef HpccState* st = _hpcc(s, fi)
    return {"u": st.u, "cur_rate": st.cur_rate, "inc_stage": st.inc_stage, "last_update_seq": st.last_update_seq,
            "hops": [(st.hop[k].time, st.hop[k].bytes, st.hop[k].qlen, st.hop[k].rate_bps) for k in range(5)]}

# ------------------------------------------------------------------ TIMELY

cdef inline TimelyState* _timely(Sim* s, int32_t fi) noexcept nogil:
    return &(<TimelyState*>s.cc_st[<int>CC_TIMELY])[fi]


cdef void _timely_init(Sim* s, int32_t fi) noexcept nogil:
    timely_init(_timely(s, fi), s.flows[fi].max_rate)


cdef void _timely_ack(Sim* s, int32_t fi, int32_t pk) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    cdef Flow* f = &s.flows[fi]
    timely_on_ack(_timely(s, fi), &s.cc, pkt.seq, f.snd_nxt, s.now // 1000 - pkt.ts // 1000, f.max_rate, &f.rate)


cdef void _timely_shift(Sim* s, int32_t fi, int64_t nbytes, int64_t dt) noexcept nogil:
    cdef TimelyState* st = _timely(s, fi)
    if st.last_update_seq > 0:
        st.last_update_seq += nbytes


cdef void _timely_get(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef TimelyState* st = _timely(s, fi)
    v[1] = st.cur_rate
    v[2] = st.rtt_diff
    v[3] = st.inc_stage


cdef void _timely_set(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef TimelyState* st = _timely(s, fi)
    st.cur_rate = <int64_t>v[1]
    st.rtt_diff = v[2]
    st.inc_stage = <int32_t>v[3]
    st.last_update_seq = 0          # the next ACK only records a fresh RTT


cdef object _timely_dict(Sim* s, int32_t fi):
    cdef TimelyState* st = _timely(s, fi)
    return {"cur_rate": st.cur_rate, "inc_stage": st.inc_stage, "last_rtt": st.last_rtt, "rtt_diff": st.rtt_diff}

# ------------------------------------------------------------------ DCTCP

cdef inline DctcpState* _dctcp(Sim* s, int32_t fi) noexcept nogil:
    return &(<DctcpState*>s.cc_st[<int>CC_DCTCP])[fi]


cdef void _dctcp_init(Sim* s, int32_t fi) noexcept nogil:
    dctcp_init(_dctcp(s, fi))


cdef void _dctcp_ack(Sim* s, int32_t fi, int32_t pk) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    cdef Flow* f = &s.flows[fi]
    dctcp_on_ack(_dctcp(s, fi), &s.cc, pkt.seq, pkt.ecn, f.snd_nxt, f.max_rate, &f.rate)


cdef void _dctcp_shift(Sim* s, int32_t fi, int64_t nbytes, int64_t dt) noexcept nogil:
    cdef DctcpState* st = _dctcp(s, fi)
    if st.last_update_seq > 0:
        st.last_update_seq += nbytes
    if st.high_seq > 0:
        st.high_seq += nbytes


cdef void _dctcp_get(Sim* s, int32_t fi, double* v) noexcept nogil:
    v[1] = _dctcp(s, fi).alpha


cdef void _dctcp_set(Sim* s, int32_t fi, double* v) noexcept nogil:
    _dctcp(s, fi).alpha = v[1]


cdef object _dctcp_dict(Sim* s, int32_t fi):
    cdef DctcpState* st = _dctcp(s, fi)
    return {"alpha": st.alpha, "ca_state": st.ca_state, "batch": st.batch}

# ------------------------------------------------------------------ Swift

cdef inline SwiftState* _swift(Sim* s, int32_t fi) noexcept nogil:
    return &(<SwiftState*>s.cc_st[<int>CC_SWIFT])[fi]


cdef void _swift_apply(Sim* s, int32_t fi, bint direct) noexcept nogil:
    """The window and rate the NIC applies: cwnd packets in flight at line rate,
    or below one packet no window and one packet every pace_gap."""
    cdef SwiftState* st = _swift(s, fi)
    cdef Flow* f = &s.flows[fi]
    cdef int64_t rate = swift_pace_rate(s.p.mtu + s.p.hdr_bytes, st.pace_gap, f.max_rate)
    if st.pace_gap > 0:
        f.win = 0
    else:
        f.win = <int64_t>(st.cwnd * <double>s.p.mtu)
        if f.win < 1:
            f.win = 1
    if direct:
        f.rate = rate
    elif rate != f.rate:
        change_rate(s, fi, rate)


cdef void _swift_init(Sim* s, int32_t fi) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    f.var_win = 0                   # the window is Swift's own
    swift_init(_swift(s, fi), &s.cc, <double>f.max_rate * <double>f.base_rtt / 8e12 / <double>s.p.mtu,
               f.path_len - 1, f.base_rtt)
    _swift_apply(s, fi, True)


cdef void _swift_ack(Sim* s, int32_t fi, int32_t pk) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    cdef Flow* f = &s.flows[fi]
    if pkt.kind == PK_NACK:
        swift_on_loss(_swift(s, fi), &s.cc, pkt.seq, s.now, f.base_rtt)
    else:
        swift_on_ack(_swift(s, fi), &s.cc, pkt.seq, s.now - pkt.ts, s.now, f.base_rtt)
    _swift_apply(s, fi, False)


cdef void _swift_rto(Sim* s, int32_t fi) noexcept nogil:
    swift_on_rto(_swift(s, fi), &s.cc, s.now, s.flows[fi].base_rtt)
    _swift_apply(s, fi, False)


cdef void _swift_shift(Sim* s, int32_t fi, int64_t nbytes, int64_t dt) noexcept nogil:
    cdef SwiftState* st = _swift(s, fi)
    if st.last_acked > 0:
        st.last_acked += nbytes
    st.last_decrease += dt


cdef void _swift_get(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef SwiftState* st = _swift(s, fi)
    v[1] = st.cwnd
    v[2] = st.srtt
    v[3] = st.retx_cnt


cdef void _swift_set(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef SwiftState* st = _swift(s, fi)
    st.cwnd = v[1]
    st.srtt = <int64_t>v[2]
    st.retx_cnt = <int32_t>v[3]
    st.last_acked = s.flows[fi].snd_una
    st.last_decrease = -(<int64_t>1 << 62)
    swift_bound(st, &s.cc, 0.0, s.now, s.flows[fi].base_rtt)
    _swift_apply(s, fi, True)


cdef int64_t _swift_rate(Sim* s, int32_t fi) noexcept nogil:
    """cwnd packets per srtt (the base RTT before the first ACK), at most line rate."""
    cdef SwiftState* st = _swift(s, fi)
    cdef Flow* f = &s.flows[fi]
    cdef int64_t rtt = st.srtt if st.srtt > 0 else f.base_rtt
    cdef double r = st.cwnd * <double>(s.p.mtu + s.p.hdr_bytes) * 8e12 / <double>(rtt if rtt > 0 else 1)
    return f.max_rate if r >= <double>f.max_rate else <int64_t>r


cdef object _swift_dict(Sim* s, int32_t fi):
    cdef SwiftState* st = _swift(s, fi)
    return {"cwnd": st.cwnd, "srtt": st.srtt, "delay": st.delay, "target": st.target,
            "last_decrease": st.last_decrease, "last_acked": st.last_acked, "pace_gap": st.pace_gap,
            "retx_cnt": st.retx_cnt, "hops": st.hops, "win": s.flows[fi].win}

# ------------------------------------------------------------------ TCP (NewReno, CUBIC)

cdef inline TcpState* _tcp(Sim* s, int32_t fi) noexcept nogil:
    return <TcpState*>cc_state_of(s, fi, s.flows[fi].cc)


cdef inline void _tcp_apply(Sim* s, int32_t fi) noexcept nogil:
    """The window the NIC applies: cwnd packets in flight, sent at line rate
    (the flow's rate stays its max_rate: no pacing)."""
    s.flows[fi].win = <int64_t>(_tcp(s, fi).cwnd * <double>s.p.mtu)


cdef void _tcp_init(Sim* s, int32_t fi) noexcept nogil:
    s.flows[fi].var_win = 0             # the window is TCP's own
    tcp_init(_tcp(s, fi), &s.cc)
    _tcp_apply(s, fi)


cdef void _tcp_probe_arm(Sim* s, int32_t fi) noexcept nogil:
    """A probe timer for the flow unless one is pending (it re-arms itself
    while acknowledgements progress: one pending event per flow)."""
    cdef TcpState* st = _tcp(s, fi)
    cdef int64_t due
    if st.probe_armed:
        return
    st.probe_armed = 1
    st.probe_tok += 1
    due = tcp_timer_due(st, &s.cc)
    if due < s.now:
        due = s.now                 # overdue (no progress since long before this ACK): at once
    if heap_push(s, due, EV_CC_TIMER, fi, st.probe_tok * 4) != 0:
        s.fail = 1


cdef void _tcp_ack(Sim* s, int32_t fi, int32_t pk) noexcept nogil:
    cdef Packet* pkt = &s.pkts[pk]
    cdef Flow* f = &s.flows[fi]
    cdef bint cubic = f.cc == CC_CUBIC
    if pkt.kind == PK_NACK:
        tcp_on_loss(_tcp(s, fi), &s.cc, cubic, pkt.seq, s.now)
    else:
        tcp_on_ack(_tcp(s, fi), &s.cc, cubic, pkt.seq, s.now - pkt.ts, s.now, f.snd_nxt)
    _tcp_apply(s, fi)
    if f.finish < 0 and f.snd_una < f.size:
        _tcp_probe_arm(s, fi)


cdef void _tcp_timer(Sim* s, int32_t fi, int64_t b) noexcept nogil:
    """The loss timer: stale, early (progress since it was armed: again when
    due), idle (nothing in flight: disarmed), or due (tcp_on_timer: a probe or
    a retransmission timeout, back to snd_una)."""
    cdef TcpState* st = _tcp(s, fi)
    cdef Flow* f = &s.flows[fi]
    if (b >> 2) != st.probe_tok:
        s.stale_events += 1
        s.stale_by[<int>EV_CC_TIMER] += 1
        return
    st.probe_armed = 0
    if f.finish >= 0 or f.snd_nxt <= f.snd_una:
        return
    if tcp_timer_due(st, &s.cc) <= s.now:
        if tcp_on_timer(st, &s.cc, f.cc == CC_CUBIC, s.now):
            s.timeouts += 1
        f.snd_nxt = f.snd_una
        _tcp_apply(s, fi)
    _tcp_probe_arm(s, fi)
    nic_try_send(s, f.src_port)


cdef void _tcp_finish(Sim* s, int32_t fi) noexcept nogil:
    cdef TcpState* st = _tcp(s, fi)
    st.probe_tok += 1               # the pending probe timer becomes stale
    st.probe_armed = 0


cdef void _tcp_rto(Sim* s, int32_t fi) noexcept nogil:
    tcp_on_rto(_tcp(s, fi), &s.cc, s.flows[fi].cc == CC_CUBIC, s.now)
    _tcp_apply(s, fi)


cdef void _tcp_shift(Sim* s, int32_t fi, int64_t nbytes, int64_t dt) noexcept nogil:
    cdef TcpState* st = _tcp(s, fi)
    if st.last_acked > 0:
        st.last_acked += nbytes
    st.last_reduce += dt
    st.last_progress += dt
    if st.epoch_start >= 0:
        st.epoch_start += dt


cdef void _tcp_get(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef TcpState* st = _tcp(s, fi)
    v[1] = st.cwnd
    v[2] = st.ssthresh
    v[3] = st.srtt


cdef void _tcp_set(Sim* s, int32_t fi, double* v) noexcept nogil:
    cdef TcpState* st = _tcp(s, fi)
    st.cwnd = v[1]
    st.ssthresh = v[2]
    st.srtt = <int64_t>v[3]
    st.last_acked = s.flows[fi].snd_una
    st.last_reduce = -(<int64_t>1 << 62)
    st.last_progress = s.now        # the loss timer runs from here (not from the flow's own past)
    st.probed = 0
    st.backoff = 0
    st.epoch_start = -1
    st.w_max = st.cwnd
    tcp_bound(st, &s.cc)
    _tcp_apply(s, fi)


cdef int64_t _tcp_rate(Sim* s, int32_t fi) noexcept nogil:
    """cwnd packets per srtt (the base RTT before the first ACK), at most line rate."""
    cdef TcpState* st = _tcp(s, fi)
    cdef Flow* f = &s.flows[fi]
    cdef int64_t rtt = st.srtt if st.srtt > 0 else f.base_rtt
    cdef double r = st.cwnd * <double>(s.p.mtu + s.p.hdr_bytes) * 8e12 / <double>(rtt if rtt > 0 else 1)
    return f.max_rate if r >= <double>f.max_rate else <int64_t>r


cdef object _tcp_dict(Sim* s, int32_t fi):
    cdef TcpState* st = _tcp(s, fi)
    return {"cwnd": st.cwnd, "ssthresh": st.ssthresh, "last_acked": st.last_acked, "last_reduce": st.last_reduce,
            "srtt": st.srtt, "epoch_start": st.epoch_start, "w_max": st.w_max, "k": st.k, "w_est": st.w_est,
            "rttvar": st.rttvar, "backoff": st.backoff, "probed": st.probed,
            "last_progress": st.last_progress, "losses": st.losses, "timeouts": st.timeouts, "probes": st.probes,
            "win": s.flows[fi].win}

# ------------------------------------------------------------------ the table

cdef void _cc_table_fill() noexcept:
    cdef CcOps* o
    cdef int k
    _cc_row(CC_NONE, "none", INT_NONE, 0, 0, 0b1001)

    _cc_row(CC_DCQCN, "dcqcn", INT_NONE, 0, sizeof(DcqcnState), 0b1011)
    o = &CC_TABLE[<int>CC_DCQCN]
    o.fixed_timers = 1 << TM_INCREASE       # see increase_in_skip (accel_steady.pxi)
    o.timer_rate = 1                        # decrease and increase timers
    o.init = _dcqcn_init
    o.on_ack = _dcqcn_ack
    o.on_timer = _dcqcn_timer_fire
    o.on_finish = _dcqcn_finish
    o.get_vec = _dcqcn_get
    o.set_vec = _dcqcn_set
    o.as_dict = _dcqcn_dict

    _cc_row(CC_HPCC, "hpcc", INT_HOPS, 42, sizeof(HpccState), 0b1011)
    o = &CC_TABLE[<int>CC_HPCC]
    o.init = _hpcc_init
    o.on_ack = _hpcc_ack
    o.shift = _hpcc_shift
    o.get_vec = _hpcc_get
    o.set_vec = _hpcc_set
    o.as_dict = _hpcc_dict
    o.steady_rate = _hpcc_steady_rate

    _cc_row(CC_TIMELY, "timely", INT_TS, 8, sizeof(TimelyState), 0b1011)
    o = &CC_TABLE[<int>CC_TIMELY]
    o.init = _timely_init
    o.on_ack = _timely_ack
    o.shift = _timely_shift
    o.get_vec = _timely_get
    o.set_vec = _timely_set
    o.as_dict = _timely_dict

    _cc_row(CC_DCTCP, "dctcp", INT_NONE, 0, sizeof(DctcpState), 0b1001)
    o = &CC_TABLE[<int>CC_DCTCP]
    o.init = _dctcp_init
    o.on_ack = _dctcp_ack
    o.shift = _dctcp_shift
    o.get_vec = _dctcp_get
    o.set_vec = _dctcp_set
    o.as_dict = _dctcp_dict

    _cc_row(CC_SWIFT, "swift", INT_TS, 8, sizeof(SwiftState), 0b1101)
    o = &CC_TABLE[<int>CC_SWIFT]
    o.init = _swift_init
    o.on_ack = _swift_ack
    o.on_rto = _swift_rto
    o.shift = _swift_shift
    o.get_vec = _swift_get
    o.set_vec = _swift_set
    o.as_dict = _swift_dict
    o.send_rate = _swift_rate

    for k in (<int>CC_TCP, <int>CC_CUBIC):
        _cc_row(k, "tcp" if k == <int>CC_TCP else "cubic", INT_TS, 8, sizeof(TcpState), 0b1001)
        o = &CC_TABLE[k]
        o.init = _tcp_init
        o.on_ack = _tcp_ack
        o.on_rto = _tcp_rto
        o.on_timer = _tcp_timer
        o.on_finish = _tcp_finish
        o.shift = _tcp_shift
        o.get_vec = _tcp_get
        o.set_vec = _tcp_set
        o.as_dict = _tcp_dict
        o.send_rate = _tcp_rate

    for k in range(<int>N_CC_KINDS):
        if CC_TABLE[k].steady_rate == NULL:
            CC_TABLE[k].steady_rate = CC_TABLE[k].send_rate


_cc_table_fill()

# the table's names and wire facts, and the kernel's enums, for Python (wormhole.cc checks its
# registry against these)
CC_KINDS = {CC_TABLE[k].name.decode(): k for k in range(<int>N_CC_KINDS)}
CC_WIRE = {CC_TABLE[k].name.decode(): (CC_TABLE[k].int_mode, CC_TABLE[k].int_bytes) for k in range(<int>N_CC_KINDS)}
INT_MODES = {"none": <int>INT_NONE, "ts": <int>INT_TS, "hops": <int>INT_HOPS}
RUN_CODES = {"idle": <int>RUN_IDLE, "callbacks": <int>RUN_CALLBACKS, "user": <int>RUN_USER, "limit": <int>RUN_LIMIT}


cdef int cc_use(Sim* s, int kind) noexcept nogil:
    """Kind ``kind`` is in use: its state array exists for every flow slot.
    Returns 0, or -1 when out of memory."""
    cdef void* p
    if (s.cc_used >> kind) & 1:
        return 0
    if CC_TABLE[kind].state_size > 0 and s.flow_cap > 0:
        p = realloc(s.cc_st[kind], <size_t>s.flow_cap * CC_TABLE[kind].state_size)
        if p == NULL:
            return -1
        s.cc_st[kind] = p
    s.cc_used |= (<uint32_t>1) << kind
    return 0


cdef int cc_grow(Sim* s, int32_t cap) noexcept nogil:
    """Grow the state arrays of the kinds in use to ``cap`` flows.  Returns 0 or -1."""
    cdef int k
    cdef void* p
    for k in range(<int>N_CC_KINDS):
        if (s.cc_used >> k) & 1 and CC_TABLE[k].state_size > 0:
            p = realloc(s.cc_st[k], <size_t>cap * CC_TABLE[k].state_size)
            if p == NULL:
                return -1
            s.cc_st[k] = p
    return 0


cdef void cc_flow_init(Sim* s, int32_t fi) noexcept nogil:
    """A new flow's state: zeroed, then its algorithm's init."""
    cdef int kind = s.flows[fi].cc
    if CC_TABLE[kind].state_size > 0:
        memset(cc_state_of(s, fi, kind), 0, CC_TABLE[kind].state_size)
    CC_TABLE[kind].init(s, fi)


cdef void cc_timer_fire(Sim* s, int32_t fi, int64_t b) noexcept nogil:
    CC_TABLE[s.flows[fi].cc].on_timer(s, fi, b)


cdef void cc_vector(Sim* s, int32_t fi, double* v) noexcept nogil:
    """The flow's rate and the 3 algorithm values that memo entries store (and
    memo_set_state sets)."""
    v[0] = CC_TABLE[s.flows[fi].cc].send_rate(s, fi)
    v[1] = 0.0
    v[2] = 0.0
    v[3] = 0.0
    CC_TABLE[s.flows[fi].cc].get_vec(s, fi, v)
