"""Chakra execution traces (the input of ASTRA-sim 2.x): read, run, write.

A trace is one file per rank, ``PREFIX.<rank>.et``: a sequence of protobuf
messages, each preceded by its length as a varint; the first is a
``GlobalMetadata`` (version, attributes), the others are ``Node``s.  The
messages are decoded here by a small protobuf reader of our own; the field
numbers and types follow the Chakra schema (mlcommons/chakra,
``schema/protobuf/et_def.proto``):

* ``Node``: id 1 (uint64), name 2, type 3 (enum), ctrl_deps 4 and data_deps 5
  (repeated uint64), start_time_micros 6, duration_micros 7, inputs 8 and
  outputs 9 (IOInfo), attr 10 (repeated AttributeProto);
* ``AttributeProto``: name 1, doc_string 2, then one value of a oneof: double 3,
  float 5, int32 7, int64 9, uint32 11, uint64 13, sint32 15, sint64 17,
  fixed32 19, fixed64 21, sfixed32 23, sfixed64 25, bool 27, string 29, bytes
  31; the even numbers 4..32 are lists of the type before them (field 1,
  repeated);
* node types: INVALID 0, METADATA 1, MEM_LOAD 2, MEM_STORE 3, COMP 4,
  COMM_SEND 5, COMM_RECV 6, COMM_COLL 7; collective types: ALL_REDUCE 0,
  REDUCE 1, ALL_GATHER 2, GATHER 3, SCATTER 4, BROADCAST 5, ALL_TO_ALL 6,
  REDUCE_SCATTER 7, REDUCE_SCATTER_BLOCK 8, BARRIER 9.

The communicator groups are ASTRA-sim's JSON file ``{"<id>": [ranks...]}``, or
the process groups a PyTorch-converted trace declares in its METADATA nodes
(the inputs' values, as ASTRA-sim reads them); a collective's ``pg_name``
attribute names its group ("" or "0": all ranks).

Running (``ChakraRun``): rank r is host r of the fabric.  A node is issued when
every node it depends on (data and control dependencies, on its own rank) has
finished; COMP and MEM nodes take their duration (``duration_micros``, or our
exact ``duration_ps`` attribute when present; without either, ``num_ops`` at
the given FLOP/s); COMM_COLL nodes join the k-th collective of their group (k
counted in file order on each rank; every member must agree on type and size)
and run as our collectives (NCCL ring, all-to-all, broadcast) over the
Network API; a COMM_SEND starts its transfer when issued and finishes when the
data arrived, its COMM_RECV (matched by source, destination and tag, in file
order) finishes when it is issued and the data has arrived.  ``comm_size`` is
the buffer a rank contributes, as our collectives count it.  Sizes are bytes.

Writing (``write_training``): a ``TrainingJob``'s iteration as per-rank
graphs -- its compute blocks (TP all-reduces over NVLink included in their
time, as our model counts them), its DP gradient-bucket all-reduces, EP
all-to-alls and pipeline send / receive pairs -- plus the communicator-group
JSON, so the same workload can be handed to ASTRA-sim.
"""
import json
import os
import struct
from collections import defaultdict
from dataclasses import dataclass, field

from ..errors import WormholeError
from .channels import check_channels
from .collectives import COLLECTIVES, DEFAULT_CHUNK, DEFAULT_INFLIGHT, SendRecv, Transport
from .models import WorkloadError


class ChakraError(WorkloadError):
    """A truncated, malformed or inconsistent Chakra trace (names the file and the value)."""


NODE_TYPES = {0: "INVALID", 1: "METADATA", 2: "MEM_LOAD", 3: "MEM_STORE", 4: "COMP", 5: "COMM_SEND",
              6: "COMM_RECV", 7: "COMM_COLL"}
TYPE_IDS = {v: k for k, v in NODE_TYPES.items()}
COLL_TYPES = {0: "ALL_REDUCE", 1: "REDUCE", 2: "ALL_GATHER", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
              6: "ALL_TO_ALL", 7: "REDUCE_SCATTER", 8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}
COLL_IDS = {v: k for k, v in COLL_TYPES.items()}
# Chakra collective -> our collective
OURS = {"ALL_REDUCE": "allreduce", "ALL_GATHER": "allgather", "REDUCE_SCATTER": "reducescatter",
        "ALL_TO_ALL": "alltoall", "BROADCAST": "broadcast"}
THEIRS = {v: k for k, v in OURS.items()}
VERSION = "0.0.4"


# ---------------------------------------------------------------- protobuf wire format
class _Trunc(Exception):
    pass


def _varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise _Trunc(i)
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 70:
            raise ValueError("varint longer than 10 bytes")


def _fields(buf):
    """(field number, wire type, value) of a message; value is an int (varint,
    fixed) or bytes (length-delimited)."""
    i, n = 0, len(buf)
    out = []
    while i < n:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ValueError("field number 0")
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            if i + 8 > n:
                raise _Trunc(i)
            v = buf[i:i + 8]
            i += 8
        elif wt == 2:
            ln, i = _varint(buf, i)
            if i + ln > n:
                raise _Trunc(i)
            v = buf[i:i + ln]
            i += ln
        elif wt == 5:
            if i + 4 > n:
                raise _Trunc(i)
            v = buf[i:i + 4]
            i += 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        out.append((num, wt, v))
    return out


