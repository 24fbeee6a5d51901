"""A LightGBM callback: estimate the model's metric from a labeling budget while it trains.

Every ``every`` boosting rounds (and at the last one) :class:`ActiveEvaluation` scores an unlabeled pool
with the booster and calls :func:`activerank.estimate` -- or, with ``mode="compare"``,
:func:`activerank.compare` against the best checkpoint so far.  Every call gets the judgments bought
by the earlier ones (``judgments=``): a label is bought once for the whole training run.  An integer
``rng`` seeds every evaluation alike (common random numbers), so successive checkpoints tend to draw the
same queries and reuse their labels.

The estimate and its interval enter LightGBM's evaluation results (``evaluation_result_list``), so
:func:`lightgbm.record_evaluation` records them and :func:`lightgbm.log_evaluation` prints them.  Entries
appear in every round (NaN between evaluations), because ``record_evaluation`` fixes its keys in the first
round.  With ``mode="compare"`` and ``patience``, training stops once ``patience`` evaluations in a row
found P(new checkpoint better than the best) below ``min_prob_better`` (at the next round, so that
``record_evaluation`` and ``log_evaluation`` see the deciding one), and the booster's ``best_iteration`` is
the best checkpoint, as with :func:`lightgbm.early_stopping`.  LightGBM loads on first use.

Examples
--------
>>> import lightgbm as lgb
>>> import activerank as ar
>>> from activerank.integrations.lightgbm import ActiveEvaluation
>>> train, pool = ar.load_sample("train"), ar.load_sample("test")
>>> probs = ar.relevance.make_relevance_model("logistic", pool.n_grades).fit(
...     train.X, train.labels).predict_proba(pool.X)
>>> evaluation = ActiveEvaluation(pool, probs, ar.KnownLabels.from_data(pool), budget=8, every=5,
...                               metric="err@10", rng=0)
>>> history = {}
>>> quiet = {"verbose": -1, "num_threads": 1}
>>> booster = lgb.train({"objective": "lambdarank", **quiet},
...                     lgb.Dataset(train.X, train.labels, group=train.lengths, params=quiet),
...                     num_boost_round=10, callbacks=[evaluation, lgb.record_evaluation(history)])
>>> len(history["activerank"]["err@10"]), evaluation.history().index.tolist()
(10, [5, 10])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import budget_iv, choice_iv, int_iv, probs_iv, rng_iv
from ..api import compare, estimate
from ..inference.judgments import JudgmentSet
from ..pool import pool_iv

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["ActiveEvaluation"]

MODES = ("estimate", "compare")


class ActiveEvaluation:
    """LightGBM callback: the model's metric every few rounds, estimated from a labeling budget.

    Pass the object in ``callbacks=`` of :func:`lightgbm.train` (or of the scikit-learn API's ``fit``).
    A new training run with the same object starts a new evaluation history and keeps the labels bought.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
        The evaluation queries and their documents.
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)`` of the pool's documents.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``; never asked twice for a document.
    budget : float
        Labeling budget of each evaluation, in units of the pool's mean query cost.
    X : array-like or sparse matrix of shape (n_docs, n_features), optional
        What the booster scores (default ``pool.X``).
    every : int, default 10
        Evaluate after every ``every``-th boosting round, and after the last.
    mode : {"estimate", "compare"}, default "estimate"
        ``"estimate"``: the metric of the current model (:func:`activerank.estimate`).  ``"compare"``: its
        difference to the best checkpoint so far (:func:`activerank.compare`); the first evaluated
        checkpoint becomes the best without labels, and a later one replaces it when P(it is better) is
        at least ``min_prob_better``.
    metric : str, default "err@10"
    method : str, default "auto"
        As in :func:`activerank.estimate`.
    rng : None, int or numpy.random.Generator, default 0
        An integer seeds every evaluation alike (most labels reused); a Generator advances from one to
        the next; None draws fresh entropy each time.
    confidence_level : float, default 0.95
        Level of the recorded intervals.
    patience : int, optional
        ``mode="compare"`` only: stop after this many evaluations in a row that found no better
        checkpoint (one boosting round later); the booster's ``best_iteration`` is then the best
        checkpoint, also when training ends without stopping.
    min_prob_better : float in (0, 1), default 0.5
        A checkpoint is better when P(it is better than the best) is at least this.
    judgments : mapping, optional
        Judgments bought before, ``{query_id: {doc_id: grade}}`` (e.g. an earlier run's
        :attr:`judgments`).
    name : str, default "activerank"
        Data-set name of the entries in LightGBM's evaluation results.
    **options
        Further keyword arguments of :func:`activerank.estimate` / :func:`activerank.compare` (``costs``,
        ``query_weights``, ``defensive``, ``k``, ``ci``, and ``judge`` for comparisons).

    Attributes
    ----------
    results : dict
        ``{boosting rounds: result}`` of every evaluation (``EstimateResult`` or ``ComparisonResult``).
    judgments : JudgmentSet
        Every label bought so far (and those passed in).
    best_iteration : int or None
        ``mode="compare"``: boosting rounds of the best checkpoint.
    """

    #: before ``log_evaluation`` (10) and ``record_evaluation`` (20), so that they see the entries
    order = 5
    before_iteration = False

    def __init__(self, pool, probs, labeler, *, budget: float, X=None, every: int = 10, mode: str = "estimate",
                 metric: str = "err@10", method: str = "auto", rng=0, confidence_level: float = 0.95,
                 patience: int | None = None, min_prob_better: float = 0.5, judgments: Mapping | None = None,
                 name: str = "activerank", **options: Any):
        pool_ = pool_iv(pool)
        self.pool, self.labeler, self.metric, self.method = pool, labeler, metric, method
        self.probs = probs_iv(probs, n_rows=pool_.n_docs)
        self.X = _features(pool, X, pool_.n_docs)
        self.budget = budget_iv(budget)
        self.every = int_iv(every, "every", 1)
        self.mode = choice_iv(mode, "mode", MODES)
        self.confidence_level = _probability(confidence_level, "confidence_level")
        self.min_prob_better = _probability(min_prob_better, "min_prob_better")
        if patience is not None:
            patience = int_iv(patience, "patience", 1)
            if self.mode != "compare":
                raise ValueError("`patience` needs `mode`='compare': training stops on the estimated difference "
                                 "to the best checkpoint.")
        self.patience = patience
        if not isinstance(name, str) or not name:
            raise ValueError(f"`name` must be a non-empty string; got {name!r}.")
        self.name = name
        rng_iv(rng)  # validated here; each evaluation gets `rng` itself (a seed starts over every time)
        self.rng = rng
        self.options = options
        self.judgments = JudgmentSet(judgments)
        self._reset()

    def _reset(self) -> None:
        self.results: dict = {}
        self._baselines: dict = {}
        self.best_iteration: int | None = None
        self._best_scores: np.ndarray | None = None
        self._best_entries: list = []
        self._misses = 0
        self._stop = False
        self._last: list = []

    # ------------------------------------------------------------------ the callback

    def __call__(self, env) -> None:
        import lightgbm as lgb

        if not isinstance(env.model, lgb.Booster):
            raise TypeError("ActiveEvaluation works with lightgbm.train (and the scikit-learn API), not with "
                            f"{type(env.model).__name__} (lightgbm.cv).")
        if env.iteration == env.begin_iteration:  # a new training run: the labels bought stay
            self._reset()
        if self._stop and self.best_iteration is not None:
            # decided in the round before, which log_evaluation and record_evaluation then saw
            raise lgb.callback.EarlyStopException(self.best_iteration - 1, self._best_entries)
        rounds = env.iteration + 1
        last = rounds == env.end_iteration
        if rounds % self.every == 0 or last:
            self._last = self._evaluate(env.model, rounds, env.params)
        else:
            self._last = [(n, math.nan, hi) for n, _, hi in self._last] or self._nan_entries()
        if env.evaluation_result_list is not None:
            env.evaluation_result_list.extend(_eval_result(self.name, n, v, hi) for n, v, hi in self._last)
        if self.patience is not None and self.best_iteration is not None:
            self._stop = self._misses >= self.patience
            if last:  # as lightgbm.early_stopping: the booster's best iteration is the best checkpoint
                env.model.best_iteration = self.best_iteration

    def _evaluate(self, booster, rounds: int, params: Mapping | None = None) -> list:
        # the training's threads and verbosity: a prediction with other settings makes LightGBM warn
        same = {k: v for k, v in (params or {}).items() if k in ("num_threads", "verbose", "verbosity")}
        scores = np.asarray(booster.predict(self.X, num_iteration=-1, **same), dtype=np.float64)
        kw = dict(budget=self.budget, metric=self.metric, method=self.method, rng=self.rng,
                  judgments=self.judgments, **self.options)
        if self.mode == "estimate":
            res = estimate(self.pool, scores, self.probs, self.labeler, **kw)
            self._keep(rounds, res)
            return self._entries(res.estimate, res.confidence_interval(self.confidence_level))
        if self._best_scores is None:  # the first checkpoint: the one to beat
            self._promote(rounds, scores, self._nan_entries())
            return self._nan_entries()
        res = compare(self.pool, scores, self._best_scores, self.probs, self.labeler, **kw)
        self._keep(rounds, res)
        self._baselines[rounds] = self.best_iteration
        p = res.prob_a_better()
        entries = self._entries(res.difference, res.confidence_interval(self.confidence_level), p)
        if p >= self.min_prob_better:
            self._promote(rounds, scores, entries)
        else:
            self._misses += 1
        return entries

    def _keep(self, rounds: int, res) -> None:
        self.results[rounds] = res
        self.judgments = res.judgments

    def _promote(self, rounds: int, scores: np.ndarray, entries: list) -> None:
        self.best_iteration, self._best_scores, self._best_entries = rounds, scores, [
            _eval_result(self.name, n, v, hi) for n, v, hi in entries]
        self._misses = 0

    def _entries(self, value: float, ci, prob: float | None = None) -> list:
        """``(metric name, value, higher is better)`` of the point and the interval ends."""
        stem = self.metric if self.mode == "estimate" else f"{self.metric}_diff"
        out = [(stem, float(value), True), (f"{stem}_low", float(ci[0]), True), (f"{stem}_high", float(ci[1]), True)]
        if self.mode == "compare":
            out.append(("prob_better", math.nan if prob is None else float(prob), True))
        return out

    def _nan_entries(self) -> list:
        return self._entries(math.nan, (math.nan, math.nan), math.nan)

    # ------------------------------------------------------------------ reading the run

    def history(self) -> "pd.DataFrame":
        """One row per evaluation, indexed by boosting rounds: the result's summary (estimate or
        difference, standard error, interval, labels bought, ...); comparing, ``compared_to`` is the
        checkpoint (boosting rounds) the difference is to."""
        import pandas as pd

        if not self.results:
            return pd.DataFrame(index=pd.Index([], name="iteration"))
        df = pd.concat([res.summary(self.confidence_level) for res in self.results.values()], ignore_index=True)
        df.index = pd.Index(list(self.results), name="iteration")
        if self.mode == "compare":
            df.insert(0, "compared_to", [self._baselines[r] for r in self.results])
        return df

    def __repr__(self) -> str:
        best = "" if self.best_iteration is None else f", best checkpoint after {self.best_iteration} rounds"
        return (f"ActiveEvaluation({self.mode} {self.metric} every {self.every} rounds on a budget of "
                f"{self.budget:g}: {len(self.results)} evaluations, {self.judgments.n_labels} labels{best})")


def _features(pool, X, n_docs: int):
    X = getattr(pool, "X", None) if X is None else X
    if X is None:
        raise ValueError("`X` is needed: the pool has no feature matrix `X` for the booster to score.")
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2 or shape[0] != n_docs:
        raise ValueError(f"`X` must have shape (n_docs={n_docs}, n_features); got {shape}.")
    return X


def _probability(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        raise ValueError(f"`{name}` must lie in (0, 1); got {value!r}.")
    return float(value)


def _eval_result(dataset: str, metric: str, value: float, higher_better: bool):
    """An entry of LightGBM's evaluation results: ``lightgbm.EvalResult`` (4.7+) or the tuple before it."""
    from lightgbm import basic

    cls = getattr(basic, "EvalResult", None)
    return (dataset, metric, value, higher_better) if cls is None else cls(dataset, metric, value, higher_better)
