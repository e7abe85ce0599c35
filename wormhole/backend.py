"""The backend protocol: what a simulation backend gives the Network facade.

``Network`` (network.py) is the one public door.  It checks every argument,
keeps what every backend shares (source ports, standalone FCTs, callbacks,
message rows, timed callbacks, wall-clock) and builds the result tables
(``results``, ``messages``, ``fct_lines``, ``samples``) from the rows a
backend gives.  A backend owns the simulated clock and its events; the packet
backend (backend_packet.py, over the Cython kernel) and the flow backend
(flowlevel.py, fluid max-min sharing) implement this class.

A backend reports to the facade that owns it (``self.net``), at the simulated
moment each happens, through four calls:

    net._flow_delivered(fid)      the last byte of flow fid reached its receiver
    net._flow_done(fid)           flow fid is acknowledged at its sender
    net._message_end(mid, delivered, done)   message mid was delivered / done
    net._user_event(uid)          the callback Network.schedule gave id uid is due

What a backend has no notion of raises ``NotAvailableError`` naming the
backend (the defaults below); a backend that has it overrides the method.
"""
import abc
import importlib

from .errors import ApiError, NotAvailableError
from .units import NS

# columns of Backend.flow_table(), in order
FLOW_COLUMNS = ("src", "dst", "size", "start", "finish", "sport", "dport", "delivered")
SRC, DST, SIZE, START, FINISH, SPORT, DPORT, DELIVERED = range(len(FLOW_COLUMNS))

# Header bytes of the reference's data packet without INT: PPP 14 + IPv4 20 + UDP 8 + SeqTs 6
BASE_HEADER = 48

# Network(backend=NAME): the module and class of each backend, imported when first used
BACKENDS = {"packet": ("wormhole.backend_packet", "PacketBackend"), "flow": ("wormhole.flowlevel", "FlowBackend")}


def backend_class(name):
    """The class of the backend called ``name`` (ApiError for an unknown name)."""
    where = BACKENDS.get(name) if isinstance(name, str) else None
    if where is None:
        raise ApiError("Network: unknown backend %r (%s)" % (name, ", ".join(BACKENDS)), argument="backend",
                       value=name)
    return getattr(importlib.import_module(where[0]), where[1])


def standalone_fct(fabric, s, d, nbytes, mtu):
    """The reference's standalone FCT (ps): base RTT + bytes with headers at the pair's bottleneck."""
    hs, hd = int(fabric.host_idx[s]), int(fabric.host_idx[d])
    npk = (int(nbytes) - 1) // int(mtu) + 1
    total = int(nbytes) + npk * BASE_HEADER
    return (int(fabric.pair_rtt_ns[hs, hd]) + total * 8000000000 // int(fabric.pair_bw[hs, hd])) * NS


class Backend(abc.ABC):
    """One simulation behind a Network.  Built with the Network whose topology,
    config and fabric are set; flow and message ids are dense from 0 in the
    order of add_flow and post."""

    name = None     # the Network(backend=...) name

    def __init__(self, net):
        self.net = net

    # -- clock and events ------------------------------------------------------
    @property
    @abc.abstractmethod
    def now(self):
        """Simulated time, ps."""

    @property
    @abc.abstractmethod
    def n_flows(self):
        """Flows and connections added so far."""

    @abc.abstractmethod
    def add_flow(self, src, dst, nbytes, start, sport, dport, pg, persistent, want_done, want_delivered, cc=None):
        """Add a flow (``persistent``: a connection that messages are posted to) of
        checked arguments (node ids, bytes, start ps); returns (flow id, its
        standalone FCT ps).  ``want_done`` / ``want_delivered``: whether the facade
        wants the _flow_done / _flow_delivered reports.  ``cc``: the flow's own
        congestion control (a registry name other than the config's; None: the
        config's).  RoutingError if no path."""

    @abc.abstractmethod
    def post(self, conn, mid, nbytes):
        """Append message ``mid`` of ``nbytes`` to connection ``conn``, now."""

    @abc.abstractmethod
    def schedule(self, t, uid):
        """Report _user_event(uid) at absolute time ``t`` ps (not before now)."""

    @abc.abstractmethod
    def peek(self):
        """Time (ps) of the next event, or None when nothing is left."""

    @abc.abstractmethod
    def step(self):
        """Process one event (there is one: the facade asked peek)."""

    @abc.abstractmethod
    def run(self, until, progress):
        """Advance until ``until`` (ps, None: until nothing is left)."""

    # -- results ----------------------------------------------------------------
    @abc.abstractmethod
    def flow_table(self):
        """One int64 row per flow, columns FLOW_COLUMNS (times ps, -1 pending)."""

    @abc.abstractmethod
    def flow_row(self, fid):
        """The FLOW_COLUMNS of one (checked) flow id, as Python ints."""

    @abc.abstractmethod
    def completion_order(self):
        """Flow ids in the order they completed (int32 array)."""

    @abc.abstractmethod
    def delivered_bytes(self):
        """Per flow: (in-order bytes delivered, payload bytes received, bytes retransmitted)."""

    @abc.abstractmethod
    def flow_path(self, fid, reverse):
        """Egress port ids of a (checked) flow's data path, or of its ACK path."""

    @abc.abstractmethod
    def stats(self):
        """The backend's own counters (the facade adds wall-clock, time and flow counts)."""

    # -- what a backend may lack ------------------------------------------------
    LACKS = {}      # what -> why, for each of the calls below this backend has no notion of

    def not_available(self, what):
        raise NotAvailableError("%s is not available on the %s backend (%s)"
                                % (what, self.name, self.LACKS.get(what, "not implemented")), value=what)

    def samples(self):
        """Sampler rows (time ps, kind 0 = flow rate bps / 1 = port queue bytes, index, value)."""
        self.not_available("samples()")

    def cc_state(self, fid):
        self.not_available("cc_state()")

    def port_state(self, port):
        self.not_available("port_state()")

    def pfc_records(self):
        self.not_available("pfc_records()")

    def partitions(self):
        self.not_available("partitions()")

    def skipping(self):
        """Partitions being fast-forwarded now: (flows, start ps, planned end ps); none by default."""
        return []

    def memory(self):
        self.not_available("memory()")

    def processes(self):
        """The partitioned kernel's logical processes (threads=N); None when it is not used."""
        return None

    @property
    def accelerator(self):
        self.not_available("accelerator")
