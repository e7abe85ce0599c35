"""Rate and queue traces: CSV files from a run's samples, and PNG plots of them."""
import csv
import os

import numpy as np

from .errors import WormholeError


def trace_tables(net):
    """(rates, queues) rows from a run's samples: rates (time_us, flow, src, dst, rate_gbps),
    queues (time_us, node, ifindex, port, bytes)."""
    s = net.samples()
    f = net.fabric
    res = net.results
    r = s[s["kind"] == "rate"]
    q = s[s["kind"] == "queue"]
    rates = [(t / 1e6, int(i), int(res["src"][i]), int(res["dst"][i]), v / 1e9)
             for t, i, v in zip(r["time"], r["index"], r["value"])]
    queues = [(t / 1e6, int(f.port_node[p]), int(f.port_ifindex[p]), int(p), int(v))
              for t, p, v in zip(q["time"], q["index"], q["value"])]
    return rates, queues


def trace_files(net):
    """{'rates.csv': text, 'queues.csv': text}."""
    rates, queues = trace_tables(net)
    out = {}
    for name, header, rows, fmt in (
            ("rates.csv", "time_us,flow,src,dst,rate_gbps", rates, "%.3f,%d,%d,%d,%.6f"),
            ("queues.csv", "time_us,node,ifindex,port,bytes", queues, "%.3f,%d,%d,%d,%d")):
        out[name] = header + "\n" + "".join((fmt % row) + "\n" for row in rows)
    return out


def _read(path, cols):
    try:
        with open(path, newline="") as fh:
            rd = csv.reader(fh)
            head = next(rd, None)
            if head is None or head[:len(cols)] != cols:
                raise WormholeError("not a wormhole trace (header %s expected)" % ",".join(cols), path, 1,
                                    ",".join(head or []))
            rows = []
            for no, row in enumerate(rd, 2):
                try:
                    rows.append([float(x) for x in row[:len(cols)]])
                except ValueError:
                    raise WormholeError("bad trace row", path, no, ",".join(row))
                if len(row) < len(cols):
                    raise WormholeError("short trace row", path, no, ",".join(row))
    except OSError as e:
        raise WormholeError("cannot read trace: %s" % e.strerror, path)
    return np.array(rows, dtype=float).reshape(-1, len(cols))


def plot_trace(trace_dir, out_dir, max_lines=16):
    """rates.png (rate vs time per flow) and queues.png (queue vs time of the
    busiest switch ports) from a trace folder.  Returns the written paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = _read(os.path.join(trace_dir, "rates.csv"), ["time_us", "flow", "src", "dst", "rate_gbps"])
    queues = _read(os.path.join(trace_dir, "queues.csv"), ["time_us", "node", "ifindex", "port", "bytes"])
    os.makedirs(out_dir, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(9, 4.5))
    flows = np.unique(rates[:, 1]).astype(int) if len(rates) else []
    for fid in flows[:max_lines]:
        m = rates[:, 1] == fid
        ax.step(rates[m, 0], rates[m, 4], where="post", lw=1,
                label="flow %d (%d->%d)" % (fid, rates[m, 2][0], rates[m, 3][0]))
    ax.set_xlabel("time (us)")
    ax.set_ylabel("rate (Gb/s)")
    ax.set_title("sending rate per flow" + (" (first %d of %d)" % (max_lines, len(flows))
                                             if len(flows) > max_lines else ""))
    if len(flows):
        ax.legend(fontsize=7, ncol=2)
    path = os.path.join(out_dir, "rates.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(9, 4.5))
    if len(queues):
        times = np.unique(np.concatenate([queues[:, 0], rates[:, 0]])) if len(rates) else np.unique(queues[:, 0])
        ports = np.unique(queues[:, 3]).astype(int)
        peak = {p: queues[queues[:, 3] == p, 4].max() for p in ports}
        for p in sorted(ports, key=lambda x: -peak[x])[:max_lines]:
            m = queues[:, 3] == p
            series = np.zeros(len(times))
            series[np.searchsorted(times, queues[m, 0])] = queues[m, 4]
            node, ifx = int(queues[m, 1][0]), int(queues[m, 2][0])
            ax.step(times, series / 1000, where="post", lw=1, label="node %d if %d" % (node, ifx))
        ax.legend(fontsize=7, ncol=2)
    ax.set_xlabel("time (us)")
    ax.set_ylabel("queue (KB)")
    ax.set_title("switch egress queues (busiest ports)")
    path = os.path.join(out_dir, "queues.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written
