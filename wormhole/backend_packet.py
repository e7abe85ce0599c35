"""The packet backend: the Network facade's backend over the Cython kernel.

Builds the kernel from typed inputs (``kernel_inputs``), drives its event loop
from Python only between batches (callbacks due, a user event, the limit),
turns the kernel's notes into the facade's reports (backend.py), and runs the
memo database's side of the accelerator.  ``Accelerator`` is the public view
of the accelerator's state that the memo layer (``accel/memo.py``) and
inspection use; nothing outside this module touches the kernel.
"""
import sys
from collections import deque

import numpy as np

from ._core.kernel import RUN_CODES, Kernel
from . import cc as ccmod
from . import kernel_inputs as ki
from .backend import BASE_HEADER, Backend, standalone_fct
from .errors import ApiError, ConfigError, ResourceLimitError, RoutingError
from .units import NS, ns3_fixed_point

INT64_MAX = (1 << 63) - 1
_RUN_IDLE, _RUN_CALLBACKS, _RUN_USER, _RUN_LIMIT = (RUN_CODES[k] for k in ("idle", "callbacks", "user", "limit"))


def kernel_params(net):
    """The kernel's behaviour parameters of a Network (its config and topology)."""
    c = net.config
    spec = ccmod.spec(c.cc)
    intb = spec.int_bytes
    accel = None
    if c.accelerate:
        accel = ki.AccelParams(l=int(c.steady_window), theta=float(c.steady_theta),
                               min_skip=int(round(float(c.min_skip) * 1e6)),
                               margin=int(c.skip_margin) or 16 * int(c.mtu),
                               check_every=int(c.steady_check_every), gp_span=_goodput_test_span(net),
                               quarters_all=bool(c.steady_goodput),
                               memo=bool(c.memo), committed=bool(c.steady_committed),
                               onoff=bool(c.steady_onoff),
                               cycle=bool(c.steady_cycle))
    return ki.KernelParams(
        mtu=int(c.mtu), hdr_bytes=BASE_HEADER + intb, ack_bytes=max(60, 14 + 20 + 12 + intb), pfc_bytes=14 + 20 + 9,
        int_mode=spec.int_mode, ack_qidx=0 if c.ack_high_prio else 3, ack_high_prio=int(c.switch_ack_high_prio),
        ecn=int(c.ecn), pfc=int(c.pfc), rate_bound=int(c.rate_bound), back_to_zero=int(c.l2_back_to_zero),
        chunk=int(c.l2_chunk_size), ack_interval=int(c.l2_ack_interval),
        nack_interval=ns3_fixed_point(float(c.nack_interval), 1000) * NS, reserve=int(c.reserve),
        resume_offset=int(c.resume_offset), quantum=int(c.time_quantum_ps), max_packets=int(c.max_packets),
        rto=int(round(float(c.rto) * 1e6)), seed=int(c.seed),
        sample_interval=int(round(float(c.sample_interval) * 1e6)), port_rng=int(c.ecn_rng == "port"),
        calendar=int(c.event_queue == "calendar"),
        cc=ccmod.kernel_params(c), ns3_rng=_ns3_rng(net), accel=accel)


def _goodput_test_span(net):
    """The time a flow's rate window must span before the accelerator's
    goodput test may call it steady: eight periods of its congestion
    control's slowest loop (the CC registry's ``loop_period``, at the fabric's
    largest base RTT), in ps; -1 when the test is off or the algorithm has no
    bounded period."""
    c = net.config
    if not (c.steady_goodput or c.steady_goodput_alone):
        return -1
    period = ccmod.spec(c.cc).loop_period(c, int(net.fabric.max_rtt_ns) * 1000)
    return -1 if period is None else 8 * int(period)


def _ns3_rng(net):
    c = net.config
    if c.ecn_rng != "ns3":
        return None
    from .ns3rng import stream_params, setup_streams
    base = int(c.ns3_stream_base)
    if base < 0:
        base = setup_streams(net.topology)
    p = stream_params(base, run=int(c.seed))     # the seed is the reference's RngRun
    return ki.Ns3Streams(base=p["base"], j1=p["j1"], j2=p["j2"], r1=p["r1"], r2=p["r2"])


