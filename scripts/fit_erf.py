"""Fits the coefficients of rlx's float32 erf (src/mlx/shim/kernel_exp.cpp, RLX_ERF_LANES) and checks
them in float32 arithmetic against Python's math.erf / math.erfc (float64).

  |z| <= 1:       erf(z)      = z P(z^2)                      P of degree 6
  1 < |z| <= 10:  erfc(|z|)   = u exp(Q(u) - z^2),  u = 1/|z|   Q of degree 9 (the kernel clamps |z| at 12)

erfc(z) exp(z^2) z tends to 1/sqrt(pi) as z grows (Abramowitz and Stegun 7.1.23), so
Q(u) = log(erfc(z) z) + z^2 is smooth on [0.1, 1]; the tail form keeps erfc's relative accuracy
where 1 - erf(z) would cancel (Gelu's negative tail). Fit: least squares on Chebyshev nodes,
reweighted toward minimax (Lawson's iteration). Prints the coefficients as C++ initializers and
the worst errors (float32 Horner with fused multiply-adds, as the kernel evaluates it).

usage: .venv/bin/python scripts/fit_erf.py"""
import math

import numpy as np

f32 = np.float32


def fit(f, a, b, deg, n=4000, rounds=30):
    k = np.arange(n)
    x = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)
    y, w = f(x), np.ones(n)
    v = np.vander(x, deg + 1, increasing=True)
    for _ in range(rounds + 1):
        c = np.linalg.lstsq(v * w[:, None], y * w, rcond=None)[0]
        r = np.abs(v @ c - y) * w
        w = w * np.sqrt(r / r.max()) + 1e-12 * w
    return [f32(ci) for ci in c]


def horner(c, x):
    """c[0] + c[1] x + ... in float32 with one rounding per step (a fused multiply-add)."""
    acc = np.full_like(x, c[-1])
    for ck in c[-2::-1]:
        acc = (acc.astype(np.float64) * x + np.float64(ck)).astype(f32)
    return acc


erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)
p = fit(lambda t: erf(np.sqrt(t)) / np.sqrt(t), 1e-12, 1.0, 6)
q = fit(lambda u: np.log(erfc(1 / u) / u) + 1 / u**2, 0.1, 1.0, 9)

z = np.linspace(0, 1, 200001, dtype=f32)
small = z * horner(p, z * z)
ref = erf(z.astype(np.float64))
print("erf, |z| <= 1: max abs error %.3g, max rel error %.3g" % (np.abs(small - ref).max(), (np.abs(small - ref) / np.maximum(ref, 1e-300)).max()))
z = np.linspace(1, 9, 400001, dtype=f32)
u = (f32(1) / z).astype(f32)
e = (u * np.exp(horner(q, u).astype(np.float64) - (z * z).astype(f32))).astype(f32)
ref = erfc(z.astype(np.float64))
print("erfc, 1 <= z <= 9: max rel error %.3g (erf: max abs error %.3g)" % ((np.abs(e - ref) / ref).max(), np.abs(e - ref).max()))
for name, c in (("P", p), ("Q", q)):
    print(f"{name}: " + ", ".join(f"{float(ci):.9g}f" for ci in c))
