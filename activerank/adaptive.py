"""Adaptive refitting of the relevance model and reuse of earlier judgments.

:func:`estimate_adaptive` spends the labeling budget in ``n_batches`` batches.
Batch ``b`` draws ``n_b`` queries i.i.d. from its own sampling distribution
``q_b`` (the cost-aware ``q*`` of :func:`activerank.api.design`, computed from
the relevance model as it stands before the batch).  After each batch the model
is refitted on the ``(features, grade)`` pairs of the documents judged so far
(plus an optional user training set) -- never on anything the labeler has not
returned -- and ``q_{b+1}`` is recomputed.

Combining the batches (multiple importance sampling, balance heuristic).
Treat all ``n = sum_b n_b`` draws as draws from the mixture
``q_bar(x) = sum_b (n_b / n) q_b(x)`` and weight draw ``j`` by

``w_j = p(x_j) / q_bar(x_j)``;

the estimate is the self-normalized mean ``sum_j w_j L_j / sum_j w_j`` with
the delta-method standard error of :func:`activerank.inference.estimators.snis` (the
i.i.d.-from-the-mixture variance, which upper-bounds the variance of the
stratified-by-batch design when the ``q_b`` are fixed).  With identical
``q_b`` the weights are exactly ``p / q``.  Because ``q_b`` depends on the
labels of earlier batches, the balance-heuristic weights of early draws depend
on later data; consistency nevertheless holds as long as every ``q_b`` keeps a
defensive share ``defensive * p`` (the weights stay below ``1 / defensive``)
[Veach & Guibas 1995; Cornuet et al. 2012; Marin, Pudlo & Sedki 2019], and the
seeded simulations in ``tests/test_adaptive.py`` check bias and coverage.

Reuse of earlier judgments (:class:`PriorJudgments`).

* **Earlier draws** (``PriorJudgments.from_draws``): the draw sequence of an
  earlier campaign together with the distribution ``q_0`` it was drawn from
  (over *this* pool; mass outside the pool is allowed) becomes one more
  component ``(n_0, q_0)`` of the balance-heuristic mixture.
* **Census sets** (``PriorJudgments.from_census``): queries whose documents
  are all judged.  The pool is stratified into the census set ``C`` and the
  rest: ``R = sum_{x in C} p(x) L(x) + P(rest) * R_rest``, the first term exact,
  ``R_rest`` estimated from draws on the rest only (new batches put ``q = 0``
  on ``C``; earlier draws that fall in ``C`` are left out of the rest
  estimate but still count in ``n_0``).  The standard error is
  ``P(rest) * SE_rest``.

Budget accounting is per document: a query costs the (normalized) cost of its
*not yet judged* documents, so already-judged documents -- from earlier
batches, earlier draws of the same batch, or reused judgments -- are free.
Reused queries whose current top-k lists contain unjudged documents are
completed first and charged.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .api import _pool_iv, _py, _rankings_for_pool, design
from .design.costs import document_costs
from .inference.estimators import ComparisonResult, EstimateResult, snis, warn_if_low_ess
from .labelers import LabelingError, check_grades
from .metrics import pool_metric_values
from .design.sampling import DEFAULT_DEFENSIVE, draw_budgeted, query_weights_iv

__all__ = ["PriorJudgments", "REFIT_MODES", "estimate_adaptive", "mis_weights"]

REFIT_MODES = ("each_batch", "never")


# --------------------------------------------------------------------------- reuse


@dataclass(frozen=True, eq=False)
class PriorJudgments:
    """Judgments from an earlier campaign, for :func:`estimate_adaptive` to reuse.

    Build with :meth:`from_draws` (an importance-sampled campaign: draws and the
    distribution they came from) or :meth:`from_census` (queries judged in full).

    Attributes
    ----------
    judgments : dict
        ``{query_id: {doc_id: grade}}``.
    draws : tuple or None
        Query ids drawn, in order, with repetitions (``from_draws`` only).
    q : dict or ndarray or None
        Sampling distribution of ``draws`` over the pool (``from_draws`` only).
    census : bool
        True for a census set.

    Examples
    --------
    >>> old = PriorJudgments.from_draws({7: {0: 2, 1: 0}}, draws=[7, 7], q={7: 0.4, 9: 0.6})
    >>> old.census, len(old.draws)
    (False, 2)
    >>> PriorJudgments.from_census({9: {2: 1}}).census
    True
    """

    judgments: Mapping
    draws: tuple | None = None
    q: object = None
    census: bool = False

    @classmethod
    def from_draws(cls, judgments, draws, q) -> "PriorJudgments":
        """Earlier importance-sampled draws.

        Parameters
        ----------
        judgments : dict
            ``{query_id: {doc_id: grade}}`` covering every drawn query.
        draws : sequence of query ids
            The draw sequence (with repetitions); draws of queries outside the
            current pool are allowed and only count towards ``n_0``.
        q : dict ``{query_id: probability}`` or array of shape (n_queries,)
            The distribution the draws came from, evaluated on the current
            pool (missing queries of a dict have probability 0).
        """
        if draws is None or q is None:
            raise ValueError("`draws` and `q` are both required for reused draws.")
        return cls(judgments, tuple(np.asarray(draws).tolist()), q, False)

    @classmethod
    def from_census(cls, judgments) -> "PriorJudgments":
        """Queries judged in full ("all judged"): their contribution is exact."""
        return cls(judgments, None, None, True)


def _reuse_iv(reuse) -> list[PriorJudgments]:
    if reuse is None:
        return []
    items = [reuse] if isinstance(reuse, PriorJudgments) else list(reuse) if isinstance(reuse, (list, tuple)) else None
    if items is None or not all(isinstance(r, PriorJudgments) for r in items):
        raise TypeError("`reuse` must be a PriorJudgments or a list of them "
                        "(PriorJudgments.from_draws / PriorJudgments.from_census).")
    for r in items:
        if not isinstance(r.judgments, Mapping):
            raise ValueError("`reuse` judgments must be a dict {query_id: {doc_id: grade}}.")
    return items


def _prior_q(q, pool, index) -> np.ndarray:
    m = int(np.asarray(pool.offsets).size - 1)
    if isinstance(q, Mapping):
        out = np.zeros(m)
        for qid, v in q.items():
            if qid in index:
                out[index[qid]] = float(v)
    else:
        out = np.asarray(q, dtype=np.float64).reshape(-1)
        if out.size != m:
            raise ValueError(f"`reuse` q must have one entry per pool query ({m}); got {out.size}.")
    bad = ~np.isfinite(out) | (out < 0) | (out > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`reuse` q must be probabilities in [0, 1]; query "
                         f"{_py(pool.query_ids[i])!r} has {out[i]!r}.")
    if out.sum() > 1 + 1e-9:
        raise ValueError(f"`reuse` q sums to {out.sum():.6g} > 1 over the pool.")
    return out


# --------------------------------------------------------------------------- MIS weights


def mis_weights(p, qs, n_draws, queries) -> np.ndarray:
    """Balance-heuristic importance weights ``p(x) / sum_b (n_b / n) q_b(x)``.

    Parameters
    ----------
    p : ndarray of shape (n_queries,)
        Target distribution.
    qs : ndarray of shape (n_batches, n_queries)
        Sampling distribution of every batch.
    n_draws : ndarray of shape (n_batches,)
        Number of draws ``n_b`` of every batch.
    queries : ndarray of shape (n,)
        Pool index of the draws to weight.

    Returns
    -------
    weights : ndarray of shape (n,)

    Examples
    --------
    >>> p = np.array([0.5, 0.5]); q = np.array([0.8, 0.2])
    >>> mis_weights(p, np.stack([q, q]), np.array([3, 5]), np.array([0, 1])).tolist()
    [0.625, 2.5]
    >>> mis_weights(p, np.stack([q, p]), np.array([1, 1]), np.array([1])).round(4).tolist()
    [1.4286]
    """
    qs = np.atleast_2d(np.asarray(qs, dtype=np.float64))
    mix = _mixture(qs, np.asarray(n_draws, dtype=np.float64).reshape(-1))
    x = np.asarray(queries, dtype=np.int64)
    return np.asarray(p, dtype=np.float64)[x] / mix[x]


def _mixture(qs: np.ndarray, n_b: np.ndarray) -> np.ndarray:
    """``sum_b (n_b / n) q_b``; exactly ``q_0`` when all batches share it (no rounding)."""
    if all(np.array_equal(qs[0], qb) for qb in qs[1:]):
        return qs[0].copy()
    return (n_b / n_b.sum()) @ qs


# --------------------------------------------------------------------------- helpers


class _Judged:
    """Grades of judged document rows (-1 = not judged) and per-document costs."""

    def __init__(self, pool, dsg, costs):
        self.pool = pool
        self.dsg = dsg
        n_docs = int(np.asarray(pool.offsets)[-1])
        self.labels = np.full(n_docs, -1, dtype=np.int64)
        m = dsg.costs.cost.size
        keys = np.unique(np.concatenate([r.query_index() * n_docs + r.items for r in dsg.rankings]))
        self.union_rows = keys % n_docs
        self.union_query = keys // n_docs
        self.union_size = np.bincount(self.union_query, minlength=m)
        if isinstance(costs, str) and costs == "uniform":
            doc = dsg.costs.cost[self.union_query] / self.union_size[self.union_query]
        else:
            raw, _ = document_costs(pool, n_docs, costs)
            doc = raw[self.union_rows] / dsg.costs.scale
        self.union_cost = doc
        self.doc_ids = getattr(pool, "doc_ids", None)

    def remaining_cost(self) -> np.ndarray:
        """Cost of judging each query's not-yet-judged documents (0 when complete)."""
        m = self.union_size.size
        open_ = self.labels[self.union_rows] < 0
        n_open = np.bincount(self.union_query, weights=open_, minlength=m)
        part = np.bincount(self.union_query, weights=self.union_cost * open_, minlength=m)
        full = self.dsg.costs.cost
        return np.where(n_open == self.union_size, full, np.where(n_open == 0, 0.0, part))

    def complete(self, x: int) -> bool:
        return bool((self.labels[self.dsg.documents(x)] >= 0).all())

    def ids(self, rows):
        return rows.tolist() if self.doc_ids is None else [self.doc_ids[r] for r in rows]

    def label(self, x: int, labeler, judgments_out):
        rows = self.dsg.documents(x)
        need = rows[self.labels[rows] < 0]
        if need.size == 0:
            return
        qid = _py(self.pool.query_ids[x])
        ids = self.ids(need)
        try:
            grades = check_grades(labeler(qid, ids), qid, ids, self.dsg.n_grades)
        except Exception as exc:
            raise LabelingError(f"labeling query {qid!r} failed: {exc}",
                                judgments=judgments_out()) from exc
        self.labels[need] = grades

    def as_judgments(self) -> dict:
        """``{query_id: {doc_id: grade}}`` of everything judged so far."""
        rows = np.flatnonzero(self.labels >= 0)
        offsets = np.asarray(self.pool.offsets)
        qs = np.searchsorted(offsets, rows, side="right") - 1
        out: dict = {}
        for r, x in zip(rows.tolist(), qs.tolist()):
            doc = r if self.doc_ids is None else self.doc_ids[r]
            out.setdefault(_py(self.pool.query_ids[x]), {})[_py(doc)] = int(self.labels[r])
        return out

    def load(self, judgments, index):
        """Write earlier judgments ``{query_id: {doc_id: grade}}`` into the row grades."""
        offsets = np.asarray(self.pool.offsets)
        n_grades = self.dsg.n_grades
        for qid, docs in judgments.items():
            if qid not in index:
                continue  # a query outside this pool: nothing to reuse
            if not isinstance(docs, Mapping):
                raise ValueError(f"`reuse` judgments of query {qid!r} must be a dict {{doc_id: grade}}.")
            x = index[qid]
            lo, hi = int(offsets[x]), int(offsets[x + 1])
            if self.doc_ids is None:
                lookup = None
            else:
                lookup = {d: lo + j for j, d in enumerate(np.asarray(self.doc_ids[lo:hi]).tolist())}
            rows = []
            for d in docs:
                r = lookup.get(d, -1) if lookup is not None else (int(d) if isinstance(d, numbers.Integral) else -1)
                if not lo <= r < hi:
                    raise ValueError(f"`reuse`: query {qid!r} has no document {d!r} in the pool.")
                rows.append(r)
            try:
                grades = check_grades(list(docs.values()), qid, list(docs), n_grades)
            except ValueError as exc:
                raise ValueError(f"`reuse`: {exc}") from None
            rows = np.asarray(rows, dtype=np.int64)
            clash = (self.labels[rows] >= 0) & (self.labels[rows] != grades)
            if clash.any():
                d = list(docs)[int(np.flatnonzero(clash)[0])]
                raise ValueError(f"`reuse`: conflicting grades for query {qid!r}, document {d!r}.")
            self.labels[rows] = grades


