"""Targets: *what* is estimated.

Every target is a set of linear contrasts ``theta = A R`` of the mean metrics
``R_i = sum_x p(x) L_i(x)`` of ``s`` rankings:

=============================  =====  ======================================
target                         ``s``  contrasts ``A``
=============================  =====  ======================================
:class:`MeanTarget`            1      ``[1]``: one ranker's mean metric
:class:`DifferenceTarget`      2      ``[1, -1]``: ``R_a - R_b``
:class:`BaselineTarget`        m + 1  ``[I_m | -1]``: each candidate minus the baseline
:class:`RankingTarget`         k      ``I - 1/k``: each system minus the mean system
=============================  =====  ======================================

A target knows, per query, what judging costs (the union of the rankings'
top-k documents, :meth:`Target.documents`), what the relevance model predicts
(:meth:`Target.predict`: the per-query means of the contrasts, and the sums of
their variances and expected squared errors that the sampling distribution
needs), and how labels become per-query values (:meth:`Target.values`).  The
sampling-distribution arithmetic (Sawade et al. 2012, Derivation 1) lives in
:mod:`activerank.design.sampling`; for several contrasts the optimal ``q``
minimizes the *sum* of their variances (Schnabel et al. 2016).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._validation import JUDGE_MODES
from ..metrics.approximate import DEFAULT_N_SAMPLES, _mc_pair, _mc_single, judged_documents
from ..metrics.moments import _moments, _pair_moments
from ..metrics.registry import Metric
from ..metrics.values import label_matrix_values
from ..ragged import Rankings
from .cancellation import ChangeSet, changeable_documents
from .sampling import expected_squared_error

# Monte-Carlo moments (metrics without exact ones) are part of the design: seeded with a constant so
# the design is reproducible, and independent of the random stream of the draws
MOMENTS_SEED = 20121001

__all__ = ["Prediction", "Target", "MeanTarget", "DifferenceTarget", "BaselineTarget", "RankingTarget",
           "TARGET_KINDS", "JUDGE_MODES", "make_target"]


@dataclass(frozen=True, eq=False)
class Prediction:
    """What the relevance model predicts about a target, per query.

    Attributes
    ----------
    mean : ndarray of shape (n_queries, n_outputs)
        ``E_theta[theta_j(x) | x]``: predicted per-query value of every contrast
        (the control variate of model-assisted estimators).
    variance : ndarray of shape (n_queries,)
        ``sum_j Var_theta[theta_j(x) | x]``.
    sq_error : ndarray of shape (n_queries,)
        ``sum_j E_theta[(theta_j(x) - Theta_j)^2 | x]`` with ``Theta_j`` the
        model's pool mean: what the variance-optimal ``q*`` is proportional to
        (times ``p(x) / sqrt(lambda(x))``).
    system_mean : ndarray of shape (n_queries, n_systems) or None
        Predicted per-query mean metric of every ranking.
    output_variance : ndarray of shape (n_queries, n_outputs) or None
        ``Var_theta[theta_j(x) | x]`` of every contrast (the prior of the
        small-sample standard errors); None where a target does not provide it.
    """

    mean: np.ndarray
    variance: np.ndarray
    sq_error: np.ndarray
    system_mean: np.ndarray | None = None
    output_variance: np.ndarray | None = None

    def pool_mean(self, p) -> np.ndarray:
        """The model's pool means ``Theta_j = sum_x p(x) E[theta_j | x]``, shape (n_outputs,)."""
        return np.array([float(np.dot(p, self.mean[:, j])) for j in range(self.mean.shape[1])])


