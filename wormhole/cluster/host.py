"""Compute contention between jobs sharing a server: the host's I/O paths.

A worker's iteration moves bytes through its server's host, not only through
the NIC: the input batch is copied host -> GPU, and NCCL's socket transport
(no GPUDirect RDMA) stages every byte a worker sends to or receives from
another server in host memory; where the workers of one server cannot reach
each other's GPUs (``p2p: false``: each worker in its own container seeing only
its GPU, so NCCL falls back to sockets between them), their ring traffic inside
the server is staged the same way.  Jobs on one server share two kinds of paths
(the spec's ``host`` section, :class:`HostSpec`):

- each PCIe switch's uplink to its CPU, shared by the ``gpus_per_switch`` GPU
  slots behind it (slots 0 .. k - 1 on switch 0, and so on), ``uplink`` bytes/s
  in each direction (x16 PCIe 3.0: 8 GT/s x 16 lanes x 128/130 = 15.75 GB/s);
- each CPU socket's memory, shared by its ``gpus_per_socket`` slots,
  ``memory`` bytes/s (6 channels of DDR4-2666: 128 GB/s).

Bytes per worker per iteration (:func:`worker_bytes`):

- uplink, host -> GPU: the input batch (the pool's ``input_mb``) + the staged
  bytes it receives; GPU -> host: the staged bytes it sends;
- socket memory: 2 x input (the loader writes the batch, the copy reads it);
  per staged byte sent, the GPU's copy out (1) and the socket's copy into the
  kernel (read + write, 2), and the NIC's DMA (1) if it leaves the server; per
  staged byte received the same in reverse (so 4 across servers, 3 inside).

The ring's bytes per link are the fabric's messages
(:func:`wormhole.cluster.fabric.sync_bytes`, ``rate`` volume), the ring
ordered server by server and by slot within a server: a server's last worker of
the job sends across, its first receives.

Time (:func:`host_extensions`): a copy of b bytes on a path of capacity C takes
b / C alone.  The other jobs' workers on the path keep it busy a fraction
rho = (sum of their bytes per iteration / their profiled iteration) / C; under
processor sharing a copy then takes b / (C (1 - rho)) on average (M/G/1-PS), and
never longer than its fair share with the k other workers, b (k + 1) / C.  A
worker's extension is the sum over its paths of the difference; training is
synchronous, so a job's iteration grows by its slowest worker's extension.
A job's own workers are not counted: the profile was measured with them.

GPU slots: the simulator gives each worker the lowest free slot on its server
(:func:`assign_slots`, as the device plugin hands out devices); a job without
slots (a hand-built scenario) gets the lowest slots its co-runners leave.
"""
from dataclasses import dataclass

from .spec import SpecError, parse_bandwidth

HOST_KEYS = ("gpus_per_switch", "uplink", "gpus_per_socket", "memory")
OPTIONAL_KEYS = ("p2p",)
# bytes/s of x16 PCIe 3.0, one direction: 8 GT/s x 16 lanes x 128/130 encoding / 8 bits
PCIE3_X16_BPS = 8e9 * 16 * 128 / 130 / 8
# 6 DDR4-2666 channels x 8 bytes x 2666 MT/s (the Xeon Gold 5220R's memory, each socket)
DDR4_2666_6CH_BPS = 6 * 8 * 2666e6
# bytes through socket memory per byte of input / per byte sent or received across servers (see the docstring)
MEM_PER_INPUT = 2
MEM_PER_STAGED = 4          # a byte crossing servers, at each end
MEM_PER_STAGED_INTRA = 3    # a byte between two workers of one server without p2p, at each end


@dataclass(frozen=True)
class HostSpec:
    gpus_per_switch: int     # GPU slots behind each PCIe switch
    uplink_Bps: float        # each PCIe switch's uplink, bytes/s per direction
    gpus_per_socket: int     # GPU slots on each CPU socket
    memory_Bps: float        # host-memory bandwidth of each socket, bytes/s
    p2p: bool = True         # workers on one server reach each other's GPU directly (False: staged through the host)


# MoSim's testbed servers (8 V100-SXM2, 2 Xeon Gold 5220R; the DGX-1-like layout of 8-GPU V100-SXM2 servers: two
# GPUs behind each of four PCIe switches, two switches on each socket), its jobs' workers one GPU each in their own
# pods (the trace's gpu_per_worker = 1), so no P2P between them
V100_SXM2 = HostSpec(2, PCIE3_X16_BPS, 4, DDR4_2666_6CH_BPS, False)


