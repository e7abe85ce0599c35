"""The critical path of a training iteration: the chain of blocks that bounded it.

Every block (a compute block, a TP collective, a pipeline transfer, an expert all-to-all, a data-parallel
collective) records when it started, when it ended and the block whose end let it start (its cause): the
previous block of its (stage, replica), the transfer it waited for, or, for a collective, the block after
which its last rank joined.  Following causes back from the block whose end ended the iteration gives a
chain without gaps: its durations add up to the iteration time.
"""
from dataclasses import dataclass

KINDS = ("compute", "tp", "pp", "ep", "dp")


@dataclass
class Block:
    kind: str           # compute | tp | pp | ep | dp
    op: str             # what it belongs to: "stage 0 replica 1 F mb 2", "dp allreduce bucket 3 (stage 0)", ...
    what: str           # the block itself: "layer 3 attention", "tp allreduce_nvls", ...
    start: int          # ps
    end: int = -1       # ps, -1 while running
    cause: int = -1     # index of the block whose end let it start (-1: the iteration's start)
    tag: str = None     # the collective kind of a communication block ("dp allreduce_tree", ...)

    @property
    def time(self):
        return self.end - self.start

    def as_dict(self, t0=0):
        return {"kind": self.kind, "op": self.op, "what": self.what, "start_ps": self.start - t0,
                "end_ps": self.end - t0, "ps": self.time}


class CriticalPath:
    """The blocks of one iteration."""

    def __init__(self, t0):
        self.t0 = t0
        self.blocks = []

    def open(self, kind, op, what, start, cause, tag=None):
        self.blocks.append(Block(kind, op, what, start, -1, -1 if cause is None else cause, tag))
        return len(self.blocks) - 1

    def close(self, i, end):
        self.blocks[i].end = end

    def chain(self, last):
        """The blocks from the iteration's start to ``last``, following causes."""
        out = []
        while last is not None and last >= 0:
            b = self.blocks[last]
            out.append(b)
            last = b.cause
        return out[::-1]


def by_kind(chain):
    """ps of the chain in each kind of block."""
    out = {k: 0 for k in KINDS}
    for b in chain:
        out[b.kind] += b.time
    return out


def collapse(chain):
    """Consecutive blocks of one op as one row: [(op, start, end, {kind: ps}, blocks)]."""
    rows = []
    for b in chain:
        if rows and rows[-1][0] == b.op:
            op, start, _, kinds, n = rows[-1]
            kinds[b.kind] = kinds.get(b.kind, 0) + b.time
            rows[-1] = (op, start, b.end, kinds, n + 1)
        else:
            rows.append((b.op, b.start, b.end, {b.kind: b.time}, 1))
    return rows
