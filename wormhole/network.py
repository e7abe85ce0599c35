"""The Network API: one entry point over the simulation backends.

    net = Network(topology, Config(cc="none"))
    fid = net.send(0, 2, "10MB", on_delivered=arrived, on_done=acked)
    net.schedule("5us", callback)
    net.run()
    net.results          # numpy structured array, one row per flow
    net.messages         # one row per message posted on a connection
    net.stats            # events processed, packets, drops, PFC, wall-clock

Times are integer picoseconds (``wormhole.units``); every time, size and rate
argument also takes a string with its unit ("5us", "32MB", "100Gbps") and byte
counts take integral floats (1e6).  Misuse raises ``ApiError`` naming the
argument.  Several Network objects in one process share nothing.
"""
import os
import sys
import time
from collections import deque, namedtuple

import numpy as np

from ._core.kernel import RUN_CODES, Kernel
from . import cc as ccmod
from .config import Config
from .errors import ApiError, NotAvailableError, ResourceLimitError, RoutingError, TopologyError, WormholeError
from .fabric import Fabric
from .topology import Topology, read_topology
from .units import NS, as_bytes, as_time, ns3_fixed_point

INT64_MAX = (1 << 63) - 1
_RUN_IDLE, _RUN_CALLBACKS, _RUN_USER, _RUN_LIMIT = (RUN_CODES[k] for k in ("idle", "callbacks", "user", "limit"))

# Header bytes of the reference's data packet without INT: PPP 14 + IPv4 20 + UDP 8 + SeqTs 6
BASE_HEADER = 48


class FlowResult(namedtuple("FlowResult", "id src dst sport dport size start finish fct standalone_fct delivered",
                            defaults=(-1,))):
    """One flow: times in ps, -1 while pending.  ``start`` (alias ``posted``),
    ``delivered`` (its last byte reached the receiver), ``finish`` (alias
    ``done``: acknowledged at the sender), ``fct = finish - start``."""
    __slots__ = ()

    @property
    def posted(self):
        return self.start

    @property
    def done(self):
        return self.finish


class MessageResult(namedtuple("MessageResult", "id connection src dst size posted delivered done fct")):
    """One message on a connection: times in ps, -1 while pending.  ``posted``
    (alias ``start``), ``delivered`` (its last byte reached the receiver),
    ``done`` (alias ``finish``: acknowledged at the sender), ``fct = done - posted``
    (it includes waiting behind earlier messages of the connection)."""
    __slots__ = ()

    @property
    def start(self):
        return self.posted

    @property
    def finish(self):
        return self.done

    @property
    def conn(self):             # the former names
        return self.connection

    @property
    def latency(self):
        return self.fct


PortInfo = namedtuple("PortInfo", "port node ifindex peer peer_port rate delay")
PortInfo.__doc__ = """One directed port (egress of ``node``'s interface ``ifindex``, 1-based in
link order, as the reference numbers devices): the link to node ``peer`` (whose
end is port ``peer_port``), ``rate`` bps, ``delay`` ps."""

RESULT_DTYPE = np.dtype([
    ("id", np.int64), ("src", np.int32), ("dst", np.int32), ("sport", np.int32), ("dport", np.int32),
    ("size", np.int64), ("start", np.int64), ("finish", np.int64), ("fct", np.int64),
    ("standalone_fct", np.int64), ("delivered", np.int64),
])

MESSAGE_DTYPE = np.dtype([
    ("id", np.int64), ("connection", np.int64), ("src", np.int32), ("dst", np.int32), ("size", np.int64),
    ("posted", np.int64), ("delivered", np.int64), ("done", np.int64), ("fct", np.int64),
])

PORT_DTYPE = np.dtype([
    ("port", np.int32), ("node", np.int32), ("ifindex", np.int32), ("peer", np.int32), ("peer_port", np.int32),
    ("rate", np.int64), ("delay", np.int64),
])


