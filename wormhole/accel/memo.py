"""Memoized convergence (the Wormhole method's database).

When a partition forms, the conflict graph of its sending flows (vertex =
flow, coloured by its rate quantized to its bottleneck and the rate and delay
of every link of its data and ACK paths; edge weight = number of directed
ports two flows share) is canonicalised with pynauty; the key adds what
changes the outcome beyond the graph (``parameters_key``): every parameter the
registry flags as changing dynamics (``Param.dynamics``) and the fabric-wide
window and base RTT every flow uses under ``global_t`` (without it, a flow's
own pair's window and RTT are in its colour), so that a database shared by
several configurations or fabrics never replays another one's convergence. On
a miss the partition is watched until it becomes steady, then the convergence
is stored: its duration, the bytes each flow moved meanwhile and each flow's
end rate and congestion-control state, in canonical vertex order. On a hit the
stored convergence is applied through the canonical relabelling (the kernel
fast-forwards the partition by the stored duration and sets the stored state),
and the partition then fast-forwards at the steady goodputs measured when the
entry was stored.  The graph is canonicalised only when a key could match: equal
keys have equal state classes (``state_class``: the multiset of the flows' exact
start states, which their colours hold), so a partition whose class no entry has,
no earlier formation had and no twin forming at the same moment has is a miss with
a key never seen, and its key is computed only if it converges and is stored (on a
contended fat-tree nearly every formation starts from a state of its own, and
canonicalising them cost 8% of the run). A connection that gets data again after an idle spell adds a
sending flow to its partition, which is looked up as a newly formed one.
Partitions that form at the same moment as a pending miss with the same key
and the same state mirror it (Memo._mirror).
"""
import hashlib
import json
import os
import pickle
import sqlite3

import pynauty

from ..errors import WormholeError

MEMO_VERSION = 7       # 3: the graph of the sending flows only, entries hold steady goodputs; 4: RTT colour;
#                       5: every dynamics parameter, the fabric-wide window / RTT and the path's links in the key;
#                       6: each flow's exact congestion-control state vector in its colour (start_state);
#                       7: each entry's state class (state_class) beside its key
MAX_FLOWS = 64          # larger partitions are not memoized (canonical labelling cost)


def sending(net, f):
    """Whether flow (or connection) f has data left to send."""
    return net.flow(f).size > net.accelerator.snd_una(f)


def window_rtt(net, src, dst):
    """(window bytes, base RTT ns) a flow from ``src`` to ``dst`` gets (as
    Network.send computes them): the fabric-wide maxima under global_t."""
    c, fab = net.config, net.fabric
    if c.global_t:
        if src is None:
            return (fab.max_bdp if c.has_win else 0), fab.max_rtt_ns
        bdp, rtt = fab.global_window(int(fab.host_idx[src]), int(fab.host_idx[dst]))
        return (bdp if c.has_win else 0), rtt
    hs, hd = int(fab.host_idx[src]), int(fab.host_idx[dst])
    return (int(fab.pair_bdp[hs, hd]) if c.has_win else 0), int(fab.pair_rtt_ns[hs, hd])


def parameters_key(net):
    """What every convergence of ``net`` depends on beyond its conflict graph:
    the value of every parameter the registry flags as changing dynamics, and
    under global_t the fabric-wide window and base RTT (JSON text)."""
    c = net.config
    fabric_wide = list(window_rtt(net, None, None)) if c.global_t else None
    if c.global_t and len(net.fabric.domain_bdp) > 1:      # separate transport domains (NVLink): each one's
        fabric_wide = [fabric_wide, net.fabric.domain_bdp, net.fabric.domain_rtt_ns]
    return json.dumps([MEMO_VERSION, c.key_values(), fabric_wide], separators=(",", ":"))


def start_state(net, f):
    """The part of flow f's colour that says where its convergence starts: its congestion-control state
    vector, exactly (rate, and the algorithm's three values that an entry stores and a replay sets).  A
    replay stands for the convergence only from the state it was recorded from: a stored rate in the
    same 1/32 of the bottleneck is not that state (DCQCN's resumed ring connections climb by 0.2 Gb/s a
    round from 77.5 Gb/s; replaying one round's entry set every later round back to its end rate)."""
    return tuple(net.accelerator.cc_vector(f))


