"""Data-parallel training (dist_dp) checked against numpy: runs `rlx launch -n 2 -- dist_dp --dump
DIR`, then recomputes the same SGD steps in float64 from the dumped data and initial params and
compares every step's mean loss and averaged gradients and the final params (rtol 1e-4, atol 1e-6).

usage: dp_numpy.py RLX DIST_DP OUTDIR
"""
import os
import subprocess
import sys

import numpy as np

STEPS, LR = 4, 0.5


def main():
    rlx, prog, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    r = subprocess.run([rlx, "launch", "-n", "2", "--", prog, "--steps", str(STEPS), "--dump", out],
                       capture_output=True, text=True, timeout=150)
    print(r.stdout + r.stderr)
    if r.returncode:
        return 1
    ld = lambda n: np.load(os.path.join(out, n + ".npy"))
    x, labels = ld("x").astype(np.float64), ld("labels")
    p = {k: ld(k).astype(np.float64) for k in ("W1", "b1", "W2", "b2")}
    B = x.shape[0]
    bad = 0

    def check(name, got, want):
        nonlocal bad
        err = np.max(np.abs(got - want))
        ok = np.allclose(got, want, rtol=1e-4, atol=1e-6)
        print(f"{name}: max |rlx - numpy| {err:.3g} {'ok' if ok else 'MISMATCH'}")
        bad += not ok

    for s in range(STEPS):
        h = x @ p["W1"] + p["b1"]
        a = np.tanh(h)
        z = a @ p["W2"] + p["b2"]
        z = z - z.max(axis=1, keepdims=True)
        prob = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        loss = -np.log(prob[np.arange(B), labels]).mean()
        dz = prob.copy()
        dz[np.arange(B), labels] -= 1
        dz /= B
        g = {"W2": a.T @ dz, "b2": dz.sum(0)}
        dh = (dz @ p["W2"].T) * (1 - a * a)
        g["W1"], g["b1"] = x.T @ dh, dh.sum(0)
        check(f"step {s} loss", ld(f"loss_{s}"), loss)
        for k in g:
            check(f"step {s} g{k}", ld(f"g{k}_{s}"), g[k])
            p[k] = p[k] - LR * g[k]
    for k in p:
        check(f"final {k}", ld(f"{k}_{STEPS}"), p[k])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
