# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The accelerator (the Wormhole method): a module of its own behind accel.pxd.

Partitions (accel_partition.pxi): connected components of the bipartite graph
of active flows and the directed ports they use (data and ACK paths), kept
incrementally: a flow that becomes active merges the partitions it touches; a
flow that goes idle or finishes marks its own partition for a split check,
made when the partition is next looked at (skip_try).

Rate windows (accel_window.pxi): per flow, the last l rate samples (one per
ACK) with monotonic deques: steady when (max - min) / mean < theta, or when the
goodputs of the window's quarters agree.

Steady skips (accel_steady.pxi): a partition is steady when all its flows are,
and each flow's goodput, measured since a flow sharing one of its ports (or
itself) last joined, left, went idle or resumed (over at least l/4 samples),
agrees between the two halves of that span within theta.  It then jumps to its
next interrupt (the horizon: the earliest time one of its flows would reach
the end of its posted data at its steady goodput, less a margin, or a known
flow start touching its ports).

The fast-forward (accel_skip.pxi), shared by the three kinds of skip: the
partition's pending events leave the heap; at the end (planned, or earlier
when an unplanned event touches it: skip-back) they return shifted by the
skipped time, every flow has advanced by its goodput times that time at
sender, receiver and in flight, queues keep their occupancy, port byte
counters (INT) advance by what the ports would have sent.

Memo replays (accel_memo.pxi) replay a stored convergence, then fast-forward
at the stored goodputs.  Mirrors (accel_mirror.pxi) hold a partition that
formed together with an identical twin and advance it as the twin advances,
until the twin converges or changes.

