"""Accelerator pieces that live in Python: the memo database of partition
convergences and the canonical keys of flow conflict graphs (pynauty).  The
partitions, steady-state test and fast-forward are in the kernel."""
from .memo import MEMO_VERSION, Memo, MemoDB, canonical_key, conflict_graph

__all__ = ["MEMO_VERSION", "Memo", "MemoDB", "canonical_key", "conflict_graph"]
