"""Result assembly: the one place where draws and labels become a result.

Every schedule hands back a :class:`~activerank.engine.core.Draws` record;
:func:`assemble` computes the judged queries' metric values, the target's
contrasts, the estimate (the method's estimator, a census stratum known
exactly, or the confidence sequence of a target-precision run), the trace,
and builds the result object of the target's kind.
"""

from __future__ import annotations

import math

import numpy as np

from ..inference.estimators import Estimate, SelfNormalized
from ..inference.results import (
    ComparisonResult,
    EstimateResult,
    MultiComparisonResult,
    SequentialComparisonResult,
    SequentialEstimateResult,
    SystemRankingResult,
)
from ..inference.intervals import prob_positive
from ..inference.judgments import JudgmentSet
from ..inference.sequences import INTERVAL_KIND
from ..inference.snis import warn_if_low_ess
from .small_sample import small_sample_estimates

__all__ = ["assemble", "build_trace", "value_columns"]

WINDOWED_KIND = ("anytime-valid windowed confidence sequence (constant boundary on the window of stopping "
                 "times, Gaussian-mixture tail; docs/intervals.md)")

FIXED_WIDTH_KIND = ("fixed-width interval at its stopping time (Chow & Robbins 1965: Student-t at a stricter "
                    "level; valid at this stop, not anytime-valid; docs/intervals.md)")

_SNIS = SelfNormalized()


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


def build_trace(ctx, draws, values: dict | None = None):
    """One row per draw: ``draw, [batch], query, query_id, q, [q_mixture], p, weight, [stratum], new,
    cost, cumulative_cost`` and the value columns."""
    import pandas as pd

    x = draws.queries
    cols = {"draw": np.arange(x.size)}
    if draws.batch is not None:
        cols["batch"] = draws.batch
    cols.update(query=x, query_id=np.asarray(ctx.pool.query_ids)[x], q=draws.q)
    if draws.q_mixture is not None:
        cols["q_mixture"] = draws.q_mixture
    cols.update(p=ctx.design.p[x], weight=draws.weights)
    if draws.sampled is not None:
        cols["stratum"] = np.where(draws.sampled, "sampled", "census")
    cols.update(new=draws.new, cost=draws.charged,
                cumulative_cost=np.cumsum(draws.charged) + draws.attrs.get("cost_offset", 0.0))
    cols.update(values or {})
    df = pd.DataFrame(cols)
    for key, value in draws.attrs.items():
        if key != "cost_offset":
            df.attrs[key] = value
    return df


def _exact(d, judged: np.ndarray, system_values, outputs):
    """Every query with ``p > 0`` judged: the pool's value is known exactly."""
    w = d.p[judged]
    t = outputs.shape[1]
    return (Estimate(outputs[judged].T @ w, np.zeros((t, t)), np.inf),
            Estimate(system_values[judged].T @ w, np.zeros((system_values.shape[1],) * 2), np.inf))