@dataclass(frozen=True, eq=False)
class Target:
    """Base class: rankings (truncated at the metric's cutoff), their names and the metric.

    ``changes`` (comparisons with ``judge="changeable"``): per query, the
    documents whose labels can change a contrast
    (:func:`activerank.design.cancellation.changeable_documents`); only those
    are judged and paid for.  The others cancel exactly in every contrast, so a
    contrast computed with any grade for them (the engine uses 0) is exact,
    but a single ranking's value is not: per-system estimates are then
    unavailable (NaN).  Queries with no changeable document are *determined*:
    every contrast is exactly 0, known without a label.
    """

    rankings: tuple
    metric: Metric
    names: tuple
    judged: Rankings | None = None
    changes: ChangeSet | None = None
    kind: ClassVar[str] = ""

    @property
    def n_queries(self) -> int:
        return self.rankings[0].n_queries

    @property
    def n_systems(self) -> int:
        return len(self.rankings)

    @property
    def contrast(self) -> np.ndarray:  # pragma: no cover - every target defines it
        raise NotImplementedError

    @property
    def output_names(self) -> tuple:  # pragma: no cover
        raise NotImplementedError

    def predict(self, probs: np.ndarray, p: np.ndarray) -> Prediction:  # pragma: no cover
        raise NotImplementedError

    @property
    def judge(self) -> str:
        """``"changeable"`` when only documents that can change a contrast are judged, else ``"all"``."""
        return "all" if self.changes is None else "changeable"

    @property
    def determined(self) -> np.ndarray:
        """Queries whose contrasts are exactly 0 whatever the labels (no document to judge), shape (n_queries,)."""
        if self.changes is None:
            return np.zeros(self.n_queries, dtype=bool)
        return self.changes.determined

    def full_document_sets(self) -> list:
        """Rankings whose per-query union is what judging a whole query means (the budget's unit)."""
        return [self.judged] if self.judged is not None else list(self.rankings)

    def document_sets(self) -> list:
        """Rankings whose per-query union is what judging a query costs here: the changeable documents
        when only those are judged, else every document of :meth:`full_document_sets`."""
        return [self.changes.rows] if self.changes is not None else self.full_document_sets()

    def documents(self, x: int) -> np.ndarray:
        """Global rows to judge for pool query ``x``: the union of the top-k lists, in order of first
        appearance (for ratio metrics, the judged pool their normalizer needs); with ``changes``, only
        the documents that can change a contrast (empty for a determined query)."""
        if self.judged is not None:
            return self.judged[x]
        rows = np.concatenate([r[x] for r in self.rankings])
        _, first = np.unique(rows, return_index=True)
        rows = rows[np.sort(first)]
        if self.changes is not None:
            rows = rows[np.isin(rows, self.changes.rows[x])]
        return rows

    def _moments(self, probs, r: Rankings):
        if self.metric.moments == "exact":
            return _moments(probs, r, self.metric)
        return _mc_single(probs, r, self._judged_for_mc(), self.metric, DEFAULT_N_SAMPLES,
                          np.random.default_rng(MOMENTS_SEED))

    def _pair_moments(self, probs, ra: Rankings, rb: Rankings):
        if self.metric.moments == "exact":
            return _pair_moments(probs, ra, rb, self.metric)
        return _mc_pair(probs, ra, rb, self._judged_for_mc(), self.metric, DEFAULT_N_SAMPLES,
                        np.random.default_rng(MOMENTS_SEED))

    def _judged_for_mc(self) -> Rankings:
        return self.judged if self.judged is not None else judged_documents(list(self.rankings), self.metric)

    def values(self, labels: np.ndarray, queries, n_grades: int) -> np.ndarray:
        """Metric value of every ranking on the judged ``queries``.

        Parameters
        ----------
        labels : ndarray of shape (n_docs,)
            Grades of the judged rows (anything, e.g. -1, elsewhere).
        queries : array-like of int
            Pool queries whose documents are all judged.
        n_grades : int

        Returns
        -------
        ndarray of shape (n_queries, n_systems)
            NaN outside ``queries``.
        """
        queries = np.asarray(queries, dtype=np.int64)
        out = np.full((self.n_queries, self.n_systems), np.nan)
        if queries.size:
            grades = np.where(labels >= 0, labels, 0)
            J = None if self.judged is None else self.judged.subset(queries)
            YJ = None if J is None else grades[J.items][:, None]
            for i, r in enumerate(self.rankings):
                sub = r.subset(queries)
                out[queries, i] = label_matrix_values(self.metric, n_grades, sub, grades[sub.items][:, None],
                                                      J, YJ)[:, 0]
        return out

    def outputs(self, system_values: np.ndarray) -> np.ndarray:
        """Per-query contrast values ``theta(x) = A L(x)``, shape (..., n_outputs)."""
        return system_values @ self.contrast.T


