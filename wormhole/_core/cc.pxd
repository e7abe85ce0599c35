# cython: language_level=3
"""Congestion-control update rules, as pure functions of one flow's state.

Each algorithm keeps its per-flow state in its own struct (``defs.pxd``); the
functions here change that state and the flow's rate and say which timers the
kernel must (re)arm.  They follow the reference (HPCC fork of ns-3,
rdma-hw.cc), including its integer truncations: a rate multiplied or divided
by a double is truncated to whole bits per second.
"""
from libc.stdint cimport int64_t, uint64_t, int32_t, uint32_t
from wormhole._core.defs cimport CcParams, DcqcnState, HpccState, TimelyState, DctcpState, IntHop


cdef inline int64_t rate_scale(int64_t rate, double c) noexcept nogil:
    """DataRate * double of the reference: truncated to an integer bps."""
    return <int64_t>(<uint64_t>(<double>rate * c))


cdef inline int64_t rate_div(int64_t rate, double c) noexcept nogil:
    return <int64_t>(<uint64_t>(<double>rate / c))

# ------------------------------------------------------------------ DCQCN

cdef inline void dcqcn_init(DcqcnState* st, int64_t line_rate) noexcept nogil:
    st.alpha = 1.0
    st.target_rate = line_rate
    st.rp_stage = 0
    st.first_cnp = 1
    st.alpha_cnp = 0
    st.dec_cnp = 0


cdef inline bint dcqcn_cnp(DcqcnState* st, CcParams* p, int64_t* rate) noexcept nogil:
    """A CNP (ECN echo) arrived.  Returns True on the first one: the caller
    arms the alpha timer and the decrease timer (1 ns later)."""
    st.alpha_cnp = 1
    st.dec_cnp = 1
    if st.first_cnp:
        st.alpha = 1.0
        st.alpha_cnp = 0
        rate[0] = rate_scale(rate[0], p.rate_on_first_cnp)
        st.target_rate = rate[0]
        st.first_cnp = 0
        return True
    return False


cdef inline void dcqcn_alpha_update(DcqcnState* st, CcParams* p) noexcept nogil:
    if st.alpha_cnp:
        st.alpha = (1 - p.g) * st.alpha + p.g
    else:
        st.alpha = (1 - p.g) * st.alpha
    st.alpha_cnp = 0


cdef inline bint dcqcn_decrease(DcqcnState* st, CcParams* p, int64_t* rate) noexcept nogil:
    """Decrease check: cut if a CNP arrived in the period.  Returns True after
    a cut (the caller restarts the rate-increase timer)."""
    cdef int64_t r
    if not st.dec_cnp:
        return False
    if p.clamp_target or st.rp_stage != 0:
        st.target_rate = rate[0]
    r = rate_scale(rate[0], 1 - st.alpha / 2)
    rate[0] = r if r > p.min_rate else p.min_rate
    st.rp_stage = 0
    st.dec_cnp = 0
    return True


cdef inline void dcqcn_increase(DcqcnState* st, CcParams* p, int64_t* rate, int64_t line_rate) noexcept nogil:
    """Rate-increase timer: fast recovery, then additive, then hyper increase."""
    if st.rp_stage < p.fast_recovery_times:
        pass
    elif st.rp_stage == p.fast_recovery_times:
        st.target_rate += p.rai
        if st.target_rate > line_rate:
            st.target_rate = line_rate
    else:
        st.target_rate += p.rhai
        if st.target_rate > line_rate:
            st.target_rate = line_rate
    rate[0] = rate_div(rate[0], 2) + rate_div(st.target_rate, 2)
    st.rp_stage += 1

# ------------------------------------------------------------------ HPCC

cdef inline void hpcc_init(HpccState* st, int64_t line_rate) noexcept nogil:
    cdef int i
    st.last_update_seq = 0
    st.cur_rate = line_rate
    st.inc_stage = 0
    st.u = 1.0
    for i in range(5):
        st.hop_u[i] = 1.0
        st.hop_rc[i] = line_rate
        st.hop_inc[i] = 0
        st.hop[i].time = 0
        st.hop[i].bytes = 0
        st.hop[i].qlen = 0
        st.hop[i].rate_bps = 0


cdef inline uint64_t int_time_delta(IntHop* a, IntHop* b) noexcept nogil:
    if a.time >= b.time:
        return a.time - b.time
    return a.time + (1 << 24) - b.time


