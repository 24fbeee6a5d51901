"""Every design on one axis: error vs documents judged (issue 17, items 2-6).

Harness protocol (:mod:`activerank.experiments.harness`): for every fold the
rankers and relevance models are trained on one LETOR partition, the other
four partitions are the pool whose hidden labels give the truth.  Metric
DCG@10.  Cost = documents judged, weighted by the dataset's document cost
model (MQ2008, TREC News: 1 per document; OHSUMED: log length); budgets are expressed in
units of the mean cost of judging one whole query (the union of the compared
top-10 lists), so "budget 100" means the documents of ~100 queries.

Tasks: single ranker (a_rf, a_ologit), two rankers (b_*), index update
(c_index: 10% of every list removed), four candidates against a baseline
(k_baseline) and ranking five systems (k_rank, contrasts to the mean system).

Designs (all but depth-k are unbiased; every one is charged per distinct
document judged):

  query level (whole queries, Sawade et al. 2012)
    passive          uniform q, SNIS (plain mean) -- the reference
    active           q* with the full cost
    active_cancel    q* with the changeable-document cost, determined queries as a census
  document level (units = pooled documents of the compared top-10 lists)
    doc_uniform      uniform SRSWOR of pooled documents, HT (the field's baseline)
    doc_uniform_inf  same sample, unjudged gains imputed by the query's judged mean
                     (infAP-style; biased)
    doc_hh_naive     with replacement, Q ∝ u~ * mean_s P(z|S_s) (Schnabel et al.'s "naive" heuristic)
    doc_hh           with replacement, Schnabel et al. 2016 Q* (u~ = sqrt E[u^2]), Hansen-Hurwitz
    doc_stat         Poisson pi-ps, pi ∝ ||W|| sqrt(E u^2), Horvitz-Thompson (Cormack & Grossman stat)
    doc_dyn          Poisson pi-ps, pi ∝ ||W|| sqrt(Var u), difference estimator (dyn)
    two_stage        queries by q, then ~2 documents per drawn query (pi ∝ ||W|| sqrt Var u), dyn at both stages
    ubis             Schnabel et al. 2015 UBIS-k: k draws per query from Q_x ∝ u~ ||W|| + eps
  deterministic
    depth_k          judge the top k of every system for every query, unjudged = 0 (k = 1..10)

Loss: absolute error (one target), summed squared error over the contrasts (k
systems).  Savings = 1 - B / B_ref where B is the budget at which a design's
mean loss reaches passive's at B_ref = 100 (log-linear interpolation over the
design's mean realized cost; 95% bootstrap interval over repetitions).

A (fold, task) where no judgment can change the target (two rankers with the
same top-10 lists, which happens on the tiny TREC News folds) is skipped with a
note: every design would be exact without a label.  Bias/coverage check: per
budget, pooled over folds, |bias| / SE (0 when the estimate is the truth up to
rounding, e.g. a census with SE 0) and the coverage of the 95% interval (an SE
of 0 covers exactly when the estimate is the truth); ``checks.csv`` holds every
budget with the mean number of sampled units ``mean_n``.

Run:  python benchmarks/document_level/run.py [--datasets mq2008,ohsumed,trec-news] [--reps 1000]
      [--folds 1,2,3,4,5]; then report.py.
Writes results/<dataset>/{curves,savings,depth_k,checks,skipped}.csv and run.log; per-(fold, task)
raw arrays in results/<dataset>/raw/ (not committed; a rerun resumes from them).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from common import RESULTS, TASKS, build_task, config

from activerank.design.cancellation import census_distribution, changeable_costs, changeable_documents
from activerank.design.costs import document_costs, query_costs
from activerank.design.kinds.documents import (
    document_target,
    draw_within_queries,
    sampling_distribution,
    unit_scores,
    waterfill,
    within_query_distribution,
)
from activerank.design.sampling import optimal_distribution
from activerank.design.kinds.two_stage import draw_two_stage, two_stage_design
from activerank.experiments.harness import DATASETS, budget_to_reach, fit_fold
from activerank.design.draws import budget_stops, draw_budgeted_batch
from activerank.inference.snis import snis_prefix
from activerank.design.kinds.documents.estimators import _ht_kernel, _srs_kernel, _within_query_kernel
from activerank.design.kinds.two_stage import _two_stage_terms
from activerank.metrics.moments import _moments, _pair_moments

METRIC = "dcg@10"
K = 10
REL = np.array([0.5, 1, 1.5, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300], dtype=float)
QUERY_LEVEL = ("passive", "active", "active_cancel")
DOC_LEVEL = ("doc_uniform", "doc_uniform_inf", "doc_hh_naive", "doc_hh", "doc_stat", "doc_dyn", "two_stage", "ubis")
UBIS_K = (1, 2, 3, 4, 6, 8, 12)
MIN_N = 50  # sampled units from which the bias / coverage check applies (smaller: O(1/n) effects)
CHUNK = 250  # repetitions per block in the Poisson kernels (memory)


# --------------------------------------------------------------------------- per-task context


class Context:
    """Target, truth, costs and model quantities of one task on one fold."""

    def __init__(self, task, doc_costs, rel=None):
        pool = task.pool
        self.rel = REL if rel is None else np.asarray(rel, dtype=float)
        n_docs = pool.n_docs
        self.task = task
        self.C = task.contrasts
        self.t = document_target(task.rankings, n_docs=n_docs, metric=METRIC, n_grades=pool.n_grades,
                                 contrasts=self.C)
        vals = task.true_values(METRIC)  # (s, m)
        self.L = self.C @ vals  # per-query contrast values (T, m)
        self.T = self.L.mean(axis=1)
        assert np.allclose(self.T, self.t.value(task.labels), atol=1e-10)
        self.u = self.t.utilities(task.labels[self.t.rows])
        self.mom = self.t.moments(task.probs)
        self.c = doc_costs[self.t.rows]
        tops = [r.truncate(K) for r in task.rankings]
        self.full = query_costs(doc_costs, tops)
        self.scale = self.full.scale  # raw cost of one budget unit
        self.p = np.full(pool.n_queries, 1.0 / pool.n_queries)
        self.doc_costs = doc_costs
        self.tops = tops

    @property
    def n_targets(self):
        return self.C.shape[0]

    def sq_error(self):
        """sum_j E[(L_j - R_j)^2 | x] under the model (for query-level q*)."""
        probs, tops, m = self.task.probs, self.tops, parse(METRIC)
        s = len(tops)
        if s == 1:
            mo = _moments(probs, tops[0], m)
            mean, cov = mo.mean[None, :], mo.variance[None, None, :]
        else:
            means = np.zeros((s, self.p.size))
            cov = np.zeros((s, s, self.p.size))
            for i in range(s):
                for j in range(i + 1, s):
                    pm = _pair_moments(probs, tops[i], tops[j], m)
                    means[i], means[j] = pm.mean_a, pm.mean_b
                    cov[i, i] = pm.second_a - pm.mean_a**2
                    cov[j, j] = pm.second_b - pm.mean_b**2
                    cov[i, j] = cov[j, i] = pm.covariance
            mean = means
        cm = self.C @ mean  # (T, m)
        ccov = np.einsum("ai,ijx,bj->abx", self.C, cov, self.C)
        R = cm @ self.p
        return np.einsum("aax->x", ccov) + ((cm - R[:, None]) ** 2).sum(axis=0)


def parse(metric):
    from activerank.metrics import parse_metric

    return parse_metric(metric)


# --------------------------------------------------------------------------- losses


def _loss(est, T):
    """est (..., T) -> (abs error or summed squared error, per-target errors)."""
    err = est - T
    return (np.abs(err[..., 0]) if T.size == 1 else (err**2).sum(axis=-1)), err


def exact_tolerance(T):
    """Float tolerance below which an estimate equals the truth (a census answer, SE exactly 0)."""
    return 1e-9 * (1.0 + np.abs(np.asarray(T, dtype=float)))


def _pack(name, est, se, cost, T, n=None, dof=None):
    """Per-budget summaries and per-rep losses; est/se (nb, reps, T), cost and n (nb, reps).

    ``n`` is the number of sampled units: distinct queries or documents judged (query level, Poisson,
    uniform, with replacement), first-stage draws (two-stage), draws (UBIS); the bias/coverage
    check looks at budgets with enough of them (None: not known, NaN).  ``dof`` (nb, reps): the Student-t
    degrees of freedom of the interval a run reports (the library's designs; inf or None: normal).
    """
    loss, err = _loss(est, T)
    z = 1.959964 if dof is None else t_quantile(dof)[..., None]
    width = z * np.where(np.isfinite(se), se, np.inf)
    # a determined answer has SE exactly 0: covered when it is the truth (up to rounding), not otherwise
    cover = ((np.abs(err) <= width) | (np.abs(err) <= exact_tolerance(T))).mean(axis=(1, 2))
    # a budget point counts only if every repetition judged something (an empty run's "estimate"
    # of 0 is not an estimate)
    return dict(name=name, loss=loss, cost=cost, coverage=cover, bias=err.mean(axis=1),
                bias_se=err.std(axis=1, ddof=1) / np.sqrt(err.shape[1]), valid=(cost > 0).all(axis=1),
                n=np.full(cost.shape[0], np.nan) if n is None else np.asarray(n, dtype=float).mean(axis=1),
                truth=np.asarray(T, dtype=float))


def t_quantile(dof):
    """The 97.5% Student-t quantile on ``dof`` (the normal one where it is inf or NaN: no dof reported)."""
    from scipy.stats import t

    dof = np.asarray(dof, dtype=np.float64)
    return np.where(np.isfinite(dof), t.ppf(0.975, np.maximum(np.nan_to_num(dof, nan=1.0), 1.0)), 1.959964)


def bias_z(bias, se, tol):
    """|bias| / SE; 0 where the bias is rounding (an exact answer has SE 0), inf where SE is 0 but bias is not."""
    bias, se = np.abs(bias), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = bias / se
    return np.where(bias <= tol, 0.0, np.where(se > 0, z, np.inf))


def pooled_check(parts):
    """Per budget, pooled over folds: largest |bias| / SE over the targets, mean coverage, mean n, validity."""
    bias = np.mean([p["bias"] for p in parts], axis=0)  # (nb, T)
    se = np.sqrt(np.mean([p["bias_se"] ** 2 for p in parts], axis=0)) / np.sqrt(len(parts))
    tol = np.max([exact_tolerance(p["truth"]) for p in parts], axis=0)
    z = bias_z(bias, se, tol).max(axis=1)
    valid = np.all([p["valid"] for p in parts], axis=0)
    # budgets where some run judged nothing have no estimate (its 0 is constant: SE ~ 1e-17)
    return dict(z=np.where(valid, z, np.nan), coverage=np.mean([p["coverage"] for p in parts], axis=0),
                n=np.mean([p["n"] for p in parts], axis=0), valid=valid)


# --------------------------------------------------------------------------- query-level designs


def query_level(ctx, q, costs_rel, rng, reps, mass=1.0, name="passive"):
    plan = draw_budgeted_batch(q, costs_rel, ctx.rel[-1], reps, rng)
    b = ctx.rel  # budgets below a query's cost buy nothing: those points are marked invalid
    stops = budget_stops(plan, b)
    x = plan.queries
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(plan.valid, ctx.p[x] / np.where(q[x] > 0, q[x], 1.0), 0.0)
    est = np.empty(stops.shape + (ctx.n_targets,))
    se = np.empty_like(est)
    for j in range(ctx.n_targets):
        r = snis_prefix(ctx.L[j][x], w, stops)
        est[..., j] = mass * np.where(np.isfinite(r.estimate), r.estimate, 0.0)
        se[..., j] = mass * r.standard_error
    cum = np.cumsum(plan.charged, axis=1)
    at = (np.arange(reps)[None, :], np.maximum(stops - 1, 0))
    cost = np.where(stops > 0, cum[at], 0.0)
    distinct = np.where(stops > 0, np.cumsum(plan.charged > 0, axis=1)[at], 0)
    out = _pack(name, est, se, cost, ctx.T, distinct)
    out["budgets"] = b
    return out


# --------------------------------------------------------------------------- document-level designs


def poisson(ctx, score, rng, reps, model, name):
    """Poisson pi-ps designs on the budget grid (common random numbers across budgets)."""
    t = ctx.t
    m = ctx.mom.mean if model else np.zeros(t.n_units)
    e = ctx.u - m
    M = t.weights.T @ m
    budgets = ctx.rel * ctx.scale
    est = np.empty((ctx.rel.size, reps, ctx.n_targets))
    se = np.empty_like(est)
    cost = np.empty((ctx.rel.size, reps))
    n = np.empty((ctx.rel.size, reps))
    for start in range(0, reps, CHUNK):
        U = rng.random((min(CHUNK, reps - start), t.n_units))
        for bi, B in enumerate(budgets):
            pi = waterfill(score, ctx.c, B)
            mask = (U < pi).astype(np.float64)
            e_, cov = _ht_kernel(t.weights, e, pi, mask, M)
            sl = slice(start, start + mask.shape[0])
            est[bi, sl] = e_
            se[bi, sl] = np.sqrt(np.clip(np.diagonal(cov, axis1=-2, axis2=-1), 0, None))
            cost[bi, sl] = mask @ ctx.c
            n[bi, sl] = mask.sum(axis=1)
    return _pack(name, est, se, cost / ctx.scale, ctx.T, n)


def uniform(ctx, rng, reps, name, impute=False):
    """SRSWOR of pooled units; nested samples across budgets via random ranks."""
    t = ctx.t
    N = t.n_units
    mean_c = float(ctx.c.mean())
    est = np.empty((ctx.rel.size, reps, ctx.n_targets))
    se = np.empty_like(est)
    cost = np.empty((ctx.rel.size, reps))
    sizes = np.empty((ctx.rel.size, reps))
    free = np.ones(N, dtype=bool)
    for start in range(0, reps, CHUNK):
        rank = np.argsort(rng.random((min(CHUNK, reps - start), N)), axis=1).argsort(axis=1)
        sl = slice(start, start + rank.shape[0])
        for bi, rel in enumerate(ctx.rel):
            n = int(min(N, max(2, round(rel * ctx.scale / mean_c))))
            mask = (rank < n).astype(np.float64)
            cost[bi, sl] = mask @ ctx.c
            sizes[bi, sl] = n
            if impute:
                est[bi, sl] = _impute(ctx, mask)
                se[bi, sl] = np.nan
            else:
                e_, cov = _srs_kernel(t.weights, ctx.u, free, n, mask, 0.0)
                est[bi, sl] = e_
                se[bi, sl] = np.sqrt(np.clip(np.diagonal(cov, axis1=-2, axis2=-1), 0, None))
    return _pack(name, est, se, cost / ctx.scale, ctx.T, sizes)


def _impute(ctx, mask):
    """Judged gains as observed; unjudged ones by the mean judged gain of their query (0 if none)."""
    t = ctx.t
    starts = t.offsets[:-1]
    nonempty = np.diff(t.offsets) > 0
    s_u = np.add.reduceat(mask * ctx.u, starts[nonempty], axis=1)
    s_n = np.add.reduceat(mask, starts[nonempty], axis=1)
    qmean = np.zeros((mask.shape[0], t.n_queries))
    qmean[:, nonempty] = np.divide(s_u, s_n, out=np.zeros_like(s_u), where=s_n > 0)
    filled = mask * ctx.u + (1 - mask) * qmean[:, t.query]
    return filled @ t.weights


def with_replacement(ctx, Q, rng, reps, model, name):
    """Draws with replacement from Q (repeats free), Hansen-Hurwitz; repetitions in blocks of CHUNK."""
    t = ctx.t
    m = ctx.mom.mean if model else np.zeros(t.n_units)
    M = t.weights.T @ m
    est = np.empty((ctx.rel.size, reps, ctx.n_targets))
    se = np.empty_like(est)
    cost = np.empty((ctx.rel.size, reps))
    distinct = np.empty((ctx.rel.size, reps))
    for start in range(0, reps, CHUNK):
        # a concentrated Q needs many draws (repeats are free): one block of repetitions at a time,
        # or the (repetitions x draws) arrays take gigabytes
        nr = min(CHUNK, reps - start)
        sl = slice(start, start + nr)
        plan = draw_budgeted_batch(Q, ctx.c / ctx.scale, ctx.rel[-1], nr, rng, max_draws=40 * t.n_units)
        stops = budget_stops(plan, ctx.rel)
        x = plan.queries
        n = stops.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(plan.valid, (ctx.u - m)[x] / np.where(Q[x] > 0, Q[x], 1.0), 0.0)
        rows = np.arange(nr)[None, :]
        idx = np.maximum(stops - 1, 0)
        for j in range(ctx.n_targets):
            z = ratio * t.weights[x, j]
            s1 = np.cumsum(z, axis=1)[rows, idx]
            s2 = np.cumsum(z * z, axis=1)[rows, idx]
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(stops > 0, s1 / n, 0.0)
                var = np.where(stops > 1, (s2 - n * mean**2) / (n - 1) / n, np.nan)
            est[:, sl, j] = mean + M[j]
            se[:, sl, j] = np.sqrt(np.clip(var, 0, None))
        cum = np.cumsum(plan.charged, axis=1)
        cost[:, sl] = np.where(stops > 0, cum[rows, idx], 0.0)
        distinct[:, sl] = np.where(stops > 0, np.cumsum(plan.charged > 0, axis=1)[rows, idx], 0)
    return _pack(name, est, se, cost, ctx.T, distinct)


def two_stage(ctx, rng, reps, name, docs_per_query=2.0):
    t = ctx.t
    d = two_stage_design(t, ctx.task.probs, costs=ctx.c, docs_per_query=docs_per_query)
    budgets = ctx.rel * ctx.scale
    est = np.empty((ctx.rel.size, reps, ctx.n_targets))
    se = np.empty_like(est)
    cost = np.empty((ctx.rel.size, reps))
    n = np.empty((ctx.rel.size, reps))
    e = ctx.u - d.model_means
    for r in range(reps):
        plan = draw_two_stage(d, t, budgets[-1], rng)
        z = _two_stage_terms(t, d, plan.draw_query, plan.unit_draw, plan.unit, e[plan.unit])
        cum = np.cumsum(plan.charged)
        stops = np.searchsorted(cum, budgets * (1 + 1e-12), side="right")
        c1 = np.cumsum(z, axis=0)
        c2 = np.cumsum(z * z, axis=0)
        for bi, s in enumerate(stops):
            n[bi, r] = s
            if s < 2:
                est[bi, r], se[bi, r], cost[bi, r] = d.model_total, np.nan, cum[s - 1] if s else 0.0
                continue
            mean = c1[s - 1] / s
            est[bi, r] = mean + d.model_total
            se[bi, r] = np.sqrt(np.clip((c2[s - 1] - s * mean**2) / (s - 1) / s, 0, None))
            cost[bi, r] = cum[s - 1]
    return _pack(name, est, se, cost / ctx.scale, ctx.T, n)


def ubis(ctx, rng, reps, name, eps=0.05):
    """Schnabel et al. 2015 UBIS-k: every query gets k draws from Q_x ∝ ||W|| u~ + eps * mean (within query)."""
    t = ctx.t
    Qx = within_query_distribution(t, ctx.task.probs, utility="rms", eps=eps, costs=ctx.c)
    ks = np.array(UBIS_K)
    est = np.empty((ks.size, reps, ctx.n_targets))
    se = np.empty_like(est)
    cost = np.empty((ks.size, reps))
    for start in range(0, reps, CHUNK):
        nr = min(CHUNK, reps - start)
        draws = draw_within_queries(t, Qx, int(ks.max()), rng, n_reps=nr)
        sl = slice(start, start + nr)
        for ki, k in enumerate(ks):
            d = draws[:, :, :k]
            e_, v_ = _within_query_kernel(t.weights, ctx.u, Qx, d)
            est[ki, sl] = e_
            se[ki, sl] = np.sqrt(v_)
            flat = np.sort(d.reshape(nr, -1), axis=1)
            first = np.ones(flat.shape, dtype=bool)
            first[:, 1:] = flat[:, 1:] != flat[:, :-1]
            cost[ki, sl] = (first * ctx.c[flat]).sum(axis=1)
    n = np.repeat((ks * draws.shape[1])[:, None], reps, axis=1)
    out = _pack(name, est, se, cost / ctx.scale, ctx.T, n)
    out["budgets"] = None
    return out


def depth_k(ctx):
    """Deterministic depth-k pooling for k = 1..10: (cost in budget units, loss, estimate)."""
    rows = []
    lab = ctx.task.labels
    t = ctx.t
    for k in range(1, K + 1):
        judged = np.unique(np.concatenate([r.truncate(k).items for r in ctx.task.rankings]))
        known = np.zeros(ctx.task.pool.n_docs, dtype=bool)
        known[judged] = True
        u = np.where(known[t.rows], ctx.u, 0.0)
        est = t.weights.T @ u
        loss, _ = _loss(est[None, :], ctx.T)
        rows.append(dict(k=k, cost=float(ctx.doc_costs[judged].sum() / ctx.scale), loss=float(loss[0]),
                         bias=(est - ctx.T).tolist()))
    return rows


# --------------------------------------------------------------------------- driver


def run_task(ctx, reps, seed):
    out = {}
    rng = lambda i: np.random.default_rng([seed, i])  # noqa: E731
    t = ctx.t
    full_rel = ctx.full.cost
    out["passive"] = query_level(ctx, ctx.p, full_rel, rng(0), reps, name="passive")
    sq = ctx.sq_error()
    q_act = optimal_distribution(sq, full_rel, ctx.p, defensive=0.1)
    out["active"] = query_level(ctx, q_act, full_rel, rng(1), reps, name="active")
    if len(ctx.task.rankings) > 1:
        cs = changeable_documents(ctx.tops, n_docs=ctx.task.pool.n_docs, metric=METRIC)
        cc = changeable_costs(ctx.doc_costs, cs, scale=ctx.scale)
        cd = census_distribution(sq, cc, ctx.p, defensive=0.1)
        out["active_cancel"] = query_level(ctx, cd.q, cc.cost, rng(2), reps, mass=cd.mass, name="active_cancel")
    probs = ctx.task.probs
    out["doc_uniform"] = uniform(ctx, rng(3), reps, "doc_uniform")
    out["doc_uniform_inf"] = uniform(ctx, rng(3), reps, "doc_uniform_inf", impute=True)
    # Schnabel's naive heuristic: u~ times the mean of the systems' normalized discount weights
    D = np.abs(t.weights).sum(axis=1) if ctx.n_targets == 1 and len(ctx.task.rankings) == 1 else None
    if D is None:
        disc = [document_target(r, n_docs=ctx.task.pool.n_docs, metric=METRIC, n_grades=ctx.task.pool.n_grades)
                for r in ctx.task.rankings]
        D = np.zeros(t.n_units)
        for dt in disc:
            D[np.searchsorted(t.query * t.n_docs + t.rows, dt.query * dt.n_docs + dt.rows)] += dt.weights[:, 0]
    naive = D * np.sqrt(ctx.mom.second)
    naive = 0.9 * naive / naive.sum() + 0.1 * D / D.sum()
    out["doc_hh_naive"] = with_replacement(ctx, naive, rng(4), reps, False, "doc_hh_naive")
    Q = sampling_distribution(t, probs, utility="rms", costs=ctx.c)
    out["doc_hh"] = with_replacement(ctx, Q, rng(5), reps, False, "doc_hh")
    s_stat = unit_scores(t, probs, utility="rms", costs=ctx.c)
    s_fb = t.norms / np.sqrt(ctx.c)
    mix = lambda s: 0.9 * s / (s @ ctx.c) + 0.1 * s_fb / (s_fb @ ctx.c)  # noqa: E731
    out["doc_stat"] = poisson(ctx, mix(s_stat), rng(6), reps, False, "doc_stat")
    s_dyn = unit_scores(t, probs, utility="residual", costs=ctx.c)
    out["doc_dyn"] = poisson(ctx, mix(s_dyn), rng(7), reps, True, "doc_dyn")
    out["two_stage"] = two_stage(ctx, rng(8), reps, "two_stage")
    out["ubis"] = ubis(ctx, rng(9), reps, "ubis")
    return out


def savings(results, names, ref, n_boot=300, seed=0):
    """Savings vs passive with a bootstrap over repetitions (per fold), on realized mean costs."""
    gen = np.random.default_rng(seed)
    rows = []
    pas = results["passive"]

    def curves(parts, idx=None):
        costs = np.mean([p["cost"].mean(axis=1) for p in parts], axis=0)
        if idx is None:
            loss = np.mean([p["loss"].mean(axis=1) for p in parts], axis=0)
        else:
            loss = np.mean([p["loss"][:, i].mean(axis=1) for p, i in zip(parts, idx)], axis=0)
        return costs, loss

    def target(parts, idx=None):
        b = parts[0]["budgets"]
        r = int(np.flatnonzero(np.isclose(b, ref))[0])
        _, loss = curves(parts, idx)
        return loss[r]

    t0 = target(pas)
    for name in names:
        parts = results.get(name)
        if not parts:
            continue
        c, l = curves(parts)
        valid = np.all([p["valid"] for p in parts], axis=0)
        order = np.argsort(c)
        order = order[valid[order]]
        b, cens = budget_to_reach(c[order], l[order], t0)
        boot = []
        for _ in range(n_boot):
            ip = [gen.integers(0, p["loss"].shape[1], p["loss"].shape[1]) for p in pas]
            ia = [gen.integers(0, p["loss"].shape[1], p["loss"].shape[1]) for p in parts]
            tb = target(pas, ip)
            cb, lb = curves(parts, ia)
            bb, _ = budget_to_reach(cb[order], lb[order], tb)
            boot.append(1 - bb / ref)
        chk = pooled_check(parts)
        big = chk["valid"] & (chk["n"] >= MIN_N)
        rows.append(dict(method=name, savings=float(1 - b / ref), low=float(np.quantile(boot, 0.025)),
                         high=float(np.quantile(boot, 0.975)), censored=int(cens), error_ref=float(t0),
                         n_folds=len(parts),
                         max_bias_z=float(np.nanmax(chk["z"])) if chk["valid"].any() else np.nan,
                         coverage=float(chk["coverage"][chk["valid"]].mean()) if chk["valid"].any() else np.nan,
                         max_bias_z_n50=float(chk["z"][big].max()) if big.any() else np.nan,
                         min_coverage_n50=float(chk["coverage"][big].min()) if big.any() else np.nan))
    return rows


RAW_KEYS = ("loss", "cost", "coverage", "bias", "bias_se", "valid", "n", "truth")


def save_raw(path, res):
    arrays = {}
    for name, r in res.items():
        for k in RAW_KEYS:
            arrays[f"{name}|{k}"] = r[k]
        arrays[f"{name}|budgets"] = np.asarray([] if r.get("budgets") is None else r["budgets"], dtype=float)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)


def load_raw(path):
    z = np.load(path)
    res = {}
    for key in z.files:
        name, k = key.split("|")
        res.setdefault(name, {})[k] = z[key]
    for r in res.values():
        r["budgets"] = r["budgets"] if r["budgets"].size else None
    return res


def budget_labels(name, r, rel):
    """The budget grid of one design's result (UBIS: draws per query)."""
    if r.get("budgets") is not None:
        return np.asarray(r["budgets"], dtype=float)
    return np.array(UBIS_K, float) if name == "ubis" else rel


def determined(ctx):
    """True if no document's label can change any target (e.g. two rankers with the same top 10)."""
    return not bool((ctx.t.norms > 0).any())


def run_dataset(ds, args, cfg, out_dir, say):
    """Simulate every (fold, task) of one dataset; write its CSVs into ``out_dir``."""
    spec = DATASETS[ds]
    ref = float(spec.reference_budget)
    rel = REL[REL <= max(spec.budgets)]
    raw_dir = out_dir / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    # seeds depend on the dataset, not on its position in --datasets
    di = list(DATASETS).index(ds)
    curve_rows, save_rows, depth_rows, check_rows, skipped = [], [], [], [], []
    all_res = {}
    for fold in [int(f) for f in args.folds.split(",")]:
        fm = fit_fold(spec, fold, cfg, data_root=cfg.data_root)
        doc_costs, _ = document_costs(fm.pool, fm.pool.n_docs, spec.cost_model)
        for ti, key in enumerate(args.tasks.split(",")):
            tt = time.perf_counter()
            ctx = Context(build_task(fm, key, fold), doc_costs, rel)
            if determined(ctx):
                # every design would be exact at zero cost and every loss 0: savings undefined
                say(f"{ds} fold {fold} {key}: skipped, no judgment can change the target (the compared "
                    f"top-10 lists give every document the same discount); exact value {ctx.T.tolist()}")
                skipped.append(dict(dataset=ds, fold=fold, task=key, reason="determined", value=ctx.T.tolist()))
                continue
            raw_path = raw_dir / f"{ds}_fold{fold}_{key}_r{args.reps}.npz"
            if raw_path.exists():  # resume: a finished (fold, task) is not simulated again
                res = load_raw(raw_path)
            else:
                res = run_task(ctx, args.reps, [di, fold, ti])
                save_raw(raw_path, res)
            for name, r in res.items():
                all_res.setdefault(key, {}).setdefault(name, []).append(r)
                b = budget_labels(name, r, rel)
                for bi in range(len(b)):
                    curve_rows.append(dict(dataset=ds, fold=fold, task=key, method=name,
                                           budget=b[bi], mean_cost=float(r["cost"][bi].mean()),
                                           mean_loss=float(r["loss"][bi].mean()),
                                           se_loss=float(r["loss"][bi].std(ddof=1) / np.sqrt(args.reps)),
                                           coverage=float(r["coverage"][bi]),
                                           max_abs_bias=float(np.abs(r["bias"][bi]).max()),
                                           mean_n=float(r["n"][bi]),
                                           valid=bool(r["valid"][bi]),
                                           n_targets=ctx.n_targets))
            for row in depth_k(ctx):
                depth_rows.append(dict(dataset=ds, fold=fold, task=key, **row))
            say(f"{ds} fold {fold} {key}: {time.perf_counter() - tt:.0f}s, peak RSS {peak_rss_gb():.1f} GB")
    for key, res in all_res.items():
        for row in savings(res, [n for n in QUERY_LEVEL + DOC_LEVEL if n != "passive"], ref):
            save_rows.append(dict(dataset=ds, task=key, **row))
        for name, parts in res.items():
            chk = pooled_check(parts)
            b = budget_labels(name, parts[0], rel)
            for bi in range(len(b)):
                check_rows.append(dict(dataset=ds, task=key, method=name, budget=b[bi], n_folds=len(parts),
                                       mean_n=float(chk["n"][bi]), max_bias_z=float(chk["z"][bi]),
                                       coverage=float(chk["coverage"][bi]), valid=bool(chk["valid"][bi])))
    pd.DataFrame(curve_rows).to_csv(out_dir / "curves.csv", index=False)
    sav = pd.DataFrame(save_rows)
    sav.to_csv(out_dir / "savings.csv", index=False)
    pd.DataFrame(depth_rows).to_csv(out_dir / "depth_k.csv", index=False)
    pd.DataFrame(check_rows).to_csv(out_dir / "checks.csv", index=False)
    pd.DataFrame(skipped, columns=["dataset", "fold", "task", "reason", "value"]).to_csv(
        out_dir / "skipped.csv", index=False)
    return sav


def peak_rss_gb():
    """Peak resident memory of this process so far (GB; Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="mq2008", help=f"comma list of {', '.join(DATASETS)}")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=str(RESULTS), help="results folder; each dataset writes <out>/<dataset>/")
    args = ap.parse_args()
    from pathlib import Path

    cfg = config(args.cache, args.data)
    for ds in args.datasets.split(","):
        if ds not in DATASETS:
            ap.error(f"unknown dataset {ds!r}; choose from {', '.join(DATASETS)}")
    for ds in args.datasets.split(","):
        out_dir = Path(args.out) / ds
        out_dir.mkdir(parents=True, exist_ok=True)
        log = open(out_dir / "run.log", "a")

        def say(line, log=log):
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()

        t0 = time.perf_counter()
        say(f"# run.py --datasets {ds} --folds {args.folds} --reps {args.reps} ({time.strftime('%Y-%m-%d %H:%M')})")
        sav = run_dataset(ds, args, cfg, out_dir, say)
        say(f"{ds} done in {time.perf_counter() - t0:.0f}s, peak RSS {peak_rss_gb():.1f} GB")
        if len(sav):
            say(sav.pivot_table(index="task", columns="method", values="savings").round(2).to_string())
        log.close()


if __name__ == "__main__":
    main()
