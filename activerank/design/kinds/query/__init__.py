"""Queries drawn with replacement from ``q`` until the budget is spent (Algorithm 1 of Sawade et al. 2012).

The design kind of ``active``, ``passive``, the model-assisted methods and
every method registered with a plain :class:`~activerank.inference.estimators.Estimator`:

* plan: the design's ``q`` and query costs for the budget;
* draw: i.i.d. draws from ``q`` until the next new query would overspend the
  budget (a query's first draw is charged, repeats are free;
  :func:`~activerank.design.sampling.draw_budgeted`);
* labels: every drawn query's documents, in draw order, in one batch;
* estimate: the estimator plug-in on the draws weighted ``p / q``
  (self-normalized, or model-assisted with the model's pool mean as a control
  variate), with the small-sample intervals of :mod:`.small_sample`, and the
  determined queries of a comparison (contrasts exactly 0) as an exactly
  known census stratum.

Any judged prefix of the draw sequence is itself a run of the design for a
smaller budget, so a campaign can estimate while annotators work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ....inference.caveats import interval_name
from ....inference.estimators import Estimate, Estimator, ModelAssisted, SelfNormalized
from ....inference.snis import warn_if_low_ess
from ...sampling import DrawPlan, draw_budgeted
from ..base import NO_LABELS, DesignFit, DesignKind, LabelRequest, prediction_under
from .small_sample import small_sample_estimates

__all__ = ["QueryDraws", "QueryPlan", "census_fit", "clamp_cost", "draws_trace", "exact_estimate", "judged_count",
           "sampled_stratum", "value_columns", "weighted_estimate"]

_SNIS = SelfNormalized()


@dataclass(frozen=True, eq=False)
class QueryPlan:
    """What a with-replacement run fixes before drawing: ``q``, query costs and the budget."""

    q: np.ndarray
    costs: np.ndarray
    budget: float


class QueryDraws(DesignKind):
    """Query draws with replacement and a weighted estimator (see the module notes).

    Parameters
    ----------
    estimator : Estimator
        How weighted draws become estimates (:class:`~activerank.inference.estimators.SelfNormalized`,
        :class:`~activerank.inference.estimators.ModelAssisted`, or one of the user's).
    """

    name = "query_draws"
    unit = "query"
    replacement = True

    def __init__(self, estimator: Estimator):
        if not isinstance(estimator, Estimator):
            raise TypeError(f"`estimator` must be an activerank.inference.estimators.Estimator; "
                            f"got {type(estimator).__name__}.")
        self.estimator = estimator

    @property
    def uses_predictions(self) -> bool:  # type: ignore[override]
        return bool(self.estimator.uses_predictions)

    def check(self, method, metric, target_kind, *, predicted) -> None:
        pass  # every metric, target and prediction

    def check_ci(self, ci, design) -> None:
        if ci != "bootstrap":
            return
        what = "`ci`='bootstrap' (a studentized bootstrap over the distinct sampled queries)"
        if design.target.kind not in ("mean", "difference"):
            raise ValueError(f"{what} gives one asymmetric interval for one ranker or one difference (estimate, "
                             "compare, estimate_adaptive); compare_many and rank_systems report joint intervals of "
                             "several contrasts: use ci='auto', 't', 't_draws' or 'normal'.")
        if not isinstance(self.estimator, (SelfNormalized, ModelAssisted)):
            raise ValueError(f"{what} needs the cluster form of the method's estimator; method {design.method!r} "
                             f"registers {self.estimator!r}, which has none: use ci='normal'.")

    def plan(self, design, budget, *, judged, rng=None):
        return QueryPlan(design.q, design.costs.cost, float(budget))

    def draw(self, design, plan, rng) -> DrawPlan | None:
        """The draw sequence (None when every query is determined: nothing to draw or judge)."""
        if not plan.q.any():
            return None
        return draw_budgeted(plan.q, plan.costs, plan.budget, rng)

    def labels_needed(self, design, plan, sample, labels) -> LabelRequest:
        if sample is None:
            return NO_LABELS
        x = sample.queries[sample.new]
        rows = [design.documents(int(xi)) for xi in x.tolist()]
        sizes = np.array([r.size for r in rows], dtype=np.int64)
        if not sizes.sum():
            return NO_LABELS
        return LabelRequest.of(np.repeat(x, sizes), np.concatenate(rows), labels)

    def predicted_variance(self, design, budget, *, under=None) -> float:
        """``share^2 * sum_x p'(x)^2 / q(x) E[(theta - Theta)^2 | x] * (sum_x q(x) lambda(x)) / B``: the
        self-normalized estimator's asymptotic variance at the expected number of draws (repeats, which are
        free, are ignored: conservative near the pool's size); the expectation under ``under``'s model if
        given."""
        stratum = sampled_stratum(design)
        if stratum is None:
            return 0.0
        live, share, p_rest = stratum
        q, pred = design.q, design.prediction if under is None else prediction_under(design, under)
        per_draw = float(np.sum(p_rest[live] ** 2 / q[live] * pred.sq_error[live]))
        cost_per_draw = float(np.dot(q, design.costs.cost))
        return share**2 * per_draw * cost_per_draw / float(budget)

    def estimate(self, design, plan, sample, labels, *, held, ci="auto", ci_rng=None) -> DesignFit:
        d = design
        empty = np.zeros(0, dtype=np.int64)
        x = empty if sample is None else sample.queries
        charged = np.zeros(0) if sample is None else sample.charged
        new = np.zeros(0, dtype=bool) if sample is None else sample.new
        w = d.p[x] / d.q[x]
        census = d.census
        if x.size == 0 and census.size == 0:
            raise ValueError(
                f"no query could be judged: the first draw needed more than the budget "
                f"({plan.budget:g}); raise the budget or the defensive weight.")
        judged = np.union1d(np.unique(x), census)
        system_values = d.target.values(labels, judged, d.n_grades)
        outputs = d.target.outputs(system_values)
        exact = bool(np.all(np.isin(np.flatnonzero(d.p > 0), judged)))
        dof, ci_used, boot = math.inf, "normal", None
        if exact:
            main, own = exact_estimate(d, judged, system_values, outputs)
        else:
            main, own, dof, ci_used, boot = weighted_estimate(d, x, w, census, plan.budget, system_values, outputs,
                                                              ci, ci_rng)
            warn_if_low_ess(main.effective_sample_size, int(x.size), interval=interval_name(ci_used, dof))
        if d.target.changes is not None:
            # only documents that can change a contrast were judged: a single ranking's value is unknown
            own = Estimate(np.full_like(own.estimate, np.nan), np.full_like(own.covariance, np.nan),
                           own.effective_sample_size)
            system_values = np.full_like(system_values, np.nan)
        trace = draws_trace(d, x, d.q[x], w, new, charged,
                            value_columns(d.target, system_values[x], outputs[x]))
        cost = clamp_cost(float(charged.sum()), plan.budget)
        return DesignFit(main, own, dof, int(x.size), judged_count(d, judged), cost, plan.budget, exact, trace,
                         ci=ci_used, bootstrap=boot)

    def query_draws(self, design, plan, sample) -> DrawPlan:
        if sample is None:
            empty = np.zeros(0, dtype=np.int64)
            return DrawPlan(queries=empty, new=np.zeros(0, dtype=bool), charged=np.zeros(0), budget=plan.budget)
        return sample

    def __repr__(self) -> str:
        return f"QueryDraws({self.estimator!r})"


# --------------------------------------------------------------------------- shared with the other kinds and schedules


def census_fit(design, labels, budget: float) -> DesignFit:
    """The fit of a run with nothing to draw: every query with ``p > 0`` is determined (its contrasts are
    exactly 0), so the answer is known without a label."""
    d = design
    census = d.census
    if census.size == 0:
        raise ValueError(
            f"no query could be judged: the first draw needed more than the budget "
            f"({budget:g}); raise the budget or the defensive weight.")
    system_values = d.target.values(labels, census, d.n_grades)
    outputs = d.target.outputs(system_values)
    main, own = exact_estimate(d, census, system_values, outputs)
    if d.target.changes is not None:
        own = Estimate(np.full_like(own.estimate, np.nan), np.full_like(own.covariance, np.nan),
                       own.effective_sample_size)
    x = np.zeros(0, dtype=np.int64)
    trace = draws_trace(d, x, np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0),
                        value_columns(d.target, system_values[x], outputs[x]))
    return DesignFit(main, own, math.inf, 0, judged_count(d, census), 0.0, float(budget), True, trace)



def clamp_cost(cost: float, budget: float) -> float:
    """A cost sum, without reporting rounding noise (1e-12 relative) as overspending."""
    return budget if budget < cost <= budget * (1 + 1e-9) else cost


def judged_count(design, judged: np.ndarray) -> int:
    """Judged queries, the determined ones (contrasts known exactly without a label) not counted."""
    return int(np.setdiff1d(judged, np.flatnonzero(design.target.determined)).size)


def sampled_stratum(design):
    """``(live, share, p')``: the queries that can be sampled, their target mass and ``p`` renormalized on
    them; None when nothing is left to sample."""
    q, p = design.q, design.p
    census = design.census
    live = q > 0
    share = 1.0 - float(p[census].sum()) if census.size else 1.0
    if not live.any() or share <= 0:
        return None
    p_rest = np.where(live, p, 0.0)
    return live, share, p_rest / p_rest.sum()


def value_columns(target, system_values: np.ndarray, outputs: np.ndarray) -> dict:
    """Trace columns of per-draw values: ``value`` (one ranker), ``value_a, value_b, delta`` (two),
    ``value_<name>`` per system and ``delta_<name>`` per candidate (k systems)."""
    if target.kind == "mean":
        return {"value": system_values[:, 0]}
    if target.kind == "difference":
        return {"value_a": system_values[:, 0], "value_b": system_values[:, 1], "delta": outputs[:, 0]}
    cols = {f"value_{n}": system_values[:, i] for i, n in enumerate(target.names)}
    if target.kind == "baseline":
        cols.update({f"delta_{n}": outputs[:, j] for j, n in enumerate(target.names[:-1])})
    return cols


def draws_trace(design, x, q, weights, new, charged, values: dict | None = None, *, batch=None, q_mixture=None,
                sampled=None, cost_offset: float = 0.0, attrs: dict | None = None):
    """One row per draw: ``draw, [batch], query, q, [q_mixture], p, weight, [stratum], new, cost,
    cumulative_cost`` and the value columns (the engine adds ``query_id``)."""
    import pandas as pd

    cols = {"draw": np.arange(x.size)}
    if batch is not None:
        cols["batch"] = batch
    cols.update(query=x, q=q)
    if q_mixture is not None:
        cols["q_mixture"] = q_mixture
    cols.update(p=design.p[x], weight=weights)
    if sampled is not None:
        cols["stratum"] = np.where(sampled, "sampled", "census")
    cols.update(new=new, cost=charged, cumulative_cost=np.cumsum(charged) + cost_offset)
    cols.update(values or {})
    df = pd.DataFrame(cols)
    df.attrs.update(attrs or {})
    return df


def exact_estimate(d, judged: np.ndarray, system_values, outputs):
    """Every query with ``p > 0`` judged: the pool's value is known exactly."""
    w = d.p[judged]
    t = outputs.shape[1]
    return (Estimate(outputs[judged].T @ w, np.zeros((t, t)), np.inf),
            Estimate(system_values[judged].T @ w, np.zeros((system_values.shape[1],) * 2), np.inf))


def weighted_estimate(d, x, weights, census, budget, system_values, outputs, ci: str, rng=None, *, sampled=None):
    """The method's estimator on the sampled draws, plus an exactly known census stratum.

    Returns ``main, own, dof, ci_used, bootstrap``: unless ``ci="normal"`` the covariances are the
    small-sample ones of :func:`~.small_sample.small_sample_estimates` (distinct queries, moderated by the
    model's predicted variance).  ``sampled`` (bool per draw) marks draws outside the census stratum
    (default: all).
    """
    sampled = np.ones(x.size, dtype=bool) if sampled is None else sampled
    xs, w = x[sampled], weights[sampled]
    p_rest = d.p.copy()
    p_rest[census] = 0.0
    share = float(p_rest.sum())
    n_distinct = int(np.unique(xs).size)
    if n_distinct < 2:
        raise ValueError(
            f"the budget bought {n_distinct} distinct quer{'y' if n_distinct == 1 else 'ies'} outside the "
            "exactly known ones: no standard error can be computed from fewer than 2. Raise the budget "
            "(pass judgments=err.judgments to reuse the labels already bought)."
        )
    estimator = d.method_spec.kind.estimator
    pool_pred = d.prediction.pool_mean(p_rest / share) if estimator.uses_predictions else None
    main = estimator(outputs[xs], w, predictions=d.prediction.mean[xs], pool_predictions=pool_pred,
                     n_distinct=n_distinct)
    own = _SNIS(system_values[xs], w, n_distinct=n_distinct)
    dof, ci_used, boot = math.inf, "normal", None
    if ci != "normal":
        small = small_sample_estimates(d, budget, xs, w, outputs, system_values, main, own, p_rest / share,
                                       ci=ci, rng=rng)
        main, own, dof, ci_used, boot = small.main, small.own, small.dof, small.ci, small.bootstrap
    if census.size:
        exact_out, exact_own = outputs[census].T @ d.p[census], system_values[census].T @ d.p[census]
        main = Estimate(exact_out + share * main.estimate, share**2 * main.covariance,
                        main.effective_sample_size, main.coefficient)
        own = Estimate(exact_own + share * own.estimate, share**2 * own.covariance, own.effective_sample_size)
    return main, own, dof, ci_used, boot
