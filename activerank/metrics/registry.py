"""Ranking metrics as small declarative specs in one registry.

A metric string such as ``"dcg@10"``, ``"ERR@20"`` or ``"err"`` is parsed into a
:class:`Metric` (name + cutoff).  Each registered metric belongs to a *family*
that the moment kernels know how to handle exactly:

``additive``
    ``L = sum_i d(i) g(y_i)`` -- DCG: ``g(y) = 2**y - 1``, ``d(i) = 1/log2(i + 1)``
    for 1-based rank ``i``.
``cascade``
    ``L = sum_i c(i) R(y_i) prod_{j<i} (1 - R(y_j))`` -- ERR (Chapelle et al.
    2009): ``R(y) = (2**y - 1) / 2**ymax``, ``c(i) = 1/i``.  ``ymax`` is the top
    grade of the label *scale*, not the largest label observed.
``normalized``
    ``nDCG = DCG / ideal DCG``; values only (its normalizer depends on the
    unknown labels, so it has no exact moments here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._validation import k_iv

__all__ = ["Metric", "MetricDef", "METRICS", "parse_metric"]


def _exp_gain(grades, ymax):
    return np.exp2(grades) - 1.0


def _err_relevance(grades, ymax):
    return (np.exp2(grades) - 1.0) / 2.0**ymax


def _log_discount(positions):
    return 1.0 / np.log2(positions + 2.0)


def _reciprocal_rank(positions):
    return 1.0 / (positions + 1.0)


@dataclass(frozen=True)
class MetricDef:
    """Declarative definition of a metric family member.

    ``gain(grades, ymax)`` maps grades to per-item values and ``discount(pos)``
    maps 0-based positions to weights.
    """

    name: str
    family: str
    gain: Callable[[np.ndarray, int], np.ndarray]
    discount: Callable[[np.ndarray], np.ndarray]
    description: str

    @property
    def has_moments(self) -> bool:
        return self.family in ("additive", "cascade")


METRICS: dict[str, MetricDef] = {
    d.name: d
    for d in (
        MetricDef("dcg", "additive", _exp_gain, _log_discount,
                  "Discounted cumulative gain, gain 2^y - 1, discount 1/log2(rank + 1)."),
        MetricDef("err", "cascade", _err_relevance, _reciprocal_rank,
                  "Expected reciprocal rank, R(y) = (2^y - 1) / 2^ymax (Chapelle et al. 2009)."),
        MetricDef("ndcg", "normalized", _exp_gain, _log_discount,
                  "Normalized DCG (values only; no exact moments)."),
    )
}


@dataclass(frozen=True)
class Metric:
    """A parsed metric: registry entry plus cutoff ``k`` (``None`` = whole list).

    Examples
    --------
    >>> m = parse_metric("ERR@20")
    >>> m.name, m.k, str(m)
    ('err', 20, 'err@20')
    """

    name: str
    k: int | None

    @property
    def definition(self) -> MetricDef:
        return METRICS[self.name]

    @property
    def family(self) -> str:
        return self.definition.family

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


def _unknown(metric) -> ValueError:
    return ValueError(
        f"`metric` {metric!r} is not a known metric; expected one of "
        f"{sorted(METRICS)} optionally followed by '@k' (e.g. 'err@10')."
    )


def parse_metric(metric, k=None, *, require_moments: bool = False) -> Metric:
    """Parse ``"dcg@10"``-style strings (case-insensitive) into a :class:`Metric`.

    Parameters
    ----------
    metric : str or Metric
        Metric name, optionally with a cutoff suffix ``@k``.
    k : int or None, optional
        Cutoff; must agree with the suffix if both are given.
    require_moments : bool, default False
        Reject metrics whose exact moments are not available.

    Examples
    --------
    >>> parse_metric("dcg", k=5)
    Metric(name='dcg', k=5)
    >>> parse_metric("err")
    Metric(name='err', k=None)
    """
    k = k_iv(k)
    if isinstance(metric, Metric):
        name, suffix_k = metric.name, metric.k
    elif isinstance(metric, str):
        text = metric.strip().lower()
        name, sep, tail = text.partition("@")
        suffix_k = None
        if sep:
            if not tail.isdigit():
                raise _unknown(metric)
            suffix_k = k_iv(int(tail), name="k (from the metric string)")
        if name not in METRICS:
            raise _unknown(metric)
    else:
        raise TypeError(f"`metric` must be a string such as 'err@10', got {type(metric).__name__}.")
    if k is not None and suffix_k is not None and k != suffix_k:
        raise ValueError(f"`k`={k} contradicts the cutoff in `metric`={str(metric)!r}.")
    parsed = Metric(name, suffix_k if suffix_k is not None else k)
    if require_moments and not parsed.definition.has_moments:
        raise ValueError(
            f"`metric` {str(parsed)!r} has no exact moments; use one of "
            f"{sorted(n for n, d in METRICS.items() if d.has_moments)}."
        )
    return parsed
