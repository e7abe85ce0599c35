"""htsim connection matrices (``.cm``), read, run and written.

The format, as htsim's ``ConnectionMatrix::load`` (Broadcom/csg-htsim,
``sim/datacenter/connection_matrix.cpp``) reads it: a header of ``Nodes N``,
``Connections C``, ``Triggers T``, ``Failures F`` lines (``#`` starts a comment),
then one line per connection, trigger or failure:

* ``src->dst [id I] [start PS] [size BYTES] [trigger T] [send_done_trigger T]
  [recv_done_trigger T] [prio P] [addon]`` -- start in picoseconds; a connection
  starts at its time or when its trigger fires, never both;
* ``trigger id T oneshot|multishot|barrier [count K]`` -- oneshot starts all its
  connections the first time it is activated, multishot one more of them (in
  file order) per activation, barrier all of them after K activations;
* ``failure switch_type TOR|AGG|CORE switch_id S link_id L``.

Running (``HtsimRun``): node n is host n of the fabric; each connection is one
flow (``Network.send``); a flow's completion (its last byte acknowledged)
activates both its send-done and its receive-done trigger.  Failures are read
but not simulated (running a matrix that has some raises NotAvailableError
unless ``ignore_failures``).  ``size 0`` (htsim: an endless flow) is refused.

Writing: ``cm_text(connections)`` renders connections (and triggers);
``network_connections(net)`` turns a finished run's flows and messages into
connections at the times they started, so a run of ours can be replayed in htsim.
"""
from dataclasses import dataclass, field

from ..errors import NotAvailableError, read_text
from .models import WorkloadError


class HtsimError(WorkloadError):
    """A malformed or inconsistent connection matrix (names the file, line and value)."""


TRIGGER_TYPES = ("oneshot", "multishot", "barrier")


@dataclass
class Connection:
    src: int
    dst: int
    size: int
    start: int = None           # ps; None when started by a trigger
    id: int = 0
    trigger: int = 0
    send_done_trigger: int = 0
    recv_done_trigger: int = 0
    prio: int = None
    addon: bool = False
    line: int = 0


@dataclass
class Trigger:
    id: int
    type: str
    count: int = 0
    line: int = 0


@dataclass
class Failure:
    switch_type: str
    switch_id: int
    link_id: int
    line: int = 0


@dataclass
class ConnectionMatrix:
    path: str
    nodes: int
    connections: list
    triggers: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)


def _int(tok, path, no, what):
    try:
        v = int(tok)
    except (TypeError, ValueError):
        raise HtsimError("%s must be an integer" % what, path, no, tok)
    if v < 0:
        raise HtsimError("%s must be non-negative" % what, path, no, tok)
    return v


