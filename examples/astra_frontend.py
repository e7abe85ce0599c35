"""ASTRA-sim's network frontend on the wormhole Network API, running a 2D all-reduce.

ASTRA-sim's system layer talks to a network through four calls of its
``AstraNetworkAPI`` (astra-sim/common/AstraNetworkAPI.hh):

    sim_send(buffer, count, type, dst, tag, request, msg_handler, fun_arg)
    sim_recv(buffer, count, type, src, tag, request, msg_handler, fun_arg)
    sim_schedule(delta, fun_ptr, fun_arg)
    sim_get_time() -> timespec_t (time_res, time_val)

``WormholeFrontend`` implements them for one rank on top of the public API only:
a send is a message posted on a persistent connection from this rank to ``dst``
(one queue pair per peer, as NCCL keeps), its handler runs when the sender has
it acknowledged (``on_done``); a receive's handler runs when the message's last
byte reached this rank (``on_delivered``), at once if it arrived before the
receive was posted (ASTRA-sim's ns-3 frontend keeps such early arrivals the same
way).  Messages between a pair match by (src, dst, tag) in order.

``allreduce_2d`` is a small workload layer written against those four calls
only: the hierarchical ring all-reduce ASTRA-sim runs on a 2D topology
(reduce-scatter along rows, then columns; all-gather along columns, then rows),
each ring step waiting for the data it depends on.

    python examples/astra_frontend.py
"""
from collections import defaultdict, deque, namedtuple

import wormhole as wh
from wormhole.units import NS, gbps

TimeSpec = namedtuple("TimeSpec", "time_res time_val")      # ASTRA-sim's timespec_t (time_res NS)


class Fabric:
    """What the frontends of one simulation share: the network, one connection
    per (src, dst) pair, and arrivals / receives waiting to be matched."""

    def __init__(self, net):
        self.net = net
        self.conns = {}
        self.arrived = defaultdict(deque)       # (src, dst, tag) -> message results not yet received
        self.waiting = defaultdict(deque)       # (src, dst, tag) -> (handler, arg) of posted receives
        self.frontends = {}

    def frontend(self, rank):
        if rank not in self.frontends:
            self.frontends[rank] = WormholeFrontend(self, rank)
        return self.frontends[rank]

    def connection(self, src, dst):
        if (src, dst) not in self.conns:
            self.conns[(src, dst)] = self.net.connect(src, dst)
        return self.conns[(src, dst)]

    def deliver(self, key, msg):
        if self.waiting[key]:
            handler, arg = self.waiting[key].popleft()
            handler(arg)
        else:
            self.arrived[key].append(msg)


class WormholeFrontend:
    """ASTRA-sim's AstraNetworkAPI for one rank (rank = host id)."""

    def __init__(self, fabric, rank):
        self.fabric = fabric
        self.rank = rank

    def sim_get_time(self):
        return TimeSpec("NS", self.fabric.net.now / NS)

    def sim_schedule(self, delta, fun_ptr, fun_arg):
        """Call ``fun_ptr(fun_arg)`` after ``delta`` ns (a TimeSpec or a number of ns)."""
        ns = delta.time_val if isinstance(delta, TimeSpec) else delta
        self.fabric.net.schedule(int(round(ns * NS)), lambda: fun_ptr(fun_arg))

    def sim_send(self, buffer, count, type, dst, tag, request, msg_handler, fun_arg):
        """Send ``count`` bytes to rank ``dst``; ``msg_handler(fun_arg)`` once acknowledged."""
        key = (self.rank, dst, tag)
        conn = self.fabric.connection(self.rank, dst)
        self.fabric.net.post(conn, count, on_delivered=lambda m: self.fabric.deliver(key, m),
                             on_done=None if msg_handler is None else (lambda m: msg_handler(fun_arg)))
        return 0

    def sim_recv(self, buffer, count, type, src, tag, request, msg_handler, fun_arg):
        """Expect ``count`` bytes from rank ``src``; ``msg_handler(fun_arg)`` once they arrived."""
        key = (src, self.rank, tag)
        if self.fabric.arrived[key]:
            self.fabric.arrived[key].popleft()
            msg_handler(fun_arg)
        else:
            self.fabric.waiting[key].append((msg_handler, fun_arg))
        return 0


def allreduce_2d(frontends, rows, cols, nbytes, on_finish):
    """Hierarchical ring all-reduce of ``nbytes`` per rank over a rows x cols grid
    of frontends (rank r at row r // cols, column r % cols), through sim_send /
    sim_recv / sim_schedule only.  ``on_finish(rank, time_ns)`` per rank."""
    n = rows * cols
    # the phases: (ring of a rank, bytes per step); reduce-scatter shrinks the data, all-gather grows it back
    row_ring = [[r // cols * cols + c for c in range(cols)] for r in range(n)]
    col_ring = [[c * cols + r % cols for c in range(rows)] for r in range(n)]
    phases = [(row_ring, nbytes // cols), (col_ring, nbytes // (cols * rows)),
              (col_ring, nbytes // (cols * rows)), (row_ring, nbytes // cols)]
    plan = [(ring, size, phase) for phase, (ring, size) in enumerate(phases)]
    state = {r: [0, 0] for r in range(n)}           # rank -> (phase, step)

    def start_step(rank):
        phase, step = state[rank]
        while phase < len(plan) and len(plan[phase][0][rank]) - 1 <= step:
            phase, step = phase + 1, 0              # a ring of one rank has nothing to do
        state[rank] = [phase, step]
        if phase == len(plan):
            on_finish(rank, frontends[rank].sim_get_time().time_val)
            return
        ring, size, _ = plan[phase]
        me = ring[rank].index(rank)
        nxt, prv = ring[rank][(me + 1) % len(ring[rank])], ring[rank][me - 1]
        tag = phase * 1000 + step
        frontends[rank].sim_send(None, size, 0, nxt, tag, None, None, None)
        frontends[rank].sim_recv(None, size, 0, prv, tag, None, step_received, rank)

    def step_received(rank):
        state[rank][1] += 1
        # the reduction of the received chunk costs nothing here; a compute model would sim_schedule it
        frontends[rank].sim_schedule(0, start_step, rank)

    for r in range(n):
        start_step(r)


def run(rows=2, cols=4, nbytes=4_000_000, backend="packet", **config):
    """A rows x cols all-reduce on a leaf-spine fabric; returns (finish time per rank in ns, network)."""
    topo = wh.leaf_spine(rows, cols, 2, rate=gbps(100))
    net = wh.Network(topo, wh.Config(cc=config.pop("cc", "hpcc"), **config), backend=backend)
    fabric = Fabric(net)
    frontends = [fabric.frontend(r) for r in range(rows * cols)]
    finish = {}
    allreduce_2d(frontends, rows, cols, nbytes, lambda r, t: finish.__setitem__(r, t))
    net.run()
    return finish, net


if __name__ == "__main__":
    for label, kw in (("packet", {}), ("packet, accelerated", {"accelerate": True}), ("flow", {"backend": "flow"})):
        finish, net = run(**kw)
        print("%-20s all-reduce of 4 MB on 2 x 4 ranks: done at %.2f us (ranks %.2f..%.2f us), %d messages"
              % (label, max(finish.values()) / 1e3, min(finish.values()) / 1e3, max(finish.values()) / 1e3,
                 len(net.messages)))
