"""Item 1 of issue 17: query-level sampling that pays only for changeable documents.

Index update on MQ2008 (RF-regression ranker vs the same ranker with 10% of
every list removed), harness protocol (5 folds, pool = the 4 other
partitions).  Every method draws whole queries; what differs is the cost a
drawn query is charged and the q it is drawn from:

    passive          q = p, charged all documents of the union of both top-10s
    active           Sawade q* with the full cost (the harness's "active")
    passive_cancel   q = p over undetermined queries, charged only the
                     changeable documents (determined queries: census, delta = 0)
    active_cancel    q* with the changeable-document cost (census_distribution)

Budgets are in units of the mean *full* query cost for every method, so the
savings are at equal documents judged.  Savings = 1 - B / 100 where B is the
budget at which the method reaches passive's mean absolute error at budget
100 (harness.label_savings, bootstrap interval over repetitions).

Run:  python benchmarks/document_level/cancellation.py [--reps 1000] [--folds 1,2,3,4,5]
Writes results/cancellation.csv and results/cancellation.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import pandas as pd

from common import RESULTS, config  # noqa: F401  (sets sys.path)

from activerank.design.cancellation import census_distribution, changeable_costs, changeable_documents
from activerank.design.costs import QueryCosts
from activerank.design.sampling import expected_squared_error
from activerank.experiments.harness import (
    METHODS,
    SCENARIOS,
    SamplingMethod,
    build_problem,
    fit_fold,
    label_savings,
    simulate,
)
from activerank.inference.snis import BatchEstimate, snis_prefix

BUDGETS = (2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300)
REF = 100.0


class CensusMethod(SamplingMethod):
    """Draw undetermined queries only; estimate = mass * SNIS (determined queries are 0)."""

    def __init__(self, name, design):
        self.name = name
        self.design = design

    def distribution(self, problem, *, defensive=0.1):
        return self.design.q

    def estimate(self, problem, q, plan, stops):
        x = plan.queries
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(plan.valid, problem.p[x] / np.where(q[x] > 0, q[x], 1.0), 0.0)
        est = snis_prefix(problem.values[x], w, stops)
        m = self.design.mass
        return BatchEstimate(m * est.estimate, m * est.standard_error, est.effective_sample_size, est.n_draws)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--metrics", default="dcg@10,err@10")
    ap.add_argument("--cache", default=None)
    args = ap.parse_args()
    cfg = config(args.cache)
    inst = next(s for s in SCENARIOS if s.key == "c_index")
    folds = [int(f) for f in args.folds.split(",")]
    t0 = time.perf_counter()
    rows, losses, stats = [], {}, []
    for fold in folds:
        fm = fit_fold("mq2008", fold, cfg)
        for metric in args.metrics.split(","):
            prob = build_problem(fm, inst, metric, cost_model="constant", rng=np.random.default_rng([0, fold, 99]))
            n_docs = fm.pool.n_docs
            cs = changeable_documents(list(prob.rankings), n_docs=n_docs, metric=metric)
            cc = changeable_costs(np.ones(n_docs), cs, scale=prob.costs.scale, model="constant")
            cheap = dataclasses.replace(prob, costs=QueryCosts(cost=cc.cost, raw=cc.raw, model=cc.model))
            mean, var = prob.moments["model"]
            sq = expected_squared_error(mean, var, prob.p)
            designs = {
                "passive": (prob, METHODS["passive"]),
                "active": (prob, METHODS["active"]),
                "passive_cancel": (cheap, CensusMethod("passive_cancel", census_distribution(
                    np.ones_like(sq), cc, prob.p, defensive=1.0))),
                "active_cancel": (cheap, CensusMethod("active_cancel", census_distribution(sq, cc, prob.p))),
            }
            stats.append(dict(fold=fold, metric=metric, determined=float(cs.determined.mean()),
                              full_docs=float(prob.costs.raw.mean()), changeable_docs=float(cc.raw.mean()),
                              true_delta=prob.target))
            for mi, (name, (pb, method)) in enumerate(designs.items()):
                summ, loss = simulate(pb, method, BUDGETS, args.reps, np.random.SeedSequence([1, fold, mi]))
                summ.insert(0, "method", name)
                summ.insert(0, "metric", metric)
                summ.insert(0, "fold", fold)
                rows.append(summ)
                losses.setdefault((metric, name), []).append(loss["abs_error"])
        print(f"fold {fold} done {time.perf_counter() - t0:.0f}s", flush=True)
    curves = pd.concat(rows, ignore_index=True)
    curves.to_csv(RESULTS / "cancellation.csv", index=False)
    st = pd.DataFrame(stats)
    lines = ["# Query level, paying only for changeable documents (index update, MQ2008)", "",
             f"{len(folds)} folds x {args.reps} repetitions; budgets in units of the mean full query cost; "
             "savings vs passive (full cost) at budget 100, mean absolute error, 95% bootstrap interval.", "",
             "| metric | determined queries | docs / query (full) | changeable docs / query |", "|---|---|---|---|"]
    for metric, g in st.groupby("metric", sort=False):
        lines.append(f"| {metric} | {g.determined.mean():.1%} | {g.full_docs.mean():.2f} | {g.changeable_docs.mean():.2f} |")
    lines += ["", "| metric | method | savings | 95% interval | error at 100 |", "|---|---|---|---|---|"]
    for (metric, name), ls in losses.items():
        if name == "passive":
            continue
        s = label_savings(np.asarray(BUDGETS, float), ls, losses[(metric, "passive")], REF, rng=0)
        cens = {-1: " (≥, censored)", 1: " (≤, censored)"}.get(s["censored"], "")
        lines.append(f"| {metric} | {name} | {s['savings']:.0%}{cens} | [{s['low']:.0%}, {s['high']:.0%}] | "
                     f"{s['active_error']:.4g} (passive {s['passive_error']:.4g}) |")
    lines += ["", f"Run time {time.perf_counter() - t0:.0f} s (shared 2-core machine).", ""]
    (RESULTS / "cancellation.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
