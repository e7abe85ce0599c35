"""The reference simulator's random-stream sequence (ns-3.17 RngStreams,
MRG32k3a), computed exactly with integers: the jump matrices the kernel needs to
reproduce the reference's ECN marking draws stream by stream."""
M1 = 4294967087
M2 = 4294944443
A1 = ((0, 1, 0), (0, 0, 1), (M1 - 810728, 1403580, 0))
A2 = ((0, 1, 0), (0, 0, 1), (M2 - 1370589, 0, 527612))


def _matmul(a, b, m):
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)) for i in range(3))


def _matpow(a, n, m):
    r = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    while n:
        if n & 1:
            r = _matmul(r, a, m)
        a = _matmul(a, a, m)
        n >>= 1
    return r


def _matvec(a, v, m):
    return tuple(sum(a[i][k] * v[k] for k in range(3)) % m for i in range(3))


def _flat(a):
    return [x for row in a for x in row]


def stream_params(first_stream, seed=1, run=1):
    """Kernel parameters for draws from streams first_stream, first_stream+1, ..."""
    j1, j2 = _matpow(A1, 1 << 127, M1), _matpow(A2, 1 << 127, M2)
    b1 = _matvec(_matpow(j1, first_stream, M1), (seed,) * 3, M1)
    b2 = _matvec(_matpow(j2, first_stream, M2), (seed,) * 3, M2)
    return {"base": list(b1) + list(b2), "j1": _flat(j1), "j2": _flat(j2),
            "r1": _flat(_matpow(A1, run << 76, M1)), "r2": _flat(_matpow(A2, run << 76, M2))}


def first_draw(stream, seed=1, run=1):
    """First U(0,1) of a stream (pure Python; for tests)."""
    p = stream_params(stream, seed, run)
    s1 = _matvec(_matpow(A1, run << 76, M1), p["base"][:3], M1)
    s2 = _matvec(_matpow(A2, run << 76, M2), p["base"][3:], M2)
    p1 = (1403580 * s1[1] - 810728 * s1[0]) % M1
    p2 = (527612 * s2[2] - 1370589 * s2[0]) % M2
    return ((p1 - p2) if p1 > p2 else (p1 - p2 + M1)) / (M1 + 1.0)


def setup_streams(topo):
    """Streams the reference's set-up takes before the first ECN draw: 6 per node
    (its Internet stack and devices) plus 2.  Found by matching the reference's
    DCQCN runs draw for draw on stars of 3 to 9 hosts, a dumbbell, two
    leaf-spines and a k=4 fat-tree (4 to 36 nodes); links with a non-zero error
    rate add error-model streams that are not modelled here."""
    return 2 + 6 * topo.n_nodes