def _host(net, ref, name, call):
    try:
        x = net.topology.node(ref)
    except TopologyError:
        raise ApiError("%s: %s is not a node of the topology" % (call, name), argument=name, value=ref)
    if net.topology.is_switch[x]:
        raise ApiError("%s: %s is a switch, not a host" % (call, name), argument=name, value=ref)
    return x


def _callback(cb, name, call):
    if cb is not None and not callable(cb):
        raise ApiError("%s: %s must be callable or None" % (call, name), argument=name, value=cb)
    return cb


def check_send(net, src, dst, nbytes, at, pg, n_flows, on_done=None, on_delivered=None):
    """Validate a send on either backend: (src node, dst node, bytes, start ps)."""
    s, d = _host(net, src, "src", "send"), _host(net, dst, "dst", "send")
    if s == d:
        raise ApiError("send: src and dst are the same host", argument="dst", value=dst)
    n = as_bytes(nbytes, "nbytes", "send")
    if isinstance(pg, bool) or not isinstance(pg, (int, np.integer)) or not (1 <= int(pg) <= 7):
        raise ApiError("send: pg (priority group) must be in 1..7", argument="pg", value=pg)
    at = as_time(at, "at", "send", allow_none=True)
    start = net.now if at is None else at
    if start < net.now:
        raise ApiError("send: at is in the past (now = %d ps)" % net.now, argument="at", value=at)
    _callback(on_done, "on_done", "send")
    _callback(on_delivered, "on_delivered", "send")
    limit = net.config.max_flows
    if limit and n_flows >= limit:
        raise ResourceLimitError("flow limit reached (max_flows=%d)" % limit, value=limit)
    return s, d, n, start


def check_cc(net, cc, call):
    """The kernel kind of a flow's own congestion control ``cc`` (a registry
    name; None: the configuration's, -1).  Its parameters are the Config's; its
    packets carry the header of the configuration's cc, so an algorithm that
    reads INT hop records needs a configuration whose packets have them, and a
    memoizing accelerator (whose keys assume one algorithm) takes no other."""
    if cc is None or cc == net.config.cc:
        return -1
    if not isinstance(cc, str) or cc not in ccmod.REGISTRY:
        raise ApiError("%s: cc must be one of %s" % (call, ", ".join(ccmod.REGISTRY)), argument="cc", value=cc)
    spec, hops = ccmod.spec(cc), ccmod.kernel_table()[2]["hops"]
    if spec.int_mode == hops and ccmod.spec(net.config.cc).int_mode != hops:
        raise ApiError("%s: cc %r reads INT hop records, which the packets of this configuration (cc=%r) do not carry"
                       % (call, cc, net.config.cc), argument="cc", value=cc)
    if net.config.accelerate and net.config.memo:
        raise ApiError("%s: a flow's own cc (%r, the configuration's is %r) with the memo of the accelerator: memo "
                       "keys assume one algorithm (give memo=False)" % (call, cc, net.config.cc), argument="cc",
                       value=cc)
    return spec.kind


def check_flow(net, fid, n, call, name="fid"):
    if isinstance(fid, bool) or not isinstance(fid, (int, np.integer)) or not 0 <= fid < n:
        raise ApiError("%s: %s: no such flow (ids 0..%d)" % (call, name, n - 1), argument=name, value=fid)
    return int(fid)


def port_table(fabric):
    """Every directed port of a fabric as a PORT_DTYPE array (index = port id)."""
    n = len(fabric.port_node)
    out = np.zeros(n, dtype=PORT_DTYPE)
    out["port"] = np.arange(n)
    out["node"] = fabric.port_node
    out["ifindex"] = fabric.port_ifindex
    out["peer_port"] = fabric.port_peer
    out["peer"] = np.asarray(fabric.port_node)[np.asarray(fabric.port_peer)] if n else []
    out["rate"] = fabric.port_rate
    out["delay"] = fabric.port_delay
    return out


