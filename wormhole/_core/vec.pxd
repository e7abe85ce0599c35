# cython: language_level=3
"""Growable int32 arrays (pointer, count, capacity), shared by the kernel and the accelerator."""
from libc.stdlib cimport realloc
from libc.stdint cimport int32_t


cdef inline int _append(int32_t** arr, int32_t* n, int32_t* cap, int32_t v) noexcept nogil:
    """Append v to arr[0][0:n[0]] (growing it); -1 if memory ran out."""
    cdef int32_t* p
    if n[0] == cap[0]:
        p = <int32_t*>realloc(arr[0], (cap[0] * 2 + 4) * sizeof(int32_t))
        if p == NULL:
            return -1
        arr[0] = p
        cap[0] = cap[0] * 2 + 4
    arr[0][n[0]] = v
    n[0] += 1
    return 0


cdef inline int _grow(void** arr, size_t nbytes) noexcept nogil:
    """realloc arr[0] to nbytes, keeping the old block (and returning -1) if memory ran out."""
    cdef void* p = realloc(arr[0], nbytes)
    if p == NULL:
        return -1
    arr[0] = p
    return 0


cdef inline void _remove(int32_t* arr, int32_t* n, int32_t v) noexcept nogil:
    """Remove one entry equal to v (the last entry takes its place)."""
    cdef int32_t i
    for i in range(n[0]):
        if arr[i] == v:
            arr[i] = arr[n[0] - 1]
            n[0] -= 1
            return
