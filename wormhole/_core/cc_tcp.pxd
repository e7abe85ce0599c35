# cython: language_level=3
"""Loss-based TCP windows: NewReno (RFC 5681 / 6582) and CUBIC (RFC 8312, Linux's
default), as pure functions of one flow's state (TcpState, defs.pxd); the
kernel's side is in cc_table.pxi.

The window is ``cwnd`` packets of ``mtu`` payload bytes in flight, sent at line
rate without pacing (Linux without the fq qdisc).  Below ``ssthresh`` it grows
by one packet per packet acknowledged (slow start), above it by one packet per
window (NewReno) or along CUBIC's cubic of the time since the last reduction
(with its Reno-friendly floor).  A loss shrinks it to ``beta`` x cwnd (0.5
NewReno, 0.7 CUBIC), at most once per window of data: losses of packets sent
within an RTT of the reduction (the window it cut) do not shrink it again.  A
retransmission timeout sets it to one packet (RFC 5681's loss window) and
ssthresh to beta x cwnd, once per window as well.

Loss detection is the kernel's, not Linux's: the receiver NACKs the first
packet after a hole (go-back-N, as RoCE NICs; rate-limited per hole by
nack_interval) and the sender resends everything from the hole on, where Linux
learns of the hole from three duplicate ACKs or SACK blocks and resends only
the lost segments.  A NACK is the loss signal here.  A lost tail, or a lost
retransmission of the hole (whose NACK the receiver's rate limit holds back),
shows no later packet: the algorithm's own loss timer (as Linux's: a tail-loss
probe, then retransmission timeouts) goes back to the first unacknowledged byte
after a probe timeout (max(2 srtt, pto_min), RACK-TLP) without progress, a
loss, and if that brings no progress either after a retransmission timeout
(max(rto_min, srtt + 4 rttvar), doubled per timeout in a row), slow start from
one packet.  The kernel's fixed timeout (Params.rto) stays behind both for a
burst of which no packet arrives (the loss timer runs from an ACK).

Times are in ps; windows in packets (doubles); sequence numbers in bytes.
"""
from libc.math cimport cbrt
from libc.string cimport memset
from libc.stdint cimport int64_t
from wormhole._core.defs cimport CcParams, TcpState


cdef inline void tcp_bound(TcpState* st, CcParams* p) noexcept nogil:
    """Keep the window in [1, max_cwnd] packets."""
    if st.cwnd < 1.0:
        st.cwnd = 1.0
    elif st.cwnd > p.tcp_max_cwnd:
        st.cwnd = p.tcp_max_cwnd


cdef inline void tcp_init(TcpState* st, CcParams* p) noexcept nogil:
    """A new connection: the initial window, slow start until the first loss."""
    memset(st, 0, sizeof(TcpState))         # counters, timers and CUBIC's epoch state start at zero
    st.cwnd = p.tcp_init_cwnd
    st.ssthresh = p.tcp_max_cwnd
    st.last_reduce = -(<int64_t>1 << 62)     # none yet
    st.epoch_start = -1
    tcp_bound(st, p)


cdef inline double cubic_window(TcpState* st, CcParams* p, int64_t t) noexcept nogil:
    """CUBIC's W(t) = C (t - K)^3 + W_max, t ps after the epoch began (C in
    packets per s^3)."""
    cdef double d = (<double>t - st.k) * 1e-12
    return p.cubic_c * d * d * d + st.w_max


cdef inline double tcp_beta(CcParams* p, bint cubic) noexcept nogil:
    """The multiplicative decrease: CUBIC's or NewReno's."""
    return p.cubic_beta if cubic else p.tcp_beta


cdef inline void cubic_grow(TcpState* st, CcParams* p, double acked, int64_t now) noexcept nogil:
    """RFC 8312 congestion avoidance for ``acked`` packets: towards W(t + srtt)
    by (W - cwnd) / cwnd per packet acknowledged, at least the Reno-friendly
    estimate W_est (which grows by 3 (1 - beta) / (1 + beta) per window)."""
    cdef double target
    if st.epoch_start < 0:              # the first growth after a reduction (or ever)
        st.epoch_start = now
        if st.w_max < st.cwnd:          # no reduction yet: the curve starts at its plateau
            st.w_max = st.cwnd
            st.k = 0.0
        else:
            st.k = cbrt((st.w_max - st.cwnd) / p.cubic_c) * 1e12
        st.w_est = st.cwnd
    target = cubic_window(st, p, now - st.epoch_start + st.srtt)
    if target > st.cwnd:
        st.cwnd += (target - st.cwnd) / st.cwnd * acked
    else:
        st.cwnd += 0.01 / st.cwnd * acked         # RFC 8312 4.3: hardly at all above the curve
    st.w_est += 3.0 * (1.0 - p.cubic_beta) / (1.0 + p.cubic_beta) * acked / st.cwnd
    if st.w_est > st.cwnd:
        st.cwnd = st.w_est


