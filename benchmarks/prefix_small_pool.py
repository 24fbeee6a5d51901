"""Why the ``prefix`` and ``doc_dyn`` intervals under-cover on small pools (issue 30 item 4, issue 31 item 3).

On the shipped sample (30 pool queries, LightGBM relevance model; the scenarios of
``benchmarks/metric_bias.py``) at a budget of 12 mean query costs, every cell's design is built once
and its draw repeated ``--reps`` times on the fully labelled pool with the designs' own batched
simulators (``PrefixSampling.simulate``; the Poisson HT of ``doc_dyn`` as matrix products), so the
point estimate, the raw (unbiased) variance estimate and the reported one can be told apart:

* ``bias_se``: (mean estimate - truth) / Monte-Carlo SE (of the output whose normal interval covers least);
* ``Evar/var``: mean raw variance estimate / empirical variance of the estimates (1: unbiased);
* ``Eused/var``: the same for the variance the interval uses (prefix: pooled with the model's);
* ``mSE/SD``: mean reported SE / empirical SD (below ``sqrt(Evar/var)`` by Jensen: a skewed estimate);
* ``dof_kish``: the mean Kish effective number of terms of the variance estimate
  ``(sum v_i)^2 / sum v_i^2`` over the per-query contributions ``v_i`` (how many queries carry it);
* ``skew``: skewness of the estimates; ``corr``: correlation of the estimate's error with its SE;
* coverage of the 95% interval: ``normal``, ``t(n-1)`` (prefix: what the engine reports), and with the
  variance's Satterthwaite degrees of freedom (``t(kish)``).

No range handling (the raw interval: ``coverage_raw`` of metric_bias).  ``prefix_runs`` simulates the prefix
design before its hard budget (Poisson queries); ``benchmarks/prefix_hard_budget.py`` runs the current one.

Run:  python benchmarks/prefix_small_pool.py [--reps 2000] [--budget 12]
Writes benchmarks/results/prefix_small_pool.md.
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

from metric_bias import _design, _metrics, _setup, truth  # noqa: E402

from activerank.design.kinds.documents import draw_poisson, poisson_dof, unit_costs  # noqa: E402
from activerank.design.kinds.documents.designs import document_target_of  # noqa: E402
from activerank.design.kinds.prefix import PRIOR_DOF, design_layout, prefix_dof, prefix_estimate, within_estimate  # noqa: E402,E501
from activerank.design.kinds.prefix.layout import _by_step, judging_paths, stop_probabilities  # noqa: E402

CELLS = (("prefix", "err@10", "single"), ("prefix", "err@10", "index"), ("prefix", "err@10", "pair"),
         ("prefix", "err@10", "many"),
         ("doc_dyn", "dcg@10", "index"), ("doc_dyn", "dcg@10", "many"), ("doc_dyn", "dcg@10", "single"),
         ("doc_dyn", "p@10", "many"))


def prefix_runs(dsg, labels, budget, n_reps, rng, *, per_plan=20):
    """Per repetition: estimate (t,), raw covariance diag (t,), per-query variance contributions (n, t), n,
    the library's degrees of freedom (t,); plus the last plan and the model's predicted variance.  As in the
    engine, the plan's simulations use the run's randomness: a new plan every ``per_plan`` repetitions."""
    kind = dsg.method_spec.kind
    layout = design_layout(dsg, None)
    R = layout.values
    pool_mean = dsg.prediction.pool_mean(dsg.p)
    out, model_vars = [], []
    for start in range(0, n_reps, per_plan):
        plan = kind.plan_queries(layout, dsg.probs, dsg.p, dsg.prediction.variance, dsg.q > 0, float(budget),
                                 rng, defensive=dsg.defensive)
        q = np.flatnonzero(plan.pi > 0)
        f = R[labels[np.maximum(layout.rows[q], 0)]]
        rho, sd = layout.document_values(dsg.probs, q)
        docs, g, a = judging_paths(layout, q, layout.system_values(dsg.probs), sd, f, order=kind.order)
        m = docs >= 0
        D = (_by_step(f, docs) - _by_step(rho, docs))[..., None] * g
        P = stop_probabilities(a, plan.floor[q], plan.tau[q])
        model_var = plan.model_variance(dsg.p, dsg.prediction.output_variance)
        for _ in range(min(per_plan, n_reps - start)):
            s = rng.random(q.size) < plan.pi[q]
            U = rng.random(int(s.sum()))
            judged = m[s] & (U[:, None] <= P[s])
            e, V = within_estimate(D[s], P[s], judged)
            pi, p = plan.pi[q][s], dsg.p[q][s]
            est, cov = prefix_estimate(e, V, pi, p, pool_mean)
            w = p / pi
            contrib = (1.0 - pi)[:, None] * (w[:, None] * e) ** 2 + (p**2 / pi)[:, None] * np.diagonal(V, 0, 1, 2)
            k_eff = prefix_dof(e, V, pi, p)  # the library's degrees of freedom (ci="auto")
            out.append((est, np.diag(cov), contrib, int(s.sum()), np.full(est.size, k_eff if k_eff > 0 else PRIOR_DOF)))
            model_vars.append(model_var)
    return out, plan, np.array(model_vars)


def docdyn_runs(dsg, labels, budget, n_reps, rng):
    """The same for ``doc_dyn`` (Poisson units; per-query contributions summed over a query's units)."""
    kind = dsg.method_spec.kind
    dt = document_target_of(dsg)
    c = unit_costs(dt, dsg.costs, dsg.document_costs)
    pdz = kind.design_for(dt, dsg.probs, c, float(budget), judged=np.zeros(dt.n_units, dtype=bool),
                          defensive=dsg.defensive)
    mom = dt.moments(dsg.probs)
    u = dt.utilities(labels[dt.rows])
    e = u - mom.mean
    W = dt.weights
    pi = pdz.pi
    safe = np.where(pi > 0, pi, 1.0)
    M = W.T @ mom.mean
    y = W * (e / safe)[:, None]  # (units, t)
    v = W**2 * ((1.0 - pi) / safe**2 * e * e)[:, None]
    Q = np.zeros((dt.n_units, dt.n_queries))
    Q[np.arange(dt.n_units), dt.query] = 1.0
    out = []
    for start in range(0, n_reps, 500):
        mask = draw_poisson(pdz, rng, n_reps=min(500, n_reps - start)).astype(np.float64)
        est = mask @ y + M
        var = mask @ v
        # Satterthwaite over the independent units: 2 (sum v)^2 / sum (1 - pi) v^2 (each v_z Bernoulli / pi)
        unit_dof = 2.0 * var**2 / np.maximum(mask @ v**2, 1e-300)  # 2 x Kish over units
        for r in range(mask.shape[0]):
            contrib = (mask[r][:, None, None] * Q[:, :, None] * v[:, None, :]).sum(0)  # (queries, t)
            touched = (mask[r] * (pi < 1)) @ Q > 0
            take = np.flatnonzero(mask[r])
            lib = poisson_dof(dt, pdz, dt.rows[take], labels[dt.rows[take]], probs=dsg.probs)  # ci="auto"
            out.append((est[r], var[r], contrib[touched], int(touched.sum()), np.full(est.shape[1], lib),
                        unit_dof[r]))
    return out, pdz, expected_var(dt, pdz, mom)


def expected_var(dt, pdz, mom):
    safe = np.where(pdz.pi > 0, pdz.pi, 1.0)
    return (dt.weights**2 * ((1 - pdz.pi) / safe * mom.variance)[:, None]).sum(0)


def summarize(runs, true, used_var=None, engine_dof=None):
    est = np.array([r[0] for r in runs])
    var = np.array([r[1] for r in runs])
    n = np.array([r[3] for r in runs])
    kish = np.array([[(c[:, j].sum() ** 2 / max((c[:, j] ** 2).sum(), 1e-300)) if c.size else 0.0
                      for j in range(est.shape[1])] for c in (r[2] for r in runs)])
    used = var if used_var is None else used_var
    # the output whose normal interval covers least (``many``: the candidates differ)
    z = np.abs(est - true) / np.sqrt(np.maximum(used, 1e-300))
    j = int(np.argmin((z <= 1.959964).mean(0)))
    x, vr, vu, kj = est[:, j], var[:, j], used[:, j], kish[:, j]
    sd = x.std(ddof=1)
    err = x - true[j]
    row = dict(reps=len(x), n=float(n.mean()), bias_se=float(err.mean() / (sd / np.sqrt(len(x)))),
               evar=float(vr.mean() / sd**2), eused=float(vu.mean() / sd**2),
               se_sd=float(np.sqrt(vu).mean() / sd), kish=float(kj.mean()), skew=float(stats.skew(x)),
               corr=float(np.corrcoef(err, np.sqrt(vu))[0, 1]), zero_var=float(np.mean(vr <= 0)))

    def cov(v, q):
        h = q * np.sqrt(v)
        return float(np.mean(np.abs(err) <= h))

    row["normal"] = cov(vu, 1.959964)
    row["t(n-1)"] = cov(vu, stats.t.ppf(0.975, np.maximum(n - 1, 1)))
    lib = np.array([r[4][j] for r in runs])
    row["dof"] = float(np.median(lib))
    row["t(dof)"] = cov(vu, stats.t.ppf(0.975, lib))
    row["t(kish)"] = cov(vu, stats.t.ppf(0.975, np.maximum(kj, 1)))
    row["t(kish-1)"] = cov(vu, stats.t.ppf(0.975, np.maximum(kj - 1, 1)))
    row["t(3 kish)"] = cov(vu, stats.t.ppf(0.975, np.maximum(3 * kj, 1)))
    if len(runs[0]) > 5:
        sat = np.array([r[5][j] for r in runs])
        row["t(2 kish units)"] = cov(vu, stats.t.ppf(0.975, np.maximum(sat, 1)))
    lo, hi = err < -1.96 * np.sqrt(vu), err > 1.96 * np.sqrt(vu)
    row["miss_low/high"] = f"{lo.mean():.3f}/{hi.mean():.3f}"
    lib_q = stats.t.ppf(0.975, lib)
    lo, hi = err < -lib_q * np.sqrt(vu), err > lib_q * np.sqrt(vu)
    row["t(dof) miss low/high"] = f"{lo.mean():.3f}/{hi.mean():.3f}"
    row["width t(dof)/normal"] = float(np.mean(lib_q * np.sqrt(vu)) / np.mean(1.959964 * np.sqrt(vu)))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--budget", type=float, default=12.0)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--designs", default="prefix,doc_dyn")
    ap.add_argument("--dataset", default="sample", help="sample, mq2008 or ohsumed (fold 1, ACTIVERANK_DATA)")
    ap.add_argument("--cache", default=os.path.join(HERE, "results", "cache"))
    ap.add_argument("--within-defensive", type=float, default=None,
                    help="prefix: the stopping score's floor as a share of the query's mean (library default if unset)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "prefix_small_pool.md"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.within_defensive is not None:
        import activerank.design.kinds.prefix.plan as prefix_plan

        prefix_plan.WITHIN_DEFENSIVE = args.within_defensive
    pool, pool_, probs, rankings, _ = _setup(args.dataset, args.cache)
    rows = []
    for ci, (method, metric_name, scenario) in enumerate(CELLS):
        if method not in args.designs.split(","):
            continue
        metric = _metrics([metric_name])[0][0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dsg = _design(args.dataset, scenario, metric, method, args.budget)
            true = truth(pool, rankings[scenario], metric)
        rng = np.random.default_rng([args.seed, ci])
        if method == "prefix":
            runs, plan, model_var = prefix_runs(dsg, pool.labels, args.budget, args.reps, rng)
            n = np.array([r[3] for r in runs])
            raw = np.array([r[1] for r in runs])
            w = np.maximum(n - 1.0, 0.0)[:, None]
            pooled = (PRIOR_DOF * model_var + w * raw) / (PRIOR_DOF + w)
            pis = plan.pi[plan.pi > 0]
            info = dict(live=int((plan.pi > 0).sum()), pi_ge_09=int((pis >= 0.9).sum()),
                        pi_min=float(pis.min()), tau0=int(((plan.tau == 0) & (plan.pi > 0)).sum()))
            rows.append(dict(cell=f"{method} {metric} {scenario}", variance="raw HT", **info,
                             **summarize(runs, true)))
            rows.append(dict(cell=f"{method} {metric} {scenario}", variance="pooled (engine)", **info,
                             **summarize(runs, true, pooled)))
            ev = float(model_var[:, 0].mean())
            rows[-1]["model/var"] = ev / float(np.array([r[0] for r in runs])[:, 0].var(ddof=1))
        else:
            runs, pdz, ev = docdyn_runs(dsg, pool.labels, args.budget, args.reps, rng)
            live = pdz.pi > 0
            info = dict(live=int(live.sum()), pi_ge_09=int((pdz.pi[live] >= 0.9).sum()),
                        pi_min=float(pdz.pi[live].min()), tau0=0)
            rows.append(dict(cell=f"{method} {metric} {scenario}", variance="raw HT (engine)", **info,
                             **summarize(runs, true)))
            est = np.array([r[0] for r in runs])
            rows[-1]["model/var"] = float(np.max(ev / est.var(0, ddof=1)))
        print(rows[-1], flush=True)
    cols = ["cell", "variance", "live", "pi_ge_09", "pi_min", "tau0", "reps", "n", "bias_se", "evar", "eused",
            "se_sd", "model/var", "kish", "skew", "corr", "zero_var", "normal", "t(n-1)", "dof", "t(dof)", "t(kish)", "t(kish-1)", "t(3 kish)", "t(2 kish units)", "miss_low/high", "t(dof) miss low/high", "width t(dof)/normal"]
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["# prefix / doc_dyn on the shipped sample: bias, variance estimate, interval (prefix_small_pool.py)", "",
             f"`python benchmarks/prefix_small_pool.py --reps {args.reps} --budget {args.budget:g} "
             f"--dataset {args.dataset}` "
             f"(seed {args.seed}; {(time.perf_counter() - t0) / 60:.1f} min). Columns: module docstring.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
