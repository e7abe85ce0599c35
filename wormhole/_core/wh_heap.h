/* The event heap's comparison under KEY_INSERTION (heap.pxd).
 *
 * There every tie key has ts = 0, so an event's place is (t, seq): compared as
 * one signed 128-bit number, t in the high half (signed) and seq in the low half
 * (unsigned), the order is lexicographic and the compiler emits a compare and a
 * subtract-with-borrow instead of two dependent branches.  The sift loops use the
 * 0/1 result as an index step (no branch on which child is smaller).
 */
#ifndef WH_HEAP_H
#define WH_HEAP_H
#include <stdint.h>

static inline int wh_key_lt(int64_t t1, uint64_t q1, int64_t t2, uint64_t q2)
{
    __int128 a = ((__int128)t1 << 64) | (__int128)q1;
    __int128 b = ((__int128)t2 << 64) | (__int128)q2;
    return a < b;
}

/* Index of the lowest set bit of a non-zero word (the calendar's bucket bitmap). */
static inline int wh_ctz64(uint64_t x)
{
    return __builtin_ctzll(x);
}

#endif
