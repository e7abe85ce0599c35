"""Collectives as flows with dependencies, driven through the Network API.

A collective moves data between ranks (GPUs = host nodes) in steps; a step's
transfer starts only when the data it depends on has arrived.  Transfers
between GPUs of one server use the NVLink channel of the ``Transport``; the
others are fabric flows (``Network.send``) whose completion callbacks drive
the next steps.

Ring algorithms follow NCCL: ranks in ring order (a server's GPUs adjacent),
the buffer cut into N segments, each segment into chunks of at most
``chunk_bytes``; at step k rank i sends segment (i - k) mod N to rank i + 1;
chunk c of step k leaves rank i once chunk c of step k - 1 arrived there, and
each connection keeps at most ``max_inflight`` chunks on the wire.
"""
from collections import deque

from .._core.chains import RingChains
from ..errors import WormholeError
from .channels import channel_orders, ring_channels

DEFAULT_CHUNK = 4 * 1024 * 1024
DEFAULT_INFLIGHT = 2


def split(total, parts):
    """``total`` bytes in ``parts`` pieces as even as possible (the sum is exact)."""
    base, extra = divmod(int(total), int(parts))
    return [base + (1 if i < extra else 0) for i in range(parts)]


def chunks_of(nbytes, chunk_bytes):
    n = max(1, -(-int(nbytes) // int(chunk_bytes)))
    return split(nbytes, n)


def comm_group(tag):
    """The communicator of a transfer tagged ``tag`` (a collective kind such as 'dp allreduce' or
    'ep alltoall'): its first word, or None for untagged transfers (which share one)."""
    if not tag:
        return None
    return str(tag).split()[0]


class Transport:
    """Moves bytes between GPUs: NVLink inside a server, the simulated fabric
    between servers.  NVLink is a channel of fixed bandwidth and latency (no
    contention, no packets), or, when the topology has NVSwitches
    (``wormhole.nvswitch``), packets on the fabric like the rest.  Fabric
    transfers are messages on one persistent connection per GPU pair
    (``persistent=True``, as NCCL's channels: the queue pair and its
    congestion-control state outlive a transfer), or one flow each; a fabric
    transfer is done when acknowledged, an NVLink one (channel or packets) when
    delivered.  Counts the
    bytes the GPUs send on each, in all and per tag (the collective kind), and
    on the fabric per link class (``leaf``: through one switch, ``spine``: more)."""

    def __init__(self, net, gpus_per_server=8, nvlink_gbps=2400.0, nvlink_latency_ps=1_000_000, persistent=True):
        self.net = net
        self.persistent = bool(persistent)
        self.conns = {}             # (src, dst, channel, group) -> connection (one queue pair; see _post)
        self.gps = int(gpus_per_server)
        self.nvlink_bps = float(nvlink_gbps) * 1e9
        self.nvlink_latency = int(nvlink_latency_ps)
        self.nvlink = getattr(net.topology, "nvlink", None)      # NvlinkDomain: NVLink is part of the fabric
        if self.nvlink is not None:
            if self.nvlink.gpus_per_server != self.gps:
                raise WormholeError("the topology's NVSwitches join %d GPUs, the workload has %d per server"
                                    % (self.nvlink.gpus_per_server, self.gps), value=self.gps)
            self.nvlink_bps = float(self.nvlink.rate_bps)
        self.fabric_bytes = 0
        self.nvlink_bytes = 0
        self.fabric_flows = 0
        self.by_tag = {}            # tag -> {"nvlink": bytes, "fabric": bytes, "transfers": n}
        self.fabric_classes = {}    # "leaf" | "spine" -> bytes

    @property
    def nvlink_fabric(self):
        """Whether NVLink traffic is packets on the fabric (the topology has NVSwitches)."""
        return self.nvlink is not None

    def server(self, gpu):
        return gpu // self.gps

    def nvlink_time(self, nbytes):
        return self.nvlink_latency + int(round(nbytes * 8 / self.nvlink_bps * 1e12))

    def _count(self, tag, where, nbytes):
        t = self.by_tag.get(tag)
        if t is None:
            t = self.by_tag[tag] = {"nvlink": 0, "fabric": 0, "transfers": 0}
        t[where] += nbytes
        t["transfers"] += 1

    def count_nvlink(self, tag, nbytes, transfers=1):
        """NVLink bytes moved outside ``send`` (a TP collective timed by its alpha-beta formula)."""
        self.nvlink_bytes += nbytes
        self._count(tag, "nvlink", nbytes)
        self.by_tag[tag]["transfers"] += transfers - 1

    def _post(self, src, dst, nbytes, on_done, delivered=False, channel=0, group=None):
        """A fabric message; ``on_done()`` when it is acknowledged, or with ``delivered`` when its last byte
        reached ``dst`` (NVLink: the receiver reads the data, as the channel's latency counts it).  Each
        NCCL communicator (``group``: the parallelism a collective belongs to, the first word of its tag,
        e.g. dp, ep, pp) and each of its channels has its own connection per GPU pair, as NCCL connects the
        peers of every communicator separately: an EP all-to-all does not queue behind DP chunks."""
        cb = {"on_delivered" if delivered else "on_done": lambda r: on_done()}
        if self.persistent:
            key = (src, dst, channel, group)
            conn = self.conns.get(key)
            if conn is None:
                conn = self.conns[key] = self.net.connect(src, dst)
            self.net.post(conn, int(nbytes), **cb)
        else:
            self.net.send(src, dst, int(nbytes), **cb)

    def on_channel(self, src, dst):
        """Whether a transfer from ``src`` to ``dst`` goes on the NVLink channel (one server, NVLink not
        packets): a fixed time ``nvlink_time``, delivered in order, with no contention."""
        return self.nvlink is None and self.server(src) == self.server(dst)

    def send(self, src, dst, nbytes, on_done, tag=None, channel=0):
        """Deliver ``nbytes`` from ``src`` to ``dst``; ``on_done()`` when they arrived (``channel``: the NCCL
        channel, whose fabric messages have connections of their own)."""
        if nbytes <= 0:
            self.net.schedule(0, on_done)
        elif self.server(src) == self.server(dst):
            self.nvlink_bytes += nbytes
            self._count(tag, "nvlink", nbytes)
            if self.nvlink is not None:
                self._post(src, dst, nbytes, on_done, delivered=True, channel=channel, group=comm_group(tag))
            else:
                self.net.schedule(self.nvlink_time(nbytes), on_done)
        else:
            self.fabric_bytes += nbytes
            self.fabric_flows += 1
            self._count(tag, "fabric", nbytes)
            f = self.net.fabric
            cls = "spine" if f.pair_hops[int(f.host_idx[src]), int(f.host_idx[dst])] > 2 else "leaf"
            self.fabric_classes[cls] = self.fabric_classes.get(cls, 0) + nbytes
            self._post(src, dst, nbytes, on_done, channel=channel, group=comm_group(tag))

    def to_engine(self, gpu, slot, nbytes, on_done, tag=None):
        """NVLS, NVLink on the fabric: ``gpu`` sends ``nbytes`` to the switch's engine of slot ``slot`` (a GPU
        of the same server); counted as NVLink bytes the GPU sends."""
        if nbytes <= 0:
            self.net.schedule(0, on_done)
            return
        self.nvlink_bytes += nbytes
        self._count(tag, "nvlink", nbytes)
        self._post(gpu, self.nvlink.engine(slot), nbytes, on_done, delivered=True)

    def from_engine(self, slot, gpu, nbytes, on_done):
        """NVLS: the engine of ``slot`` delivers ``nbytes`` (a reduced or multicast slice) to ``gpu``: switch
        output, not bytes a GPU sends."""
        if nbytes <= 0:
            self.net.schedule(0, on_done)
            return
        self._post(self.nvlink.engine(slot), gpu, nbytes, on_done, delivered=True)


class Collective:
    """Base: ``ranks`` (GPU ids in algorithm order), ``nbytes`` (the buffer a
    rank contributes, as NCCL counts it), ``on_done(collective)`` when every
    rank has finished.  ``ready(rank)`` tells that a rank's input is available
    (``start()`` marks all ranks ready at once)."""

    name = "collective"
    ring = False                # a ring algorithm (NCCL's channels, ``ring_order``)

    def __init__(self, transport, ranks, nbytes, on_done=None, chunk_bytes=DEFAULT_CHUNK,
                 max_inflight=DEFAULT_INFLIGHT, tag=None):
        ranks = [int(r) for r in ranks]
        if len(ranks) < 1 or len(set(ranks)) != len(ranks):
            raise WormholeError("%s needs distinct ranks" % self.name, value=ranks)
        if int(nbytes) < 0:
            raise WormholeError("%s size must be non-negative" % self.name, value=nbytes)
        if chunk_bytes <= 0 or max_inflight < 1:
            raise WormholeError("chunk size and in-flight limit must be positive", value=(chunk_bytes, max_inflight))
        self.t = transport
        self.net = transport.net
        self.ranks = ranks
        self.n = len(ranks)
        self.nbytes = int(nbytes)
        self.on_done = on_done
        self.chunk_bytes = int(chunk_bytes)
        self.max_inflight = int(max_inflight)
        self.start_time = None
        self.end_time = None
        self.sent_bytes = [0] * self.n      # bytes each rank sent
        self.transfers = 0
        self.steps = 0
        self._ready = [False] * self.n
        self.log = None             # set to a list to record (event, time, ...) tuples
        self.tag = self.name if tag is None else tag    # the transport counts bytes under this name

    # -- bookkeeping -------------------------------------------------------
    def start(self):
        for i in range(self.n):
            self.ready(i)
        return self

    def ready(self, i):
        if self.start_time is None:
            self.start_time = self.net.now
        if not self._ready[i]:
            self._ready[i] = True
            self._rank_ready(i)

    def _finish(self):
        self.end_time = self.net.now
        if self.on_done is not None:
            self.on_done(self)

    @property
    def duration(self):
        return None if self.end_time is None else self.end_time - self.start_time

    channel = 0                 # the NCCL channel this collective runs on (its connections)

    def _transfer(self, i, j, nbytes, cb):
        self.sent_bytes[i] += nbytes
        self.transfers += 1
        self.t.send(self.ranks[i], self.ranks[j], nbytes, cb, self.tag, self.channel)

    def _rank_ready(self, i):
        raise NotImplementedError


class _Ring(Collective):
    """Ring with ``steps`` steps over segments of the buffer, on NCCL's channels: over a group with k >= 2
    ranks on each of several servers, ``channels`` rings at once (None: k; ``channels.ring_channels``), channel
    c over part c of the buffer (``split``: contiguous parts, the remainder on the first ones) in its own
    order (``channels.channel_orders``: each server crossing on one rail, channels on different rails), each
    a ring of its own (chunks, in-flight limit, connections); done when every channel is.  ``ready(i)`` goes
    to every channel; ``sent_bytes`` and ``transfers`` sum the channels' once done, each channel's ring being
    in ``self.channels`` (its ``log`` its own).  Otherwise one ring in the order given."""

    n_steps = 0
    ring = True                 # ranks go in ``ring_order`` when a job builds its groups
    collapse_nvlink = True      # NVLink hops of a ring that crosses servers computed, not scheduled (``_advance``)

    def __init__(self, *a, channels=None, **kw):
        super().__init__(*a, **kw)
        self.steps = self._steps()
        self.channels = None        # the channels' rings, when more than one
        n = self.n
        c = ring_channels(self.ranks, self.t.gps, channels)
        if n == 1 or self.steps == 0 or self.nbytes == 0:
            self._trivial = True
            return
        self._trivial = False
        if c > 1:
            self._open_channels(c)
            return
        seg = split(self.nbytes, n)
        self.seg_chunks = [chunks_of(s, self.chunk_bytes) if s > 0 else [0] for s in seg]
        self.n_chunks = max(len(c) for c in self.seg_chunks)
        self.seg_chunks = [c + [0] * (self.n_chunks - len(c)) for c in self.seg_chunks]
        # per rank: FIFO of (step, chunk) ready to send, number in flight
        self.queue = [deque() for _ in range(n)]
        self.inflight = [0] * n
        self.arrived = 0
        self.total_arrivals = n * self.steps * self.n_chunks
        # NVLink-channel hops (rank i -> i + 1 on one server): delivered in order, at a fixed time each
        self._nvl = [self.t.on_channel(self.ranks[i], self.ranks[(i + 1) % n]) for i in range(n)]
        self._last_arr = [0] * n        # per-hop path: when the hop's last transfer arrives (in-order delivery)
        self._dt = {}                   # chunk size -> NVLink time (ps)
        self._chained = self.collapse_nvlink and any(self._nvl) and not all(self._nvl)
        if self._chained:
            self._open_chains()

    def _steps(self):
        return self.n_steps

    def _segment(self, i, k):
        return (i - k) % self.n

    def _open_channels(self, count):
        shares = split(self.nbytes, count)
        self.channels, self._where = [], []
        for c, order in enumerate(channel_orders(self.ranks, self.t.gps, count)):
            ring = type(self)(self.t, order, shares[c], on_done=self._channel_done, chunk_bytes=self.chunk_bytes,
                              max_inflight=self.max_inflight, tag=self.tag, channels=1)
            ring.channel = c
            pos = {g: x for x, g in enumerate(order)}
            self.channels.append(ring)
            self._where.append([pos[g] for g in self.ranks])     # our rank index -> its index in channel c
        self._channels_left = count

    def _channel_done(self, ring):
        self._channels_left -= 1
        if self._channels_left == 0:
            for x in range(self.n):
                self.sent_bytes[x] = sum(r.sent_bytes[w[x]] for r, w in zip(self.channels, self._where))
            self.transfers = sum(r.transfers for r in self.channels)
            self._finish()

    def _rank_ready(self, i):
        if self._trivial:
            if all(self._ready):
                self.net.schedule(0, self._finish)
            return
        if self.channels is not None:
            for ring, w in zip(self.channels, self._where):
                ring.ready(w[i])
            return
        if self._chained and self._nvl[i]:
            self._chain_ready(i)
            return
        for c in range(self.n_chunks):
            self.queue[i].append((0, c))
        self._pump(i)

    def _nvlink_dt(self, size):
        d = self._dt.get(size)
        if d is None:
            d = self._dt[size] = self.t.nvlink_time(size) if size > 0 else 0
        return d

    def _pump(self, i):
        q = self.queue[i]
        while q and self.inflight[i] < self.max_inflight:
            k, c = q.popleft()
            size = self.seg_chunks[self._segment(i, k)][c]
            self.inflight[i] += 1
            j = (i + 1) % self.n
            if self.log is not None:
                self.log.append(("send", self.net.now, i, k, c))
            cb = lambda i=i, j=j, k=k, c=c: self._arrive(i, j, k, c)
            if self._nvl[i]:                # the NVLink channel, in order: not before the hop's previous transfer
                self._hop_count(i, size)
                now = self.net.now
                arr = max(now + self._nvlink_dt(size), self._last_arr[i])
                self._last_arr[i] = arr
                self.net.schedule(arr - now, cb)
            else:
                self._transfer(i, j, size, cb)

    def _hop_count(self, i, size):
        """An NVLink-channel transfer of rank i, counted as ``_transfer`` and ``Transport.send`` count one."""
        self.sent_bytes[i] += size
        self.transfers += 1
        if size > 0:
            self.t.count_nvlink(self.tag, size)

    def _arrive(self, i, j, k, c):
        if self.log is not None:
            self.log.append(("arrive", self.net.now, j, k, c))
        self.inflight[i] -= 1
        self.arrived += 1
        self._deliver(j, k, c)
        self._pump(i)
        self._check_done()

    def _deliver(self, j, k, c):
        """Chunk c of step k reached rank j: its next step queues there (in the chain of j's server when j's
        hop is NVLink)."""
        if k + 1 >= self.steps:
            return
        if self._chained and self._nvl[j]:
            self._chains.push(j, self.net.now, k + 1, c)
            self._advance(j)
        else:
            self.queue[j].append((k + 1, c))
            if self._ready[j]:
                self._pump(j)

    def _check_done(self):
        if self.arrived == self.total_arrivals and not self._done_planned:
            self._done_planned = True
            if self._chained:           # the NVLink ranks' bytes, counted by the chains
                for i in range(self.n):
                    if self._nvl[i]:
                        self.sent_bytes[i] += self._chains.sent_by(i)
            if self._chain_last > self.net.now:     # the last arrival is a computed one, still ahead
                self.net.schedule(self._chain_last - self.net.now, self._finish)
            else:
                self._finish()

    _done_planned = False
    _chain_last = 0

    # -- NVLink chains: the hops inside a server computed when a chunk enters it (``_core.chains``) --------
    # Only the arrival at the GPU that leaves the server through its NIC is an event (``_tail_arrive``),
    # since its send joins the fabric.  The result is that of the hop-by-hop path (``collapse_nvlink =
    # False``), up to the order of events that fall on one picosecond.

    def _open_chains(self):
        dts = [[self._nvlink_dt(size) for size in row] for row in self.seg_chunks]
        self._chains = RingChains(self._nvl, self.seg_chunks, dts, self.max_inflight, self.steps)

    def _chain_ready(self, i):
        self._chains.ready(i, self.net.now)
        self._advance(i)

    def _advance(self, i):
        ch = self._chains
        a0, x0, b0, t0 = ch.arrived, ch.transfers, ch.nvlink_bytes, ch.nvlink_transfers
        tails = ch.advance(i, self.log)
        self.arrived += ch.arrived - a0
        self.transfers += ch.transfers - x0
        if ch.nvlink_bytes > b0:
            self.t.count_nvlink(self.tag, ch.nvlink_bytes - b0, ch.nvlink_transfers - t0)
        self._chain_last = ch.latest
        if tails:
            now = self.net.now
            for arr, j, k, c in tails:
                self.net.schedule(arr - now, lambda j=j, k=k, c=c: self._tail_arrive(j, k, c))
        self._check_done()

    def _tail_arrive(self, j, k, c):
        """A chunk reached the GPU whose hop leaves the server (its NIC)."""
        if self.log is not None:
            self.log.append(("arrive", self.net.now, j, k, c))
        self.arrived += 1
        self._deliver(j, k, c)
        self._check_done()


class RingAllReduce(_Ring):
    """Reduce-scatter then all-gather around the ring: 2(N-1) steps; every rank
    sends 2(N-1)/N of the buffer."""
    name = "allreduce"

    def _steps(self):
        return 2 * (self.n - 1)


class ReduceScatter(_Ring):
    """N-1 steps; every rank sends (N-1)/N of the buffer."""
    name = "reducescatter"

    def _steps(self):
        return self.n - 1


class AllGather(_Ring):
    """N-1 steps; ``nbytes`` is the gathered buffer, every rank sends (N-1)/N of it."""
    name = "allgather"

    def _steps(self):
        return self.n - 1

    def _segment(self, i, k):
        return (i - k) % self.n


class Broadcast(Collective):
    """Pipelined chain from ranks[0] along the ring order: every chunk hops
    rank to rank; N-1 steps; each non-last rank sends the whole buffer."""
    name = "broadcast"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.steps = self.n - 1
        self.chunks = chunks_of(self.nbytes, self.chunk_bytes) if self.nbytes > 0 else []
        self.queue = [deque() for _ in range(self.n)]
        self.inflight = [0] * self.n
        self.arrived = 0
        self.total = len(self.chunks) * (self.n - 1)

    def _rank_ready(self, i):
        if self.total == 0:
            if all(self._ready):
                self.net.schedule(0, self._finish)
            return
        if i == 0:
            for c in range(len(self.chunks)):
                self.queue[0].append(c)
        self._pump(i)

    def _pump(self, i):
        q = self.queue[i]
        while q and self.inflight[i] < self.max_inflight and i + 1 < self.n:
            c = q.popleft()
            self.inflight[i] += 1
            self._transfer(i, i + 1, self.chunks[c], lambda i=i, c=c: self._arrive(i, c))

    def _arrive(self, i, c):
        self.inflight[i] -= 1
        self.arrived += 1
        if i + 2 < self.n:
            self.queue[i + 1].append(c)
            if self._ready[i + 1]:
                self._pump(i + 1)
        self._pump(i)
        if self.arrived == self.total:
            self._finish()


class AllToAll(Collective):
    """Every rank sends nbytes/N to every other rank, all pairs at once (one
    step); every rank sends (N-1)/N of the buffer."""
    name = "alltoall"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.steps = 1 if self.n > 1 else 0
        self.per_peer = split(self.nbytes, self.n)
        self.pending = sum(1 for i in range(self.n) for j in range(self.n) if i != j and self.per_peer[j] > 0)

    def _rank_ready(self, i):
        if self.pending == 0:
            if all(self._ready):
                self.net.schedule(0, self._finish)
            return
        for d in range(1, self.n):
            j = (i + d) % self.n
            if self.per_peer[j] > 0:
                self._transfer(i, j, self.per_peer[j], self._arrive)

    def _arrive(self):
        self.pending -= 1
        if self.pending == 0:
            self._finish()


class SendRecv(Collective):
    """ranks[0] sends the buffer to ranks[1] (in chunks, ``max_inflight`` at once)."""
    name = "sendrecv"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        if self.n != 2:
            raise WormholeError("send/recv needs exactly two ranks", value=self.ranks)
        self.steps = 1
        self.chunks = deque(chunks_of(self.nbytes, self.chunk_bytes)) if self.nbytes > 0 else deque()
        self.remaining = len(self.chunks)
        self.inflight = 0

    def _rank_ready(self, i):
        if i != 0:
            return
        if self.remaining == 0:
            self.net.schedule(0, self._finish)
            return
        self._pump()

    def _pump(self):
        while self.chunks and self.inflight < self.max_inflight:
            size = self.chunks.popleft()
            self.inflight += 1
            self._transfer(0, 1, size, self._arrive)

    def _arrive(self):
        self.inflight -= 1
        self.remaining -= 1
        self._pump()
        if self.remaining == 0:
            self._finish()


def double_binary_tree(n):
    """Two complementary binary trees over ranks 0..n-1, as parent lists (root: -1): tree 0 in heap order
    (parent (i - 1) // 2), tree 1 the same over the ranks reversed, so that for even n a rank interior in one
    tree is a leaf in the other (NCCL's double binary tree splits the bandwidth load the same way)."""
    t0 = [-1] + [(i - 1) // 2 for i in range(1, n)]
    t1 = [-1] * n
    for i in range(n):
        j = n - 1 - i
        t1[i] = -1 if j == 0 else n - 1 - (j - 1) // 2
    return t0, t1


def tree_depth(n):
    """Edges from the root to the deepest leaf of an n-rank heap-ordered binary tree."""
    return max(0, (n).bit_length() - 1)


def nccl_trees(servers):
    """NCCL's two trees over ranks whose servers are ``servers`` (one server id per rank, in rank order), as
    parent lists (root: -1): inside a server a chain, across servers the double binary tree of the servers'
    heads; the second tree runs each chain the other way, so its head, and the NIC it crosses servers
    through, is another GPU.  With one rank per server these are ``double_binary_tree``."""
    order, members = [], {}
    for i, s in enumerate(servers):
        if s not in members:
            members[s] = []
            order.append(s)
        members[s].append(i)
    node_trees = double_binary_tree(len(order))
    out = []
    for t in range(2):
        chains = [members[s] if t == 0 else members[s][::-1] for s in order]
        par = [-1] * len(servers)
        for k, chain in enumerate(chains):
            for j in range(1, len(chain)):
                par[chain[j]] = chain[j - 1]
            up = node_trees[t][k]
            par[chain[0]] = -1 if up < 0 else chains[up][0]
        out.append(par)
    return out


def _depth(parents):
    deepest = 0
    for i in range(len(parents)):
        d, j = 0, i
        while parents[j] >= 0:
            j, d = parents[j], d + 1
        deepest = max(deepest, d)
    return deepest


class TreeAllReduce(Collective):
    """NCCL's tree all-reduce: half of the buffer on each of two trees (``nccl_trees``: a chain inside each
    server, a double binary tree across servers), in chunks; a rank sends a chunk to its parent once it has
    the chunk from all its children (reduce), the root then sends it down, each rank forwarding it to its
    children (broadcast).  Every rank sends the same bytes in all as the ring (2 (N - 1) / N of the buffer
    on average) in 2 x depth steps instead of 2 (N - 1)."""
    name = "allreduce_tree"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        n = self.n
        self._trivial = n == 1 or self.nbytes == 0
        if self._trivial:
            return
        self.parents = nccl_trees([self.t.server(r) for r in self.ranks])
        self.children = [[[] for _ in range(n)] for _ in range(2)]
        for t in range(2):
            for i, par in enumerate(self.parents[t]):
                if par >= 0:
                    self.children[t][par].append(i)
        halves = split(self.nbytes, 2)
        self.half_chunks = [chunks_of(h, self.chunk_bytes) if h > 0 else [] for h in halves]
        self.up = {}                # (tree, rank, chunk) -> children's chunks received
        self.left = sum((n - 1) * len(c) for c in self.half_chunks)     # broadcast arrivals to come
        self.steps = 2 * max(_depth(p) for p in self.parents)
        if self.left == 0:
            self._trivial = True

    def _rank_ready(self, i):
        if self._trivial:
            if all(self._ready):
                self.net.schedule(0, self._finish)
            return
        for t in range(2):
            for c in range(len(self.half_chunks[t])):
                self._try_up(t, i, c)

    def _try_up(self, t, i, c):
        if not self._ready[i] or self.up.get((t, i, c), 0) < len(self.children[t][i]):
            return
        self.up[(t, i, c)] = -1         # sent (or, at the root, broadcast started)
        size = self.half_chunks[t][c]
        par = self.parents[t][i]
        if par < 0:
            self._down(t, i, c)
        else:
            self._transfer(i, par, size, lambda: self._arrive_up(t, par, c))

    def _arrive_up(self, t, par, c):
        self.up[(t, par, c)] = self.up.get((t, par, c), 0) + 1
        self._try_up(t, par, c)

    def _down(self, t, i, c):
        for ch in self.children[t][i]:
            self._transfer(i, ch, self.half_chunks[t][c], lambda ch=ch: self._arrive_down(t, ch, c))

    def _arrive_down(self, t, i, c):
        self.left -= 1
        self._down(t, i, c)
        if self.left == 0:
            self._finish()


COLLECTIVES = {
    "allreduce": RingAllReduce, "reducescatter": ReduceScatter, "allgather": AllGather,
    "broadcast": Broadcast, "alltoall": AllToAll, "sendrecv": SendRecv,
}


def ring_order(gpus, gpus_per_server=8):
    """NCCL's ring order: a server's GPUs adjacent, every other server's in reverse, so that the ring leaves
    a server and enters the next through GPUs of the same local index: on a rail-optimized fabric each
    crossing stays on one rail (a leaf, no spine), as NCCL builds its rings NIC n to NIC n.  (With an odd
    number of servers the ring's closing edge crosses rails.)  Channel 0 of ``channels.channel_orders``."""
    return channel_orders(gpus, gpus_per_server, 1)[0]


def alpha_beta_ring(kind, n, nbytes, rate_bps, alpha_ps, chunk_bytes=DEFAULT_CHUNK, wire_overhead=1.0, channels=1):
    """Alpha-beta time (ps) of a pipelined ring collective on an idle ring of
    equal links: (steps + chunks - 1) stages of one chunk each.  With
    ``channels`` C, C such rings at once on links of their own (NCCL's channels
    on a rail-optimized fabric: each channel's slow links are its own rails),
    each over its part of the buffer: the time of the largest part's ring."""
    steps = {"allreduce": 2 * (n - 1), "reducescatter": n - 1, "allgather": n - 1}[kind]
    part = -(-int(nbytes) // int(channels))
    seg = -(-part // n)
    c = max(1, -(-seg // chunk_bytes))
    chunk = seg / c
    stage = alpha_ps + chunk * 8 * wire_overhead / rate_bps * 1e12
    return (steps + c - 1) * stage