class _PortsMixin:
    """Named ports, shared by both backends (they compile the same fabric)."""

    @property
    def ports(self):
        """Every directed port: structured array (port, node, ifindex, peer,
        peer_port, rate bps, delay ps); index = the port id ``flow_path``,
        ``samples()`` and ``port_state()`` use."""
        if getattr(self, "_port_tab", None) is None:
            self._port_tab = port_table(self.fabric)
            self._port_ids = {(int(r["node"]), int(r["ifindex"])): int(r["port"]) for r in self._port_tab}
        return self._port_tab

    def port(self, node, ifindex):
        """Port id of ``node``'s interface ``ifindex`` (1-based, in the order its
        links were added: the reference's device numbering)."""
        tab = self.ports
        try:
            x = self.topology.node(node)
        except TopologyError:
            raise ApiError("port: node is not a node of the topology", argument="node", value=node)
        p = self._port_ids.get((x, ifindex)) if isinstance(ifindex, (int, np.integer)) else None
        if p is None:
            n = int(np.sum(tab["node"] == x))
            raise ApiError("port: node %d has interfaces 1..%d" % (x, n), argument="ifindex", value=ifindex)
        return p

    def port_info(self, port):
        """PortInfo(port, node, ifindex, peer, peer_port, rate, delay) of a port id."""
        p = self._port_id(port, "port_info")
        r = self.ports[p]
        return PortInfo(p, int(r["node"]), int(r["ifindex"]), int(r["peer"]), int(r["peer_port"]),
                        int(r["rate"]), int(r["delay"]))

    def _port_id(self, port, call):
        """A port id, or a (node, ifindex) pair turned into one."""
        if isinstance(port, tuple) and len(port) == 2:
            return self.port(*port)
        n = len(self.ports)
        if isinstance(port, bool) or not isinstance(port, (int, np.integer)) or not 0 <= port < n:
            raise ApiError("%s: port must be a port id (0..%d) or a (node, ifindex) pair" % (call, n - 1),
                           argument="port", value=port)
        return int(port)


def message_table(rows, delivered, src_of, dst_of):
    """The ``messages`` array of either backend from its message rows."""
    n = len(rows)
    out = np.zeros(n, dtype=MESSAGE_DTYPE)
    if not n:
        return out
    a = np.array(rows, dtype=np.int64).reshape(n, 4)
    out["id"] = np.arange(n)
    out["connection"] = a[:, 0]
    ends = {c: (src_of(c), dst_of(c)) for c in set(a[:, 0].tolist())}
    out["src"] = [ends[c][0] for c in a[:, 0].tolist()]
    out["dst"] = [ends[c][1] for c in a[:, 0].tolist()]
    out["size"] = a[:, 1]
    out["posted"] = a[:, 2]
    out["delivered"] = delivered
    out["done"] = a[:, 3]
    out["fct"] = np.where(a[:, 3] >= 0, a[:, 3] - a[:, 2], -1)
    return out