def read_cm(path):
    """Parse a connection matrix; every malformed line raises HtsimError (file, line, value)."""
    text = read_text(path, HtsimError, "connection matrix")
    head = {}
    conns, trigs, fails = [], {}, []
    for no, raw in enumerate(text.splitlines(), 1):
        toks = raw.split()
        if not toks or toks[0].startswith("#"):
            continue
        t0 = toks[0]
        if t0 in ("Nodes", "Connections", "Triggers", "Failures"):
            if len(toks) < 2:
                raise HtsimError("%s needs a count" % t0, path, no, raw.strip())
            head[t0] = _int(toks[1], path, no, t0)
        elif "->" in t0:
            a, _, b = t0.partition("->")
            c = Connection(_int(a, path, no, "source node"), _int(b, path, no, "destination node"), None, line=no)
            i = 1
            while i < len(toks):
                k = toks[i]
                if k == "addon":
                    c.addon = True
                    i += 1
                    continue
                if k not in ("start", "size", "id", "trigger", "send_done_trigger", "recv_done_trigger", "prio"):
                    raise HtsimError("unknown token in a connection", path, no, k)
                if i + 1 >= len(toks):
                    raise HtsimError("%s without a value" % k, path, no, raw.strip())
                v = toks[i + 1]
                if k == "start":
                    try:
                        st = float(v)
                    except ValueError:
                        raise HtsimError("start must be a number of picoseconds", path, no, v)
                    if st < 0:
                        raise HtsimError("start must be non-negative", path, no, v)
                    c.start = int(round(st))
                elif k == "size":
                    c.size = _int(v, path, no, "size")
                elif k == "id":
                    c.id = _int(v, path, no, "id")
                    if c.id == 0:
                        raise HtsimError("connection id 0 is not allowed", path, no, v)
                elif k == "prio":
                    c.prio = _int(v, path, no, "prio")
                else:
                    setattr(c, k, _int(v, path, no, k))
                    if getattr(c, k) == 0:
                        raise HtsimError("trigger id 0 is not allowed", path, no, v)
                i += 2
            if c.size is None:
                raise HtsimError("connection without a size", path, no, raw.strip())
            if c.size == 0:
                raise HtsimError("size 0 (an endless flow in htsim) is not supported", path, no, raw.strip())
            if c.start is None and not c.trigger:
                raise HtsimError("connection with neither a start time nor a trigger", path, no, raw.strip())
            if c.start is not None and c.trigger:
                raise HtsimError("connection with both a start time and a trigger", path, no, raw.strip())
            if c.trigger and not c.id:
                raise HtsimError("a triggered connection needs an id", path, no, raw.strip())
            conns.append(c)
        elif t0 == "trigger":
            tid, ty, count = 0, None, 0
            i = 1
            while i < len(toks):
                k = toks[i]
                if k in TRIGGER_TYPES:
                    if ty is not None:
                        raise HtsimError("a trigger has one type", path, no, k)
                    ty = k
                    i += 1
                elif k in ("id", "count"):
                    if i + 1 >= len(toks):
                        raise HtsimError("%s without a value" % k, path, no, raw.strip())
                    v = _int(toks[i + 1], path, no, "trigger " + k)
                    if k == "id":
                        tid = v
                    else:
                        count = v
                    i += 2
                else:
                    raise HtsimError("unknown token in a trigger", path, no, k)
            if not tid:
                raise HtsimError("trigger without an id (or id 0)", path, no, raw.strip())
            if ty is None:
                raise HtsimError("trigger without a type (oneshot, multishot, barrier)", path, no, raw.strip())
            if ty == "barrier" and count < 1:
                raise HtsimError("a barrier trigger needs count >= 1", path, no, raw.strip())
            if tid in trigs:
                raise HtsimError("trigger id defined twice", path, no, tid)
            trigs[tid] = Trigger(tid, ty, count, no)
        elif t0 == "failure":
            f = {}
            i = 1
            while i + 1 < len(toks) + 1 and i < len(toks):
                k = toks[i]
                if k not in ("switch_type", "switch_id", "link_id") or i + 1 >= len(toks):
                    raise HtsimError("unknown or incomplete failure attribute", path, no, k)
                f[k] = toks[i + 1]
                i += 2
            if f.get("switch_type") not in ("TOR", "AGG", "CORE"):
                raise HtsimError("failure switch_type must be TOR, AGG or CORE", path, no, f.get("switch_type"))
            fails.append(Failure(f["switch_type"], _int(f.get("switch_id", 0), path, no, "switch_id"),
                                 _int(f.get("link_id", 0), path, no, "link_id"), no))
        else:
            raise HtsimError("unknown line", path, no, raw.strip())
    if "Nodes" not in head:
        raise HtsimError("no Nodes line", path, 1)
    n = head["Nodes"]
    for c in conns:
        for v in (c.src, c.dst):
            if v >= n:
                raise HtsimError("node %d is beyond Nodes %d" % (v, n), path, c.line, v)
        if c.src == c.dst:
            raise HtsimError("a connection from a node to itself", path, c.line, c.src)
    ids = [c.id for c in conns if c.id]
    if len(set(ids)) != len(ids):
        seen = set()
        for c in conns:
            if c.id and c.id in seen:
                raise HtsimError("duplicate connection id", path, c.line, c.id)
            seen.add(c.id)
    used = set()
    for c in conns:
        for k in ("trigger", "send_done_trigger", "recv_done_trigger"):
            t = getattr(c, k)
            if t:
                used.add(t)
                if t not in trigs:
                    raise HtsimError("%s %d is never defined" % (k, t), path, c.line, t)
    if "Connections" in head and head["Connections"] != len(conns):
        raise HtsimError("Connections says %d, the file has %d" % (head["Connections"], len(conns)), path, None,
                         head["Connections"])
    if "Triggers" in head and head["Triggers"] != len(trigs):
        raise HtsimError("Triggers says %d, the file has %d" % (head["Triggers"], len(trigs)), path, None,
                         head["Triggers"])
    if "Failures" in head and head["Failures"] != len(fails):
        raise HtsimError("Failures says %d, the file has %d" % (head["Failures"], len(fails)), path, None,
                         head["Failures"])
    return ConnectionMatrix(str(path), n, conns, trigs, fails)


