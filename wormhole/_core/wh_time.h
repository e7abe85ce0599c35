/* Small C helpers for the kernel that Cython cannot express directly.
 *
 * wh_ns3_seconds_to_ns: the reference simulator (ns-3.17, nanosecond
 * resolution) turns a time given in seconds as a double into its integer
 * clock through a 64.64 fixed-point number: the fraction is scaled by
 * 2^64 and truncated, multiplied by 10^9 and the high word kept.  Tx times
 * (bytes * 8 / bps) go through the same path, so a 1048-byte frame at
 * 100 Gb/s lasts 83 ns there, not 83.84.  Reproducing the truncation
 * bit for bit is what lets per-flow FCTs be compared exactly.
 */
#ifndef WH_TIME_H
#define WH_TIME_H
#include <stdint.h>
#include <math.h>

static inline int64_t wh_ns3_seconds_to_ns(double v)
{
    int neg = v < 0;
    double a = neg ? -v : v;
    double hi = floor(a);
    double lo = (a - hi) * 18446744073709551615.0;
    uint64_t lo64 = lo >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)lo;
    unsigned __int128 mid = (unsigned __int128)lo64 * 1000000000ULL;
    int64_t r = (int64_t)hi * 1000000000LL + (int64_t)(mid >> 64);
    return neg ? -r : r;
}

/* Serialisation time of `bytes` at `bps` in picoseconds.
 * quantum_ps == 1000 reproduces the reference (truncated nanoseconds);
 * quantum_ps == 1 gives the exact time truncated to the picosecond. */
static inline int64_t wh_tx_time_ps(int64_t bytes, int64_t bps, int64_t quantum_ps)
{
    if (quantum_ps == 1000)
        return wh_ns3_seconds_to_ns((double)bytes * 8.0 / (double)bps) * 1000;
    unsigned __int128 num = (unsigned __int128)bytes * 8ULL * 1000000000000ULL;
    int64_t ps = (int64_t)(num / (unsigned __int128)bps);
    if (quantum_ps > 1)
        ps -= ps % quantum_ps;
    return ps;
}

/* a * b / c (floor, a, b >= 0, c > 0) without the int64 overflow of a * b: a window of 1.8 MB at
 * 7.2 Tb/s (NVLink) is 1.3e19, past INT64_MAX; below 2^63 the result equals the plain product's. */
static inline int64_t wh_muldiv(int64_t a, int64_t b, int64_t c)
{
    return (int64_t)(((unsigned __int128)(uint64_t)a * (uint64_t)b) / (uint64_t)c);
}

/* MurmurHash3 (x86, 32-bit) over 12 bytes given as three little-endian
 * words: the ECMP hash of the reference switch (seeded per switch). */
static inline uint32_t wh_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t wh_ecmp_hash3(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed)
{
    uint32_t h = seed, k, words[3] = {w0, w1, w2};
    int i;
    for (i = 0; i < 3; i++) {
        k = words[i];
        k *= 0xcc9e2d51u;
        k = wh_rotl32(k, 15);
        k *= 0x1b873593u;
        h ^= k;
        h = wh_rotl32(h, 13);
        h = h * 5u + 0xe6546b64u;
    }
    h ^= 12u;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* splitmix64: the simulation's own seeded generator (ECN marks, link
 * errors).  State lives in the simulation, never in a global. */
static inline uint64_t wh_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline double wh_rng_uniform(uint64_t *state)
{
    return (double)(wh_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}
/* Ask the cache for the line at p ahead of its use (the next event's packet and port,
 * kernel.pyx run_loop): a hint, no effect on results. */
static inline void wh_prefetch(const void* p)
{
    __builtin_prefetch(p, 1, 3);
}

#endif
