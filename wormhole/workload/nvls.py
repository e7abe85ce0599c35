"""NCCL's NVLS collectives: reduction and multicast in the NVSwitch.

NVLS (one server): every GPU sends its buffer to the switch once, the switch reduces it and multicasts the
result, so each GPU's NVLink port carries the buffer once each way, against 2 (N - 1) / N of it for the
ring, in two steps instead of 2 (N - 1).  The buffer goes in chunks of ``chunk_bytes``, each cut into N
slices; slice j is reduced and multicast by the switch's engine on GPU j's port (``wormhole.nvswitch``).
A reduce-scatter returns slice j to GPU j only; an all-gather sends each GPU's own slice up and multicasts
it.  NVLS-tree (several servers, the same number of the group's GPUs on each): per chunk an NVLS
reduce-scatter inside each server, a tree all-reduce of slice j across servers among the group's j-th GPUs
(each through its own NIC), and an NVLS all-gather inside each server.

With NVLink part of the fabric these are packets: GPU to engine and engine to GPU messages.  On the NVLink
channel (no packets) each server's ports move in lockstep: a step of b bytes per port holds them b / B
and lands one NVLink latency later, steps queue per direction, so a one-server all-reduce of S takes
2 latency + (S + chunk) / B.  The NVLink bytes counted are the bytes the GPUs send (not the switch's
multicast copies)."""
from collections import deque

from ..errors import WormholeError
from .collectives import Collective, TreeAllReduce, chunks_of, split


class _Lane:
    """One direction of a server's NVLink ports on the channel: steps run one after the other."""

    __slots__ = ("t", "free_at")

    def __init__(self, transport):
        self.t = transport
        self.free_at = 0

    def step(self, nbytes, cb):
        net = self.t.net
        start = max(net.now, self.free_at)
        busy = int(round(nbytes * 8 / self.t.nvlink_bps * 1e12))
        self.free_at = start + busy
        net.schedule(start + busy + self.t.nvlink_latency - net.now, cb)


