"""NVLink as part of the fabric: an NVSwitch node per server.

Every GPU host of a server gets a second port, an NVLink link to its server's
NVSwitch at the GPU's NVLink bandwidth (per direction); routing sends traffic
between GPUs of one server over it (two hops, against four or more through the
rail leaves), and traffic between servers over the NIC (the first port, hosts
never forward, so there is no PXN).  Each NVSwitch also carries NVLS
engines, one per GPU port: host nodes standing for the switch's reduction and
multicast unit, linked to it at one GPU's NVLink bandwidth with no delay.  An
NVLS all-reduce over n GPUs of a server gives engine j the j-th of n slices:
every GPU sends slice j to engine j (the switch reducing as it reads), engine j
sends the reduced slice back to every GPU (the multicast), so each GPU port
carries its buffer once each way and no link runs faster than NVLink (a single
engine port at n times the rate would also overflow the kernel's window
arithmetic at 8 x 2.4 Tb/s).  The NVLink links form their own window domain
(``Topology.link_domain``): under ``global_t`` the NICs keep the fabric's BDP as
their window and NVLink flows get NVLink's.
"""
from dataclasses import dataclass

from .errors import TopologyError
from .units import as_rate, as_time

DOMAIN = "nvlink"


@dataclass(frozen=True)
class NvlinkDomain:
    """Where NVLink lives in a topology: GPU host g of server g // gpus_per_server."""
    gpus: int                   # GPU hosts 0..gpus-1 (the topology's first hosts)
    gpus_per_server: int
    rate_bps: int               # NVLink bandwidth per GPU per direction
    delay_ps: int               # per link (GPU to NVSwitch): GPU to GPU is twice this
    switches: tuple             # NVSwitch node per server
    engines: tuple              # NVLS engine host per GPU (on its server's NVSwitch)
    links: tuple                # NVLink link indices (GPU links and engine links)

    def server(self, gpu):
        return gpu // self.gpus_per_server

    def engine(self, gpu):
        """The NVLS engine host on the port of ``gpu`` (it reduces and multicasts that GPU's slice)."""
        return self.engines[gpu]


def add_nvswitches(t, n_gpus=None, gpus_per_server=None, rate="2400Gbps", delay="500ns"):
    """Add an NVSwitch (and its NVLS engine) per server to topology ``t`` whose first ``n_gpus`` hosts are
    GPUs, ``gpus_per_server`` to a server (default: the topology's, else 8); every GPU links to its
    server's NVSwitch at ``rate`` with ``delay``.  New nodes get the next ids; returns ``t`` (its
    ``nvlink`` is the NvlinkDomain)."""
    rate = as_rate(rate, "rate", "add_nvswitches")
    delay = as_time(delay, "delay", "add_nvswitches")
    if t.nvlink is not None:
        raise TopologyError("the topology already has NVSwitches", t.name)
    hosts = t.hosts
    gps = int(gpus_per_server or t.gpus_per_server or 8)
    n = len(hosts) if n_gpus is None else int(n_gpus)
    if gps < 1 or n < 1 or n % gps or n > len(hosts):
        raise TopologyError("NVSwitches need a positive multiple of %d GPU hosts (the topology has %d)"
                            % (gps, len(hosts)), t.name, value=n)
    if hosts[:n] != list(range(n)):
        raise TopologyError("NVSwitches need the GPUs to be hosts 0..%d" % (n - 1), t.name, value=hosts[:n])
    switches, engines, links = [], [], []
    for k in range(n // gps):
        sw = t.add_switch("nvswitch%d" % k)
        switches.append(sw)
        for g in range(k * gps, (k + 1) * gps):
            links.append(t.add_link(g, sw, rate, delay))
        for g in range(k * gps, (k + 1) * gps):
            eng = t.add_host("nvls%d" % g)
            engines.append(eng)
            links.append(t.add_link(eng, sw, rate, 0))
    for i in links:
        t.link_domain[i] = DOMAIN
    t.nvlink = NvlinkDomain(n, gps, rate, delay, tuple(switches), tuple(engines), tuple(links))
    return t