def standalone_fct(fabric, s, d, nbytes, mtu):
    """The reference's standalone FCT (ps): base RTT + bytes with headers at the pair's bottleneck."""
    hs, hd = int(fabric.host_idx[s]), int(fabric.host_idx[d])
    npk = (int(nbytes) - 1) // int(mtu) + 1
    total = int(nbytes) + npk * BASE_HEADER
    return (int(fabric.pair_rtt_ns[hs, hd]) + total * 8000000000 // int(fabric.pair_bw[hs, hd])) * NS


def _as_topology(topology):
    if isinstance(topology, Topology):
        return topology
    nx = sys.modules.get("networkx")     # imported lazily: a graph implies it is loaded
    if nx is not None and isinstance(topology, nx.Graph):
        return Topology.from_networkx(topology)
    if isinstance(topology, (str, os.PathLike)):
        return read_topology(topology)
    raise WormholeError("topology must be a Topology, a networkx graph or a file path",
                        value=type(topology).__name__)


def _as_config(config, overrides):
    if config is None:
        cfg = Config()
    elif isinstance(config, Config):
        cfg = config
    elif isinstance(config, dict):
        cfg = Config(**config)
    elif isinstance(config, (str, os.PathLike)):
        cfg = Config.from_file(config)
    else:
        raise WormholeError("config must be a Config, a dict or a file path", value=type(config).__name__)
    return cfg.copy(**overrides)


class Network(_PortsMixin):
    """A simulated fabric that accepts flows, messages on connections and timed
    callbacks; ``backend="flow"`` gives the flow-level backend behind the same API."""

    def __new__(cls, topology, config=None, *, backend="packet", **overrides):
        if backend == "flow":
            from .flowlevel import FlowNetwork
            topo = _as_topology(topology)
            cfg = _as_config(config, overrides).for_topology(topo)
            return FlowNetwork(topo, cfg, cfg.flow_model)
        if backend != "packet":
            raise ApiError("Network: unknown backend %r (packet, flow)" % (backend,), argument="backend",
                           value=backend)
        return super().__new__(cls)

    def __init__(self, topology, config=None, *, backend="packet", **overrides):
        self.topology = _as_topology(topology)
        self.config = _as_config(config, overrides).for_topology(self.topology)
        self.fabric = Fabric(self.topology, self.config)
        self._kernel = Kernel()
        self._kernel.build(self.fabric.kernel_arrays(), self._kernel_params())
        self._sport = {}
        self._on_done = {}
        self._user = {}
        self._next_user = 0
        self._cb_scan = 0
        self._wall = 0.0
        self._standalone = []
        self._conns = {}            # connection -> deque of (end offset, message id, on_done)
        self._rconns = {}           # connection -> deque of (end offset, message id, on_delivered)
        self._on_delivered = {}     # flow -> on_delivered
        self._messages = []         # [conn, size, posted, done]
        self._delivered = []        # per message: time its last byte reached the receiver, -1
        self._memo = None
        if self.config.accelerate and self.config.memo:
            from .accel.memo import Memo
            self._memo = Memo(self, self.config.memo_db)
        stop = self.config.simulator_stop_time
        self._stop_ps = INT64_MAX if stop is None else ns3_fixed_point(stop, 10 ** 9) * NS

    def _kernel_params(self):
        c = self.config
        spec = ccmod.spec(c.cc)
        intb = spec.int_bytes
        return {
            "mtu": int(c.mtu),
            "hdr_bytes": BASE_HEADER + intb,
            "ack_bytes": max(60, 14 + 20 + 12 + intb),
            "pfc_bytes": 14 + 20 + 9,
            "int_mode": spec.int_mode,
            "ack_qidx": 0 if c.ack_high_prio else 3,
            "ack_high_prio": int(c.switch_ack_high_prio),
            "ecn": int(c.ecn),
            "pfc": int(c.pfc),
            "rate_bound": int(c.rate_bound),
            "back_to_zero": int(c.l2_back_to_zero),
            "chunk": int(c.l2_chunk_size),
            "ack_interval": int(c.l2_ack_interval),
            "nack_interval": ns3_fixed_point(float(c.nack_interval), 1000) * NS,
            "reserve": int(c.reserve),
            "resume_offset": int(c.resume_offset),
            "quantum": int(c.time_quantum_ps),
            "max_packets": int(c.max_packets),
            "rto": int(round(float(c.rto) * 1e6)),
            "seed": int(c.seed),
            "cc": ccmod.kernel_params(c),
            "sample_interval": int(round(float(c.sample_interval) * 1e6)),
            "ns3_rng": self._ns3_rng(),
            "accel": {"on": bool(c.accelerate), "l": int(c.steady_window), "theta": float(c.steady_theta),
                      "min_skip": int(round(float(c.min_skip) * 1e6)),
                      "margin": int(c.skip_margin) or 16 * int(c.mtu),
                      "check_every": int(c.steady_check_every),
                      "gp_span": self._goodput_test_span(),
                      "memo": bool(c.accelerate and c.memo)},
        }

    def _goodput_test_span(self):
        """The time a flow's rate window must span before the accelerator's
        goodput test may call it steady: eight periods of its congestion
        control's slowest loop (the CC registry's ``loop_period``, at the fabric's
        largest base RTT), in ps; -1 when the test is off or the algorithm has no
        bounded period."""
        c = self.config
        if not c.steady_goodput:
            return -1
        period = ccmod.spec(c.cc).loop_period(c, int(self.fabric.max_rtt_ns) * 1000)
        return -1 if period is None else 8 * int(period)

    def _ns3_rng(self):
        c = self.config
        if c.ecn_rng != "ns3":
            return None
        from .ns3rng import stream_params, setup_streams
        base = int(c.ns3_stream_base)
        if base < 0:
            base = setup_streams(self.topology)
        return stream_params(base, run=int(c.seed))     # the seed is the reference's RngRun

    # -- the API ------------------------------------------------------------
    @property
    def now(self):
        """Simulated time in ps."""
        return self._kernel.now

    def send(self, src, dst, nbytes, at=None, on_done=None, pg=3, dport=100, on_delivered=None, cc=None,
             _persistent=False):
        """Start a flow of ``nbytes`` (int, integral float or '32MB') from host
        ``src`` to host ``dst`` at time ``at`` (ps or '5us', absolute; default now).
        ``on_delivered(FlowResult)`` is called at the simulated time its last byte
        reaches the receiver, ``on_done(FlowResult)`` when the sender has it
        acknowledged.  ``cc`` gives the flow a congestion control of its own
        (None: the configuration's; see check_cc).  Returns the flow id."""
        s, d, n, start = check_send(self, src, dst, nbytes, at, pg, self._kernel.n_flows, on_done, on_delivered)
        kind = check_cc(self, cc, "send")
        key = (s, d)
        sport = self._sport.get(key, 10000)
        if sport > 65535:
            raise ResourceLimitError("more than 55536 flows between one host pair", value=key)
        self._sport[key] = sport + 1
        f = self.fabric
        hs, hd = int(f.host_idx[s]), int(f.host_idx[d])
        if f.pair_hops[hs, hd] < 0:
            raise RoutingError("no route from host %d to host %d" % (s, d), value=(s, d))
        c = self.config
        if c.has_win:
            win = f.max_bdp if c.global_t else int(f.pair_bdp[hs, hd])
        else:
            win = 0
        rtt_ns = f.max_rtt_ns if c.global_t else int(f.pair_rtt_ns[hs, hd])
        try:
            fid = self._kernel.add_flow(s, d, 0 if _persistent else n, start, sport, int(dport), int(pg),
                                        int(win), rtt_ns * NS, bool(c.var_win), on_done is not None, _persistent,
                                        on_delivered is not None, kind)
        except ValueError as e:
            raise RoutingError(str(e), value=(s, d))
        self._standalone.append(standalone_fct(f, s, d, n, c.mtu))
        if on_done is not None:
            self._on_done[fid] = on_done
        if on_delivered is not None:
            self._on_delivered[fid] = on_delivered
        if _persistent:
            self._conns[fid] = deque()
            self._rconns[fid] = deque()
        return fid

    def connect(self, src, dst, at=None, pg=3, dport=100, cc=None):
        """Open a connection (a persistent queue pair, as NCCL keeps one per ring
        neighbour): messages posted to it share its congestion-control state
        (``cc``: its own algorithm, as in send).  Returns its id (a flow id); it
        never completes by itself."""
        fid = self.send(src, dst, 1, at=at, pg=pg, dport=dport, cc=cc, _persistent=True)
        return fid

    def _check_conn(self, conn, call):
        if isinstance(conn, bool) or not isinstance(conn, (int, np.integer)) or int(conn) not in self._conns:
            raise ApiError("%s: conn is not a connection (Network.connect returns one)" % call, argument="conn",
                           value=conn)
        return int(conn)

    def post(self, conn, nbytes, on_done=None, on_delivered=None):
        """Append a message of ``nbytes`` to connection ``conn``;
        ``on_delivered(MessageResult)`` when its last byte reaches the receiver,
        ``on_done(MessageResult)`` when it is acknowledged.  Returns the message id."""
        conn = self._check_conn(conn, "post")
        n = as_bytes(nbytes, "nbytes", "post")
        _callback(on_done, "on_done", "post")
        _callback(on_delivered, "on_delivered", "post")
        end = self._kernel.post(conn, n)
        mid = len(self._messages)
        self._messages.append([conn, n, self.now, -1])
        self._delivered.append(-1)
        q = self._conns[conn]
        q.append((end, mid, on_done))
        if len(q) == 1:
            self._kernel.set_msg_end(conn, end)
        rq = self._rconns[conn]
        rq.append((end, mid, on_delivered))
        if len(rq) == 1:
            self._kernel.set_rcv_end(conn, end)
        return mid

    def message(self, mid):
        """MessageResult of one message (times -1 while pending)."""
        mid = check_flow(self, mid, len(self._messages), "message", "mid")
        conn, size, posted, done = self._messages[mid]
        return MessageResult(mid, conn, self._src_of(conn), self._dst_of(conn), size, posted, self._delivered[mid],
                             done, done - posted if done >= 0 else -1)

    def _src_of(self, conn):
        return int(self._kernel.flow_row(conn)[0])

    def _dst_of(self, conn):
        return int(self._kernel.flow_row(conn)[1])

    @property
    def messages(self):
        """One row per message posted on a connection (index = message id):
        id, connection, src, dst, size, posted, delivered, done, fct (ps, -1 pending)."""
        return message_table(self._messages, self._delivered, self._src_of, self._dst_of)

    def schedule(self, delay, callback):
        """Call ``callback()`` after ``delay`` (ps, or '5us') of simulated time."""
        d = as_time(delay, "delay", "schedule")
        _callback(callback, "callback", "schedule")
        if callback is None:
            raise ApiError("schedule: callback must be callable", argument="callback", value=None)
        uid = self._next_user
        self._next_user += 1
        self._user[uid] = callback
        self._kernel.schedule_user(self.now + d, uid)
        return uid

    def peek(self):
        """Time (ps) of the next event on the heap, or None when nothing is left
        (it may be a timer that turns out to have nothing to do)."""
        t = self._kernel.next_event_time()
        return None if t < 0 or t > self._stop_ps else t

    def step(self):
        """Process one event (one heap pop, and the callbacks it makes due).
        Returns the new time, or None when nothing was left to do."""
        if self.peek() is None:
            return None
        k = self._kernel
        k.set_budget(1)
        t0 = time.perf_counter()
        try:
            self._loop(self._stop_ps, None)
        finally:
            k.set_budget(-1)
            self._wall += time.perf_counter() - t0
        return k.now

    def fresh(self, **overrides):
        """A new, empty Network on the same topology and configuration (with
        ``overrides`` applied), for repeated experiments; this one is untouched."""
        return Network(self.topology, self.config, **overrides)

    def run(self, until=None, progress=False):
        """Advance the simulation until ``until`` (absolute; ps or '5us'), the
        configured stop time, or until nothing is left to do."""
        until = as_time(until, "until", "run", allow_none=True)
        limit = self._stop_ps if until is None else min(until, self._stop_ps)
        bar = None
        if progress and sys.stderr.isatty():      # tqdm would disable itself anyway; spare its import
            from tqdm import tqdm
            bar = tqdm(total=self._kernel.n_flows, delay=2.0, file=sys.stderr, unit="flow", disable=None,
                       desc="simulating", leave=False)
        t0 = time.perf_counter()
        try:
            self._loop(limit, bar)
        finally:
            self._wall += time.perf_counter() - t0
            if bar is not None:
                bar.close()
        if until is not None and self._kernel.now < limit:
            self._kernel.set_now(limit)
        elif until is None and self._stop_ps < INT64_MAX and self._kernel.pending_events > 0:
            self._kernel.set_now(self._stop_ps)

    def _loop(self, limit, bar):
        k = self._kernel
        step = 50 * 1000 * 1000 if bar is not None else None    # 50 us slices for the bar
        while True:
            # partitions formed by Python since the kernel last ran (messages posted
            # by callbacks or between runs) are looked up before time moves on
            self._handle_memo()
            if step is not None:
                nxt = k.next_event_time()
                target = limit if nxt < 0 else min(limit, max(nxt, k.now) + step)
                code, uid = k.run(target)
                bar.total = k.n_flows
                if k.n_done > bar.n:
                    bar.update(k.n_done - bar.n)
                if code == _RUN_IDLE and target < limit and k.pending_events > 0:
                    continue
            else:
                code, uid = k.run(limit)
            if code == _RUN_CALLBACKS:
                self._dispatch_done()
            elif code == _RUN_USER:
                self._user.pop(uid)()
            elif code == _RUN_LIMIT:
                raise ResourceLimitError(
                    "packet limit reached (max_packets=%d) or out of memory at t=%d ps"
                    % (self.config.max_packets, k.now), value=self.config.max_packets)
            else:
                return

    def _handle_memo(self):
        if self._memo is not None:
            notes = self._kernel.take_memo_notes()
            if notes:
                self._memo.handle(notes)

    def _dispatch_done(self):
        self._handle_memo()
        k = self._kernel
        for fid in k.take_rcv_notes():
            rq = self._rconns.get(fid)
            if rq is None:                  # a flow's last byte arrived
                cb = self._on_delivered.pop(fid, None)
                if cb is not None:
                    cb(self.flow(fid))
                continue
            rcv = k.rcv_nxt(fid)
            while rq and rq[0][0] <= rcv:
                end, mid, cb = rq.popleft()
                self._delivered[mid] = self.now
                if cb is not None:
                    cb(self.message(mid))
            if rq:
                k.set_rcv_end(fid, rq[0][0])
        for conn in self._kernel.take_notes():
            una = self._kernel.snd_una(conn)
            q = self._conns[conn]
            while q and q[0][0] <= una:
                end, mid, cb = q.popleft()
                self._messages[mid][3] = self.now
                if cb is not None:
                    cb(self.message(mid))
            if q:
                self._kernel.set_msg_end(conn, q[0][0])
        ids = self._kernel.take_callbacks(self._cb_scan)
        self._cb_scan = self._kernel.n_done
        for fid in ids:
            cb = self._on_done.pop(fid, None)
            if cb is not None:
                cb(self.flow(fid))

    def flow(self, fid):
        """FlowResult of one flow (fct = -1 while it runs)."""
        fid = check_flow(self, fid, self._kernel.n_flows, "flow")
        src, dst, size, start, fin, sport, dport = self._kernel.flow_row(fid)
        dl = -1 if fid in self._conns else self._kernel.delivered_time(fid)
        return FlowResult(fid, src, dst, sport, dport, size, start, fin, fin - start if fin >= 0 else -1,
                          self._standalone[fid], dl)

    @property
    def results(self):
        """One row per flow (index = flow id); times in ps, -1 if unfinished."""
        tab = self._kernel.flow_table()
        n = len(tab)
        out = np.zeros(n, dtype=RESULT_DTYPE)
        out["id"] = np.arange(n)
        out["src"] = tab[:, 0]
        out["dst"] = tab[:, 1]
        out["sport"] = tab[:, 5]
        out["dport"] = tab[:, 6]
        out["size"] = tab[:, 2]
        out["start"] = tab[:, 3]
        out["finish"] = tab[:, 4]
        out["fct"] = np.where(tab[:, 4] >= 0, tab[:, 4] - tab[:, 3], -1)
        out["standalone_fct"] = np.array(self._standalone, dtype=np.int64) if n else []
        out["delivered"] = tab[:, 13]
        return out

    def completion_order(self):
        return self._kernel.done_order()

    def delivered(self):
        """Per flow: (in-order bytes delivered, payload bytes received incl. duplicates,
        bytes retransmitted)."""
        tab = self._kernel.flow_table()
        return tab[:, 7].copy(), tab[:, 8].copy(), tab[:, 9].copy()

    def flow_path(self, fid, reverse=False):
        """Port ids (``port_info``) of a flow's data path, source NIC first (or of
        the path its ACKs take)."""
        fid = check_flow(self, fid, self._kernel.n_flows, "flow_path")
        return self._kernel.flow_path(fid, bool(reverse))

    def partitions(self):
        """The accelerator's partitions: sorted lists of active flow ids."""
        return self._kernel.partitions()

    def port_state(self, port):
        """Queue and pause state of one port: a port id or a (node, ifindex) pair."""
        return self._kernel.port_state(self._port_id(port, "port_state"))

    def samples(self):
        """Rate and queue samples (config ``sample_interval``): a structured array
        with time (ps), kind ('rate' of a flow in bps, 'queue' of a port in bytes),
        index (flow id or port id), node and ifindex (the port's, -1 for a rate)
        and value."""
        raw = self._kernel.samples()
        out = np.zeros(len(raw), dtype=[("time", np.int64), ("kind", "U5"), ("index", np.int64),
                                        ("node", np.int32), ("ifindex", np.int32), ("value", np.int64)])
        out["time"] = raw[:, 0]
        q = raw[:, 1] != 0
        out["kind"] = np.where(q, "queue", "rate")
        out["index"] = raw[:, 2]
        tab = self.ports
        out["node"] = np.where(q, tab["node"][np.where(q, raw[:, 2], 0)], -1) if len(raw) else []
        out["ifindex"] = np.where(q, tab["ifindex"][np.where(q, raw[:, 2], 0)], -1) if len(raw) else []
        out["value"] = raw[:, 3]
        return out

    def cc_state(self, fid):
        """The flow's congestion-control state (rate, and the algorithm's variables)."""
        return self._kernel.cc_state(fid)

    def pfc_records(self):
        """PFC frames received: columns time_ps, node, is_switch, ifindex, pause."""
        return self._kernel.pfc_records()

    @property
    def stats(self):
        st = self._kernel.stats()
        st["wall_seconds"] = self._wall
        st["events_per_second"] = st["events"] / self._wall if self._wall > 0 else 0.0
        st["sim_time_ps"] = self._kernel.now
        st["flows"] = self._kernel.n_flows
        st["flows_completed"] = self._kernel.n_done
        if self._memo is not None:
            st.update(memo_hits=self._memo.hits, memo_misses=self._memo.misses, memo_stored=self._memo.stored,
                      memo_entries=len(self._memo.db), memo_db_bytes=self._memo.db.size_bytes())
        return st

    # -- reference outputs ---------------------------------------------------
    def fct_lines(self):
        """fct.txt lines in completion order: sip dip sport dport size start_ns fct_ns standalone_ns."""
        tab = self._kernel.flow_table()
        ips = self.fabric.node_ip
        lines = []
        for fid in self._kernel.done_order():
            r = tab[fid]
            lines.append("%08x %08x %d %d %d %d %d %d\n" % (
                ips[r[0]], ips[r[1]], r[5], r[6], r[2], r[3] // NS, (r[4] - r[3]) // NS,
                self._standalone[fid] // NS))
        return lines

    def pfc_lines(self):
        return ["%d %d %d %d %d\n" % (r[0] // NS, r[1], r[2], r[3], r[4]) for r in self.pfc_records()]
