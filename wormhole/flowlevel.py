"""Flow-level backend: fluid flows sharing links by (weighted) max-min fairness.

SimGrid's CM02 model (``flow_model="cm02"``): a flow first waits its route
latency (the sum of its links' propagation delays) without using bandwidth,
then joins the sharing; shares are weighted max-min with each flow's weight
inversely proportional to its route latency, found by progressive filling
(saturate the most constrained link, freeze its flows, repeat); an optional
window bounds a flow at window / (2 x route latency).  ``flow_model="maxmin"``
is plain max-min.  The loop is SimGrid's: share, earliest finish, advance,
repeat.  A change (a flow joining or leaving) re-solves only the flows
connected to it through shared links.

Routes come from the same fabric and ECMP hashing as the packet kernel; link
capacities are payload rates (line rate x mtu / (mtu + headers)), so FCTs are
comparable with the packet kernel's.  Same API as ``Network``: send, connect /
post, schedule, run, now, results, stats, fct_lines, flow_path.  What a fluid
model has no notion of (packet-level rate and queue samples, congestion-control
state, port queues and PFC, the accelerator's partitions) raises
``NotAvailableError`` naming the backend.
"""
import heapq
import time
from collections import deque

import numpy as np

from . import network as _nw
from ._core.fluid import FluidSolver
from ._core.kernel import _py_ecmp_hash
from .errors import FlowFileError, NotAvailableError, RoutingError, WormholeError
from .fabric import Fabric
from .units import NS

INF = float("inf")
FLOW_MODELS = ("cm02", "maxmin")