The kernel calls the hooks at the end of this file (HOOKS_ON; HOOKS_OFF while
acceleration is off) and nothing else of this module on its event loop.
"""
from libc.stdlib cimport calloc, malloc, realloc, free, qsort, llabs
from libc.string cimport memset, memcpy
from libc.math cimport fabs
from libc.stdint cimport int64_t, uint64_t, int32_t, uint8_t

from wormhole._core.defs cimport *
from wormhole._core.heap cimport heap_push, heap_rebuild, cal_to_heap, cal_next_entry, cal_bucket
from wormhole._core.vec cimport _append, _grow, _remove
from wormhole._core.int_hops cimport int_hops_shift

# the accelerator's counters (Accel.rejects, skipped_by, backs_by in defs.pxd), by index
REJECT_NAMES = ("pfc", "rate_spread", "goodput_halves", "no_room", "horizon_short", "split_check", "ramping",
                "window_filling", "no_window", "fresh_samples", "goodput_span", "horizon_flow_start",
                "horizon_no_goodput", "same_moment", "cycle_unmarked")
SKIPPED_BY = ("steady", "memo_replay", "memo_follow", "mirror")
PARTED_BY = ("leader_resumes", "flow_joins_leader", "leader_conn_resumes", "message_differs", "idle_differs",
             "post_missing", "quiet_queued", "skip_back", "join_missing", "join_refused", "join_several")
# why the ACKs simulated (Accel.acks_by) were not skipped: the flow keeps no rate window (shorter
# than one, or no longer active: a late ACK of an idle connection), its window is still filling since it (re)started, its rate
# is not steady, its window is steady but its partition has not been tried since it last changed,
# the sample began a skip, or the partition's last try since it changed was refused by that test
ACKS_BY = ("no_window", "window_filling", "rate_unsteady", "steady_untried", "skip_began") + tuple(
    "refused_" + name for name in REJECT_NAMES)
cdef Accel _sizes                    # (only its arrays' sizes are read)
if (len(ACKS_BY) > sizeof(_sizes.acks_by) // sizeof(int64_t)
        or len(REJECT_NAMES) > sizeof(_sizes.rejects) // sizeof(int64_t)):  # (not an assert: python -O keeps it)
    raise ImportError("Accel.acks_by / rejects (defs.pxd) hold fewer counters than ACKS_BY / REJECT_NAMES name")
BACKS_BY = ("flow_start", "post_idle_conn", "dcqcn_increase", "other")

include "accel_window.pxi"
include "accel_partition.pxi"
include "accel_steady.pxi"
include "accel_skip.pxi"
include "accel_virtual.pxi"
include "accel_onoff.pxi"
include "accel_memo.pxi"
include "accel_mirror.pxi"


# ---------------------------------------------------------------- the hooks (AccelHooks, defs.pxd)

cdef void _on_flow_active(Sim* s, int32_t fi) noexcept nogil:
    if s.flows[fi].size > s.flows[fi].snd_una:
        part_activate(s, fi)


cdef void _on_flow_done(Sim* s, int32_t fi) noexcept nogil:
    part_deactivate(s, fi)


cdef void _on_ack(Sim* s, int32_t fi) noexcept nogil:
    cdef Flow* f = &s.flows[fi]
    if s.acc.active[fi] and s.acc.win[fi].val != NULL:
        if s.acc.committed:
            win_push(s, fi, s.acc.k.cc[f.cc].steady_rate(s, fi))
        else:
            win_push(s, fi, s.acc.k.cc[f.cc].send_rate(s, fi))
        s.acc.acks_by[_ack_why(s, fi)] += 1
        if f.persistent and f.snd_una >= f.size:
            conn_idle(s, fi)
            part_deactivate(s, fi)      # an idle connection couples no partitions
    else:
        s.acc.acks_by[0] += 1


cdef inline int _ack_why(Sim* s, int32_t fi) noexcept nogil:
    """Why the partition of flow fi, which has just taken a rate sample, is not fast-forwarding
    (ACKS_BY): the flow's own window, else its partition's last refusal since it changed."""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int32_t P = a.part_of[fi]
    if w.n < a.l:
        return 1
    if not w.steady:
        return 2
    if P < 0:
        return 0
    if a.part_skip[P] >= 0:
        return 4
    if a.part_why[P] >= 0 and (a.part_why[P] >> 8) == a.part_ver[P]:
        return 5 + (a.part_why[P] & 0xff)
    return 3


cdef void _on_message(Sim* s, int32_t fi) noexcept nogil:
    mirror_follow_message(s, fi)        # mirrors following this connection report theirs too


cdef bint _on_post(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil:
    cdef int32_t k = -1
    if s.acc.n_mirroring > 0:
        if mirror_take_post(s, fi, nbytes):     # a mirror's connection: the same data as its leader's
            return True
        mirror_lead_post(s, fi, nbytes)         # a leader's: its mirrors wait for theirs
    if skip_extend(s, fi, nbytes):          # a connection sending through a skip: more to send
        return True
    # (a mirror waiting for this connection to join it, as its twin joins the leader, is kept)
    skip_back_flow(s, fi, mirror_awaits(s, fi, nbytes, &k) if s.acc.n_mirroring > 0 else -1)
    if s.acc.active[fi] and s.flows[fi].snd_una >= s.flows[fi].size:
        conn_resume(s, fi)
    elif not s.acc.active[fi] and s.flows[fi].persistent and s.acc.win[fi].val != NULL:
        conn_wake(s, fi)                # flow_active (after the post) joins it again
    return False


cdef bint _on_rate_timer(Sim* s, int32_t fi) noexcept nogil:
    return increase_in_skip(s, fi)


cdef bint _on_skip_end(Sim* s, int32_t slot, int64_t token) noexcept nogil:
    if s.acc.skips[slot].token == token and s.acc.skips[slot].part >= 0:
        skip_end(s, slot, True)
        return True
    return False


cdef bint _on_note_due(Sim* s, int32_t fi, int64_t b) noexcept nogil:
    if fi < 0:
        return mirror_check(s, -1 - fi, b)      # the moment of a leader's post has passed
    if b < 0:
        return rcv_note_due(s, fi, -1 - b)
    return msg_note_due(s, fi, b)


cdef bint _on_plan_note(Sim* s, int32_t fi, bint rcv) noexcept nogil:
    return rcv_plan(s, fi) if rcv else note_plan(s, fi)


cdef int64_t _on_skipped_bytes(Sim* s, int32_t fi, bint rcv) noexcept nogil:
    cdef Skip* sk = NULL
    cdef int32_t i = skip_find(s, fi, &sk)
    return 0 if i < 0 else (virt_rcv_bytes(s, sk, i) if rcv else virt_bytes(s, sk, i))


cdef void _on_delivered(Sim* s, int32_t fi) noexcept nogil:
    mirror_follow_delivered(s, fi)      # mirrors following this flow report their deliveries too


cdef int _on_grow_flows(Sim* s, int32_t old_cap, int32_t cap) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef int32_t i
    if (_grow(<void**>&a.win, cap * sizeof(FlowWin)) or _grow(<void**>&a.part_of, cap * sizeof(int32_t))
            or _grow(<void**>&a.active, cap * sizeof(uint8_t)) or _grow(<void**>&a.mark, cap * sizeof(uint8_t))):
        return -1
    memset(&a.win[old_cap], 0, (cap - old_cap) * sizeof(FlowWin))
    for i in range(old_cap, cap):
        a.part_of[i] = -1
        a.active[i] = 0
        a.mark[i] = 0
    return 0


cdef void _on_release(Sim* s) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef int32_t i
    if a.win != NULL:
        for i in range(s.n_flows):
            win_free(s, i)
    if a.port_flows != NULL:
        for i in range(s.n_ports):
            free(a.port_flows[i])
    for i in range(a.n_parts):
        free(a.part_flows[i])
    for i in range(a.n_skips):
        free(a.skips[i].ev); free(a.skips[i].flows); free(a.skips[i].goodput)
    free(a.win); free(a.part_of); free(a.active); free(a.mark)
    free(a.port_part); free(a.port_flows); free(a.port_nf); free(a.port_cap)
    free(a.part_flows); free(a.part_nf); free(a.part_cap); free(a.part_skip)
    for i in range(a.n_pool):
        free(a.pool[i])
    for i in range(a.n_skips):
        free(a.skips[i].memo_cc); free(a.skips[i].memo_gp)
        free(a.skips[i].lead_flows); free(a.skips[i].lead_una0); free(a.skips[i].lead_rcv0)
        free(a.skips[i].onoff); free(a.skips[i].run_t); free(a.skips[i].run_b); free(a.skips[i].run_r)
        free(a.skips[i].dry_lim); free(a.skips[i].cyc_g)
    free(a.gp); free(a.oo); free(a.cg); free(a.lim); free(a.cm)
    free(a.part_ver); free(a.part_watch); free(a.part_why); free(a.mnotes)
    free(a.free_parts); free(a.skips); free(a.scratch); free(a.part_dirty)
    free(a.pool)


# the no-op row: acceleration off (Parsimon's default strategy: the kernel runs as if
# there were no accelerator, at the cost of one indirect call per hook)

cdef void _off_flow(Sim* s, int32_t fi) noexcept nogil:
    pass


cdef bint _off_post(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil:
    return False


cdef bint _off_flow_query(Sim* s, int32_t fi) noexcept nogil:
    return False


cdef bint _off_event(Sim* s, int32_t a, int64_t b) noexcept nogil:
    return False


cdef bint _off_plan(Sim* s, int32_t fi, bint rcv) noexcept nogil:
    return False


cdef int64_t _off_bytes(Sim* s, int32_t fi, bint rcv) noexcept nogil:
    return 0


cdef double _off_port(Sim* s, int32_t port) noexcept nogil:
    return 0.0


cdef int _off_grow(Sim* s, int32_t old_cap, int32_t cap) noexcept nogil:
    return 0


cdef void _off_release(Sim* s) noexcept nogil:
    pass


cdef AccelHooks HOOKS_ON
cdef AccelHooks HOOKS_OFF

HOOKS_ON.flow_active = _on_flow_active
HOOKS_ON.flow_done = _on_flow_done
HOOKS_ON.on_ack = _on_ack
HOOKS_ON.on_message = _on_message
HOOKS_ON.on_delivered = _on_delivered
HOOKS_ON.on_post = _on_post
HOOKS_ON.rate_timer = _on_rate_timer
HOOKS_ON.skip_end = _on_skip_end
HOOKS_ON.note_due = _on_note_due
HOOKS_ON.plan_note = _on_plan_note
HOOKS_ON.skipped_bytes = _on_skipped_bytes
HOOKS_ON.port_skipped = port_under_way
HOOKS_ON.grow_flows = _on_grow_flows
HOOKS_ON.release = _on_release

HOOKS_OFF.flow_active = _off_flow
HOOKS_OFF.flow_done = _off_flow
HOOKS_OFF.on_ack = _off_flow
HOOKS_OFF.on_message = _off_flow
HOOKS_OFF.on_delivered = _off_flow
HOOKS_OFF.on_post = _off_post
HOOKS_OFF.rate_timer = _off_flow_query
HOOKS_OFF.skip_end = _off_event
HOOKS_OFF.note_due = _off_event
HOOKS_OFF.plan_note = _off_plan
HOOKS_OFF.skipped_bytes = _off_bytes
HOOKS_OFF.port_skipped = _off_port
HOOKS_OFF.grow_flows = _off_grow
HOOKS_OFF.release = _off_release


cdef const AccelHooks* accel_hooks_off() noexcept nogil:
    return &HOOKS_OFF


cdef int accel_setup(Sim* s, object cfg, const KernelOps* k) except -1:
    cdef Accel* a = &s.acc
    cdef int32_t i
    if cfg is None:
        s.hooks = &HOOKS_OFF
        return 0
    a.on = 1
    a.k = k
    a.l = cfg.l
    a.lmask = 1
    while a.lmask < a.l:
        a.lmask <<= 1
    a.lmask -= 1
    a.theta = cfg.theta
    a.min_skip = cfg.min_skip
    a.margin = cfg.margin
    a.check_every = cfg.check_every
    a.quarters = 0 if cfg.gp_span < 0 else (2 if cfg.quarters_all else 1)
    a.committed = cfg.committed
    a.onoff = cfg.onoff
    a.cycle = cfg.cycle and cfg.onoff      # (cycle members are on/off members)
    a.gp_span = cfg.gp_span
    a.back_why = 3
    a.join_why = 1
    a.memo = cfg.memo
    a.port_part = <int32_t*>malloc(s.n_ports * sizeof(int32_t))
    a.port_flows = <int32_t**>calloc(s.n_ports, sizeof(int32_t*))
    a.port_nf = <int32_t*>calloc(s.n_ports, sizeof(int32_t))
    a.port_cap = <int32_t*>calloc(s.n_ports, sizeof(int32_t))
    s.hooks = &HOOKS_ON                 # (release frees what was allocated, even on failure)
    if a.port_part == NULL or a.port_flows == NULL or a.port_nf == NULL or a.port_cap == NULL:
        raise MemoryError()
    for i in range(s.n_ports):
        a.port_part[i] = -1
    return 0


# ---------------------------------------------------------------- Python-facing (Kernel's methods)

cdef list take_memo_notes(Sim* s):
    cdef Accel* a = &s.acc
    out = [("formed" if a.mnotes[3 * i] == 0 else "steady", a.mnotes[3 * i + 1], a.mnotes[3 * i + 2])
           for i in range(a.n_mnotes)]
    a.n_mnotes = 0
    return out


cdef tuple partition_members(Sim* s, int32_t P):
    cdef Accel* a = &s.acc
    if P < 0 or P >= a.n_parts:
        return (-1, [])
    if a.part_dirty[P]:
        return (-1, [])
    return (a.part_ver[P], [a.part_flows[P][i] for i in range(a.part_nf[P])])


cdef void watch_partition(Sim* s, int32_t P, int32_t version) noexcept nogil:
    cdef Accel* a = &s.acc
    if 0 <= P < a.n_parts and a.part_ver[P] == version:
        a.part_watch[P] = 1


cdef double steady_goodput(Sim* s, int32_t fi) noexcept nogil:
    cdef Skip* sk = NULL
    cdef int32_t i
    if not s.acc.on or fi < 0 or fi >= s.n_flows or not s.acc.active[fi]:
        return 0.0
    i = skip_find(s, fi, &sk)
    if i >= 0:
        return sk.goodput[i]
    if s.acc.win[fi].val == NULL or s.acc.win[fi].n < s.acc.l:
        return 0.0
    return _goodput(s, fi)


cdef list partitions(Sim* s):
    cdef Accel* a = &s.acc
    cdef int32_t p
    out = []
    if not a.on:
        return out
    for p in range(a.n_parts):
        if a.part_nf[p] == 0:
            continue
        if a.part_dirty[p]:
            out.extend(part_components(s, p))   # what its split check will find, found without making it
        else:
            out.append(sorted(a.part_flows[p][i] for i in range(a.part_nf[p])))
    return out


cdef list skipping(Sim* s):
    cdef Accel* a = &s.acc
    out = []
    for i in range(a.n_skips):
        if a.skips[i].part >= 0:
            out.append((sorted(a.skips[i].flows[j] for j in range(a.skips[i].n_flows)), a.skips[i].t0,
                        a.skips[i].t1))
    return out


cdef dict stats(Sim* s):
    cdef Accel* a = &s.acc
    cdef double way[4]
    skipped_under_way(s, way)          # fast-forwards still under way count what they skipped so far
    cdef int64_t under = <int64_t>(way[0] + way[1] + way[2] + way[3] + 0.5)
    return {
        "events_skipped": a.events_skipped + under,
        "events_skipped_under_way": under,
        "skips": a.skips_started,
        "skip_backs": a.skip_backs,
        "skip_extends": a.skip_extends,
        "onoff_flows": a.onoff_flows,
        "onoff_resumes": a.onoff_resumes,
        "onoff_tests": a.onoff_tests,
        "onoff_no_cycle": a.onoff_no_cycle,
        "onoff_unsteady": a.onoff_unsteady,
        "onoff_cycle": a.onoff_cycle,
        "time_skipped_ps": a.time_skipped,
        "bytes_skipped": a.bytes_skipped,
        "steady_periods": a.steady_periods,
        "partition_merges": a.merges,
        "partition_splits": a.splits,
        "memo_applied": a.memo_applied,
        "memo_follows": a.memo_follows,
        "memo_mirrors": a.mirrors,
        "memo_mirrors_done": a.mirrors_done,
        "memo_mirrors_quiet": a.mirrors_quiet,
        "memo_mirror_follows": a.mirror_follows,
        "memo_mirror_joins": a.mirror_joins,
        "skip_rejects": {name: a.rejects[k] for k, name in enumerate(REJECT_NAMES)},
        "reject_mean_flows": a.rej_flows / max(1, sum(a.rejects[k] for k in range(16))),
        "skip_mean_flows": a.skip_flows / max(1, a.skips_started),
        "reject_steady_share": <double>a.rej_steady / max(1, a.rej_tested),
        "reject_one_short": a.rej_one_short,
        "events_skipped_by": {name: a.skipped_by[k] + <int64_t>(way[k] + 0.5) for k, name in enumerate(SKIPPED_BY)},
        "skip_backs_by": {name: a.backs_by[k] for k, name in enumerate(BACKS_BY)},
        "acks_by": {name: a.acks_by[k] for k, name in enumerate(ACKS_BY)},
        "mirror_parts_by": {name: a.mirror_parts_by[k] for k, name in enumerate(PARTED_BY)},
    }
