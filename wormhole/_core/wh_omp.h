/* OpenMP pieces the partitioned kernel (parallel.pxi) needs that Cython does not spell:
 * a barrier of the enclosing parallel region and an atomic ticket counter. */
#ifndef WH_OMP_H
#define WH_OMP_H
#include <stdint.h>

static inline void wh_omp_barrier(void)
{
#ifdef _OPENMP
    _Pragma("omp barrier")
#endif
}

/* the counter's value before adding one */
static inline int64_t wh_ticket(int64_t *counter)
{
    return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* *flag moved from `from` to `to` by this call (1), or it did not hold `from` (0):
 * of the threads that try the same move, one succeeds */
static inline int wh_claim(int64_t *flag, int64_t from, int64_t to)
{
    return __atomic_compare_exchange_n(flag, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}
#endif
