"""Shortest-path ECMP tables and per-host-pair path figures, in C.

The reference's CalculateRoute, one BFS per destination host over a CSR
adjacency whose per-node neighbour order the caller fixes (it decides the
order of ECMP next hops, hence every ECMP choice): the destination host is
the root, only switches expand, a node's next hops towards the destination
are all neighbours one hop closer, in the order the BFS reaches them.  Along
the first path found (BFS discovery) it also sums the propagation delay (ns,
each hop's ps delay floored to ns), the transmission delay of one MTU per
hop, and keeps the bottleneck rate.

Two BFS passes: the first counts next hops per (node, destination) and fills
the pair figures, both destination-major (one contiguous row per BFS), then
transposed in cache tiles into the node-major table and the [src, dst]
matrices; once all counts, hence all starts, are known, the second writes
each next hop into its slot.  Temporary memory: one more copy of the pair
matrices."""
import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc

cdef extern from "wh_time.h":
    uint32_t wh_ecmp_hash3(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed) nogil


def ecmp_hash(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed):
    """The reference switch's ECMP hash (MurmurHash3 x86_32 over the 12 bytes of
    three little-endian words) with which the kernel's switches choose a next
    hop; the flow backend routes with it too."""
    return wh_ecmp_hash3(w0, w1, w2, seed)


ctypedef fused word:
    int32_t
    int64_t


cdef void _transpose(const word* src, word* dst, int64_t rows, int64_t cols) noexcept nogil:
    """dst[c, r] = src[r, c] for a rows x cols C-order src, in tiles of 8 x 8
    (small enough that power-of-two strides, which map every row of a tile to
    the same cache set, still fit the set's ways)."""
    cdef int64_t r0 = 0, c0, r, c, r1, c1
    while r0 < rows:
        r1 = r0 + 8 if r0 + 8 < rows else rows
        c0 = 0
        while c0 < cols:
            c1 = c0 + 8 if c0 + 8 < cols else cols
            for r in range(r0, r1):
                for c in range(c0, c1):
                    dst[c * rows + r] = src[r * cols + c]
            c0 = c1
        r0 = r1


cdef int32_t _bfs(int32_t root, const int64_t[::1] adj_start, const int32_t[::1] adj_nbr,
                  const uint8_t[::1] is_switch, int32_t* dis, int32_t* queue) noexcept nogil:
    """BFS from `root` (which expands though it is a host); fills dis[] (-1 =
    unreached, caller resets it) and queue[] in visiting order; returns the
    number of nodes reached.  Every node reached is in queue, expanded or not."""
    cdef int32_t head = 0, tail = 0, now, nxt, d
    cdef int64_t e
    dis[root] = 0
    queue[tail] = root
    tail += 1
    while head < tail:
        now = queue[head]
        head += 1
        if now != root and not is_switch[now]:
            continue
        d = dis[now]
        for e in range(adj_start[now], adj_start[now + 1]):
            nxt = adj_nbr[e]
            if dis[nxt] < 0:
                dis[nxt] = d + 1
                queue[tail] = nxt
                tail += 1
    return tail


