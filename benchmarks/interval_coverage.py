"""Coverage benchmark (issue 15): bias, coverage, SE/SD and MSE of every method x interval x budget.

Pools: MQ2008 and OHSUMED, training partition S1 (LightGBM relevance model,
linear RankSVM), pool S2-S5 (labels = hidden truth), see ``_coverage_setup.py``.
Scenarios: ``single`` ranker, ``pair`` (two rankers), ``index`` update;
metrics ERR@10 and DCG@10; budgets in units of the mean query cost (about the
number of distinct queries judged: 5, 10, 20, 50, 100; OHSUMED's pools hold
85 queries, so 5-50 there).  Dataset ``synthetic``: the concentrated design of
``tests/test_api_changeable.py`` (an index update judging only the documents
that can change the difference, a calibrated model; ``q*`` makes queries repeat:
about 1.5 draws per distinct query at budget 50), DCG@5 and ERR@10, budgets
5-50.

Methods (sampling distribution + estimator):

====================================  ==========================  =========================
method                                q                           estimator
====================================  ==========================  =========================
passive                               p                           SNIS (= plain mean)
active                                q* (cost-aware)             SNIS
active_uniform_costs                  q* ignoring costs           SNIS
model_assisted                        q* (as active)              self-tuned control variate (current)
model_assisted_cf                     q* (same draws as above)    cross-fitted control variate (new)
model_assisted_variance_cf            p sqrt(Var/lambda)          cross-fitted control variate (new)
====================================  ==========================  =========================

Intervals (``ci`` of the kernels, see ``activerank.inference.small_sample``):

================  ===========================================================================
``normal``        the paper's per-draw SE, z quantile (cross-fitted estimator: cluster SE, z)
``t_plain``       distinct-query cluster SE, Student-t with d - 1 df, no model prior
``t``             the same, SE moderated by the model's predicted variance (``ci="t"``)
``t_draws``       per-draw SE moderated with ``V / n``, t with Kish's ``n^2 / sum k^2 - 1`` df
                  (``ci="t_draws"``, the default ``ci="auto"``)
``t_draws_dist``  per-draw SE moderated, t with d - 1 df (measured alternative)
``bootstrap``     studentized bootstrap over distinct queries, sample alone (``ci="bootstrap"``)
``bootstrap_prior``  the same studentized with the moderated SE (measured alternative)
``bca``           BCa bootstrap over distinct queries (measured alternative)
``fieller``       Fieller interval for the ratio (SNIS only)
================  ===========================================================================

``n_reps`` seeded repetitions per cell, every budget a prefix of one run
(common random numbers); the bootstraps (``--n-boot`` resamples) at budgets
up to 50.

Columns of ``coverage.csv``: ``bias_z`` = mean error / its Monte-Carlo SE
(within +-3 expected), ``coverage`` of the 95% interval, ``se_over_sd`` =
mean reported SE / empirical SD of the estimates, ``mse_vs_passive``,
``nan_se`` (runs with >= 2 distinct queries but a NaN SE), ``n_lt2`` (runs
with fewer than 2 distinct queries: no SE can exist).

Run (about 40 min on 2 busy cores)::

    python benchmarks/interval_coverage.py --reps 2000 --n-boot 499 --datasets mq2008,ohsumed,synthetic \
        --out benchmarks/results/coverage
    python benchmarks/interval_coverage.py --quick            # 300 reps, MQ2008 ERR@10 only
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from _coverage_setup import SCENARIOS, SYNTHETIC_METRICS, problems, synthetic_problems  # noqa: E402

from activerank.experiments.harness import default_data_root, method_distribution  # noqa: E402
from activerank.design.draws import budget_stops, draw_budgeted_batch  # noqa: E402
from activerank.inference.model_assisted import model_assisted_prefix  # noqa: E402
from activerank.inference.crossfit import expected_distinct, model_assisted_crossfit_prefix  # noqa: E402
from activerank.inference.small_sample import (  # noqa: E402
    cluster_slots,
    critical_value,
    predicted_variance,
    snis_intervals_prefix,
)

BUDGETS = {"mq2008": (5, 10, 20, 50, 100), "ohsumed": (5, 10, 20, 50), "synthetic": (5, 10, 20, 50)}
METRICS = ("err@10", "dcg@10")
# name -> (registered method whose sampling distribution is used, estimator)
METHODS = {
    "passive": ("passive", "snis"),
    "active": ("active", "snis"),
    "active_uniform_costs": ("active_uniform_costs", "snis"),
    "model_assisted": ("model_assisted", "self_tuned"),
    "model_assisted_cf": ("model_assisted", "crossfit"),
    "model_assisted_variance_cf": ("model_assisted_variance", "crossfit"),
}
# draws shared with another method (common random numbers)
SHARE_DRAWS = {"model_assisted_cf": "model_assisted"}
INTERVALS = {"snis": ("normal", "t_plain", "t", "t_draws", "t_draws_dist", "bootstrap", "bootstrap_prior", "bca",
                      "fieller"),
             "self_tuned": ("normal",),
             "crossfit": ("normal", "t_plain", "t", "t_draws", "t_draws_dist", "bootstrap", "bootstrap_prior", "bca")}
#: the default interval of each estimator (``ci="auto"``; the previous self-tuned estimator: its own)
DEFAULT = {"snis": "t_draws", "crossfit": "t_draws", "self_tuned": "normal"}
#: intervals that use the model's predicted variance (the others are computed from the sample alone)
WITH_PRIOR = ("t", "t_draws", "t_draws_dist", "bootstrap_prior")
#: interval name -> ``ci`` of the kernels
KIND = {"t_plain": "t", "t_draws_dist": "t_draws_distinct"}
BOOTSTRAPS = ("bootstrap", "bootstrap_prior", "bca")
LEVEL = 0.95
BOOTSTRAP_BUDGETS_UP_TO = 50


def _estimates(problem, kind, q, plan, stops, budgets, interval, rng, n_boot, boot_inner=False):
    """(estimate, se, low, high, n_distinct) arrays of shape (n_budgets, n_reps).

    ``t`` is the default interval (cluster SE moderated by the model's predicted
    variance, ``d - 1`` degrees of freedom); ``t_plain`` the same without the
    model prior; ``normal`` the previous per-draw SE with ``z``.
    """
    x = plan.queries
    v = problem.values[x]
    w = problem.p[x] / q[x]
    slots = cluster_slots(x)
    mean, var = problem.moments["model"]
    prior = predicted_variance(problem.p, q, mean, var) if interval in WITH_PRIOR else None
    ci = KIND.get(interval, interval)
    if interval in BOOTSTRAPS and not boot_inner:
        # measured where the choice is made (<= 50 queries); at every budget it costs most of the runtime
        k = int(np.sum(np.asarray(budgets) <= BOOTSTRAP_BUDGETS_UP_TO))
        out = _estimates(problem, kind, q, plan, stops[:k], budgets[:k], interval, rng, n_boot, boot_inner=True)
        pad = stops.shape[0] - k
        return tuple(np.concatenate([o, np.full((pad,) + o.shape[1:], np.nan)]) for o in out)
    if kind == "snis":
        r = snis_intervals_prefix(v, w, x, stops, confidence_level=LEVEL, ci=ci, prior=prior, n_boot=n_boot,
                                  rng=rng, slots=slots)
        return r.estimate, r.standard_error, r.low, r.high, r.n_distinct
    M = float(problem.p @ mean)
    if kind == "self_tuned":
        r = model_assisted_prefix(v, mean[x], w, M, stops, tuned=True)
        z = float(critical_value(LEVEL, np.inf))
        nd = snis_intervals_prefix(v, w, x, stops, ci="t", slots=slots).n_distinct
        return r.estimate, r.standard_error, r.estimate - z * r.standard_error, r.estimate + z * r.standard_error, nd
    expected = [expected_distinct(q, problem.costs.cost, b) for b in budgets]
    r = model_assisted_crossfit_prefix(v, mean[x], w, M, x, stops, confidence_level=LEVEL, ci=ci, prior=prior,
                                       n_boot=n_boot, rng=rng, slots=slots, expected_distinct=expected)
    return r.estimate, r.standard_error, r.low, r.high, r.n_distinct


def run_problem(dataset, scenario, metric, problem, budgets, reps, seed, n_boot, methods=METHODS):
    rows = []
    plans = {}
    for mi, (name, (method, kind)) in enumerate(methods.items()):
        q = method_distribution(problem, method)
        key = SHARE_DRAWS.get(name, name)
        if key not in plans:
            ss = np.random.SeedSequence([seed, mi, 7])
            plan = draw_budgeted_batch(q, problem.costs.cost, float(max(budgets)), reps, ss)
            plans[key] = (q, plan, budget_stops(plan, budgets))
        q, plan, stops = plans[key]
        for ii, interval in enumerate(INTERVALS[kind]):
            t0 = time.perf_counter()
            est, se, lo, hi, nd = _estimates(problem, kind, q, plan, stops, budgets, interval,
                                             np.random.default_rng([seed, mi, ii, 11]), n_boot)
            for b, budget in enumerate(budgets):
                if not np.isfinite(est[b]).any():
                    continue  # interval not computed at this budget
                e = est[b] - problem.target
                ok = np.isfinite(e)
                sd = float(np.std(e[ok], ddof=1))
                rows.append(dict(
                    dataset=dataset, scenario=scenario, metric=metric, method=name, estimator=kind,
                    interval=interval, budget=budget, reps=reps, target=problem.target,
                    mean_distinct=float(nd[b].mean()), min_distinct=int(nd[b].min()),
                    mean_draws=float(stops[b].mean()),
                    bias=float(e[ok].mean()), bias_z=float(e[ok].mean() / (sd / np.sqrt(ok.sum()))) if sd > 0 else 0.0,
                    sd=sd, mean_se=float(np.nanmean(se[b])),
                    se_over_sd=float(np.nanmean(se[b]) / sd) if sd > 0 else np.nan,
                    coverage=float(np.mean((lo[b] <= problem.target) & (problem.target <= hi[b]))),
                    mean_width=float(np.mean(np.where(np.isfinite(hi[b] - lo[b]), hi[b] - lo[b], np.nan))),
                    zero_width=float(np.mean(hi[b] - lo[b] == 0)),
                    mse=float(np.mean(e[ok] ** 2)),
                    nan_se=int(np.sum(~np.isfinite(se[b]) & (nd[b] >= 2))),
                    n_lt2=int(np.sum(nd[b] < 2)),
                    seconds=(time.perf_counter() - t0) / len(budgets),
                ))
    df = pd.DataFrame(rows)
    pas = df[(df.method == "passive") & (df.interval == DEFAULT["snis"])].set_index("budget").mse
    df["mse_vs_passive"] = df.mse / df.budget.map(pas)
    return df


def run(datasets, metrics, scenarios, reps, seed, n_boot, data_root, cache_dir, methods=METHODS, say=print):
    out = []
    for di, ds in enumerate(datasets):
        if ds == "synthetic":  # the concentrated design of tests/test_api_changeable.py (its own metrics)
            probs = synthetic_problems(seed=seed) if "index" in scenarios else {}
        else:
            probs = problems(ds, metrics, scenarios, data_root=data_root or default_data_root(), cache_dir=cache_dir,
                             seed=seed)
        for (sc, m), prob in probs.items():
            t0 = time.perf_counter()
            si = list(SCENARIOS).index(sc)
            mi = list(METRICS).index(m) if m in METRICS else 9 + list(SYNTHETIC_METRICS).index(m)
            out.append(run_problem(ds, sc, m, prob, BUDGETS[ds], reps, [seed, di, si, mi], n_boot, methods))
            say(f"{ds} {sc} {m}: {time.perf_counter() - t0:.0f}s")
    return pd.concat(out, ignore_index=True)


def summary_markdown(df: pd.DataFrame, seconds: float, command: str) -> str:
    """Goal-oriented tables: coverage by method x interval x budget, bias, MSE ratio."""
    lines = [f"# Coverage benchmark (issue 15)", "",
             f"Regenerate: `{command}` (runtime {seconds / 60:.1f} min on 2 shared cores).", "",
             f"{int(df.reps.iloc[0])} seeded repetitions per cell; budgets in mean-query-cost units "
             "(`d` = mean number of distinct queries judged). Coverage of the nominal 95% interval; "
             "Monte-Carlo SE of a coverage near 0.95 is about 0.005 at 2000 reps.", ""]
    lines += goals_markdown(df)
    lines += intervals_markdown(df)
    pivot = df.pivot_table(index=["dataset", "scenario", "metric", "method", "interval"], columns="budget",
                           values="coverage", sort=False)
    lines += ["## Coverage range over scenarios x metrics (min-max), by method, interval and budget", ""]
    g = df.groupby(["dataset", "method", "interval", "budget"], sort=False).coverage.agg(["min", "max"])
    tab = (g["min"].map("{:.3f}".format) + "–" + g["max"].map("{:.3f}".format)).unstack("budget")
    lines += [_md(tab.reset_index()), ""]
    lines += ["## Largest |bias| in Monte-Carlo SE units over scenarios x metrics", ""]
    b = df[df.interval.isin([DEFAULT["snis"], "normal"])].copy()
    b["abs_bias_z"] = b.bias_z.abs()
    idx = b.groupby(["dataset", "method", "budget"], sort=False).abs_bias_z.idxmax()
    tb = b.loc[idx, ["dataset", "method", "budget", "bias_z"]].pivot_table(
        index=["dataset", "method"], columns="budget", values="bias_z", sort=False).round(2)
    lines += [_md(tb.reset_index()), ""]
    lines += ["## MSE vs passive (max over scenarios x metrics)", ""]
    m = df[df.interval.isin([DEFAULT["snis"], "normal"])].groupby(["dataset", "method", "budget"], sort=False) \
        .mse_vs_passive.max().unstack("budget").round(2)
    lines += [_md(m.reset_index()), ""]
    lines += ["## SE / SD (min-max over scenarios x metrics; the interval's own SE)", ""]
    g = df.groupby(["dataset", "method", "interval", "budget"], sort=False).se_over_sd.agg(["min", "max"])
    tab = (g["min"].map("{:.2f}".format) + "–" + g["max"].map("{:.2f}".format)).unstack("budget")
    lines += [_md(tab[tab.index.get_level_values("interval").isin(["normal", "t", "t_draws"])].reset_index()), ""]
    lines += [f"NaN standard errors with >= 2 distinct queries: {int(df.nan_se.sum())} in all cells; "
              f"runs with < 2 distinct queries: {int(df[df.interval == 't_draws'].n_lt2.sum())} (of "
              f"{int(df[df.interval == 't_draws'].reps.sum())} t_draws-interval runs).", ""]
    lines += ["## Every cell: coverage", "", _md(pivot.round(3).reset_index()), ""]
    return "\n".join(lines)


def goals_markdown(df: pd.DataFrame) -> list:
    """The issue-15 goals, measured: min-max over datasets x scenarios x metrics."""
    d = df[df.interval == df.estimator.map(DEFAULT)]
    old = df[df.interval == "normal"]

    def rng_(x):
        return f"{x.min():.3f}–{x.max():.3f}" if len(x) else "n/a"

    rows = []
    for method in df.method.unique():
        r = {"method": method}
        for b in sorted(df.budget.unique()):
            r[f"cov {b:g} (now)"] = rng_(d[(d.method == method) & (d.budget == b)].coverage)
        r["cov 10-20 (previous normal)"] = rng_(old[(old.method == method) & old.budget.isin([10, 20])].coverage)
        r["max |bias| SE"] = f"{d[d.method == method].bias_z.abs().max():.2f}"
        r["MSE/passive @5"] = f"{d[(d.method == method) & (d.budget == 5)].mse_vs_passive.max():.2f}"
        r["MSE/passive @10"] = f"{d[(d.method == method) & (d.budget == 10)].mse_vs_passive.max():.2f}"
        r["NaN SE"] = int(d[d.method == method].nan_se.sum())
        rows.append(r)
    return ["## Goals (issue 15): default interval per method, min–max over datasets × scenarios × metrics", "",
            "Default interval: `t_draws` (per-draw SE moderated by the model's predicted variance, Student-t with "
            "Kish's effective number of distinct queries − 1 df; = `t` without repeats) for every method except "
            "the previous self-tuned `model_assisted` (its own SE, normal quantile). Bias in "
            "Monte-Carlo SE units; MSE relative to passive at the same budget (max over cells).", "",
            _md(pd.DataFrame(rows)), ""]


def intervals_markdown(df: pd.DataFrame) -> list:
    """Every interval side by side: cells with coverage in [0.93, 0.97] and min / median / max coverage per
    budget (all methods but the previous self-tuned one), and the cells where queries repeat."""
    d = df[df.estimator != "self_tuned"].copy()
    d["goal"] = d.coverage.between(0.93, 0.97)
    order = [i for i in dict.fromkeys(x for v in INTERVALS.values() for x in v) if i in set(d.interval)]

    def table(sub):
        rows = []
        for iv in order:
            r = {"interval": iv}
            for b in sorted(sub.budget.unique()):
                c = sub[(sub.interval == iv) & (sub.budget == b)]
                r[f"{b:g}"] = (f"{int(c.goal.sum())}/{len(c)} · {c.coverage.min():.3f} / {c.coverage.median():.3f} / "
                               f"{c.coverage.max():.3f}") if len(c) else ""
            rows.append(r)
        return _md(pd.DataFrame(rows))

    rep = d[d.mean_draws / d.mean_distinct > 1.15]
    where = "; ".join(f"{ds} at {', '.join(f'{b:g}' for b in sorted(g.budget.unique()))}"
                      for ds, g in rep.groupby("dataset", sort=False))
    return ["## Intervals side by side", "",
            "Per budget: cells with coverage in [0.93, 0.97] / cells · min / median / max coverage, over datasets × "
            "scenarios × metrics × methods (the previous self-tuned `model_assisted` left out).", "",
            table(d), "",
            "### Cells where queries repeat (mean draws / mean distinct queries > 1.15)", "",
            f"{rep[['dataset', 'scenario', 'metric', 'method', 'budget']].drop_duplicates().shape[0]} cells "
            f"({where}).", "",
            table(rep) if len(rep) else "(none)", ""]


def _md(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in df.itertuples(index=False):
        out.append("| " + " | ".join("" if (isinstance(x, float) and np.isnan(x)) else str(x) for x in r) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None, help="data root (default $ACTIVERANK_DATA)")
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--n-boot", type=int, default=199)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", default="mq2008,ohsumed")
    ap.add_argument("--metrics", default=",".join(METRICS))
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--quick", action="store_true", help="300 reps, MQ2008, ERR@10")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "coverage"))
    args = ap.parse_args(argv)
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    if args.quick:
        args.reps, args.datasets, args.metrics = 300, "mq2008", "err@10"
    methods = {k: METHODS[k] for k in split(args.methods)}
    if "passive" not in methods:
        methods = {"passive": METHODS["passive"], **methods}
    t0 = time.perf_counter()
    df = run(split(args.datasets), split(args.metrics), split(args.scenarios), args.reps, args.seed, args.n_boot,
             args.data, os.path.join(args.out, "cache"), methods)
    seconds = time.perf_counter() - t0
    os.makedirs(args.out, exist_ok=True)
    df.to_csv(os.path.join(args.out, "coverage.csv"), index=False, float_format="%.6g")
    command = "python benchmarks/interval_coverage.py " + " ".join(sys.argv[1:] if argv is None else argv)
    with open(os.path.join(args.out, "summary.md"), "w") as fh:
        fh.write(summary_markdown(df, seconds, command.strip()))
    print(f"wrote {args.out}/coverage.csv and summary.md ({seconds:.0f}s)")


if __name__ == "__main__":
    main()
