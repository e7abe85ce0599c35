# Partitions (included by accel.pyx).  Contract: Accel.part_of / port_part / part_flows
# hold the connected components of active flows x the directed ports of their data and
# ACK paths.  part_activate merges (ending the skips and mirrors it touches),
# part_deactivate leaves a split check pending (Accel.part_dirty), part_split makes it;
# part_components finds the same components without changing anything.  A change on a
# flow's ports restarts the goodput span of the flows there (epoch_near).


cdef int32_t part_new(Sim* s) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef int32_t p, cap
    if a.n_free > 0:
        a.n_free -= 1
        a.part_dirty[a.free_parts[a.n_free]] = 0
        return a.free_parts[a.n_free]
    if a.n_parts == a.parts_cap:
        cap = a.parts_cap * 2 + 16
        a.part_flows = <int32_t**>realloc(a.part_flows, cap * sizeof(int32_t*))
        a.part_nf = <int32_t*>realloc(a.part_nf, cap * sizeof(int32_t))
        a.part_cap = <int32_t*>realloc(a.part_cap, cap * sizeof(int32_t))
        a.part_skip = <int32_t*>realloc(a.part_skip, cap * sizeof(int32_t))
        a.part_dirty = <uint8_t*>realloc(a.part_dirty, cap * sizeof(uint8_t))
        a.part_ver = <int32_t*>realloc(a.part_ver, cap * sizeof(int32_t))
        a.part_watch = <uint8_t*>realloc(a.part_watch, cap * sizeof(uint8_t))
        a.part_why = <int64_t*>realloc(a.part_why, cap * sizeof(int64_t))
        a.free_parts = <int32_t*>realloc(a.free_parts, cap * sizeof(int32_t))
        if (a.part_flows == NULL or a.part_nf == NULL or a.part_cap == NULL or a.part_skip == NULL
                or a.free_parts == NULL or a.part_dirty == NULL or a.part_ver == NULL or a.part_watch == NULL
                or a.part_why == NULL):
            s.fail = 1
            return -1
        for p in range(a.parts_cap, cap):
            a.part_flows[p] = NULL
            a.part_nf[p] = 0
            a.part_cap[p] = 0
            a.part_skip[p] = -1
            a.part_dirty[p] = 0
            a.part_ver[p] = 0
            a.part_watch[p] = 0
            a.part_why[p] = -1
        a.parts_cap = cap
    p = a.n_parts
    a.n_parts += 1
    return p


cdef inline void _flow_ports(Sim* s, int32_t fi, int32_t** out, int32_t* n) noexcept nogil:
    """The flow's data ports then its ACK ports are contiguous in s.paths."""
    cdef Flow* f = &s.flows[fi]
    out[0] = &s.paths[f.path_off]
    n[0] = f.path_len + f.rpath_len


cdef void _relabel(Sim* s, int32_t fi, int32_t part) noexcept nogil:
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i
    a.part_of[fi] = part
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        a.port_part[ports[i]] = part


