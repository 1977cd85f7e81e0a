#!/usr/bin/env python3
"""Winograd F(m, 3) at chosen points, exactly (fractions), for planning the transform domains
(docs/kernels.md, "Tiles of 6"): the matrices, how a smaller tile lives inside a larger one's
domain, what each tiling of a side costs, and (with numpy) the float32 error on layer shapes.

A smaller F(m', 3) whose points are a subset of F(m, 3)'s takes the larger one's filter
transform U at those slots: its rows of G differ from the larger one's by a factor per point,
which its input transform takes back (BT's rows divided by it). That is how the half tiles of
ops/winograd_f4_matrices.h (BT2H: F(2) in F(4)'s slots 0, 1, 2, 5) multiply by F(4)'s U (there
slot 5's sign is flipped in both BT2H and AT2H, which leaves their products the same).

Usage: tools/winograd_points.py [--error]
  prints F(2), F(4) and F(6)'s matrices (A^T, G, B^T; G normalised as Lavin and Gray's, so
  F(4)'s are ops/winograd_f4_matrices.h's), the smaller tiles inside F(4)'s and F(6)'s
  domains (slots, factors, B^T divided by them), the transform-domain points per side of each
  tiling of the bench jobs' sides; with --error (numpy: build/torch-venv/bin/python), each
  tiling's float32 error against a float64 direct convolution on the bench jobs' layers."""
import sys
from fractions import Fraction as Fr

HALF = Fr(1, 2)
POINTS = {2: [Fr(0), Fr(1), Fr(-1)],
          4: [Fr(0), Fr(1), Fr(-1), Fr(2), Fr(-2)],
          6: [Fr(0), Fr(1), Fr(-1), Fr(2), Fr(-2), HALF, -HALF]}


def solve(rows, rhs):
    """x with rows x = rhs, for a consistent system with one solution (Gauss-Jordan)."""
    n = len(rows[0])
    aug = [r[:] + [b] for r, b in zip(rows, rhs)]
    pivots, top = [], 0
    for c in range(n):
        p = next((i for i in range(top, len(aug)) if aug[i][c] != 0), None)
        if p is None:
            continue
        aug[top], aug[p] = aug[p], aug[top]
        aug[top] = [v / aug[top][c] for v in aug[top]]
        for i in range(len(aug)):
            if i != top and aug[i][c] != 0:
                k = aug[i][c]
                aug[i] = [a - k * b for a, b in zip(aug[i], aug[top])]
        pivots.append(c)
        top += 1
    assert len(pivots) == n and all(r[-1] == 0 for r in aug[top:]), "no unique solution"
    x = [Fr(0)] * n
    for i, c in enumerate(pivots):
        x[c] = aug[i][-1]
    return x


def winograd(m, pts, r=3):
    """A^T (m x n), G (n x r), B^T (n x n) of F(m, r) at the finite points pts and infinity,
    G's rows scaled so that its first column's nonzero entries are positive at 0 (Lavin's)."""
    n = m + r - 1
    assert len(pts) == n - 1
    AT = [[p ** i for p in pts] + [Fr(int(i == m - 1))] for i in range(m)]
    G = []
    for j, a in enumerate(pts):
        f = Fr(1)
        for k, b in enumerate(pts):
            if k != j:
                f *= a - b
        G.append([a ** k / f for k in range(r)])
    G.append([Fr(0)] * (r - 1) + [Fr(1)])
    if G[0][0] < 0:   # Lavin's sign: flip point 0's row of G; B^T's row follows below
        G[0] = [-v for v in G[0]]
    # B^T from sum_j AT[i][j] G[j][k] BT[j][l] = [l == i + k] for every i, k, l
    rows, rhs = [], []
    for i in range(m):
        for k in range(r):
            for l in range(n):
                row = [Fr(0)] * (n * n)
                for j in range(n):
                    row[j * n + l] = AT[i][j] * G[j][k]
                rows.append(row)
                rhs.append(Fr(int(l == i + k)))
    x = solve(rows, rhs)
    return AT, G, [[x[j * n + l] for l in range(n)] for j in range(n)]


def inside(big, small):
    """F(small) in F(big)'s domain: its slots, the factors G_big = factor x G_small per slot,
    its A^T, and its B^T divided by the factors."""
    _, Gb, _ = winograd(big, POINTS[big])
    AT, G, BT = winograd(small, POINTS[small])
    slots = [POINTS[big].index(p) for p in POINTS[small]] + [big + 1]
    factors = []
    for j, s in enumerate(slots):
        ratios = {a / b for a, b in zip(Gb[s], G[j]) if b != 0}
        assert len(ratios) == 1 and all((a == 0) == (b == 0) for a, b in zip(Gb[s], G[j]))
        factors.append(ratios.pop())
    return slots, factors, AT, [[v / f for v in row] for row, f in zip(BT, factors)]


