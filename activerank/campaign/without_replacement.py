"""Campaigns of query-level methods that sample without replacement (e.g. ``active_wor``).

The plan is the sample :func:`activerank.estimate` (and friends) with the same
pool, probabilities, budget and ``rng=seed`` would judge: the method's plug-in
(:class:`~activerank.design.kinds.query_wor.WithoutReplacementDesign`) draws one
budgeted sequential Poisson sample with the design's ``q`` as scores.  The
store keeps the sampled queries in selection order, their conditional
inclusion probabilities and the threshold, so the estimate never depends on
how a later activerank would draw.

Partial judgments.  The Horvitz--Thompson weights ``1 / pi`` describe the
whole sample; the queries annotators happen to finish first are not a sample
of this design (nor a prefix in selection order chosen independently of the
draw), so the estimate needs every sampled query judged and otherwise raises,
naming how many are missing.  The judgments stay stored.
"""

from __future__ import annotations

import numpy as np

from .._validation import sample_budget_iv
from ..design.without_replacement import WORSample

__all__ = ["estimate_without_replacement", "plan_without_replacement"]


def plan_without_replacement(design, budget: float, seed: int) -> WORSample:
    """The engine's sample of a without-replacement method for ``budget`` with ``rng=seed``.

    Raises
    ------
    ValueError
        The budget buys fewer than 2 queries outside the exactly known ones
        (no standard error could be computed).
    """
    budget = sample_budget_iv(budget, design.costs.cost, design.q)
    sample = design.method_spec.kind.draw_sample(design.q, design.costs.cost, budget, np.random.default_rng(seed))
    if sample.n < 2 and sample.threshold != np.inf:
        raise ValueError(
            f"`budget`={budget:g} buys {sample.n} quer{'y' if sample.n == 1 else 'ies'} of method "
            f"{design.method!r}: no standard error can be computed from fewer than 2; raise the budget.")
    return sample


def estimate_without_replacement(design, pool, sample: WORSample, labels: np.ndarray, *, ci: str = "auto"):
    """The engine's result for a fully judged without-replacement sample.

    Parameters
    ----------
    design : Design
    pool : Pool
    sample : WORSample
        The planned sample (selection order).
    labels : ndarray of shape (n_docs,)
        Grades of the judged rows (-1 elsewhere); every document the sampled
        queries need is judged.

    Returns
    -------
    EstimateResult, ComparisonResult, MultiComparisonResult or SystemRankingResult
        What :func:`activerank.estimate` (and friends) return for the same
        sample and grades.
    """
    from ..engine.core import estimate_sample

    return estimate_sample(design, pool, sample.budget, sample, labels, ci=ci)
