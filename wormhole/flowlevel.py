"""Flow-level backend: fluid flows sharing links by (weighted) max-min fairness.

Four models (``flow_model``), each meaning one thing:

- ``packet`` (default), calibrated for comparisons with the packet kernel: link
  capacities are payload rates (line rate x mtu / (mtu + headers)); a flow
  first waits its route latency (the sum of its links' propagation delays)
  without using bandwidth, then shares with a weight inversely proportional to
  its route latency; ``flow_window`` optionally bounds it at window / (2 x
  route latency).
- ``maxmin``: plain max-min on the same payload capacities, no latency phase.
- ``cm02`` and ``lv08``: SimGrid 3.32's network models of those names
  (src/surf/network_cm02.cpp), reproducing SimGrid's FCTs: capacities are the
  line rates (sizes are payload bytes, no headers); a flow waits
  latency_factor x route latency, then shares with penalty route latency +
  sum over its route of weight_S / link bandwidth (in s; rate proportional to
  1 / penalty), bounded at flow_tcp_gamma / (2 x route latency) (SimGrid's
  network/TCP-gamma); its bytes move at bandwidth_factor x its share.  CM02:
  factors 1, 1, weight_S 0; LV08 (SimGrid's default model): 13.01, 0.97,
  20537.  With ``flow_crosstraffic`` (SimGrid's network/crosstraffic, on by
  default there too) a flow also consumes 0.05 x its share on the links of
  its reverse route (the route its ACKs take in the packet kernel).
  SimGrid's engine treats dates within surf/precision (1e-9 s) of the current
  one as now; so does this one for these two models, deciding it on the
  doubles SimGrid computes (a latency end is the clock at the start plus the
  factor x the link latencies summed in route order), not on picoseconds.

Shares are found by progressive filling (saturate the most constrained link,
freeze its flows, repeat).  The loop is SimGrid's: share, earliest finish,
advance, repeat.  A change (a flow joining or leaving) re-solves only the
flows connected to it through shared links.

Routes come from the same fabric and ECMP hashing as the packet kernel.  Same API as ``Network``: send, connect /
post (with ``on_delivered`` and ``on_done``: a fluid model has no ACKs, so a
transfer's last byte arrives and is done at one moment; on_delivered runs
first), schedule, peek / step / run, fresh, now, results, messages, stats,
fct_lines, flow_path, port / port_info / ports.  What a fluid
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
from .errors import ApiError, ConfigError, NotAvailableError, RoutingError
from .fabric import Fabric
from .units import NS, as_bytes, as_time

INF = float("inf")
FLOW_MODELS = ("packet", "maxmin", "cm02", "lv08")
# SimGrid 3.32, src/surf/network_cm02.cpp: network/latency-factor, network/bandwidth-factor, network/weight-S
SIMGRID_MODELS = {"cm02": (1.0, 1.0, 0.0), "lv08": (13.01, 0.97, 20537.0)}
SURF_PRECISION_PS = 1000    # SimGrid's surf/precision, 1e-9 s: dates that close to now are now
CROSSTRAFFIC = 0.05         # SimGrid: a flow's ACKs use 0.05 x its share on the reverse route


class FlowNetwork(_nw._PortsMixin):
    """The flow-level backend behind ``Network(..., backend="flow")``."""

    def __init__(self, topology, config, flow_model="packet"):
        if flow_model not in FLOW_MODELS:
            raise NotAvailableError("unknown flow model %r (%s)" % (flow_model, ", ".join(FLOW_MODELS)),
                                    value=flow_model)
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
        self._dcb = {}              # flow -> on_delivered
        self._standalone = []
        self._done_order = []
        self._last = 0              # time remaining[] was last advanced to
        self._conns = {}
        self._messages = []         # [conn, size, posted, done]
        self._delivered = []
        self._wall = 0.0
        self.n_events = 0
        self.simgrid = flow_model in SIMGRID_MODELS
        if self.simgrid:
            if self.window != 0:
                raise ConfigError("flow_window bounds the packet and maxmin flow models; %s is bounded by "
                                  "flow_tcp_gamma (SimGrid's network/TCP-gamma)" % flow_model, value=self.window)
            self.lat_factor, self.bw_factor, self.weight_s = SIMGRID_MODELS[flow_model]
            self.gamma = float(c.flow_tcp_gamma)
            self.crosstraffic = bool(c.flow_crosstraffic)
            self.eff = 1.0                      # SimGrid's sizes are payload bytes on the line rate
        else:
            self.lat_factor, self.bw_factor, self.weight_s = (1.0 if flow_model == "packet" else 0.0), 1.0, 0.0
            self.gamma, self.crosstraffic = 0.0, False
        self._phase = []            # each flow's latency phase, ps
        # SimGrid's dates are doubles (s): its clock, each flow's latency x factor as it sums it (link by
        # link, in route order), and the date of each pending latency end (the clock at the start + that);
        # the surf/precision test at a round compares these doubles, not our picoseconds
        self._now_d = 0.0
        self._lat_d = []
        self._due_d = {}
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
        if kind == 0 and self.simgrid:
            self._due_d[arg] = self._now_d + self._lat_d[arg]
        heapq.heappush(self._events, (t, self._seq, kind, arg))
        self._seq += 1

    def send(self, src, dst, nbytes, at=None, on_done=None, pg=3, dport=100, on_delivered=None, cc=None,
             _persistent=False):
        s, d, nbytes, start = _nw.check_send(self, src, dst, nbytes, at, pg, len(self.src), on_done, on_delivered)
        if cc is not None:
            self._not_available("send(cc=...)", "no congestion control, rates come from max-min sharing")
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
        self._phase.append(int(round(lat * self.lat_factor)))
        lat_d = 0.0
        for p in path:
            lat_d += int(self.fabric.port_delay[p]) / 1e12
        self._lat_d.append(lat_d * self.lat_factor)
        links, coefs = path, None
        if self.simgrid:
            self.weight.append(1.0 / self._penalty(path, lat))
            self.bound.append(self.gamma / (2e-12 * lat) / 1e12 if self.gamma > 0 and lat > 0 else INF)
            if self.crosstraffic:
                back = self._route(d, s, int(dport), sport)
                links, coefs = path + back, [1.0] * len(path) + [CROSSTRAFFIC] * len(back)
        else:
            self.weight.append(1.0 / max(lat, 1) if self.model == "packet" else 1.0)
            self.bound.append(self.window / (2 * lat) if self.window > 0 and lat > 0 else INF)
        self.solver.add_flow(links, self.weight[-1], self.bound[-1] if self.bound[-1] < INF else 0.0, coefs)
        if self.simgrid:
            alone = min([self.caps[p] / (coefs[i] if coefs else 1.0) for i, p in enumerate(links)] + [self.bound[-1]])
            self._standalone.append(self._phase[-1] + int(np.ceil(nbytes / self.bw_factor / alone)))
        else:
            self._standalone.append(_nw.standalone_fct(self.fabric, s, d, nbytes, self.config.mtu))
        if on_done is not None:
            self._cb[fid] = on_done
        if on_delivered is not None:
            self._dcb[fid] = on_delivered
        if _persistent:
            self._conns[fid] = deque()
        else:
            if self.simgrid:
                self._push(start, 2, fid)                   # starts (SimGrid: an actor wakes), then its phase
            else:
                self._push(start + self._phase[fid], 0, fid)     # joins after its latency phase
        return fid

    def _penalty(self, path, lat):
        """SimGrid's sharing penalty in seconds (rate proportional to its inverse):
        route latency plus weight_S / bandwidth (bytes/s) of each route link.  A
        flow without a latency phase keeps the penalty 1.0 its LMM variable is
        created with (network_cm02.cpp: variable_new(action, 1.0, ...))."""
        if lat * self.lat_factor <= 0:
            return 1.0
        pen = lat * 1e-12
        if self.weight_s > 0:
            for p in path:
                pen += self.weight_s / (float(self.fabric.port_rate[p]) / 8)
        return pen

    def connect(self, src, dst, at=None, pg=3, dport=100, cc=None):
        return self.send(src, dst, 1, at=at, pg=pg, dport=dport, cc=cc, _persistent=True)

    def post(self, conn, nbytes, on_done=None, on_delivered=None):
        if isinstance(conn, bool) or not isinstance(conn, (int, np.integer)) or int(conn) not in self._conns:
            raise ApiError("post: conn is not a connection (Network.connect returns one)", argument="conn",
                           value=conn)
        conn = int(conn)
        nbytes = as_bytes(nbytes, "nbytes", "post")
        _nw._callback(on_done, "on_done", "post")
        _nw._callback(on_delivered, "on_delivered", "post")
        mid = len(self._messages)
        self._messages.append([conn, int(nbytes), self._now, -1])
        self._delivered.append(-1)
        q = self._conns[conn]
        q.append((mid, on_done, on_delivered))
        if len(q) == 1:
            self._start_message(conn)
        return mid

    def _start_message(self, conn):
        mid = self._conns[conn][0][0]
        self._msg_bytes[conn] = float(self._messages[mid][1])
        self._push(self._now + self._phase[conn], 0, conn)

    def message(self, mid):
        mid = _nw.check_flow(self, mid, len(self._messages), "message", "mid")
        conn, size, posted, done = self._messages[mid]
        return _nw.MessageResult(mid, conn, self.src[conn], self.dst[conn], size, posted, self._delivered[mid],
                                 done, done - posted if done >= 0 else -1)

    @property
    def messages(self):
        return _nw.message_table(self._messages, self._delivered, self.src.__getitem__, self.dst.__getitem__)

    def schedule(self, delay, callback):
        d = as_time(delay, "delay", "schedule")
        if not callable(callback):
            raise ApiError("schedule: callback must be callable", argument="callback", value=callback)
        self._push(self._now + d, 1, callback)

    def fresh(self, **overrides):
        """A new, empty flow-level network on the same topology and configuration."""
        return _nw.Network(self.topology, self.config, backend="flow", **overrides)

    # -- the loop -------------------------------------------------------------
    def _advance(self, t):
        dt = t - self._last
        if dt > 0:
            self.solver.advance(float(dt))
        self._last = t
        self._now = t
        self._now_d = t / 1e12

    def _join(self, f):
        self.solver.join(f, self._msg_bytes[f] / self.bw_factor)     # bytes move at bandwidth_factor x share

    def _leave(self, f):
        self.solver.leave(f)

    # for inspection and tests: the current rates (bytes per ps) and active flows
    @property
    def rate(self):
        return [self.solver.rate_of(f) * self.bw_factor for f in range(len(self.src))]

    @property
    def active(self):
        return set(self.solver.active())

    @property
    def n_resolves(self):
        return self.solver.solves

    def _next(self):
        """(time of the next completion or INF, its flow, time of the next queued event or INF)."""
        dtc, fc = self.solver.next_completion()
        tc = self._last + max(0.0, dtc) if fc >= 0 else INF
        te = self._events[0][0] if self._events else INF
        return tc, fc, te

    def peek(self):
        """Time (ps) of the next event (a flow joining or finishing, a callback), or None."""
        tc, _, te = self._next()
        if tc == INF and te == INF:
            return None
        return int(np.ceil(tc)) if tc <= te else int(te)

    def step(self):
        """Process one event (with a SimGrid model: one round of its engine);
        returns the new time, or None when nothing was left."""
        if self.peek() is None:
            return None
        t0 = time.perf_counter()
        self._loop(INF, 1)
        self._wall += time.perf_counter() - t0
        return self._now

    def run(self, until=None, progress=False):
        until = as_time(until, "until", "run", allow_none=True)
        limit = INF if until is None else until
        t0 = time.perf_counter()
        self._loop(limit, -1)
        if until is not None and self._now < limit:
            self._advance(limit)
        self._wall += time.perf_counter() - t0

    def _loop(self, limit, budget):
        while budget != 0:
            budget -= 1
            tc, fc, te = self._next()
            if min(tc, te) > limit or (tc == INF and te == INF):
                break
            self.n_events += 1
            if self.simgrid:
                self._simgrid_round(tc, te)
            elif tc <= te:
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

    def _simgrid_round(self, tc, te):
        """One round of SimGrid's engine: now is the earliest date; every
        completion, latency end and start due before now + surf/precision (as
        the rates stood before the round) happens now, then rates are shared."""
        if tc <= te:
            t, now_d = int(np.ceil(tc)), tc / 1e12
        else:
            t, now_d = int(te), self._date_d(self._events[0])
        horizon = t + SURF_PRECISION_PS
        due = self.solver.due(horizon - self._last)
        batch, later = [], []
        # SimGrid's test is double_equals(date, now, 1e-9) on its double dates (seconds): near the
        # boundary it is decided on those doubles (a latency end 1 ns after a start on the reference's
        # ns grid is 1.0000000000157e-9 s after it for SimGrid, so not now), not on our picoseconds
        while self._events and self._events[0][0] <= horizon + 1:
            ev = heapq.heappop(self._events)
            if ev[0] < horizon - 1 or abs(self._date_d(ev) - now_d) < SURF_PRECISION_PS / 1e12:
                batch.append(ev)
            else:
                later.append(ev)
        for ev in later:
            heapq.heappush(self._events, ev)
        self._advance(t)
        self._now_d = now_d
        for _, f in due:
            if self.solver.rate_of(f) > 0:
                self._complete(f)
        for _, _, kind, arg in batch:
            if kind == 0:
                self._join(arg)
            elif kind == 2:
                if self._phase[arg] > 0:
                    self._push(t + self._phase[arg], 0, arg)
                else:
                    self._join(arg)
            else:
                arg()

    def _date_d(self, ev):
        """SimGrid's double date of a queued event: a start at its date as given to SimGrid, a latency
        end at the clock of its start plus latency x factor, a callback at its picosecond."""
        t, _, kind, arg = ev
        if kind == 2:
            return self.start[arg] / 1e12
        if kind == 0:
            return self._due_d.get(arg, t / 1e12)
        return t / 1e12

    def _complete(self, f):
        self._leave(f)
        if f in self._conns:
            q = self._conns[f]
            mid, cb, dcb = q.popleft()
            self._messages[mid][3] = self._delivered[mid] = self._now
            if q:
                self._start_message(f)
            if dcb is not None:
                dcb(self.message(mid))
            if cb is not None:
                cb(self.message(mid))
            return
        self.finish[f] = self._now
        self._done_order.append(f)
        dcb = self._dcb.pop(f, None)
        if dcb is not None:
            dcb(self.flow(f))
        cb = self._cb.pop(f, None)
        if cb is not None:
            cb(self.flow(f))

    # -- results --------------------------------------------------------------
    def flow(self, fid):
        fid = _nw.check_flow(self, fid, len(self.src), "flow")
        fin = self.finish[fid]
        return _nw.FlowResult(fid, self.src[fid], self.dst[fid], self.sports[fid], self.dports[fid],
                              self.size[fid], self.start[fid], fin, fin - self.start[fid] if fin >= 0 else -1,
                              self._standalone[fid], fin)

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
        out["delivered"] = fin          # no ACKs in a fluid model: the last byte arrives as the flow ends
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
        fid = _nw.check_flow(self, fid, len(self.src), "flow_path")
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