def _weighted(d, draws, system_values, outputs, ci: str, rng=None):
    """The method's estimator on the sampled draws, plus an exactly known census stratum.

    Returns ``main, own, dof, ci_used, bootstrap``: unless ``ci="normal"`` the covariances are the
    small-sample ones of :func:`~activerank.engine.small_sample.small_sample_estimates` (distinct queries,
    moderated by the model's predicted variance)."""
    x = draws.queries
    sampled = np.ones(x.size, dtype=bool) if draws.sampled is None else draws.sampled
    xs, w = x[sampled], draws.weights[sampled]
    census = draws.census
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
    estimator = d.method_spec.estimator
    pool_pred = d.prediction.pool_mean(p_rest / share) if estimator.uses_predictions else None
    main = estimator(outputs[xs], w, predictions=d.prediction.mean[xs], pool_predictions=pool_pred,
                     n_distinct=n_distinct)
    own = _SNIS(system_values[xs], w, n_distinct=n_distinct)
    dof, ci_used, boot = math.inf, "normal", None
    if ci != "normal":
        small = small_sample_estimates(d, draws, xs, w, outputs, system_values, main, own, p_rest / share,
                                       ci=ci, rng=rng)
        main, own, dof, ci_used, boot = small.main, small.own, small.dof, small.ci, small.bootstrap
    if census.size:
        exact_out, exact_own = outputs[census].T @ d.p[census], system_values[census].T @ d.p[census]
        main = Estimate(exact_out + share * main.estimate, share**2 * main.covariance,
                        main.effective_sample_size, main.coefficient)
        own = Estimate(exact_own + share * own.estimate, share**2 * own.covariance, own.effective_sample_size)
    return main, own, dof, ci_used, boot


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
    base = c * share + (cols[census].T @ d.p[census] if census.size else 0.0)
    z = base[None, :] + w[:, None] * (cols[x] - c[None, :])
    if a.get("terms") is not None:  # the tracked contrast's terms with the predictable control variate
        z[:, -1] = a["terms"][:n]
    if a["reason"] == "all_judged":
        judged = np.union1d(np.unique(x), census)
        exact = cols[judged].T @ d.p[judged]
        points, sigma, se, hw = exact, 0.0, 0.0, 0.0
    else:
        points = z.mean(axis=0) if n else np.full(c.size, np.nan)
        sigma = float(z[:, -1].std()) if n else np.nan
        se = float(z[:, -1].std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
        hw = float(a["radius"][-1]) if n else np.inf
    ess = float(w.sum() ** 2 / np.dot(w, w)) if n else 0.0
    fields = dict(stopping_reason=a["reason"], confidence_level=a["confidence_level"], window=a.get("window"),
                  interval=_interval_kind(a), sequence=a.get("sequence", "mixture"),
                  target_half_width=a["target"], half_width=float(hw), rho=float(a["rho"]), sigma=float(sigma),
                  center=float(c[-1]))
    extra_cols = {"is_term": z[:, -1] if n else np.zeros(0), "cs_center": a["center_run"],
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
    if draws.estimate is not None:
        return _document_level(d, draws, method, held)
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
        main, own = _exact(d, judged, system_values, outputs)
    else:
        main, own, dof, ci_used, boot = _weighted(d, draws, system_values, outputs, ctx.ci,
                                                  getattr(ctx, "ci_rng", None))
        n_sampled = int(x.size if draws.sampled is None else draws.sampled.sum())
        warn_if_low_ess(main.effective_sample_size, n_sampled)
    if target.changes is not None:
        # only documents that can change a contrast were judged: a single ranking's value is unknown
        own = Estimate(np.full_like(own.estimate, np.nan), np.full_like(own.covariance, np.nan),
                       own.effective_sample_size)
        system_values = np.full_like(system_values, np.nan)
    trace = build_trace(ctx, draws, {**value_columns(target, system_values[x], outputs[x]), **extra_cols})
    # determined queries (contrasts known exactly without a label) are not counted as judged
    n_judged = int(np.setdiff1d(judged, np.flatnonzero(target.determined)).size)
    common = dict(metric=str(d.metric), method=method, n_draws=int(x.size), n_queries=n_judged,
                  cost_spent=draws.cost_spent, budget=draws.budget, exact=exact,
                  effective_sample_size=float(main.effective_sample_size), trace=trace, ci=ci_used, dof=dof,
                  bootstrap=boot, judgments=held)
    return _build(target, main, own, common, anytime_fields)


def _document_level(d, draws, method: str, held: JudgmentSet):
    """Result of a schedule that estimates itself (document-level, without replacement): the estimate comes
    with the draws; per-system values of contrasts come in ``attrs["own"]`` when the schedule has them
    (unknown when only documents that can change a contrast are judged)."""
    main = draws.estimate
    s = d.target.n_systems
    own = draws.attrs.get("own")
    if own is None:
        own = main if d.target.kind == "mean" else Estimate(np.full(s, np.nan), np.full((s, s), np.nan),
                                                              main.effective_sample_size)
    # the design plug-in's degrees of freedom (with ci="t"): Student-t for i.i.d. draws, normal for HT
    dof = float(draws.attrs.get("dof", math.inf))
    common = dict(metric=str(d.metric), method=method, n_draws=int(draws.n_draws),
                  n_queries=int(np.unique(draws.queries).size), cost_spent=draws.cost_spent, budget=draws.budget,
                  exact=draws.stop_reason == "all_judged", effective_sample_size=float(main.effective_sample_size),
                  trace=draws.trace, ci="normal" if math.isinf(dof) else "t", dof=dof, judgments=held)
    return _build(d.target, main, own, common, None)


def _ro(a):
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _build(target, main: Estimate, own: Estimate, common: dict, anytime: dict | None):
    se = main.standard_error
    beta = None if main.coefficient is None else float(main.coefficient[0])
    if target.kind == "mean":
        if anytime is not None:
            return SequentialEstimateResult(estimate=float(main.estimate[0]), standard_error=float(se[0]),
                                            **anytime, **common)
        return EstimateResult(estimate=float(main.estimate[0]), standard_error=float(se[0]),
                              control_coefficient=beta, **common)
    if target.kind == "difference":
        fields = dict(difference=float(main.estimate[0]), estimate_a=float(own.estimate[0]),
                      estimate_b=float(own.estimate[1]), standard_error=float(se[0]), **common)
        if anytime is not None:
            return SequentialComparisonResult(**anytime, **fields)
        return ComparisonResult(control_coefficient=beta, **fields)
    names = target.names
    if target.kind == "baseline":
        return MultiComparisonResult(
            names=names[:-1], baseline=names[-1], differences=_ro(main.estimate), standard_errors=_ro(se),
            covariance=_ro(main.covariance), estimates=_ro(own.estimate[:-1]),
            baseline_estimate=float(own.estimate[-1]), **common)
    est, cov = own.estimate, own.covariance
    # R_i - R_j = theta_i - theta_j: without per-system estimates (judge="changeable") the pairwise
    # comparisons come from the contrasts to the mean system
    rel, rel_cov = (est, cov) if not np.isnan(est).any() else (main.estimate, main.covariance)
    diff = rel[:, None] - rel[None, :]
    var = np.diag(rel_cov)[:, None] + np.diag(rel_cov)[None, :] - 2 * rel_cov
    win = prob_positive(diff, np.sqrt(np.clip(var, 0.0, None)), common.get("dof", math.inf))
    np.fill_diagonal(win, 0.5)
    order = np.argsort(-rel, kind="stable")
    import pandas as pd

    return SystemRankingResult(
        names=names, estimates=_ro(est), covariance=_ro(cov), relative=_ro(main.estimate),
        relative_covariance=_ro(main.covariance), standard_errors=_ro(se),
        ranking=tuple(names[i] for i in order),
        win_probabilities=pd.DataFrame(win, index=pd.Index(names, name="system"), columns=list(names)), **common)
