"""Simulated judges as the relevance model on the LETOR tasks (issue 33, item 2).

A judge (an LLM, say) grades every pool document for free; human labels cost.  This script simulates judges
of known quality from the true labels and measures how much a judge calibrated on the labels a team already
holds saves, on ``run.py``'s tasks, folds, truth, cost model and budget grid (DCG@10, budgets in units of
judging a whole query, savings vs passive query sampling at equal documents).

Judges (grades on the human scale, simulated independently on the training partition and on the pool with the
same parameters):

* ``kappa_0.2`` .. ``kappa_0.8``: keeps the true grade with probability ``a``, otherwise moves one grade up or
  down, uniformly among the valid neighbours (grade 0 can only move up, the top grade only down).  ``a`` is
  solved per dataset so that the population quadratic-weighted kappa (expected confusion matrix under the
  dataset's grade frequencies, all five partitions) hits the level; the achieved kappa on the simulated pool
  grades is reported next to it.
* ``biased``: the kappa-0.6 judge, then one grade higher (capped at the top grade) on a random half of the
  queries, the half drawn independently on the training partition and on the pool.
* ``easy_hard``: the true grade on *easy* queries, a grade independent of the truth (drawn from the dataset's
  grade frequencies) on *hard* ones.  Hard = the half of the partition's queries where the RF-regression feature
  model errs most: largest mean over the query's documents of ``(y - E_p[y])^2``, with ``p`` the model's
  out-of-sample probabilities (below).  The judge is right where the model already is and useless where it
  is not.
* ``useless``: grades drawn from the dataset's grade frequencies, independent of the truth (kappa ~ 0).

Calibration (offline, issue 33 item 2(a): the labels a team already holds): per fold and task,
:class:`activerank.judges.JudgeCalibrator` (``C="auto"``, folds by query) is fitted on the *training
partition*'s human labels with the judge's grades and the task's feature model probabilities as
``model_probs``, then predicts ``p(y | x, z)`` on the pool (with the pool's feature model probabilities, the
ones ``run.py`` uses).  The training partition's feature probabilities must be out of sample like the pool's:
they are cross-fitted over the two query halves ``fit_fold`` splits the partition into (the model fitted on
one half, with the hyper-parameters ``fit_fold`` tuned, predicts the other; ``rf_regression_small`` on a
quarter of the half, as in ``fit_fold``).  The calibrated probabilities are the relevance model of the
design, so the design is fixed before any pool label is drawn and stays unbiased whatever the judge is worth.

Design: ``doc_dyn`` (the default's choice on every one of these tasks, ``default_check.md``) by its registered
plug-in's batched hard-budget path (``registered.py``); ``none`` is the same design on the feature model alone
(today's number).  Every judge of a (fold, task) runs on the same random numbers (paired).  Passive query
sampling (the reference) by ``run.py``'s kernel.  Judges' grades cost nothing; only human labels count.

Reported: savings vs passive (``run.py``'s :func:`savings`: the budget at which the mean loss reaches
passive's at the reference budget, 95% bootstrap over repetitions); the MSE ratio judge / ``none`` at the
reference budget (paired bootstrap) and its largest value over the budgets of at least 10 queries' worth;
bias / SE and coverage per budget pooled over folds (``run.py``'s :func:`pooled_check`) over the budgets of at
least 10 queries' worth; the calibrated model's log-loss on the pool against the feature model's.

Tasks: single ranker ``a_rf`` (RF regression), pair ``b_ologit_rf`` (ordered logit vs RF regression; its
model is the mean of the two), ``k_baseline`` (four candidates vs the RF-regression baseline).

Run:  python benchmarks/document_level/judge_check.py [--datasets mq2008,ohsumed] [--folds 1,2,3,4,5]
      [--reps 300] [--tasks a_rf,b_ologit_rf,k_baseline] [--judges none,kappa_0.2,...]
Needs ``ACTIVERANK_DATA`` (or ``--data``); without the data it prints a message and exits 0.
Writes results/judge_check.csv (savings and checks), results/judge_check_kappa.csv (judges' a and kappa) and
results/judge_check.md.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy.optimize import brentq

import run as bench
from common import RESULTS, TASKS, Task, build_task, config
from registered import registered
from report import TITLES

from activerank.design.costs import document_costs
from activerank.experiments.harness import DATASETS, fit_fold
from activerank.experiments.data import load_dataset
from activerank.judges import JudgeCalibrator, JudgeOutputs
from activerank.judges.report import weighted_kappa
from activerank.relevance.models import make_relevance_model

KAPPAS = (0.2, 0.4, 0.6, 0.8)
JUDGES = ("none",) + tuple(f"kappa_{k}" for k in KAPPAS) + ("biased", "easy_hard", "useless")
DEFAULT_TASKS = ("a_rf", "b_ologit_rf", "k_baseline")
MIN_BUDGET = 10.0  # the bias / coverage goal applies from 10 queries' worth of labels
HARD_MODEL = "rf_regression"  # the feature model whose per-query error defines easy / hard queries


# --------------------------------------------------------------------------- judges


def neighbour_matrix(a: float, n_grades: int) -> np.ndarray:
    """M[y, z] = P(judge says z | truth y): keep w.p. ``a``, else one grade off, uniformly among valid ones."""
    M = np.zeros((n_grades, n_grades))
    for y in range(n_grades):
        nb = [z for z in (y - 1, y + 1) if 0 <= z < n_grades]
        M[y, y] = a
        for z in nb:
            M[y, z] = (1.0 - a) / len(nb)
    return M


def population_kappa(a: float, freq: np.ndarray) -> float:
    """Quadratic-weighted kappa of the neighbour judge against truth with grade frequencies ``freq``."""
    n = freq.size
    joint = freq[:, None] * neighbour_matrix(a, n)
    w = (np.arange(n)[:, None] - np.arange(n)[None, :]) ** 2
    expected = np.outer(freq, joint.sum(axis=0))
    return float(1.0 - (w * joint).sum() / (w * expected).sum())


def solve_a(kappa: float, freq: np.ndarray) -> float:
    """The keep probability ``a`` whose population kappa is ``kappa`` (kappa increases with ``a``)."""
    lo, hi = population_kappa(0.0, freq), population_kappa(1.0, freq)
    if not lo <= kappa <= hi:  # e.g. on five grades one grade off is a small error: kappa >= 0.58 at a = 0
        return float("nan")
    return float(brentq(lambda a: population_kappa(a, freq) - kappa, 0.0, 1.0, xtol=1e-10))


def neighbour_grades(labels, a, n_grades, rng):
    """The neighbour judge's grades: keep w.p. ``a``, else a uniformly chosen valid neighbour."""
    labels = np.asarray(labels)
    move = rng.random(labels.size) >= a
    up = rng.random(labels.size) < 0.5
    up = np.where(labels == 0, True, np.where(labels == n_grades - 1, False, up))
    return np.where(move, labels + np.where(up, 1, -1), labels)