cdef void epoch_near(Sim* s, int32_t fi) noexcept nogil:
    """Flow fi joins, leaves, goes idle or resumes: the goodput of every flow
    that shares one of its ports (and its own) is measured afresh from now on
    (their rate windows keep their samples), and so are its ports' transmission ends
    per packet (Port.txd_per_pkt restarts its mean: rail-local-pp DCQCN's leaf ports had
    carried ACKs alone before the DP ring, ended 0.3% of them with an event, and came to the
    ring's skip at 0.65 where its data and ACKs end 0.95 so: the skip counted 15% too few).
    Flows further away in the partition keep their span: a change reaches them only through a neighbour,
    whose own fresh span then blocks the partition's skip (l/4 samples) while
    the change travels, and a goodput that moved shows in their halves test."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, k, q
    _flow_ports(s, fi, &ports, &n)
    if a.win[fi].val != NULL:
        a.win[fi].ep_t = s.now
    for i in range(n):
        s.ports[ports[i]].txd_samples = 0   # the port's traffic changes: its transmission ends per packet afresh
        for k in range(a.port_nf[ports[i]]):
            q = a.port_flows[ports[i]][k]
            if a.win[q].val != NULL:
                a.win[q].ep_t = s.now


cdef void part_activate(Sim* s, int32_t fi) noexcept nogil:
    """A flow starts sending: merge the partitions its ports touch."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, j, p, best = -1, other, g, adk = -1
    cdef int32_t adm
    cdef bint woke = a.waking
    if a.active[fi]:
        return
    mirror_join(s, fi)                       # a leader's connection resuming: its mirrors follow, or part
    adm = mirror_admit(s, fi, &adk)          # the twin of a flow joining a leader: its mirror takes it
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):                       # an unplanned event for a skipping partition: skip back
        p = a.port_part[ports[i]]
        if p >= 0 and a.part_skip[p] >= 0 and a.part_skip[p] != adm:
            a.back_why = 0
            skip_end(s, a.part_skip[p], False)
            a.back_why = 3
    mirrors_on_join(s, fi)                   # mirrors of the partitions it joins: wait for its twin, or part
    for i in range(n):
        p = a.port_part[ports[i]]
        if p >= 0 and (best < 0 or a.part_nf[p] > a.part_nf[best]):
            best = p
    if best < 0:
        best = part_new(s)
        if best < 0:
            return
    for i in range(n):
        other = a.port_part[ports[i]]
        if other >= 0 and other != best:
            a.merges += 1
            if a.part_dirty[other]:
                a.part_dirty[best] = 1
            for j in range(a.part_nf[other]):
                g = a.part_flows[other][j]
                _append(&a.part_flows[best], &a.part_nf[best], &a.part_cap[best], g)
                _relabel(s, g, best)
            a.part_nf[other] = 0
            a.free_parts[a.n_free] = other
            a.n_free += 1
    if _append(&a.part_flows[best], &a.part_nf[best], &a.part_cap[best], fi) != 0:
        s.fail = 1
        return
    for i in range(n):
        if _append(&a.port_flows[ports[i]], &a.port_nf[ports[i]], &a.port_cap[ports[i]], fi) != 0:
            s.fail = 1
            return
    _relabel(s, fi, best)
    a.active[fi] = 1
    a.part_ver[best] += 1
    a.part_watch[best] = 0
    if adm >= 0:
        mirror_add(s, adm, fi, adk)
    if a.memo and a.part_skip[best] < 0:     # (a mirror that took it is no partition to look up)
        memo_note(s, 0, best)
    # a flow too short to fill a window (one sample per ACK, at most one ACK per
    # packet) can never be steady: it keeps no window and costs nothing per ACK
    if s.flows[fi].persistent or s.flows[fi].size >= a.l * <int64_t>s.p.mtu:
        if a.win[fi].val == NULL or (s.flows[fi].persistent and not a.waking):
            win_alloc(s, fi)
    a.waking = 0
    epoch_near(s, fi)
    if woke:
        anchor_near(s, fi)          # a connection resuming after an idle spell: a cycle anchor