def state_class(states, extra=""):
    """An invariant of a partition's key: the multiset of its sending flows' start
    states (start_state, in any order) and the parameters key.  Each flow's colour
    holds its start state exactly, so two partitions with equal keys have equal
    classes; a class that differs proves the keys differ.  Each value is taken as a
    float plus 0.0, so values equal as numbers (-0.0 and 0.0, 1 and 1.0) that the key's
    colour sets hold as one give one class."""
    h = hashlib.sha256()
    h.update(extra.encode())
    h.update(repr(sorted(tuple(float(x) + 0.0 for x in st) for st in states)).encode())
    return h.hexdigest()


def conflict_graph(net, flows, states=None):
    """(colours, weighted edges) of the flow conflict graph of ``flows``.  A
    flow's colour is its rate in 1/32 of its bottleneck, its exact congestion-control
    state (start_state; ``states`` gives them as taken earlier, in the order of
    ``flows``), the rate and delay of every link of its data and ACK paths,
    and (without global_t) its own window and base RTT."""
    fab = net.fabric
    if states is None:
        states = [start_state(net, f) for f in flows]
    ports = [set(net.flow_path(f)) | set(net.flow_path(f, reverse=True)) for f in flows]
    colours = []
    for f, state in zip(flows, states):
        path, rpath = net.flow_path(f), net.flow_path(f, reverse=True)
        bottleneck = min(int(fab.port_rate[p]) for p in path)
        rate = state[0]
        q = int(round(32 * rate / bottleneck)) if bottleneck else 0     # rate in 1/32 of the bottleneck
        links = tuple((int(fab.port_rate[p]), int(fab.port_delay[p])) for p in path)
        rlinks = tuple((int(fab.port_rate[p]), int(fab.port_delay[p])) for p in rpath)
        own = ()
        if not net.config.global_t:
            r = net.flow(f)
            own = window_rtt(net, r.src, r.dst)
        colours.append((q, links, rlinks, own, state))
    edges = {}
    for i in range(len(flows)):
        for j in range(i + 1, len(flows)):
            w = len(ports[i] & ports[j])
            if w:
                edges[(i, j)] = w
    return colours, edges


def canonical_key(colours, edges, extra=""):
    """(key, order): a key equal for isomorphic coloured weighted graphs, and the
    canonical order of the vertices (order[k] = original vertex at position k)."""
    n = len(colours)
    weights = sorted(set(edges.values()))
    m = n + len(edges)
    adj = {v: [] for v in range(m)}
    aux = n
    edge_colour = {}
    for (i, j), w in sorted(edges.items()):
        adj[aux] = [i, j]
        edge_colour[aux] = w
        aux += 1
    vclasses = sorted(set(colours))
    partition = [set(v for v in range(n) if colours[v] == c) for c in vclasses]
    partition += [set(a for a in edge_colour if edge_colour[a] == w) for w in weights]
    g = pynauty.Graph(m, directed=False, adjacency_dict=adj, vertex_coloring=partition)
    cert = pynauty.certificate(g)
    lab = pynauty.canon_label(g)
    order = [v for v in lab if v < n]
    h = hashlib.sha256()
    h.update(extra.encode())
    h.update(repr((vclasses, [len(p) for p in partition], weights)).encode())
    h.update(cert)
    return h.hexdigest(), order


