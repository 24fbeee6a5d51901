"""activerank vs the generic peers PPI++ (ppi_py) and GLIDE (glide-py), same inputs (issue 20).

Setup per dataset (MQ2008, OHSUMED; LETOR five-partition layout): the relevance
model (LightGBM, hyper-parameters by validation log-loss on a query split of
S1) is fitted on S1; the pool is S2-S5, whose labels are hidden from every
method and give the true per-query values.  Pools, true values, costs and the
exact moments come from :func:`activerank.experiments.harness.build_problem`.

Rankers: ``a`` = one LETOR feature (MQ2008 25 = BM25 of the whole document,
OHSUMED 28), ``b`` = feature 40, and for k systems the candidates feature 40,
the relevance model's expected gain and two more features against baseline
``a``.  Scenarios: one ranker (``a``), two rankers (``a - b``), index update
(``a`` vs ``a`` with 10% of every result list removed at random), k systems
(4 candidates minus the baseline; MSE summed over the 4 contrasts).  Metrics
ERR@10 and DCG@10.  Cost modes: ``queries`` (one unit per query: equal distinct
queries) and ``documents`` (one unit per judged document of the evaluated top-10
lists, normalized to mean query cost 1: equal documents judged).

Every method gets the same per-query inputs: the model's exact expected value
``m(x) = E_theta[L|x]`` (of the difference / contrast) and predicted variance
``v(x) = Var_theta[L|x]``.

Methods
    ar_wr_ma      activerank's current ``model_assisted`` (Algorithm 1 with
                  replacement, q*, SNIS with a tuned control variate)
    ar_wor_unif   uniform budgeted sampling without replacement + tuned GREG
                  (the "safe baseline"; activerank.design.without_replacement +
                  activerank.inference.horvitz_thompson)
    ar_wor_active sequential Poisson without replacement with scores
                  p sqrt(v / lambda) (defensive 0.1) + tuned GREG
    ar_safe       the two-stage safe design (activerank.design.safe)
    ar_default    what the public API runs by default: ``method="active"`` (q*, defensive
                  0.1, self-normalized estimate, the engine's budgeted loop with
                  replacement); for comparisons ``judge="changeable"``: a query costs only
                  the documents that can change the difference (in ``documents`` mode;
                  in ``queries`` mode 1) and queries with none are a census stratum
                  (contrast exactly 0, cost 0).  Its design is the API's
                  (``make_design(...).q`` and costs, checked equal on OHSUMED)
    ar_auto       ``method="auto"``: ``doc_dyn`` where its predicted variance at the
                  budget is smaller (DCG@10, documents mode), else ``ar_default``
                  (activerank.design.auto); query-level only in ``queries`` mode
    ar_cancel     comparisons: ar_default's design and draws, tuned model-assisted
                  estimator (``mass * MA`` over the undetermined queries)
    ar_cancel_cf  same draws, the engine's cross-fitted model-assisted estimator
                  (activerank.inference.crossfit) with its Student-t intervals
    ar_cancel_wor comparisons: sequential Poisson without replacement over the
                  undetermined queries (census scores, changeable costs), GREG with
                  prior coefficient 1
    ar_doc_dyn    DCG@10, documents mode: the engine's ``doc_dyn`` (Poisson pi-ps on the
                  model's residual variance over the pooled documents of the compared
                  lists, model total + Horvitz-Thompson of the residuals; the budget is
                  spent in expectation; its ``labels`` column is the mean realized cost)

The peers are charged every document of the union of the compared top-10 lists
in ``documents`` mode: they cannot know which documents cancel (that knowledge
is activerank's structural advantage; the cost unit is documents judged).
    ppi++         ppi_py ``ppi_mean_pointestimate`` (power tuning, default
                  options): uniform random order, labels while the budget
                  lasts, unlabeled = the rest of the pool
    glide_active  GLIDE ``ActiveSampler`` (pi from uncertainties sqrt(v),
                  n_samples = budget) + ``ASIMeanEstimator``
    glide_costopt GLIDE ``CostOptimalSampler`` (label variance = the model's
                  predicted Var(m) + mean v, label cost 1, proxy cost 0,
                  max_cost = budget) + ``ASIMeanEstimator``

GLIDE needs Python >= 3.12 (install ``.[peers]`` in such an environment).
Peers' samplers are replayed per run exactly as the libraries draw (random
order, Bernoulli, cost cut-off; verified draw for draw against
``sampler.sample`` for unit costs) with the actual query costs in the cut-off;
the peers' estimators are evaluated vectorized and checked against the
library calls (``ppi_py.ppi_mean_pointestimate``,
``glide.estimators.ASIMeanEstimator.estimate``) on the first runs of every
cell (the run aborts on any mismatch).

Run (MQ2008 9 min, OHSUMED ~15 min wall on 2 heavily loaded cores; the two datasets
can run as two processes, ``--datasets mq2008`` / ``--datasets ohsumed``, seeds do
not depend on the split; concatenate their ``results.csv``)::

    python benchmarks/peers/run.py --reps 1000 --out benchmarks/peers/results

Writes ``results.csv`` (one row per dataset x scenario x metric x mode x
budget x method: MSE, the ratio to the best peer with its bootstrap interval,
coverage, bias in Monte-Carlo SE (max over contrasts), mean labels) and the
``ar_safe`` table ``results_safe.md``; ``report.py`` writes ``results.md`` and
the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from activerank.design.cancellation import changeable_costs, changeable_documents  # noqa: E402
from activerank.design.costs import document_costs, query_costs  # noqa: E402
from activerank.design.kinds.documents import document_target, inclusion_probabilities
from activerank.design.safe import candidate_scores, choose_scores, combine_stages, planned_pi  # noqa: E402
from activerank.design.sampling import expected_squared_error, optimal_distribution  # noqa: E402
from activerank.design.without_replacement import draw_without_replacement_batch  # noqa: E402
from activerank.experiments.harness import (  # noqa: E402
    FoldModels,
    ScenarioInstance,
    build_problem,
    load_dataset,
)
from activerank.design.draws import budget_stops, draw_budgeted_batch  # noqa: E402
from activerank.inference.crossfit import expected_distinct, model_assisted_crossfit_prefix  # noqa: E402
from activerank.inference.small_sample import cluster_slots, predicted_variance, snis_intervals_prefix  # noqa: E402
from activerank.design.kinds.documents.estimators import _ht_kernel
from activerank.design.kinds.documents import expected_poisson_variance
from activerank.inference.model_assisted import model_assisted_prefix  # noqa: E402
from activerank.inference.snis import snis_prefix  # noqa: E402
from activerank.inference.horvitz_thompson import hajek_kernel  # noqa: E402
from activerank.metrics import parse_metric  # noqa: E402
from activerank.relevance.models import fit_with_validation, make_relevance_model  # noqa: E402
from activerank.relevance.rankers import expected_gain_scores  # noqa: E402

SEED = 20
RANKERS = {"mq2008": dict(a=25, b=40, extra=(5, 30)), "ohsumed": dict(a=28, b=40, extra=(10, 20))}
BUDGETS = {"mq2008": (10, 20, 40, 80), "ohsumed": (5, 10, 20, 40)}
METRICS = ("err@10", "dcg@10")
AR_METHODS = ("ar_wr_ma", "ar_wor_unif", "ar_wor_unif_b1", "ar_wor_active", "ar_safe", "ar_default", "ar_auto",
              "ar_cancel", "ar_cancel_cf", "ar_cancel_wor", "ar_doc_dyn")
PEERS = ("ppi++", "glide_active", "glide_costopt")
N_CHECK = 15  # runs per cell checked against the peer libraries
EXACT = 1e-10  # |error| below this is floating-point rounding of an exact (census) estimate


# --------------------------------------------------------------------------- data and tasks


def fit_dataset(name, data_root=None, *, seed=SEED):
    """LightGBM relevance model on S1 (validation split of S1), predictions on S2-S5."""
    data, part = load_dataset(name, data_root)
    pool = data.subset(part != 1)
    train_all = data.subset(part == 1)
    gen = np.random.default_rng([seed, 1])
    perm = gen.permutation(train_all.n_queries)
    half = train_all.n_queries // 2
    train, vali = train_all.subset(np.sort(perm[:half])), train_all.subset(np.sort(perm[half:]))
    factory = partial(make_relevance_model, "lightgbm", pool.n_grades, random_state=seed, n_jobs=1)
    grid = {"num_leaves": [7, 31], "learning_rate": [0.03, 0.1], "n_estimators": [150]}
    fit = fit_with_validation(factory, grid, train, vali)
    probs = fit.model.predict_proba(pool.X)
    r = RANKERS[name]
    scores = {f"f{j}": pool.X[:, j - 1].copy() for j in (r["a"], r["b"], *r["extra"])}
    scores["model_eg"] = expected_gain_scores(probs)
    return FoldModels(pool, scores, {"model": probs}, {"lightgbm": fit.params})


def make_tasks(fm: FoldModels, name: str, metric: str, *, seed=SEED):
    """Per scenario: true values Y (k, N), predicted means/variances (k, N), costs by mode."""
    r = RANKERS[name]
    a, b = f"f{r['a']}", f"f{r['b']}"
    insts = {
        "one": [ScenarioInstance("one", "a", "one ranker", a, None, ("model",))],
        "two": [ScenarioInstance("two", "b", "two rankers", a, b, ("model",))],
        "index": [ScenarioInstance("index", "c", "index update", a, f"{a}@removed", ("model",))],
        "k_systems": [ScenarioInstance(f"k{j}", "b", "k systems", c, a, ("model",))
                      for j, c in enumerate([b, "model_eg", f"f{r['extra'][0]}", f"f{r['extra'][1]}"])],
    }
    doc_costs, cm = document_costs(fm.pool, fm.pool.n_docs, "constant")
    pool = fm.pool
    tasks = {}
    for key, lst in insts.items():
        probs = [build_problem(fm, inst, metric, cost_model="constant", rng=np.random.default_rng([seed, 7]))
                 for inst in lst]
        # the compared systems (k systems: candidates first, the baseline last) and contrasts C @ R
        if key == "one":
            systems, contrasts = [probs[0].rankings[0]], None
        elif key == "k_systems":
            systems, contrasts = [pr.rankings[0] for pr in probs] + [probs[0].rankings[1]], "baseline"
        else:
            systems, contrasts = list(probs[0].rankings), None
        Y = np.stack([pr.values for pr in probs])
        Mx = np.stack([pr.moments["model"][0] for pr in probs])
        V = np.stack([pr.moments["model"][1] for pr in probs])
        # label-independent values: zero variance under the uniform label distribution
        UV = np.stack([pr.moments["uniform"][1] for pr in probs]).sum(0)
        UM = np.stack([pr.moments["uniform"][0] for pr in probs])
        tops = []
        for pr in probs:
            tops += list(pr.rankings)
        full = query_costs(doc_costs, tops, model=cm)  # union of every evaluated top-10 list
        doc = full.cost
        N = Y.shape[1]
        p = probs[0].p
        t = dict(Y=Y, M=Mx, V=V, p=p, known=UV <= 1e-14, known_values=UM,
                 costs={"queries": np.ones(N), "documents": doc})
        # judge="changeable": a comparison query costs its changeable documents (in the unit of judging the
        # whole union, so budgets stay comparable); queries with none are a census stratum (contrast 0)
        det = np.zeros(N, dtype=bool)
        cancel = {"queries": np.ones(N), "documents": doc}
        if len(systems) > 1:
            cs = changeable_documents(systems, n_docs=pool.n_docs, metric=metric)
            det = cs.determined
            if not np.all(Y[:, det] == 0.0):
                raise AssertionError("a determined query has a nonzero contrast")
            cc = changeable_costs(doc_costs, cs, scale=full.scale)
            cancel = {"queries": np.where(det, 0.0, 1.0), "documents": cc.cost}
        t.update(det=det, cancel_costs=cancel, cost_scale=full.scale, systems=systems,
                 changes=cs if len(systems) > 1 else None)
        if parse_metric(metric).family == "additive":  # document-level designs (doc_dyn)
            dt = document_target(systems, n_docs=pool.n_docs, metric=metric, n_grades=pool.n_grades,
                                 contrasts=contrasts, query_weights=p)
            if not np.allclose(dt.value(pool.labels), p @ Y.T, rtol=1e-9, atol=1e-9):
                raise AssertionError("document-level target differs from the per-query values")
            mom = dt.moments(fm.probs["model"])
            t.update(doc_target=dt, doc_u=dt.utilities(pool.labels[dt.rows]), doc_m=mom.mean,
                     doc_unit_costs=doc_costs[dt.rows] / full.scale, probs=fm.probs["model"])
        tasks[key] = t
    return tasks


# --------------------------------------------------------------------------- activerank methods


def run_ar_wr_ma(t, lam, budgets, reps, rng):
    Y, Mx, V, p = t["Y"], t["M"], t["V"], t["p"]
    sq = sum(expected_squared_error(Mx[j], V[j], p) for j in range(Y.shape[0]))
    q = optimal_distribution(sq, lam, p, defensive=0.1)
    plan = draw_budgeted_batch(q, lam, float(max(budgets)), reps, rng)
    stops = budget_stops(plan, budgets)
    x = plan.queries
    est = np.stack([model_assisted_prefix(Y[j][x], Mx[j][x], p[x] / q[x], float(p @ Mx[j]), stops).estimate
                    for j in range(Y.shape[0])])
    se = np.stack([model_assisted_prefix(Y[j][x], Mx[j][x], p[x] / q[x], float(p @ Mx[j]), stops).standard_error
                   for j in range(Y.shape[0])])
    nq = np.take_along_axis(np.cumsum(plan.new, axis=1), np.maximum(stops - 1, 0).T, axis=1).T
    return est, se, nq


def _greg_batch(t, batch, prior=None):
    Y, Mx, p = t["Y"], t["M"], t["p"]
    pi, mask, o = batch.pi(), batch.mask(), batch.order[None]
    est, var = [], []
    for j in range(Y.shape[0]):  # loop over contrasts only
        e, v, _ = hajek_kernel(Y[j][o], pi, p[o], mask, predictions=Mx[j][o], pool_prediction=float(p @ Mx[j]),
                               prior_coefficient=prior)
        est.append(e)
        var.append(v)
    return np.stack(est), np.sqrt(np.stack(var)), batch.stops


def run_ar_wor(t, lam, budgets, reps, rng, scores, prior=None):
    batch = draw_without_replacement_batch(scores, lam, budgets, reps, rng)
    return _greg_batch(t, batch, prior)


def run_ar_safe(t, lam, budgets, reps, rng, *, share=0.25, min_pilot=4.0):
    """Two-stage safe design (activerank.design.safe), vectorized over runs.

    Queries whose value does not depend on the labels (zero variance under the
    uniform label distribution, e.g. identical top-10 lists of an index
    update) are known exactly and never sampled.  Pilot: uniform over the
    rest; stage 2: the model's best candidate unless the pilot refutes it.
    """
    Y, Mx, V, p = t["Y"], t["M"], t["V"], t["p"]
    S, N = Y.shape
    known = t["known"]
    if not np.allclose(Y[:, known], t["known_values"][:, known], atol=1e-9):
        raise AssertionError("label-independent queries do not have their predicted value")
    census = (Y[:, known] * p[known]).sum(1)
    pu = np.where(known, 0.0, p)                    # sampling part of the target weights
    lam_s = np.maximum(lam, 1e-12)
    shapes = [pu * np.sqrt(V.sum(0) / lam_s),
              pu * np.sqrt(sum(expected_squared_error(Mx[j], V[j], p) for j in range(S)) / lam_s)]
    cands = candidate_scores(pu, lam, shapes)
    Mrest = (Mx * pu).sum(1)
    vsum = V.sum(0)
    out_e, out_s, out_n, out_choice = [], [], [], []
    gen = np.random.default_rng(rng)
    for B in budgets:  # the pilot's share depends on the budget
        B1 = max(min_pilot, share * B)
        if B - B1 < 3:
            B1 = B
        b1 = draw_without_replacement_batch(pu, lam, [B1], reps, gen)
        m1, pi1, o1 = b1.mask()[0], b1.pi()[0], b1.order
        spent = np.where(m1, lam[o1], 0.0).sum(1)
        B2 = np.maximum(B - spent, 1e-9)
        pp = planned_pi(cands, lam, float(np.mean(B2)))
        pilot_pi = planned_pi(cands[:1], lam, B1)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            mv = np.array([np.sum(np.where(pu > 0, pu**2 * vsum * (1 / c - 1), 0.0)) for c in pp])
            mv1 = np.sum(np.where(pu > 0, pu**2 * vsum * (1 / pilot_pi - 1), 0.0))
        dec = choose_scores(Y[:, o1], Mx[:, o1], pi1, pu[o1], m1, Mrest, pp[:, o1], model_variance=mv,
                           prior_coefficient=1.0)
        sc = cands[dec.choice].copy()
        rows = np.broadcast_to(np.arange(reps)[:, None], o1.shape)
        sc[rows[m1], o1[m1]] = 0.0                       # stage 2 samples the queries not yet judged
        two = B1 < B
        if two:
            b2 = draw_without_replacement_batch(sc, lam, B2[None, :], reps, gen)
            m2, pi2, o2 = b2.mask()[0], b2.pi()[0], b2.order
        in1 = np.zeros((reps, N), bool)
        in1[rows[m1], o1[m1]] = True
        p_rest = pu.sum() - (pu[None] * in1).sum(1)
        est, var = [], []
        for j in range(S):
            e1, v1 = dec.stage1_estimate[j], dec.stage1_variance[j]
            if two:
                cen = (np.where(in1, Y[j][None] * pu[None], 0.0)).sum(1)
                m_rest = Mrest[j] - (np.where(in1, Mx[j][None] * pu[None], 0.0)).sum(1)
                e2, v2, _ = hajek_kernel(Y[j][o2], pi2, pu[o2], m2, predictions=Mx[j][o2],
                                         pool_prediction=m_rest / p_rest, prior_coefficient=1.0)
                R2, V2 = cen + p_rest * e2, p_rest**2 * v2
                pv2 = mv[dec.choice]
                e, v, _ = combine_stages(e1 * pu.sum(), v1 * pu.sum() ** 2, R2, V2, pv2, mv1)
            else:
                e, v = e1 * pu.sum(), v1 * pu.sum() ** 2
            est.append(census[j] + e), var.append(v)
        n2 = m2.sum(1) if two else 0
        out_e.append(np.stack(est)), out_s.append(np.sqrt(np.stack(var)))
        out_n.append(m1.sum(1) + n2), out_choice.append(dec.choice)
    return np.stack(out_e, 1), np.stack(out_s, 1), np.stack(out_n), np.stack(out_choice)


def census_design(t, lam):
    """The public API's ``active`` design with ``judge="changeable"`` (activerank.design.design.build_design):
    q* = p' sqrt(E[(L - R')^2 | x] / lambda(x)) mixed with p' (defensive 0.1) over the undetermined queries
    (p' = p renormalized on them, R' their model mean); determined queries get q = 0 (census, value 0)."""
    Mx, V, p, det = t["M"], t["V"], t["p"], t["det"]
    mass = float(p[~det].sum())
    pq = np.where(det, 0.0, p) / mass
    sq = sum(expected_squared_error(Mx[j], V[j], pq) for j in range(Mx.shape[0]))
    q = optimal_distribution(sq, np.where(det, 1.0, lam), pq, defensive=0.1)
    return np.where(det, 0.0, q), pq, mass, sq


def run_ar_census(t, lam, budgets, reps, rng):
    """Active q* with the changeable-document costs ``lam`` and the census stratum, three estimators on
    the same draws (with replacement, the engine's budgeted loop):

    ``snis``      the API default (method="active": self-normalized), ``mass * SNIS`` over the sampled stratum
    ``ma``        tuned model-assisted (control variate m(x), exact pool mean), ``mass * MA``
    ``crossfit``  the engine's model_assisted estimator (cross-fitted, jackknifed, t intervals; with the
                  engine's prior and expected number of distinct queries)

    Coverage flags: the API's Student-t intervals (SNIS: cluster SE moderated by the model's predicted
    variance; crossfit: its own), on the sampled stratum's mean.
    """
    Y, Mx = t["Y"], t["M"]
    q, pq, mass, sq = census_design(t, lam)
    plan = draw_budgeted_batch(q, np.where(t["det"], 1.0, lam), float(max(budgets)), reps, rng)
    stops = budget_stops(plan, budgets)
    x = plan.queries
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(plan.valid, pq[x] / np.where(q[x] > 0, q[x], 1.0), 0.0)
    out = {k: (np.empty((Y.shape[0],) + stops.shape), np.empty((Y.shape[0],) + stops.shape))
           for k in ("snis", "ma", "crossfit")}
    covered = {k: np.empty((Y.shape[0],) + stops.shape, dtype=bool) for k in ("snis", "crossfit")}
    # the engine's gates and priors (activerank.design.kinds.query.small_sample): the model's predicted per-draw
    # variance and the design's expected number of distinct queries at each budget
    ed = np.array([expected_distinct(q, lam, float(B)) for B in budgets])
    slots = cluster_slots(x)
    for j in range(Y.shape[0]):  # loop over contrasts only
        pool_pred = float(pq @ Mx[j])
        truth = float(pq @ Y[j])  # the sampled stratum's mean (the census part is exact)
        prior = predicted_variance(pq, q, Mx[j], t["V"][j])
        r = snis_prefix(Y[j][x], w, stops)
        out["snis"][0][j], out["snis"][1][j] = mass * r.estimate, mass * r.standard_error
        # the API's default interval: Student-t over distinct queries, moderated by the model's prior
        ri = snis_intervals_prefix(Y[j][x], w, x, stops, ci="t", prior=prior, slots=slots)
        if not np.allclose(ri.estimate, r.estimate, rtol=1e-9, atol=1e-12, equal_nan=True):
            raise AssertionError("snis_intervals_prefix and snis_prefix disagree on the estimate")
        covered["snis"][j] = ri.covers(truth)
        r = model_assisted_prefix(Y[j][x], Mx[j][x], w, pool_pred, stops)
        out["ma"][0][j], out["ma"][1][j] = mass * r.estimate, mass * r.standard_error
        r = model_assisted_crossfit_prefix(Y[j][x], Mx[j][x], w, pool_pred, x, stops, ci="t", prior=prior,
                                           expected_distinct=ed, slots=slots)
        out["crossfit"][0][j], out["crossfit"][1][j] = mass * r.estimate, mass * r.standard_error
        covered["crossfit"][j] = r.covers(truth)
    nq = np.take_along_axis(np.cumsum(plan.new, axis=1), np.maximum(stops - 1, 0).T, axis=1).T
    # the API's predicted variance of this design at each budget (activerank.design.auto)
    live = q > 0
    per_draw = float(np.sum(pq[live] ** 2 / q[live] * sq[live]))
    v_pred = mass**2 * per_draw * float(q @ lam) / np.asarray(budgets, dtype=float)
    return out, nq, covered, v_pred


def run_ar_cancel_wor(t, lam, budgets, reps, rng):
    """Sequential Poisson without replacement over the undetermined queries with the census design's
    scores and the changeable-document costs, tuned GREG (prior coefficient 1); census stratum exact."""
    Y, Mx = t["Y"], t["M"]
    q, pq, mass, _ = census_design(t, lam)
    live = ~t["det"]
    sub = dict(Y=Y[:, live], M=Mx[:, live], p=pq[live])
    e, s, n = run_ar_wor(sub, lam[live], budgets, reps, rng, q[live], prior=1.0)
    return mass * e, mass * s, n


def run_doc_dyn(t, budgets, reps, rng, chunk=250):
    """doc_dyn as the engine runs it (activerank.design.kinds.documents): Poisson pi-ps on the
    model's residual variance (defensive 0.1), units = pooled documents of the compared top-10 lists
    (cancelling ones have pi = 0), model total + Horvitz-Thompson of the residuals.  The budget is spent
    in expectation (unit: judging a whole query's union, as the documents mode)."""
    dt, probs, c = t["doc_target"], t["probs"], t["doc_unit_costs"]
    m = t["doc_m"]
    e = t["doc_u"] - m
    M = dt.weights.T @ m
    S = dt.n_targets
    est = np.empty((S, len(budgets), reps))
    se = np.empty_like(est)
    cost = np.empty((len(budgets), reps))
    ndocs = np.empty((len(budgets), reps))
    v_pred = np.full(len(budgets), np.inf)
    designs = []
    for bi, B in enumerate(budgets):
        try:
            d = inclusion_probabilities(dt, probs, float(B), utility="residual", costs=c, defensive=0.1)
        except ValueError:  # the budget buys fewer than 2 documents in expectation
            d = None
        designs.append(d)
        if d is not None:
            v_pred[bi] = expected_poisson_variance(dt, d, probs, control_variate=True)
    for start in range(0, reps, chunk):  # common random numbers across budgets
        U = rng.random((min(chunk, reps - start), dt.n_units))
        sl = slice(start, start + U.shape[0])
        for bi, d in enumerate(designs):
            if d is None:
                est[:, bi, sl], se[:, bi, sl], cost[bi, sl], ndocs[bi, sl] = np.nan, np.nan, 0.0, 0.0
                continue
            mask = (U < d.pi).astype(np.float64)
            e_, cov = _ht_kernel(dt.weights, e, d.pi, mask, M)
            est[:, bi, sl] = e_.T
            se[:, bi, sl] = np.sqrt(np.clip(np.diagonal(cov, axis1=-2, axis2=-1), 0, None)).T
            cost[bi, sl] = mask @ c
            ndocs[bi, sl] = mask.sum(1)
    return est, se, cost, v_pred


# --------------------------------------------------------------------------- peers


def _order_and_cutoff(pi_draw, lam, budget, gen):
    """GLIDE's draw: random order, Bernoulli(pi), keep the prefix whose labeling cost fits the budget."""
    N = lam.size
    order = gen.permutation(N)
    xi = gen.binomial(n=1, p=pi_draw[order]).astype(float)
    cum = np.cumsum(xi * lam[order])
    cutoff = int(np.searchsorted(cum, budget, side="right"))
    return order[:cutoff], xi[:cutoff]


def ppi_vectorized(Y, Yhat, lab):
    """ppi_py.ppi_mean_pointestimate (lam=None, default options), rows of ``lab`` = runs."""
    n = lab.sum(1)
    Nu = lab.shape[1] - n
    with np.errstate(invalid="ignore", divide="ignore"):
        yl = np.where(lab, Y, 0.0).sum(1) / n
        hl = np.where(lab, Yhat, 0.0).sum(1) / n
        hu = np.where(~lab, Yhat, 0.0).sum(1) / Nu
        cov = np.where(lab, (Y - yl[:, None]) * (Yhat - hl[:, None]), 0.0).sum(1) / n
        var_all = Yhat.var(ddof=1)
        lam = np.clip(cov / ((1 + n / Nu) * var_all), 0.0, 1.0)
        return lam * hu + yl - lam * hl


def run_ppi(t, lam, budgets, reps, gen, check):
    from ppi_py import ppi_mean_pointestimate

    Y, Mx, p = t["Y"], t["M"], t["p"]
    S, N = Y.shape
    est = np.full((S, len(budgets), reps), np.nan)
    nl = np.zeros((len(budgets), reps))
    for bi, B in enumerate(budgets):
        lab = np.zeros((reps, N), bool)
        for r in range(reps):  # per-run draws, as a user of the library would make them
            o, _ = _order_and_cutoff(np.ones(N), lam, B, gen)
            lab[r, o] = True
        nl[bi] = lab.sum(1)
        for j in range(S):
            est[j, bi] = ppi_vectorized(Y[j][None], Mx[j][None], lab)
            for r in range(min(check, reps)):
                ref = float(np.squeeze(ppi_mean_pointestimate(Y[j][lab[r]], Mx[j][lab[r]], Mx[j][~lab[r]])))
                if not np.isclose(ref, est[j, bi, r], rtol=1e-9, atol=1e-12):
                    raise AssertionError(f"ppi_py mismatch: {ref} vs {est[j, bi, r]}")
    return est, nl


def glide_pi(kind, t, B):
    from glide.samplers import ActiveSampler, CostOptimalSampler

    Mx, V = t["M"], t["V"]
    u = np.sqrt(np.maximum(V.sum(0), 0.0))
    u = np.maximum(u, 1e-6 * max(u.max(), 1e-12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "glide_active":
            return ActiveSampler()._compute_probabilities(u, int(round(B)))
        s = CostOptimalSampler()
        s._y_true_variance = float(sum(Mx[j].var(ddof=1) + V[j].mean() for j in range(Mx.shape[0])))
        tau = s._find_optimal_threshold(u, 1.0, 0.0)
        return s._compute_per_sample_probabilities(tau, s._compute_gamma(tau, u, 1.0, 0.0), u)


def asi_vectorized(y, yhat, xi, pi, proc):
    """glide ASIMeanEstimator.estimate (power tuning) point estimates; rows = runs, ``proc`` = processed."""
    n = proc.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(proc, xi / np.where(proc, pi, 1.0), 0.0)
        a = np.where(proc, yhat * (ratio - 1), 0.0)
        b = np.where(proc, y * ratio, 0.0)
        am = a.sum(1) / n
        bm = b.sum(1) / n
        cov = np.where(proc, (a - am[:, None]) * (b - bm[:, None]), 0.0).sum(1)
        var = np.where(proc, (a - am[:, None]) ** 2, 0.0).sum(1)
        lam_ = cov / var
        rect = np.where(proc, lam_[:, None] * yhat + xi * (y - lam_[:, None] * yhat) / np.where(proc, pi, 1.0), 0.0)
        return rect.sum(1) / n


def run_glide(kind, t, lam, budgets, reps, gen, check):
    from glide.estimators import ASIMeanEstimator
    from glide.samplers import ActiveSampler

    Y, Mx = t["Y"], t["M"]
    S, N = Y.shape
    est = np.full((S, len(budgets), reps), np.nan)
    nl = np.zeros((len(budgets), reps))
    fallbacks = 0
    for bi, B in enumerate(budgets):
        pi_all = glide_pi(kind, t, B)
        proc = np.zeros((reps, N), bool)
        xi = np.zeros((reps, N))
        for r in range(reps):  # per-run draws exactly as the sampler makes them
            o, x = _order_and_cutoff(pi_all, lam, B, gen)
            proc[r, o] = True
            xi[r, o] = x
        nl[bi] = xi.sum(1)
        pim = np.broadcast_to(pi_all, (reps, N))
        for j in range(S):
            y = np.where(xi > 0, Y[j][None], 0.0)
            e = asi_vectorized(y, np.broadcast_to(Mx[j], (reps, N)), xi, pim, proc)
            bad = ~np.isfinite(e)
            if bad.any():  # the library raises or returns NaN (constant rectifiers): use its lambda = 1
                fallbacks += int(bad.sum())
                plain = np.where(proc, Mx[j][None] + xi * (Y[j][None] - Mx[j][None]) / np.where(proc, pim, 1.0),
                                 0.0).sum(1) / proc.sum(1)
                e = np.where(bad, plain, e)
            est[j, bi] = e
            for r in range(min(check, reps)):
                yt = np.where(xi[r] > 0, Y[j], np.nan)
                pr = np.where(proc[r], pi_all, 0.0)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ref = ASIMeanEstimator().estimate(yt, Mx[j], pr).confidence_interval.mean
                except ValueError:
                    continue
                if np.isfinite(ref) and not np.isclose(ref, e[r], rtol=1e-8, atol=1e-12):
                    raise AssertionError(f"GLIDE ASI mismatch: {ref} vs {e[r]}")
        if kind == "glide_active" and bi == 0 and np.all(lam == 1.0):
            # the replayed draw is the library's draw for unit costs (same random stream)
            g1, g2 = np.random.default_rng(123), np.random.default_rng(123)
            u = np.sqrt(np.maximum(t["V"].sum(0), 0.0))
            u = np.maximum(u, 1e-6 * max(u.max(), 1e-12))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pi_lib, xi_lib = ActiveSampler().sample(u, int(round(B)), random_seed=g1)
            o, x = _order_and_cutoff(pi_all, lam, B, g2)
            mine = np.full(N, np.nan)
            mine[o] = x
            if not (np.array_equal(np.isnan(mine), np.isnan(xi_lib))
                    and np.array_equal(mine[~np.isnan(mine)], xi_lib[~np.isnan(xi_lib)])):
                raise AssertionError("GLIDE draw replay differs from ActiveSampler.sample")
    return est, nl, fallbacks


# --------------------------------------------------------------------------- driver


def boot_ratio(num, den, n_boot, gen):
    """Bootstrap (independent resampling of runs) 95% interval of mean(num) / mean(den)."""
    i = gen.integers(0, num.size, (n_boot, num.size))
    k = gen.integers(0, den.size, (n_boot, den.size))
    r = num[i].mean(1) / den[k].mean(1)
    return np.quantile(r, [0.025, 0.975])


def run(args):
    root = args.data
    rows = []
    for ds in args.datasets:
        t0 = time.perf_counter()
        fm = fit_dataset(ds, root)
        budgets = BUDGETS[ds]
        print(f"{ds}: pool {fm.pool.n_queries} queries, model {fm.params} ({time.perf_counter() - t0:.0f}s)",
              flush=True)
        for mi, metric in enumerate(METRICS):
            tasks = make_tasks(fm, ds, metric)
            for si, (scen, t) in enumerate(tasks.items()):
                if args.scenarios and scen not in args.scenarios:
                    continue
                R = t["p"] @ t["Y"].T
                for ci, mode in enumerate(("queries", "documents")):
                    lam = t["costs"][mode]
                    seed = [SEED, ["mq2008", "ohsumed"].index(ds), mi, si, ci]
                    res = {}
                    g = lambda k: np.random.default_rng(seed + [k])  # noqa: E731
                    reps = args.reps
                    e, s, n = run_ar_wr_ma(t, lam, budgets, reps, g(0))
                    res["ar_wr_ma"] = (e, s, n)
                    e, s, n = run_ar_wor(t, lam, budgets, reps, g(1), t["p"])
                    res["ar_wor_unif"] = (e, s, n)
                    act = optimal_distribution(t["V"].sum(0), lam, t["p"], defensive=0.1)
                    res["ar_wor_active"] = run_ar_wor(t, lam, budgets, reps, g(2), act, prior=1.0)
                    res["ar_wor_unif_b1"] = run_ar_wor(t, lam, budgets, reps, g(1), t["p"], prior=1.0)
                    e, s, n, choice = run_ar_safe(t, lam, budgets, reps, g(3))
                    res["ar_safe"] = (e, s, n)
                    # the public API's default and the cancellation / document-level variants
                    lc = t["cancel_costs"][mode]
                    cen, nq_c, cov_cf, v_query = run_ar_census(t, lc, budgets, reps, g(10))
                    res["ar_default"] = (*cen["snis"], nq_c)
                    res["ar_auto"] = res["ar_default"]
                    auto_doc = np.zeros(len(budgets), dtype=bool)
                    cover = {"ar_default": cov_cf["snis"], "ar_auto": cov_cf["snis"]}
                    if scen != "one":
                        res["ar_cancel"] = (*cen["ma"], nq_c)
                        res["ar_cancel_cf"] = (*cen["crossfit"], nq_c)
                        cover["ar_cancel_cf"] = cov_cf["crossfit"]
                        res["ar_cancel_wor"] = run_ar_cancel_wor(t, lc, budgets, reps, g(11))
                    if "doc_target" in t and mode == "documents":
                        e, s, cost, v_doc = run_doc_dyn(t, budgets, reps, g(12))
                        res["ar_doc_dyn"] = (e, s, cost)
                        # method="auto": the smaller predicted variance at the budget (activerank.design.auto)
                        auto_doc = v_doc < v_query
                        pick = lambda a, b: np.where(auto_doc[None, :, None], a, b)  # noqa: E731
                        res["ar_auto"] = (pick(e, cen["snis"][0]), pick(s, cen["snis"][1]),
                                          np.where(auto_doc[:, None], cost, nq_c))
                        # doc_dyn's own intervals are normal (the engine's document-level estimate)
                        ok = (np.abs(np.where(np.abs(e - R[:, None, None]) < EXACT, 0.0, e - R[:, None, None]))
                              <= 1.959964 * s)
                        cover["ar_auto"] = np.where(auto_doc[None, :, None], ok, cov_cf["snis"])
                    e, n = run_ppi(t, lam, budgets, reps, g(4), N_CHECK)
                    res["ppi++"] = (e, None, n)
                    fb = {}
                    if not args.no_glide:
                        for k, kind in enumerate(("glide_active", "glide_costopt")):
                            e, n, fb[kind] = run_glide(kind, t, lam, budgets, reps, g(5 + k), N_CHECK)
                            res[kind] = (e, None, n)
                    sq = {k: ((v[0] - R[:, None, None]) ** 2).sum(0) for k, v in res.items()}  # (n_b, reps)
                    bg = np.random.default_rng(seed + [99])
                    for bi, B in enumerate(budgets):
                        peer_mse = {k: sq[k][bi].mean() for k in PEERS if k in sq}
                        best = min(peer_mse, key=peer_mse.get)
                        for k, v in res.items():
                            mse = sq[k][bi].mean()
                            row = dict(dataset=ds, scenario=scen, metric=metric, mode=mode, budget=B, method=k,
                                       mse=mse, mse_se=sq[k][bi].std(ddof=1) / np.sqrt(reps),
                                       bias=float(np.mean((v[0][:, bi] - R[:, None]).sum(0))),
                                       labels=float(np.mean(v[2][bi])), best_peer=best,
                                       best_peer_mse=peer_mse[best], reps=reps,
                                       glide_fallbacks=fb.get(k, 0))
                            err = v[0][:, bi] - R[:, None]  # (contrasts, reps)
                            # a design that judged every changeable document is exact: errors are rounding
                            err = np.where(np.abs(err) < EXACT, 0.0, err)
                            with np.errstate(invalid="ignore", divide="ignore"):
                                bz = np.abs(err.mean(1)) / (err.std(1, ddof=1) / np.sqrt(reps))
                            row["bias_z"] = float(np.max(np.where(np.abs(err.mean(1)) == 0, 0.0, bz)))
                            if k in cover:
                                row["coverage"] = float(np.mean(cover[k][:, bi]))
                            elif v[1] is not None:
                                z = np.abs(err) <= 1.959964 * v[1][:, bi]
                                row["coverage"] = float(np.mean(z))
                            if k == "ar_auto":
                                row["auto_method"] = "doc_dyn" if auto_doc[bi] else "active"
                            if k == "ar_safe":
                                row["share_active"] = float(np.mean(choice[bi] > 0))
                            ratio = mse / peer_mse[best]
                            lo, hi = boot_ratio(sq[k][bi], sq[best][bi], args.n_boot, bg)
                            row.update(ratio=ratio, ratio_low=lo, ratio_high=hi)
                            rows.append(row)
                    if args.out:  # checkpoint: a run cut short keeps its finished cells
                        Path(args.out).mkdir(parents=True, exist_ok=True)
                        pd.DataFrame(rows).to_csv(Path(args.out) / "results.partial.csv", index=False)
                    print(f"  {ds} {metric} {scen} {mode}: " + ", ".join(
                        f"{k} {np.mean([r['ratio'] for r in rows[-len(budgets) * len(res):] if r['method'] == k]):.2f}"
                        for k in AR_METHODS if k in res), flush=True)
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame) -> str:
    lines = ["| dataset | scenario | metric | mode | " + " | ".join(f"Λ={i + 1}" for i in range(4)) + " |",
             "|---|---|---|---|---|---|---|---|"]
    sub = df[df.method == "ar_safe"]
    for (ds, sc, me, mo), g in sub.groupby(["dataset", "scenario", "metric", "mode"], sort=False):
        cells = []
        for _, r in g.sort_values("budget").iterrows():
            win = "**" if r.ratio_high < 1 else ""
            cells.append(f"{win}{r.ratio:.2f}{win} [{r.ratio_low:.2f}, {r.ratio_high:.2f}] ({r.budget:g}, {r.best_peer})")
        lines.append(f"| {ds} | {sc} | {me} | {mo} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None, help="data root (default $ACTIVERANK_DATA)")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--datasets", default="mq2008,ohsumed")
    ap.add_argument("--scenarios", default="")
    ap.add_argument("--no-glide", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    t0 = time.perf_counter()
    df = run(args)
    print(f"done in {time.perf_counter() - t0:.0f}s")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        df.to_csv(out / "results.csv", index=False)
        (out / "results_safe.md").write_text(markdown(df) + "\n")
    return df


if __name__ == "__main__":
    main()
