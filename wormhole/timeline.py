"""Timelines: a run as Chrome / Perfetto trace-event JSON (open in ui.perfetto.dev or chrome://tracing).

The file is ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``;
every event has ``ph``, ``ts`` (microseconds, float), ``pid``, ``tid`` and ``name``.
Complete events (``"X"``, with ``dur``) are the compute blocks and collectives
of each GPU (process "GPU <rank>", threads "compute" and "comm") and the
messages of each connection (process "connections", one thread per connection
``src->dst``); counter events (``"C"``) are each link's utilisation (the sum of
the sampled rates of the flows crossing it, over its rate, in percent) and each
switch queue's bytes (process "links"), from ``Network.samples()`` (config
``sample_interval``); skipped periods of the accelerator are complete events
in process "accelerator" (one per fast-forwarded partition: start, and the end
of the skip as last seen).  Metadata events (``"M"``) name processes and threads.
"""
import json

from .errors import WormholeError

PS_PER_US = 1e6


class Timeline:
    """Collects trace events; ``to_json()`` renders them."""

    def __init__(self, title="wormhole run"):
        self.events = []
        self.title = title
        self._pids = {}
        self._tids = {}
        self._skips = {}            # (flows, t0) -> end
        self._active = {}           # skips seen at the last poll: (flows, t0) -> planned end

    # -- ids ----------------------------------------------------------------
    def pid(self, name, sort=None):
        p = self._pids.get(name)
        if p is None:
            p = self._pids[name] = len(self._pids) + 1
            self.events.append({"ph": "M", "name": "process_name", "pid": p, "tid": 0, "ts": 0,
                                "args": {"name": name}})
            if sort is not None:
                self.events.append({"ph": "M", "name": "process_sort_index", "pid": p, "tid": 0, "ts": 0,
                                    "args": {"sort_index": int(sort)}})
        return p

    def tid(self, pname, tname):
        p = self.pid(pname)
        key = (p, tname)
        t = self._tids.get(key)
        if t is None:
            t = self._tids[key] = sum(1 for k in self._tids if k[0] == p) + 1
            self.events.append({"ph": "M", "name": "thread_name", "pid": p, "tid": t, "ts": 0,
                                "args": {"name": tname}})
        return p, t

    # -- events ---------------------------------------------------------------
    def span(self, pname, tname, name, start_ps, end_ps, cat="", **args):
        p, t = self.tid(pname, tname)
        ev = {"ph": "X", "name": str(name), "pid": p, "tid": t, "ts": start_ps / PS_PER_US,
              "dur": max(0, end_ps - start_ps) / PS_PER_US}
        if cat:
            ev["cat"] = cat
        if args:
            ev["args"] = args
        self.events.append(ev)

    def counter(self, pname, name, time_ps, values):
        p = self.pid(pname)
        self.events.append({"ph": "C", "name": str(name), "pid": p, "tid": 0, "ts": time_ps / PS_PER_US,
                            "args": dict(values)})

    def instant(self, pname, tname, name, time_ps, **args):
        p, t = self.tid(pname, tname)
        self.events.append({"ph": "i", "s": "t", "name": str(name), "pid": p, "tid": t, "ts": time_ps / PS_PER_US,
                            "args": args})

    # -- sources ------------------------------------------------------------------
    def chakra_run(self, run):
        """Compute blocks and collectives per GPU from a ``ChakraRun``'s records."""
        for rank, nid, name, ty, t0, t1 in sorted(run.records, key=lambda r: (r[0], r[4], r[1])):
            if ty in ("METADATA", "INVALID"):
                continue
            thread = "compute" if ty in ("COMP", "MEM_LOAD", "MEM_STORE") else "comm"
            self.span("GPU %d" % rank, thread, name or "%s %d" % (ty, nid), t0, t1, cat=ty.lower(), node=nid)

    def messages(self, net):
        """Every message of every connection (``Network.message``), and the one-shot flows."""
        conns = set()
        for m in net.messages:
            conns.add(int(m["connection"]))
            if m["done"] < 0:
                continue
            self.span("connections", "%d->%d" % (m["src"], m["dst"]), "%d B" % m["size"], int(m["posted"]),
                      int(m["done"]), cat="message", bytes=int(m["size"]), conn=int(m["connection"]))
        res = net.results
        for r in res:
            if int(r["id"]) in conns or r["finish"] < 0:
                continue
            self.span("connections", "%d->%d" % (r["src"], r["dst"]), "flow %d (%d B)" % (r["id"], r["size"]),
                      int(r["start"]), int(r["finish"]), cat="flow", bytes=int(r["size"]))

    def link_counters(self, net):
        """Utilisation and queue counters per port from the kernel's samples."""
        try:
            s = net.samples()
        except Exception:           # the flow backend has no samples
            return 0
        if not len(s):
            return 0
        fab = net.fabric
        paths = {}
        util = {}
        rates = s[s["kind"] == "rate"]
        for t, fid, v in zip(rates["time"].tolist(), rates["index"].tolist(), rates["value"].tolist()):
            if fid not in paths:
                paths[fid] = net.flow_path(fid)
            row = util.setdefault(t, {})
            for port in paths[fid]:
                row[port] = row.get(port, 0) + v
        last = {}
        for t in sorted(util):
            row = util[t]
            for port in set(row) | set(k for k, v in last.items() if v):
                pct = 100.0 * row.get(port, 0) / max(1, int(fab.port_rate[port]))
                if last.get(port) == pct:
                    continue
                last[port] = pct
                self.counter("links", "util node %d port %d" % (fab.port_node[port], fab.port_ifindex[port]), t,
                             {"percent": round(min(pct, 100.0), 3)})
        q = s[s["kind"] == "queue"]
        lastq = {}
        times = sorted(set(q["time"].tolist()))
        byt = {}
        for t, port, v in zip(q["time"].tolist(), q["index"].tolist(), q["value"].tolist()):
            byt.setdefault(t, {})[port] = v
        for t in times:
            row = byt[t]
            for port in set(row) | set(k for k, v in lastq.items() if v):
                v = row.get(port, 0)
                if lastq.get(port) == v:
                    continue
                lastq[port] = v
                self.counter("links", "queue node %d port %d" % (fab.port_node[port], fab.port_ifindex[port]), t,
                             {"bytes": int(v)})
        return len(s)

    def poll_skips(self, net):
        """Note the partitions being fast-forwarded now.  The Network API has no
        record of past skips; this reads the current ones (``net.skipping()``,
        each with its start and planned end; none on the flow backend), so call
        it between slices of a run or at callbacks.  A skip gone by the next poll
        ended at its planned end or at that poll, whichever is earlier (a
        skip-back in between is not seen)."""
        now = net.now
        seen = {}
        for flows, t0, t1 in net.skipping():
            seen[(tuple(flows), int(t0))] = int(t1)
        active = getattr(self, "_active", {})
        for key, t1 in active.items():
            if key not in seen:
                self._skips[key] = min(t1, now)
        for key, t1 in seen.items():
            self._skips[key] = min(t1, now)
        self._active = seen

    def skips(self, net=None):
        if net is not None:
            self.poll_skips(net)
            for key, t1 in getattr(self, "_active", {}).items():     # still running at the end
                self._skips[key] = max(self._skips.get(key, key[1]), min(t1, net.now))
        for (flows, t0), t1 in sorted(self._skips.items(), key=lambda kv: kv[0][1]):
            self.span("accelerator", "skipped", "skip %d flows" % len(flows), t0, t1, cat="skip",
                      flows=list(flows[:16]))

    def to_json(self, other=None):
        return json.dumps({"traceEvents": self.events, "displayTimeUnit": "ns",
                           "otherData": dict({"title": self.title}, **(other or {}))}) + "\n"