cdef inline uint64_t int_bytes_delta(IntHop* a, IntHop* b, int32_t multi) noexcept nogil:
    if a.bytes >= b.bytes:
        return <uint64_t>(a.bytes - b.bytes) * 128 * multi
    return <uint64_t>(a.bytes + (1 << 20) - b.bytes) * 128 * multi


cdef inline bint hpcc_on_ack(HpccState* st, CcParams* p, IntHop* ih, int nhop, int64_t ack_seq,
                             int64_t snd_nxt, int64_t max_rate, int64_t base_rtt_ns, int64_t win,
                             int64_t* new_rate) noexcept nogil:
    """One ACK with its echoed INT records.  A full update (once per RTT: the
    ACK passes the snd_nxt of the previous update) commits Rc and the stage;
    otherwise, with fast react, the same computation sets the rate without
    committing.  Returns True when the flow's rate must become new_rate."""
    cdef bint fast, updated_any = False
    cdef bint updated[5]
    cdef int i
    cdef double U = 0.0, u, duration, tx_rate, max_c, c
    cdef uint64_t dt = 0, tau
    cdef uint32_t qmin
    cdef int64_t nr, nr_hop[5]
    cdef int32_t nstage = 0, nstage_hop[5]
    if ack_seq > st.last_update_seq:
        fast = False
    else:
        if not p.fast_react:
            return False
        fast = True
    if st.last_update_seq == 0:
        st.last_update_seq = snd_nxt
        for i in range(nhop if nhop <= 5 else 5):
            st.hop[i] = ih[i]
        return False
    if nhop <= 5:
        for i in range(nhop):
            updated[i] = False
            if p.sample_feedback and ih[i].qlen == 0 and fast:
                continue
            updated[i] = True
            updated_any = True
            tau = int_time_delta(&ih[i], &st.hop[i])
            duration = <double>tau * 1e-9
            tx_rate = <double>int_bytes_delta(&ih[i], &st.hop[i], p.int_multi) * 8 / duration
            qmin = ih[i].qlen if ih[i].qlen < st.hop[i].qlen else st.hop[i].qlen
            u = (tx_rate / <double>ih[i].rate_bps
                 + <double>(<uint64_t>qmin * 80 * p.int_multi) * <double>max_rate / <double>ih[i].rate_bps
                 / <double>win)
            if not p.multi_rate:
                if u > U:
                    U = u
                    dt = tau
            else:
                if tau > <uint64_t>base_rtt_ns:
                    tau = base_rtt_ns
                st.hop_u[i] = (st.hop_u[i] * <double>(base_rtt_ns - <int64_t>tau) + u * <double>tau) / <double>base_rtt_ns
            st.hop[i] = ih[i]
        nr = max_rate
        if not p.multi_rate:
            if updated_any:
                if dt > <uint64_t>base_rtt_ns:
                    dt = base_rtt_ns
                st.u = (st.u * <double>(base_rtt_ns - <int64_t>dt) + U * <double>dt) / <double>base_rtt_ns
                max_c = st.u / p.u_target
                if max_c >= 1 or st.inc_stage >= p.mi_thresh:
                    nr = rate_div(st.cur_rate, max_c) + p.rai
                    nstage = 0
                else:
                    nr = st.cur_rate + p.rai
                    nstage = st.inc_stage + 1
                if nr < p.min_rate:
                    nr = p.min_rate
                if nr > max_rate:
                    nr = max_rate
        else:
            for i in range(nhop):
                if updated[i]:
                    c = st.hop_u[i] / p.u_target
                    if c >= 1 or st.hop_inc[i] >= p.mi_thresh:
                        nr_hop[i] = rate_div(st.hop_rc[i], c) + p.rai
                        nstage_hop[i] = 0
                    else:
                        nr_hop[i] = st.hop_rc[i] + p.rai
                        nstage_hop[i] = st.hop_inc[i] + 1
                    if nr_hop[i] < p.min_rate:
                        nr_hop[i] = p.min_rate
                    if nr_hop[i] > max_rate:
                        nr_hop[i] = max_rate
                    if nr_hop[i] < nr:
                        nr = nr_hop[i]
                elif st.hop_rc[i] < nr:
                    nr = st.hop_rc[i]
        if not fast:
            if updated_any:
                st.cur_rate = nr
                st.inc_stage = nstage
            if p.multi_rate:
                for i in range(nhop):
                    if updated[i]:
                        st.hop_rc[i] = nr_hop[i]
                        st.hop_inc[i] = nstage_hop[i]
        new_rate[0] = nr
    if not fast and snd_nxt > st.last_update_seq:
        st.last_update_seq = snd_nxt
    return updated_any

