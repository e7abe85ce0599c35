# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""NVLink chains of a ring collective, computed in C (``workload.collectives._Ring``).

A ring that crosses servers enters each server on one GPU and leaves it on another; between them its
chunks hop GPU to GPU on the NVLink channel: a fixed time per chunk (``Transport.nvlink_time``), delivery
in order, no contention.  A rank whose hop is NVLink sends its queue in FIFO order, each chunk at the
latest of

- the time it was queued (its arrival, or the rank's readiness for the rank's own step-0 chunks),
- the rank's readiness,
- the previous chunk's departure,
- the arrival of the chunk ``max_inflight`` sends before it (the ring's in-flight limit per hop),

and it arrives at the next rank at departure + its NVLink time, not before the previous chunk of that hop.
Arrival of step k queues step k + 1 of the same chunk at the receiver, up to the ring's last step.  Those
times depend only on chunks that entered the server before, so they are computed when a chunk enters, not
scheduled hop by hop: ``advance`` runs the recurrence from a rank down its server's chain and returns the
arrivals at the chain's last GPU (whose hop leaves through the NIC), which the ring turns into events.
"""
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memmove
from libc.stdint cimport int32_t, int64_t


cdef class RingChains:
    cdef int32_t n              # ranks of the ring
    cdef int32_t m              # in-flight limit per hop
    cdef int32_t last           # the ring's last step (steps - 1)
    cdef int32_t nch            # chunks per segment
    cdef int64_t* size          # n * nch: bytes of chunk c of segment s, at s * nch + c
    cdef int64_t* dt            # n * nch: its NVLink time (ps)
    cdef unsigned char* nvl     # n: rank i's hop (to i + 1) is on the NVLink channel
    cdef int64_t** qt           # per rank: queue of (time queued, step, chunk), FIFO by time
    cdef int32_t** qk
    cdef int32_t** qc
    cdef int64_t* qn            # per rank: entries queued
    cdef int64_t* qcap          # per rank: their capacity
    cdef int64_t* qx            # per rank: entries sent
    cdef int64_t* ready_at      # per rank: when it became ready, -1 before
    cdef int64_t* dep           # per rank: its last departure
    cdef int64_t* last_arr      # per rank: its hop's last arrival
    cdef int64_t* win           # n * m: arrivals of each rank's last m departures (a ring buffer)
    cdef int32_t* wlen          # per rank: entries in its window
    cdef int32_t* whead         # per rank: the oldest one's index
    cdef int64_t* sent          # per rank: NVLink bytes it sent
    cdef public int64_t arrived         # arrivals computed at NVLink ranks (inside chains)
    cdef public int64_t latest          # the latest of them (ps)
    cdef public int64_t transfers       # NVLink transfers computed (empty chunks too)
    cdef public int64_t nvlink_transfers    # those with bytes
    cdef public int64_t nvlink_bytes        # their bytes

    def __cinit__(self, nvl, sizes, dts, int32_t max_inflight, int32_t steps):
        cdef int32_t i, c
        self.n = len(nvl)
        self.m = max_inflight
        self.last = steps - 1
        self.nch = len(sizes[0])
        n, nch = self.n, self.nch
        self.size = <int64_t*>malloc(n * nch * sizeof(int64_t))
        self.dt = <int64_t*>malloc(n * nch * sizeof(int64_t))
        self.nvl = <unsigned char*>malloc(n)
        self.qt = <int64_t**>calloc(n, sizeof(int64_t*))
        self.qk = <int32_t**>calloc(n, sizeof(int32_t*))
        self.qc = <int32_t**>calloc(n, sizeof(int32_t*))
        self.qn = <int64_t*>calloc(n, sizeof(int64_t))
        self.qcap = <int64_t*>calloc(n, sizeof(int64_t))
        self.qx = <int64_t*>calloc(n, sizeof(int64_t))
        self.ready_at = <int64_t*>malloc(n * sizeof(int64_t))
        self.dep = <int64_t*>calloc(n, sizeof(int64_t))
        self.last_arr = <int64_t*>calloc(n, sizeof(int64_t))
        self.win = <int64_t*>calloc(n * self.m, sizeof(int64_t))
        self.wlen = <int32_t*>calloc(n, sizeof(int32_t))
        self.whead = <int32_t*>calloc(n, sizeof(int32_t))
        self.sent = <int64_t*>calloc(n, sizeof(int64_t))
        if (self.size == NULL or self.dt == NULL or self.nvl == NULL or self.qt == NULL or self.qk == NULL
                or self.qc == NULL or self.qn == NULL or self.qcap == NULL or self.qx == NULL or self.ready_at == NULL
                or self.dep == NULL or self.last_arr == NULL or self.win == NULL or self.wlen == NULL
                or self.whead == NULL or self.sent == NULL):
            raise MemoryError()
        for i in range(n):
            self.nvl[i] = 1 if nvl[i] else 0
            self.ready_at[i] = -1
            for c in range(nch):
                self.size[i * nch + c] = sizes[i][c]
                self.dt[i * nch + c] = dts[i][c]

    def __dealloc__(self):
        cdef int32_t i
        if self.qt != NULL:
            for i in range(self.n):
                free(self.qt[i])
                free(self.qk[i])
                free(self.qc[i])
        free(self.size)
        free(self.dt)
        free(self.nvl)
        free(self.qt)
        free(self.qk)
        free(self.qc)
        free(self.qn)
        free(self.qcap)
        free(self.qx)
        free(self.ready_at)
        free(self.dep)
        free(self.last_arr)
        free(self.win)
        free(self.wlen)
        free(self.whead)
        free(self.sent)

    cdef int _room(self, int32_t i, int64_t extra) except -1:
        """Capacity for ``extra`` more entries in rank i's queue."""
        cdef int64_t cap = self.qcap[i]
        cdef void* p
        if self.qn[i] + extra <= cap:
            return 0
        cap = max(2 * cap, self.qn[i] + extra, 16)
        p = realloc(self.qt[i], cap * sizeof(int64_t))
        if p == NULL:
            raise MemoryError()
        self.qt[i] = <int64_t*>p
        p = realloc(self.qk[i], cap * sizeof(int32_t))
        if p == NULL:
            raise MemoryError()
        self.qk[i] = <int32_t*>p
        p = realloc(self.qc[i], cap * sizeof(int32_t))
        if p == NULL:
            raise MemoryError()
        self.qc[i] = <int32_t*>p
        self.qcap[i] = cap
        return 0

    def push(self, int32_t i, int64_t t, int32_t k, int32_t c):
        """Chunk c of step k queued at rank i at time t (an arrival from the fabric: after all queued)."""
        self._push(i, t, k, c)

    cdef int _push(self, int32_t i, int64_t t, int32_t k, int32_t c) except -1:
        cdef int64_t x
        self._room(i, 1)
        x = self.qn[i]
        self.qt[i][x] = t
        self.qk[i][x] = k
        self.qc[i][x] = c
        self.qn[i] = x + 1
        return 0

    def ready(self, int32_t i, int64_t now):
        """Rank i is ready at ``now``: its own step-0 chunks queue after what arrived by now and before
        what is computed to arrive later."""
        cdef int64_t x, tail
        cdef int32_t c
        self._room(i, self.nch)
        self.ready_at[i] = now
        x = self.qn[i]
        while x > self.qx[i] and self.qt[i][x - 1] > now:
            x -= 1
        tail = self.qn[i] - x
        if tail > 0:
            memmove(&self.qt[i][x + self.nch], &self.qt[i][x], tail * sizeof(int64_t))
            memmove(&self.qk[i][x + self.nch], &self.qk[i][x], tail * sizeof(int32_t))
            memmove(&self.qc[i][x + self.nch], &self.qc[i][x], tail * sizeof(int32_t))
        for c in range(self.nch):
            self.qt[i][x + c] = now
            self.qk[i][x + c] = 0
            self.qc[i][x + c] = c
        self.qn[i] += self.nch

    def sent_by(self, int32_t i):
        """NVLink bytes rank i sent so far."""
        return self.sent[i]

    def advance(self, int32_t i, list log=None):
        """Send what rank i's queue holds, and on down its server's chain while the ranks are ready.
        Returns the arrivals at the chain's last GPU, ``[(time, rank, step, chunk), ...]``; with ``log``
        a list, appends ``("send", t, rank, step, chunk)`` and ``("arrive", t, rank, step, chunk)`` to it."""
        cdef int32_t j, k, c, s, w
        cdef int64_t x, d, arr, dp, la, rt, sz, t
        cdef bint inner
        cdef int32_t n = self.n, m = self.m, nch = self.nch
        tails = []
        while True:
            rt = self.ready_at[i]
            x = self.qx[i]
            if rt < 0 or x == self.qn[i]:
                return tails
            j = (i + 1) % n
            inner = self.nvl[j]
            dp = self.dep[i]
            la = self.last_arr[i]
            while x < self.qn[i]:
                t = self.qt[i][x]
                k = self.qk[i][x]
                c = self.qc[i][x]
                x += 1
                s = (i - k) % n
                if s < 0:
                    s += n
                sz = self.size[s * nch + c]
                if t > dp:
                    dp = t
                if rt > dp:
                    dp = rt
                if self.wlen[i] == m:
                    w = self.whead[i]
                    if self.win[i * m + w] > dp:
                        dp = self.win[i * m + w]
                    self.whead[i] = (w + 1) % m
                    self.wlen[i] -= 1
                arr = dp + self.dt[s * nch + c]
                if la > arr:
                    arr = la
                la = arr
                self.win[i * m + (self.whead[i] + self.wlen[i]) % m] = arr
                self.wlen[i] += 1
                self.transfers += 1
                if sz > 0:
                    self.sent[i] += sz
                    self.nvlink_bytes += sz
                    self.nvlink_transfers += 1
                if log is not None:
                    log.append(("send", dp, i, k, c))
                if inner:
                    if log is not None:
                        log.append(("arrive", arr, j, k, c))
                    self.arrived += 1
                    if arr > self.latest:
                        self.latest = arr
                    if k < self.last:
                        self._push(j, arr, k + 1, c)
                else:
                    tails.append((arr, j, k, c))
            self.qx[i] = x
            self.dep[i] = dp
            self.last_arr[i] = la
            if not inner:
                return tails
            i = j