def network_timeline(net, run=None, title="wormhole run", timeline=None):
    """A Timeline of ``net`` after a run: the ChakraRun's GPUs (if given), the
    messages, link counters and skipped periods."""
    tl = timeline or Timeline(title)
    if run is not None:
        tl.chakra_run(run)
    tl.messages(net)
    tl.link_counters(net)
    tl.skips(net)
    return tl


def cluster_timeline(per_model, title="wormhole cluster"):
    """Jobs per server from cluster results: [(contention model, [JobResult])].
    Per model and server one thread per concurrent job (lanes, so spans never
    overlap on a thread); each job's wait in the queue on the model's "queue"
    process.  Times: the trace's seconds as microseconds of the timeline x 1e6."""
    tl = Timeline(title)
    for m, jobs in per_model:
        lanes = {}
        for j in sorted(jobs, key=lambda j: (j.start, str(j.job_id))):
            t0, t1 = int(round(j.start * 1e12)), int(round(j.end * 1e12))
            servers = [tok.split(":")[0] for tok in str(j.placement).split()] or ["?"]
            for srv in servers:
                ends = lanes.setdefault(srv, [])
                lane = next((i for i, e in enumerate(ends) if e <= t0), None)
                if lane is None:
                    lane = len(ends)
                    ends.append(0)
                ends[lane] = t1
                tl.span("%s: server %s" % (m, srv), "slot %d" % lane, "%s %s (%d GPUs)" % (j.job_id, j.model, j.gpus),
                        t0, t1, cat="job", job=str(j.job_id), wait_s=j.wait, placement=str(j.placement))
            if j.wait > 0:
                tl.span("%s: queue" % m, "job %s" % j.job_id, "wait %s" % j.job_id, int(round(j.arrival * 1e12)), t0,
                        cat="wait")
    return tl


REQUIRED = ("ph", "ts", "pid", "tid", "name")


def validate(doc):
    """Check a trace-event document: every event has ph, ts, pid, tid, name; "X"
    has a non-negative dur; "C" has numeric args.  Raises WormholeError."""
    if isinstance(doc, str):
        doc = json.loads(doc)
    evs = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(evs, list):
        raise WormholeError("a trace-event file needs a traceEvents list")
    for i, e in enumerate(evs):
        for k in REQUIRED:
            if k not in e:
                raise WormholeError("trace event %d has no %r" % (i, k), value=e)
        if not isinstance(e["ts"], (int, float)) or not isinstance(e["pid"], int) or not isinstance(e["tid"], int):
            raise WormholeError("trace event %d: ts must be a number, pid and tid integers" % i, value=e)
        if e["ph"] == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            raise WormholeError("complete event %d needs a non-negative dur" % i, value=e)
        if e["ph"] == "C" and not (isinstance(e.get("args"), dict) and e["args"]
                                   and all(isinstance(v, (int, float)) for v in e["args"].values())):
            raise WormholeError("counter event %d needs numeric args" % i, value=e)
    return len(evs)
