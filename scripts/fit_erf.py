#!/usr/bin/env python3
"""Fits the rational approximation of erf in src/embed/gelu.rs and prints its coefficients.

erf(x) ~ x * P(x^2) / Q(x^2) on [0, 3.92] (beyond, erf rounds to 1 in f32), P and Q of degree 5,
Q's constant term 1. Linearised least squares (x P - erf Q = 0) over Chebyshev-spaced points,
reweighted 60 times towards the smallest largest error (Lawson's iteration, with 1/Q for the
linearisation). Prints the fit's largest error in float64, the coefficients rounded to f32, and
the largest error of the f32 evaluation (as the Rust code computes it) on a grid of 500,001
points in [0, 5].

Needs numpy only:
    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy
    /tmp/ref/bin/python scripts/fit_erf.py
"""

import math

import numpy as np

SATURATES = 3.92
DEGREE = 5


def fit(points=40001, iterations=60):
    k = np.arange(points)
    xs = (SATURATES / 2) * (1 - np.cos(np.pi * k / (points - 1)))
    erf = np.array([math.erf(x) for x in xs])
    t = xs * xs
    powers = t[:, None] ** np.arange(DEGREE + 1)
    system = np.hstack([xs[:, None] * powers, -(erf[:, None] * powers[:, 1:])])
    weights, q_values = np.ones_like(xs), np.ones_like(xs)
    for _ in range(iterations):
        scale = weights / q_values
        solution, *_ = np.linalg.lstsq(system * scale[:, None], erf * scale, rcond=None)
        p, q = solution[: DEGREE + 1], np.concatenate([[1.0], solution[DEGREE + 1 :]])
        q_values = np.polyval(q[::-1], t)
        error = xs * np.polyval(p[::-1], t) / q_values - erf
        weights = weights * np.abs(error) ** 0.3 + 1e-30
        weights /= weights.max()
    return p, q, np.abs(error).max()


def erf32(p, q, x):
    a = np.minimum(np.abs(x), np.float32(SATURATES))
    t = a * a
    pv, qv = np.full_like(a, p[-1]), np.full_like(a, q[-1])
    for c in p[-2::-1]:
        pv = pv * t + c
    for c in q[-2::-1]:
        qv = qv * t + c
    return np.copysign(np.minimum(np.float32(1), a * pv / qv), x)


def main():
    p, q, error = fit()
    p32, q32 = p.astype(np.float32), q.astype(np.float32)
    print(f"fit's largest error (float64): {error:.3g}")
    print("P:", ", ".join(repr(float(c)) for c in p32))
    print("Q:", ", ".join(repr(float(c)) for c in q32))
    grid = np.linspace(0, 5, 500001).astype(np.float32)
    exact = np.array([math.erf(float(x)) for x in grid])
    errors = np.abs(erf32(p32, q32, grid).astype(np.float64) - exact)
    print(f"f32 evaluation's largest error: {errors.max():.3g} at x = {grid[errors.argmax()]}")


if __name__ == "__main__":
    main()