class _Nvls(Collective):
    """Shared machinery: the group by server, the chunks and their slices, the two transports."""

    mode = "allreduce"          # "allreduce" | "reducescatter" | "allgather"
    across = False              # NVLS-tree: several servers, a tree per slice between them

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        members, order = {}, []
        for i, r in enumerate(self.ranks):
            s = self.t.server(r)
            if s not in members:
                members[s] = []
                order.append(s)
            members[s].append(i)
        self.members = [members[s] for s in order]      # per server: rank indices, in rank order
        sizes = {len(m) for m in self.members}
        if len(sizes) != 1:
            raise WormholeError("%s needs the same number of the group's GPUs on every server" % self.name,
                                value=[len(m) for m in self.members])
        self.ppn = sizes.pop()
        self.nodes = len(self.members)
        if self.across and (self.nodes < 2 or self.ppn < 2):
            raise WormholeError("NVLS-tree needs 2 or more servers with 2 or more of the group's GPUs each",
                                value=(self.nodes, self.ppn))
        if not self.across and self.nodes != 1:
            raise WormholeError("NVLS runs inside one server (across servers: NVLS-tree)", value=self.nodes)
        self.srv = [0] * self.n
        self.local = [0] * self.n
        for s, m in enumerate(self.members):
            for j, i in enumerate(m):
                self.srv[i], self.local[i] = s, j
        self.chunks = chunks_of(self.nbytes, self.chunk_bytes) if self.nbytes > 0 else []
        self.slices = [split(c, self.ppn) for c in self.chunks]
        self.steps = 2 if not self.across else 4
        self._trivial = self.n == 1 or not self.chunks
        self.fabric = self.t.nvlink_fabric
        per_member = 1 if self.mode == "reducescatter" else self.ppn
        self.left = self.n * len(self.chunks) * per_member       # slices still to land at the members
        self.trees = {}
        if self.fabric:
            self.upq = [deque() for _ in range(self.n)]
            self.inflight = [0] * self.n
            self.pending = {}           # (rank, chunk) -> slices of its up step not at the engines yet
            self.at_engine = {}         # (server, chunk, slice) -> contributions arrived
        else:
            self.up = [_Lane(self.t) for _ in range(self.nodes)]
            self.down = [_Lane(self.t) for _ in range(self.nodes)]
            self.server_ready = [0] * self.nodes

    def gpu(self, s, j):
        return self.ranks[self.members[s][j]]

    # -- start ---------------------------------------------------------------
    def _rank_ready(self, i):
        if self._trivial:
            if all(self._ready):
                self.net.schedule(0, self._finish)
            return
        if self.fabric:
            self.upq[i].extend(range(len(self.chunks)))
            self._pump(i)
            return
        s = self.srv[i]
        self.server_ready[s] += 1
        if self.server_ready[s] == self.ppn:        # the switch reads every GPU of the server at once
            for c in range(len(self.chunks)):
                if self.mode == "allgather":
                    nb = max(self.slices[c])
                    self._count_up(s, sum(self.slices[c]))
                else:
                    nb = self.chunks[c]
                    self._count_up(s, self.chunks[c] * self.ppn)
                self.up[s].step(nb, lambda s=s, c=c: self._reduced_channel(s, c))

    def _count_up(self, s, nbytes):
        self.t.count_nvlink(self.tag, nbytes, self.ppn)
        for i in self.members[s]:
            self.transfers += 1
            self.sent_bytes[i] += nbytes // self.ppn

    # -- packets on the fabric -----------------------------------------------
    def _pump(self, i):
        q = self.upq[i]
        s = self.srv[i]
        while q and self.inflight[i] < self.max_inflight:
            c = q.popleft()
            self.inflight[i] += 1
            slots = [self.local[i]] if self.mode == "allgather" else range(self.ppn)
            self.pending[(i, c)] = len(slots)
            for j in slots:
                nb = self.slices[c][j]
                self.sent_bytes[i] += nb
                self.transfers += 1
                self.t.to_engine(self.ranks[i], self.gpu(s, j), nb,
                                 lambda i=i, c=c, j=j: self._arrive_engine(i, c, j), self.tag)

    def _arrive_engine(self, i, c, j):
        self.pending[(i, c)] -= 1
        if self.pending[(i, c)] == 0:
            del self.pending[(i, c)]
            self.inflight[i] -= 1
            self._pump(i)
        key = (self.srv[i], c, j)
        self.at_engine[key] = self.at_engine.get(key, 0) + 1
        if self.at_engine[key] == (1 if self.mode == "allgather" else self.ppn):
            del self.at_engine[key]
            self._reduced(self.srv[i], c, j)

    def _reduced(self, s, c, j):
        """The engine of slot j holds slice j of chunk c of server s, reduced (or, all-gather, received)."""
        nb = self.slices[c][j]
        if self.mode == "reducescatter":
            self.t.from_engine(self.gpu(s, j), self.gpu(s, j), nb, self._land)
        elif self.across:
            self.t.from_engine(self.gpu(s, j), self.gpu(s, j), nb, lambda: self._tree(s, c, j))
        else:
            self._multicast(s, c, j)

    def _multicast(self, s, c, j):
        nb = self.slices[c][j]
        for m in range(self.ppn):
            self.t.from_engine(self.gpu(s, j), self.gpu(s, m), nb, self._land)

    def _land(self):
        self.left -= 1
        if self.left == 0:
            self._finish()

    # -- across servers: a tree per slice ----------------------------------------
    def _tree(self, s, c, j):
        key = (c, j)
        tree = self.trees.get(key)
        if tree is None:
            tree = self.trees[key] = TreeAllReduce(
                self.t, [self.gpu(x, j) for x in range(self.nodes)], self.slices[c][j],
                on_done=lambda tr, c=c, j=j: self._tree_done(c, j), chunk_bytes=self.chunk_bytes,
                max_inflight=self.max_inflight, tag=self.tag)
        tree.ready(s)

    def _tree_done(self, c, j):
        del self.trees[(c, j)]
        nb = self.slices[c][j]
        for s in range(self.nodes):
            if self.fabric:         # the owner sends its reduced slice up, the engine multicasts it
                self.sent_bytes[self.members[s][j]] += nb
                self.t.to_engine(self.gpu(s, j), self.gpu(s, j), nb, lambda s=s: self._multicast(s, c, j), self.tag)
            else:
                self.t.count_nvlink(self.tag, nb)
                self.up[s].step(nb, lambda s=s: self.down[s].step(nb, lambda: self._land_channel(self.ppn)))

    # -- the NVLink channel ------------------------------------------------------
    def _reduced_channel(self, s, c):
        if self.mode == "reducescatter":
            self.down[s].step(max(self.slices[c]), lambda: self._land_channel(self.ppn))
        elif self.across:
            self.down[s].step(max(self.slices[c]), lambda: [self._tree(s, c, j) for j in range(self.ppn)])
        else:
            self.down[s].step(self.chunks[c], lambda: self._land_channel(self.ppn * self.ppn))

    def _land_channel(self, k):
        self.left -= k
        if self.left == 0:
            self._finish()


class NvlsAllReduce(_Nvls):
    """NVLS all-reduce inside one server."""
    name = "allreduce_nvls"


class NvlsReduceScatter(_Nvls):
    """NVLS reduce-scatter inside one server: ``nbytes`` is the whole buffer, GPU j receives slice j of
    each chunk."""
    name = "reducescatter_nvls"
    mode = "reducescatter"


class NvlsAllGather(_Nvls):
    """NVLS all-gather inside one server: ``nbytes`` is the gathered buffer."""
    name = "allgather_nvls"
    mode = "allgather"


class NvlsTreeAllReduce(_Nvls):
    """NVLS-tree all-reduce: NVLS inside each server, a tree per slice across servers."""
    name = "allreduce_nvls_tree"
    across = True