def _signed(v, bits=64):
    return v - (1 << 64) if v >= 1 << 63 else v


def _zigzag(v):
    return (v >> 1) ^ -(v & 1)


# scalar decoders by AttributeProto field number: (wire kind, decode)
def _dec_scalar(num, wt, v):
    if num in (3, 21, 25):              # double, fixed64, sfixed64
        raw = v if isinstance(v, bytes) else struct.pack("<Q", v)
        return {3: struct.unpack("<d", raw)[0], 21: struct.unpack("<Q", raw)[0],
                25: struct.unpack("<q", raw)[0]}[num]
    if num in (5, 19, 23):              # float, fixed32, sfixed32
        raw = v if isinstance(v, bytes) else struct.pack("<I", v)
        return {5: struct.unpack("<f", raw)[0], 19: struct.unpack("<I", raw)[0],
                23: struct.unpack("<i", raw)[0]}[num]
    if num in (7, 9):
        return _signed(v)
    if num in (11, 13):
        return v
    if num in (15, 17):
        return _zigzag(v)
    if num == 27:
        return bool(v)
    if num == 29:
        return bytes(v).decode("utf-8", "replace")
    if num == 31:
        return bytes(v)
    raise ValueError("attribute field %d" % num)


_FIXED = {3: 8, 21: 8, 25: 8, 5: 4, 19: 4, 23: 4}


def _dec_list(num, buf):
    """A ``*List`` message: field 1 repeated (packed or not) of the scalar type num - 1."""
    s = num - 1
    vals = []
    for fnum, wt, v in _fields(buf):
        if fnum != 1:
            continue
        if wt == 2 and s not in (29, 31):       # packed
            if s in _FIXED:
                w = _FIXED[s]
                vals += [_dec_scalar(s, 1, bytes(v[k:k + w])) for k in range(0, len(v), w)]
            else:
                j = 0
                while j < len(v):
                    x, j = _varint(v, j)
                    vals.append(_dec_scalar(s, 0, x))
        else:
            vals.append(_dec_scalar(s, wt, v))
    return vals


def _dec_attr(buf):
    name, val = "", None
    for num, wt, v in _fields(buf):
        if num <= 32 and wt not in _attr_wt(num):
            raise ValueError("attribute field %d has wire type %d" % (num, wt))
        if num == 1:
            name = bytes(v).decode("utf-8", "replace")
        elif num == 2:
            pass
        elif 3 <= num <= 32:
            val = _dec_list(num, v) if num % 2 == 0 else _dec_scalar(num, wt, v)
    return name, val


def _packed_or_single(wt, v):
    if wt == 2:
        out, j = [], 0
        while j < len(v):
            x, j = _varint(v, j)
            out.append(x)
        return out
    return [v]


@dataclass
class Node:
    id: int
    name: str = ""
    type: str = "INVALID"
    ctrl_deps: list = field(default_factory=list)
    data_deps: list = field(default_factory=list)
    start_time_micros: int = 0
    duration_micros: int = 0
    attrs: dict = field(default_factory=dict)
    inputs: str = ""            # IOInfo.values of the inputs (a METADATA node's process groups)

    @property
    def deps(self):
        return list(dict.fromkeys(self.data_deps + self.ctrl_deps))


_NODE_WT = {1: (0,), 2: (2,), 3: (0,), 4: (0, 2), 5: (0, 2), 6: (0,), 7: (0,), 8: (2,), 9: (2,), 10: (2,)}


def _attr_wt(num):
    if num in (1, 2) or num % 2 == 0 or num in (29, 31):
        return (2,)
    if num in (3, 21, 25):
        return (1,)
    if num in (5, 19, 23):
        return (5,)
    return (0,)


def _dec_node(buf):
    nd = Node(0)
    for num, wt, v in _fields(buf):
        if wt not in _NODE_WT.get(num, (wt,)):
            raise ValueError("field %d has wire type %d" % (num, wt))
        if num == 1:
            nd.id = v
        elif num == 2:
            nd.name = bytes(v).decode("utf-8", "replace")
        elif num == 3:
            nd.type = NODE_TYPES.get(v, "UNKNOWN(%d)" % v)
        elif num == 4:
            nd.ctrl_deps += _packed_or_single(wt, v)
        elif num == 5:
            nd.data_deps += _packed_or_single(wt, v)
        elif num == 6:
            nd.start_time_micros = v
        elif num == 7:
            nd.duration_micros = v
        elif num == 8:
            for fnum, fwt, fv in _fields(v):
                if fnum == 1 and fwt == 2:
                    nd.inputs = bytes(fv).decode("utf-8", "replace")
        elif num == 10:
            k, val = _dec_attr(v)
            nd.attrs[k] = val
    return nd


