# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Wrappers of the kernel's C rules, for the tests: nothing in a simulation
runs through this module and nothing in the package imports it.

Each applies one rule of the C code the kernel runs to values given from
Python: the serialisation time and the reference's time conversion
(wh_time.h), one congestion-control update (cc.pxd, cc_swift.pxd, cc_tcp.pxd), one switch-MMU rule
(mmu.pxd), one piece of the accelerator (accel.pxd: a rate window, a goodput measurement,
a horizon, the bytes a skip advances; int_hops.pxd: the INT records a skip moves) on a toy
simulation of a few flows.  The tests
compare them with hand-computed values.
"""
from libc.stdlib cimport calloc, malloc, realloc, free
from libc.string cimport memset
from libc.stdint cimport int64_t, uint64_t, uint32_t, int32_t

from wormhole._core.defs cimport *
from wormhole._core.kernel cimport _fill_cc_params, cc_row
from wormhole._core.mmu cimport (mmu_threshold, mmu_admit, mmu_add, mmu_remove, mmu_should_pause,
                                 mmu_should_resume, mmu_should_mark)
from wormhole._core.cc cimport (dcqcn_init, dcqcn_cnp, dcqcn_alpha_update, dcqcn_decrease, dcqcn_increase,
                                hpcc_init, hpcc_on_ack, timely_init, timely_on_ack, dctcp_init, dctcp_on_ack)
from wormhole._core.cc_swift cimport swift_target, swift_bound, swift_init, swift_on_ack, swift_on_loss, swift_on_rto, swift_pace_rate
from wormhole._core.cc_tcp cimport tcp_init, tcp_on_ack, tcp_on_loss, tcp_on_rto, tcp_on_timer, tcp_pto, tcp_rto, cubic_window
from wormhole._core.int_hops cimport int_hops_shift
from wormhole._core.accel cimport (accel_setup, win_alloc, win_push, _goodput, _steady_goodput, _horizon, skip_bytes,
                                   _rate_between, _reject_flow, _same_moment_pending, _moment_open, skip_try,
                                   _data_alone, _lockstep_goodputs, onoff_acked, onoff_delivered, onoff_note_time, onoff_resume,
                                   onoff_bound, cycle_goodput, own_cycle, cycle_idle, _first_run_rate, _shift_window, _gp_reserve,
                                   mirror_take_post, mirror_lead_post, mirror_check_why)


def _py_tx_time_ps(int64_t nbytes, int64_t bps, int64_t quantum_ps=1000):
    """Serialisation time in ps (the kernel's C helper)."""
    return wh_tx_time_ps(nbytes, bps, quantum_ps)


def _py_flow_layout():
    """(sizeof(Flow), the byte offset of its receiver's first field, of its last field's end)."""
    cdef Flow f
    cdef size_t base = <size_t>&f
    return (sizeof(Flow), <size_t>&f.rcv_nxt - base, <size_t>&f.delivered - base + sizeof(int64_t))


def _py_port_layout():
    """(sizeof(Port), sizeof(MmuPort), sizeof(SwitchState))."""
    return (sizeof(Port), sizeof(MmuPort), sizeof(SwitchState))


def _py_ns3_seconds_to_ns(double v):
    """The reference's double-seconds to integer-ns conversion."""
    return wh_ns3_seconds_to_ns(v)


# ------------------------------------------------------------------ CC rules

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


def _overlay(dict fresh, dict given):
    """A new state (as a dict) with the given fields on top; an unknown field is an error."""
    for name in given:
        if name not in fresh:
            raise KeyError(name)
    fresh.update(given)
    return fresh


def _py_swift(str step, dict state, dict cc, int64_t now=0, int64_t ack_seq=0, int64_t delay=0,
              int64_t base_rtt=0, int64_t mtu=1000):
    """Apply one Swift rule to a state dict (SwiftState's fields; unset ones as
    a new flow's with cwnd = state['cwnd']): 'ack' (an ACK up to ack_seq with
    this delay, ps), 'loss' (a NACK), 'rto' (a timeout), 'target' (no event:
    the bounds and pacing gap of the state as given).  Returns (state, the
    target delay of the resulting state, ps)."""
    cdef CcParams p
    cdef SwiftState st
    _fill_cc_params(&p, cc, mtu)
    swift_init(&st, &p, state.get("cwnd", 1.0), state.get("hops", 0), base_rtt)
    st = _overlay(st, state)
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


def _py_tcp(str step, dict state, dict cc, bint cubic=False, int64_t now=0, int64_t ack_seq=0, int64_t rtt=0,
            int64_t snd_nxt=1 << 40, int64_t mtu=1000):
    """Apply one TCP rule (NewReno, or CUBIC with cubic=True) to a state dict
    (TcpState's fields; unset ones as a new connection's): 'ack' (an ACK up to
    ack_seq with this RTT, ps, at time now, snd_nxt the next byte to send), 'loss'
    (a NACK at ack_seq), 'rto' (the kernel's timeout), 'timer' (the loss timer
    is due), 'init' (no event).  Returns (state, CUBIC's W(now - epoch_start) of
    the result, packets, its probe timeout and retransmission timeout, ps)."""
    cdef CcParams p
    cdef TcpState st
    _fill_cc_params(&p, cc, mtu)
    tcp_init(&st, &p)
    st = _overlay(st, state)
    if step == "ack":
        tcp_on_ack(&st, &p, cubic, ack_seq, rtt, now, snd_nxt)
    elif step == "loss":
        tcp_on_loss(&st, &p, cubic, ack_seq, now)
    elif step == "rto":
        tcp_on_rto(&st, &p, cubic, now)
    elif step == "timer":
        tcp_on_timer(&st, &p, cubic, now)
    elif step != "init":
        raise ValueError(step)
    return st, cubic_window(&st, &p, now - st.epoch_start), tcp_pto(&st, &p), tcp_rto(&st, &p)


# ------------------------------------------------------------------ MMU rules

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
            if mmu_should_mark(&s, 1, q, -1):
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


# ------------------------------------------------------------------ accelerator internals

class _AccelCfg:
    """The accelerator's parameters as accel_setup reads them (KernelParams.accel)."""
    def __init__(self, l, theta, check_every=1, gp_span=-1, min_skip=0, margin=0, memo=False, committed=False,
                 onoff=False, quarters_all=True, cycle=False):
        self.l = l
        self.cycle = cycle
        self.quarters_all = quarters_all
        self.committed = committed
        self.onoff = onoff
        self.theta = theta
        self.check_every = check_every
        self.gp_span = gp_span
        self.min_skip = min_skip
        self.margin = margin
        self.memo = memo


cdef Sim* _toy_sim(int32_t n_flows, cfg, int64_t mtu=1000) except NULL:
    """A simulation of n_flows flows, flow i sending through port i alone (no ACK path,
    no kernel services), with the accelerator set up by its own accel_setup (its per-flow
    arrays grown by its grow_flows hook); every flow inactive, in no partition."""
    cdef Sim* s = <Sim*>calloc(1, sizeof(Sim))
    cdef int32_t i
    if s == NULL:
        raise MemoryError()
    s.p.mtu = mtu
    s.n_flows = n_flows
    s.n_ports = n_flows
    s.flows = <Flow*>calloc(n_flows, sizeof(Flow))
    s.ports = <Port*>calloc(n_flows, sizeof(Port))
    s.mmu = <MmuPort*>calloc(n_flows, sizeof(MmuPort))
    s.paths = <int32_t*>calloc(n_flows, sizeof(int32_t))
    if s.flows == NULL or s.ports == NULL or s.mmu == NULL or s.paths == NULL:
        _toy_free(s)
        raise MemoryError()
    for i in range(n_flows):
        s.paths[i] = i
        s.flows[i].path_off = i
        s.flows[i].path_len = 1
        s.flows[i].rpath_off = i
        s.flows[i].rpath_len = 0
        s.flows[i].msg_end = -1
        s.flows[i].rcv_end = -1
        s.ports[i].ev_mark = -1.0       # no mirror's mark (as the kernel's ports start)
    accel_setup(s, cfg, NULL)
    if s.hooks.grow_flows(s, 0, n_flows) != 0:
        _toy_free(s)
        raise MemoryError()
    return s


cdef void _toy_free(Sim* s):
    if s.hooks != NULL:
        s.hooks.release(s)
    free(s.flows); free(s.ports); free(s.mmu); free(s.paths)
    free(s)


cdef void _toy_samples(Sim* s, int32_t fi, list samples):
    """Window of flow fi opened at the current clock, then one win_push per sample
    (t ps, snd_una bytes, rate bps[, idle total ps])."""
    cdef FlowWin* w
    win_alloc(s, fi)
    w = &s.acc.win[fi]
    for smp in samples:
        s.now = smp[0]
        s.flows[fi].snd_una = smp[1]
        if len(smp) > 3:
            w.idle_total = smp[3]
        win_push(s, fi, smp[2])


def _py_rate_window(list rates, int l, double theta, int check_every=1):
    """Push the rates (one sample per ps) into one flow's window of l samples; returns,
    after each sample, (max, min, sum, steady) of the window, and the number of the
    last sample lower than the one before it (-1: none)."""
    cdef Sim* s = _toy_sim(1, _AccelCfg(l, theta, check_every))
    cdef FlowWin* w
    cdef int64_t M = s.acc.lmask
    out = []
    try:
        win_alloc(s, 0)
        w = &s.acc.win[0]
        for k, r in enumerate(rates):
            s.now = k + 1
            win_push(s, 0, r)
            out.append((w.val[w.qmax[w.maxh & M] & M], w.val[w.qmin[w.minh & M] & M], w.sum, bool(w.steady)))
        return out, w.last_dec
    finally:
        _toy_free(s)


def _py_goodput(list samples, int l, double theta, int64_t now, int64_t una_now, int64_t idle_now=0,
                int64_t act_t=0, int64_t act_una=0, int64_t epoch=-1):
    """One flow that started sending at act_t (snd_una act_una) takes the samples
    (t, snd_una, rate[, idle total]); at ``now`` its snd_una is una_now and its idle total
    idle_now; ``epoch``: a change on its ports then (-1: none since it started).  Returns
    (goodput, steady goodput, reject reason index of a zero steady goodput), bytes per ps."""
    cdef Sim* s = _toy_sim(1, _AccelCfg(l, theta))
    cdef double g, sg
    try:
        s.now = act_t
        s.flows[0].snd_una = act_una
        _toy_samples(s, 0, samples)
        s.now = now
        s.flows[0].snd_una = una_now
        s.acc.win[0].idle_total = idle_now
        if epoch >= 0:
            s.acc.win[0].ep_t = epoch
        s.acc.gp_why = -1
        g = _goodput(s, 0)
        sg = _steady_goodput(s, 0)
        return g, sg, (s.acc.gp_why if sg <= 0 else None)
    finally:
        _toy_free(s)


def _py_rate_between(int64_t ta, int64_t ua, int64_t ia, int64_t tb, int64_t ub, int64_t ib):
    """Acknowledged bytes per busy ps between two (time, snd_una, idle total) marks."""
    return _rate_between(ta, ua, ia, tb, ub, ib)


cdef int _toy_partition(Sim* s, int32_t n) except -1:
    """Flows 0..n-1 of a toy simulation form partition 0 (active, their ports in it, its
    version 0, no refusal yet), with room for n goodputs."""
    cdef Accel* a = &s.acc
    cdef int32_t i
    a.n_parts = 1
    a.parts_cap = 1
    a.part_flows = <int32_t**>calloc(1, sizeof(int32_t*))
    a.part_nf = <int32_t*>calloc(1, sizeof(int32_t))
    a.part_cap = <int32_t*>calloc(1, sizeof(int32_t))
    a.part_ver = <int32_t*>calloc(1, sizeof(int32_t))
    a.part_why = <int64_t*>malloc(sizeof(int64_t))
    if (a.part_flows == NULL or a.part_nf == NULL or a.part_cap == NULL or a.part_ver == NULL
            or a.part_why == NULL or _gp_reserve(s, n) != 0):
        raise MemoryError()
    a.part_why[0] = -1
    a.part_flows[0] = <int32_t*>calloc(n + 1, sizeof(int32_t))
    if a.part_flows[0] == NULL:
        raise MemoryError()
    a.part_nf[0] = n
    a.part_cap[0] = n + 1
    for i in range(n):
        a.part_flows[0][i] = i
        a.part_of[i] = 0
        a.active[i] = 1
        a.port_part[i] = 0
    return 0


def _py_horizon(list flows, int64_t margin=0, int paused=-1):
    """One partition of the given flows, each a dict of size, snd_nxt, snd_una,
    persistent and goodput (bytes per ps), at skip margin ``margin``; flow ``paused``
    has its port paused by PFC.  Returns (horizon ps or -1, the goodputs after it,
    {reject reason index: count})."""
    cdef int32_t n = len(flows), i
    cdef Sim* s = _toy_sim(n, _AccelCfg(8, 0.05, margin=margin))
    cdef Accel* a = &s.acc
    cdef double h
    try:
        _toy_partition(s, n)
        for i in range(n):
            fl = flows[i]
            s.flows[i].size = fl["size"]
            s.flows[i].snd_nxt = fl["snd_nxt"]
            s.flows[i].snd_una = fl.get("snd_una", fl["snd_nxt"])
            s.flows[i].persistent = fl.get("persistent", False)
            a.gp[i] = fl["goodput"]
        if 0 <= paused < n:
            s.ports[paused].paused[3] = 1
        h = _horizon(s, 0)
        return (h, [a.gp[i] for i in range(n)], {k: a.rejects[k] for k in range(16) if a.rejects[k]})
    finally:
        _toy_free(s)


def _py_lockstep_goodputs(list flows, int l=4):
    """One partition of the given flows, each a dict of snd_una, snd_nxt, una0 (snd_una at
    its window's oldest sample), rate (its latest rate sample) and goodput (bytes per ps),
    with full windows of l samples (on/off off).  Returns the goodputs after
    _lockstep_goodputs."""
    cdef int32_t n = len(flows), i, k
    cdef Sim* s = _toy_sim(n, _AccelCfg(l, 0.05))
    cdef Accel* a = &s.acc
    cdef FlowWin* w
    try:
        _toy_partition(s, n)
        for i in range(n):
            fl = flows[i]
            s.flows[i].size = fl["snd_nxt"] + 1000000
            s.flows[i].snd_una = fl["snd_una"]
            s.flows[i].snd_nxt = fl["snd_nxt"]
            win_alloc(s, i)
            w = &a.win[i]
            for k in range(l):
                w.val[k] = fl["rate"]
                w.una[k] = fl["una0"]
            w.n = l                     # oldest sample in slot 0, latest in slot l - 1
            a.gp[i] = fl["goodput"]
        _lockstep_goodputs(s, 0)
        return [a.gp[i] for i in range(n)]
    finally:
        _toy_free(s)


def _py_reject_flow(list flows, int l, double theta, int reason=1):
    """One partition of the given flows, each a list of rates (one sample per ps, into a
    window of l samples at theta; an empty list: a persistent connection with everything
    acknowledged, which sends nothing), refused for ``reason`` by one flow's own test.
    Returns (sending flows counted, of them steady, refused with all but one steady,
    {reject reason index: count})."""
    cdef int32_t n = len(flows), i
    cdef Sim* s = _toy_sim(n, _AccelCfg(l, theta, check_every=1 << 30))
    cdef Accel* a = &s.acc
    try:
        for i in range(n):
            s.flows[i].size = 1 << 40
            if not flows[i]:
                s.flows[i].persistent = 1
                s.flows[i].size = 1000
                s.flows[i].snd_una = 1000
                continue
            win_alloc(s, i)
            for k, r in enumerate(flows[i]):
                s.now = k + 1
                win_push(s, i, r)       # (no partition yet: no skip is tried)
        _toy_partition(s, n)
        _reject_flow(s, reason, 0)
        return (a.rej_tested, a.rej_steady, a.rej_one_short, {k: a.rejects[k] for k in range(16) if a.rejects[k]})
    finally:
        _toy_free(s)


def _py_cc_rates(int kind, int64_t rate, int64_t cur_rate):
    """One flow of algorithm ``kind`` (CcKind) pacing at ``rate`` bps whose state's
    committed rate (HPCC's Rc, TIMELY's) is ``cur_rate``: (its send_rate, the rate the
    steady test samples), from the kernel's CC table."""
    cdef Sim s
    cdef Flow f
    cdef HpccState hs
    cdef TimelyState ts
    cdef DcqcnState ds
    memset(&s, 0, sizeof(Sim))
    memset(&f, 0, sizeof(Flow))
    memset(&hs, 0, sizeof(HpccState))
    memset(&ts, 0, sizeof(TimelyState))
    memset(&ds, 0, sizeof(DcqcnState))
    f.rate = rate
    f.max_rate = 100_000_000_000
    f.cc = kind
    hs.cur_rate = cur_rate
    ts.cur_rate = cur_rate
    s.flows = &f
    s.n_flows = 1
    s.cc_st[<int>CC_HPCC] = &hs
    s.cc_st[<int>CC_TIMELY] = &ts
    s.cc_st[<int>CC_DCQCN] = &ds
    return cc_row(kind).send_rate(&s, 0), cc_row(kind).steady_rate(&s, 0)


def _py_skip_try_moment(int32_t n, list events, int64_t now, list other=[]):
    """Partition 0 of flows 0..n-1, each steady (8 samples of 1 byte per ps at 100 bps,
    the last at ``now``; posted data far ahead; flow i sends from port i), and flows in
    ``other`` active in partition 1; the heap holds ``events``, each (t, what, flow,
    port): what 'ack' (an ACK of the flow arriving at the port), 'data' (a data packet
    of the flow arriving there) or 'tx' (a transmission end on the port).  Returns (a
    sample of partition 0 still due at ``now``, skip_try's {reject reason index:
    count}, any event of partition 0 still due at ``now``: no memo replay starts);
    skip_try is only run when it must refuse (the toy has no kernel to
    fast-forward through)."""
    cdef int32_t nf = n + len(other), i
    cdef Sim* s = _toy_sim(nf, _AccelCfg(8, 0.05, check_every=1 << 30))
    cdef Accel* a = &s.acc
    cdef bint pending, open_
    try:
        for i in range(n):
            s.flows[i].size = 1 << 40
            s.now = now - 8             # each window opens before its first sample
            _toy_samples(s, i, [(now - 8 + k, 1000 + k, 100) for k in range(1, 9)])
        _toy_partition(s, n)
        a.part_skip = <int32_t*>calloc(1, sizeof(int32_t))
        a.part_dirty = <uint8_t*>calloc(1, sizeof(uint8_t))
        a.part_watch = <uint8_t*>calloc(1, sizeof(uint8_t))
        s.heap = <Event*>calloc(len(events) + 1, sizeof(Event))
        s.pkts = <Packet*>calloc(len(events) + 1, sizeof(Packet))
        if (a.part_skip == NULL or a.part_dirty == NULL or a.part_watch == NULL
                or s.heap == NULL or s.pkts == NULL):
            raise MemoryError()
        a.part_skip[0] = -1         # partition 0 is not fast-forwarding
        for i in other:
            a.active[i] = 1
            a.part_of[i] = 1
            a.port_part[i] = 1
        for i in range(len(events)):
            t, what, fl, port = events[i]
            s.heap[i].t = t
            s.heap[i].kind = EV_TX_DONE if what == "tx" else EV_ARRIVE
            s.heap[i].a = port
            s.heap[i].b = i
            s.pkts[i].flow = fl
            s.pkts[i].kind = PK_ACK if what == "ack" else PK_DATA
        s.heap_n = len(events)
        s.now = now
        pending = _same_moment_pending(s, 0)
        open_ = _moment_open(s, 0)
        if pending:
            skip_try(s, 0)
        return pending, {k: a.rejects[k] for k in range(16) if a.rejects[k]}, open_
    finally:
        free(s.heap)
        free(s.pkts)
        s.heap = NULL
        s.pkts = NULL
        s.heap_n = 0
        _toy_free(s)


def _py_skip_bytes(double goodput, int64_t dt, int64_t size, int64_t snd_nxt, int64_t mtu=1000,
                   int64_t lead_una0=-1, int64_t lead_una=0):
    """Bytes a flow (size, snd_nxt) has advanced after dt ps of a skip at ``goodput``
    bytes per ps; with lead_una0 >= 0, of a mirror whose leader's flow has moved from
    snd_una lead_una0 to lead_una since the mirror began."""
    cdef Sim* s = _toy_sim(2, _AccelCfg(8, 0.05), mtu)
    cdef Skip sk
    cdef int32_t fl = 0, lead = 1
    cdef double gp = goodput
    cdef int64_t una0 = lead_una0
    try:
        memset(&sk, 0, sizeof(Skip))
        s.flows[0].size = size
        s.flows[0].snd_nxt = snd_nxt
        s.flows[1].snd_una = lead_una
        sk.flows = &fl
        sk.goodput = &gp
        sk.n_flows = 1
        if lead_una0 >= 0:
            sk.mirror = 1
            sk.lead_flows = &lead
            sk.lead_una0 = &una0
        return skip_bytes(s, &sk, 0, dt)
    finally:
        _toy_free(s)


cdef void _toy_paths(Sim* s, list paths) except *:
    """Give the toy's flows the paths (data ports, ACK ports), each a list of port numbers,
    and its ports the accelerator's per-port flow lists; every flow active, and all of them
    in the same partition, -1 (no partition's arrays: skip_try does nothing)."""
    cdef Accel* a = &s.acc
    cdef int32_t n = len(paths), i, j, k, np_ = 0
    for d, r in paths:
        for q in list(d) + list(r):
            np_ = max(np_, q + 1)
    free(s.paths)
    s.paths = <int32_t*>calloc(sum(len(d) + len(r) for d, r in paths) + 1, sizeof(int32_t))
    k = 0
    for i in range(n):
        d, r = paths[i]
        s.flows[i].path_off = k
        s.flows[i].path_len = len(d)
        for q in d:
            s.paths[k] = q
            k += 1
        s.flows[i].rpath_off = k
        s.flows[i].rpath_len = len(r)
        for q in r:
            s.paths[k] = q
            k += 1
    free(a.port_part); free(a.port_flows); free(a.port_nf); free(a.port_cap)
    s.n_ports = np_
    a.port_part = <int32_t*>calloc(np_, sizeof(int32_t))
    a.port_flows = <int32_t**>calloc(np_, sizeof(int32_t*))
    a.port_nf = <int32_t*>calloc(np_, sizeof(int32_t))
    a.port_cap = <int32_t*>calloc(np_, sizeof(int32_t))
    for j in range(np_):
        a.port_flows[j] = <int32_t*>calloc(n + 1, sizeof(int32_t))
        a.port_cap[j] = n + 1
    for i in range(n):
        a.part_of[i] = -1
        a.active[i] = 1
        for j in range(s.flows[i].path_len + s.flows[i].rpath_len):
            q = s.paths[s.flows[i].path_off + j]
            if i not in [a.port_flows[q][m] for m in range(a.port_nf[q])]:
                a.port_flows[q][a.port_nf[q]] = i
                a.port_nf[q] += 1


def _py_data_alone(list paths):
    """One partition of flows whose paths are given as (data ports, ACK ports), each a
    list of port numbers; returns, per flow, whether no other flow's data passes a port
    of its data path (_data_alone: an on/off member, a flow the lone quarter test may call steady)."""
    cdef Sim* s = _toy_sim(len(paths), _AccelCfg(8, 0.05))
    try:
        _toy_paths(s, paths)
        return [bool(_data_alone(s, -1, i)) for i in range(len(paths))]
    finally:
        _toy_free(s)


def _py_quarters_test(list paths, list samples, int l, double theta, int64_t gp_span, bint quarters_all):
    """Flows of one partition with the paths of _py_data_alone; flow 0 takes the samples
    (t ps, snd_una bytes, rate bps) into its window of l samples, with the quarter-goodput
    test on once a window spans gp_span ps (-1: off), for every flow (quarters_all) or only
    for flows alone with their data.  Returns flow 0's (steady, steady by its quarters,
    steady goodput in bytes per ps: _steady_goodput, 0.0 if none)."""
    cdef Sim* s = _toy_sim(len(paths), _AccelCfg(l, theta, gp_span=gp_span, quarters_all=quarters_all))
    try:
        _toy_paths(s, paths)
        _toy_samples(s, 0, samples)
        return bool(s.acc.win[0].steady), bool(s.acc.win[0].gp_steady), _steady_goodput(s, 0)
    finally:
        _toy_free(s)


cdef void _toy_anchors(FlowWin* w, list anchors):
    """Cycle anchors (time ps, snd_una, idle total ps, resuming connection) into a rate window, oldest first."""
    cdef int64_t k
    for t_, u, i_, c in anchors:
        k = w.anc_n % ANC_N
        w.anc_t[k] = t_
        w.anc_u[k] = u
        w.anc_i[k] = i_
        w.anc_c[k] = c
        w.anc_n += 1


cdef Sim* _toy_anchored(list anchors, double theta) except NULL:
    """A one-flow toy whose rate window holds the cycle anchors ``anchors`` (time ps,
    snd_una, idle total ps, the resuming connection), oldest first."""
    cdef Sim* s = _toy_sim(1, _AccelCfg(8, theta))
    try:
        win_alloc(s, 0)
        _toy_anchors(&s.acc.win[0], anchors)
    except BaseException:
        _toy_free(s)
        raise
    return s


def _py_cycle_goodput(list anchors, double theta):
    """One flow whose rate window holds the cycle anchors ``anchors`` (time ps, snd_una,
    idle total ps, the resuming connection), oldest first (the last ANC_N are kept).
    Returns (steady cycle found, its goodput in bytes per ps or 0, anchors refused
    for want of three of one connection, refused as unsteady, how long the flow (0) was
    idle between its own last two resumes: cycle_idle)."""
    cdef Sim* s = _toy_anchored(anchors, theta)
    cdef double g = 0.0
    cdef bint ok
    try:
        ok = cycle_goodput(s, 0, theta, &g)
        return (bool(ok), g if ok else 0.0, s.acc.onoff_no_cycle, s.acc.onoff_unsteady, cycle_idle(s, 0))
    finally:
        _toy_free(s)


def _py_own_cycle(list anchors, int64_t size, int64_t snd_una, int64_t now, double theta=0.05,
                  int64_t idle_since=-1, int64_t idle_total=-1):
    """One connection (flow 0) with cycle anchors ``anchors`` (time ps, snd_una, idle total
    ps, resuming connection), oldest first, (size, snd_una) and its idle start (-1:
    sending) at ``now``; its idle total is the last anchor's unless given.  Returns
    (steady by its own cycles: own_cycle, that cycle's goodput in bytes per ps or 0)."""
    cdef Sim* s = _toy_anchored(anchors, theta)
    cdef FlowWin* w = &s.acc.win[0]
    cdef double g = 0.0
    cdef bint ok
    try:
        w.idle_total = anchors[len(anchors) - 1][2] if idle_total < 0 else idle_total
        w.idle_since = idle_since
        s.flows[0].size = size
        s.flows[0].snd_una = snd_una
        s.now = now
        ok = own_cycle(s, 0, theta, &g)
        return (bool(ok), g if ok else 0.0)
    finally:
        _toy_free(s)


def _py_first_run_rate(list anchors, int64_t size, int64_t snd_una, int64_t idle_total, int64_t now,
                       double gc, int64_t rate_bps=100_000_000_000, int64_t idle_since=-1, list shift=None):
    """One flow (connection 0) with cycle anchors ``anchors`` (time ps, snd_una, idle total
    ps, resuming connection), oldest first, (size, snd_una), its idle total and idle start
    (-1: sending), on a port of ``rate_bps``: the goodput (bytes per ps) of its run under
    way when a skip begins at ``now``, its cycle goodput being ``gc``.  ``shift``: (B, dt),
    a skip that moved it B bytes in dt ps ended before ``now`` (_shift_window first)."""
    cdef Sim* s = _toy_anchored(anchors, 0.05)
    cdef FlowWin* w = &s.acc.win[0]
    try:
        w.idle_total = idle_total
        w.idle_since = idle_since
        s.ports[0].rate_bps = rate_bps
        s.flows[0].size = size
        s.flows[0].snd_una = snd_una
        if shift is not None:
            _shift_window(s, 0, shift[0], shift[1], 0)
        s.now = now
        return _first_run_rate(s, 0, gc)
    finally:
        _toy_free(s)


def _py_onoff_run(double goodput, int64_t size, int64_t snd_una, int64_t snd_nxt, int64_t rcv_nxt,
                  list steps, int64_t mtu=1000, int64_t margin=0, int64_t dry_lim=0, double cycle=-1.0):
    """One on/off member of a skip begun at t = 0 at ``goodput`` bytes per ps, from
    (size, snd_una, snd_nxt, rcv_nxt).  ``steps``, in time order: (t, "post", nbytes)
    posts data to it (onoff_resume, then its size grows), (t, "at") reads (bytes
    acknowledged, delivered, skip_bytes if the skip ended then), (t, "note", need, rcv)
    the time its sender (receiver) reaches ``need`` bytes of the skip (-1: had them),
    (t, "bound") the skip's planned end (onoff_bound, no flow start; it may stay out of
    data for ``dry_lim`` ps).  ``cycle``: its cycle goodput, if the run under way at t = 0
    moves at another (``goodput``, _first_run_rate's).  Returns the reads, then how many
    runs resumed."""
    cdef Sim* s = _toy_sim(1, _AccelCfg(8, 0.05, margin=margin), mtu)
    cdef Skip sk
    cdef int32_t fl = 0
    cdef double gp = goodput, gp_c = goodput if cycle < 0 else cycle
    cdef uint8_t oo = 1
    cdef int64_t rt = 0, rb = 0, rr = 0, lim = dry_lim
    out = []
    try:
        memset(&sk, 0, sizeof(Skip))
        s.flows[0].size = size
        s.flows[0].snd_una = snd_una
        s.flows[0].snd_nxt = snd_nxt
        s.flows[0].rcv_nxt = rcv_nxt
        s.flows[0].persistent = 1
        sk.flows = &fl
        sk.goodput = &gp
        sk.n_flows = 1
        sk.has_onoff = 1
        sk.onoff = &oo
        sk.run_t = &rt
        sk.run_b = &rb
        sk.run_r = &rr
        sk.dry_lim = &lim
        sk.cyc_g = &gp_c
        sk.t0 = 0
        for st in steps:
            s.now = st[0]
            if st[1] == "post":
                onoff_resume(s, &sk, 0)
                s.flows[0].size += st[2]
            elif st[1] == "at":
                out.append((onoff_acked(s, &sk, 0, s.now), onoff_delivered(s, &sk, 0, s.now),
                            skip_bytes(s, &sk, 0, s.now)))
            elif st[1] == "note":
                out.append(onoff_note_time(s, &sk, 0, st[2], st[3]))
            elif st[1] == "bound":
                out.append(onoff_bound(s, &sk, 0x7fffffffffffffff))
            else:
                raise ValueError("unknown step %r" % (st,))
        out.append(s.acc.onoff_resumes)
        return out
    finally:
        _toy_free(s)


def _py_mirror_posts(list posts, int64_t size=1000, bint lead_sending=True):
    """A mirror (skip slot 0, partition 0) whose one connection, flow 0, follows the
    leader's connection, flow 1 (active in partition 1; sending unless ``lead_sending``
    is False), both with ``size`` bytes posted when the mirror began and nothing
    acknowledged.  ``posts`` are the moment's posts in order, each ('m', n) to the
    mirror's connection or ('l', n) to the leader's.  Returns (for each 'm' post,
    whether the mirror took it; Skip.wait_posts after them; the end-of-moment verdict,
    mirror_check_why: -1 keeps the mirror, else the PARTED_BY index; the checks
    scheduled for this moment)."""
    cdef Sim* s = _toy_sim(2, _AccelCfg(8, 0.05))
    cdef Accel* a = &s.acc
    cdef Skip* sk
    cdef int64_t n
    taken = []
    try:
        a.skips = <Skip*>calloc(1, sizeof(Skip))
        a.part_skip = <int32_t*>calloc(2, sizeof(int32_t))
        if a.skips == NULL or a.part_skip == NULL:
            raise MemoryError()
        a.n_skips = 1
        a.n_mirroring = 1
        a.part_skip[0] = 0
        a.part_skip[1] = -1
        sk = &a.skips[0]
        sk.flows = <int32_t*>calloc(1, sizeof(int32_t))
        sk.lead_flows = <int32_t*>calloc(1, sizeof(int32_t))
        sk.lead_una0 = <int64_t*>calloc(1, sizeof(int64_t))
        if sk.flows == NULL or sk.lead_flows == NULL or sk.lead_una0 == NULL:
            raise MemoryError()
        sk.n_flows = 1
        sk.flows[0] = 0
        sk.lead_flows[0] = 1
        sk.lead_una0[0] = 0
        sk.mirror = 1
        sk.part = 0
        sk.token = 1
        for i in range(2):
            s.flows[i].persistent = 1
            s.flows[i].size = size
            a.part_of[i] = i
        a.active[0] = 1
        a.active[1] = 1 if lead_sending else 0
        for who, n in posts:
            if who == "m":
                ok = mirror_take_post(s, 0, n)
                taken.append(bool(ok))
            else:
                s.flows[1].size += n
                mirror_lead_post(s, 1, n)
        return taken, sk.wait_posts, mirror_check_why(s, sk), s.heap_n
    finally:
        free(s.heap)
        s.heap = NULL
        s.heap_n = 0
        _toy_free(s)


def _py_int_hops_shift(list records, int nhop, list ports, int64_t now, int64_t dt, int int_multi=1):
    """One flow whose data path is a NIC and then the switch ports ``ports``, each a
    (tx_bytes now, skip_tx: what the skip just added to it); a skip of dt ps ended at
    ``now``.  ``records``: the INT records (time ns, bytes in units of 128 x int_multi,
    modulo the fields' widths) a packet of the flow carries after nhop switch hops.
    Returns the records as int_hops_shift moves them."""
    cdef int32_t n = len(ports) + 1
    cdef Sim* s = _toy_sim(n, _AccelCfg(8, 0.05))      # ports 0..n-1, the path of flow 0
    cdef IntHop ih[5]
    cdef int i
    try:
        for i in range(1, n):
            s.ports[i].tx_bytes, s.ports[i].skip_tx = ports[i - 1]
        s.flows[0].path_off = 0
        s.flows[0].path_len = n
        s.cc.int_multi = int_multi
        s.now = now
        memset(ih, 0, sizeof(ih))
        for i, r in enumerate(records):
            ih[i].time, ih[i].bytes = r
        int_hops_shift(s, ih, nhop, &s.flows[0], dt)
        return [(ih[i].time, ih[i].bytes) for i in range(len(records))]
    finally:
        _toy_free(s)


# ------------------------------------------------------------------ event heap

from wormhole._core.heap cimport heap_push, heap_push_seq, heap_pop, heap_rebuild, cal_setup, cal_release


cdef int _heap_sim(Sim* s, int key_mode) except -1:
    memset(s, 0, sizeof(Sim))
    s.key_mode = key_mode
    return 0


def _py_heap(list ops, int key_mode=KEY_INSERTION, int64_t calendar=0):
    """Run heap.pxd's operations on a bare Sim and return what the pops gave, as
    (t, ts, seq, a) tuples.  ops: ('push', t, a) under the next tie key (key_next:
    the next insertion number under KEY_INSERTION, (cur_ref, kid) under KEY_RANK),
    ('push_key', t, ts, seq, a) under a given tie key (ts >= 0, or under KEY_RANK
    -1 - a slot), ('pop',), and ('shuffle', seed), which permutes the heap's array in
    place and restores it with heap_rebuild (as the accelerator does after taking
    events out).  KEY_RANK: ('ranks', values[, first]) sets the values of slots first..
    (Sim.rank_val; a round's ranking changes them keeping their order), ('current', slot) makes
    the slot the event being processed (cur_ref = -1 - slot, kid = 0).
    calendar > 0: that many calendar buckets in front of the heap; ('where',) then
    records (events in the calendar, events in the heap)."""
    cdef Sim s
    cdef Event e, tmp
    cdef int64_t j, k
    cdef uint64_t x
    cdef int64_t* rv
    _heap_sim(&s, key_mode)
    out = []
    if calendar > 0 and cal_setup(&s, calendar) != 0:
        raise MemoryError()
    try:
        for op in ops:
            if op[0] == "push":
                if heap_push(&s, op[1], 0, op[2], 0) != 0:
                    raise MemoryError()
            elif op[0] == "push_key":
                if heap_push_seq(&s, op[1], op[2], op[3], 0, op[4], 0) != 0:
                    raise MemoryError()
            elif op[0] == "pop":
                if s.heap_n + s.cal.n == 0:
                    raise IndexError("pop from an empty heap")
                e = heap_pop(&s)
                out.append((e.t, e.ts, e.seq, e.a))
            elif op[0] == "where":
                out.append(("where", s.cal.n, s.heap_n))
            elif op[0] == "ranks":
                k = op[2] if len(op) > 2 else 0
                if k + len(op[1]) > s.n_slot:
                    rv = <int64_t*>realloc(s.rank_val, (k + len(op[1])) * sizeof(int64_t))
                    if rv == NULL:
                        raise MemoryError()
                    s.rank_val = rv
                    s.n_slot = k + len(op[1])
                for j in range(len(op[1])):
                    s.rank_val[k + j] = op[1][j]
            elif op[0] == "current":
                s.cur_ref = -1 - <int64_t>op[1]
                s.kid = 0
            elif op[0] == "shuffle":
                x = <uint64_t>op[1] * 6364136223846793005ULL + 1442695040888963407ULL
                for j in range(s.heap_n - 1, 0, -1):
                    x ^= x << 13
                    x ^= x >> 7
                    x ^= x << 17
                    k = <int64_t>(x % <uint64_t>(j + 1))
                    tmp = s.heap[j]
                    s.heap[j] = s.heap[k]
                    s.heap[k] = tmp
                heap_rebuild(&s)
            else:
                raise ValueError("unknown heap op %r" % (op[0],))
    finally:
        free(s.heap)
        free(s.rank_val)
        cal_release(&s)
    return out


def _py_heap_hold(int64_t n, int64_t ops, int64_t spread_ps, uint64_t seed=1, int64_t calendar=0,
                  int64_t grain_ps=1):
    """The classic hold model, for bench/heap.py: n events pending, then ``ops``
    times pop the earliest and push one due a uniform 0..spread_ps after it, in
    steps of grain_ps (KEY_INSERTION; calendar > 0: that many calendar buckets in
    front of the heap).  Returns the time of the last event popped."""
    cdef Sim s
    cdef Event e
    cdef int64_t i
    cdef uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL
    _heap_sim(&s, KEY_INSERTION)
    if calendar > 0 and cal_setup(&s, calendar) != 0:
        raise MemoryError()
    try:
        for i in range(n):
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            if heap_push(&s, grain_ps * <int64_t>(x % <uint64_t>(spread_ps // grain_ps)), 0, <int32_t>i, i) != 0:
                raise MemoryError()
        e.t = 0
        for i in range(ops):
            e = heap_pop(&s)
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            if heap_push(&s, e.t + grain_ps * <int64_t>(x % <uint64_t>(spread_ps // grain_ps)), 0, e.a, e.b) != 0:
                raise MemoryError()
    finally:
        free(s.heap)
        cal_release(&s)
    return e.t