class PacketBackend(Backend):
    """Packets, queues, PFC and congestion control in the Cython kernel."""

    name = "packet"

    def __init__(self, net):
        super().__init__(net)
        self._kernel = Kernel()
        self._kernel.build(net.fabric.kernel_arrays(), kernel_params(net))
        self._cb_scan = 0
        self._conns = {}            # connection -> deque of (end offset, message id): not yet done
        self._rconns = {}           # connection -> deque of (end offset, message id): not yet delivered
        self._memo = None
        self.accel = Accelerator(self._kernel)
        c = net.config
        if c.accelerate and c.memo:
            from .accel.memo import Memo
            self._memo = Memo(net, c.memo_db)
            self.accel.memo = self._memo
        stop = c.simulator_stop_time
        self._stop_ps = INT64_MAX if stop is None else ns3_fixed_point(stop, 10 ** 9) * NS
        self._threads = int(c.threads)
        if self._threads > 0:
            self._partition()
        elif c.tie_order == "local":
            if c.accelerate:
                raise ConfigError("tie_order='local' with the accelerator: its fast-forward keeps events in the "
                                  "reference order only", value=c.tie_order)
            self._kernel.set_tie_key(1)

    def _partition(self):
        """threads=N: the partitioned kernel (parallel.pxi), after checking that it can run the
        configuration.  Under tie_order 'auto' or 'reference' it keeps the sequential kernel's
        order of same-time events (KEY_RANK: the output is the sequential run's); under
        'local' the order of tie_order='local', which needs per-port random streams."""
        from . import partition
        c, f = self.net.config, self.net.fabric
        n = self._threads
        exact = c.tie_order != "local"
        why = None
        if c.accelerate:
            why = "the accelerator (mode='accelerated') fast-forwards partitions of flows across the whole fabric"
        elif c.ecn_rng != "port" and (f.port_error > 0).any():
            why = ("link errors draw from one random stream (ecn_rng=%r) in global event order, and a process must "
                   "know at once whether a packet arrived; give ecn_rng='port' (one stream per port)" % c.ecn_rng)
        elif not exact and c.ecn_rng != "port" and c.ecn:
            why = ("with tie_order='local' ECN marks draw from one random stream (ecn_rng=%r) in an order the "
                   "processes do not share; give ecn_rng='port' (one stream per port)" % c.ecn_rng)
        elif float(c.sample_interval) > 0:
            why = "the sampler records the whole fabric at once (sample_interval=%s)" % c.sample_interval
        elif int(c.max_packets) > 0:
            why = "the packet limit (max_packets=%d) counts one pool, the partitioned kernel has one per process" % (
                int(c.max_packets))
        if why is not None:
            raise ConfigError("threads=%d: the partitioned kernel cannot run this configuration: %s" % (n, why),
                              value=n)
        self._lps = int(c.lps) or partition.default_lps(f, n, exact)
        self._exact = exact
        self._cut = "rate"                  # what the fabric is cut by (processes(), stats)
        self._cut_pending = True            # the first run cuts it again, by the flows' traffic (_cut_by_traffic)
        self._port_load = None
        self.lp_of_node = partition.cut(f, self._lps)
        try:
            self._kernel.set_parallel(self.lp_of_node, n, exact)
        except ValueError as e:
            raise ConfigError("threads=%d: %s" % (n, e), value=n)

    def _cut_by_traffic(self):
        """threads=N, before the first run: the fabric cut again by the traffic of the
        flows sent so far (partition.cut's port_load: the packets each port would send),
        so fewer packets cross between processes and their loads follow the flows'; with
        no flows the cut by rate stays.  Flows sent after the first run do not move it."""
        from . import partition
        self._cut_pending = False
        if self._lps <= 1:
            self._cut = "none (one process)"
            return
        load = self._kernel.port_packets()
        if load.sum() <= 0:
            self._cut = "rate (no flows before the first run)"
        else:
            self._cut = "traffic"
            lp = partition.cut(self.net.fabric, self._lps, load)
            self._kernel.set_parallel(lp, self._threads, self._exact)
            self.lp_of_node = lp
            self._port_load = load

    def processes(self):
        if self._threads <= 0:
            return None
        return {"lp_of_node": [int(x) for x in self.lp_of_node], "cut": self._cut,
                "port_load": None if self._port_load is None else [float(x) for x in self._port_load]}

    def _serial_only(self, what):
        if self._threads > 0:
            raise ApiError("%s: the partitioned kernel (threads=%d) runs plain flows only (no callbacks, "
                           "connections, user events or single steps): its processes are ahead of each other "
                           "in time when Python could act" % (what, self._threads), argument="threads",
                           value=self._threads)

    @property
    def now(self):
        return self._kernel.now

    @property
    def n_flows(self):
        return self._kernel.n_flows

    def _flow_cc(self, cc):
        """The kernel kind of a flow's own algorithm (-1: the config's).  Its packets
        carry the header of the config's cc, so an algorithm that reads INT hop
        records needs a config whose packets have them; the memo's keys assume one
        algorithm, so it takes no other."""
        c = self.net.config
        if cc is None:
            return -1
        spec, hops = ccmod.spec(cc), ccmod.kernel_table()[2]["hops"]
        if spec.int_mode == hops and ccmod.spec(c.cc).int_mode != hops:
            raise ApiError("send: cc %r reads INT hop records, which the packets of this configuration (cc=%r) do "
                           "not carry" % (cc, c.cc), argument="cc", value=cc)
        if c.accelerate and c.memo:
            raise ApiError("send: a flow's own cc (%r, the configuration's is %r) with the memo of the accelerator: "
                           "memo keys assume one algorithm (give memo=False)" % (cc, c.cc), argument="cc", value=cc)
        return spec.kind

    def add_flow(self, src, dst, nbytes, start, sport, dport, pg, persistent, want_done, want_delivered, cc=None):
        if persistent or want_done or want_delivered:
            self._serial_only("send with on_done / on_delivered, or a connection")
        kind = self._flow_cc(cc)
        f, c = self.net.fabric, self.net.config
        hs, hd = int(f.host_idx[src]), int(f.host_idx[dst])
        if f.pair_hops[hs, hd] < 0:
            raise RoutingError("no route from host %d to host %d" % (src, dst), value=(src, dst))
        bdp, rtt_ns = f.global_window(hs, hd) if c.global_t else (int(f.pair_bdp[hs, hd]), int(f.pair_rtt_ns[hs, hd]))
        win = bdp if c.has_win else 0
        try:
            fid = self._kernel.add_flow(src, dst, 0 if persistent else nbytes, start, sport, dport, pg, int(win),
                                        rtt_ns * NS, bool(c.var_win), want_done, persistent, want_delivered, kind)
        except ValueError as e:
            raise RoutingError(str(e), value=(src, dst))
        if persistent:
            self._conns[fid] = deque()
            self._rconns[fid] = deque()
        return fid, standalone_fct(f, src, dst, nbytes, c.mtu)

    def post(self, conn, mid, nbytes):
        k = self._kernel
        end = k.post(conn, nbytes)
        q = self._conns[conn]
        q.append((end, mid))
        if len(q) == 1:
            k.set_msg_end(conn, end)
        rq = self._rconns[conn]
        rq.append((end, mid))
        if len(rq) == 1:
            k.set_rcv_end(conn, end)

    def schedule(self, t, uid):
        self._serial_only("schedule")
        self._kernel.schedule_user(t, uid)

    def peek(self):
        t = self._kernel.next_event_time()
        return None if t < 0 or t > self._stop_ps else t

    def step(self):
        self._serial_only("step")
        k = self._kernel
        k.set_budget(1)
        try:
            self._loop(self._stop_ps, None)
        finally:
            k.set_budget(-1)

    def run(self, until, progress):
        k = self._kernel
        if self._threads > 0 and self._cut_pending:
            self._cut_by_traffic()
        limit = self._stop_ps if until is None else min(until, self._stop_ps)
        bar = None
        if progress and sys.stderr.isatty():      # tqdm would disable itself anyway; spare its import
            from tqdm import tqdm
            bar = tqdm(total=k.n_flows, delay=2.0, file=sys.stderr, unit="flow", disable=None,
                       desc="simulating", leave=False)
        try:
            self._loop(limit, bar)
        finally:
            if bar is not None:
                bar.close()
        if until is not None and k.now < limit:
            k.set_now(limit)
        elif until is None and self._stop_ps < INT64_MAX and k.pending_events > 0:
            k.set_now(self._stop_ps)

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
                self.net._user_event(uid)
            elif code == _RUN_LIMIT:
                mp = self.net.config.max_packets
                raise ResourceLimitError("packet limit reached (max_packets=%d) or out of memory at t=%d ps"
                                         % (mp, k.now), value=mp)
            else:
                return

    def _handle_memo(self):
        if self._memo is not None:
            notes = self._kernel.take_memo_notes()
            if notes:
                self._memo.handle(notes)

    def _dispatch_done(self):
        self._handle_memo()
        k, net = self._kernel, self.net
        ended = net._message_end
        for fid in k.take_rcv_notes():
            rq = self._rconns.get(fid)
            if rq is None:                  # a flow's last byte arrived
                net._flow_delivered(fid)
                continue
            rcv = k.rcv_nxt(fid)
            while rq and rq[0][0] <= rcv:
                ended(rq.popleft()[1], True, False)
            if rq:
                k.set_rcv_end(fid, rq[0][0])
        for conn in k.take_notes():
            una = k.snd_una(conn)
            q = self._conns[conn]
            while q and q[0][0] <= una:
                ended(q.popleft()[1], False, True)
            if q:
                k.set_msg_end(conn, q[0][0])
        ids = k.take_callbacks(self._cb_scan)
        self._cb_scan = k.n_done
        for fid in ids:
            net._flow_done(fid)

    # -- results ----------------------------------------------------------------
    def flow_table(self):
        return self._kernel.flow_table()[:, (0, 1, 2, 3, 4, 5, 6, 13)]

    def flow_row(self, fid):
        k = self._kernel
        dl = -1 if fid in self._conns else k.delivered_time(fid)
        return k.flow_row(fid) + (dl,)

    def completion_order(self):
        return self._kernel.done_order()

    def delivered_bytes(self):
        tab = self._kernel.flow_table()
        return tab[:, 7].copy(), tab[:, 8].copy(), tab[:, 9].copy()

    def flow_path(self, fid, reverse):
        return self._kernel.flow_path(fid, reverse)

    def stats(self):
        k = self._kernel
        st = k.stats()
        st["flows_completed"] = k.n_done
        ps = k.parallel_stats
        if ps is not None:
            st["parallel"] = {key: v for key, v in ps.items() if key != "lp_of_port"}
            st["parallel"]["cut"] = self._cut
        if self._memo is not None:
            m = self._memo
            st.update(m.accounting())
            st.update(memo_entries=len(m.db), memo_db_bytes=m.db.size_bytes())
        return st

    # -- packet-level state -----------------------------------------------------
    def samples(self):
        return self._kernel.samples()

    def cc_state(self, fid):
        return self._kernel.cc_state(fid)

    def port_state(self, port):
        return self._kernel.port_state(port)

    def pfc_records(self):
        return self._kernel.pfc_records()

    def partitions(self):
        return self._kernel.partitions()

    def skipping(self):
        return self._kernel.skipping()

    def memory(self):
        return self._kernel.memory()

    @property
    def accelerator(self):
        return self.accel


