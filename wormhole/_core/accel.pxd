# cython: language_level=3
"""The accelerator's contract (module wormhole._core.accel: the Wormhole method).

The kernel sees the accelerator through one row of hooks, ``AccelHooks``
(defs.pxd), held in ``Sim.hooks``: a Kernel starts with the no-op row
(``accel_hooks_off``), every hook of which does nothing, and ``accel_setup``
switches it to the accelerator's row when the parameters ask for acceleration.
The accelerator sees the kernel through ``KernelOps`` (defs.pxd, ``Accel.k``):
the CC table and a few port and notice services.  State is shared only through
the structs of defs.pxd (``Accel`` is the accelerator's; it reads the kernel's
flows, ports and heap).

Besides the hooks the kernel uses ``port_frozen`` and ``window_prefetch`` (inline
below: a read of the shared state on the kernel's hot path, no call) and the
Python-facing calls its methods forward (memo notices, memo replays, mirrors, partitions, statistics).
The last block names internals that only the tests' wrappers (testing.pyx) call.
"""
from libc.stdint cimport int64_t, int32_t
from wormhole._core.defs cimport Sim, Skip, AccelHooks, KernelOps, FlowWin, wh_prefetch


# ---------------------------------------------------------------- set-up (Kernel)

# the no-op row: what Sim.hooks holds until accel_setup switches acceleration on
cdef const AccelHooks* accel_hooks_off() noexcept nogil
# cfg: the KernelParams' accel (None: acceleration stays off); k: the kernel's services.
# Sets Sim.acc from cfg, allocates its per-port arrays and installs the accelerator's hooks.
cdef int accel_setup(Sim* s, object cfg, const KernelOps* k) except -1


# ---------------------------------------------------------------- the kernel's hot path

cdef inline bint port_frozen(Sim* s, int32_t port) noexcept nogil:
    """The port belongs to a partition being fast-forwarded: it sends nothing."""
    cdef int32_t p
    if not s.acc.on:
        return False
    p = s.acc.port_part[port]
    return p >= 0 and s.acc.part_skip[p] >= 0


