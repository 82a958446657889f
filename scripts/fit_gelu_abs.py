#!/usr/bin/env python3
"""Coefficients of the `p7` GeLU (crates/nn/src/gelu.rs, `P7_ERF` / `P7_TANH`).

GeLU(x) = 0.5 x + h(|x|) with h(t) = GeLU(t) - 0.5 t (h is even in x because x*erf(x/sqrt 2) is);
`p7` evaluates 0.5 x + P(|x|) for |x| < r with a degree-d polynomial P, x for x >= r and 0 for
x < -r (BOLT's P4 structure, at a higher degree). P minimises the max error on [0, r] (Lawson's
iteratively reweighted least squares towards the minimax fit, on 8001 points); the error
outside is |GeLU(±r)| - r or so, i.e. t·Phi(-t) at t = r.

Usage: python3 scripts/fit_gelu_abs.py [DEGREE] [RANGE]   (defaults 7, 4.0; needs numpy)
Prints the coefficients c0..cd for the erf form (BERT's `gelu`) and GPT-2's tanh form, and the
max error of each on [-r, r] and in the tails.
"""
import math
import sys

import numpy as np


def gelu_erf(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def gelu_tanh(x):
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x**3)))


def fit(f, deg, r, iters=400):
    t = np.linspace(0.0, r, 8001)
    h = f(t) - 0.5 * t
    a = np.vstack([t**k for k in range(deg + 1)]).T
    w = np.ones_like(t)
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(a * sw[:, None], h * sw, rcond=None)
        e = np.abs(a @ c - h)
        w = w * e + 1e-300
        w /= w.sum()
    return c, float(np.max(np.abs(a @ c - h)))


def main():
    deg = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    r = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    for name, f in (("erf", gelu_erf), ("tanh", gelu_tanh)):
        c, e_in = fit(f, deg, r)
        tail = np.linspace(r, 40.0, 4001)
        e_tail = max(np.max(np.abs(f(-tail))), np.max(np.abs(f(tail) - tail)))
        print(f"{name}: degree {deg}, range {r}: max error {e_in:.3e} on [-r, r], {e_tail:.3e} outside")
        print("    c: [" + ", ".join(f"{v:.17e}" for v in c) + "],")


if __name__ == "__main__":
    main()
