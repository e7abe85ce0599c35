import random
import struct

from wormhole._core.routing import ecmp_hash


def murmur3_x86_32(data, seed):
    """Independent textbook MurmurHash3 (x86, 32-bit) over bytes."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & 0xFFFFFFFF
    n = len(data) // 4
    for i in range(n):
        k = struct.unpack_from("<I", data, 4 * i)[0]
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = data[4 * n:]
    k = 0
    for i, b in enumerate(tail):
        k |= b << (8 * i)
    if tail:
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def test_known_vector():
    # published MurmurHash3_x86_32 vectors
    assert murmur3_x86_32(b"", 0) == 0
    assert murmur3_x86_32(b"", 1) == 0x514E28B7
    assert murmur3_x86_32(b"\x00\x00\x00\x00", 0) == 0x2362F9DE


def test_ecmp_hash_is_murmur3_of_the_12_byte_key():
    rnd = random.Random(7)
    for _ in range(500):
        w = [rnd.getrandbits(32) for _ in range(3)]
        seed = rnd.randrange(0, 2000)
        key = struct.pack("<III", *w)
        assert ecmp_hash(w[0], w[1], w[2], seed) == murmur3_x86_32(key, seed)
