"""Item 1 of issue 17: query-level sampling that pays only for changeable documents.

Index update on MQ2008 (RF-regression ranker vs the same ranker with 10% of
every list removed), harness protocol (5 folds, pool = the 4 other
partitions).  Every method draws whole queries; what differs is the cost a
drawn query is charged and the q it is drawn from:

    passive          q = p, charged all documents of the union of both top-10s
    active           Sawade q* with the full cost (the harness's "active")
    passive_cancel   q = p over undetermined queries, charged only the
                     changeable documents (determined queries: census, delta = 0)
    active_cancel    q* with the changeable-document cost: what ``activerank.compare``
                     does by default (``judge="changeable"``)

The two ``*_cancel`` designs are built by the engine's own
:func:`activerank.design.design.build_design` on a target with
``judge="changeable"`` (costs of the changeable documents in the unit of
judging whole queries, q* over the undetermined queries, determined queries a
census stratum) and estimated like :mod:`activerank.engine.assemble` does:
``share * SNIS`` over the drawn queries plus the census's exact 0.

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

from activerank.design.design import build_design
from activerank.design.methods import Method, get_method, register_method, unregister_method
from activerank.design.targets import make_target
from activerank.experiments.harness import SCENARIOS, build_problem, fit_fold, label_savings, simulate
from activerank.inference.estimators import Estimator
from activerank.inference.snis import BatchEstimate, snis_prefix

BUDGETS = (2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300)
REF = 100.0


class CensusSNIS(Estimator):
    """``share * SNIS`` over the drawn (undetermined) queries; the determined ones add exactly 0."""

    def __init__(self, share: float):
        self.share = share

    def prefix(self, values, weights, stops, *, predictions=None, pool_prediction=None):
        est = snis_prefix(values, weights, stops)
        return BatchEstimate(self.share * est.estimate, self.share * est.standard_error,
                             est.effective_sample_size, est.n_draws)


def changeable_method(name: str, prob, base: str) -> tuple:
    """The engine's changeable design of method ``base`` on ``prob``, registered as ``name``."""
    target = make_target("difference", list(prob.rankings), prob.metric, judge="changeable")
    dsg = build_design(target, prob.probs, method=get_method(base), p=prob.p, doc_costs=np.ones(prob.probs.shape[0]),
                       cost_model="constant", per_query_cost=False, defensive=0.1)
    assert abs(dsg.costs.scale - prob.costs.scale) < 1e-9 * prob.costs.scale  # same budget unit
    share = 1.0 - float(prob.p[dsg.census].sum())
    register_method(Method(name, lambda *args, q=dsg.q: q, CensusSNIS(share)), replace=True)
    return dataclasses.replace(prob, costs=dsg.costs), dsg


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
            cheap, dsg = changeable_method("active_cancel", prob, "active")
            cheap_p, _ = changeable_method("passive_cancel", prob, "passive")
            designs = {"passive": (prob, "passive"), "active": (prob, "active"),
                       "passive_cancel": (cheap_p, "passive_cancel"), "active_cancel": (cheap, "active_cancel")}
            stats.append(dict(fold=fold, metric=metric, determined=float(dsg.target.determined.mean()),
                              full_docs=float(prob.costs.raw.mean()), changeable_docs=float(dsg.costs.raw.mean()),
                              true_delta=prob.target))
            for mi, (name, (pb, method)) in enumerate(designs.items()):
                summ, loss = simulate(pb, method, BUDGETS, args.reps, np.random.SeedSequence([1, fold, mi]))
                summ.insert(0, "method", name)
                summ.insert(0, "metric", metric)
                summ.insert(0, "fold", fold)
                rows.append(summ)
                losses.setdefault((metric, name), []).append(loss["abs_error"])
        print(f"fold {fold} done {time.perf_counter() - t0:.0f}s", flush=True)
    for name in ("active_cancel", "passive_cancel"):
        unregister_method(name)
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
