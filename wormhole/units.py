"""Units in one place.  Time is an integer number of picoseconds, sizes are
bytes, rates are bits per second.  Helpers turn human units into those."""
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
