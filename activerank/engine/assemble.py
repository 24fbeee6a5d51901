"""Result assembly: the one place where a run becomes a result.

A fixed-budget run hands back its design kind's
:class:`~activerank.design.kinds.base.DesignFit` (:func:`assemble_fit`); the
target-precision and adaptive schedules hand back a
:class:`~activerank.engine.core.Draws` record of weighted query draws, whose
estimate -- the method's estimator, a census stratum known exactly, or the
confidence sequence of a target-precision run -- is computed here
(:func:`assemble`).  Both build the result object of the target's kind and add
the pool's ids to the trace.
"""

from __future__ import annotations

import math

import numpy as np

from ..design.kinds.query import draws_trace, exact_estimate, judged_count, value_columns, weighted_estimate
from ..inference.caveats import MIN_LABELED_QUERIES, interval_name, warn_few_labels
from ..inference.estimators import Estimate
from ..inference.intervals import prob_positive
from ..inference.ranges import clip, contrast_bounds, relative_bounds
from ..inference.results import (
    ComparisonResult,
    EstimateResult,
    MultiComparisonResult,
    SequentialComparisonResult,
    SequentialEstimateResult,
    SystemRankingResult,
)
from ..inference.judgments import JudgmentSet
from ..inference.sequences import INTERVAL_KIND
from ..inference.snis import kish_ess, warn_if_low_ess

__all__ = ["assemble", "assemble_fit", "build_trace", "with_ids"]

WINDOWED_KIND = ("anytime-valid windowed confidence sequence (constant boundary on the window of stopping "
                 "times, Gaussian-mixture tail; docs/intervals.md)")

FIXED_WIDTH_KIND = ("fixed-width interval at its stopping time (Chow & Robbins 1965: Student-t at a stricter "
                    "level; valid at this stop, not anytime-valid; docs/intervals.md)")

def with_ids(pool, trace):
    """``trace`` with ``query_id`` after its ``query`` column and ``doc_id`` after its ``doc_row`` column."""
    if "query" in trace.columns and "query_id" not in trace.columns:
        trace.insert(trace.columns.get_loc("query") + 1, "query_id",
                     np.asarray(pool.query_ids)[trace["query"].to_numpy(dtype=np.int64)])
    if "doc_row" in trace.columns and "doc_id" not in trace.columns:
        trace.insert(trace.columns.get_loc("doc_row") + 1, "doc_id",
                     pool.doc_keys(trace["doc_row"].to_numpy(dtype=np.int64)))
    return trace


def build_trace(ctx, draws, values: dict | None = None):
    """One row per draw: ``draw, [batch], query, query_id, q, [q_mixture], p, weight, [stratum], new,
    cost, cumulative_cost`` and the value columns."""
    attrs = {k: v for k, v in draws.attrs.items() if k != "cost_offset"}
    df = draws_trace(ctx.design, draws.queries, draws.q, draws.weights, draws.new, draws.charged, values,
                     batch=draws.batch, q_mixture=draws.q_mixture, sampled=draws.sampled,
                     cost_offset=draws.attrs.get("cost_offset", 0.0), attrs=attrs)
    return with_ids(ctx.pool, df)


def _interval_kind(a: dict) -> str:
    if a.get("sequence") == "fixed_width":
        return FIXED_WIDTH_KIND
    return INTERVAL_KIND if a.get("window") is None else WINDOWED_KIND


