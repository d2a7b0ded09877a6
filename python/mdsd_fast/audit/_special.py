"""The few distribution functions the audit needs, in float64 (scipy is not a dependency).

Regularised incomplete gamma and beta functions by their series and continued fractions
(Lentz's method), accurate to ~1e-13 relative in the ranges the audit uses (degrees of freedom
up to a few thousand, binomial counts up to ~1e8). tests/audit/test_audit.py checks them against
direct sums.
"""

from __future__ import annotations

import math

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 100_000


def _lentz_step(a: float, b: float, c: float, d: float) -> tuple[float, float, float]:
    """One step of modified Lentz for the term a / (b + ...): the new c, 1 / d and their product,
    the factor the fraction's value is multiplied by (c and d kept off zero by _TINY)."""
    d = b + a * d
    d = _TINY if abs(d) < _TINY else d
    c = b + a / c
    c = _TINY if abs(c) < _TINY else c
    d = 1.0 / d
    return c, d, d * c


def _gamma_series(a: float, x: float) -> float:
    """P(a, x) by its power series (converges fast for x < a + 1)."""
    term = total = 1.0 / a
    ap = a
    for _ in range(_MAX_ITER):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_cf(a: float, x: float) -> float:
    """Q(a, x) by its continued fraction (converges fast for x >= a + 1)."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITER):
        an = -i * (i - a)
        b += 2.0
        c, d, delta = _lentz_step(an, b, c, d)
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def gamma_q(a: float, x: float) -> float:
    """Regularised upper incomplete gamma Q(a, x) = Pr[Gamma(a) > x]."""
    if x <= 0.0:
        return 1.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _gamma_series(a, x))
    return _gamma_cf(a, x)


def chi2_sf(x: float, df: int) -> float:
    """Pr[chi-square with ``df`` degrees of freedom > x]."""
    return gamma_q(0.5 * df, 0.5 * x)


def chi2_isf(alpha: float, df: int) -> float:
    """The x with chi2_sf(x, df) = alpha (bisection on the monotone survival function)."""
    lo, hi = 0.0, float(df) + 10.0
    while chi2_sf(hi, df) > alpha:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if chi2_sf(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def ncx2_sf(x: float, df: int, lam: float) -> float:
    """Pr[noncentral chi-square (df, noncentrality lam) > x], as the Poisson(lam / 2) mixture of
    central chi-squares with df + 2j degrees of freedom, summed over j within 12 standard
    deviations of lam / 2 (the neglected Poisson mass is below 1e-30)."""
    if lam <= 0.0:
        return chi2_sf(x, df)
    mu = 0.5 * lam
    spread = 12.0 * math.sqrt(mu) + 20.0
    j0, j1 = max(0, int(mu - spread)), int(mu + spread) + 1
    total = 0.0
    for j in range(j0, j1):
        weight = math.exp(-mu + j * math.log(mu) - math.lgamma(j + 1.0))
        total += weight * chi2_sf(x, df + 2 * j)
    return min(1.0, total)


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes' betacf)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = _TINY if abs(d) < _TINY else d
    d = 1.0 / d
    h = d
    for m in range(1, _MAX_ITER):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        c, d, delta = _lentz_step(aa, 1.0, c, d)
        h *= delta
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        c, d, delta = _lentz_step(aa, 1.0, c, d)
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def beta_i(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def binom_sf(k: int, n: int, p: float) -> float:
    """Pr[Binomial(n, p) >= k]."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return beta_i(float(k), float(n - k + 1), p)


def norm_sf(z: float) -> float:
    """Pr[standard normal > z]."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))