cdef inline void window_prefetch(Sim* s, int32_t fi) noexcept nogil:
    """Start loading the lines of flow fi's rate window that the sample its ACK is about to
    give will read and write (its slot, the samples leaving the window and its newer half,
    the deques' ends): the kernel calls it as the ACK reaches the sender, so the loads
    overlap the congestion control's reaction.  With many flows a window's lines are out of
    the cache between two of its ACKs (gpt13b's fat-tree, moe-ep8).  A hint only."""
    cdef FlowWin* w
    cdef int64_t k, M, L
    if not s.acc.on:
        return
    w = &s.acc.win[fi]
    if w.val == NULL:
        return
    k = w.n
    M = s.acc.lmask
    L = s.acc.l
    wh_prefetch(&w.val[k & M])
    wh_prefetch(&w.t[k & M])
    wh_prefetch(&w.una[k & M])
    wh_prefetch(&w.idl[k & M])
    wh_prefetch(&w.val[(k - L // 2) & M])
    wh_prefetch(&w.val[(k - L) & M])
    wh_prefetch(&w.qmax[w.maxh & M])
    wh_prefetch(&w.qmin[w.minh & M])
    wh_prefetch(&w.qmax[(w.maxt - 1) & M])
    wh_prefetch(&w.qmin[(w.mint - 1) & M])


cdef inline bint memo_notes_due(Sim* s) noexcept nogil:
    """Memo notices wait for Python (run_loop returns to let the memo layer act on them)."""
    return s.acc.n_mnotes > 0


# ---------------------------------------------------------------- Python-facing (Kernel's methods)

cdef list take_memo_notes(Sim* s)           # [(kind 'formed'/'steady', partition, version)] since the last call
cdef tuple partition_members(Sim* s, int32_t P)  # (version, flows), (-1, []) if unknown or split check pending
cdef void watch_partition(Sim* s, int32_t P, int32_t version) noexcept nogil  # 'steady' notice when it converges
# replay a stored convergence of P (memo replays: accel_memo.pxi); 0, or -1 if P or the room refuse it
cdef int memo_start(Sim* s, int32_t P, int64_t dt, int32_t* flows, int64_t* nbytes, double* cc, double* gp,
                    int32_t n) noexcept nogil
# hold P as a mirror of its twin lead (mirrors: accel_mirror.pxi); 0, or -1
cdef int mirror_start(Sim* s, int32_t P, int32_t lead, int32_t* flows, int32_t* lead_flows,
                      int32_t n) noexcept nogil
cdef int32_t mirror_finish(Sim* s, int32_t lead) noexcept nogil   # the twin converged: mirrors end; how many
cdef double steady_goodput(Sim* s, int32_t fi) noexcept nogil      # its skip's goodput, or its window's, or 0
cdef list partitions(Sim* s)                # current partitions (sorted flow lists); changes nothing
cdef list skipping(Sim* s)                  # [(flows, start ps, planned end ps)] of the skips in progress
cdef dict stats(Sim* s)                     # the accelerator's counters (Kernel.stats)


# ---------------------------------------------------------------- internals (the tests' wrappers)

cdef inline double _rate_between(int64_t ta, int64_t ua, int64_t ia, int64_t tb, int64_t ub,
                                 int64_t ib) noexcept nogil:
    """Acknowledged bytes per ps from (time, snd_una, idle total) a to b; 0 if none."""
    cdef int64_t busy = (tb - ta) - (ib - ia)       # idle gaps between messages do not count
    if busy <= 0 or ub <= ua:
        return 0.0
    return <double>(ub - ua) / <double>busy

cdef int win_alloc(Sim* s, int32_t fi) noexcept nogil           # rate windows (accel_window.pxi)
cdef void win_push(Sim* s, int32_t fi, int64_t rate) noexcept nogil
cdef void win_free(Sim* s, int32_t fi) noexcept nogil
cdef double _goodput(Sim* s, int32_t fi) noexcept nogil         # goodput measurement (accel_steady.pxi)
cdef double _steady_goodput(Sim* s, int32_t fi) noexcept nogil
cdef double _horizon(Sim* s, int32_t P, bint onoff=*) noexcept nogil  # time to the first flow running short
cdef void _reject_flow(Sim* s, int k, int32_t P) noexcept nogil  # a refusal by one flow's test, and how close P was
cdef bint _same_moment_pending(Sim* s, int32_t P) noexcept nogil  # an event of P still due at s.now (no skip now)
cdef void _lockstep_goodputs(Sim* s, int32_t P) noexcept nogil  # flows of P in lockstep get one goodput (accel_steady.pxi)
cdef void skip_try(Sim* s, int32_t P) noexcept nogil             # fast-forward P if every flow of it is steady
cdef bint _moment_open(Sim* s, int32_t P) noexcept nogil         # any event of P still due at s.now (no memo replay now)
cdef int64_t skip_bytes(Sim* s, Skip* sk, int32_t i, int64_t dt) noexcept nogil  # bytes advanced in a skip
cdef bint _data_alone(Sim* s, int32_t P, int32_t fi) noexcept nogil  # no other data on its data path (accel_steady.pxi)
cdef int64_t onoff_acked(Sim* s, Skip* sk, int32_t i, int64_t t) noexcept nogil      # an on/off member's bytes
cdef int64_t onoff_delivered(Sim* s, Skip* sk, int32_t i, int64_t t) noexcept nogil  # ... at its receiver
cdef int64_t onoff_note_time(Sim* s, Skip* sk, int32_t i, int64_t need, bint rcv) noexcept nogil
cdef void onoff_resume(Sim* s, Skip* sk, int32_t i) noexcept nogil   # data posted to it
cdef int64_t onoff_bound(Sim* s, Skip* sk, int64_t t_end) noexcept nogil  # the skip's planned end
cdef int64_t cycle_idle(Sim* s, int32_t fi) noexcept nogil     # idle in its own last cycle
cdef bint cycle_goodput(Sim* s, int32_t q, double theta, double* g) noexcept nogil  # over a steady ring cycle
cdef bint own_cycle(Sim* s, int32_t fi, double theta, double* g) noexcept nogil  # its own, on schedule (steady_cycle)
cdef int _gp_reserve(Sim* s, int32_t n) noexcept nogil  # skip_try's scratch (gp, oo, cg, lim, cm) for n flows
cdef double _first_run_rate(Sim* s, int32_t fi, double gc) noexcept nogil  # a member's run under way at its skip's start
cdef void _shift_window(Sim* s, int32_t fi, int64_t B, int64_t dt, int64_t t0) noexcept nogil  # a skip's (dt, B) on it
# mirrors' posts (accel_mirror.pxi): a post to a mirror's connection taken or not; one to a leader's;
# the verdict at the end of the moment (-1: the same data on both, else PARTED_BY index)
cdef bint mirror_take_post(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil
cdef void mirror_lead_post(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil
cdef int32_t mirror_check_why(Sim* s, Skip* sk) noexcept nogil
