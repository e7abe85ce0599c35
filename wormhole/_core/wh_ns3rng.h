/* Emulation of the reference simulator's random draws for ECN marking.
 *
 * The reference (ns-3.17) marks a packet between Kmin and Kmax by drawing
 * UniformVariable(0,1).GetValue() from a *new* random variable each time; each
 * new variable takes the next stream index of the global seed manager and
 * starts a fresh MRG32k3a stream (L'Ecuyer's RngStreams) at
 *     A^(stream * 2^127 + run * 2^76) * (seed, seed, seed, seed, seed, seed).
 * So the k-th draw of a run is the first output of stream base + k.  With the
 * jump matrices J = A^(2^127) and R = A^(run * 2^76) (computed once, exactly,
 * in Python) each draw costs two 3x3 matrix-vector products modulo m.  The
 * output formula below is the standard MRG32k3a combination.
 */
#ifndef WH_NS3RNG_H
#define WH_NS3RNG_H
#include <stdint.h>

typedef struct {
    uint64_t base[6];   /* state of the next stream before the run jump */
    uint64_t j1[9];     /* A1^(2^127) mod m1 */
    uint64_t j2[9];     /* A2^(2^127) mod m2 */
    uint64_t r1[9];     /* A1^(run * 2^76) mod m1 */
    uint64_t r2[9];     /* A2^(run * 2^76) mod m2 */
    int64_t draws;      /* streams consumed so far */
} WhNs3Rng;

static const uint64_t WH_M1 = 4294967087ULL;
static const uint64_t WH_M2 = 4294944443ULL;

static inline void wh_matvec(const uint64_t *a, const uint64_t *s, uint64_t *out, uint64_t m)
{
    int i;
    uint64_t x[3];
    for (i = 0; i < 3; i++) {
        unsigned __int128 v = (unsigned __int128)a[3 * i] * s[0] + (unsigned __int128)a[3 * i + 1] * s[1]
                            + (unsigned __int128)a[3 * i + 2] * s[2];
        x[i] = (uint64_t)(v % m);
    }
    out[0] = x[0]; out[1] = x[1]; out[2] = x[2];
}

/* First output of a new stream; advances to the next stream. */
static inline double wh_ns3_draw(WhNs3Rng *g)
{
    uint64_t s[6];
    double p1, p2;
    wh_matvec(g->r1, g->base, s, WH_M1);
    wh_matvec(g->r2, g->base + 3, s + 3, WH_M2);
    wh_matvec(g->j1, g->base, g->base, WH_M1);
    wh_matvec(g->j2, g->base + 3, g->base + 3, WH_M2);
    g->draws++;
    /* one MRG32k3a step from s */
    {
        int64_t t1 = (int64_t)(1403580ULL * s[1]) - (int64_t)(810728ULL * s[0]);
        int64_t t2 = (int64_t)(527612ULL * s[5]) - (int64_t)(1370589ULL * s[3]);
        t1 %= (int64_t)WH_M1; if (t1 < 0) t1 += WH_M1;
        t2 %= (int64_t)WH_M2; if (t2 < 0) t2 += WH_M2;
        p1 = (double)t1;
        p2 = (double)t2;
    }
    return (p1 > p2) ? (p1 - p2) * (1.0 / (4294967087.0 + 1.0)) : (p1 - p2 + 4294967087.0) * (1.0 / (4294967087.0 + 1.0));
}
#endif
