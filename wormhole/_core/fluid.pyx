# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The flow backend's hot path in C: weighted max-min by progressive filling
with a heap of link shares (O(incidences x log links) per solve), plus
advancing the fluid flows and finding the earliest completion.

A change (a flow joins or leaves) re-solves a region that starts with the
flows on the changed flow's links and is filled with every other rate held
fixed.  The region grows, and is filled again, where the result disagrees
with a fixed flow: an outside flow with a larger share on a region flow's
bottleneck, or a region flow whose rate changed on an outside flow's
bottleneck.  When neither happens every flow has a saturated bottleneck on
which its share is the largest: the max-min allocation of the whole component
(``tests/test_flowlevel.py`` checks it against a full solve).  In
``bench/flow_backend.py`` a change moves about 7 of the ~140 flows of its
component and the filled regions hold about 36 flows per change, where a
whole-component solve fills ~140.  After four rounds the
region takes in, at once, every flow reachable through saturated links."""
from libc.stdlib cimport malloc, realloc, free
from libc.stdint cimport int32_t, int64_t

cdef double INF = 1e300


cdef void* _grow(void* p, size_t n, size_t size) except NULL:
    """realloc or raise MemoryError (the old block stays owned by the caller on failure)."""
    cdef void* q = realloc(p, n * size if n > 0 else size)
    if q == NULL:
        raise MemoryError()
    return q


cdef struct HeapItem:
    double key
    int32_t id          # link id, or -(flow id + 1) for a flow's own bound


cdef class FluidSolver:
    """Links 0..n-1 with capacities (bytes per ps); flows added with their links,
    weight and rate bound; join / leave re-solve the component; advance / next
    completion over the active flows."""
    cdef int32_t nl, nf, cap_f
    cdef double* cap
    cdef double* rem
    cdef double* wsum
    cdef int32_t** lflows
    cdef int32_t* lnf
    cdef int32_t* lcap
    cdef int64_t* lmark
    cdef int32_t* foff
    cdef int32_t* flen
    cdef int32_t* flinks
    cdef double* fcoef              # a flow's consumption per unit of rate on each of its links
    cdef int64_t nlinks_used, cap_links
    cdef double* w
    cdef double* bound
    cdef double* rate
    cdef double* remaining
    cdef int64_t* fmark
    cdef char* frozen
    cdef int32_t* act
    cdef int32_t* apos
    cdef int32_t nact
    cdef int64_t epoch
    cdef HeapItem* heap
    cdef int64_t hn, hcap
    cdef int32_t* comp              # the region: flows being re-solved
    cdef double* lload              # sum of the active flows' rates on each link
    cdef int64_t* linit             # epoch at which a link's rem / wsum were set up
    cdef double* oldrate            # a region flow's rate before this solve
    cdef int32_t* bneck             # the link that froze a flow (-1: its own bound)
    cdef int32_t* lun               # unfrozen region flows on a link during a fill
    cdef public int64_t region_flows   # flows re-solved, summed over solves
    cdef public int64_t solves

    def __cinit__(self, caps):
        cdef int32_t i
        self.nl = len(caps)
        self.cap = <double*>malloc(self.nl * sizeof(double))
        self.rem = <double*>malloc(self.nl * sizeof(double))
        self.wsum = <double*>malloc(self.nl * sizeof(double))
        self.lflows = <int32_t**>malloc(self.nl * sizeof(int32_t*))
        self.lnf = <int32_t*>malloc(self.nl * sizeof(int32_t))
        self.lcap = <int32_t*>malloc(self.nl * sizeof(int32_t))
        self.lmark = <int64_t*>malloc(self.nl * sizeof(int64_t))
        self.lload = <double*>malloc(self.nl * sizeof(double))
        self.linit = <int64_t*>malloc(self.nl * sizeof(int64_t))
        self.lun = <int32_t*>malloc(self.nl * sizeof(int32_t))
        if (self.lun == NULL or self.cap == NULL or self.rem == NULL or self.wsum == NULL or self.lflows == NULL
                or self.lnf == NULL or self.lcap == NULL or self.lmark == NULL or self.lload == NULL
                or self.linit == NULL):
            raise MemoryError()
        for i in range(self.nl):
            self.cap[i] = caps[i]
            self.lflows[i] = NULL
            self.lnf[i] = 0
            self.lcap[i] = 0
            self.lmark[i] = 0
            self.lload[i] = 0.0
            self.linit[i] = 0
        self.nf = 0
        self.cap_f = 0
        self.epoch = 1

    def __dealloc__(self):
        cdef int32_t i
        if self.lflows != NULL:
            for i in range(self.nl):
                free(self.lflows[i])
        free(self.cap); free(self.rem); free(self.wsum); free(self.lflows); free(self.lnf)
        free(self.lcap); free(self.lmark); free(self.foff); free(self.flen); free(self.flinks); free(self.fcoef); free(self.w)
        free(self.bound); free(self.rate); free(self.remaining); free(self.fmark); free(self.frozen)
        free(self.act); free(self.apos); free(self.heap); free(self.comp); free(self.lload); free(self.linit)
        free(self.lun); free(self.oldrate); free(self.bneck)

    cdef void _grow(self, int32_t need) except *:
        cdef int32_t c = self.cap_f * 2 + 1024
        if need < self.cap_f:
            return
        if c <= need:
            c = need + 1024
        self.foff = <int32_t*>_grow(self.foff, c, sizeof(int32_t))
        self.flen = <int32_t*>_grow(self.flen, c, sizeof(int32_t))
        self.w = <double*>_grow(self.w, c, sizeof(double))
        self.bound = <double*>_grow(self.bound, c, sizeof(double))
        self.rate = <double*>_grow(self.rate, c, sizeof(double))
        self.remaining = <double*>_grow(self.remaining, c, sizeof(double))
        self.fmark = <int64_t*>_grow(self.fmark, c, sizeof(int64_t))
        self.frozen = <char*>_grow(self.frozen, c, sizeof(char))
        self.act = <int32_t*>_grow(self.act, c, sizeof(int32_t))
        self.apos = <int32_t*>_grow(self.apos, c, sizeof(int32_t))
        self.comp = <int32_t*>_grow(self.comp, c, sizeof(int32_t))
        self.oldrate = <double*>_grow(self.oldrate, c, sizeof(double))
        self.bneck = <int32_t*>_grow(self.bneck, c, sizeof(int32_t))
        self.cap_f = c

    def add_flow(self, links, double weight, double bound, coefs=None):
        """Register a flow (not active yet); returns its index.  ``coefs``: the
        flow's consumption of each link per unit of its rate (default 1 on
        every link; SimGrid's cross-traffic puts 0.05 on the reverse route)."""
        cdef int32_t f = self.nf, n = len(links), i
        cdef double c
        if coefs is not None and len(coefs) != n:
            raise ValueError("coefs must have one value per link")
        self._grow(f + 1)
        if self.nlinks_used + n > self.cap_links:
            self.cap_links = self.cap_links * 2 + n + 4096
            self.flinks = <int32_t*>_grow(self.flinks, self.cap_links, sizeof(int32_t))
            self.fcoef = <double*>_grow(self.fcoef, self.cap_links, sizeof(double))
        self.foff[f] = <int32_t>self.nlinks_used
        self.flen[f] = n
        for i in range(n):
            self.flinks[self.nlinks_used + i] = links[i]
            c = 1.0 if coefs is None else coefs[i]
            if not c > 0:
                raise ValueError("a link consumption coefficient must be positive")
            self.fcoef[self.nlinks_used + i] = c
        self.nlinks_used += n
        self.w[f] = weight
        self.bound[f] = bound if bound > 0 else INF
        self.rate[f] = 0.0
        self.remaining[f] = 0.0
        self.fmark[f] = 0
        self.apos[f] = -1
        self.nf += 1
        return f

    # -- heap ---------------------------------------------------------------
    cdef void _push(self, double key, int32_t id) except *:
        cdef int64_t i, p
        cdef HeapItem it
        if self.hn == self.hcap:
            self.hcap = self.hcap * 2 + 256
            self.heap = <HeapItem*>_grow(self.heap, self.hcap, sizeof(HeapItem))
        it.key = key
        it.id = id
        i = self.hn
        self.hn += 1
        while i > 0:
            p = (i - 1) >> 1
            if self.heap[p].key <= key:
                break
            self.heap[i] = self.heap[p]
            i = p
        self.heap[i] = it

    cdef inline void _sift_down(self, int64_t i, HeapItem it) noexcept:
        """Place ``it`` at slot i or below, moving smaller children up."""
        cdef int64_t n = self.hn, c
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and self.heap[c + 1].key < self.heap[c].key:
                c += 1
            if self.heap[c].key < it.key:
                self.heap[i] = self.heap[c]
                i = c
            else:
                break
        self.heap[i] = it

    cdef HeapItem _pop(self) noexcept:
        cdef HeapItem top = self.heap[0]
        self.hn -= 1
        if self.hn > 0:
            self._sift_down(0, self.heap[self.hn])
        return top

    cdef void _append(self, double key, int32_t id) except *:
        """Add an item without ordering (``_heapify`` orders them all at once)."""
        if self.hn == self.hcap:
            self.hcap = self.hcap * 2 + 256
            self.heap = <HeapItem*>_grow(self.heap, self.hcap, sizeof(HeapItem))
        self.heap[self.hn].key = key
        self.heap[self.hn].id = id
        self.hn += 1

    cdef void _heapify(self) noexcept:
        """Floyd's bottom-up construction, O(n)."""
        cdef int64_t start = self.hn // 2 - 1
        while start >= 0:
            self._sift_down(start, self.heap[start])
            start -= 1

    # -- membership -----------------------------------------------------------
    cdef void _link_add(self, int32_t l, int32_t f) except *:
        if self.lnf[l] == self.lcap[l]:
            self.lcap[l] = self.lcap[l] * 2 + 8
            self.lflows[l] = <int32_t*>_grow(self.lflows[l], self.lcap[l], sizeof(int32_t))
        self.lflows[l][self.lnf[l]] = f
        self.lnf[l] += 1

    cdef void _link_remove(self, int32_t l, int32_t f) noexcept:
        cdef int32_t i
        for i in range(self.lnf[l]):
            if self.lflows[l][i] == f:
                self.lnf[l] -= 1
                self.lflows[l][i] = self.lflows[l][self.lnf[l]]
                return

    cdef inline bint _tight(self, int32_t l) noexcept:
        return self.lload[l] >= self.cap[l] * (1.0 - 1e-7)

    def join(self, int32_t f, double nbytes):
        """Flow f starts sharing with ``nbytes`` to send; re-solves what it can change."""
        cdef int32_t i, l, tail
        self.remaining[f] = nbytes
        self.apos[f] = self.nact
        self.act[self.nact] = f
        self.nact += 1
        self.rate[f] = 0.0
        for i in range(self.flen[f]):
            self._link_add(self.flinks[self.foff[f] + i], f)
        self.epoch += 1
        tail = 0
        for i in range(self.flen[f]):
            tail = self._take_link(self.flinks[self.foff[f] + i], tail)
        self._solve(tail)

    def leave(self, int32_t f):
        """Flow f stops; re-solves the flows bottlenecked where it was."""
        cdef int32_t i, l, last, tail = 0
        cdef double r
        if self.apos[f] < 0:
            return
        last = self.act[self.nact - 1]
        self.act[self.apos[f]] = last
        self.apos[last] = self.apos[f]
        self.nact -= 1
        self.apos[f] = -1
        r = self.rate[f]
        self.rate[f] = 0.0
        self.epoch += 1
        for i in range(self.flen[f]):
            l = self.flinks[self.foff[f] + i]
            self._link_remove(l, f)
            if self._tight(l):                  # tight before f left: its flows may grow
                tail = self._take_link(l, tail)
            self.lload[l] -= r * self.fcoef[self.foff[f] + i]
        if tail > 0:
            self._solve(tail)

    cdef inline int32_t _take(self, int32_t g, int32_t tail) noexcept:
        if self.fmark[g] != self.epoch and self.apos[g] >= 0:
            self.fmark[g] = self.epoch
            self.oldrate[g] = self.rate[g]
            self.comp[tail] = g
            tail += 1
        return tail

    cdef int32_t _take_link(self, int32_t l, int32_t tail) noexcept:
        cdef int32_t k
        self.lmark[l] = self.epoch
        for k in range(self.lnf[l]):
            tail = self._take(self.lflows[l][k], tail)
        return tail

    cdef int32_t _grow_region(self, int32_t head, int32_t tail) noexcept:
        """BFS from comp[head:tail] through saturated links (after a few rounds
        of violations: it takes in every flow a change can reach at once)."""
        cdef int32_t j, l, f
        while head < tail:
            f = self.comp[head]
            head += 1
            for j in range(self.flen[f]):
                l = self.flinks[self.foff[f] + j]
                if self.lmark[l] != self.epoch and self._tight(l):
                    tail = self._take_link(l, tail)
        return tail

    cdef void _solve(self, int32_t tail) except *:
        cdef int32_t nc, i, j, f, rounds = 0
        cdef double d
        self.solves += 1
        nc = tail
        while True:
            self.region_flows += nc
            self._fill(nc)
            tail = self._violations(nc)
            if tail == nc:
                break
            for i in range(nc):                 # undo and fill the larger region
                f = self.comp[i]
                self.rate[f] = self.oldrate[f]
            rounds += 1
            nc = tail if rounds < 4 else self._grow_region(nc, tail)
        for i in range(nc):
            f = self.comp[i]
            d = self.rate[f] - self.oldrate[f]
            if d != 0.0:
                for j in range(self.flen[f]):
                    self.lload[self.flinks[self.foff[f] + j]] += d * self.fcoef[self.foff[f] + j]

    cdef int32_t _violations(self, int32_t nc) noexcept:
        """Where the filled region disagrees with the flows held fixed, those
        flows join it (with every flow of the link concerned); returns the new
        tail.  Two disagreements: an outside flow has a larger share on a region
        flow's bottleneck; a region flow whose rate changed crosses an outside
        flow's bottleneck (whose load, and so that flow's share, is no longer
        what it was)."""
        cdef int32_t i, j, k, h, g, l, tail = nc
        cdef double lvl, d
        for i in range(nc):
            h = self.comp[i]
            l = self.bneck[h]
            if l >= 0 and self.lmark[l] != self.epoch:
                lvl = self.rate[h] / self.w[h] * (1.0 + 1e-9)
                for k in range(self.lnf[l]):
                    g = self.lflows[l][k]
                    if self.fmark[g] != self.epoch and self.rate[g] / self.w[g] > lvl:
                        tail = self._take_link(l, tail)
                        break
            d = self.rate[h] - self.oldrate[h]
            if d <= 1e-12 * self.oldrate[h] and -d <= 1e-12 * self.oldrate[h]:
                continue
            for j in range(self.flen[h]):
                l = self.flinks[self.foff[h] + j]
                if self.lmark[l] == self.epoch:
                    continue
                for k in range(self.lnf[l]):
                    g = self.lflows[l][k]
                    if self.fmark[g] != self.epoch and self.bneck[g] == l:
                        tail = self._take_link(l, tail)
                        break
        return tail

    cdef void _fill(self, int32_t nc) except *:
        """Progressive filling of comp[0:nc], the other flows' rates fixed.

        A link's share rem / wsum only grows while flows freeze (a flow frozen
        at the current level takes at most its weight's part of the share), so
        the heap keeps one entry per link with a key that may be stale but never
        too high: a popped link whose share grew goes back with its new share;
        one whose share is still its key is the next bottleneck."""
        cdef int32_t i, j, k, f, g, l
        cdef HeapItem it
        cdef double level, cur
        cdef int64_t ep = self.epoch
        self.hn = 0
        for i in range(nc):
            f = self.comp[i]
            for j in range(self.flen[f]):
                l = self.flinks[self.foff[f] + j]
                if self.linit[l] != ep:
                    self.linit[l] = ep
                    self.rem[l] = self.cap[l] - self.lload[l]
                    self.wsum[l] = 0.0
                    self.lun[l] = 0
        for i in range(nc):
            f = self.comp[i]
            self.frozen[f] = 0
            self.bneck[f] = -1
            for j in range(self.flen[f]):
                l = self.flinks[self.foff[f] + j]
                self.rem[l] += self.oldrate[f] * self.fcoef[self.foff[f] + j]
                self.wsum[l] += self.w[f] * self.fcoef[self.foff[f] + j]
                self.lun[l] += 1
            if self.bound[f] < INF:
                self._append(self.bound[f] / self.w[f], -(f + 1))
        for i in range(nc):
            f = self.comp[i]
            for j in range(self.flen[f]):
                l = self.flinks[self.foff[f] + j]
                if self.linit[l] == ep:
                    self.linit[l] = 0               # pushed once; a second fill sets it up again
                    self._append((self.rem[l] if self.rem[l] > 0 else 0.0) / self.wsum[l], l)
        self._heapify()
        while self.hn > 0:
            it = self._pop()
            if it.id < 0:
                f = -it.id - 1
                if not self.frozen[f]:
                    self._freeze(f, it.key, -1)
                continue
            l = it.id
            if self.lun[l] == 0:
                continue                            # no unfrozen region flow left on it
            cur = (self.rem[l] if self.rem[l] > 0 else 0.0) / self.wsum[l]
            if cur > it.key * (1.0 + 1e-12):
                self._push(cur, l)               # its share grew: not the bottleneck yet
                continue
            level = cur
            k = 0
            while k < self.lnf[l]:
                g = self.lflows[l][k]
                k += 1
                if not self.frozen[g] and self.fmark[g] == ep:
                    self._freeze(g, level, l)

    cdef void _freeze(self, int32_t f, double level, int32_t at) noexcept:
        cdef int32_t j, l
        cdef double r = self.w[f] * level
        self.rate[f] = r
        self.frozen[f] = 1
        self.bneck[f] = at
        for j in range(self.flen[f]):
            l = self.flinks[self.foff[f] + j]
            self.rem[l] -= r * self.fcoef[self.foff[f] + j]
            self.wsum[l] -= self.w[f] * self.fcoef[self.foff[f] + j]
            self.lun[l] -= 1

    # -- fluid time -------------------------------------------------------------
    def advance(self, double dt):
        cdef int32_t i, f
        if dt <= 0:
            return
        for i in range(self.nact):
            f = self.act[i]
            self.remaining[f] -= self.rate[f] * dt

    def next_completion(self):
        """(time to the earliest completion in ps, flow), or (inf, -1)."""
        cdef int32_t i, f, best_f = -1
        cdef double best = INF, t
        for i in range(self.nact):
            f = self.act[i]
            if self.rate[f] > 0:
                t = self.remaining[f] / self.rate[f]
                if t < best:
                    best = t
                    best_f = f
        return (best if best_f >= 0 else float("inf")), best_f

    def rate_of(self, int32_t f):
        return self.rate[f]

    def active(self):
        return [self.act[i] for i in range(self.nact)]

    def due(self, double horizon):
        """The active flows that finish within ``horizon`` ps at their current
        rates, as (time to completion, flow) pairs in that order."""
        cdef int32_t i, f
        cdef double t
        out = []
        for i in range(self.nact):
            f = self.act[i]
            if self.rate[f] > 0:
                t = self.remaining[f] / self.rate[f]
                if t < horizon:
                    out.append((t, f))
        out.sort()
        return out