def query_rows(offsets, queries):
    """Document rows of ``queries`` (boolean mask over rows)."""
    q_of_row = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    mask = np.zeros(offsets.size - 1, dtype=bool)
    mask[queries] = True
    return mask[q_of_row]


def hard_queries(labels, probs, offsets):
    """Boolean per query: in the half with the largest mean ``(y - E_p[y])^2`` (ties by query order)."""
    eg = probs @ np.arange(probs.shape[1])
    err = (labels - eg) ** 2
    per_q = np.add.reduceat(err, offsets[:-1]) / np.diff(offsets)
    order = np.argsort(-per_q, kind="stable")
    hard = np.zeros(per_q.size, dtype=bool)
    hard[order[: per_q.size // 2]] = True
    return hard


def simulate_judge(name, labels, offsets, *, a, freq, hard_probs, rng):
    """Grades of judge ``name`` on one partition (or the pool) from its true ``labels``."""
    G = freq.size
    if name.startswith("kappa_"):
        return neighbour_grades(labels, a[name], G, rng)
    if name == "biased":
        z = neighbour_grades(labels, a["kappa_0.6"], G, rng)
        nq = offsets.size - 1
        half = rng.permutation(nq)[: nq // 2]
        return np.where(query_rows(offsets, half), np.minimum(z + 1, G - 1), z)
    if name == "easy_hard":
        hard = hard_queries(labels, hard_probs, offsets)
        noise = rng.choice(G, size=labels.size, p=freq)
        return np.where(query_rows(offsets, np.flatnonzero(hard)), noise, labels)
    if name == "useless":
        return rng.choice(G, size=labels.size, p=freq)
    raise ValueError(name)


def as_judge(grades, n_grades, name):
    return JudgeOutputs(name=name, kind="grades", values=np.asarray(grades, dtype=np.float64), levels=n_grades)


# --------------------------------------------------------------------------- training-partition model


def train_partition_probs(spec, fold, cfg, fm, data, part):
    """Out-of-sample feature-model probabilities on the training partition (cross-fitted over fit_fold's halves).

    Returns ``(train, probs by model name)``.
    """
    train_all = data.subset(part == fold)
    gen = np.random.default_rng([cfg.seed, fold, 17])  # fit_fold's split of the partition
    perm = gen.permutation(train_all.n_queries)
    half = train_all.n_queries // 2
    halves = (np.sort(perm[:half]), np.sort(perm[half:]))
    small_gen = (gen, np.random.default_rng([cfg.seed, fold, 18]))
    G = spec.n_grades
    rf = dict(n_estimators=cfg.n_trees, n_jobs=cfg.n_jobs, max_features=0.5)
    out = {n: np.zeros((train_all.n_docs, G)) for n in fm.probs}
    for h in (0, 1):
        fit_q, pred_q = halves[h], halves[1 - h]
        fit_d = train_all.subset(fit_q)
        small = fit_d.subset(np.sort(small_gen[h].permutation(fit_d.n_queries)[
            : max(2, int(cfg.small_fraction * fit_d.n_queries))]))
        rows = query_rows(train_all.offsets, pred_q)
        X = train_all.X[rows]
        for name in out:
            params = fm.params[name]
            if name == "ordered_logit":
                model = make_relevance_model(name, G, **params)
            else:
                base = "rf_regression" if name == "rf_regression_small" else name
                model = make_relevance_model(base, G, random_state=cfg.seed, **rf, **params)
            d = small if name == "rf_regression_small" else fit_d
            out[name][rows] = model.fit(d.X, d.labels).predict_proba(X)
    return train_all, out


# --------------------------------------------------------------------------- one dataset


def log_loss(p, y):
    return float(-np.mean(np.log(np.clip(p[np.arange(y.size), y], 1e-15, 1.0))))


def mse_curve(r):
    """Per budget and repetition: squared error summed over the targets (from run.py's packed loss)."""
    return r["loss"] ** 2 if r["truth"].size == 1 else r["loss"]


def dataset_judges(ds, args, cfg, say):
    """A dataset's data, the judges' keep probabilities ``a`` and the judges that can run on it.

    Returns ``(env, kappa_rows)``; ``env`` holds what :func:`fold_judges` and :func:`calibrated` need.
    """
    spec = DATASETS[ds]
    G = spec.n_grades
    data, part = load_dataset(spec, cfg.data_root)
    freq = np.bincount(data.labels, minlength=G) / data.labels.size
    a = {f"kappa_{k}": solve_a(k, freq) for k in KAPPAS}
    judges = args.judges.split(",")
    kappa_rows = []
    for name in [j for j in judges if j in a and not np.isfinite(a[j])]:
        say(f"{ds}: {name} skipped: the neighbour judge's kappa is {population_kappa(0.0, freq):.3f} already at a = 0")
        kappa_rows.append(dict(dataset=ds, fold=0, judge=name, a=np.nan, kappa_population=np.nan,
                               kappa_train=np.nan, kappa_pool=np.nan,
                               note=f"unreachable: kappa at a = 0 is {population_kappa(0.0, freq):.3f}"))
    judges = [j for j in judges if not (j in a and not np.isfinite(a[j]))]
    if "biased" in judges and not np.isfinite(a["kappa_0.6"]):
        judges.remove("biased")
    env = dict(ds=ds, spec=spec, G=G, rel=bench.REL[bench.REL <= max(spec.budgets)], di=list(DATASETS).index(ds),
               data=data, part=part, freq=freq, a=a, judges=judges, cfg=cfg)
    return env, kappa_rows


def fold_judges(env, fold):
    """One fold: the fitted models, document costs, the training partition and every judge's grades.

    Returns ``(fold_env, kappa_rows)``; grades are simulated on the training partition and on the pool.
    """
    ds, spec, G, cfg, a, freq = env["ds"], env["spec"], env["G"], env["cfg"], env["a"], env["freq"]
    fm = fit_fold(spec, fold, cfg, data_root=cfg.data_root)
    pool = fm.pool
    doc_costs, _ = document_costs(pool, pool.n_docs, spec.cost_model)
    train, train_probs = train_partition_probs(spec, fold, cfg, fm, env["data"], env["part"])
    grades, kappa_rows = {}, []
    for name in env["judges"]:
        if name == "none":
            continue
        g = []
        for side, (lab, off, hp) in enumerate(((train.labels, train.offsets, train_probs[HARD_MODEL]),
                                               (pool.labels, pool.offsets, fm.probs[HARD_MODEL]))):
            rng = np.random.default_rng([env["di"], fold, JUDGES.index(name), side, 33])
            g.append(simulate_judge(name, lab, off, a=a, freq=freq, hard_probs=hp, rng=rng))
        grades[name] = g
        kappa_rows.append(dict(dataset=ds, fold=fold, judge=name, a=a.get(name, np.nan),
                               kappa_population=population_kappa(a[name], freq) if name in a else np.nan,
                               kappa_train=weighted_kappa(g[0], train.labels, n_levels=G),
                               kappa_pool=weighted_kappa(g[1], pool.labels, n_levels=G), note=""))
    fenv = dict(fold=fold, fm=fm, pool=pool, doc_costs=doc_costs, train=train, train_probs=train_probs,
                train_groups=np.repeat(np.arange(train.n_queries), np.diff(train.offsets)), grades=grades)
    return fenv, kappa_rows


def calibrated(env, fenv, task, name):
    """Judge ``name``'s calibrated ``p(y | x, z)`` on the pool for ``task`` and the calibrator's ``C``.

    ``none`` is the task's feature model.  The calibrator is fitted on the training partition's labels.
    """
    if name == "none":
        return task.probs, np.nan
    G, grades = env["G"], fenv["grades"][name]
    tp = np.mean([fenv["train_probs"][m] for m in TASKS[task.key][2]], axis=0)
    cal = JudgeCalibrator(G, random_state=0).fit([as_judge(grades[0], G, name)], fenv["train"].labels,
                                                 model_probs=tp, groups=fenv["train_groups"])
    return cal.predict_proba([as_judge(grades[1], G, name)], model_probs=task.probs), cal.C_


def judged_context(fenv, task, probs, rel):
    """``run.py``'s context of ``task`` with ``probs`` as its relevance model."""
    pool = fenv["pool"]
    ctx = bench.Context(Task(task.key, task.kind, task.fold, pool, task.rankings, task.contrasts, probs,
                             task.labels), fenv["doc_costs"], rel)
    ctx.u_grades = pool.labels[ctx.t.rows]
    return ctx


def run_dataset(ds, args, cfg, say):
    env, kappa_rows = dataset_judges(ds, args, cfg, say)
    rel, judges = env["rel"], env["judges"]
    quality_rows = []
    all_res: dict = {}
    for fold in [int(f) for f in args.folds.split(",")]:
        tf = time.perf_counter()
        fenv, rows = fold_judges(env, fold)
        kappa_rows += rows
        for key in args.tasks.split(","):
            task = build_task(fenv["fm"], key, fold)
            ctx0 = bench.Context(task, fenv["doc_costs"], rel)
            if bench.determined(ctx0):
                say(f"{ds} fold {fold} {key}: skipped, no judgment can change the target")
                continue
            seed = [env["di"], fold, TASKS_INDEX[key], 33]
            res = {"passive": bench.query_level(ctx0, ctx0.p, ctx0.full.cost, np.random.default_rng(seed + [0]),
                                                args.reps, name="passive")}
            for name in judges:
                probs, C = calibrated(env, fenv, task, name)
                ctx = judged_context(fenv, task, probs, rel)
                # the same random numbers for every judge: paired comparisons
                res[name] = registered(ctx, "doc_dyn", np.random.default_rng(seed + [1]), args.reps)
                quality_rows.append(dict(dataset=ds, fold=fold, task=key, judge=name, C=C,
                                         log_loss_pool=log_loss(probs, fenv["pool"].labels),
                                         log_loss_feature=log_loss(task.probs, fenv["pool"].labels)))
            for name, r in res.items():
                all_res.setdefault(key, {}).setdefault(name, []).append(r)
        say(f"{ds} fold {fold}: {time.perf_counter() - tf:.0f}s")
    return summarize(ds, env["spec"], rel, all_res, judges), pd.DataFrame(kappa_rows), pd.DataFrame(quality_rows)


TASKS_INDEX = {k: i for i, k in enumerate(TASKS)}  # seeds depend on the task, not on its position in --tasks


def mse_ratio(parts, base, bi, gen, n_boot=300):
    """MSE(judge) / MSE(none) at budget index ``bi`` (mean over folds), with a paired bootstrap over runs."""
    def ratio(idx):
        num = np.mean([mse_curve(p)[bi, i].mean() for p, i in zip(parts, idx)])
        den = np.mean([mse_curve(b)[bi, i].mean() for b, i in zip(base, idx)])
        return num / den

    full = [np.arange(p["loss"].shape[1]) for p in parts]
    boot = [ratio([gen.integers(0, i.size, i.size) for i in full]) for _ in range(n_boot)]
    return ratio(full), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def summarize(ds, spec, rel, all_res, judges):
    ref = float(spec.reference_budget)
    bref = int(np.flatnonzero(np.isclose(rel, ref))[0])
    big = rel >= MIN_BUDGET
    rows = []
    gen = np.random.default_rng(0)
    for key, res in all_res.items():
        sav = {r["method"]: r for r in bench.savings(res, judges, ref)}
        for name in judges:
            parts = res[name]
            chk = bench.pooled_check(parts)
            ok = big & chk["valid"]
            r, lo, hi = mse_ratio(parts, res["none"], bref, gen) if "none" in res else (np.nan,) * 3
            worst = max(np.mean([mse_curve(p)[b].mean() for p in parts])
                        / np.mean([mse_curve(p)[b].mean() for p in res["none"]])
                        for b in np.flatnonzero(ok)) if "none" in res else np.nan
            s = sav[name]
            rows.append(dict(dataset=ds, task=key, judge=name, savings=s["savings"], low=s["low"], high=s["high"],
                             censored=s["censored"], mse_ratio_ref=r, mse_ratio_low=lo, mse_ratio_high=hi,
                             mse_ratio_max=worst, ref_budget=ref,
                             max_bias_z=float(np.nanmax(chk["z"][ok])), n_bias_z_over_3=int((chk["z"][ok] > 3).sum()),
                             min_coverage=float(chk["coverage"][ok].min()),
                             max_coverage=float(chk["coverage"][ok].max()), n_budgets=int(ok.sum()),
                             n_folds=len(parts), reps=parts[0]["loss"].shape[1]))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the public path


def api_runs(args, cfg, judge, ds, fold, key):
    """One fold of a cell through ``ar.estimate`` (``ar.compare`` for a pair): without a judge, ``judges=``
    (online), offline ``probs``.

    The judge's grades are the offline cells' on that fold (same seeds); the labeler answers the pool's true
    grades; the budget is the reference budget, in documents with a constant document cost and otherwise in
    the cost model's units (``budget_unit="cost"``, the benchmark's document costs); run ``r`` of every
    variant uses the same seed (paired).  ``online``: the API's rounds (two calibration rounds of 15%,
    calibrated on those labels only).  ``offline``: the calibrator fitted on the training partition as in the
    offline cells, its probabilities passed as ``probs`` (one round).  Returns ``{variant: per-run record}``
    and the budget (in its unit, and in queries' worth).
    """
    import activerank as ar
    from activerank._validation import scores_iv
    from activerank.pool import pool_iv

    spec = DATASETS[ds]
    G = spec.n_grades
    rel = bench.REL[bench.REL <= max(spec.budgets)]
    data, part = load_dataset(spec, cfg.data_root)
    freq = np.bincount(data.labels, minlength=G) / data.labels.size
    a = {f"kappa_{k}": solve_a(k, freq) for k in KAPPAS}
    fm = fit_fold(spec, fold, cfg, data_root=cfg.data_root)
    pool = fm.pool
    task = build_task(fm, key, fold)
    if len(task.rankings) not in (1, 2):
        raise ValueError("the API cell runs one ranker (ar.estimate) or two (ar.compare)")
    doc_costs, _ = document_costs(pool, pool.n_docs, spec.cost_model)
    budget = float(spec.reference_budget) * bench.Context(task, doc_costs, rel).scale
    constant = spec.cost_model == "constant"
    unit = dict(budget_unit="documents", costs="constant") if constant else dict(budget_unit="cost", costs=doc_costs)
    train, train_probs = train_partition_probs(spec, fold, cfg, fm, data, part)
    grades = []
    for side, (lab_, off, hp) in enumerate(((train.labels, train.offsets, train_probs[HARD_MODEL]),
                                            (pool.labels, pool.offsets, fm.probs[HARD_MODEL]))):
        rng = np.random.default_rng([list(DATASETS).index(ds), fold, JUDGES.index(judge), side, 33])
        grades.append(as_judge(simulate_judge(judge, lab_, off, a=a, freq=freq, hard_probs=hp, rng=rng), G, judge))
    tp = np.mean([train_probs[m] for m in TASKS[key][2]], axis=0)
    cal = JudgeCalibrator(G, random_state=0).fit([grades[0]], train.labels, model_probs=tp,
                                                 groups=np.repeat(np.arange(train.n_queries), np.diff(train.offsets)))
    offline = cal.predict_proba([grades[1]], model_probs=task.probs)
    scores = [fm.scores[name] for name in TASKS[key][1]]
    values = [ar.pool_metric_values(pool.labels, scores_iv(sc, pool_iv(pool), "scores"), metric=bench.METRIC,
                                    ymax=G - 1) for sc in scores]
    truth = float(values[0].mean() if len(values) == 1 else (values[0] - values[1]).mean())

    def one_run(probs, js, held, rng):
        kw = dict(budget=budget, metric=bench.METRIC, judges=js, judgments=held, rng=rng, **unit)
        if len(scores) == 1:
            res = ar.estimate(pool, scores[0], probs, lab, **kw)
            return res, res.estimate
        res = ar.compare(pool, scores[0], scores[1], probs, lab, **kw)
        return res, res.difference

    lab = ar.KnownLabels.from_data(pool)
    variants = [("none", task.probs, None, None), ("online", task.probs, [grades[1]], None),
                ("offline", offline, None, None)]
    if args.api_held:
        held = held_queries(pool, args.api_held, np.random.default_rng([fold, 77]))
        variants += [("held_none", task.probs, None, held), ("held_judge", task.probs, [grades[1]], held)]
    keep = set(args.api_variants.split(",")) | {"none"}
    keep |= {"held_none"} if "held_judge" in keep else set()
    out = {}
    for name, probs, js, held_ in (v for v in variants if v[0] in keep):
        est, cover, cost, methods, uses = [], [], [], set(), []
        for r in range(args.reps):
            res, value = one_run(probs, js, held_, np.random.default_rng([r, 33]))
            ci = res.confidence_interval()
            est.append(value)
            cover.append(ci.low <= truth <= ci.high)
            cost.append(res.cost_spent)
            methods.add(res.method)
            if js is not None:
                uses.append(bool(res.trace.attrs["judges"].get("uses_judges", True)))
        e = np.array(est)
        out[name] = dict(sq=(e - truth) ** 2, z=(e.mean() - truth) / (e.std(ddof=1) / np.sqrt(e.size)),
                         coverage=float(np.mean(cover)), max_cost=float(max(cost)), method="/".join(sorted(methods)),
                         uses_judges=float(np.mean(uses)) if uses else np.nan)
    return out, budget, float(spec.reference_budget), "documents" if constant else "cost"


def held_queries(pool, n_labels: int, rng) -> dict:
    """Whole pool queries, in a random order, until at least ``n_labels`` labels: ``{query id: {doc id: grade}}``
    (the labels a team holds on the pool itself, ``judgments=``)."""
    held, n = {}, 0
    for x in rng.permutation(pool.n_queries):
        if n >= n_labels:
            break
        rows = range(int(pool.offsets[x]), int(pool.offsets[x + 1]))
        held[pool.query_ids[x]] = {pool.doc_ids[r]: int(pool.labels[r]) for r in rows}
        n += len(rows)
    return held


def api_cell(args, cfg, judge="kappa_0.6", ds="mq2008", key="a_rf"):
    """A cell through ``ar.estimate`` (:func:`api_runs`) on every fold of ``--folds``, one row per fold and variant,
    and a pooled row (``fold`` "all": the MSE averaged over folds, its ratio to ``none`` with a paired bootstrap
    within folds, the largest |bias| / SE and the pooled coverage)."""
    folds = [int(f) for f in args.folds.split(",")]
    runs = {f: api_runs(args, cfg, judge, ds, f, key) for f in folds}
    gen = np.random.default_rng(0)
    n = args.reps
    idx = [[gen.integers(0, n, n) for _ in folds] for _ in range(300)]
    rows = []
    for name in runs[folds[0]][0]:
        reference = "held_none" if name == "held_judge" else "none"
        for f in (*folds, "all"):
            fs = folds if f == "all" else [f]
            o = [runs[g][0][name] for g in fs]
            nn = [runs[g][0][reference] for g in fs]
            sub = [folds.index(g) for g in fs]
            mse, ref = np.mean([x["sq"].mean() for x in o]), np.mean([x["sq"].mean() for x in nn])
            boot = [np.mean([o[j]["sq"][b[s]].mean() for j, s in enumerate(sub)])
                    / np.mean([nn[j]["sq"][b[s]].mean() for j, s in enumerate(sub)]) for b in idx]
            _, budget, units, unit = runs[fs[0]]
            rows.append(dict(dataset=ds, fold=str(f), task=key, judge=judge, variant=name, reference=reference,
                             held_labels=args.api_held, budget=budget,
                             budget_unit=unit, budget_units=units, reps=n * len(fs), mse=mse, ratio=mse / ref,
                             ratio_low=float(np.quantile(boot, 0.025)), ratio_high=float(np.quantile(boot, 0.975)),
                             bias_z=float(max((x["z"] for x in o), key=abs)),
                             coverage=float(np.mean([x["coverage"] for x in o])),
                             max_cost=float(max(x["max_cost"] for x in o)),
                             method="/".join(sorted({x["method"] for x in o})),
                             uses_judges=float(np.nanmean([x["uses_judges"] for x in o]))
                             if name in ("online", "held_judge") else np.nan))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- report


def by_dataset(frame):
    """``frame``'s rows with the datasets in DATASETS' order."""
    order = {d: i for i, d in enumerate(DATASETS)}
    return frame.sort_values("dataset", key=lambda c: c.map(order), kind="stable")


def run_sizes(df):
    """Every dataset's folds, runs and minutes, for a results page's "Generated by" line."""
    return "; ".join(f"{ds}: `--folds {g.folds.iloc[0]} --reps {int(g.reps.iloc[0])}`, {g.seconds.iloc[0] / 60:.0f} min"
                     for ds, g in df.groupby("dataset", sort=False))


def write_md(df, kap, qual):
    pct = lambda x: f"{x:.0%}"  # noqa: E731
    df, kap, qual = (by_dataset(f) for f in (df, kap, qual))
    judges = [j for j in JUDGES if j in set(df.judge)]
    sizes = run_sizes(df)
    lines = ["# Simulated judges as the relevance model on LETOR (DCG@10, savings at equal documents)", "",
             f"Generated by `benchmarks/document_level/judge_check.py` ({sizes}; one process on a shared 2-core "
             "machine). Protocol in the module docstring: judges "
             "simulated from the true labels, calibrated (`JudgeCalibrator`) on the training partition's human "
             "labels with the feature model as extra features, `doc_dyn` planned on the calibrated probabilities; "
             "`none` = `doc_dyn` on the feature model alone. Savings vs passive query sampling (95% bootstrap; ≥: "
             "censored at the grid's end).", "",
             "## Judges", "", "| dataset | judge | a | kappa (population) | kappa achieved (pool, mean over folds) |",
             "|---|---|---|---|---|"]
    for (ds, j), g in kap.groupby(["dataset", "judge"], sort=False):
        if not np.isfinite(g.a.iloc[0]) and j.startswith("kappa_"):
            lines.append(f"| {ds} | {j} | – | {g.note.iloc[0]} | – |")
            continue
        pop = "" if not np.isfinite(g.kappa_population.iloc[0]) else f"{g.kappa_population.iloc[0]:.3f}"
        a = "" if not np.isfinite(g.a.iloc[0]) else f"{g.a.iloc[0]:.3f}"
        lines.append(f"| {ds} | {j} | {a} | {pop} | {g.kappa_pool.mean():.3f} |")
    lines += ["", "## Savings vs passive (doc_dyn)", "",
              "| dataset | task | " + " | ".join(judges) + " |", "|---|---|" + "---|" * len(judges)]
    for (ds, key), g in df.groupby(["dataset", "task"], sort=False):
        g = g.set_index("judge")
        cells = []
        for j in judges:
            if j not in g.index:
                cells.append("–")
                continue
            r = g.loc[j]
            cens = {-1: "≥", 1: "≤"}.get(int(r.censored), "")
            cells.append(f"{cens}{pct(r.savings)} [{pct(r.low)}, {pct(r.high)}]")
        lines.append(f"| {ds} | {TITLES.get(key, key)} | " + " | ".join(cells) + " |")
    lines += ["", "## MSE ratio to `none` at the reference budget (paired 95% bootstrap) and its largest value "
              "over the budgets of ≥ 10 queries' worth", "",
              "| dataset | task | " + " | ".join(j for j in judges if j != "none") + " |",
              "|---|---|" + "---|" * (len(judges) - 1)]
    for (ds, key), g in df.groupby(["dataset", "task"], sort=False):
        g = g.set_index("judge")
        lines.append(f"| {ds} | {TITLES.get(key, key)} | " + " | ".join(
            f"{g.loc[j].mse_ratio_ref:.2f} [{g.loc[j].mse_ratio_low:.2f}, {g.loc[j].mse_ratio_high:.2f}]; max "
            f"{g.loc[j].mse_ratio_max:.2f}" if j in g.index else "–" for j in judges if j != "none") + " |")
    lines += ["", "## Bias and coverage (per budget of ≥ 10 queries' worth, pooled over folds)", "",
              "Cell: largest |bias| / SE over the budgets (number of budgets above 3) / coverage range.", "",
              "| dataset | task | " + " | ".join(judges) + " |", "|---|---|" + "---|" * len(judges)]
    for (ds, key), g in df.groupby(["dataset", "task"], sort=False):
        g = g.set_index("judge")
        lines.append(f"| {ds} | {TITLES.get(key, key)} | " + " | ".join(
            f"{g.loc[j].max_bias_z:.1f} ({int(g.loc[j].n_bias_z_over_3)}/{int(g.loc[j].n_budgets)}) / "
            f"{g.loc[j].min_coverage:.3f}-{g.loc[j].max_coverage:.3f}" if j in g.index else "–" for j in judges)
            + " |")
    q = qual.groupby(["dataset", "task", "judge"], sort=False)[["log_loss_pool", "log_loss_feature"]].mean()
    lines += ["", "## Calibrated model quality on the pool (log-loss, nats, mean over folds)", "",
              "| dataset | task | feature model | " + " | ".join(j for j in judges if j != "none") + " |",
              "|---|---|---|" + "---|" * (len(judges) - 1)]
    for (ds, key), g in q.groupby(level=[0, 1], sort=False):
        g = g.droplevel([0, 1])
        lines.append(f"| {ds} | {TITLES.get(key, key)} | {g.log_loss_feature.iloc[0]:.3f} | " + " | ".join(
            f"{g.loc[j].log_loss_pool:.3f}" if j in g.index else "–" for j in judges if j != "none") + " |")
    api = RESULTS / "judge_check_api.csv"
    if api.exists():
        a = pd.read_csv(api, dtype={"fold": str})
        if "budget_docs" in a:  # the single-fold layout of earlier runs
            a = a.rename(columns={"budget_docs": "budget"}).assign(budget_unit="documents", uses_judges=np.nan)
        lines += ["", "## The public path", "",
                  "`ar.estimate` (`--api`, one cell per `--api-cell`), the judge's simulated grades, the reference "
                  "budget (in documents with a constant document cost, else in the cost model's units, "
                  "`budget_unit=\"cost\"`), paired runs (run r of every variant on the same seed). `online`: "
                  "`judges=[judge]`, the API's calibration rounds (two of 15% of the budget, refitted after each) "
                  "then the main round, calibrated on those labels only. `offline`: the calibrator fitted on the "
                  "training partition as above, its probabilities passed as `probs`. `held_none` / `held_judge` "
                  "(`--api-held N`): whole pool queries with at least N labels passed as `judgments=` (a team's "
                  "labels on the pool), without and with the judge, which is then calibrated on them (no rounds); "
                  "`held_judge`'s ratio is to `held_none`. MSE ratio (paired "
                  "95% bootstrap, within folds); over several folds: the MSE averaged over folds, the largest "
                  "|bias| / SE of a fold, the coverage pooled. `uses judges`: the share of runs with the judge whose "
                  "final design used it (the check of `activerank.judges` can drop it).", ""]
        for (ds, key, judge), g in a.groupby(["dataset", "task", "judge"], sort=False):
            pooled = g[g.fold == "all"] if (g.fold == "all").any() else g
            order = {v: i for i, v in enumerate(("none", "online", "offline", "held_none", "held_judge"))}
            pooled = pooled.sort_values("variant", key=lambda c: c.map(order), kind="stable")
            r0 = pooled.iloc[0]
            fold_ids = ",".join(f for f in dict.fromkeys(g.fold) if f != "all")
            held = g["held_labels"].max() if "held_labels" in g else 0
            held = "" if pd.isna(held) or not held else f", at least {int(held)} labels held in `held_*`"
            lines += [f"**{ds}, {TITLES.get(key, key)}, the {judge} judge**: folds {fold_ids}, {int(r0.reps)} runs "
                      f"per variant{held}, budget {r0.budget_units:g} queries' worth"
                      + (f" ({r0.budget:.0f} documents)" if r0.budget_unit == "documents" else "")
                      + f", {r0.seconds / 60:.0f} min.", "",
                      "| variant | method | MSE | MSE ratio | largest bias / SE | coverage | uses judges |",
                      "|---|---|---|---|---|---|---|"]
            for _, r in pooled.iterrows():
                uses = "–" if pd.isna(r.uses_judges) else f"{r.uses_judges:.2f}"
                ref = r.get("reference", "none")
                ref = "none" if pd.isna(ref) else ref
                lines.append(f"| {r.variant} | {r.method} | {r.mse:.2e} | {r.ratio:.2f} [{r.ratio_low:.2f}, "
                             f"{r.ratio_high:.2f}] to {ref} | {r.bias_z:.1f} | {r.coverage:.3f} | {uses} |")
            lines.append("")
    (RESULTS / "judge_check.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def arg_parser(description, *, reps):
    """The options ``judge_check.py`` and ``judge_peers.py`` share."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--datasets", default="mq2008,ohsumed")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    ap.add_argument("--judges", default=",".join(JUDGES))
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--data", default=None)
    return ap


def parse_checked(ap, argv):
    """Parsed options, every dataset, task and judge name checked."""
    args = ap.parse_args(argv)
    for option, known in (("datasets", DATASETS), ("tasks", TASKS), ("judges", JUDGES)):
        for name in getattr(args, option).split(","):
            if name not in known:
                ap.error(f"unknown {option[:-1]} {name!r}; choose from {', '.join(known)}")
    return args


def data_config(args):
    """The experiment configuration, or None (with a message) when the LETOR data is not available."""
    from activerank.datasets import DatasetNotFoundError

    try:
        cfg = config(args.cache, args.data)
        for ds in args.datasets.split(","):
            load_dataset(DATASETS[ds], cfg.data_root)
    except DatasetNotFoundError as exc:
        print(f"skipped: the LETOR data is not available ({exc}); set ACTIVERANK_DATA or --data")
        return None
    return cfg


def main(argv=None) -> int:
    ap = arg_parser(__doc__.splitlines()[0], reps=300)
    ap.add_argument("--api", action="store_true",
                    help="instead: cells through ar.estimate, without a judge, with judges= (online calibration) "
                         "and with the offline-calibrated probs, on the --folds at the reference budget; writes "
                         "results/judge_check_api.csv (a cell's variants replace their old rows)")
    ap.add_argument("--api-cell", action="append", default=None, metavar="DATASET:TASK:JUDGE",
                    help="a cell of --api (repeatable; default mq2008:a_rf:kappa_0.6)")
    ap.add_argument("--api-variants", default="none,online,offline,held_none,held_judge",
                    help="the --api variants to run (none always; held_judge brings held_none)")
    ap.add_argument("--api-held", type=int, default=0, metavar="N",
                    help="--api also runs held_none / held_judge: whole pool queries with at least N labels passed "
                         "as judgments= (the judge calibrated on them), the judge's ratio taken to held_none")
    args = parse_checked(ap, argv)
    if "none" not in args.judges.split(","):
        ap.error("--judges must include 'none' (the reference of the MSE ratios)")
    cfg = data_config(args)
    if cfg is None:
        return 0
    warnings.simplefilter("ignore")  # solver convergence chatter of the calibrator's grid search
    t0 = time.perf_counter()
    if args.api:
        path = RESULTS / "judge_check_api.csv"
        for cell in args.api_cell or ["mq2008:a_rf:kappa_0.6"]:
            ds, key, judge = cell.split(":")
            tc = time.perf_counter()
            df = api_cell(args, cfg, judge=judge, ds=ds, key=key)
            df["seconds"] = time.perf_counter() - tc
            print(df.to_string(), flush=True)
            if path.exists():
                old = pd.read_csv(path, dtype={"fold": str})
                if "budget_docs" in old:  # the single-fold layout of earlier runs
                    old = old.rename(columns={"budget_docs": "budget"}).assign(budget_unit="documents",
                                                                                uses_judges=np.nan)
                keep = ~((old.dataset == ds) & (old.task == key) & (old.judge == judge)
                         & old.variant.isin(set(df.variant)))
                df = pd.concat([old[keep], df])
            df.to_csv(path, index=False)
        write_md(*(pd.read_csv(RESULTS / n) for n in ("judge_check.csv", "judge_check_kappa.csv",
                                                      "judge_check_quality.csv")))
        return 0

    def say(line):
        print(line, flush=True)

    for ds in args.datasets.split(","):
        td = time.perf_counter()
        df, kap, qual = run_dataset(ds, args, cfg, say)
        df["folds"], df["seconds"] = args.folds, time.perf_counter() - td
        # each dataset replaces its own rows: datasets may be run by separate invocations
        for frame, name in ((df, "judge_check.csv"), (kap, "judge_check_kappa.csv"), (qual, "judge_check_quality.csv")):
            path = RESULTS / name
            old = pd.read_csv(path) if path.exists() else None
            if old is not None:
                frame = pd.concat([old[old.dataset != ds], frame])
            frame.to_csv(path, index=False)
    write_md(*(pd.read_csv(RESULTS / n) for n in ("judge_check.csv", "judge_check_kappa.csv",
                                                  "judge_check_quality.csv")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