def _model_iv(model):
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "predict_proba", None))):
        raise TypeError(f"`model` must have fit(X, y) and predict_proba(X) (a RelevanceModel); "
                        f"got {type(model).__name__}.")
    return model


def _train_iv(train, n_features):
    if train is None:
        return None
    if hasattr(train, "X") and hasattr(train, "labels"):
        Xt, yt = train.X, train.labels
    elif isinstance(train, (tuple, list)) and len(train) == 2:
        Xt, yt = train
    else:
        raise ValueError("`train` must be (X_train, y_train) or a labeled LetorData.")
    if yt is None:
        raise ValueError("`train` has no labels.")
    Xt = np.asarray(Xt, dtype=np.float64)
    yt = np.asarray(yt).reshape(-1)
    if Xt.ndim != 2 or Xt.shape[1] != n_features or Xt.shape[0] != yt.size:
        raise ValueError(f"`train` must be X of shape (n, {n_features}) and y of shape (n,); "
                         f"got {Xt.shape} and {yt.shape}.")
    return Xt, yt.astype(np.int64)


def _int_iv(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _scores_pair(scores, pool):
    """One ranking, or two when ``scores`` is a tuple of two."""
    if isinstance(scores, tuple):
        if len(scores) != 2:
            raise ValueError(f"`scores` must be one ranker's scores or a tuple of two; got a tuple of {len(scores)}.")
        return (_rankings_for_pool(scores[0], pool, "scores[0]"),
                _rankings_for_pool(scores[1], pool, "scores[1]"))
    return (_rankings_for_pool(scores, pool, "scores"),)


def _values(judged: _Judged, queries: np.ndarray) -> list[np.ndarray]:
    """Metric values of fully judged ``queries`` under each ranking (NaN elsewhere)."""
    dsg = judged.dsg
    labels = np.where(judged.labels >= 0, judged.labels, 0)
    out = []
    for r in dsg.rankings:
        vals = np.full(r.n_queries, np.nan)
        if queries.size:
            vals[queries] = pool_metric_values(labels, r.subset(queries), metric=dsg.metric,
                                               ymax=dsg.n_grades - 1)
        out.append(vals)
    return out


# --------------------------------------------------------------------------- main entry


def estimate_adaptive(pool, scores, model, X, labeler, *, budget, n_batches=4, metric="err@10", k=None,
                      refit="each_batch", train=None, reuse=None, weights="balance", costs="auto",
                      query_weights=None, defensive=DEFAULT_DEFENSIVE, rng=None):
    """Active estimate (or comparison) that refits the relevance model between batches.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
        The unlabeled queries.  Hidden labels it may carry are never read.
    scores : array-like of shape (n_docs,), Rankings, or tuple of two of them
        The ranker's scores, or ``(scores_a, scores_b)`` to estimate
        ``Delta = R_a - R_b``.
    model : RelevanceModel
        Relevance model with ``fit(X, y)`` and ``predict_proba(X)``.  It is
        refitted **in place**.  If it is unfitted and ``train`` is None, the
        first batch uses uniform grade probabilities (the paper's uniD).
    X : array-like of shape (n_docs, n_features)
        Features of the pool's documents (what ``model`` predicts from).
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``; asked only for documents not
        judged before.
    budget : float
        Total labeling budget in units of the pool's mean query cost (as in
        :func:`activerank.estimate`); never exceeded.
    n_batches : int, default 4
        Batch ``b`` may spend up to ``budget * (b + 1) / n_batches`` minus what
        was spent before (unspent budget carries over).
    metric : str, default "err@10"
    k : int or None, optional
    refit : {"each_batch", "never"}
        ``"each_batch"`` refits ``model`` on ``train`` plus the judged
        documents after every batch; ``"never"`` keeps it (then all ``q_b`` are
        equal and the weights reduce to ``p / q``).
    train : (X_train, y_train) or LetorData, optional
        Labeled training data the model is fitted on at the start (if
        unfitted) and that every refit includes.
    reuse : PriorJudgments or list of PriorJudgments, optional
        Earlier judgments (see :class:`PriorJudgments` and the module notes).
    weights : {"balance", "per_batch"}, default "balance"
        ``"balance"``: the balance heuristic ``p / sum_b (n_b/n) q_b``.
        ``"per_batch"``: each draw keeps its own batch's ``p / q_b``, which
        makes the weighted sums martingales even though later ``q_b`` depend on
        earlier labels.  In the seeded simulations both have the same small
        finite-sample (self-normalization) bias and nearly the same error.
    costs, query_weights, defensive
        As in :func:`activerank.estimate`.  ``defensive`` must be > 0 here:
        the balance-heuristic mixture must keep every query reachable.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    EstimateResult or ComparisonResult
        ``method="adaptive"``.  ``trace`` has one row per draw (reused draws
        first) with ``batch``, ``q`` (of the draw's batch), ``q_mixture``,
        ``weight`` (``p / q_mixture``, or ``p / q`` for ``"per_batch"``), ``stratum`` (``"census"`` for reused
        draws inside a census set), ``new``, ``cost``, ``cumulative_cost`` and
        the values; ``trace.attrs["batches"]`` is a per-batch table (source,
        ``n_draws``, ``n_new``, cost, budget allotted, training-set size of the
        model behind ``q_b``), ``trace.attrs["q"]`` the array of shape
        (n_components, n_queries) of all ``q_b`` and
        ``trace.attrs["census_queries"]`` the census query ids.

    Examples
    --------
    >>> import activerank as ar
    >>> from activerank.adaptive import estimate_adaptive
    >>> data = ar.load_sample()
    >>> model = ar.relevance.make_relevance_model("logistic", data.n_grades)
    >>> res = estimate_adaptive(data, data.X[:, 0], model, data.X, ar.KnownLabels.from_data(data),
    ...                         budget=20, n_batches=2, metric="dcg@5", rng=0)
    >>> res.cost_spent <= 20, sorted(res.trace["batch"].unique().tolist())
    (True, [0, 1])
    """
    pool = _pool_iv(pool)
    rankings = _scores_pair(scores, pool)
    model = _model_iv(model)
    if not callable(labeler):
        raise TypeError(f"`labeler` must be callable; got {type(labeler).__name__}.")
    n_batches = _int_iv(n_batches, "n_batches", 1)
    if weights not in ("balance", "per_batch"):
        raise ValueError(f"`weights` must be 'balance' or 'per_batch'; got {weights!r}.")
    if refit not in REFIT_MODES:
        raise ValueError(f"`refit` must be one of {list(REFIT_MODES)}; got {refit!r}.")
    n_docs = int(np.asarray(pool.offsets)[-1])
    Xa = np.asarray(X, dtype=np.float64)
    if Xa.ndim != 2 or Xa.shape[0] != n_docs:
        raise ValueError(f"`X` must have shape (n_docs={n_docs}, n_features); got {Xa.shape}.")
    train = _train_iv(train, Xa.shape[1])
    if isinstance(defensive, numbers.Real) and not isinstance(defensive, bool) and defensive <= 0:
        raise ValueError(f"`defensive` must be > 0 for adaptive sampling; got {defensive!r}.")
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"`budget` must be a positive finite number; got {budget!r}.")
    budget = float(budget)
    reuse = _reuse_iv(reuse)
    gen = np.random.default_rng(rng)
    m = int(np.asarray(pool.offsets).size - 1)
    p = query_weights_iv(query_weights, m)

    fitted = bool(getattr(model, "fitted_", False))
    if not fitted and train is not None:
        model.fit(*train)
        fitted = True
    if not fitted and refit == "never":
        raise ValueError("`model` is not fitted and `refit`='never' with no `train` data: nothing to "
                         "estimate q from; fit the model or pass `train`.")
    n_grades = getattr(model, "n_grades", None)

    def probs_now():
        if fitted:
            return np.asarray(model.predict_proba(Xa), dtype=np.float64)
        return np.full((n_docs, n_grades), 1.0 / n_grades)

    if n_grades is None:
        n_grades = probs_now().shape[1]
    probs = probs_now()
    common = dict(metric=metric, k=k, costs=costs, defensive=defensive)
    dsg = design(pool, rankings, probs, query_weights=p, **common)
    judged = _Judged(pool, dsg, costs)
    index = {qid: i for i, qid in enumerate(np.asarray(pool.query_ids).tolist())}

    # ---- reuse: load judgments, census set, earlier draw components
    census = np.zeros(m, dtype=bool)
    comps_q, comps_n, comps_draws, comps_src = [], [], [], []
    for i, r in enumerate(reuse):
        judged.load(r.judgments, index)
        if r.census:
            for qid in r.judgments:
                if qid in index:
                    census[index[qid]] = True
        else:
            q0 = _prior_q(r.q, pool, index)
            in_pool = np.array([index.get(d, -1) for d in r.draws], dtype=np.int64)
            x0 = in_pool[in_pool >= 0]
            if x0.size and (q0[x0] <= 0).any():
                qid = _py(pool.query_ids[x0[q0[x0] <= 0][0]])
                raise ValueError(f"`reuse`: query {qid!r} was drawn but its q is 0.")
            comps_q.append(q0)
            comps_n.append(len(r.draws))
            comps_draws.append(x0)
            comps_src.append(f"reuse[{i}]")
    spent = 0.0
    rows_batches = []
    trace_parts = []
    # complete reused queries whose current top-k lists have unjudged documents
    complete_first = np.unique(np.concatenate([np.flatnonzero(census)] + [d for d in comps_draws])) \
        if (census.any() or comps_draws) else np.zeros(0, dtype=np.int64)
    if complete_first.size:
        rem = judged.remaining_cost()[complete_first]
        need = float(rem.sum())
        if need > budget + 1e-12 * budget:
            raise ValueError(f"`budget`={budget:g} cannot cover completing the reused queries' unjudged "
                             f"documents (cost {need:.4g}).")
        for x in complete_first[rem > 0]:
            judged.label(int(x), labeler, judged.as_judgments)
        spent += need
    for b, (q0, n0, x0, src) in enumerate(zip(comps_q, comps_n, comps_draws, comps_src)):
        rows_batches.append(dict(batch=b - len(comps_q), source=src, n_draws=n0, n_new=0, cost=0.0,
                                 allotted=0.0, train_docs=np.nan))
        trace_parts.append((np.full(x0.size, b - len(comps_q)), x0, np.zeros(x0.size, dtype=bool),
                            np.zeros(x0.size)))
    if spent > 0:
        rows_batches.append(dict(batch=-len(comps_q) - 1, source="reuse:complete", n_draws=0,
                                 n_new=int((judged.remaining_cost()[complete_first] == 0).sum()),
                                 cost=spent, allotted=spent, train_docs=np.nan))

    p_rest = np.where(census, 0.0, p)
    sampling = p_rest.sum() > 1e-15
    train_docs = 0 if train is None else train[1].size
    if not fitted:
        train_docs = 0
    new_q = []
    dirty = bool((judged.labels >= 0).any())  # judgments the model has not seen yet
    for b in range(n_batches if sampling else 0):
        if refit == "each_batch" and dirty:
            rows = np.flatnonzero(judged.labels >= 0)
            Xf, yf = Xa[rows], judged.labels[rows]
            if train is not None:
                Xf, yf = np.vstack([train[0], Xf]), np.concatenate([train[1], yf])
            model.fit(Xf, yf)
            fitted = True
            train_docs = yf.size
            probs = probs_now()
            dirty = False
        dsg_b = design(pool, dsg.rankings, probs, query_weights=p_rest, **common)
        q_b = dsg_b.q
        allot = budget * (b + 1) / n_batches - spent
        remaining = judged.remaining_cost()
        affordable = (q_b > 0) & (remaining > 0) & (remaining <= allot)
        if not affordable.any():
            continue
        plan = draw_budgeted(q_b, remaining, max(allot, 1e-300), gen)
        new = plan.new & (remaining[plan.queries] > 0)
        charged = np.where(new, remaining[plan.queries], 0.0)
        for j in np.flatnonzero(new):
            judged.label(int(plan.queries[j]), labeler, judged.as_judgments)
        spent += float(charged.sum())
        dirty = dirty or bool(new.any())
        rows_batches.append(dict(batch=len(new_q), source="adaptive", n_draws=plan.n_draws,
                                 n_new=int(new.sum()), cost=float(charged.sum()), allotted=allot,
                                 train_docs=train_docs))
        trace_parts.append((np.full(plan.n_draws, len(new_q)), plan.queries, new, charged))
        comps_q.append(q_b)
        comps_n.append(plan.n_draws)
        new_q.append(q_b)

    # ---- estimate
    qs = np.stack(comps_q) if comps_q else np.zeros((0, m))
    n_b = np.asarray(comps_n, dtype=np.float64)
    if trace_parts:
        b_col, x, new_col, cost_col = (np.concatenate(c) for c in zip(*trace_parts))
    else:
        b_col, x, new_col, cost_col = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                       np.zeros(0, dtype=bool), np.zeros(0))
    x = x.astype(np.int64)
    b_of = b_col + len(comps_src)  # row into qs
    in_rest = ~census[x]
    census_idx = np.flatnonzero(census)
    if sampling and x[in_rest].size == 0:
        raise ValueError(f"`budget`={budget:g} bought no draw outside the census set; increase it.")
    drawn = np.unique(x)
    vals = _values(judged, np.union1d(drawn, census_idx))
    point = vals[0] if len(vals) == 1 else vals[0] - vals[1]
    if qs.shape[0]:
        mix = _mixture(qs, n_b)
        qcol = qs[b_of, x]
        denom = mix[x] if weights == "balance" else qcol
        w = np.where(in_rest, p[x] / np.where(denom > 0, denom, np.inf), 0.0)
    else:
        mix, w, qcol = np.zeros(m), np.zeros(0), np.zeros(0)
    P_rest = float(p_rest.sum())

    def combined(v):
        exact = float(np.dot(p[census_idx], v[census_idx]))
        if not sampling:
            return exact, 0.0, np.inf
        r = snis(v[x[in_rest]], w[in_rest])
        return exact + P_rest * r.estimate, P_rest * r.standard_error, r.effective_sample_size

    est, se, ess = combined(point)
    if sampling:
        warn_if_low_ess(ess, int(in_rest.sum()), stacklevel=3)
    trace = pd.DataFrame({
        "draw": np.arange(x.size), "batch": b_col, "query": x, "query_id": np.asarray(pool.query_ids)[x],
        "q": qcol, "q_mixture": mix[x], "p": p[x], "weight": w,
        "stratum": np.where(in_rest, "sampled", "census"), "new": new_col, "cost": cost_col,
        "cumulative_cost": np.cumsum(cost_col) + (spent - float(cost_col.sum())),
    })
    if budget < spent <= budget * (1 + 1e-12):
        spent = budget  # floating-point noise of the normalized costs
    common_out = dict(metric=str(dsg.metric), method="adaptive", n_draws=int(len(trace)),
                      n_queries=int(np.union1d(drawn, census_idx).size), cost_spent=spent, budget=budget,
                      standard_error=se, effective_sample_size=ess)
    if len(vals) == 1:
        trace["value"] = vals[0][x]
        result = EstimateResult(estimate=est, trace=trace, **common_out)
    else:
        trace["value_a"], trace["value_b"], trace["delta"] = vals[0][x], vals[1][x], point[x]
        result = ComparisonResult(difference=est, estimate_a=combined(vals[0])[0],
                                  estimate_b=combined(vals[1])[0], trace=trace, **common_out)
    trace.attrs["batches"] = pd.DataFrame(rows_batches)
    trace.attrs["q"] = qs
    trace.attrs["census_queries"] = np.asarray(pool.query_ids)[census_idx].tolist()
    return result