cdef inline void tcp_on_ack(TcpState* st, CcParams* p, bint cubic, int64_t ack_seq, int64_t rtt,
                             int64_t now, int64_t snd_nxt) noexcept nogil:
    """An ACK up to ``ack_seq`` whose echoed timestamp gives the RTT ``rtt`` (ps),
    ``snd_nxt`` the next byte to send.  The window grows only while it limits
    the sender: cwnd below twice the packets in flight before this ACK (Linux's
    tcp_is_cwnd_limited in slow start; an application-limited connection keeps
    its window).  Slow start: cwnd += packets acked, up to ssthresh (the rest of
    them count in congestion avoidance, as Linux's tcp_slow_start); congestion
    avoidance: NewReno cwnd += acked / cwnd, CUBIC cubic_grow."""
    cdef double acked = 0.0, room, flight
    cdef int64_t d
    if rtt > 0:
        if st.srtt == 0:
            st.srtt = rtt
            st.rttvar = rtt // 2
        else:
            d = st.srtt - rtt if st.srtt > rtt else rtt - st.srtt
            st.rttvar = (3 * st.rttvar + d) // 4
            st.srtt = (7 * st.srtt + rtt) // 8
    flight = <double>(snd_nxt - st.last_acked) / <double>p.mtu
    if ack_seq > st.last_acked:
        acked = <double>(ack_seq - st.last_acked) / <double>p.mtu
        st.last_acked = ack_seq
        st.last_progress = now
        st.probed = 0
        st.backoff = 0
    if acked <= 0.0 or st.cwnd >= 2.0 * flight:
        return
    if st.cwnd < st.ssthresh:
        room = st.ssthresh - st.cwnd
        if acked <= room:
            st.cwnd += acked
            acked = 0.0
        else:
            st.cwnd = st.ssthresh
            acked -= room
    if acked > 0.0:
        if cubic:
            cubic_grow(st, p, acked, now)
        else:
            st.cwnd += acked / st.cwnd
    tcp_bound(st, p)


cdef inline bint tcp_reduce(TcpState* st, CcParams* p, bint cubic, int64_t now) noexcept nogil:
    """The once-per-window reduction: unless one came within the last smoothed
    RTT (a loss of the same window), ssthresh = max(beta x cwnd, min_ssthresh)
    and CUBIC's new epoch (W_max the window before, lowered by fast convergence
    when below the previous W_max).  Returns whether it reduced.

    Go-back-N resends the window from the hole at the reduction, so a loss
    signal more than an RTT later is of data sent after it (NewReno's
    ``recover`` in sequence numbers would wait for the whole old flight, which
    go-back-N sends again and may lose again)."""
    cdef double beta = tcp_beta(p, cubic)
    if st.last_reduce > -(<int64_t>1 << 62) and now - st.last_reduce < st.srtt:
        return False
    if cubic:
        if st.cwnd < st.w_max:
            st.w_max = st.cwnd * (1.0 + beta) / 2.0
        else:
            st.w_max = st.cwnd
        st.epoch_start = -1
    st.ssthresh = st.cwnd * beta
    if st.ssthresh < p.tcp_min_ssthresh:
        st.ssthresh = p.tcp_min_ssthresh
    st.last_reduce = now
    return True


cdef inline void tcp_on_loss(TcpState* st, CcParams* p, bint cubic, int64_t ack_seq, int64_t now) noexcept nogil:
    """A NACK at ``ack_seq`` (the receiver's next expected byte; the sender goes
    back to it) at time ``now``: once per window, cwnd = ssthresh = beta x cwnd
    (fast recovery without inflation: go-back-N resends the window anyway)."""
    if ack_seq > st.last_acked:
        st.last_acked = ack_seq
        st.last_progress = now
        st.probed = 0
        st.backoff = 0
    if tcp_reduce(st, p, cubic, now):
        st.losses += 1
        st.cwnd = st.ssthresh
    tcp_bound(st, p)


cdef inline void tcp_on_rto(TcpState* st, CcParams* p, bint cubic, int64_t now) noexcept nogil:
    """A retransmission timeout at ``now`` (the sender went back to snd_una):
    ssthresh as on a loss, once per window, and cwnd = 1 packet (slow start
    again)."""
    tcp_reduce(st, p, cubic, now)
    st.timeouts += 1
    st.cwnd = 1.0
    st.last_progress = now
    tcp_bound(st, p)


cdef inline int64_t tcp_pto(TcpState* st, CcParams* p) noexcept nogil:
    """The probe timeout: max(2 srtt, pto_min) (RFC 8985's 2 srtt with Linux's
    floor), pto_min before the first RTT sample."""
    cdef int64_t t = 2 * st.srtt
    return t if t > p.tcp_pto_min else p.tcp_pto_min


cdef inline int64_t tcp_rto(TcpState* st, CcParams* p) noexcept nogil:
    """The retransmission timeout: max(rto_min, srtt + 4 rttvar) (RFC 6298 with
    Linux's floor), doubled per timeout in a row (backoff)."""
    cdef int64_t t = st.srtt + 4 * st.rttvar
    if t < p.tcp_rto_min:
        t = p.tcp_rto_min
    return t << st.backoff


cdef inline int64_t tcp_timer_due(TcpState* st, CcParams* p) noexcept nogil:
    """When the loss timer is due: a probe timeout after the last progress, or
    once probed, a retransmission timeout after the probe (or the last timeout)."""
    return st.last_progress + (tcp_rto(st, p) if st.probed else tcp_pto(st, p))


cdef inline bint tcp_on_timer(TcpState* st, CcParams* p, bint cubic, int64_t now) noexcept nogil:
    """The loss timer is due at ``now`` with data in flight and no progress: the
    sender goes back to snd_una.  The first time (a probe timeout: a lost tail,
    or a retransmission of the hole whose NACK the receiver holds back) it is a
    loss, the window reduced as on a NACK once per window; after that (a
    retransmission timeout) cwnd = 1 packet and the timeout doubles.  Returns
    True for a timeout."""
    st.last_progress = now
    if not st.probed:
        st.probed = 1
        st.probes += 1
        if tcp_reduce(st, p, cubic, now):
            st.cwnd = st.ssthresh
            tcp_bound(st, p)
        return False
    tcp_on_rto(st, p, cubic, now)
    if st.backoff < 6:
        st.backoff += 1
    return True
