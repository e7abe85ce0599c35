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
from array import array
from collections import namedtuple

import numpy as np

from . import backend as bk
from . import cc as ccmod
from .config import Config
from .errors import ApiError, ResourceLimitError, TopologyError, WormholeError
from .fabric import Fabric
from .topology import Topology, read_topology
from .units import NS, as_bytes, as_time


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
    """Validate a send: (src node, dst node, bytes, start ps)."""
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


def message_table(cols, src_of, dst_of):
    """The ``messages`` array from the message columns (connection, size, posted,
    delivered, done: Network._msg)."""
    conn, size, posted, delivered, done = (np.array(c, dtype=np.int64) for c in cols)
    n = len(conn)
    out = np.zeros(n, dtype=MESSAGE_DTYPE)
    if not n:
        return out
    out["id"] = np.arange(n)
    out["connection"] = conn
    ids, at = np.unique(conn, return_inverse=True)
    out["src"] = np.array([src_of(c) for c in ids.tolist()], dtype=np.int64)[at]
    out["dst"] = np.array([dst_of(c) for c in ids.tolist()], dtype=np.int64)[at]
    out["size"] = size
    out["posted"] = posted
    out["delivered"] = delivered
    out["done"] = done
    out["fct"] = np.where(done >= 0, done - posted, -1)
    return out


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