class Accelerator:
    """The accelerator's state and the memo database's controls, as
    ``Network.accelerator`` (packet backend).  Flow ids are checked; partition
    ids and versions come from the kernel's notices (``Memo.handle``).  Every
    reading is as of the current time, inside a fast-forward too."""

    def __init__(self, kernel):
        self._k = kernel
        self.memo = None        # the Memo (accel/memo.py) when memoization is on

    def _fid(self, f, call):
        n = self._k.n_flows
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or not 0 <= f < n:
            raise ApiError("accelerator.%s: no such flow (ids 0..%d)" % (call, n - 1), argument="fid", value=f)
        return int(f)

    def snd_una(self, f):
        """Bytes of flow (or connection) f acknowledged at its sender."""
        return self._k.snd_una(self._fid(f, "snd_una"))

    def remaining(self, f):
        """(bytes posted and not yet acknowledged, bytes to the end of the current
        message or -1) of flow (or connection) f."""
        return self._k.remaining(self._fid(f, "remaining"))

    def cc_vector(self, f):
        """Flow f's congestion-control state vector (rate bps, and the three
        algorithm values): what a memo entry stores and a replay or a mirror sets."""
        return self._k.cc_vector(self._fid(f, "cc_vector"))

    def steady_goodput(self, f):
        """Flow f's goodput (bytes per ps) measured over its steady window, 0.0 if none."""
        return self._k.steady_goodput(self._fid(f, "steady_goodput"))

    def partition_members(self, part):
        """(version, flows) of a partition id."""
        return self._k.partition_members(part)

    def watch_partition(self, part, version):
        """Report 'steady' when partition ``part`` (still at ``version``) becomes steady."""
        self._k.watch_partition(part, version)

    def memo_apply(self, part, dt, flows, nbytes, cc, goodput):
        """Apply a stored convergence to a partition: fast-forward it by ``dt`` ps,
        advancing flows[i] by nbytes[i], setting its CC vector cc[i], then at
        goodput[i]; False if the partition cannot take it now."""
        return self._k.memo_apply(part, dt, flows, nbytes, cc, goodput)

    def mirror_start(self, part, lead, flows, lead_flows):
        """Hold partition ``part`` as a twin of the pending partition ``lead``
        (flows[i] follows lead_flows[i], -1: none); False if it cannot."""
        return self._k.mirror_start(part, lead, flows, lead_flows)

    def mirror_finish(self, lead):
        """The twin ``lead`` converged: end its mirrors in its state; returns how many."""
        return self._k.mirror_finish(lead)