def tiling(side, m, smaller):
    """Tile sizes along a side: m's, then the smallest of smaller covering the rest."""
    sizes = []
    while side > 0:
        t = m if side >= m or not smaller else min([s for s in smaller if s >= side] or [m])
        sizes.append(t)
        side -= t
    return sizes


def show(name, matrix):
    print(name)
    for row in matrix:
        print("   " + " ".join(f"{str(v):>6}" for v in row))


def print_matrices():
    for m in (2, 4, 6):
        AT, G, BT = winograd(m, POINTS[m])
        print(f"== F({m}, 3) at points {[str(p) for p in POINTS[m]]} and infinity")
        show("A^T", AT), show("G", G), show("B^T", BT)
    for big, small in ((4, 2), (6, 4), (6, 2)):
        slots, factors, AT, BT = inside(big, small)
        print(f"== F({small}) in F({big})'s domain: slots {slots}, G_{big} = factor x G_{small}: "
              f"{[str(f) for f in factors]}")
        show("A^T", AT), show("B^T / factor", BT)


TILINGS = {"F(2)": (2, []), "F(4)": (4, []), "F(4)+F(2)": (4, [2]), "F(6)+F(4,2)": (6, [4, 2])}


def print_points():
    print("== transform-domain points per side (squared: products per sample and channel pair)")
    for side in (32, 28, 16, 14, 8, 7):
        row = []
        for name, (m, smaller) in TILINGS.items():
            sizes = tiling(side, m, smaller)
            row.append(f"{name} {'+'.join(map(str, sizes))}={sum(s + 2 for s in sizes)}")
        print(f"side {side:>2}: " + ", ".join(row))


def conv_error(np, side, c, f, rng):
    """float32 error of each tiling against float64 direct, one sample (relu'd input)."""
    x = np.zeros((c, side + 2, side + 2))
    x[:, 1:-1, 1:-1] = np.maximum(rng.standard_normal((c, side, side)), 0)
    w = rng.standard_normal((f, c, 3, 3)) * np.sqrt(2 / (9 * c))
    ref = np.zeros((f, side, side))
    for ky in range(3):
        for kx in range(3):
            ref += np.einsum("fc,cij->fij", w[:, :, ky, kx], x[:, ky:ky + side, kx:kx + side])
    def as32(matrix):
        return np.array([[float(v) for v in row] for row in matrix], dtype=np.float32)

    out = []
    for name, (m, smaller) in TILINGS.items():
        AT, G, BT = winograd(m, POINTS[m])
        family = {m: (as32(AT), as32(BT), list(range(m + 2)))}   # size: A^T, B^T, slots
        for s in smaller:
            slots, _, ATs, BTs = inside(m, s)
            family[s] = (as32(ATs), as32(BTs), slots)
        G32 = as32(G)
        U = np.einsum("pk,fckl,ql->fcpq", G32, w.astype(np.float32), G32)
        y = np.zeros((f, side, side), np.float32)
        y0 = 0
        for ty in tiling(side, m, smaller):
            ATy, BTy, sy = family[ty]
            x0 = 0
            for tx in tiling(side, m, smaller):
                ATx, BTx, sx = family[tx]
                d = x[:, y0:y0 + ty + 2, x0:x0 + tx + 2].astype(np.float32)
                d = np.pad(d, ((0, 0), (0, ty + 2 - d.shape[1]), (0, tx + 2 - d.shape[2])))
                V = np.einsum("pi,cij,qj->cpq", BTy, d, BTx)
                M = np.einsum("fcpq,cpq->fpq", U[:, :, sy][:, :, :, sx], V)
                Y = np.einsum("ip,fpq,jq->fij", ATy, M, ATx)
                h, wd = min(ty, side - y0), min(tx, side - x0)
                y[:, y0:y0 + h, x0:x0 + wd] = Y[:, :h, :wd]
                x0 += tx
            y0 += ty
        e = np.abs(y - ref)
        out.append(f"{name} {e.max() / np.abs(ref).max():.1e}")
    return out


def print_errors():
    try:
        import numpy as np
    except ImportError:
        sys.exit("winograd_points: --error needs numpy (build/torch-venv/bin/python has it)")
    rng = np.random.default_rng(1)
    print("== float32 error, largest |y - direct| over largest |direct|, one sample")
    for side, c, f in ((32, 32, 32), (16, 64, 64), (14, 64, 128), (8, 64, 128)):
        print(f"{side}x{side} {c}->{f}: " + ", ".join(conv_error(np, side, c, f, rng)))


if __name__ == "__main__":
    print_matrices()
    print_points()
    if "--error" in sys.argv[1:]:
        print_errors()