class Network:
    """A simulated fabric that accepts flows, messages on connections and timed
    callbacks; ``backend="flow"`` gives the flow-level backend behind the same
    API.  The Network checks every argument, keeps what the backends share
    (source ports, standalone FCTs, callbacks, message rows) and builds the
    result tables; the backend (``backend.py``) simulates."""

    def __init__(self, topology, config=None, *, backend="packet", **overrides):
        cls = bk.backend_class(backend)
        self.topology = _as_topology(topology)
        self.config = _as_config(config, overrides).for_topology(self.topology)
        self.fabric = Fabric(self.topology, self.config)
        self._sport = {}
        self._standalone = []
        self._on_done = {}          # flow -> on_done
        self._on_delivered = {}     # flow -> on_delivered
        self._conns = set()
        # per message, one column each (int64 arrays: a training run posts hundreds of thousands of
        # messages, and a list per message kept the garbage collector walking them): connection, size,
        # posted, delivered (its last byte reached the receiver), done (acknowledged); -1 while pending
        self._msg = tuple(array("q") for _ in range(5))
        self._msg_callbacks = {}    # message -> [on_delivered, on_done], each None once called
        self._user = {}
        self._next_user = 0
        self._wall = 0.0
        self._port_tab = None
        self._backend = cls(self)

    @property
    def backend(self):
        """The backend object (``PacketBackend`` or ``FlowBackend``), for inspection."""
        return self._backend

    # -- the API ------------------------------------------------------------
    @property
    def now(self):
        """Simulated time in ps."""
        return self._backend.now

    def send(self, src, dst, nbytes, at=None, on_done=None, pg=3, dport=100, on_delivered=None, cc=None,
             _persistent=False):
        """Start a flow of ``nbytes`` (int, integral float or '32MB') from host
        ``src`` to host ``dst`` at time ``at`` (ps or '5us', absolute; default now).
        ``on_delivered(FlowResult)`` is called at the simulated time its last byte
        reaches the receiver, ``on_done(FlowResult)`` when the sender has it
        acknowledged.  ``cc`` gives the flow a congestion control of its own (a
        name of the registry; None: the configuration's); its parameters are the
        configuration's.  Returns the flow id."""
        s, d, n, start = check_send(self, src, dst, nbytes, at, pg, self._backend.n_flows, on_done, on_delivered)
        if cc is not None and (not isinstance(cc, str) or cc not in ccmod.REGISTRY):
            raise ApiError("send: cc must be one of %s" % ", ".join(ccmod.REGISTRY), argument="cc", value=cc)
        key = (s, d)
        sport = self._sport.get(key, 10000)
        if sport > 65535:
            raise ResourceLimitError("more than 55536 flows between one host pair", value=key)
        self._sport[key] = sport + 1
        fid, alone = self._backend.add_flow(s, d, n, start, sport, int(dport), int(pg), _persistent,
                                            on_done is not None, on_delivered is not None,
                                            None if cc == self.config.cc else cc)
        self._standalone.append(alone)
        if on_done is not None:
            self._on_done[fid] = on_done
        if on_delivered is not None:
            self._on_delivered[fid] = on_delivered
        if _persistent:
            self._conns.add(fid)
        return fid

    def connect(self, src, dst, at=None, pg=3, dport=100, cc=None):
        """Open a connection (a persistent queue pair, as NCCL keeps one per ring
        neighbour): messages posted to it share its congestion-control state
        (``cc``: its own algorithm, as in send).  Returns its id (a flow id); it
        never completes by itself."""
        return self.send(src, dst, 1, at=at, pg=pg, dport=dport, cc=cc, _persistent=True)

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
        m = self._msg
        mid = len(m[0])
        self._backend.post(conn, mid, n)
        m[0].append(conn)
        m[1].append(n)
        m[2].append(self._backend.now)
        m[3].append(-1)
        m[4].append(-1)
        if on_done is not None or on_delivered is not None:
            self._msg_callbacks[mid] = [on_delivered, on_done]
        return mid

    def message(self, mid):
        """MessageResult of one message (times -1 while pending)."""
        return self._message_result(check_flow(self, mid, len(self._msg[0]), "message", "mid"))

    def _message_result(self, mid):
        m = self._msg
        conn, size, posted, delivered, done = m[0][mid], m[1][mid], m[2][mid], m[3][mid], m[4][mid]
        row = self._backend.flow_row(conn)
        return MessageResult(mid, conn, row[bk.SRC], row[bk.DST], size, posted, delivered, done,
                             done - posted if done >= 0 else -1)

    @property
    def messages(self):
        """One row per message posted on a connection (index = message id):
        id, connection, src, dst, size, posted, delivered, done, fct (ps, -1 pending)."""
        row = self._backend.flow_row
        return message_table(self._msg, lambda c: row(c)[bk.SRC], lambda c: row(c)[bk.DST])

    def schedule(self, delay, callback):
        """Call ``callback()`` after ``delay`` (ps, or '5us') of simulated time;
        returns its id."""
        d = as_time(delay, "delay", "schedule")
        if not callable(callback):
            raise ApiError("schedule: callback must be callable", argument="callback", value=callback)
        uid = self._next_user
        self._next_user += 1
        self._user[uid] = callback
        self._backend.schedule(self.now + d, uid)
        return uid

    def peek(self):
        """Time (ps) of the next event, or None when nothing is left (on the
        packet backend it may be a timer that turns out to have nothing to do)."""
        return self._backend.peek()

    def step(self):
        """Process one event (one heap pop, and the callbacks it makes due; with
        a SimGrid flow model one round of its engine).  Returns the new time, or
        None when nothing was left to do."""
        if self.peek() is None:
            return None
        t0 = time.perf_counter()
        try:
            self._backend.step()
        finally:
            self._wall += time.perf_counter() - t0
        return self.now

    def fresh(self, **overrides):
        """A new, empty Network on the same topology, configuration and backend
        (with ``overrides`` applied), for repeated experiments; this one is untouched."""
        overrides.setdefault("backend", self._backend.name)
        return Network(self.topology, self.config, **overrides)

    def run(self, until=None, progress=False):
        """Advance the simulation until ``until`` (absolute; ps or '5us'), the
        configured stop time, or until nothing is left to do."""
        until = as_time(until, "until", "run", allow_none=True)
        t0 = time.perf_counter()
        try:
            self._backend.run(until, progress)
        finally:
            self._wall += time.perf_counter() - t0

    # -- what the backend reports (backend.py) ---------------------------------
    def _flow_delivered(self, fid):
        cb = self._on_delivered.pop(fid, None)
        if cb is not None:
            cb(self.flow(fid))

    def _flow_done(self, fid):
        cb = self._on_done.pop(fid, None)
        if cb is not None:
            cb(self.flow(fid))

    def _message_end(self, mid, delivered, done):
        """Message ``mid`` was delivered and / or done now: its times, then its callbacks."""
        now = self._backend.now
        if delivered:
            self._msg[3][mid] = now
        if done:
            self._msg[4][mid] = now
        cbs = self._msg_callbacks.get(mid)
        if cbs is None:
            return
        if delivered and cbs[0] is not None:
            cb, cbs[0] = cbs[0], None
            cb(self._message_result(mid))
        if done and cbs[1] is not None:
            cb, cbs[1] = cbs[1], None
            cb(self._message_result(mid))
        if cbs[0] is None and cbs[1] is None:
            self._msg_callbacks.pop(mid, None)

    def _user_event(self, uid):
        self._user.pop(uid)()

    # -- results ----------------------------------------------------------------
    def flow(self, fid):
        """FlowResult of one flow (fct = -1 while it runs)."""
        fid = check_flow(self, fid, self._backend.n_flows, "flow")
        src, dst, size, start, fin, sport, dport, dl = self._backend.flow_row(fid)
        return FlowResult(fid, src, dst, sport, dport, size, start, fin, fin - start if fin >= 0 else -1,
                          self._standalone[fid], dl)

    @property
    def results(self):
        """One row per flow (index = flow id); times in ps, -1 if unfinished."""
        tab = self._backend.flow_table()
        n = len(tab)
        out = np.zeros(n, dtype=RESULT_DTYPE)
        out["id"] = np.arange(n)
        for name in ("src", "dst", "sport", "dport", "size", "start", "finish", "delivered"):
            out[name] = tab[:, bk.FLOW_COLUMNS.index(name)]
        fin, start = tab[:, bk.FINISH], tab[:, bk.START]
        out["fct"] = np.where(fin >= 0, fin - start, -1)
        out["standalone_fct"] = np.array(self._standalone, dtype=np.int64) if n else []
        return out

    def completion_order(self):
        """Flow ids in the order they completed."""
        return self._backend.completion_order()

    def delivered(self):
        """Per flow: (in-order bytes delivered, payload bytes received incl. duplicates,
        bytes retransmitted)."""
        return self._backend.delivered_bytes()

    def flow_path(self, fid, reverse=False):
        """Port ids (``port_info``) of a flow's data path, source NIC first (or of
        the path its ACKs take)."""
        fid = check_flow(self, fid, self._backend.n_flows, "flow_path")
        return self._backend.flow_path(fid, bool(reverse))

    @property
    def stats(self):
        """Events processed (and on the packet backend packets, drops, PFC, the
        accelerator's counters), simulated time, flows, wall-clock."""
        st = self._backend.stats()
        st["wall_seconds"] = self._wall
        st["events_per_second"] = st["events"] / self._wall if self._wall > 0 else 0.0
        st["sim_time_ps"] = self.now
        st["flows"] = self._backend.n_flows
        return st

    # -- packet-level state (NotAvailableError where a backend has none) -------------
    def samples(self):
        """Rate and queue samples (config ``sample_interval``): a structured array
        with time (ps), kind ('rate' of a flow in bps, 'queue' of a port in bytes),
        index (flow id or port id), node and ifindex (the port's, -1 for a rate)
        and value."""
        raw = self._backend.samples()
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
        return self._backend.cc_state(check_flow(self, fid, self._backend.n_flows, "cc_state"))

    def port_state(self, port):
        """Queue and pause state of one port: a port id or a (node, ifindex) pair."""
        return self._backend.port_state(self._port_id(port, "port_state"))

    def pfc_records(self):
        """PFC frames received: columns time_ps, node, is_switch, ifindex, pause."""
        return self._backend.pfc_records()

    def partitions(self):
        """The accelerator's partitions: sorted lists of active flow ids."""
        return self._backend.partitions()

    def skipping(self):
        """The partitions being fast-forwarded now: (sorted flow ids, start ps,
        planned end ps) each; empty when nothing is skipped."""
        return self._backend.skipping()

    def memory(self):
        """Bytes the packet kernel's C arrays hold, by component, and the unit
        sizes (per flow, per packet, per event)."""
        return self._backend.memory()

    def processes(self):
        """With ``threads=N`` (the partitioned kernel), how the fabric is cut: a dict with
        ``lp_of_node`` (per node, its logical process), ``cut`` (what it was cut by:
        'traffic' from the first run on, when flows were sent before it, else 'rate') and
        ``port_load`` (per port, the packets the flows known at the first run would send out
        of it, the traffic cut's weights; None before). None without threads."""
        return self._backend.processes()

    @property
    def accelerator(self):
        """The accelerator's state and controls (packet backend): partition
        members, per-flow progress and congestion-control vectors, the memo
        database's lookups (``accelerator.memo``); see ``backend_packet.Accelerator``."""
        return self._backend.accelerator

    # -- named ports ------------------------------------------------------------
    @property
    def ports(self):
        """Every directed port: structured array (port, node, ifindex, peer,
        peer_port, rate bps, delay ps); index = the port id ``flow_path``,
        ``samples()`` and ``port_state()`` use."""
        if self._port_tab is None:
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

    # -- reference outputs ---------------------------------------------------
    def fct_lines(self):
        """fct.txt lines in completion order: sip dip sport dport size start_ns fct_ns standalone_ns."""
        rows = self._backend.flow_table().tolist()
        ips = self.fabric.node_ip
        alone = self._standalone
        lines = []
        for fid in self._backend.completion_order().tolist():
            src, dst, size, start, fin, sport, dport, _ = rows[fid]
            lines.append("%08x %08x %d %d %d %d %d %d\n" % (ips[src], ips[dst], sport, dport, size, start // NS,
                                                             (fin - start) // NS, alone[fid] // NS))
        return lines

    def pfc_lines(self):
        return ["%d %d %d %d %d\n" % (r[0] // NS, r[1], r[2], r[3], r[4]) for r in self.pfc_records()]
