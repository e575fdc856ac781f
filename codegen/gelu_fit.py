#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The coefficients of spmma's f32 GELU (include/spmma/detail/epilogue.hpp, gelu_f32).

GELU(x) = x·Φ(x), Φ(x) = erfc(−x/√2)/2. For z = |x|/√2 the epilogue writes
    erfc(z) = t·exp(−z² + P(y)),   t = 2/(2 + z),   y = (z − C)/(z + C),
so that −z² = −x²/2 enters the exponential exactly (as the two-part product x·x) and P, a
polynomial on y ∈ [−1, y(15/√2)], carries only the slowly varying rest. This script fits P by
least squares on Chebyshev nodes, rounding the coefficients to f32 one at a time from the
highest and refitting the lower ones, and prints them with the fit's worst absolute error (an
absolute error ε in P is a relative error ε in erfc). C = 1.5 and degree 13 gave the smallest
error of C ∈ {1.5, 2, 2.5, 3, 4} × degree 10..13 (1.4e-8, under half an ulp of P's values).
Run: python3 codegen/gelu_fit.py (numpy; math.erfc as the reference).
"""
import math

import numpy as np

C, DEG = 1.5, 13
ZMAX = 15 / math.sqrt(2)  # |x| <= 15: beyond it GELU is x or -0 in f32
YMAX = (ZMAX - C) / (ZMAX + C)


def p_exact(z):
    return math.log(math.erfc(z) * (2 + z) / 2) + z * z


ys = (-np.cos(np.linspace(0, math.pi, 4000)) + 1) / 2 * (YMAX + 1) - 1
f = np.array([p_exact(C * (1 + y) / (1 - y)) for y in ys])
V = np.vander(ys, DEG + 1)
coef = []
for i in range(DEG + 1):
    rest = f - (V[:, :i] @ np.array(coef) if coef else 0)
    sol = np.linalg.lstsq(V[:, i:], rest, rcond=None)[0]
    coef.append(float(np.float32(sol[0])))
yy = np.linspace(-1, YMAX, 20001)
err = max(abs(np.polyval(coef, yy) - np.array([p_exact(C * (1 + y) / (1 - y)) for y in yy])))
print(f"// C = {C}, degree {DEG}, worst |error| of P on [-1, {YMAX:.4f}]: {err:.2e}")
print("constexpr float kGeluP[] = {" + ", ".join(f"{np.float32(c).item():.9e}f" for c in coef) + "};  // highest first")