def shortest_path_routes(const int64_t[::1] adj_start, const int32_t[::1] adj_nbr,
                         const int32_t[::1] adj_port, const int32_t[::1] adj_back,
                         const uint8_t[::1] is_switch, const int32_t[::1] hosts,
                         const int64_t[::1] port_rate, const int64_t[::1] port_delay,
                         int64_t mtu, int64_t ns):
    """Routing tables and pair figures of a fabric.

    Node u's neighbours are adj_nbr[adj_start[u]:adj_start[u+1]] in the order
    the BFS visits them; adj_port[e] is u's port towards that neighbour and
    adj_back[e] the neighbour's port back towards u.  Returns a dict of
    rt_start, rt_cnt (int32, n_nodes * n_hosts, node-major; start 0 where
    count 0), rt_ports (int32), and the [src_host, dst_host] matrices
    pair_delay_ns, pair_txdelay_ns, pair_bw (int64; 0 for a host to itself
    or an unreachable pair) and pair_hops (int32; -1 unreachable)."""
    cdef int64_t n = adj_start.shape[0] - 1
    cdef int64_t nh = hosts.shape[0]
    cdef int64_t nrt = n * nh
    cdef int32_t k, root, now, nxt, d, reached, c, i
    cdef int64_t hd, hs, e, p, r, total = 0, rate, bwv, row
    cdef int64_t one_mtu_bits
    if adj_nbr.shape[0] != adj_port.shape[0] or adj_nbr.shape[0] != adj_back.shape[0] \
            or is_switch.shape[0] != n or n >= 0x7FFFFFFF or port_delay.shape[0] != port_rate.shape[0]:
        raise ValueError("inconsistent adjacency")
    for hd in range(nh):
        if hosts[hd] < 0 or hosts[hd] >= n:
            raise ValueError("host id out of range")
    for e in range(adj_nbr.shape[0]):
        if adj_nbr[e] < 0 or adj_nbr[e] >= n or adj_port[e] < 0 or adj_port[e] >= port_rate.shape[0] \
                or adj_back[e] < 0 or adj_back[e] >= port_rate.shape[0] or port_rate[adj_port[e]] <= 0 or port_delay[adj_port[e]] < 0:
            raise ValueError("bad adjacency entry %d" % e)
    if mtu <= 0 or mtu > (<int64_t>1 << 62) // 8000000000 or ns <= 0:
        raise ValueError("mtu out of range: %d" % mtu)
    one_mtu_bits = mtu * 8 * 1000000000
    # per port: propagation delay floored to ns, transmission time of one MTU
    hop_delay_a = np.zeros(port_rate.shape[0], np.int64)
    hop_txd_a = np.zeros(port_rate.shape[0], np.int64)
    cdef int64_t[::1] hop_delay = hop_delay_a
    cdef int64_t[::1] hop_txd = hop_txd_a
    for p in range(port_rate.shape[0]):
        if port_rate[p] > 0:
            hop_delay[p] = port_delay[p] // ns
            hop_txd[p] = one_mtu_bits // port_rate[p]
    # the BFS fills destination-major arrays (contiguous per destination);
    # they are transposed into the node-major / [src, dst] results at the end
    cnt_t_a = np.zeros((nh, n), np.int32)
    pd_t_a = np.zeros((nh, nh), np.int64)
    ptx_t_a = np.zeros((nh, nh), np.int64)
    pbw_t_a = np.zeros((nh, nh), np.int64)
    phops_t_a = np.zeros((nh, nh), np.int32)
    cdef int32_t[:, ::1] cnt_t = cnt_t_a
    cdef int64_t[:, ::1] pd_t = pd_t_a
    cdef int64_t[:, ::1] ptx_t = ptx_t_a
    cdef int64_t[:, ::1] pbw_t = pbw_t_a
    cdef int32_t[:, ::1] phops_t = phops_t_a
    rt_cnt_a = np.empty(nrt, np.int32)
    rt_start_a = np.zeros(nrt, np.int32)
    cdef int32_t[::1] rt_cnt = rt_cnt_a
    cdef int32_t[::1] rt_start = rt_start_a
    cdef int32_t[::1] rt_ports
    cdef int32_t* dis = <int32_t*>malloc(max(n, 1) * sizeof(int32_t))
    cdef int32_t* queue = <int32_t*>malloc(max(n, 1) * sizeof(int32_t))
    cdef int32_t* fill = <int32_t*>malloc(max(n, 1) * sizeof(int32_t))
    cdef int64_t* delay = <int64_t*>malloc(max(n, 1) * sizeof(int64_t))
    cdef int64_t* txd = <int64_t*>malloc(max(n, 1) * sizeof(int64_t))
    cdef int64_t* bw = <int64_t*>malloc(max(n, 1) * sizeof(int64_t))   # -1: unbounded
    if dis == NULL or queue == NULL or fill == NULL or delay == NULL or txd == NULL or bw == NULL:
        free(dis); free(queue); free(fill); free(delay); free(txd); free(bw)
        raise MemoryError()
    try:
        with nogil:
            for i in range(n):
                dis[i] = -1
                fill[i] = 0
            # pass 1: distances, pair figures, next-hop counts
            for hd in range(nh):
                root = hosts[hd]
                reached = _bfs(root, adj_start, adj_nbr, is_switch, dis, queue)
                delay[root] = 0
                txd[root] = 0
                bw[root] = -1
                for k in range(reached):
                    now = queue[k]
                    if now != root and not is_switch[now]:
                        continue
                    d = dis[now]
                    for e in range(adj_start[now], adj_start[now + 1]):
                        nxt = adj_nbr[e]
                        if dis[nxt] != d + 1:
                            continue
                        cnt_t[hd, nxt] += 1
                        if fill[nxt]:
                            continue
                        # the path figures follow the discovering parent: the
                        # first node in queue order that lists nxt
                        fill[nxt] = 1
                        p = adj_port[e]
                        rate = port_rate[p]
                        delay[nxt] = delay[now] + hop_delay[p]
                        txd[nxt] = txd[now] + hop_txd[p]
                        bwv = bw[now]
                        bw[nxt] = rate if bwv < 0 or rate < bwv else bwv
                for hs in range(nh):
                    i = hosts[hs]
                    if dis[i] >= 0:
                        pd_t[hd, hs] = delay[i]
                        ptx_t[hd, hs] = txd[i]
                        pbw_t[hd, hs] = bw[i] if bw[i] >= 0 else 0
                        phops_t[hd, hs] = dis[i]
                    else:
                        phops_t[hd, hs] = -1
                for k in range(reached):
                    dis[queue[k]] = -1
                    fill[queue[k]] = 0
            if nrt > 0:
                _transpose(&cnt_t[0, 0], &rt_cnt[0], nh, n)
            # node-major starts (0 where there is no next hop, as before)
            for r in range(nrt):
                c = rt_cnt[r]
                if c > 0:
                    rt_start[r] = <int32_t>total
                    total += c
                    if total > 0x7FFFFFFF:
                        break
        if total > 0x7FFFFFFF:
            raise OverflowError("routing table has more than 2^31 next hops")
        rt_ports_a = np.empty(total, np.int32)
        rt_ports = rt_ports_a
        start_t = cnt_t            # reused: destination-major starts
        with nogil:
            if nrt > 0:
                _transpose(&rt_start[0], &start_t[0, 0], n, nh)
            # pass 2: next hops into their slots, in BFS order
            for hd in range(nh):
                root = hosts[hd]
                reached = _bfs(root, adj_start, adj_nbr, is_switch, dis, queue)
                for k in range(reached):
                    now = queue[k]
                    if now != root and not is_switch[now]:
                        continue
                    d = dis[now]
                    for e in range(adj_start[now], adj_start[now + 1]):
                        nxt = adj_nbr[e]
                        if dis[nxt] != d + 1:
                            continue
                        rt_ports[start_t[hd, nxt] + fill[nxt]] = adj_back[e]
                        fill[nxt] += 1
                for k in range(reached):
                    dis[queue[k]] = -1
                    fill[queue[k]] = 0
    finally:
        free(dis); free(queue); free(fill); free(delay); free(txd); free(bw)
    out = {"rt_start": rt_start_a, "rt_cnt": rt_cnt_a, "rt_ports": rt_ports_a}
    for name, a_t in (("pair_delay_ns", pd_t_a), ("pair_txdelay_ns", ptx_t_a), ("pair_bw", pbw_t_a),
                      ("pair_hops", phops_t_a)):
        a = np.empty((nh, nh), a_t.dtype)
        if nh > 0:
            if a_t.dtype == np.int64:
                _transpose64(a_t, a)
            else:
                _transpose32(a_t, a)
        out[name] = a
    return out


cdef _transpose64(const int64_t[:, ::1] src, int64_t[:, ::1] dst):
    with nogil:
        _transpose(&src[0, 0], &dst[0, 0], src.shape[0], src.shape[1])


cdef _transpose32(const int32_t[:, ::1] src, int32_t[:, ::1] dst):
    with nogil:
        _transpose(&src[0, 0], &dst[0, 0], src.shape[0], src.shape[1])
