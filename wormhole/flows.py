"""The reference flow file: ``N``, then ``src dst pg dport size start_s`` per
flow, sorted by start time."""
import math
from dataclasses import dataclass

from .errors import FlowFileError, read_text
from .units import NS, ns3_fixed_point


@dataclass(frozen=True)
class FlowSpec:
    src: int
    dst: int
    pg: int
    dport: int
    size: int
    start_ps: int
    line: int = 0


def read_flows(path, topo):
    """Validated flow list; start times converted as the reference converts them."""
    text = read_text(path, FlowFileError, "flow file")
    lines = [(no, ln.split()) for no, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise FlowFileError("empty flow file", path, 1)
    no, head = lines[0]
    try:
        if len(head) != 1:
            raise ValueError
        n = int(head[0])
        if n < 0:
            raise ValueError
    except ValueError:
        raise FlowFileError("first line must be the number of flows", path, no, " ".join(head))
    body = lines[1:]
    if len(body) < n:
        last = body[-1][0] + 1 if body else no + 1
        raise FlowFileError("file ends after %d of %d flows (short flow file)" % (len(body), n), path, last)
    if len(body) > n:
        no2, parts = body[n]
        raise FlowFileError("more flows than the %d announced" % n, path, no2, " ".join(parts))
    out = []
    prev = -1
    for no, parts in body:
        if len(parts) != 6:
            raise FlowFileError("flow line must be 'src dst pg dport size start_s'", path, no, " ".join(parts))
        try:
            src, dst, pg, dport, size = (int(x) for x in parts[:5])
        except ValueError:
            raise FlowFileError("src, dst, pg, dport and size must be integers", path, no, " ".join(parts[:5]))
        try:
            start = float(parts[5])
        except ValueError:
            raise FlowFileError("start time is not a number", path, no, parts[5])
        for what, node in (("src", src), ("dst", dst)):
            if node < 0 or node >= topo.n_nodes:
                raise FlowFileError("%s is not a node of the topology" % what, path, no, node)
            if topo.is_switch[node]:
                raise FlowFileError("%s is a switch, not a host" % what, path, no, node)
        if src == dst:
            raise FlowFileError("flow from a host to itself", path, no, src)
        if not 0 <= pg < 8 or pg == 0:
            raise FlowFileError("priority group must be in 1..7 (0 is the control queue)", path, no, pg)
        if not 0 <= dport < 65536:
            raise FlowFileError("dport must be in 0..65535", path, no, dport)
        if size <= 0:
            raise FlowFileError("flow size must be positive", path, no, size)
        if size >= 1 << 40:
            raise FlowFileError("flow size too large", path, no, size)
        if not math.isfinite(start) or start < 0 or start > 1e6:
            raise FlowFileError("start time must be a finite, non-negative number of seconds", path, no, parts[5])
        start_ps = ns3_fixed_point(start, 10 ** 9) * NS
        if start_ps < prev:
            raise FlowFileError("flows are not sorted by start time", path, no, parts[5])
        prev = start_ps
        out.append(FlowSpec(src, dst, pg, dport, size, start_ps, no))
    return out


def write_flows(flows, path):
    with open(path, "w") as fh:
        fh.write("%d\n" % len(flows))
        for f in flows:
            fh.write("%d %d %d %d %d %.9f\n" % (f.src, f.dst, f.pg, f.dport, f.size, f.start_ps / 1e12))