class HtsimRun:
    """Run a ConnectionMatrix on ``net`` (node n = host n); ``start()`` then ``net.run()``.
    ``flows`` maps connection index -> flow id once started."""

    def __init__(self, net, cm, ignore_failures=False, node_offset=0, observer=None):
        if cm.failures and not ignore_failures:
            raise NotAvailableError("the matrix lists %d link failures; wormhole does not simulate htsim's "
                                    "failures (pass ignore_failures to run without them)" % len(cm.failures),
                                    cm.path, cm.failures[0].line)
        hosts = net.topology.hosts
        if node_offset + cm.nodes > len(hosts):
            raise HtsimError("the matrix has %d nodes, the fabric %d hosts" % (cm.nodes, len(hosts)), cm.path,
                             value=cm.nodes)
        self.net = net
        self.cm = cm
        self.hosts = hosts[node_offset:node_offset + cm.nodes]
        self.flows = {}
        self._targets = {}          # trigger id -> [connection index]
        for i, c in enumerate(cm.connections):
            if c.trigger:
                self._targets.setdefault(c.trigger, []).append(i)
        self._fired = {}            # trigger id -> activations so far
        self._left = len(cm.connections)
        self._finish = None
        self.observer = observer    # called with the FlowResult of every completed connection
        # nothing to do when a connection ends (no trigger, observer or on_done): plain flows, which the
        # partitioned kernel (threads=N) runs too; ``left`` and ``finish`` are then read from the results
        self._plain = observer is None and not any(c.send_done_trigger or c.recv_done_trigger
                                                   for c in cm.connections)

    def _finishes(self):
        """Plain flows: the started connections' finish times (-1 while running)."""
        fin = self.net.results["finish"]
        return [int(fin[f]) for f in self.flows.values()]

    @property
    def left(self):
        """Connections not finished yet."""
        if not self._plain:
            return self._left
        return self._left - sum(1 for t in self._finishes() if t >= 0)

    @property
    def finish(self):
        """When the last connection finished (ps), None before."""
        if not self._plain:
            return self._finish
        ts = self._finishes()
        if len(ts) < self._left or any(t < 0 for t in ts):
            return None
        return max(ts, default=self.net.now)

    def start(self, on_done=None):
        self.on_done = on_done
        if on_done is not None:
            self._plain = False
        for i, c in enumerate(self.cm.connections):
            if c.start is not None:
                self._start(i, c.start)
        if self.left == 0 and on_done is not None:
            self.net.schedule(0, lambda: on_done(self))
        return self

    def _start(self, i, at=None):
        c = self.cm.connections[i]
        self.flows[i] = self.net.send(self.hosts[c.src], self.hosts[c.dst], int(c.size), at=at,
                                      on_done=None if self._plain else lambda r, i=i: self._done(i, r))

    def _done(self, i, r=None):
        if self.observer is not None:
            self.observer(r)
        c = self.cm.connections[i]
        for t in dict.fromkeys((c.send_done_trigger, c.recv_done_trigger)):
            if t:
                self._activate(t)
        self._left -= 1
        if self._left == 0:
            self._finish = self.net.now
            if self.on_done is not None:
                self.on_done(self)

    def _activate(self, t):
        trig = self.cm.triggers[t]
        n = self._fired[t] = self._fired.get(t, 0) + 1
        targets = self._targets.get(t, [])
        if trig.type == "oneshot":
            go = targets if n == 1 else []
        elif trig.type == "multishot":
            go = targets[n - 1:n]
        else:
            go = targets if n == trig.count else []
        for i in go:
            self._start(i)

    def summary(self):
        res = self.net.results
        fcts = [int(res["fct"][f]) for f in self.flows.values() if res["fct"][f] >= 0]
        return {"workload": "htsim:%s" % self.cm.path, "nodes": self.cm.nodes,
                "connections": len(self.cm.connections), "triggers": len(self.cm.triggers),
                "started": len(self.flows), "completed": len(fcts), "finish_ps": self.finish,
                "mean_fct_ps": sum(fcts) / len(fcts) if fcts else None, "max_fct_ps": max(fcts) if fcts else None}


def run_cm(net, path, **kw):
    run = HtsimRun(net, read_cm(path), **kw).start()
    net.run()
    return run


def cm_text(connections, nodes, triggers=(), header="# written by wormhole"):
    """A connection matrix: ``connections`` of Connection (id assigned in order
    when 0), ``triggers`` of Trigger."""
    lines = [header] if header else []
    lines += ["Nodes %d" % nodes, "Connections %d" % len(connections)]
    triggers = list(triggers)
    if triggers:
        lines.append("Triggers %d" % len(triggers))
    for k, c in enumerate(connections, 1):
        s = "%d->%d id %d" % (c.src, c.dst, c.id or k)
        if c.trigger:
            s += " trigger %d" % c.trigger
        else:
            s += " start %d" % int(c.start or 0)
        s += " size %d" % c.size
        if c.send_done_trigger:
            s += " send_done_trigger %d" % c.send_done_trigger
        if c.recv_done_trigger:
            s += " recv_done_trigger %d" % c.recv_done_trigger
        if c.prio is not None:
            s += " prio %d" % c.prio
        lines.append(s)
    for t in triggers:
        lines.append("trigger id %d %s%s" % (t.id, t.type, " count %d" % t.count if t.type == "barrier" else ""))
    return "\n".join(lines) + "\n"


def network_connections(net):
    """A finished run's traffic as connections: every one-shot flow at its start
    time, every message of a persistent connection at the time it was posted
    (host ids are topology node ids; returns (connections, nodes) with node n =
    the n-th host)."""
    hosts = net.topology.hosts
    index = {h: i for i, h in enumerate(hosts)}
    res = net.results
    conns, persistent = [], set()
    for m in net.messages:
        persistent.add(int(m["connection"]))
        conns.append(Connection(index[int(m["src"])], index[int(m["dst"])], int(m["size"]), int(m["posted"])))
    for r in res:
        if int(r["id"]) in persistent:
            continue
        conns.append(Connection(index[int(r["src"])], index[int(r["dst"])], int(r["size"]), int(r["start"])))
    conns.sort(key=lambda c: c.start)     # stable: flows in the order they were sent
    return conns, len(hosts)
