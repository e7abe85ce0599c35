# cython: language_level=3
"""Swift's update rules (Kumar et al., "Swift: Delay is Simple and Effective for
Congestion Control in the Datacenter", SIGCOMM 2020), as pure functions of one
flow's state (SwiftState, defs.pxd); the kernel's side is in cc_table.pxi.

A window of ``cwnd`` packets is steered towards a target delay: the base target,
plus a flow-scaling term that lets small windows queue longer (so that many
flows on one link still converge to a fair share), plus a term per switch on the
path.  Below the target the window grows by ``ai`` packets per RTT; above it, it
shrinks in proportion to the excess delay, by at most ``max_mdf`` and at most
once per RTT.  Below one packet the flow is paced at one packet per srtt / cwnd.
Times are in ps, the delay of an ACK is now minus the send time of the packet
it acknowledges (the timestamp the ACK echoes).
"""
from libc.math cimport sqrt
from libc.stdint cimport int64_t
from wormhole._core.defs cimport CcParams, SwiftState


cdef inline double swift_target(SwiftState* st, CcParams* p) noexcept nogil:
    """Target delay, ps: base + clamp(alpha / sqrt(cwnd) + beta, 0, fs_range) + hops x hop_scale."""
    cdef double fs = 0.0
    if st.cwnd > 0:
        fs = p.sw_fs_alpha / sqrt(st.cwnd) + p.sw_fs_beta
        if fs > p.sw_fs_range:
            fs = p.sw_fs_range
        if fs < 0:
            fs = 0.0
    return <double>p.sw_base_target + fs + <double>st.hops * <double>p.sw_hop_scale


cdef inline bint swift_can_decrease(SwiftState* st, int64_t now) noexcept nogil:
    """At most one decrease per RTT: a smoothed RTT has passed since the last one."""
    return now - st.last_decrease >= st.srtt


cdef inline void swift_bound(SwiftState* st, CcParams* p, double prev, int64_t now,
                             int64_t base_rtt) noexcept nogil:
    """Keep the window in [min_cwnd, max_cwnd], note a decrease (against ``prev``)
    and set the pacing gap: below one packet, one packet every srtt / cwnd (the
    base RTT before the first ACK)."""
    cdef int64_t rtt
    if st.cwnd < p.sw_min_cwnd:
        st.cwnd = p.sw_min_cwnd
    elif st.cwnd > p.sw_max_cwnd:
        st.cwnd = p.sw_max_cwnd
    if st.cwnd < prev:
        st.last_decrease = now
    if st.cwnd < 1.0:
        rtt = st.srtt if st.srtt > 0 else base_rtt
        st.pace_gap = <int64_t>(<double>rtt / st.cwnd)
    else:
        st.pace_gap = 0


cdef inline void swift_init(SwiftState* st, CcParams* p, double bdp_pkts, int hops, int64_t base_rtt) noexcept nogil:
    """A new flow: the configured initial window, or its bandwidth-delay product."""
    st.cwnd = p.sw_init_cwnd if p.sw_init_cwnd > 0 else bdp_pkts
    st.srtt = 0
    st.delay = 0
    st.target = 0.0
    st.last_decrease = -(<int64_t>1 << 62)     # no decrease yet: the first one may come at once
    st.last_acked = 0
    st.retx_cnt = 0
    st.hops = hops
    swift_bound(st, p, 0.0, 0, base_rtt)


cdef inline void swift_on_ack(SwiftState* st, CcParams* p, int64_t ack_seq, int64_t delay, int64_t now,
                              int64_t base_rtt) noexcept nogil:
    """One ACK acknowledging up to ``ack_seq`` with the delay ``delay`` (ps).
    Below the target: cwnd += ai x acked / cwnd (cwnd >= 1) or ai x acked (below
    one packet), acked in packets; at or above it, if no decrease came within
    the last srtt: cwnd x= max(1 - beta (delay - target) / delay, 1 - max_mdf)."""
    cdef double prev = st.cwnd, acked = 0.0, f
    cdef bint can_decrease = swift_can_decrease(st, now)
    st.srtt = delay if st.srtt == 0 else (7 * st.srtt + delay) // 8
    st.delay = delay
    st.retx_cnt = 0
    st.target = swift_target(st, p)
    if ack_seq > st.last_acked:
        acked = <double>(ack_seq - st.last_acked) / <double>p.mtu
        st.last_acked = ack_seq
    if <double>delay < st.target:
        if st.cwnd >= 1.0:
            st.cwnd += p.sw_ai * acked / st.cwnd
        else:
            st.cwnd += p.sw_ai * acked
    elif can_decrease:
        f = 1.0 - p.sw_beta * (<double>delay - st.target) / <double>delay
        if f < 1.0 - p.sw_max_mdf:
            f = 1.0 - p.sw_max_mdf
        st.cwnd *= f
    swift_bound(st, p, prev, now, base_rtt)


cdef inline void swift_on_loss(SwiftState* st, CcParams* p, int64_t ack_seq, int64_t now,
                               int64_t base_rtt) noexcept nogil:
    """A NACK (a packet was lost: go-back-N): the window shrinks by max_mdf, at
    most once per RTT."""
    cdef double prev = st.cwnd
    if ack_seq > st.last_acked:
        st.last_acked = ack_seq
    if swift_can_decrease(st, now):
        st.cwnd *= 1.0 - p.sw_max_mdf
    swift_bound(st, p, prev, now, base_rtt)


cdef inline void swift_on_rto(SwiftState* st, CcParams* p, int64_t now, int64_t base_rtt) noexcept nogil:
    """A retransmission timeout: retx_reset of them in a row reset the window to
    min_cwnd; otherwise it shrinks by max_mdf, at most once per RTT."""
    cdef double prev = st.cwnd
    st.retx_cnt += 1
    if st.retx_cnt >= p.sw_retx_reset:
        st.cwnd = p.sw_min_cwnd
    elif swift_can_decrease(st, now):
        st.cwnd *= 1.0 - p.sw_max_mdf
    swift_bound(st, p, prev, now, base_rtt)


cdef inline int64_t swift_pace_rate(int64_t pkt_bytes, int64_t gap, int64_t max_rate) noexcept nogil:
    """The pacing rate (bps) at which a packet of ``pkt_bytes`` takes ``gap`` ps
    (the NIC paces a flow at its rate); line rate when not pacing (gap 0)."""
    cdef int64_t r
    if gap <= 0:
        return max_rate
    r = <int64_t>(<double>pkt_bytes * 8e12 / <double>gap)
    if r > max_rate:
        return max_rate
    return r if r > 0 else 1
