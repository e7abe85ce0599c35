# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The flow backend's hot path in C: weighted max-min by progressive filling
with a heap of link shares (O(incidences x log links) per solve), restricted to
the component of flows connected to a change, plus advancing the fluid flows
and finding the earliest completion."""
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
    int64_t ver


cdef class FluidSolver:
    """Links 0..n-1 with capacities (bytes per ps); flows added with their links,
    weight and rate bound; join / leave re-solve the component; advance / next
    completion over the active flows."""
    cdef int32_t nl, nf, cap_f
    cdef double* cap
    cdef double* rem
    cdef double* wsum
    cdef int64_t* lver
    cdef int32_t** lflows
    cdef int32_t* lnf
    cdef int32_t* lcap
    cdef int64_t* lmark
    cdef int32_t* foff
    cdef int32_t* flen
    cdef int32_t* flinks
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
    cdef int32_t* seeds             # leave(): one flow per link the leaver used
    cdef int32_t* comp
    cdef public int64_t solves

    def __cinit__(self, caps):
        cdef int32_t i
        self.nl = len(caps)
        self.cap = <double*>malloc(self.nl * sizeof(double))
        self.rem = <double*>malloc(self.nl * sizeof(double))
        self.wsum = <double*>malloc(self.nl * sizeof(double))
        self.lver = <int64_t*>malloc(self.nl * sizeof(int64_t))
        self.lflows = <int32_t**>malloc(self.nl * sizeof(int32_t*))
        self.lnf = <int32_t*>malloc(self.nl * sizeof(int32_t))
        self.lcap = <int32_t*>malloc(self.nl * sizeof(int32_t))
        self.lmark = <int64_t*>malloc(self.nl * sizeof(int64_t))
        if (self.cap == NULL or self.rem == NULL or self.wsum == NULL or self.lver == NULL or self.lflows == NULL
                or self.lnf == NULL or self.lcap == NULL or self.lmark == NULL):
            raise MemoryError()
        for i in range(self.nl):
            self.cap[i] = caps[i]
            self.lver[i] = 0
            self.lflows[i] = NULL
            self.lnf[i] = 0
            self.lcap[i] = 0
            self.lmark[i] = 0
        self.nf = 0
        self.cap_f = 0
        self.epoch = 1

    def __dealloc__(self):
        cdef int32_t i
        if self.lflows != NULL:
            for i in range(self.nl):
                free(self.lflows[i])
        free(self.cap); free(self.rem); free(self.wsum); free(self.lver); free(self.lflows); free(self.lnf)
        free(self.lcap); free(self.lmark); free(self.foff); free(self.flen); free(self.flinks); free(self.w)
        free(self.bound); free(self.rate); free(self.remaining); free(self.fmark); free(self.frozen)
        free(self.act); free(self.apos); free(self.heap); free(self.seeds); free(self.comp)

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
        self.seeds = <int32_t*>_grow(self.seeds, c, sizeof(int32_t))
        self.comp = <int32_t*>_grow(self.comp, c, sizeof(int32_t))
        self.cap_f = c

    def add_flow(self, links, double weight, double bound):
        """Register a flow (not active yet); returns its index."""
        cdef int32_t f = self.nf, n = len(links), i
        self._grow(f + 1)
        if self.nlinks_used + n > self.cap_links:
            self.cap_links = self.cap_links * 2 + n + 4096
            self.flinks = <int32_t*>_grow(self.flinks, self.cap_links, sizeof(int32_t))
        self.foff[f] = <int32_t>self.nlinks_used
        self.flen[f] = n
        for i in range(n):
            self.flinks[self.nlinks_used + i] = links[i]
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
    cdef void _push(self, double key, int32_t id, int64_t ver) except *:
        cdef int64_t i, p
        cdef HeapItem it
        if self.hn == self.hcap:
            self.hcap = self.hcap * 2 + 256
            self.heap = <HeapItem*>_grow(self.heap, self.hcap, sizeof(HeapItem))
        it.key = key
        it.id = id
        it.ver = ver
        i = self.hn
        self.hn += 1
        while i > 0:
            p = (i - 1) >> 1
            if self.heap[p].key <= key:
                break
            self.heap[i] = self.heap[p]
            i = p
        self.heap[i] = it

    cdef HeapItem _pop(self) noexcept:
        cdef HeapItem top = self.heap[0], last
        cdef int64_t n, i, c
        self.hn -= 1
        n = self.hn
        if n > 0:
            last = self.heap[n]
            i = 0
            while True:
                c = 2 * i + 1
                if c >= n:
                    break
                if c + 1 < n and self.heap[c + 1].key < self.heap[c].key:
                    c += 1
                if self.heap[c].key < last.key:
                    self.heap[i] = self.heap[c]
                    i = c
                else:
                    break
            self.heap[i] = last
        return top

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

    def join(self, int32_t f, double nbytes):
        """Flow f starts sharing with ``nbytes`` to send; re-solves its component."""
        cdef int32_t i
        self.remaining[f] = nbytes
        self.apos[f] = self.nact
        self.act[self.nact] = f
        self.nact += 1
        for i in range(self.flen[f]):
            self._link_add(self.flinks[self.foff[f] + i], f)
        self._solve_from(&f, 1)

    def leave(self, int32_t f):
        """Flow f stops; re-solves the component(s) it leaves behind."""
        cdef int32_t i, l, last, n = 0
        if self.apos[f] < 0:
            return
        last = self.act[self.nact - 1]
        self.act[self.apos[f]] = last
        self.apos[last] = self.apos[f]
        self.nact -= 1
        self.apos[f] = -1
        self.rate[f] = 0.0
        for i in range(self.flen[f]):
            l = self.flinks[self.foff[f] + i]
            self._link_remove(l, f)
        # seeds: one flow per link the leaver used (the BFS finds the rest)
        for i in range(self.flen[f]):
            l = self.flinks[self.foff[f] + i]
            if self.lnf[l] > 0:
                self.seeds[n] = self.lflows[l][0]
                n += 1
        if n > 0:
            self._solve_from(self.seeds, n)

    cdef void _solve_from(self, int32_t* seeds, int32_t nseeds) except *:
        """BFS the component of the seeds over shared links, then progressive filling."""
        cdef int32_t head = 0, tail = 0, nc = 0, i, j, k, f, g, l
        cdef int64_t ep
        cdef HeapItem it
        cdef double level, r
        self.epoch += 1
        ep = self.epoch
        self.solves += 1
        for i in range(nseeds):
            f = seeds[i]
            if self.fmark[f] != ep and self.apos[f] >= 0:
                self.fmark[f] = ep
                self.comp[tail] = f
                tail += 1
        while head < tail:
            f = self.comp[head]
            head += 1
            for j in range(self.flen[f]):
                l = self.flinks[self.foff[f] + j]
                if self.lmark[l] == ep:
                    continue
                self.lmark[l] = ep
                self.rem[l] = self.cap[l]
                self.wsum[l] = 0.0
                for k in range(self.lnf[l]):
                    g = self.lflows[l][k]
                    if self.fmark[g] != ep:
                        self.fmark[g] = ep
                        self.comp[tail] = g
                        tail += 1
        nc = tail
        self.hn = 0
        for i in range(nc):
            f = self.comp[i]
            self.frozen[f] = 0
            for j in range(self.flen[f]):
                self.wsum[self.flinks[self.foff[f] + j]] += self.w[f]
            if self.bound[f] < INF:
                self._push(self.bound[f] / self.w[f], -(f + 1), 0)
        for i in range(nc):
            f = self.comp[i]
            for j in range(self.flen[f]):
                l = self.flinks[self.foff[f] + j]
                if self.lmark[l] == ep:
                    self.lmark[l] = ep + 1          # push each link once
                    self.lver[l] += 1
                    if self.wsum[l] > 0:
                        self._push(self.rem[l] / self.wsum[l], l, self.lver[l])
        self.epoch += 1
        while self.hn > 0:
            it = self._pop()
            if it.id < 0:
                f = -it.id - 1
                if self.frozen[f]:
                    continue
                self._freeze(f, it.key)
                continue
            l = it.id
            if it.ver != self.lver[l] or self.wsum[l] <= 1e-300:
                continue
            level = it.key if it.key > 0 else 0.0
            k = 0
            while k < self.lnf[l]:
                g = self.lflows[l][k]
                k += 1
                if not self.frozen[g]:
                    self._freeze(g, level)

    cdef void _freeze(self, int32_t f, double level) except *:
        cdef int32_t j, l
        cdef double r = self.w[f] * level
        self.rate[f] = r
        self.frozen[f] = 1
        for j in range(self.flen[f]):
            l = self.flinks[self.foff[f] + j]
            self.rem[l] -= r
            self.wsum[l] -= self.w[f]
            self.lver[l] += 1
            if self.wsum[l] > 1e-12 * self.w[f]:
                self._push((self.rem[l] if self.rem[l] > 0 else 0.0) / self.wsum[l], l, self.lver[l])

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
