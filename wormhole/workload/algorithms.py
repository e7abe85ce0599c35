"""The collective implementations by (kind, NCCL algorithm), and what a TP collective costs on the NVLink
channel (no packets) by its alpha-beta formula.

alpha is the channel's latency, beta its time per byte (1 / NVLink bandwidth), S the buffer, N the ranks,
c the chunk (S cut into ceil(S / chunk_bytes) equal chunks, as the collectives cut it):

- ring all-reduce 2 (N - 1) (alpha + S / N beta); reduce-scatter and all-gather half of that;
- tree (inside a server a chain of N per tree, half of the buffer on each, in k chunks of c2):
  (2 (N - 1) + k - 1) (alpha + c2 beta), c2 = min(c, S / 2), k = ceil(S / 2 / c2);
- NVLS all-reduce 2 alpha + (S + c) beta (the up step of each chunk, then its multicast, pipelined);
  reduce-scatter and all-gather 2 alpha + (S + c / N) beta.

The bytes are those the GPUs send: ring and tree all-reduces 2 (N - 1) S, ring reduce-scatter and
all-gather (N - 1) S, NVLS all-reduce and reduce-scatter N S (every GPU sends its buffer to the switch
once), NVLS all-gather S.
"""
from .collectives import AllGather, ReduceScatter, RingAllReduce, TreeAllReduce, chunks_of
from .nvls import NvlsAllGather, NvlsAllReduce, NvlsReduceScatter, NvlsTreeAllReduce

IMPLEMENTATIONS = {
    ("allreduce", "ring"): RingAllReduce, ("allreduce", "tree"): TreeAllReduce,
    ("allreduce", "nvls"): NvlsAllReduce, ("allreduce", "nvls_tree"): NvlsTreeAllReduce,
    ("reducescatter", "ring"): ReduceScatter, ("reducescatter", "nvls"): NvlsReduceScatter,
    ("allgather", "ring"): AllGather, ("allgather", "nvls"): NvlsAllGather,
}


def implementation(kind, algo):
    return IMPLEMENTATIONS[(kind, algo)]


def channel_time_ps(kind, algo, n, nbytes, chunk_bytes, link_time):
    """Alpha-beta time (ps) of a TP collective inside one server on the NVLink channel, whose transfer of b
    bytes takes ``link_time(b)`` = alpha + b beta."""
    if n < 2 or nbytes <= 0:
        return 0
    if algo == "ring":
        steps = 2 * (n - 1) if kind == "allreduce" else n - 1
        return steps * link_time(nbytes / n)
    c = chunks_of(nbytes, chunk_bytes)[0]
    if algo == "nvls":
        return link_time(0) + link_time(nbytes + (c if kind == "allreduce" else c / n))
    if algo == "tree":
        half = nbytes / 2
        c2 = min(c, half)
        k = -(-int(half) // max(1, int(c2)))
        return (2 * (n - 1) + k - 1) * link_time(c2)
    raise KeyError((kind, algo))


def sent_bytes(kind, algo, n, nbytes):
    """Bytes all N GPUs send for one collective of ``nbytes``."""
    if n < 2:
        return 0
    if algo in ("ring", "tree"):
        return (2 if kind == "allreduce" else 1) * (n - 1) * nbytes
    return nbytes if kind == "allgather" else n * nbytes