cdef void part_deactivate(Sim* s, int32_t fi) noexcept nogil:
    """A flow stops sending: it leaves its partition, which is marked for a
    split check of its own flows."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, P
    if not a.active[fi]:
        return
    P = a.part_of[fi]
    mirror_follow_idle(s, fi)       # its mirrors follow it, or part
    epoch_near(s, fi)
    _flow_ports(s, fi, &ports, &n)
    for i in range(n):
        _remove(a.port_flows[ports[i]], &a.port_nf[ports[i]], fi)
        if a.port_nf[ports[i]] == 0:
            a.port_part[ports[i]] = -1
    _remove(a.part_flows[P], &a.part_nf[P], fi)
    a.part_of[fi] = -1
    a.active[fi] = 0
    if not s.flows[fi].persistent:
        win_free(s, fi)
    if a.part_nf[P] == 0:
        a.part_dirty[P] = 0
        a.free_parts[a.n_free] = P
        a.n_free += 1
        return
    a.part_dirty[P] = 1          # split check deferred until the partition is looked at
    a.part_ver[P] += 1
    a.part_watch[P] = 0


cdef void part_split(Sim* s, int32_t P) noexcept nogil:
    """Split check of one partition: its remaining flows' components (BFS over
    its own flows only)."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, j, k, head, tail, g, h, q, comp, first = 1
    cdef int32_t* pp
    cdef int32_t np_
    a.part_dirty[P] = 0
    a.splits += 1
    if a.part_nf[P] == 0:
        return
    if a.scratch_cap < a.part_nf[P]:
        a.scratch = <int32_t*>realloc(a.scratch, (a.part_nf[P] + 16) * sizeof(int32_t))
        a.scratch_cap = a.part_nf[P] + 16
        if a.scratch == NULL:
            s.fail = 1
            return
    # copy members, clear marks
    np_ = a.part_nf[P]
    pp = <int32_t*>malloc(np_ * sizeof(int32_t))
    if pp == NULL:
        s.fail = 1
        return
    for i in range(np_):
        pp[i] = a.part_flows[P][i]
        a.mark[pp[i]] = 0
    a.part_nf[P] = 0
    for i in range(np_):
        g = pp[i]
        if a.mark[g]:
            continue
        comp = P if first else part_new(s)
        a.part_ver[comp] += 1
        a.part_watch[comp] = 0
        first = 0
        head = 0
        tail = 0
        a.scratch[tail] = g
        tail += 1
        a.mark[g] = 1
        while head < tail:
            h = a.scratch[head]
            head += 1
            _append(&a.part_flows[comp], &a.part_nf[comp], &a.part_cap[comp], h)
            _relabel(s, h, comp)
            _flow_ports(s, h, &ports, &n)
            for j in range(n):
                for k in range(a.port_nf[ports[j]]):
                    q = a.port_flows[ports[j]][k]
                    if not a.mark[q]:
                        a.mark[q] = 1
                        a.scratch[tail] = q
                        tail += 1
    free(pp)


cdef void conn_resume(Sim* s, int32_t fi) noexcept nogil:
    """A connection gets data again: its idle time is left out of its goodput,
    and its partition, which has one more sending flow, is looked up in the
    memo like a newly formed one."""
    cdef Accel* a = &s.acc
    cdef FlowWin* w = &a.win[fi]
    cdef int32_t P = a.part_of[fi]
    if w.idle_since >= 0:
        w.gap = s.now - w.idle_since
        w.idle_total += s.now - w.idle_since
        w.idle_since = -1
    if P >= 0:
        mirrors_end(s, P)
        a.part_ver[P] += 1
        a.part_watch[P] = 0
        epoch_near(s, fi)
        anchor_near(s, fi)
        if a.memo:
            memo_note(s, 0, P)


cdef inline void conn_wake(Sim* s, int32_t fi) noexcept nogil:
    """An idle connection, out of every partition, gets data: its idle time is
    left out of its goodput and its rate window keeps its samples when
    part_activate joins it again."""
    cdef FlowWin* w = &s.acc.win[fi]
    if w.idle_since >= 0:
        w.gap = s.now - w.idle_since
        w.idle_total += s.now - w.idle_since
        w.idle_since = -1
    s.acc.waking = 1


cdef inline void conn_idle(Sim* s, int32_t fi) noexcept nogil:
    """A connection has nothing left to send (everything acknowledged)."""
    cdef FlowWin* w = &s.acc.win[fi]
    if w.val != NULL and w.idle_since < 0:
        w.idle_since = s.now
        epoch_near(s, fi)


cdef list part_components(Sim* s, int32_t P):
    """The connected components of partition P's flows (sorted flow lists, in the
    order part_split finds them), found without changing anything: a pending split
    check stays pending, ids, versions and counters stay as they are."""
    cdef Accel* a = &s.acc
    cdef int32_t* ports
    cdef int32_t n, i, j, k, g, h, q
    cdef Py_ssize_t head
    seen = set()
    out = []
    for i in range(a.part_nf[P]):
        g = a.part_flows[P][i]
        if g in seen:
            continue
        comp = [g]
        seen.add(g)
        head = 0
        while head < len(comp):
            h = comp[head]
            head += 1
            _flow_ports(s, h, &ports, &n)
            for j in range(n):
                for k in range(a.port_nf[ports[j]]):
                    q = a.port_flows[ports[j]][k]
                    if q not in seen:
                        seen.add(q)
                        comp.append(q)
        out.append(sorted(comp))
    return out