def parse_host(doc, path=None):
    """The spec's ``host`` mapping -> HostSpec (every key but ``p2p`` required)."""
    if not isinstance(doc, dict):
        raise SpecError("host must be a mapping with %s" % ", ".join(HOST_KEYS), path, None, doc)
    unknown = sorted(map(str, set(doc) - set(HOST_KEYS) - set(OPTIONAL_KEYS)))
    if unknown:
        raise SpecError("unknown host key(s) %s" % ", ".join(unknown), path, None, unknown)
    missing = [k for k in HOST_KEYS if k not in doc]
    if missing:
        raise SpecError("host needs %s" % ", ".join(missing), path, None, doc)
    for k in ("gpus_per_switch", "gpus_per_socket"):
        v = doc[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SpecError("host %s must be a positive integer" % k, path, None, v)
    p2p = doc.get("p2p", True)
    if not isinstance(p2p, bool):
        raise SpecError("host p2p must be true or false", path, None, p2p)
    return HostSpec(doc["gpus_per_switch"], parse_bandwidth(doc["uplink"], (path, None), "host uplink"),
                    doc["gpus_per_socket"], parse_bandwidth(doc["memory"], (path, None), "host memory"), p2p)


def assign_slots(free_slots, servers):
    """Take the lowest free slot on each worker's server (``free_slots``:
    server -> sorted list, updated); returns the slots in worker order."""
    out = []
    for s in servers:
        out.append(free_slots[s].pop(0))
    return out


def _slots(running):
    """{job key: [slot of each worker]}: the jobs' own, and for a job without
    slots the lowest its co-runners leave on each server (in running order)."""
    taken, out = {}, {}
    for r in running:
        sl = getattr(r, "slots", None)
        if sl:
            out[r.key] = list(sl)
            for s, g in zip(r.servers, sl):
                taken.setdefault(s, set()).add(g)
    for r in running:
        if r.key in out:
            continue
        sl = []
        for s in r.servers:
            used = taken.setdefault(s, set())
            g = 0
            while g in used:
                g += 1
            used.add(g)
            sl.append(g)
        out[r.key] = sl
    return out


def worker_bytes(r, slots, p2p=True):
    """[(server, slot, {path kind: bytes per iteration})] of job ``r``'s
    workers; kinds ``h2d`` and ``d2h`` (its switch's uplink directions) and
    ``mem`` (its socket's memory).  ``p2p=False`` stages the ring's links
    inside a server through the host too."""
    from .fabric import sync_bytes      # the fabric imports the spec; here lazily
    inp = getattr(r.entry, "input_mb", 0.0) * 1e6
    order = sorted(range(len(r.servers)), key=lambda i: (r.servers[i], slots[i]))
    n = len(order)
    ring = sync_bytes(r, "rate") if n > 1 else 0.0
    sent, recv, mem = [0.0] * n, [0.0] * n, [MEM_PER_INPUT * inp] * n
    for k, i in enumerate(order):
        nxt = order[(k + 1) % n]
        per = MEM_PER_STAGED if r.servers[nxt] != r.servers[i] else MEM_PER_STAGED_INTRA if not p2p else 0
        if per and ring > 0:
            sent[i] += ring
            recv[nxt] += ring
            mem[i] += per * ring
            mem[nxt] += per * ring
    return [(r.servers[i], slots[i], {"h2d": inp + recv[i], "d2h": sent[i], "mem": mem[i]}) for i in range(n)]


def _paths(host, server, slot, kind):
    if kind == "mem":
        return ("mem", server, slot // host.gpus_per_socket), host.memory_Bps
    return (kind, server, slot // host.gpus_per_switch), host.uplink_Bps


def host_extensions(running, spec):
    """{job key: seconds its iteration grows by} from the other jobs' traffic
    on the host paths its workers use (0 without ``spec.host``; jobs in their
    loading phase neither send nor are slowed)."""
    host = getattr(spec, "host", None)
    out = {r.key: 0.0 for r in running}
    active = [r for r in running if not r.loading]
    if host is None or len(active) < 2:
        return out
    slots = _slots(active)
    use = {}                        # path -> [(job key, bytes per iteration, rate B/s)]
    workers = {}
    for r in active:
        ws = []
        for server, slot, kinds in worker_bytes(r, slots[r.key], host.p2p):
            mine = []
            for kind, b in kinds.items():
                if b <= 0:
                    continue
                path, cap = _paths(host, server, slot, kind)
                use.setdefault(path, []).append((r.key, b, b / r.profile.iteration_s))
                mine.append((path, cap, b))
            ws.append(mine)
        workers[r.key] = ws
    for r in active:
        worst = 0.0
        for mine in workers[r.key]:
            ext = 0.0
            for path, cap, b in mine:
                others = [u for u in use[path] if u[0] != r.key]
                if not others:
                    continue
                rho = sum(u[2] for u in others) / cap
                share = max(1.0 - rho, 1.0 / (1 + len(others)))
                ext += b / cap * (1.0 / share - 1.0)
            worst = max(worst, ext)
        out[r.key] = worst
    return out


def with_host(times, running, spec):
    """A contention model's {job: (iteration s, factor)} with the host
    extensions added to the iterations (unchanged without ``spec.host``)."""
    if getattr(spec, "host", None) is None:
        return times
    ext = host_extensions(running, spec)
    return {k: (tau + ext.get(k, 0.0), f) for k, (tau, f) in times.items()}
