"""The ``prefix`` design's hard budget (issue 30 item 1): realized cost, bias, variance estimate, coverage, calls.

``method="prefix"`` judges queries in priority order ``xi = u / pi`` and cuts the first one whose walk does not
fit the budget (``docs/prefix.md`` §7).  Cells (ERR@10):

* the shipped sample (30 pool queries, LightGBM relevance model as in the README): one ranker (LightGBM's
  expected gain), a pair (vs BM25 = ``pool.X[:, 24]``), an index update (LightGBM vs itself with 10% of every
  list removed) and ``compare_many`` (LightGBM and the index update vs BM25 as the baseline);
* a tiny synthetic pool (16 queries, the test suite's generator) where the sample is 1/4-1/2 of the pool.

Every cell runs ``--reps`` repetitions of the design on the fully labelled pool with the batched simulator
(``PrefixSampling.simulate``, a new plan every 100 repetitions as the engine plans with the run's rng) and
``--engine-reps`` runs through the engine (``activerank.engine.run``; the realized cost of every run and the
agreement of the two paths).  Columns: ``n`` mean completed queries (``sum pi`` the planned Poisson size),
``cost/B`` mean and max realized cost over the budget (both paths), ``bias_se`` (mean - truth) / MC SE of
the output whose interval covers least, ``Evar/var`` mean raw two-stage variance estimate / empirical
variance, ``Eused/var`` the same for the pooled variance the interval uses, ``cover`` the 95% interval as
the engine reports it (pooled variance, ``prefix_dof``), ``pred/var`` the model's predicted variance (what
``auto`` compares) over the empirical one, ``engine mean`` the engine's mean estimate minus the simulator's
in units of their joint SE.  ``--before``: the Poisson design before the hard budget on the same cell
(same plans' kind, same walks): mean sample size, coverage (the output covering least), mean / max realized
cost over the budget, and the share of runs over the budget.

``--calls``: labeler calls of one run through the engine with a batch labeler on a 5,000-query synthetic
pool (ERR@10, one ranker) and on MQ2008 (fold 1, ``ACTIVERANK_DATA``) at several budgets.

Run:  python benchmarks/prefix_hard_budget.py [--reps 4000] [--engine-reps 300] [--calls]
Writes benchmarks/results/prefix_hard_budget.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import activerank as ar  # noqa: E402
from activerank._validation import scores_iv  # noqa: E402
from activerank.api import make_design  # noqa: E402
from activerank.design.kinds.prefix import (  # noqa: E402
    PRIOR_DOF,
    design_layout,
    pooled_covariance,
    prefix_dof,
    prefix_estimate,
)
from activerank.design.kinds.prefix.budget import depth_tables  # noqa: E402
from activerank.design.kinds.prefix.layout import _by_step, judging_paths, stop_probabilities  # noqa: E402
from activerank.engine import FixedBudget, run  # noqa: E402
from activerank.metrics import pool_metric_values  # noqa: E402
from activerank.pool import pool_iv  # noqa: E402
from activerank.relevance.rankers import remove_fraction  # noqa: E402

KINDS = {"single": "mean", "pair": "difference", "index": "difference", "many": "baseline"}


def sample_problem():
    """``(pool, probs, {scenario: rankings})`` of the shipped sample."""
    train, pool = ar.load_sample("train"), ar.load_sample("test")
    model = ar.relevance.make_relevance_model("lightgbm", pool.n_grades, random_state=0, n_jobs=1)
    probs = model.fit(train.X, train.labels).predict_proba(pool.X)
    pool_ = pool_iv(pool)
    a = scores_iv(ar.relevance.expected_gain_scores(probs), pool_, "scores")
    bm25 = scores_iv(pool.X[:, 24], pool_, "scores")
    removed = remove_fraction(a, 0.1, rng=np.random.default_rng(7))
    return pool, probs, {"single": (a,), "pair": (a, bm25), "index": (a, removed), "many": (a, removed, bm25)}


def synthetic_problem(n_queries=16, seed=11):
    """A tiny synthetic pool (the test suite's generator): ``(pool, probs, {scenario: rankings})``."""
    from tests.engine.test_documents import _problem

    pool, a, b, rng = _problem(seed, n_queries=n_queries)
    pool.labels = pool.sample_labels(np.random.default_rng(5))
    return pool, pool.probs, {"single": (a,), "pair": (a, b)}


def truth(pool, labels, rankings, metric, n_grades) -> np.ndarray:
    vals = np.array([pool_metric_values(labels, r.truncate(10), metric=metric, ymax=n_grades - 1).mean()
                     for r in rankings])
    return vals if vals.size == 1 else (vals[:1] - vals[1:] if vals.size == 2 else vals[:-1] - vals[-1])


def design(pool, probs, rankings, scenario, metric="err@10"):
    kind = KINDS[scenario]
    names = ("a", "b", "baseline") if kind == "baseline" else None
    return make_design(pool, rankings, probs, metric=metric, method="prefix", target=kind, names=names)


def simulate(dsg, labels, budget, reps, rng, per_plan=100):
    """The simulator's repetitions: estimates, raw and pooled covariances, n, cost, dof, predicted variance."""
    kind = dsg.method_spec.kind
    layout = design_layout(dsg, None)
    out = {k: [] for k in ("est", "raw", "used", "n", "cost", "dof")}
    pred, sum_pi = [], []
    for start in range(0, reps, per_plan):
        r = min(per_plan, reps - start)
        plan = kind.plan_queries(layout, dsg.probs, dsg.p, dsg.prediction.variance, dsg.q > 0, budget, rng,
                                 defensive=dsg.defensive)
        sum_pi.append(plan.pi.sum())
        seed = int(rng.integers(2**63))
        est, raw, n, cost = kind.simulate(layout, plan, dsg.probs, labels, dsg.p, dsg.prediction.mean, r,
                                          np.random.default_rng(seed), budget=budget)
        _, used, _, _, dof = kind.simulate(layout, plan, dsg.probs, labels, dsg.p, dsg.prediction.mean, r,
                                           np.random.default_rng(seed), budget=budget,
                                           output_variance=dsg.prediction.output_variance, with_dof=True)
        for k, v in zip(("est", "raw", "used", "n", "cost", "dof"), (est, raw, used, n, cost, dof)):
            out[k].append(v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = kind.predicted_variance(dsg, budget)
    res = {k: np.concatenate(v) for k, v in out.items()}
    res["sum_pi"] = float(np.mean(sum_pi))
    res["pred"] = pred
    return res


def poisson_before(dsg, labels, budget, reps, rng, per_plan=100):
    """The design before the hard budget (Poisson queries, the same walks), simulated with the same tables:
    estimates, pooled variances, degrees of freedom, sample sizes and realized costs."""
    kind = dsg.method_spec.kind; layout = design_layout(dsg, None)
    out = []
    for _ in range(0, reps, per_plan):
        plan = kind.plan_queries(layout, dsg.probs, dsg.p, dsg.prediction.variance, dsg.q > 0, budget, rng,
                                 defensive=dsg.defensive)
        q = np.flatnonzero(plan.pi > 0); R = layout.values
        f = R[labels[np.maximum(layout.rows[q], 0)]]
        rho, sd = layout.document_values(dsg.probs, q)
        docs, g, a = judging_paths(layout, q, layout.system_values(dsg.probs), sd, f, order=kind.order)
        m = docs >= 0
        D = (_by_step(f, docs) - _by_step(rho, docs))[..., None] * g
        P = np.where(m, stop_probabilities(a, plan.floor[q], plan.tau[q]), 0.0)
        E, V, C = depth_tables(D, P, m, _by_step(layout.cost[q], docs))
        mv = plan.model_variance(dsg.p, dsg.prediction.output_variance)
        pm = dsg.p @ dsg.prediction.mean
        for _ in range(per_plan):
            s = np.flatnonzero(rng.random(q.size) < plan.pi[q]); U = rng.random(s.size)
            d = (U[:, None] <= P[s]).sum(1)
            e, v = E[s, d], V[s, d]
            est, cov = prefix_estimate(e, v, plan.pi[q][s], dsg.p[q][s], pm)
            k = prefix_dof(e, v, plan.pi[q][s], dsg.p[q][s]); k = k if k > 0 else PRIOR_DOF
            cov = pooled_covariance(cov, s.size, mv)
            out.append((est, np.diag(cov), k, s.size, C[s, d].sum()))
    est = np.array([o[0] for o in out]); var = np.array([o[1] for o in out]); k = np.array([o[2] for o in out])
    return est, var, k, np.array([o[3] for o in out]), np.array([o[4] for o in out])


def engine_runs(dsg, pool, labels, budget, reps, seed):
    pool_ = pool_iv(pool)
    synthetic = getattr(pool, "doc_ids", 0) is None  # the test suite's pool: document ids are the rows
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels) if synthetic else ar.KnownLabels.from_data(pool)
    est, cost, short = [], [], 0
    for rep in range(reps):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = run(dsg, pool_, lab, FixedBudget(budget, np.random.default_rng([seed, rep])))
        except ValueError as exc:  # fewer than 2 completed queries: counted
            if "completed" not in str(exc):
                raise
            short += 1
            continue
        if isinstance(res, ar.MultiComparisonResult):
            point = np.asarray(res.unadjusted.get("differences", res.differences))
        elif isinstance(res, ar.ComparisonResult):
            point = np.array([res.unadjusted.get("difference", res.difference)])
        else:
            point = np.array([res.unadjusted.get("estimate", res.estimate)])
        est.append(point)
        cost.append(res.cost_spent)
    return np.array(est), np.array(cost), short


def summarize(sim, true, budget, eng):
    est, raw, used = sim["est"], np.diagonal(sim["raw"], 0, 1, 2), np.diagonal(sim["used"], 0, 1, 2)
    err = est - true
    q = stats.t.ppf(0.975, np.maximum(sim["dof"], 1e-9))[:, None]
    cover = (np.abs(err) <= q * np.sqrt(used)).mean(0)
    j = int(np.argmin(cover))
    sd = est[:, j].std(ddof=1)
    reps = est.shape[0]
    e_est, e_cost, short = eng
    row = dict(reps=reps, n=float(sim["n"].mean()), sum_pi=sim["sum_pi"], n_min=int(sim["n"].min()),
               cost=f"{sim['cost'].mean() / budget:.3f} / {sim['cost'].max() / budget:.4f}",
               bias_se=float(err[:, j].mean() / (sd / np.sqrt(reps))), evar=float(raw[:, j].mean() / sd**2),
               eused=float(used[:, j].mean() / sd**2), cover=float(cover[j]),
               pred=float(sim["pred"] / float((est.var(0, ddof=1)).sum())))
    if e_est.size:
        se = np.hypot(e_est[:, j].std(ddof=1) / np.sqrt(e_est.shape[0]), sd / np.sqrt(reps))
        row.update(engine=f"{e_est.shape[0]} runs ({short} short), cost {e_cost.mean() / budget:.3f} / "
                          f"{e_cost.max() / budget:.4f}, mean {(e_est[:, j].mean() - est[:, j].mean()) / se:+.2f} SE")
    return row


def labeler_calls(budgets_synth=(100, 300), budgets_mq=(100, 300)):
    """``[(pool, budget, calls, labels, completed, cost/B)]`` of one engine run with a batch labeler."""
    from activerank.labelers import BatchLabeler
    from tests.conftest import SyntheticPool

    rows = []

    def count(pool, scores, probs, known, budget, name):
        calls = []

        def batch(requests):
            calls.append(len(requests))
            return [known(q, d) for q, d in requests]

        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = ar.estimate(pool, scores, probs, BatchLabeler(batch), budget=budget, metric="err@10",
                              method="prefix", rng=0)
        rows.append((name, budget, len(calls), int(sum(calls)), res.n_draws, res.cost_spent / budget,
                     time.perf_counter() - t0))

    pool = SyntheticPool(np.random.default_rng(0), n_queries=5000, max_docs=20)
    known = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(np.random.default_rng(1)))
    for b in budgets_synth:
        count(pool, pool.probs[:, 2], pool.probs, known, float(b), "synthetic 5k queries")
    if os.environ.get("ACTIVERANK_DATA"):
        from _coverage_setup import fit_fold_lightgbm

        fm = fit_fold_lightgbm("mq2008", 1, cache_dir=os.path.join(HERE, "results", "cache"))
        known = ar.KnownLabels.from_data(fm.pool)
        for b in budgets_mq:
            count(fm.pool, fm.scores["lightgbm"], fm.probs["lightgbm"], known, float(b),
                  f"MQ2008 fold 1 ({fm.pool.n_queries} queries)")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--engine-reps", type=int, default=300)
    ap.add_argument("--budgets", default="8,12")
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--calls", action="store_true")
    ap.add_argument("--before", action="store_true", help="also simulate the Poisson design before the hard budget")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "prefix_hard_budget.md"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    problems = [("sample", sample_problem(), [float(b) for b in args.budgets.split(",")]),
                ("synthetic 16 queries", synthetic_problem(), [2.5, 4.0])]
    for ci, (name, (pool, probs, rankings), budgets) in enumerate(problems):
        labels = pool.labels
        for si, (scenario, r) in enumerate(rankings.items()):
            dsg = design(pool, probs, r, scenario)
            true = truth(pool, labels, r, "err@10", dsg.n_grades)
            for budget in budgets:
                rng = np.random.default_rng([args.seed, ci, si, int(budget * 10)])
                sim = simulate(dsg, labels, budget, args.reps, rng)
                eng = engine_runs(dsg, pool, labels, budget, args.engine_reps, args.seed + si)
                row = summarize(sim, true, budget, eng)
                if args.before:
                    est, var, k, nb, cost = poisson_before(dsg, labels, budget, args.reps, rng)
                    cover = (np.abs(est - true) <= stats.t.ppf(0.975, k)[:, None] * np.sqrt(var)).mean(0)
                    row["before"] = (f"n {nb.mean():.1f}, cover {cover.min():.3f}, cost {cost.mean() / budget:.3f} / "
                                     f"{cost.max() / budget:.2f}, over {np.mean(cost > budget * (1 + 1e-9)):.2f}")
                rows.append(dict(pool=name, scenario=scenario, budget=budget, **row))
                print(rows[-1], flush=True)
    cols = ["pool", "scenario", "budget", "reps", "sum_pi", "n", "n_min", "cost", "bias_se", "evar", "eused", "cover",
            "pred", "engine", "before"]
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["# prefix with a hard budget: cost, bias, variance estimate, coverage (prefix_hard_budget.py)", "",
             f"`python benchmarks/prefix_hard_budget.py --reps {args.reps} --engine-reps {args.engine_reps} "
             f"--budgets {args.budgets}{' --calls' if args.calls else ''}{' --before' if args.before else ''}` "
             f"(seed {args.seed}). ERR@10. Columns: "
             "module docstring (`cost` = mean / max realized cost over the budget).", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    if args.calls:
        lines += ["", "## Labeler calls (one run, a batch labeler, ERR@10 one ranker, rng=0)", "",
                  "| pool | budget | calls | labels | completed queries | cost/B | seconds |",
                  "|---|---|---|---|---|---|---|"]
        for r in labeler_calls():
            print(r, flush=True)
            lines.append(f"| {r[0]} | {r[1]:g} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.4f} | {r[6]:.1f} |")
    lines += ["", f"{(time.perf_counter() - t0) / 60:.1f} min."]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
