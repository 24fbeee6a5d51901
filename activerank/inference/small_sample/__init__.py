"""Small-sample standard errors and intervals that count distinct queries.

Budgeted runs draw queries with replacement and judge a query once: a repeat
is free, so a run keeps drawing repeats until the next *new* query would
exceed the budget.  The estimators weight a query by its multiplicity,

``R_hat = sum_c a_c / sum_c b_c``,  ``a_c = sum_{j in c} w_j v_j``,  ``b_c = sum_{j in c} w_j``

over the ``d`` distinct queries ``c`` (clusters of draws).  Repeats add no
information about the pool, but they are part of the with-replacement
design: the per-draw delta-method variance (``n/(n-1) sum_j w_j^2 (v_j -
R_hat)^2 / (sum w)^2``, :func:`activerank.inference.estimators.snis`) is the
estimator's variance (measured SE/SD 0.99 where queries repeat), while the
cluster variance, which treats each distinct query with its multiplicity as
one unit, over-states it there (SE/SD 1.32, coverage 0.98-1.00).  What
repeats do not add is *stability* of the variance estimate: it is a sum of
``d`` distinct terms weighted by their multiplicities ``k_c``.  Hence:

* ``ci="t_draws"`` (``"auto"``): the per-draw variance with Student-t
  quantiles whose degrees of freedom are Kish's effective number of distinct
  queries ``n^2 / sum_c k_c^2`` minus one (the Satterthwaite degrees of
  freedom of that weighted sum; :func:`kish_distinct`) -- equal to ``"t"``
  when no query repeats;
* ``ci="t"``: the **cluster (query-level) variance**
  ``SE^2 = d/(d-1) sum_c (a_c - R_hat b_c)^2 / (sum_c b_c)^2`` -- the
  sandwich variance with the distinct queries as units -- and ``d - 1``
  degrees of freedom (conservative where queries repeat);
* a **studentized bootstrap over distinct queries** (``ci="bootstrap"``):
  resample the ``d`` clusters (each with its multiplicity and weights),
  recompute ``R_hat*`` and its cluster SE, and use the quantiles of
  ``(R_hat* - R_hat) / SE*`` (:func:`bootstrap_pivots`): asymmetric, it
  corrects for skewness, but it sees only the sample;
* a **Fieller** interval for the ratio ``sum a / sum b`` (``ci="fieller"``),
  which also carries the noise of the denominator (the weights);
* ``ci="normal"``: the previous behaviour, per-draw SE and ``z`` (kept for
  comparison and for the anytime sequences, whose terms are draws).

**Model-moderated variance.**  On heavy-tailed pools (an index update where
most queries have a difference of exactly 0 and a few a large one) a small
sample often holds none of the rare large values: its spread is near zero
and no interval computed from the sample alone can cover (measured 0.58-0.68
at 5-10 queries, passive sampling).  The relevance model predicts the
design's variance (:func:`predicted_variance`: ``sum p^2/q E_theta[(L - R)^2 |
x]``, the quantity the sampling distribution ``q*`` is built from), and
``ci="t"`` pools it with the sample variance as ``prior_dof`` (default 2)
pseudo degrees of freedom, ``SE^2 = (2 SE_model^2 + (d-1) SE^2) / (d + 1)``,
keeping ``d - 1`` degrees of freedom for the quantile (``"t_draws"`` the same
with its own degrees of freedom and ``SE_model^2 = V / n``).  Its weight fades as
``2 / (d + 1)``; a model that over- or under-states the variance by a factor
2 moves the SE at ``d = 20`` by less than 5%.

The same kernel serves a single run (1-d inputs) and a batch of Monte-Carlo
repetitions on draw prefixes (2-d inputs plus ``stops``, as in
:mod:`activerank.design.draws`), so the coverage benchmark runs the
exact code a user runs.  Every estimator whose point estimate is a ratio of
cluster sums fits: a single ranker, a difference of two rankers (values =
per-query differences), each of ``k`` contrasts (:func:`contrast_intervals`),
and the cross-fitted model-assisted estimator
(:mod:`activerank.inference.crossfit`, which passes its adjusted cluster
numerators).

Which interval by default (``ci="auto"``): the choice was made by measured
coverage on MQ2008 and OHSUMED (``benchmarks/interval_coverage.py``, results in
``benchmarks/results/coverage/``): see :data:`AUTO_RULE`.

The package's modules: :mod:`.kinds` (the interval kinds, their defaults and
result types, the ``t`` quantile), :mod:`.clusters` (distinct-query slots and
sums, Kish's effective number, the effective number of queries carrying a
Horvitz-Thompson variance), :mod:`.bootstrap` (studentized and BCa cluster
bootstraps), :mod:`.prior` (the model's predicted variance and how it is
pooled), :mod:`.ratio` (:func:`ratio_intervals`, the kernel) and
:mod:`.snis_intervals` (one run, runs on draw prefixes, ``k`` contrasts).
"""

from .bootstrap import BootstrapPivots, bootstrap_pivots, pivot_quantiles
from .clusters import ClusterSums, cluster_dof, cluster_slots, cluster_sums, effective_clusters, kish_distinct
from .kinds import (
    AUTO_RULE,
    CI_KINDS,
    DEFAULT_N_BOOT,
    DEFAULT_PRIOR_DOF,
    MEASURED_ALTERNATIVES,
    MIN_RELIABLE_DISTINCT,
    MIN_RELIABLE_DISTINCT_NO_PRIOR,
    MODERATED,
    BatchIntervals,
    FewDistinctQueriesWarning,
    IntervalEstimate,
    TooFewQueriesError,
    critical_value,
    resolve_ci,
)
from .prior import PredictedVariance, predicted_variance
from .ratio import ratio_intervals
from .snis_intervals import ContrastIntervals, contrast_intervals, snis_interval, snis_intervals_prefix

__all__ = [
    "AUTO_RULE",
    "CI_KINDS",
    "FewDistinctQueriesWarning",
    "TooFewQueriesError",
    "IntervalEstimate",
    "BatchIntervals",
    "BootstrapPivots",
    "ClusterSums",
    "ContrastIntervals",
    "PredictedVariance",
    "predicted_variance",
    "bootstrap_pivots",
    "cluster_slots",
    "kish_distinct",
    "effective_clusters",
    "cluster_dof",
    "cluster_sums",
    "resolve_ci",
    "ratio_intervals",
    "snis_interval",
    "snis_intervals_prefix",
    "contrast_intervals",
    "critical_value",
]
