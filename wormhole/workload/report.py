"""Text tables of a training report: bytes and time per collective kind, and the critical path."""
from .critical import Block, collapse

MAX_ROWS = 12


def collective_lines(rep):
    """Per collective kind: how many, the bytes the GPUs sent on NVLink and on the fabric, the time they took
    (summed over collectives, whole run) and their time on the (last) iteration's critical path."""
    table = rep.get("collectives_by_kind")
    if not table:
        return []
    out = ["collectives %-26s %7s %10s %10s %11s %10s" % ("kind", "count", "NVLink GB", "fabric GB", "time ms",
                                                          "crit. ms")]
    for tag, r in sorted(table.items()):
        out.append("            %-26s %7d %10.3f %10.3f %11.3f %10.3f" % (
            tag, r["count"], r["nvlink_bytes"] / 1e9, r["fabric_bytes"] / 1e9, r["time_ps"] / 1e9,
            r["critical_ps"] / 1e9))
    by = rep.get("fabric_bytes_by_class")
    if by:
        out.append("  fabric    by link class: %s" % ", ".join("%s %.3f GB" % (k, v / 1e9) for k, v in sorted(by.items())))
    return out


def critical_lines(rep):
    """The critical path: time by kind of block, then the chain with a block's op collapsed to one row."""
    cp = rep.get("critical_path")
    if not cp or not cp.get("blocks"):
        return []
    kinds = cp["by_kind_ps"]
    out = ["critical    path of the iteration: %s" % ", ".join("%s %.3f ms" % (k, v / 1e9) for k, v in kinds.items() if v)]
    blocks = [Block(b["kind"], b["op"], b["what"], b["start_ps"], b["end_ps"]) for b in cp["blocks"]]
    rows = collapse(blocks)
    show = rows if len(rows) <= MAX_ROWS else rows[:MAX_ROWS // 2] + [None] + rows[-MAX_ROWS // 2:]
    for r in show:
        if r is None:
            out.append("            ... %d more" % (len(rows) - 2 * (MAX_ROWS // 2)))
            continue
        op, start, end, k, n = r
        parts = ", ".join("%s %.3f" % (x, v / 1e9) for x, v in k.items())
        out.append("            %9.3f-%9.3f ms  %-44s %s%s" % (start / 1e9, end / 1e9, op, parts,
                                                           " (%d blocks)" % n if n > 1 else ""))
    return out