# ------------------------------------------------------------------ TIMELY

cdef inline void timely_init(TimelyState* st, int64_t line_rate) noexcept nogil:
    st.last_update_seq = 0
    st.cur_rate = line_rate
    st.inc_stage = 0
    st.last_rtt = 0
    st.rtt_diff = 0.0


cdef inline bint timely_on_ack(TimelyState* st, CcParams* p, int64_t ack_seq, int64_t snd_nxt, int64_t rtt,
                               int64_t max_rate, int64_t* rate) noexcept nogil:
    """Once per RTT: the four rules of TIMELY on the RTT gradient (HAI after 5
    increases).  Returns True if the rate was set."""
    cdef double rtt_diff, gradient, c = 0.0
    cdef bint inc
    cdef int64_t r
    cdef bint changed = False
    if ack_seq <= st.last_update_seq:
        return False           # the reference's fast react for TIMELY does nothing
    if st.last_update_seq != 0:
        rtt_diff = (1 - p.tmly_alpha) * st.rtt_diff + p.tmly_alpha * <double>(rtt - st.last_rtt)
        gradient = rtt_diff / <double>p.tmly_min_rtt
        if rtt < p.tmly_tlow:
            inc = True
        elif rtt > p.tmly_thigh:
            c = 1 - p.tmly_beta * (1 - <double>p.tmly_thigh / <double>rtt)
            inc = False
        elif gradient <= 0:
            inc = True
        else:
            c = 1 - p.tmly_beta * gradient
            if c < 0:
                c = 0
            inc = False
        if inc:
            r = st.cur_rate + (p.rai if st.inc_stage < 5 else p.rhai)
            if r > max_rate:
                r = max_rate
            st.inc_stage += 1
        else:
            r = rate_scale(st.cur_rate, c)
            if r < p.min_rate:
                r = p.min_rate
            st.inc_stage = 0
        rate[0] = r
        st.cur_rate = r
        st.rtt_diff = rtt_diff
        changed = True
    if snd_nxt > st.last_update_seq:
        st.last_update_seq = snd_nxt
        st.last_rtt = rtt
    return changed

# ------------------------------------------------------------------ DCTCP

cdef inline void dctcp_init(DctcpState* st) noexcept nogil:
    st.last_update_seq = 0
    st.high_seq = 0
    st.ecn_cnt = 0
    st.batch = 0
    st.alpha = 1.0
    st.ca_state = 0


cdef inline void dctcp_on_ack(DctcpState* st, CcParams* p, int64_t ack_seq, bint ecn_echo, int64_t snd_nxt,
                              int64_t max_rate, int64_t* rate) noexcept nogil:
    """Rate-based DCTCP: alpha once per window of data, one cut per window of
    ECN echoes (CWR), additive increase once per window outside CWR."""
    cdef bint new_batch = False
    cdef double frac
    cdef int64_t r
    if ecn_echo:
        st.ecn_cnt += 1
    if ack_seq > st.last_update_seq:
        new_batch = True
        if st.last_update_seq == 0:
            st.last_update_seq = snd_nxt
            st.batch = <uint32_t>(<uint64_t>snd_nxt // <uint64_t>p.mtu + 1)
        else:
            frac = <double>st.ecn_cnt / <double>st.batch
            if frac > 1.0:
                frac = 1.0
            st.alpha = (1 - p.g) * st.alpha + p.g * frac
            st.last_update_seq = snd_nxt
            st.ecn_cnt = 0
            st.batch = <uint32_t>(<uint64_t>(snd_nxt - ack_seq) // <uint64_t>p.mtu + 1)
    if st.ca_state == 1 and ack_seq > st.high_seq:
        st.ca_state = 0
    if ecn_echo and st.ca_state == 0:
        r = rate_scale(rate[0], 1 - st.alpha / 2)
        rate[0] = r if r > p.min_rate else p.min_rate
        st.ca_state = 1
        st.high_seq = snd_nxt
    if st.ca_state == 0 and new_batch:
        r = rate[0] + p.dctcp_rai
        rate[0] = r if r < max_rate else max_rate
