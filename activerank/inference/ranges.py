"""Keeping estimates and intervals inside the range of what they estimate.

A metric's per-query value lies in a known range ``[lo, hi]`` (nDCG, ERR, P@k
... in ``[0, 1]``; DCG in ``[0, inf)``), and so does its mean over queries; a
difference of two rankers lies in ``[lo - hi, hi - lo]``, a system's distance to
the mean of ``k`` systems in ``+-(hi - lo)(k - 1)/k``.  Difference (GREG) and
Horvitz-Thompson estimators are unbiased but not convex combinations of the
values, so on a few queries they can leave that range, and a Wald interval
``estimate +- c SE`` can reach past it.  Two constructions fix that without
costing coverage:

* a point estimate outside the range is moved to the nearest bound: it is then
  closer to every value inside the range, so its error never grows (the
  result's ``range_adjusted`` says so and ``unadjusted`` keeps the raw value);
* an interval is intersected with the range: the true value lies in the range,
  so an interval that covered it still does.  The interval is built around the
  (moved) point estimate: for a symmetric interval that contains the raw
  interval's part inside the range, so coverage can only rise.

Both change nothing when the estimate and interval are already inside.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["clip", "contrast_bounds", "relative_bounds", "trim"]

UNBOUNDED = (-math.inf, math.inf)


def contrast_bounds(bounds: tuple) -> tuple[float, float]:
    """Range of a difference of two means that each lie in ``bounds``."""
    lo, hi = bounds
    return lo - hi, hi - lo


def relative_bounds(bounds: tuple, k: int) -> tuple[float, float]:
    """Range of ``R_i - mean_l R_l`` over ``k`` systems whose means lie in ``bounds``."""
    lo, hi = bounds
    r = (hi - lo) * (k - 1) / k if math.isfinite(hi - lo) else math.inf
    return -r, r


def clip(value, bounds: tuple):
    """``value`` moved to the nearest end of ``bounds`` where it lies outside (NaN stays NaN)."""
    lo, hi = bounds
    if np.ndim(value) == 0:
        v = float(value)
        return v if math.isnan(v) else min(max(v, lo), hi)
    return np.clip(np.asarray(value, dtype=np.float64), lo, hi)


def trim(low, high, bounds: tuple):
    """The interval(s) ``[low, high]`` intersected with ``bounds``.

    An interval that misses the range entirely (possible only for an
    asymmetric interval around a point on the bound) becomes the nearest
    bound, a point: it covered no value of the range before either.
    """
    lo, hi = bounds
    a = np.maximum(np.asarray(low, dtype=np.float64), lo)
    b = np.minimum(np.asarray(high, dtype=np.float64), hi)
    empty = a > b
    if np.any(empty):
        end = np.where(np.asarray(low, dtype=np.float64) > hi, hi, lo)
        a, b = np.where(empty, end, a), np.where(empty, end, b)
    if np.ndim(low) == 0:
        return float(a), float(b)
    return a, b
