#!/usr/bin/env python3
"""Coefficients of the `p7` GeLU (crates/nn/src/gelu.rs, `P7_ERF` / `P7_TANH`).

GeLU(x) = x·S(x) with S(x) + S(-x) = 1 (S = Phi for the erf form, (1 + tanh(...))/2 for GPT-2's),
so GeLU(x) = ReLU(x) - g(|x|) with g(t) = t - GeLU(t) = t·S(-t), an analytic function that decays
to 0. `p7` evaluates ReLU(x) - Q(|x|) for |x| < r and ReLU(x) outside, Q a degree-d polynomial
fitted to g. Because g is analytic, ReLU(x) - g(|x|) = GeLU(x) whichever sign the (approximate)
comparison gives near 0, provided Q also fits g slightly left of 0: the fit is on
[-DELTA, r + DELTA], DELTA = 0.07 > 2^-4 (the comparisons ignore the bits below 2^-4).
Q minimises the max error there (Lawson's iteratively reweighted least squares towards the
minimax fit, on 8001 points); outside, the error is g(|x|) <= g(r).

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


DELTA = 0.07


def fit(f, deg, r, iters=400):
    t = np.linspace(-DELTA, r + DELTA, 8001)
    h = t - f(t)
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
        print(f"{name}: degree {deg}, range {r}: max error {e_in:.3e} on [-{DELTA}, r + {DELTA}], {e_tail:.3e} outside")
        print("    c: [" + ", ".join(f"{v:.17e}" for v in c) + "],")


if __name__ == "__main__":
    main()