def _enc_varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(num, wt):
    return _enc_varint((num << 3) | wt)


def _len_field(num, payload):
    return _key(num, 2) + _enc_varint(len(payload)) + payload


def _enc_attr(name, val):
    out = _len_field(1, name.encode())
    if isinstance(val, bool):
        out += _key(27, 0) + _enc_varint(int(val))
    elif isinstance(val, int):
        out += _key(9, 0) + _enc_varint(val)                # int64_val
    elif isinstance(val, float):
        out += _key(3, 1) + struct.pack("<d", val)
    elif isinstance(val, str):
        out += _len_field(29, val.encode())
    elif isinstance(val, (list, tuple)) and all(isinstance(x, bool) for x in val):
        out += _len_field(28, _len_field(1, b"".join(_enc_varint(int(x)) for x in val)))
    elif isinstance(val, (list, tuple)):
        out += _len_field(10, _len_field(1, b"".join(_enc_varint(int(x)) for x in val)))   # int64_list
    else:
        raise WormholeError("cannot encode attribute %r" % name, value=val)
    return out


def encode_node(nd):
    out = _key(1, 0) + _enc_varint(nd.id)
    if nd.name:
        out += _len_field(2, nd.name.encode())
    out += _key(3, 0) + _enc_varint(TYPE_IDS[nd.type])
    if nd.ctrl_deps:
        out += _len_field(4, b"".join(_enc_varint(x) for x in nd.ctrl_deps))
    if nd.data_deps:
        out += _len_field(5, b"".join(_enc_varint(x) for x in nd.data_deps))
    if nd.start_time_micros:
        out += _key(6, 0) + _enc_varint(nd.start_time_micros)
    if nd.duration_micros:
        out += _key(7, 0) + _enc_varint(nd.duration_micros)
    if nd.inputs:
        out += _len_field(8, _len_field(1, nd.inputs.encode()))
    for k, v in nd.attrs.items():
        out += _len_field(10, _enc_attr(k, v))
    return out


def encode_metadata(version=VERSION, attrs=None):
    out = _len_field(1, version.encode())
    for k, v in (attrs or {}).items():
        out += _len_field(2, _enc_attr(k, v))
    return out


def frame(msg):
    return _enc_varint(len(msg)) + msg


# ---------------------------------------------------------------- reading
@dataclass
class RankTrace:
    path: str
    rank: int
    version: str
    meta: dict
    nodes: list             # in file order


def read_et(path, rank=0):
    """One rank's ``.et`` file: RankTrace(version, metadata attributes, nodes in file order)."""
    try:
        with open(path, "rb") as fh:
            buf = fh.read()
    except OSError as e:
        raise ChakraError("cannot read Chakra trace: %s" % e.strerror, path)
    msgs, i = [], 0
    while i < len(buf):
        try:
            ln, j = _varint(buf, i)
        except (_Trunc, ValueError):
            raise ChakraError("truncated trace: a message length is cut off", path, value="byte %d" % i)
        if j + ln > len(buf):
            raise ChakraError("truncated trace: message %d announces %d bytes, %d are left"
                              % (len(msgs), ln, len(buf) - j), path, value="byte %d" % i)
        msgs.append((i, buf[j:j + ln]))
        i = j + ln
    if not msgs:
        raise ChakraError("empty trace (no GlobalMetadata)", path)
    try:
        version, meta = "", {}
        for num, wt, v in _fields(msgs[0][1]):
            if num == 1 and wt == 2:
                version = bytes(v).decode("utf-8", "replace")
            elif num == 2 and wt == 2:
                k, val = _dec_attr(v)
                meta[k] = val
    except (_Trunc, ValueError, TypeError, struct.error, OverflowError) as e:
        raise ChakraError("malformed GlobalMetadata (%s)" % (e,), path, value="byte 0")
    nodes, seen = [], set()
    for off, m in msgs[1:]:
        try:
            nd = _dec_node(m)
        except (_Trunc, ValueError, TypeError, UnicodeDecodeError, struct.error, OverflowError):
            raise ChakraError("malformed Node message", path, value="byte %d" % off)
        if nd.type.startswith("UNKNOWN"):
            raise ChakraError("node %d has an unknown type" % nd.id, path, value=nd.type)
        if nd.id in seen:
            raise ChakraError("duplicate node id", path, value=nd.id)
        seen.add(nd.id)
        nodes.append(nd)
    ids = seen
    for nd in nodes:
        for d in nd.deps:
            if d not in ids:
                raise ChakraError("node %d depends on a missing node" % nd.id, path, value=d)
    return RankTrace(str(path), rank, version, meta, nodes)


