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

Routes come from the same fabric and ECMP hashing as the packet kernel.  It is
a backend of the Network facade (backend.py): the facade gives the whole API
(send, connect / post with ``on_delivered`` and ``on_done``: a fluid model has
no ACKs, so a transfer's last byte arrives and is done at one moment, and
on_delivered runs first; schedule, peek / step / run, fresh, results,
messages, stats, fct_lines, flow_path, ports).  What a fluid model has no
notion of (packet-level rate and queue samples, congestion-control state,
port queues and PFC, the accelerator's partitions, the kernel's memory)
raises ``NotAvailableError`` naming the backend.
"""
import heapq
from collections import deque

import numpy as np

from ._core.fluid import FluidSolver
from ._core.routing import ecmp_hash
from .backend import BASE_HEADER, Backend, standalone_fct
from .errors import ConfigError, NotAvailableError, RoutingError

INF = float("inf")
FLOW_MODELS = ("packet", "maxmin", "cm02", "lv08")
# SimGrid 3.32, src/surf/network_cm02.cpp: network/latency-factor, network/bandwidth-factor, network/weight-S
SIMGRID_MODELS = {"cm02": (1.0, 1.0, 0.0), "lv08": (13.01, 0.97, 20537.0)}
SURF_PRECISION_PS = 1000    # SimGrid's surf/precision, 1e-9 s: dates that close to now are now
CROSSTRAFFIC = 0.05         # SimGrid: a flow's ACKs use 0.05 x its share on the reverse route


class FlowBackend(Backend):
    """The flow-level backend behind ``Network(..., backend="flow")``."""

    name = "flow"

    def __init__(self, net):
        super().__init__(net)
        c = net.config
        flow_model = c.flow_model
        if flow_model not in FLOW_MODELS:
            raise NotAvailableError("unknown flow model %r (%s)" % (flow_model, ", ".join(FLOW_MODELS)),
                                    value=flow_model)
        if int(c.threads) > 0:
            raise ConfigError("threads=%d runs the packet backend's full mode on threads; the flow backend has "
                              "none (give threads=0)" % int(c.threads), value=int(c.threads))
        self.config = c
        self.fabric = net.fabric
        self.model = flow_model
        self.eff = int(c.mtu) / (int(c.mtu) + BASE_HEADER)
        self.window = float(c.flow_window)
        self._now = 0
        self._seq = 0
        self._events = []           # (time, seq, kind, arg): 0 join, 1 user event, 2 SimGrid start
        self.src, self.dst, self.size, self.start, self.finish, self.sports, self.dports = [], [], [], [], [], [], []
        self.links, self.latency, self.weight, self.bound, self._msg_bytes = [], [], [], [], []
        self._done_order = []
        self._last = 0              # time remaining[] was last advanced to
        self._conns = {}            # connection -> deque of (message id, bytes), the head moving
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
            k = 0 if cnt == 1 else ecmp_hash(sip, dip, w2, int(f.seed[node])) % cnt
            port = int(f.rt_ports[int(f.rt_start[r]) + k])
            path.append(port)
            node = int(f.port_node[int(f.port_peer[port])])
            if node == d:
                return path

    # -- the backend protocol -----------------------------------------------------
    @property
    def now(self):
        return self._now

    @property
    def n_flows(self):
        return len(self.src)

    def _push(self, t, kind, arg):
        if kind == 0 and self.simgrid:
            self._due_d[arg] = self._now_d + self._lat_d[arg]
        heapq.heappush(self._events, (t, self._seq, kind, arg))
        self._seq += 1

    def add_flow(self, s, d, nbytes, start, sport, dport, pg, persistent, want_done, want_delivered, cc=None):
        if cc is not None:
            self.not_available("send(cc=...)")
        path = self._route(s, d, sport, dport)
        fid = len(self.src)
        lat = sum(int(self.fabric.port_delay[p]) for p in path)
        self.src.append(s)
        self.dst.append(d)
        self.size.append(int(nbytes))
        self.start.append(start)
        self.finish.append(-1)
        self.sports.append(sport)
        self.dports.append(dport)
        self.links.append(path)
        self.latency.append(lat)
        self._msg_bytes.append(0.0 if persistent else float(nbytes))
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
                back = self._route(d, s, dport, sport)
                links, coefs = path + back, [1.0] * len(path) + [CROSSTRAFFIC] * len(back)
        else:
            self.weight.append(1.0 / max(lat, 1) if self.model == "packet" else 1.0)
            self.bound.append(self.window / (2 * lat) if self.window > 0 and lat > 0 else INF)
        self.solver.add_flow(links, self.weight[-1], self.bound[-1] if self.bound[-1] < INF else 0.0, coefs)
        if self.simgrid:
            alone = min([self.caps[p] / (coefs[i] if coefs else 1.0) for i, p in enumerate(links)] + [self.bound[-1]])
            standalone = self._phase[-1] + int(np.ceil(nbytes / self.bw_factor / alone))
        else:
            standalone = standalone_fct(self.fabric, s, d, nbytes, self.config.mtu)
        if persistent:
            self._conns[fid] = deque()
        elif self.simgrid:
            self._push(start, 2, fid)                   # starts (SimGrid: an actor wakes), then its phase
        else:
            self._push(start + self._phase[fid], 0, fid)     # joins after its latency phase
        return fid, standalone

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

    def post(self, conn, mid, nbytes):
        q = self._conns[conn]
        q.append((mid, nbytes))
        if len(q) == 1:
            self._start_message(conn)

    def _start_message(self, conn):
        self._msg_bytes[conn] = float(self._conns[conn][0][1])
        self._push(self._now + self._phase[conn], 0, conn)

    def schedule(self, t, uid):
        self._push(t, 1, uid)

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
        """Process one event (with a SimGrid model: one round of its engine)."""
        self._loop(INF, 1)

    def run(self, until, progress):
        limit = INF if until is None else until
        self._loop(limit, -1)
        if until is not None and self._now < limit:
            self._advance(limit)

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
                    self.net._user_event(arg)

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
                self.net._user_event(arg)

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
            mid = q.popleft()[0]
            if q:
                self._start_message(f)
            self.net._message_end(mid, True, True)
            return
        self.finish[f] = self._now
        self._done_order.append(f)
        self.net._flow_delivered(f)
        self.net._flow_done(f)

    # -- results --------------------------------------------------------------
    def flow_table(self):
        n = len(self.src)
        tab = np.empty((n, 8), dtype=np.int64)
        for k, col in enumerate((self.src, self.dst, self.size, self.start, self.finish, self.sports, self.dports,
                                 self.finish)):       # no ACKs in a fluid model: the last byte arrives as it ends
            tab[:, k] = col
        return tab

    def flow_row(self, fid):
        fin = self.finish[fid]
        return (self.src[fid], self.dst[fid], self.size[fid], self.start[fid], fin, self.sports[fid],
                self.dports[fid], fin)

    def delivered_bytes(self):
        fin = np.array(self.finish, dtype=np.int64)
        done = np.where(fin >= 0, np.array(self.size, dtype=np.int64), 0)
        return done, done.copy(), np.zeros(len(fin), dtype=np.int64)

    def completion_order(self):
        return np.array(self._done_order, dtype=np.int32)

    def stats(self):
        """Flow-level events (flow and message starts and completions, timed
        callbacks), rate solves, flows completed.  No packet counters: the
        fluid model has no packets, drops, PFC or ECN, and skips nothing."""
        return {"backend": "flow", "flow_model": self.model, "events": self.n_events, "rate_solves": self.n_resolves,
                "flows_completed": len(self._done_order)}

    def flow_path(self, fid, reverse):
        """Egress ports of a flow's data path, or with ``reverse`` of the path its
        ACKs take in the packet kernel (the same ECMP choice: destination to source,
        ports swapped); the fluid model itself sends no ACKs."""
        if not reverse:
            return list(self.links[fid])
        return self._route(self.dst[fid], self.src[fid], self.dports[fid], self.sports[fid])

    LACKS = {"samples()": "no packets, so no per-ACK rate or queue samples",
             "cc_state()": "no congestion control, rates come from max-min sharing",
             "send(cc=...)": "no congestion control, rates come from max-min sharing",
             "port_state()": "no queues, pauses or per-port packet state",
             "pfc_records()": "no PFC",
             "partitions()": "no accelerator",
             "accelerator": "no accelerator",
             "memory()": "no packet kernel, so no packet pool or per-packet memory"}

    def not_available(self, what):
        raise NotAvailableError("%s is not available on the flow backend (%s fluid model: %s); use the packet "
                                "backend" % (what, self.model, self.LACKS[what]), value=what)