@dataclass(frozen=True, eq=False)
class MeanTarget(Target):
    """One ranker's mean metric ``R = sum_x p(x) L(x)``."""

    kind: ClassVar[str] = "mean"

    @property
    def contrast(self) -> np.ndarray:
        return np.ones((1, 1))

    @property
    def output_names(self) -> tuple:
        return ("value",)

    def outputs(self, system_values: np.ndarray) -> np.ndarray:
        return system_values[..., :1]

    def predict(self, probs, p) -> Prediction:
        mom = self._moments(probs, self.rankings[0])
        return Prediction(mom.mean[:, None], mom.variance, expected_squared_error(mom.mean, mom.variance, p),
                          mom.mean[:, None], mom.variance[:, None])


@dataclass(frozen=True, eq=False)
class DifferenceTarget(Target):
    """The difference ``Delta = R_a - R_b`` of two rankers on the same queries."""

    kind: ClassVar[str] = "difference"

    @property
    def contrast(self) -> np.ndarray:
        return np.array([[1.0, -1.0]])

    @property
    def output_names(self) -> tuple:
        return ("delta",)

    def outputs(self, system_values: np.ndarray) -> np.ndarray:
        # a plain subtraction: exactly 0 where both rankings have equal values
        return system_values[..., :1] - system_values[..., 1:2]

    def predict(self, probs, p) -> Prediction:
        pm = self._pair_moments(probs, self.rankings[0], self.rankings[1])
        mean = pm.delta_mean
        return Prediction(mean[:, None], pm.delta_variance, expected_squared_error(mean, pm.delta_variance, p),
                          np.stack([pm.mean_a, pm.mean_b], axis=1), pm.delta_variance[:, None])


@dataclass(frozen=True, eq=False)
class BaselineTarget(Target):
    """Each of ``m`` candidates minus a baseline, ``Delta_j = R_j - R_base`` (baseline ranked last)."""

    kind: ClassVar[str] = "baseline"

    @property
    def contrast(self) -> np.ndarray:
        m = self.n_systems - 1
        return np.hstack([np.eye(m), -np.ones((m, 1))])

    @property
    def output_names(self) -> tuple:
        return tuple(self.names[:-1])

    def outputs(self, system_values: np.ndarray) -> np.ndarray:
        return system_values[..., :-1] - system_values[..., -1:]

    def predict(self, probs, p) -> Prediction:
        base = self.rankings[-1]
        pms = [self._pair_moments(probs, r, base) for r in self.rankings[:-1]]
        mean = np.stack([pm.delta_mean for pm in pms], axis=1)
        sq = expected_squared_error(pms[0].delta_mean, pms[0].delta_variance, p)
        var = pms[0].delta_variance
        for pm in pms[1:]:
            sq = sq + expected_squared_error(pm.delta_mean, pm.delta_variance, p)
            var = var + pm.delta_variance
        system = np.stack([pm.mean_a for pm in pms] + [pms[0].mean_b], axis=1)
        return Prediction(mean, var, sq, system, np.stack([pm.delta_variance for pm in pms], axis=1))