def read_comm_groups(path):
    """ASTRA-sim's communicator-group JSON: {"<id>": [ranks]} -> {id string: [ranks]}."""
    from ..errors import read_text
    text = read_text(path, ChakraError, "communicator-group file")
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ChakraError("not valid JSON: %s" % e, path)
    if not isinstance(data, dict):
        raise ChakraError("communicator groups must be a JSON object {\"id\": [ranks]}", path)
    out = {}
    for k, v in data.items():
        try:
            int(k)
        except ValueError:
            raise ChakraError("communicator group id must be an integer", path, value=k)
        if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                        for x in v):
            raise ChakraError("group %s must list its ranks (non-negative integers)" % k, path, value=v)
        if len(set(v)) != len(v):
            raise ChakraError("group %s lists a rank twice" % k, path, value=v)
        out[str(k)] = list(v)
    return out


def pg_metadata(nd, path, n):
    """Process groups of a METADATA node, as ASTRA-sim reads them: its inputs' values
    hold ``['[{"pg_name": "1", "ranks": [..]}, ...]']`` (ASTRA-sim strips the outer
    two characters on each side; ``[[...]]`` is read too); no ranks means all of them.  Returns {pg_name: ranks}."""
    text = nd.inputs.strip()
    inner = text[2:-2] if len(text) >= 4 else text
    try:
        items = json.loads(inner)
    except ValueError:
        try:
            items = json.loads(text)
        except ValueError:
            raise ChakraError("node %d: process-group metadata is not JSON" % nd.id, path, value=text[:60])
    for _ in range(3):                  # [[...]] or ["[...]"]: unwrap to the list of groups
        if isinstance(items, list) and len(items) == 1 and isinstance(items[0], (list, str)):
            items = items[0]
            if isinstance(items, str):
                try:
                    items = json.loads(items)
                except ValueError:
                    raise ChakraError("node %d: process-group metadata is not JSON" % nd.id, path, value=text[:60])
    if isinstance(items, dict):
        items = [items]
    out = {}
    for it in items if isinstance(items, list) else []:
        if not isinstance(it, dict) or "pg_name" not in it:
            raise ChakraError("node %d: a process group needs pg_name and ranks" % nd.id, path, value=it)
        try:
            name = str(int(str(it["pg_name"])))
        except ValueError:
            raise ChakraError("node %d: pg_name must be an integer" % nd.id, path, value=it["pg_name"])
        ranks = it.get("ranks") or list(range(n))
        if not all(isinstance(r, int) and 0 <= r < n for r in ranks):
            raise ChakraError("node %d: group %s names a rank outside 0..%d" % (nd.id, name, n - 1), path,
                              value=ranks)
        out[name] = list(ranks)
    return out


def trace_files(prefix, ranks=None):
    """The files ``PREFIX.<rank>.et`` (ranks 0..N-1; N given or counted)."""
    prefix = os.fspath(prefix)
    if ranks is None:
        ranks = 0
        while os.path.exists("%s.%d.et" % (prefix, ranks)):
            ranks += 1
        if ranks == 0:
            raise ChakraError("no Chakra trace files PREFIX.0.et, PREFIX.1.et, ...", prefix + ".0.et")
    files = ["%s.%d.et" % (prefix, r) for r in range(int(ranks))]
    for f in files:
        if not os.path.isfile(f):
            raise ChakraError("missing trace file of rank %s" % f.rsplit(".", 2)[-2], f)
    extra = "%s.%d.et" % (prefix, int(ranks))
    if os.path.exists(extra):
        raise ChakraError("the trace has more ranks than the %d GPUs asked for" % int(ranks), extra)
    return files


