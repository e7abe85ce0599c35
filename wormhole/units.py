"""Units in one place.  Time is an integer number of picoseconds, sizes are
bytes, rates are bits per second.  Helpers turn human units into those:
``us(5)`` (a number of ps), or strings that carry their unit, ``"5us"``,
``"32MB"``, ``"100Gbps"`` (``parse_time``, ``parse_size``, ``parse_rate``).
``as_time``, ``as_bytes`` and ``as_rate`` take either form at the API
boundary and raise ``ApiError`` naming the argument."""
import math
import re

PS = 1
NS = 1000
US = 1000 * NS
MS = 1000 * US
S = 1000 * MS


def ps(x):
    return int(x)


def ns(x):
    return int(round(x * NS))


def us(x):
    return int(round(x * US))


def ms(x):
    return int(round(x * MS))


def seconds(x):
    return int(round(x * S))


def gbps(x):
    return int(round(x * 1e9))


def mbps(x):
    return int(round(x * 1e6))


def kb(x):
    return int(round(x * 1000))


def mb(x):
    return int(round(x * 1000 * 1000))


def to_us(t_ps):
    return t_ps / US


def ns3_fixed_point(value, factor):
    """The reference simulator's double -> integer conversion: the fraction of
    ``value`` scaled by 2^64 and truncated, times ``factor``, high word kept
    (ns-3.17 int64x64 arithmetic).  ``factor`` converts the value's unit to ns."""
    neg = value < 0
    v = -value if neg else value
    hi = math.floor(v)
    lo = int((v - hi) * 18446744073709551615.0)
    lo = min(lo, 2 ** 64 - 1)
    r = int(hi) * factor + ((lo * factor) >> 64)
    return -r if neg else r


_RATE_UNITS = {
    "bps": 1, "b/s": 1,
    "kbps": 10 ** 3, "kb/s": 10 ** 3, "kib/s": 1024,
    "mbps": 10 ** 6, "mb/s": 10 ** 6, "mib/s": 1024 ** 2,
    "gbps": 10 ** 9, "gb/s": 10 ** 9, "gib/s": 1024 ** 3,
    "tbps": 10 ** 12, "tb/s": 10 ** 12,
}
_BYTE_RATE_UNITS = {"Bps": 8, "B/s": 8, "KBps": 8000, "KB/s": 8000, "MBps": 8 * 10 ** 6,
                    "MB/s": 8 * 10 ** 6, "GBps": 8 * 10 ** 9, "GB/s": 8 * 10 ** 9}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")