class FlowNetwork:
    """The flow-level backend behind ``Network(..., backend="flow")``."""

    def __init__(self, topology, config, flow_model="cm02"):
        if flow_model not in FLOW_MODELS:
            raise NotAvailableError("unknown flow model %r (cm02, maxmin)" % flow_model, value=flow_model)
        self.config = config
        self.topology = topology
        self.fabric = Fabric(topology, config)
        self.model = flow_model
        c = config
        hdr = _nw.BASE_HEADER
        self.eff = int(c.mtu) / (int(c.mtu) + hdr)
        self.window = float(c.flow_window)
        self._now = 0
        self._seq = 0
        self._events = []           # (time, seq, kind, arg)
        self._sport = {}
        self.src, self.dst, self.size, self.start, self.finish, self.sports, self.dports = [], [], [], [], [], [], []
        self.links, self.latency, self.weight, self.bound, self._msg_bytes = [], [], [], [], []
        self._cb = {}
        self._standalone = []
        self._done_order = []
        self._last = 0              # time remaining[] was last advanced to
        self._conns = {}
        self._messages = []
        self._wall = 0.0
        self.n_events = 0
        self.caps = {p: float(self.fabric.port_rate[p]) * self.eff / 8e12 for p in range(len(self.fabric.port_rate))}
        self.solver = FluidSolver([self.caps[p] for p in range(len(self.caps))])

    # -- routing (the packet kernel's ECMP, in Python) ----------------------
    def _route(self, s, d, sport, dport):
        f = self.fabric
        nh = len(f.hosts)
        hd = int(f.host_idx[d])
        sip, dip = int(f.node_ip[s]), int(f.node_ip[d])
        w2 = (sport | (dport << 16)) & 0xFFFFFFFF
        node, path = s, []
        while True:
            r = node * nh + hd
            cnt = int(f.rt_cnt[r])
            if cnt == 0 or len(path) > 64:
                raise RoutingError("no route from host %d to host %d" % (s, d), value=(s, d))
            k = 0 if cnt == 1 else _py_ecmp_hash(sip, dip, w2, int(f.seed[node])) % cnt
            port = int(f.rt_ports[int(f.rt_start[r]) + k])
            path.append(port)
            node = int(f.port_node[int(f.port_peer[port])])
            if node == d:
                return path

    # -- API ------------------------------------------------------------------
    @property
    def now(self):
        return self._now

    def _push(self, t, kind, arg):
        heapq.heappush(self._events, (t, self._seq, kind, arg))
        self._seq += 1

    def send(self, src, dst, nbytes, at=None, on_done=None, pg=3, dport=100, _persistent=False):
        s, d, start = _nw.check_send(self, src, dst, nbytes, at, pg, len(self.src))
        sport = self._sport.get((s, d), 10000)
        self._sport[(s, d)] = sport + 1
        path = self._route(s, d, sport, int(dport))
        fid = len(self.src)
        lat = sum(int(self.fabric.port_delay[p]) for p in path)
        self.src.append(s)
        self.dst.append(d)
        self.size.append(int(nbytes))
        self.start.append(start)
        self.finish.append(-1)
        self.sports.append(sport)
        self.dports.append(int(dport))
        self.links.append(path)
        self.latency.append(lat)
        self._msg_bytes.append(0.0 if _persistent else float(nbytes))
        self.weight.append(1.0 / max(lat, 1) if self.model == "cm02" else 1.0)
        self.bound.append(self.window / (2 * lat) if self.window > 0 and lat > 0 else INF)
        self.solver.add_flow(path, self.weight[-1], self.bound[-1] if self.bound[-1] < INF else 0.0)
        self._standalone.append(_nw.standalone_fct(self.fabric, s, d, nbytes, self.config.mtu))
        if on_done is not None:
            self._cb[fid] = on_done
        if _persistent:
            self._conns[fid] = deque()
        else:
            self._push(start + (lat if self.model == "cm02" else 0), 0, fid)     # joins after its latency
        return fid

    def connect(self, src, dst, at=None, pg=3, dport=100):
        return self.send(src, dst, 1, at=at, pg=pg, dport=dport, _persistent=True)

    def post(self, conn, nbytes, on_done=None):
        if conn not in self._conns:
            raise FlowFileError("not a connection", value=conn)
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise FlowFileError("message size must be a positive integer of bytes", value=nbytes)
        mid = len(self._messages)
        self._messages.append([conn, int(nbytes), self._now, -1])
        q = self._conns[conn]
        q.append((mid, on_done))
        if len(q) == 1:
            self._start_message(conn)
        return mid

    def _start_message(self, conn):
        mid, _ = self._conns[conn][0]
        self._msg_bytes[conn] = float(self._messages[mid][1])
        self._push(self._now + (self.latency[conn] if self.model == "cm02" else 0), 0, conn)

    def message(self, mid):
        conn, size, posted, done = self._messages[mid]
        return _nw.MessageResult(mid, conn, size, posted, done, done - posted if done >= 0 else -1)

    def schedule(self, delay, callback):
        if isinstance(delay, bool) or not isinstance(delay, (int, np.integer)) or delay < 0:
            raise WormholeError("delay must be a non-negative integer of ps", value=delay)
        self._push(self._now + int(delay), 1, callback)

    # -- the loop -------------------------------------------------------------
    def _advance(self, t):
        dt = t - self._last
        if dt > 0:
            self.solver.advance(float(dt))
        self._last = t
        self._now = t

    def _join(self, f):
        self.solver.join(f, self._msg_bytes[f])

    def _leave(self, f):
        self.solver.leave(f)

    # for inspection and tests: the current rates (bytes per ps) and active flows
    @property
    def rate(self):
        return [self.solver.rate_of(f) for f in range(len(self.src))]

    @property
    def active(self):
        return set(self.solver.active())

    @property
    def n_resolves(self):
        return self.solver.solves

    def run(self, until=None, progress=False):
        limit = INF if until is None else int(until)
        t0 = time.perf_counter()
        solver = self.solver
        while True:
            dtc, fc = solver.next_completion()
            tc = self._last + max(0.0, dtc) if fc >= 0 else INF
            te = self._events[0][0] if self._events else INF
            if min(tc, te) > limit or (tc == INF and te == INF):
                break
            self.n_events += 1
            if tc <= te:
                t = int(np.ceil(tc))
                self._advance(t)
                self._complete(fc)
            else:
                t, _, kind, arg = heapq.heappop(self._events)
                self._advance(t)
                if kind == 0:
                    self._join(arg)
                else:
                    arg()
        if until is not None and self._now < limit:
            self._advance(limit)
        self._wall += time.perf_counter() - t0

    def _complete(self, f):
        self._leave(f)
        if f in self._conns:
            q = self._conns[f]
            mid, cb = q.popleft()
            self._messages[mid][3] = self._now
            if q:
                self._start_message(f)
            if cb is not None:
                cb(self.message(mid))
            return
        self.finish[f] = self._now
        self._done_order.append(f)
        cb = self._cb.pop(f, None)
        if cb is not None:
            cb(self.flow(f))

    # -- results --------------------------------------------------------------
    def flow(self, fid):
        fin = self.finish[fid]
        return _nw.FlowResult(fid, self.src[fid], self.dst[fid], self.sports[fid], self.dports[fid],
                              self.size[fid], self.start[fid], fin, fin - self.start[fid] if fin >= 0 else -1,
                              self._standalone[fid])

    @property
    def results(self):
        n = len(self.src)
        out = np.zeros(n, dtype=_nw.RESULT_DTYPE)
        out["id"] = np.arange(n)
        out["src"], out["dst"] = self.src, self.dst
        out["sport"], out["dport"] = self.sports, self.dports
        out["size"], out["start"] = self.size, self.start
        fin = np.array(self.finish, dtype=np.int64)
        out["finish"] = fin
        out["fct"] = np.where(fin >= 0, fin - out["start"], -1)
        out["standalone_fct"] = self._standalone
        return out

    def delivered(self):
        res = self.results
        done = np.where(res["fct"] >= 0, res["size"], 0)
        return done, done.copy(), np.zeros(len(res), dtype=np.int64)

    def completion_order(self):
        return np.array(self._done_order, dtype=np.int32)

    @property
    def stats(self):
        """Flow-level events (flow and message starts and completions, timed
        callbacks), rate solves, flows, wall-clock.  No packet counters: the
        fluid model has no packets, drops, PFC or ECN, and skips nothing."""
        return {"backend": "flow", "flow_model": self.model, "events": self.n_events, "rate_solves": self.n_resolves,
                "flows": len(self.src), "flows_completed": len(self._done_order), "wall_seconds": self._wall,
                "events_per_second": self.n_events / self._wall if self._wall > 0 else 0.0,
                "sim_time_ps": self._now}

    def flow_path(self, fid, reverse=False):
        """Egress ports of a flow's data path, or with ``reverse`` of the path its
        ACKs take in the packet kernel (the same ECMP choice: destination to source,
        ports swapped); the fluid model itself sends no ACKs."""
        if not 0 <= int(fid) < len(self.src):
            raise FlowFileError("no such flow", value=fid)
        if not reverse:
            return list(self.links[fid])
        return self._route(self.dst[fid], self.src[fid], self.dports[fid], self.sports[fid])

    def _not_available(self, what, why):
        raise NotAvailableError("%s is not available on the flow backend (%s fluid model: %s); use the packet "
                                "backend" % (what, self.model, why), value=what)

    def samples(self):
        self._not_available("samples()", "no packets, so no per-ACK rate or queue samples")

    def cc_state(self, fid):
        self._not_available("cc_state()", "no congestion control, rates come from max-min sharing")

    def port_state(self, port):
        self._not_available("port_state()", "no queues, pauses or per-port packet state")

    def pfc_records(self):
        self._not_available("pfc_records()", "no PFC")

    def pfc_lines(self):
        self._not_available("pfc_lines()", "no PFC")

    def partitions(self):
        self._not_available("partitions()", "no accelerator")

    def fct_lines(self):
        ips = self.fabric.node_ip
        return ["%08x %08x %d %d %d %d %d %d\n" % (ips[self.src[f]], ips[self.dst[f]], self.sports[f], self.dports[f],
                                                 self.size[f], self.start[f] // NS,
                                                 (self.finish[f] - self.start[f]) // NS, self._standalone[f] // NS)
                for f in self._done_order]