class ChakraTrace:
    """The ranks' graphs plus the communicator groups, checked for consistency:
    every dependency exists, every send has its receive (same source,
    destination, tag, size) and every collective's group is known and agrees on
    its members' calls."""

    def __init__(self, ranks, groups=None, groups_path=None):
        self.ranks = ranks
        self.n = len(ranks)
        self.groups = {}
        for rt in ranks:        # process groups a PyTorch-converted trace declares in METADATA nodes
            for nd in rt.nodes:
                if nd.type == "METADATA" and nd.inputs:
                    self.groups.update(pg_metadata(nd, rt.path, self.n))
        self.groups.update(groups or {})        # the JSON file, if given, has the last word
        self.groups_path = groups_path
        self._check()

    @classmethod
    def load(cls, prefix, gpus=None, comm_groups=None):
        files = trace_files(prefix, gpus)
        ranks = [read_et(f, r) for r, f in enumerate(files)]
        groups = read_comm_groups(comm_groups) if comm_groups else {}
        return cls(ranks, groups, comm_groups)

    def group(self, rt, nd):
        name = str(nd.attrs.get("pg_name", "") or "")
        if name in ("", "0") and name not in self.groups:
            return "0", list(range(self.n))
        if name not in self.groups:
            raise ChakraError("node %d names an unknown communicator group" % nd.id, rt.path, value=name)
        members = self.groups[name]
        bad = [r for r in members if r >= self.n]
        if bad:
            raise ChakraError("group %s names rank %d, the trace has %d ranks" % (name, bad[0], self.n),
                              self.groups_path, value=bad[0])
        return name, members

    def _check(self):
        self.colls = {}                 # (group, k) -> {"type", "size", "members", "nodes": {rank: node id}}
        self.p2p = {}                   # (src, dst, tag, k) -> {"send": (rank, id), "recv": (rank, id), size}
        sends, recvs = defaultdict(list), defaultdict(list)
        for rt in self.ranks:
            count = defaultdict(int)
            for nd in rt.nodes:
                a = nd.attrs
                if nd.type == "COMM_COLL":
                    ct = a.get("comm_type")
                    name = COLL_TYPES.get(ct) if isinstance(ct, int) else None
                    if name not in OURS:
                        raise ChakraError("node %d: collective type %s is not supported (%s)" % (
                            nd.id, name or ct, ", ".join(OURS)), rt.path, value=ct)
                    size = a.get("comm_size")
                    if not isinstance(size, int) or size < 0:
                        raise ChakraError("node %d: comm_size must be a non-negative integer" % nd.id, rt.path,
                                          value=size)
                    g, members = self.group(rt, nd)
                    if rt.rank not in members:
                        raise ChakraError("node %d: rank %d is not in its group %s" % (nd.id, rt.rank, g),
                                          rt.path, value=members)
                    k = count[g]
                    count[g] += 1
                    c = self.colls.setdefault((g, k), {"type": name, "size": size, "members": members,
                                                       "nodes": {}, "first": rt.path})
                    if c["type"] != name or c["size"] != size:
                        raise ChakraError("node %d: collective %d of group %s is %s of %d bytes here, %s of %d "
                                          "bytes in %s" % (nd.id, k, g, name, size, c["type"], c["size"],
                                                           c["first"]), rt.path, value=(name, size))
                    c["nodes"][rt.rank] = nd.id
                elif nd.type in ("COMM_SEND", "COMM_RECV"):
                    size = a.get("comm_size")
                    if not isinstance(size, int) or size < 0:
                        raise ChakraError("node %d: comm_size must be a non-negative integer" % nd.id, rt.path,
                                          value=size)
                    send = nd.type == "COMM_SEND"
                    src = a.get("comm_src", rt.rank if send else None)
                    dst = a.get("comm_dst", rt.rank if not send else None)
                    for what, v in (("comm_src", src), ("comm_dst", dst)):
                        if not isinstance(v, int) or not 0 <= v < self.n:
                            raise ChakraError("node %d: %s must be a rank of the trace" % (nd.id, what), rt.path,
                                              value=v)
                    if (src if send else dst) != rt.rank:
                        raise ChakraError("node %d: a %s must be on its %s rank" % (
                            nd.id, "send" if send else "receive", "source" if send else "destination"),
                                          rt.path, value=(src, dst))
                    tag = a.get("comm_tag", 0)
                    (sends if send else recvs)[(src, dst, tag)].append((rt.rank, nd.id, size, rt.path))
        for key in set(sends) | set(recvs):
            s, r = sends.get(key, []), recvs.get(key, [])
            if len(s) != len(r):
                src, dst, tag = key
                lone = (s or r)[min(len(s), len(r))]
                raise ChakraError("%s %d -> %d (tag %s) without its %s" % (
                    "send" if len(s) > len(r) else "receive", src, dst, tag,
                    "receive" if len(s) > len(r) else "send"), lone[3], value="node %d" % lone[1])
            for k, (a, b) in enumerate(zip(s, r)):
                if a[2] != b[2]:
                    raise ChakraError("send of %d bytes received as %d bytes" % (a[2], b[2]), b[3],
                                      value="node %d" % b[1])
                self.p2p[key + (k,)] = {"send": (a[0], a[1]), "recv": (b[0], b[1]), "size": a[2]}
        for (g, k), c in self.colls.items():
            missing = [r for r in c["members"] if r not in c["nodes"]]
            if missing:
                raise ChakraError("collective %d of group %s (%s, %d bytes) is not called by rank %d" % (
                    k, g, c["type"], c["size"], missing[0]), self.ranks[missing[0]].path, value=g)