@dataclass(frozen=True, eq=False)
class RankingTarget(Target):
    """Each of ``k`` systems relative to the mean system, ``theta_i = R_i - mean_l R_l``.

    ``sum_i (L_i - Lbar)^2 = (1/k) sum_{i<l} (L_i - L_l)^2``, so the sum of the
    contrasts' variances is, up to ``1/k``, the sum over all pairwise
    differences: the pair kernel of every pair gives ``q*``.
    """

    kind: ClassVar[str] = "ranking"

    @property
    def contrast(self) -> np.ndarray:
        s = self.n_systems
        return np.eye(s) - 1.0 / s

    @property
    def output_names(self) -> tuple:
        return tuple(self.names)

    def outputs(self, system_values: np.ndarray) -> np.ndarray:
        return system_values - system_values.mean(axis=-1, keepdims=True)

    def predict(self, probs, p) -> Prediction:
        s = self.n_systems
        means = np.empty((self.n_queries, s))
        sq = np.zeros(self.n_queries)
        var = np.zeros(self.n_queries)
        for i in range(s):
            for j in range(i + 1, s):
                pm = self._pair_moments(probs, self.rankings[i], self.rankings[j])
                means[:, i], means[:, j] = pm.mean_a, pm.mean_b
                pair_sq = expected_squared_error(pm.delta_mean, pm.delta_variance, p)
                sq = sq + pair_sq
                var = var + pm.delta_variance
        return Prediction(means - means.mean(axis=1, keepdims=True), var, sq, means)


TARGET_KINDS = {cls.kind: cls for cls in (MeanTarget, DifferenceTarget, BaselineTarget, RankingTarget)}


def make_target(kind: str, rankings, metric: Metric, names=None, *, offsets=None, judged=None,
                judge: str = "all") -> Target:
    """A target of ``kind`` over ``rankings`` (truncated here at ``metric.k``).

    Parameters
    ----------
    kind : {"mean", "difference", "baseline", "ranking"}
    rankings : sequence of Rankings
        One (mean), two (difference), candidates then the baseline
        (baseline), or the systems to rank (ranking).
    metric : Metric
    names : sequence of str, optional
        One name per ranking.
    offsets : ndarray of shape (n_queries + 1,), optional
        The pool's offsets: ratio metrics (nDCG, AP) judge every document of a
        query that can enter their normalizer
        (:func:`activerank.metrics.judged_documents`).
    judged : Rankings, optional
        That judged set, when already known (a stored campaign).
    judge : {"all", "changeable"}, default "all"
        ``"changeable"``: a comparison (every kind but ``"mean"``) of an
        additive or cascade metric judges only the documents that can change
        a contrast (:func:`activerank.design.cancellation.changeable_documents`).
        Ratio and custom metrics, and one ranker, always judge everything.

    Examples
    --------
    >>> from activerank.ragged import Rankings
    >>> from activerank.metrics import parse_metric
    >>> r = Rankings.from_list([[0, 1], [2]])
    >>> t = make_target("difference", [r, r], parse_metric("dcg@1"), names=("a", "b"))
    >>> t.contrast.tolist(), t.documents(0).tolist()
    ([[1.0, -1.0]], [0])
    >>> b = Rankings.from_list([[0, 2, 1]])
    >>> t = make_target("difference", [Rankings.from_list([[0, 1, 2]]), b], parse_metric("dcg@3"),
    ...                 judge="changeable")
    >>> t.documents(0).tolist()          # document 0 keeps rank 1 in both: it cancels
    [1, 2]
    """
    cls = TARGET_KINDS[kind]
    tops = tuple(r.truncate(metric.k) for r in rankings)
    if names is None:
        names = default_names(kind, len(tops))
    if judged is None and metric.family == "ratio":
        judged = judged_documents(list(rankings), metric, offsets=offsets)
    changes = None
    if judge == "changeable" and cls is not MeanTarget and judged is None and metric.moments == "exact":
        n_docs = int(max(int(r.items.max(initial=-1)) for r in tops)) + 1
        changes = changeable_documents(list(tops), n_docs=max(n_docs, 1), metric=metric)
    elif judge not in JUDGE_MODES:
        raise ValueError(f"`judge` must be one of {list(JUDGE_MODES)}; got {judge!r}.")
    return cls(tops, metric, tuple(names), judged, changes)


def default_names(kind: str, n: int) -> tuple:
    if kind == "mean":
        return ("ranker",)
    if kind == "difference":
        return ("a", "b")
    if kind == "baseline":
        return tuple(f"candidate_{i}" for i in range(n - 1)) + ("baseline",)
    return tuple(f"system_{i}" for i in range(n))
