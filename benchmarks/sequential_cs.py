"""Target-precision stop: labels to reach the width and coverage at the stop, current vs windowed sequence.

Rules (the sequences anytime-valid at level 0.95 over all times, asymptotically):

* ``current``: the Gaussian-mixture asymptotic CS of ``activerank.sequential``
  (``rho`` tuned by ``sequential._choose_t_opt`` from the model's sigma),
  centered IS terms ``c + w (v - c)``;
* ``windowed``: :func:`activerank.inference.confidence_sequences.windowed_cs`
  on ``[min_draws, t_max]`` (``t_max`` = the draws the budget is expected to
  buy, :func:`~activerank.inference.confidence_sequences.expected_draws`),
  same terms;
* ``windowed_cv``: the same sequence on the predictable control-variate terms
  ``c + w (v - c - beta_{j-1} (m - M))``
  (:func:`~activerank.inference.confidence_sequences.predictable_terms`);
* ``current_cv``: the current sequence on the control-variate terms;
* ``fixed_width_t`` (reference, *not* anytime-valid): stop when the fixed-n
  Student-t half-width meets the target -- valid only because this stopping
  rule looks at the spread, not at the estimate (Chow & Robbins 1965);
* ``fixed_width`` (``estimate_sequential(sequence="fixed_width")``, not
  anytime-valid): the same rule on the control-variate terms with the t
  quantile at level ``1 - 0.6 alpha``
  (:func:`~activerank.inference.confidence_sequences.fixed_width_radius`).

A run draws from the active ``q`` one query at a time (batched:
``draw_budgeted_batch``) and stops at the first draw ``t >= min_draws`` whose
half-width is at most the target, or when the next new query would exceed the
budget.  Reported per pool x target: coverage of the truth at the stop, mean
labeling cost at the stop (= labels, in mean-query-cost units), the cost
relative to ``current``, the share of runs stopped on target.

Pools: the synthetic pool of ``tests/test_sequential.py`` (labels drawn from
the relevance model in every repetition, so the model is calibrated and the
truth varies) and MQ2008 fold 1 (LightGBM model, fixed truth) for a single
ranker and a pair, ERR@10.

Run::

    python benchmarks/sequential_cs.py --reps 2000      # ~3 min on 2 busy cores
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

from activerank.experiments.harness import default_data_root, method_distribution  # noqa: E402
from activerank.design.draws import draw_budgeted_batch  # noqa: E402
from activerank.inference.confidence_sequences import (  # noqa: E402
    expected_draws,
    fixed_width_radius,
    gm_radius,
    predictable_terms,
    running_cs,
    stop_on_target,
    windowed_cs,
)
from activerank.inference.small_sample import cluster_slots  # noqa: E402
from activerank.inference.sequences import choose_t_opt as _choose_t_opt, rho_for_time  # noqa: E402

LEVEL = 0.95
MIN_DRAWS = 30


def _synthetic(seed, reps, pair):
    """Pool, q, costs, c, M, model means, and per-rep true values (labels drawn from the model)."""
    from activerank.api import make_design
    from activerank.metrics import pool_metric_values
    from activerank.relevance.rankers import rank_by_scores
    from tests.conftest import SyntheticPool

    rng = np.random.default_rng(seed)
    pool = SyntheticPool(rng, n_queries=200)
    scores = pool.probs @ np.arange(3) + 0.5 * rng.random(pool.probs.shape[0])
    ranks = [rank_by_scores(scores, pool.offsets)]
    if pair:
        ranks.append(rank_by_scores(pool.probs @ np.arange(3) + 0.9 * rng.random(scores.size), pool.offsets))
    dsg = make_design(pool, tuple(ranks), pool.probs, metric="err@10", method="active", judge="all")
    tops = dsg.rankings
    mean, var = dsg.predicted_mean, dsg.predicted_variance
    vals = np.empty((reps, dsg.p.size))
    for r in range(reps):  # labels drawn from the model: one pool truth per repetition
        labels = pool.sample_labels(rng)
        v = [pool_metric_values(labels, t, metric="err@10", ymax=2) for t in tops]
        vals[r] = v[0] if not pair else v[0] - v[1]
    return dict(p=dsg.p, q=dsg.q, cost=dsg.costs.cost, mean=mean, var=var, values=vals,
                truth=vals @ dsg.p)


def _letor(dataset, scenario, metric, data_root, cache_dir):
    from _coverage_setup import SCENARIOS, problems

    # all scenarios, so the index-update removal draws the benchmark's own seeds
    pr = problems(dataset, [metric], tuple(SCENARIOS), data_root=data_root, cache_dir=cache_dir)[(scenario, metric)]
    q = method_distribution(pr, "active")
    mean, var = pr.moments["model"]
    return dict(p=pr.p, q=q, cost=pr.costs.cost, mean=mean, var=var, values=pr.values[None, :],
                truth=np.array([pr.target]))


def _fixed_width_t(t, sigma):
    from scipy import stats

    dof = np.maximum(t - 1.0, 1.0)
    return stats.t.isf((1 - LEVEL) / 2, dof) * sigma * np.sqrt(t / dof) / np.sqrt(t)


def run_pool(name, P, targets, budget, reps, seed):
    p, q, cost, mean, var = P["p"], P["q"], P["cost"], P["mean"], P["var"]
    M = float(p @ mean)
    c = M  # the centre of the terms: the model's predicted pool mean (as activerank.sequential)
    w_of = p / q
    sigma_model = float(np.sqrt(np.sum(p * p / q * (var + (mean - c) ** 2))))
    t_budget = budget / float(q @ cost)
    # the window: from min_draws to the draws the budget is expected to buy (repeats are free)
    wcs = windowed_cs(MIN_DRAWS, int(np.ceil(max(MIN_DRAWS + 1, expected_draws(q, cost, budget)))), LEVEL)
    plan = draw_budgeted_batch(q, cost, budget, reps, seed)
    x = plan.queries
    n_valid = plan.n_draws
    vals = P["values"]
    v = vals[np.arange(reps)[:, None] % vals.shape[0], x]
    truth = P["truth"][np.arange(reps) % P["truth"].size]
    w = w_of[x]
    z_plain = c + w * (v - c)
    z_cv, _ = predictable_terms(v, mean[x], w, c, M, slots=cluster_slots(x))
    cum_cost = np.cumsum(plan.charged, axis=1)
    rows = []
    alpha = 1 - LEVEL
    for target in targets:
        rho = rho_for_time(_choose_t_opt(sigma_model, target, LEVEL, t_budget, MIN_DRAWS), LEVEL)
        rules = {
            "current": (z_plain, lambda t, s: gm_radius(t, s, alpha, rho)),
            "windowed": (z_plain, wcs.radius),
            "current_cv": (z_cv, lambda t, s: gm_radius(t, s, alpha, rho)),
            "windowed_cv": (z_cv, wcs.radius),
            # not anytime-valid: valid for this width-based rule only (Chow & Robbins 1965), for reference
            "fixed_width_t": (z_plain, _fixed_width_t),
            # estimate_sequential(sequence="fixed_width"): the same stop on the control-variate terms, its t
            # interval at level 1 - 0.6 alpha (FIXED_WIDTH_ALPHA_SHARE)
            "fixed_width": (z_cv, lambda t, s: fixed_width_radius(t, s, LEVEL)),
        }
        base = None
        for rule, (z, rad) in rules.items():
            center, radius = running_cs(z, rad)
            stop, hit = stop_on_target(radius, target, n_valid, min_draws=MIN_DRAWS)
            i = np.arange(reps)
            cen, r = center[i, stop - 1], radius[i, stop - 1]
            cost_at = cum_cost[i, stop - 1]
            covered = np.abs(cen - truth) <= r
            if base is None:
                base = cost_at.mean()
            rows.append(dict(pool=name, target=target, budget=budget, rule=rule, reps=reps,
                             coverage=covered.mean(), mean_cost=cost_at.mean(), cost_vs_current=cost_at.mean() / base,
                             on_target=hit.mean(), mean_draws=stop.mean(),
                             window=f"[{wcs.t_min}, {wcs.t_max}] c={wcs.critical_value:.3f}"))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "coverage"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    root = args.data or default_data_root()
    cache = os.path.join(args.out, "cache")
    rows = []
    rows += run_pool("synthetic single", _synthetic(21, args.reps, False), [0.06, 0.045], 150.0, args.reps, 1)
    rows += run_pool("synthetic pair", _synthetic(22, args.reps, True), [0.03, 0.022], 150.0, args.reps, 2)
    rows += run_pool("MQ2008 single ERR@10", _letor("mq2008", "single", "err@10", root, cache), [0.08, 0.065],
                     150.0, args.reps, 3)
    rows += run_pool("MQ2008 pair ERR@10", _letor("mq2008", "pair", "err@10", root, cache), [0.045, 0.035],
                     150.0, args.reps, 4)
    rows += run_pool("MQ2008 single DCG@10", _letor("mq2008", "single", "dcg@10", root, cache), [0.7, 0.55],
                     150.0, args.reps, 5)
    rows += run_pool("MQ2008 pair DCG@10", _letor("mq2008", "pair", "dcg@10", root, cache), [0.25, 0.2],
                     150.0, args.reps, 6)
    df = pd.DataFrame(rows)
    seconds = time.perf_counter() - t0
    os.makedirs(args.out, exist_ok=True)
    df.to_csv(os.path.join(args.out, "sequential.csv"), index=False, float_format="%.6g")
    cols = ["pool", "target", "rule", "coverage", "mean_cost", "cost_vs_current", "on_target", "mean_draws", "window"]
    table = df[cols].copy()
    for col in ("coverage", "cost_vs_current", "on_target"):
        table[col] = table[col].map("{:.3f}".format)
    table["mean_cost"] = table["mean_cost"].map("{:.1f}".format)
    table["mean_draws"] = table["mean_draws"].map("{:.0f}".format)
    command = "python benchmarks/sequential_cs.py " + " ".join(sys.argv[1:] if argv is None else argv)
    md = ["# Target-precision stop: current vs windowed confidence sequence", "",
          f"Regenerate: `{command.strip()}` ({seconds / 60:.1f} min on 2 shared cores). {args.reps} seeded "
          "repetitions per row; budget 150 (mean-query-cost units), min_draws 30, level 0.95. `cost` = labels "
          "spent at the stop (mean-query-cost units); `on_target` = share of runs that stopped because the "
          "half-width met the target (the others ran out of budget).", "",
          "| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    md += ["| " + " | ".join(str(v) for v in r) + " |" for r in table.itertuples(index=False)]
    with open(os.path.join(args.out, "sequential.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    pd.set_option("display.width", 200)
    print(table.to_string(index=False))
    print(f"({seconds:.0f}s)")


if __name__ == "__main__":
    main()