def _anytime(d, draws, system_values, outputs):
    """Centered importance-sampling terms ``Z_j = c + w_j (L_j - c)`` of a target-precision run."""
    a = draws.anytime
    x = draws.queries
    n = x.size
    cols = np.hstack([system_values, outputs]) if d.target.kind != "mean" else system_values
    c = a["centers"]
    w = draws.weights
    census = draws.census
    # a census stratum (determined queries) is never drawn: its exact part plus c * share keeps Z unbiased
    share = 1.0 - float(d.p[census].sum()) if census.size else 1.0
    known = cols[census].T @ d.p[census] if census.size else np.zeros(c.size)
    z = (c * share + known)[None, :] + w[:, None] * (cols[x] - c[None, :])
    # the schedule's running terms leave out the census stratum's exact part (a constant: it moves neither the
    # radius nor the stop); it is 0 for determined contrasts, the held queries' values otherwise
    center_run = np.asarray(a["center_run"]) + known[-1]
    if a.get("terms") is not None:  # the tracked contrast's terms with the predictable control variate
        z[:, -1] = a["terms"][:n] + known[-1]
    if a["reason"] == "all_judged":
        judged = np.union1d(np.unique(x), census)
        exact = cols[judged].T @ d.p[judged]
        points, sigma, se, hw = exact, 0.0, 0.0, 0.0
    else:
        points = z.mean(axis=0) if n else np.full(c.size, np.nan)
        sigma = float(z[:, -1].std()) if n else np.nan
        se = float(z[:, -1].std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
        hw = float(a["radius"][-1]) if n else np.inf
    ess = kish_ess(w)
    fields = dict(stopping_reason=a["reason"], confidence_level=a["confidence_level"], window=a.get("window"),
                  interval=_interval_kind(a), sequence=a.get("sequence", "mixture"),
                  target_half_width=a["target"], half_width=float(hw), rho=float(a["rho"]), sigma=float(sigma),
                  center=float(c[-1]))
    extra_cols = {"is_term": z[:, -1] if n else np.zeros(0), "cs_center": center_run,
                  "cs_half_width": a["radius"]}
    s = system_values.shape[1]
    main = Estimate(np.array([points[-1]]), np.array([[se * se]]), ess)
    own = Estimate(np.asarray(points[:s]), np.full((s, s), np.nan), ess)
    return main, own, fields, extra_cols


def assemble(ctx, draws, *, method: str):
    """Estimate and result object from a schedule's draws and the judged labels."""
    d = ctx.design
    target = d.target
    held = JudgmentSet.from_rows(ctx.pool, ctx.judgments.labels, ctx.judgments.bought)
    x = draws.queries
    if x.size == 0 and draws.census.size == 0:
        raise ValueError(
            f"no query could be judged: the first draw needed more than the budget "
            f"({draws.budget:g}); raise the budget or the defensive weight.")
    judged = np.union1d(np.unique(x), draws.census)
    system_values = ctx.values(judged)
    outputs = target.outputs(system_values)
    anytime_fields, extra_cols = None, {}
    exact = bool(np.all(np.isin(np.flatnonzero(d.p > 0), judged)))
    dof, ci_used, boot = math.inf, "normal", None
    if draws.anytime is not None:
        main, own, anytime_fields, extra_cols = _anytime(d, draws, system_values, outputs)
        exact = anytime_fields["stopping_reason"] == "all_judged"
    elif exact:
        main, own = exact_estimate(d, judged, system_values, outputs)
    else:
        main, own, dof, ci_used, boot = weighted_estimate(d, x, draws.weights, draws.census, draws.budget,
                                                          system_values, outputs, ctx.ci, ctx.ci_rng,
                                                          sampled=draws.sampled)
        n_sampled = int(x.size if draws.sampled is None else draws.sampled.sum())
        warn_if_low_ess(main.effective_sample_size, n_sampled, interval=interval_name(ci_used, dof))
    if target.changes is not None:
        # only documents that can change a contrast were judged: a single ranking's value is unknown
        own = Estimate(np.full_like(own.estimate, np.nan), np.full_like(own.covariance, np.nan),
                       own.effective_sample_size)
        system_values = np.full_like(system_values, np.nan)
    trace = build_trace(ctx, draws, {**value_columns(target, system_values[x], outputs[x]), **extra_cols})
    # determined queries (contrasts known exactly without a label) are not counted as judged
    common = dict(metric=str(d.metric), method=method, n_draws=int(x.size), n_queries=judged_count(d, judged),
                  cost_spent=draws.cost_spent, budget=draws.budget, exact=exact,
                  effective_sample_size=float(main.effective_sample_size), trace=trace, ci=ci_used, dof=dof,
                  bootstrap=boot, judgments=held, metric_range=_metric_range(d))
    return _build(target, main, own, common, anytime_fields)


def assemble_fit(ctx, fit, *, method: str):
    """The result of a design kind's :class:`~activerank.design.kinds.base.DesignFit`."""
    d = ctx.design
    main = fit.estimate
    own = fit.own
    if own is None:  # not estimable from what was judged (only documents that can change a contrast)
        s = d.target.n_systems
        own = Estimate(np.full(s, np.nan), np.full((s, s), np.nan), main.effective_sample_size)
    common = dict(metric=str(d.metric), method=method, n_draws=fit.n_draws, n_queries=fit.n_queries,
                  cost_spent=fit.cost_spent, budget=fit.budget, exact=fit.exact,
                  effective_sample_size=float(main.effective_sample_size), trace=with_ids(ctx.pool, fit.trace),
                  ci=fit.ci, dof=float(fit.dof), bootstrap=fit.bootstrap,
                  judgments=JudgmentSet.from_rows(ctx.pool, ctx.judgments.labels, ctx.judgments.bought),
                  metric_range=_metric_range(d))
    return _build(d.target, main, own, common, None)


def _metric_range(design) -> tuple:
    """The range of one query's metric value on the design's grade scale (the metric registry's bounds)."""
    return tuple(design.metric.bounds(design.n_grades))


class _InRange:
    """Moves point estimates into their ranges and records the raw values of those it moved."""

    def __init__(self, bounds: tuple):
        self.bounds = bounds
        self.moved: dict = {}

    def __call__(self, name: str, value, bounds: tuple | None = None):
        bounds = self.bounds if bounds is None else bounds
        out = clip(value, bounds)
        if np.ndim(value) == 0:
            if out != value and not math.isnan(out):
                self.moved[name] = float(value)
            return out
        raw = np.asarray(value, dtype=np.float64)
        if np.any((out != raw) & ~np.isnan(raw)):
            self.moved[name] = _ro(raw)
        return _ro(out)


def _caveats(common: dict, anytime: dict | None) -> None:
    """``few_labels``, and its warning naming the interval the result reports."""
    few = not common["exact"] and common["n_queries"] < MIN_LABELED_QUERIES
    common["few_labels"] = few
    if few:
        interval = interval_name(common["ci"], common["dof"], None if anytime is None else anytime["interval"])
        warn_few_labels(common["n_queries"], None, interval)


def _ro(a):
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _build(target, main: Estimate, own: Estimate, common: dict, anytime: dict | None):
    """The result object of the target's kind, its point estimates moved into their ranges
    (:mod:`activerank.inference.ranges`: the raw values go to ``unadjusted``)."""
    _caveats(common, anytime)
    fit = _InRange(common["metric_range"])
    return _result(target, main, own, common, anytime, fit, contrast_bounds(fit.bounds))


def _result(target, main, own, common, anytime, fit, contrast):
    se = main.standard_error
    beta = None if main.coefficient is None else float(main.coefficient[0])

    def done(cls, **fields):
        return cls(**fields, **common, range_adjusted=bool(fit.moved), unadjusted=fit.moved)

    if target.kind == "mean":
        point = fit("estimate", float(main.estimate[0]))
        if anytime is not None:
            return done(SequentialEstimateResult, estimate=point, standard_error=float(se[0]), **anytime)
        return done(EstimateResult, estimate=point, standard_error=float(se[0]), control_coefficient=beta)
    if target.kind == "difference":
        fields = dict(difference=fit("difference", float(main.estimate[0]), contrast),
                      estimate_a=fit("estimate_a", float(own.estimate[0])),
                      estimate_b=fit("estimate_b", float(own.estimate[1])), standard_error=float(se[0]))
        if anytime is not None:
            return done(SequentialComparisonResult, **anytime, **fields)
        return done(ComparisonResult, control_coefficient=beta, **fields)
    names = target.names
    if target.kind == "baseline":
        return done(MultiComparisonResult,
                    names=names[:-1], baseline=names[-1], differences=fit("differences", main.estimate, contrast),
                    standard_errors=_ro(se), covariance=_ro(main.covariance),
                    estimates=fit("estimates", own.estimate[:-1]),
                    baseline_estimate=fit("baseline_estimate", float(own.estimate[-1])))
    est, cov = own.estimate, own.covariance
    # R_i - R_j = theta_i - theta_j: without per-system estimates (judge="changeable") the pairwise
    # comparisons come from the contrasts to the mean system.  The order and the win probabilities use the
    # raw estimates: moving two of them into range separately would distort their difference
    rel, rel_cov = (est, cov) if not np.isnan(est).any() else (main.estimate, main.covariance)
    diff = rel[:, None] - rel[None, :]
    var = np.diag(rel_cov)[:, None] + np.diag(rel_cov)[None, :] - 2 * rel_cov
    win = prob_positive(diff, np.sqrt(np.clip(var, 0.0, None)), common.get("dof", math.inf))
    np.fill_diagonal(win, 0.5)
    order = np.argsort(-rel, kind="stable")
    import pandas as pd

    return done(SystemRankingResult,
                names=names, estimates=fit("estimates", est),
                covariance=_ro(cov), relative=fit("relative", main.estimate, relative_bounds(fit.bounds, len(names))),
                relative_covariance=_ro(main.covariance), standard_errors=_ro(se),
                ranking=tuple(names[i] for i in order),
                win_probabilities=pd.DataFrame(win, index=pd.Index(names, name="system"), columns=list(names)))