# ---------------------------------------------------------------- running
class ChakraRun:
    """Run a ``ChakraTrace`` on ``net`` (rank r = host r).  ``start(on_done)``,
    then ``net.run()``; ``iteration_time`` is when the last node finished.
    ``records`` lists (rank, node id, name, type, start ps, end ps) per node."""

    def __init__(self, net, trace, gpus_per_server=8, nvlink_gbps=2400.0, nvlink_latency_us=1.0,
                 chunk_bytes=DEFAULT_CHUNK, max_inflight=DEFAULT_INFLIGHT, flops=None, gpu_offset=0,
                 resources="none", nccl_channels=None):
        if resources not in ("none", "astra"):
            raise WormholeError("resources must be none or astra", value=resources)
        # "astra": ASTRA-sim's HardwareResource rule -- per rank at most one compute node (GPU; a CPU
        # op has its own slot) and one collective or send at a time, ready nodes issued in id order
        self.resources = resources
        self.nccl_channels = check_channels(nccl_channels)     # rings' channels (None: one per local rank)
        self._busy = [dict() for _ in trace.ranks]
        self._ready = [[] for _ in trace.ranks]
        self.net = net
        self.tr = trace
        hosts = net.topology.hosts
        if gpu_offset + trace.n > len(hosts):
            raise ChakraError("the trace has %d ranks, the fabric %d hosts" % (trace.n, len(hosts)),
                              trace.ranks[0].path, value=trace.n)
        self.hosts = hosts[gpu_offset:gpu_offset + trace.n]
        meta = trace.ranks[0].meta
        gps = int(meta.get("wormhole_gpus_per_server", gpus_per_server))
        self.t = Transport(net, gps, float(meta.get("wormhole_nvlink_gbps", nvlink_gbps)),
                           int(meta.get("wormhole_nvlink_latency_ps", nvlink_latency_us * 1e6)))
        self.chunk = int(chunk_bytes)
        self.inflight = int(max_inflight)
        self.flops = flops
        self.records = []
        self.collectives = []           # (group, k, type, size, members, start ps, end ps)
        self.iteration_time = None
        self._left = sum(len(rt.nodes) for rt in trace.ranks)
        self._nodes = [{nd.id: nd for nd in rt.nodes} for rt in trace.ranks]
        self._waiting = [{nd.id: len(nd.deps) for nd in rt.nodes} for rt in trace.ranks]
        self._children = [defaultdict(list) for _ in trace.ranks]
        for r, rt in enumerate(trace.ranks):
            for nd in rt.nodes:
                for d in nd.deps:
                    self._children[r][d].append(nd.id)
        self._start = {}
        self._coll_of = {}
        for (g, k), c in trace.colls.items():
            for rank, nid in c["nodes"].items():
                self._coll_of[(rank, nid)] = (g, k)
        self._colls = {}
        self._p2p_of = {}
        for key, p in trace.p2p.items():
            self._p2p_of[p["send"]] = key
            self._p2p_of[p["recv"]] = key
        self._p2p = {}                  # key -> {"arrived": bool, "recv_issued": bool}

    def start(self, on_done=None):
        self.on_done = on_done
        self._t0 = self.net.now
        if self._left == 0:
            self.iteration_time = 0
            self.net.schedule(0, self._end)
            return self
        for r, rt in enumerate(self.tr.ranks):
            for nd in rt.nodes:
                if not nd.deps:
                    self.net.schedule(0, lambda r=r, i=nd.id: self._ready_node(r, i))
        return self

    def _end(self):
        if self.on_done is not None:
            self.on_done(self)

    def _duration(self, r, nd):
        a = nd.attrs
        if isinstance(a.get("duration_ps"), int):
            return max(0, a["duration_ps"])
        if nd.duration_micros:
            return int(nd.duration_micros) * 1_000_000
        if self.flops and isinstance(a.get("num_ops"), int):
            return int(round(a["num_ops"] / self.flops * 1e12))
        return 0

    def _issue(self, r, nid):
        nd = self._nodes[r][nid]
        self._start[(r, nid)] = self.net.now
        ty = nd.type
        if ty in ("COMP", "MEM_LOAD", "MEM_STORE"):
            d = self._duration(r, nd)
            if d > 0:
                self.net.schedule(d, lambda: self._finish(r, nid))
            else:
                self._finish(r, nid)
        elif ty == "COMM_COLL":
            self._join(r, nid)
        elif ty == "COMM_SEND":
            key = self._p2p_of[(r, nid)]
            st = self._p2p.setdefault(key, {"arrived": False, "recv": False})
            p = self.tr.p2p[key]
            src, dst = key[0], key[1]

            def arrived(c, key=key, st=st, p=p):
                st["arrived"] = True
                self._finish(*p["send"])
                if st["recv"]:
                    self._finish(*p["recv"])
            SendRecv(self.t, [self.hosts[src], self.hosts[dst]], p["size"], on_done=arrived,
                     chunk_bytes=self.chunk, max_inflight=self.inflight).start()
        elif ty == "COMM_RECV":
            key = self._p2p_of[(r, nid)]
            st = self._p2p.setdefault(key, {"arrived": False, "recv": False})
            st["recv"] = True
            if st["arrived"]:
                self._finish(r, nid)
        else:                   # METADATA, INVALID
            self._finish(r, nid)

    def _join(self, r, nid):
        g, k = self._coll_of[(r, nid)]
        c = self.tr.colls[(g, k)]
        entry = self._colls.get((g, k))
        if entry is None:
            members = c["members"]

            def done(coll, g=g, k=k, c=c):
                self.collectives.append((g, k, c["type"], c["size"], list(c["members"]), coll.start_time,
                                         coll.end_time))
                for rank, node in sorted(c["nodes"].items()):
                    self._finish(rank, node)
            cls = COLLECTIVES[OURS[c["type"]]]
            coll = cls(self.t, [self.hosts[m] for m in members], c["size"], on_done=done, chunk_bytes=self.chunk,
                       max_inflight=self.inflight, **({"channels": self.nccl_channels} if cls.ring else {}))
            entry = self._colls[(g, k)] = coll
        entry.ready(c["members"].index(r))

    def _slot(self, nd):
        if nd.type == "COMP":
            return "cpu" if nd.attrs.get("is_cpu_op") is True else "gpu"
        if nd.type in ("COMM_COLL", "COMM_SEND"):
            return "comm"
        return None

    def _ready_node(self, r, nid):
        if self.resources == "none":
            self._issue(r, nid)
            return
        import bisect
        bisect.insort(self._ready[r], nid)
        self._pump(r)

    def _pump(self, r):
        ready, busy = self._ready[r], self._busy[r]
        i = 0
        while i < len(ready):
            nid = ready[i]
            slot = self._slot(self._nodes[r][nid])
            if slot is not None and slot in busy:
                i += 1
                continue
            ready.pop(i)
            if slot is not None:
                busy[slot] = nid
            self._issue(r, nid)
            i = 0                   # an issued node may have finished at once, freed its slot, changed the list

    def _finish(self, r, nid):
        if self.resources == "astra":
            busy = self._busy[r]
            for k, v in list(busy.items()):
                if v == nid:
                    del busy[k]
        nd = self._nodes[r][nid]
        self.records.append((r, nid, nd.name, nd.type, self._start[(r, nid)], self.net.now))
        self._left -= 1
        for ch in self._children[r].get(nid, ()):
            w = self._waiting[r]
            w[ch] -= 1
            if w[ch] == 0:
                self._ready_node(r, ch)
        if self.resources == "astra" and self._ready[r]:
            self._pump(r)
        if self._left == 0:
            self.iteration_time = self.net.now - self._t0
            self._end()

    def check_finished(self):
        """Raise ChakraError naming a rank whose nodes never ran (a dependency cycle or a wait on a
        collective or message that never came)."""
        if self._left == 0:
            return
        for r, w in enumerate(self._waiting):
            stuck = [nid for nid in w if (r, nid) not in self._start]
            if stuck:
                raise ChakraError("%d node(s) of rank %d never ran (a dependency cycle?)" % (len(stuck), r),
                                  self.tr.ranks[r].path, value="node %d" % stuck[0])
        raise ChakraError("the trace did not finish (a collective or a message never completed)",
                          self.tr.ranks[0].path)

    def summary(self):
        prefix = os.path.commonprefix([rt.path for rt in self.tr.ranks]).rstrip(".")
        return {"workload": "chakra:%s" % prefix, "model": "Chakra trace %s" % prefix, "tp": "-", "pp": "-",
                "dp": "-", "gpus": self.tr.n, "nodes": sum(len(rt.nodes) for rt in self.tr.ranks),
                "collectives": len(self.tr.colls), "messages_p2p": len(self.tr.p2p),
                "iteration_time_ps": self.iteration_time, "fabric_bytes": self.t.fabric_bytes,
                "nvlink_bytes": self.t.nvlink_bytes, "fabric_flows": self.t.fabric_flows}


