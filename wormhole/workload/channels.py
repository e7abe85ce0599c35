"""NCCL's channels for the ring algorithms: how many rings a collective runs and the order of each.

NCCL runs a ring collective as several rings at once (channels), each over its own contiguous part of the
buffer, and builds them so that they leave each server through different NICs.  On a DGX-A100 (8 GPUs and
8 NICs per server) channel c runs the server's GPUs in an order rotated by c and the next server runs the
same order reversed, so a ring enters and leaves each server on the same GPU index: every server crossing
of channel c goes GPU n to GPU n (one rail of a rail-optimized fabric), and channels c and c + 1 cross on
different rails.  With k of the group's GPUs on every server and C = k channels, each GPU's NIC sends the
crossing of exactly one channel, so an all-reduce across servers gets the NICs' sum instead of one NIC.

Rules here (``ring_channels`` for the count, ``channel_orders`` for the orders):

- a group with k >= 2 of its ranks on each of 2 or more servers (the same k on every server) runs C
  channels, C = k unless forced (``--nccl-channels``); channel c uses the rotation c mod k, so channels
  beyond k reuse the rails of channel c - k;
- any other group (one rank per server, one server, uneven servers) runs one ring, in the order it was
  given: a single server's ring is NVLink only (the NVLink channel has no contention, so splitting it would
  only multiply its bandwidth), and one rank per server has one NIC whatever the channels;
- with an odd number of servers the last server (even index, not reversed) ends the ring on GPU index
  c - 1 and the first starts on c: the closing crossing changes rails (through a spine), as the single ring
  does today;
- channel 0 is ``ring_order`` (today's single ring in NCCL's order).
"""
from ..errors import WormholeError

MAX_CHANNELS = 64           # a bound on forced channel counts (each channel is a ring of its own)


def check_channels(requested):
    """``requested``: None (one channel per local rank) or a channel count 1..MAX_CHANNELS."""
    if requested is None:
        return None
    if isinstance(requested, bool) or int(requested) != requested or not 1 <= int(requested) <= MAX_CHANNELS:
        raise WormholeError("NCCL channels must be an integer from 1 to %d" % MAX_CHANNELS, value=requested)
    return int(requested)


def channel_count(nodes, ppn, requested=None):
    """Channels of a ring over ``nodes`` servers with ``ppn`` ranks on each (0: uneven): ``requested`` (None:
    ``ppn``) when nodes >= 2 and ppn >= 2, else 1."""
    requested = check_channels(requested)
    if nodes < 2 or ppn < 2:
        return 1
    return ppn if requested is None else requested


def _by_server(gpus, gpus_per_server):
    by = {}
    for g in sorted(gpus):
        by.setdefault(g // gpus_per_server, []).append(g)
    return [by[s] for s in sorted(by)]


def ring_channels(gpus, gpus_per_server=8, requested=None):
    """The channel count of a ring over ``gpus`` (``channel_count`` of its shape)."""
    servers = _by_server(gpus, gpus_per_server)
    sizes = {len(m) for m in servers}
    return channel_count(len(servers), sizes.pop() if len(sizes) == 1 else 0, requested)


def channel_orders(gpus, gpus_per_server=8, channels=1):
    """The ring order of each of ``channels`` channels over ``gpus``: the servers in id order, each server's
    GPUs in id order rotated by the channel (mod the server's count), every other server's reversed."""
    out = []
    servers = _by_server(gpus, gpus_per_server)
    for c in range(int(channels)):
        order = []
        for i, m in enumerate(servers):
            r = c % len(m)
            rot = m[r:] + m[:r]
            order += rot if i % 2 == 0 else rot[::-1]
        out.append(order)
    return out


def crossings(order, gpus_per_server=8):
    """The server crossings of a ring order, closing edge included: [(src, dst)]."""
    n = len(order)
    return [(order[i], order[(i + 1) % n]) for i in range(n)
            if order[i] // gpus_per_server != order[(i + 1) % n] // gpus_per_server]