def parse_rate(text):
    """'100Gbps', '100Gb/s', '50Mb/s', '1e9' (bps) -> integer bits per second.
    Raises ValueError on anything else."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if not math.isfinite(text):
            raise ValueError("rate is not finite: %r" % (text,))
        return int(text)
    m = _NUM.match(str(text))
    if not m:
        raise ValueError("not a rate: %r" % (text,))
    num, unit = float(m.group(1)), m.group(2)
    if not math.isfinite(num):
        raise ValueError("rate is not finite: %r" % (text,))
    if unit == "":
        mult = 1
    elif unit in _BYTE_RATE_UNITS:
        mult = _BYTE_RATE_UNITS[unit]
    elif unit.lower() in _RATE_UNITS:
        mult = _RATE_UNITS[unit.lower()]
    else:
        raise ValueError("unknown rate unit %r in %r" % (unit, text))
    return int(round(num * mult))


_TIME_FACTORS_NS = {"s": 10 ** 9, "ms": 10 ** 6, "us": 10 ** 3, "ns": 1}


def parse_delay_ns(text):
    """'0.001ms', '1000ns', '1us', '1s' -> integer nanoseconds, converted the way
    the reference simulator converts such strings.  Raises ValueError."""
    m = _NUM.match(str(text))
    if not m:
        raise ValueError("not a time: %r" % (text,))
    num, unit = float(m.group(1)), m.group(2).lower()
    if not math.isfinite(num) or num > 1e9:
        raise ValueError("time out of range: %r" % (text,))
    if unit == "":
        unit = "s"
    if unit not in _TIME_FACTORS_NS:
        raise ValueError("unknown time unit %r in %r" % (unit, text))
    return ns3_fixed_point(num, _TIME_FACTORS_NS[unit])


_TIME_PS = {"s": S, "ms": MS, "us": US, "ns": NS, "ps": PS}
_SIZE_UNITS = {"": 1, "k": 1000, "m": 1000 ** 2, "g": 1000 ** 3, "t": 1000 ** 4,
               "ki": 1024, "mi": 1024 ** 2, "gi": 1024 ** 3, "ti": 1024 ** 4}


def _split(text, what):
    m = _NUM.match(str(text))
    if not m:
        raise ValueError("not a %s: %r" % (what, text))
    num = float(m.group(1))
    if not math.isfinite(num):
        raise ValueError("%s is not finite: %r" % (what, text))
    return num, m.group(2)


def parse_time(text):
    """'5us', '1.5ms', '100ns', '2s', '7ps' -> integer picoseconds (a bare
    number is picoseconds).  Raises ValueError."""
    num, unit = _split(text, "time")
    factor = _TIME_PS.get(unit.lower() if unit else "ps")
    if factor is None:
        raise ValueError("unknown time unit %r in %r (s, ms, us, ns, ps)" % (unit, text))
    return int(round(num * factor))


def parse_size(text, whole=True):
    """'32MB' (10^6), '32MiB' (2^20), '4KB', '1e6', '1500B' -> integer bytes
    (``whole=False``: rounded to the nearest byte, for '1.6MiB').  Raises ValueError."""
    num, unit = _split(text, "size")
    u = unit.lower()
    if u in ("", "b", "byte", "bytes"):
        factor = 1
    elif unit.endswith("B") and u[:-1] in _SIZE_UNITS:
        factor = _SIZE_UNITS[u[:-1]]
    else:
        raise ValueError("unknown size unit %r in %r (B, KB, MB, GB, KiB, MiB, GiB)" % (unit, text))
    v = num * factor
    if not whole and math.isfinite(v):
        return int(round(v))
    if v != int(v):
        raise ValueError("not a whole number of bytes: %r" % (text,))
    return int(v)


def _number(value):
    import numbers
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _api_error(call, name, what, value):
    from .errors import ApiError
    return ApiError("%s: %s must be %s" % (call, name, what), argument=name, value=value)


def _whole(value, name, call, parse, what, example):
    """An integer argument: an int, an integral float (1e6) or a string with its unit (``parse``)."""
    if type(value) is int:          # the common case, first
        return value
    if isinstance(value, str):
        try:
            return parse(value)
        except ValueError as e:
            raise _api_error(call, name, "%s (or a string with a unit such as %r): %s" % (what, example, e), value)
    if _number(value):
        if not math.isfinite(value) or value != int(value):
            raise _api_error(call, name, "%s (give fractions with a unit: %r)" % (what, example), value)
        return int(value)
    raise _api_error(call, name, "%s (an int, or a string with a unit such as %r)" % (what, example), value)


def as_time(value, name, call, allow_none=False):
    """A time argument in integer ps: an int (ps), an integral float, or a
    string with its unit ('5us').  Negative times are refused."""
    if value is None and allow_none:
        return None
    t = _whole(value, name, call, parse_time, "a whole number of ps", "2.5us")
    if t < 0:
        raise _api_error(call, name, "a non-negative time", value)
    return t


def as_bytes(value, name, call):
    """A positive byte count: an int, an integral float (1e6) or a string with
    its unit ('32MB', '4KiB')."""
    n = _whole(value, name, call, parse_size, "a whole number of bytes", "1.5MB")
    if n <= 0:
        raise _api_error(call, name, "a positive number of bytes", value)
    if n >= 1 << 63:                    # (the kernel's and the message columns' int64)
        raise _api_error(call, name, "fewer than 2^63 bytes", value)
    return n


def as_rate(value, name, call):
    """A rate in integer bps: a number (bps) or a string ('100Gbps', '50Mb/s')."""
    if isinstance(value, bool) or not (isinstance(value, str) or _number(value)):
        raise _api_error(call, name, "a rate (bps, or a string such as '100Gbps')", value)
    try:
        r = parse_rate(value)
    except ValueError as e:
        raise _api_error(call, name, "a rate: %s" % e, value)
    if r <= 0:
        raise _api_error(call, name, "a positive rate", value)
    return r