def drive(net, done, step=100 * 1000 * 1000):
    """Run ``net`` until ``done()`` or nothing is left, in slices of ``step`` ps: a
    persistent connection's congestion-control timers (DCQCN's) keep the event
    heap busy after the last message, so ``net.run()`` alone would not return.
    Uses ``Network.peek()`` (None when nothing is left)."""
    while not done():
        nxt = net.peek()
        if nxt is None:
            return
        net.run(until=max(nxt, net.now) + step)


def run_chakra(net, prefix, gpus=None, comm_groups=None, **kw):
    """Load ``PREFIX.<r>.et`` (+ groups JSON), run it on ``net``, return the ChakraRun."""
    tr = ChakraTrace.load(prefix, gpus, comm_groups)
    finished = []
    run = ChakraRun(net, tr, **kw).start(lambda r: finished.append(True))
    drive(net, lambda: bool(finished))
    run.check_finished()
    return run


# ---------------------------------------------------------------- writing
def training_graph(job):
    """A ``TrainingJob``'s iteration as Chakra graphs: ({rank: [Node]}, {group id: [ranks]}).
    Ranks are the job's GPUs in order (rank i = ``job.gpu_ids[i]``)."""
    par = job.par
    rank_of = {g: i for i, g in enumerate(job.gpu_ids)}
    groups, gid = {}, {}

    def group(members):
        key = tuple(members)
        if key not in gid:
            gid[key] = str(len(gid) + 1)
            groups[gid[key]] = list(members)
        return gid[key]

    out = {}
    for p in range(par.pp):
        for d in range(par.dp):
            for t in range(par.tp):
                me = rank_of[job.gpu(p, d, t)]
                nodes = []

                def add(ty, name, deps, **attrs):
                    nd = Node(len(nodes), name, ty, data_deps=[x for x in deps if x is not None])
                    nd.attrs.update(attrs)
                    if ty == "COMP":
                        nd.duration_micros = int(round(attrs["duration_ps"] / 1e6))
                    nodes.append(nd)
                    return nd.id
                prev = None
                acc = 0
                for kind, mb in job._ops(p):
                    if kind == "F" and p > 0:
                        prev = add("COMM_RECV", "recv_act_mb%d" % mb, [prev], comm_src=rank_of[job.gpu(p - 1, d, t)],
                                   comm_dst=me, comm_tag=2 * mb, comm_size=job.act_bytes // par.tp)
                    elif kind == "B" and p < par.pp - 1:
                        prev = add("COMM_RECV", "recv_grad_mb%d" % mb, [prev],
                                   comm_src=rank_of[job.gpu(p + 1, d, t)], comm_dst=me, comm_tag=2 * mb + 1,
                                   comm_size=job.act_bytes // par.tp)
                    segs = job._segments(p, kind, mb)
                    for si, s in enumerate(segs):
                        if s.kind in ("compute", "tp"):     # a run of compute blocks and TP collectives: one node
                            if si + 1 < len(segs) and segs[si + 1].kind in ("compute", "tp"):
                                acc += int(s.arg)
                                continue
                            if acc + s.arg > 0:
                                prev = add("COMP", "%s_mb%d_%d" % (kind, mb, si), [prev],
                                           duration_ps=int(acc + s.arg), is_cpu_op=False)
                            acc = 0
                        elif s.kind == "a2a":
                            grp = d // par.ep
                            members = [rank_of[job.gpu(p, x, t)] for x in range(grp * par.ep, (grp + 1) * par.ep)]
                            prev = add("COMM_COLL", "a2a_%s_mb%d_%d" % (kind, mb, si), [prev],
                                       comm_type=COLL_IDS["ALL_TO_ALL"], comm_size=int(job.a2a_bytes // par.tp),
                                       pg_name=group(members), is_cpu_op=False)
                        else:
                            nbytes = job.emb_bytes if s.arg == "emb" else job.buckets[s.arg][1]
                            if par.dp > 1 and nbytes > 0:
                                members = [rank_of[job.gpu(p, x, t)] for x in range(par.dp)]
                                add("COMM_COLL", "allreduce_bucket_%s" % s.arg, [prev],
                                    comm_type=COLL_IDS["ALL_REDUCE"], comm_size=int(nbytes),
                                    pg_name=group(members), is_cpu_op=False)
                    if kind == "F" and p < par.pp - 1:
                        add("COMM_SEND", "send_act_mb%d" % mb, [prev], comm_src=me,
                            comm_dst=rank_of[job.gpu(p + 1, d, t)], comm_tag=2 * mb,
                            comm_size=job.act_bytes // par.tp)
                    elif kind == "B" and p > 0:
                        add("COMM_SEND", "send_grad_mb%d" % mb, [prev], comm_src=me,
                            comm_dst=rank_of[job.gpu(p - 1, d, t)], comm_tag=2 * mb + 1,
                            comm_size=job.act_bytes // par.tp)
                out[me] = nodes
    return out, groups


def trace_outputs(prefix, n):
    return ["%s.%d.et" % (prefix, r) for r in range(n)] + [prefix + ".json"]


def _meta(job):
    return {"wormhole_model": job.m.name, "wormhole_gpus_per_server": int(job.gps),
            "wormhole_nvlink_gbps": float(job.t.nvlink_bps / 1e9),
            "wormhole_nvlink_latency_ps": int(job.t.nvlink_latency), "wormhole_chunk_bytes": int(job.chunk)}


def training_trace(job):
    """The ChakraTrace of a TrainingJob's iteration, in memory (as ``chakra_files`` writes it)."""
    graphs, groups = training_graph(job)
    meta = _meta(job)
    ranks = [RankTrace("<%s>.%d.et" % (job.m.name, r), r, VERSION, dict(meta, wormhole_rank=r), graphs[r])
             for r in range(len(job.gpu_ids))]
    return ChakraTrace(ranks, groups, "<%s>.json" % job.m.name)


def chakra_files(job, prefix, exact=True):
    """{path: bytes} of a TrainingJob written as Chakra: ``PREFIX.<r>.et`` and the
    communicator groups ``PREFIX.json``.  Compute nodes carry ``duration_micros``
    (what ASTRA-sim reads) and, unless ``exact=False``, our ``duration_ps``."""
    graphs, groups = training_graph(job)
    meta = _meta(job)
    if not exact:
        for nodes in graphs.values():
            for nd in nodes:
                nd.attrs.pop("duration_ps", None)
    files = {}
    for r in range(len(job.gpu_ids)):
        body = frame(encode_metadata(VERSION, dict(meta, wormhole_rank=r)))
        body += b"".join(frame(encode_node(nd)) for nd in graphs[r])
        files["%s.%d.et" % (prefix, r)] = body
    files[prefix + ".json"] = (json.dumps(groups, indent=1) + "\n").encode()
    return files


def write_training(job, prefix):
    """Write a TrainingJob as Chakra (all files or none); returns the paths."""
    from ..outputs import check_file, write_files
    files = chakra_files(job, prefix)
    for p in files:
        check_file(p, "Chakra output")
    write_files(files)
    return list(files)