class MemoDB:
    """Key -> convergence, in SQLite (a file, or memory when no path is given).
    Every entry is committed when written, so a killed run keeps what it stored."""

    def __init__(self, path=None):
        self.path = path
        try:
            self.db = sqlite3.connect(path or ":memory:")
            self.db.execute("PRAGMA journal_mode=WAL" if path else "PRAGMA journal_mode=MEMORY")
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            self.db.execute("CREATE TABLE IF NOT EXISTS memo (key TEXT PRIMARY KEY, cls TEXT, value TEXT)")
            self.db.execute("CREATE INDEX IF NOT EXISTS memo_cls ON memo (cls)")
            row = self.db.execute("SELECT v FROM meta WHERE k = 'version'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('version', ?)", (str(MEMO_VERSION),))
                self.db.commit()
            elif row[0] != str(MEMO_VERSION):
                raise WormholeError("memo database has version %s, this wormhole writes version %d"
                                    % (row[0], MEMO_VERSION), path, value=row[0])
        except sqlite3.DatabaseError as e:
            raise WormholeError("not a usable memo database: %s" % e, path)

    def get(self, key):
        row = self.db.execute("SELECT value FROM memo WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def has_class(self, cls):
        """Some entry has state class ``cls`` (state_class)."""
        return self.db.execute("SELECT 1 FROM memo WHERE cls = ? LIMIT 1", (cls,)).fetchone() is not None

    def put(self, key, value, cls=None):
        self.db.execute("INSERT OR REPLACE INTO memo VALUES (?, ?, ?)", (key, cls, json.dumps(value)))
        self.db.commit()

    def __len__(self):
        return self.db.execute("SELECT COUNT(*) FROM memo").fetchone()[0]

    def size_bytes(self):
        return os.path.getsize(self.path) if self.path and os.path.exists(self.path) else 0


class Memo:
    """The Network's side of memoization: turns the kernel's partition notices
    into lookups, stores and applications."""

    def __init__(self, net, path=None):
        self.net = net
        self.db = MemoDB(path)
        self.extra = parameters_key(net)
        self.pending = {}       # partition -> [version, key, flows, t0, their snd_una, class, start states]:
        #                         flows in canonical order, or while key is None (not computed) in the
        #                         partition's order, with their start states (_keyed computes the key)
        self.forming = {}       # state class -> [(partition, its pending entry)] of the misses formed at forming_t
        self.forming_t = -1
        self.hits = 0
        self.misses = 0
        self.stored = 0
        # why lookups found nothing to replay (Memo.accounting): a key never looked up before, a key
        # looked up before whose partitions all changed before converging (so nothing was stored),
        # an entry the kernel refused; and pending misses dropped because their partition changed first
        self.seen = set()
        self.seen_cls = {}      # state class -> None once keyed, or the pickled (flows, states) of its only formation
        #                         so far, whose key is computed when a second formation has that class or the
        #                         partition is stored (so seen is exact; pickled: ~40 bytes per flow)
        self.miss_new_key = 0
        self.miss_unconverged_key = 0
        self.refused = 0
        self.pending_lost = 0

    def accounting(self):
        """The memo's counters for Network.stats: hits, misses split by why nothing was replayed, entries
        stored, and pending misses whose partition changed (a flow joined, left or went idle) before it
        converged, so nothing was stored for them."""
        return {"memo_hits": self.hits, "memo_misses": self.misses, "memo_stored": self.stored,
                "memo_miss_new_key": self.miss_new_key, "memo_miss_unconverged_key": self.miss_unconverged_key,
                "memo_refused": self.refused, "memo_pending_lost": self.pending_lost,
                "memo_pending": len(self.pending)}

    def _drop_pending(self, part):
        """Partition ``part`` changed: a miss pending on it will never be stored."""
        if self.pending.pop(part, None) is not None:
            self.pending_lost += 1

    def handle(self, notes):
        k = self.net.accelerator
        for kind, part, version in notes:
            ver, flows = k.partition_members(part)
            if ver != version or not flows or len(flows) > MAX_FLOWS:
                continue
            if kind == "formed":
                self._formed(part, version, flows)
            else:
                self._steady(part, version, flows)
        for part, p in list(self.pending.items()):
            if k.partition_members(part)[0] != p[0]:
                self._drop_pending(part)    # it changed before converging: nothing will be stored for it

    def key(self, flows):
        """(key, sending flows in canonical order, idle flows) of a partition's
        flows; key None if none of them is sending."""
        active = [f for f in flows if sending(self.net, f)]
        busy = set(active)
        idle = [f for f in flows if f not in busy]
        if not active:
            return None, [], idle
        key, canon = self._key_of(active, [start_state(self.net, f) for f in active])
        return key, canon, idle

    def _key_of(self, active, states):
        """(key, flows in canonical order) of sending flows with these start states."""
        colours, edges = conflict_graph(self.net, active, states)
        key, order = canonical_key(colours, edges, self.extra)
        return key, [active[v] for v in order]

    def _keyed(self, p):
        """Pending miss ``p`` (a Memo.pending entry) with its key computed (its flows and
        their snd_una then in canonical order)."""
        if p[1] is None:
            key, canon = self._key_of(p[2], p[6])
            una = dict(zip(p[2], p[4]))
            p[1], p[2], p[4] = key, canon, [una[f] for f in canon]
        return p

    def _formed(self, part, version, flows):
        """The graph is that of the partition's sending flows: an idle connection
        has nothing in flight and no part in the convergence (it keeps its state;
        if it gets data during the replay, that ends the replay)."""
        k = self.net.accelerator
        self._drop_pending(part)            # the partition changed since that miss: it cannot be stored
        active = [f for f in flows if sending(self.net, f)]
        if not active:
            return
        busy = set(active)
        idle = [f for f in flows if f not in busy]
        states = [start_state(self.net, f) for f in active]
        cls = state_class(states, self.extra)
        now = self.net.now
        twin = self.forming_t == now and cls in self.forming
        if cls not in self.seen_cls and not twin and not self.db.has_class(cls):
            # no entry, no earlier formation and no twin has this class: a new key, left uncomputed
            self.seen_cls[cls] = pickle.dumps((active, states), pickle.HIGHEST_PROTOCOL)
            self.miss_new_key += 1
            self._pend(part, [version, None, active, now, [k.snd_una(f) for f in active], cls, states])
            return
        self._key_first(cls)
        key, canon = self._key_of(active, states)
        value = self.db.get(key)
        seen = key in self.seen
        self.seen.add(key)
        if value is not None:
            ok = k.memo_apply(part, int(value["dt"]), canon + idle,
                              [int(b) for b in value["bytes"]] + [0] * len(idle),
                              [list(c) for c in value["cc"]] + [[0, 0.0, 0.0, 0]] * len(idle),
                              [float(g) for g in value["goodput"]] + [0.0] * len(idle))
            if ok:
                self.hits += 1
                return
            self.refused += 1
        elif seen:
            self.miss_unconverged_key += 1
        else:
            self.miss_new_key += 1
        if self.net.config.memo_mirrors and twin and self._mirror(part, cls, key, canon, idle):
            return
        self._pend(part, [version, key, canon, now, [k.snd_una(f) for f in canon], cls, states])

    def _key_first(self, cls, known=None):
        """The key of the class's only formation so far, if it was left uncomputed, goes to seen
        (``known``: that formation's key, already computed)."""
        first = self.seen_cls.get(cls)
        if first is not None:
            self.seen.add(known if known is not None else self._key_of(*pickle.loads(first))[0])
        self.seen_cls[cls] = None

    def _pend(self, part, entry):
        """A miss: partition ``part`` is watched until it converges (then stored, _steady)."""
        self.misses += 1
        self.pending[part] = entry
        if self.forming_t != self.net.now:
            self.forming.clear()            # twins form at the same moment
            self.forming_t = self.net.now
        self.forming.setdefault(entry[5], []).append((part, entry))
        self.net.accelerator.watch_partition(part, entry[0])

    def _mirror(self, part, cls, key, canon, idle):
        """A partition that forms at the same moment as a pending one (a miss
        being simulated), with the same key and its flows in exactly the same
        state (congestion control, data left, message ends), evolves as that twin
        does: it is held and follows it rather than being simulated too (not
        without PFC, where the twins interact through the switches' drops)."""
        k = self.net.accelerator
        if not self.net.config.pfc:
            # a full buffer drops: twins sharing a switch interact through its occupancy (one's drops
            # depend on the other's queue, and a loss-based TCP fills it), which a held twin would not
            return False
        lead = p = None
        for q, e in reversed(self.forming.get(cls, []) if self.forming_t == self.net.now else []):
            if self._keyed(e)[1] == key:    # the latest miss of this moment with this key
                lead, p = q, e
                break
        if p is None or self.pending.get(lead) is not p or k.partition_members(lead)[0] != p[0]:
            return False
        lead_canon = p[2]
        for f, g in zip(canon, lead_canon):
            if k.cc_vector(f) != k.cc_vector(g) or k.remaining(f) != k.remaining(g):
                return False
        return k.mirror_start(part, lead, canon + idle, lead_canon + [-1] * len(idle))

    def _steady(self, part, version, flows):
        p = self.pending.pop(part, None)
        if p is None:
            return
        if p[0] != version:
            self.pending_lost += 1
            return
        only = p[1] is None                 # the class's first formation, its key left uncomputed (_formed)
        _, key, canon, t0, una0, cls, _ = self._keyed(p)
        self._key_first(cls, key if only else None)     # (the class now has an entry: later formations are keyed)
        k = self.net.accelerator
        dt = self.net.now - t0
        if dt <= 0:
            return
        value = {"dt": dt, "bytes": [k.snd_una(f) - u for f, u in zip(canon, una0)],
                 "cc": [list(k.cc_vector(f)) for f in canon],
                 "goodput": [k.steady_goodput(f) for f in canon]}
        self.db.put(key, value, cls)
        self.stored += 1
        k.mirror_finish(part)
