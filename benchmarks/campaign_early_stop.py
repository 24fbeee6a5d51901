"""Campaigns stopped early: the default campaign's estimate after any number of returned tasks (issue 30).

A labeling campaign (:class:`activerank.campaign.Campaign`, ``method="auto"``) runs what the API's auto rule
picks among the designs whose estimate needs only a judged *head* of the task list
(``activerank.campaign.writes.CAMPAIGN_ALTERNATIVES``): ``active`` (draws with replacement; any head of the
draw sequence is an i.i.d. sample) or ``doc_dyn`` (a budgeted order sample of documents; its first ``m`` units
are a priority sample with the exact inclusion probabilities ``min(1, pi xi_(m+1))``).  This benchmark builds
each cell's campaign design with the campaign's own call (``auto_design`` with the campaign's candidates),
draws the campaign's sample for ``--reps`` seeds exactly as ``Campaign.create`` does (``draw_budgeted`` /
``draw_priority`` with ``rng=seed``), and estimates with the campaign's own estimators
(``estimate_from_plan``: the longest fully judged head of draws; ``DocumentPlan.judged_prefix`` +
``estimate_documents``: the longest judged head in draw order) when annotators have returned

* ``head f``: the first ``f`` of the tasks, in task-list order (f = 0.25, 0.5, 0.75, 1);
* ``lost 10%``: every task, except that each one independently never comes back with probability 0.1
  (the estimate uses the judged head before the first lost task; the report counts the lost tasks).

Per cell: ``|bias|/SE`` (Monte-Carlo z of the mean error; the largest over contrasts), coverage of the
reported 95% interval (``many``: the simultaneous intervals), mean reported variance / empirical variance,
the head's mean cost in queries' worth (``q_worth``) and the number of runs with no usable head.  The
issue's goals (bias <= 3 SE, coverage 0.93-0.97) apply at >= 10 queries' worth of labels.

Datasets and scenarios as ``hard_budget.py`` (the shipped 30-query sample, a synthetic MSLR-like 40-query
pool, OHSUMED fold 1 with ``ACTIVERANK_DATA``); metrics DCG@10 (auto picks between ``active`` and
``doc_dyn``) and ERR@10 (campaigns leave ``prefix`` out: ``active``).

Run:  python benchmarks/campaign_early_stop.py [--reps 2000] [--datasets sample,synthetic,ohsumed]
Writes benchmarks/results/campaign_early_stop.csv and campaign_early_stop.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from multiprocessing import Pool

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import activerank as ar  # noqa: E402
from activerank.campaign.documents import DocumentPlan, estimate_documents  # noqa: E402
from activerank.campaign.writes import CAMPAIGN_ALTERNATIVES, CAMPAIGN_ROUTE  # noqa: E402
from activerank.design.auto import auto_design  # noqa: E402
from activerank.design.kinds.documents import document_target_of, draw_priority, unit_costs  # noqa: E402
from activerank.design.sampling import DEFAULT_DEFENSIVE, DrawPlan, draw_budgeted  # noqa: E402
from activerank.engine import estimate_from_plan  # noqa: E402
from activerank.metrics.registry import parse_metric  # noqa: E402

from hard_budget import BUDGETS, SCENARIOS, _point_and_interval, _setup, truth  # noqa: E402

RETURNS = ("head 0.25", "head 0.5", "head 0.75", "head 1", "lost 10%")
LOSS = 0.1


def campaign_design(pool, pool_, probs, rankings, scenario: str, metric: str, budget: float):
    """The design ``Campaign.create(method="auto")`` stores for this cell, and auto's choice."""
    kind = {"single": "mean", "pair": "difference", "index": "difference", "many": "baseline"}[scenario]
    names = ("a", "b", "baseline") if kind == "baseline" else None
    args = dict(metric=metric, k=None, method="auto", costs="auto", query_weights=None,
                defensive=DEFAULT_DEFENSIVE, names=names, judge="changeable")
    return auto_design(pool, pool_, kind, rankings, probs, budget, args, query_method="active",
                       alternatives=CAMPAIGN_ALTERNATIVES, route=CAMPAIGN_ROUTE)


def _returned(n_tasks: int, mode: str, rng) -> np.ndarray:
    """Which tasks (in task-list order) came back."""
    if mode.startswith("head"):
        m = int(np.floor(float(mode.split()[1]) * n_tasks + 1e-9))
        return np.arange(n_tasks) < m
    return rng.random(n_tasks) >= LOSS


class _Documents:
    """doc_dyn campaigns: the budgeted priority sample and its judged-head estimate."""

    def __init__(self, dsg, pool_, probs, labels, budget):
        self.dsg, self.pool_, self.probs, self.labels, self.budget = dsg, pool_, probs, labels, budget
        kind = dsg.method_spec.kind
        self.dt = document_target_of(dsg)
        c = unit_costs(self.dt, dsg.costs, dsg.document_costs)
        self.pd = kind.design_for(self.dt, dsg.probs, c, float(budget), judged=np.zeros(self.dt.n_units, bool),
                                  defensive=dsg.defensive)

    def runs(self, seed, rng_returns):
        take, realized = draw_priority(self.pd, np.random.default_rng(seed))
        plan = DocumentPlan(self.dt, realized, take, self.pd.pi)
        order = plan.draw_order(seed)  # task-list position of every sampled unit
        for mode in RETURNS:
            back = _returned(take.size, mode, rng_returns)[order]
            # every task back: the draw itself (judged_prefix serves heads that stop before a missing task)
            sub, m = (plan, take.size) if back.all() else plan.judged_prefix(back, seed)
            if m < 2:
                yield mode, None, 0.0, int((~back).sum())
                continue
            try:
                res = estimate_documents(self.dsg, self.pool_, sub, self.labels[sub.rows], self.probs,
                                         budget=self.budget)
            except ValueError:
                yield mode, None, 0.0, int((~back).sum())
                continue
            yield mode, res, float(sub.costs.sum()), int((~back).sum())


class _Draws:
    """active campaigns: the budgeted draw sequence and its longest fully judged head."""

    def __init__(self, dsg, pool_, probs, labels, budget):
        self.dsg, self.pool_, self.labels, self.budget = dsg, pool_, labels, budget

    def runs(self, seed, rng_returns):
        plan = draw_budgeted(self.dsg.q, self.dsg.costs.cost, self.budget, seed)
        x = plan.queries
        # one task per distinct query, listed at its first draw; a repeat draw needs no new label
        _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        task = np.argsort(np.argsort(first))[inverse]  # every draw's task, in task-list order
        for mode in RETURNS:
            back_t = _returned(first.size, mode, rng_returns)
            back = back_t[task]
            m = int(back.size if back.all() else np.argmin(back))  # the longest fully judged head of draws
            if m == 0:
                yield mode, None, 0.0, int((~back_t).sum())
                continue
            head = DrawPlan(queries=x[:m], new=plan.new[:m], charged=plan.charged[:m], budget=plan.budget)
            labels = np.full(self.labels.shape, -1, dtype=np.int64)
            for q in np.unique(x[:m]).tolist():
                rows = self.dsg.documents(q)
                labels[rows] = self.labels[rows]
            try:
                res = estimate_from_plan(self.dsg, self.pool_, head, labels)
            except ValueError:  # a head of one query has no standard error: the campaign says so too
                yield mode, None, 0.0, int((~back_t).sum())
                continue
            yield mode, res, float(plan.charged[:m].sum()), int((~back_t).sum())


def cell(task) -> list[dict]:
    dataset, scenario, metric, budget, reps, seed = task
    pool, pool_, probs, rankings, _, _ = _setup(dataset)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dsg, choice = campaign_design(pool, pool_, probs, rankings[scenario], scenario, metric, budget)
        true = truth(pool, rankings[scenario], metric)
        runner = (_Documents if dsg.method_spec.unit == "document" else _Draws)(dsg, pool_, probs,
                                                                               np.asarray(pool.labels), budget)
        acc: dict = {m: dict(est=[], se=[], cover=[], cost=[], lost=[], empty=0) for m in RETURNS}
        for rep in range(reps):
            s = int(np.random.SeedSequence([seed, rep]).generate_state(1)[0])
            for mode, res, cost, lost in runner.runs(s, np.random.default_rng([seed, rep, 1])):
                a = acc[mode]
                a["lost"].append(lost)
                if res is None:
                    a["empty"] += 1
                    continue
                point, se, low, high = _point_and_interval(res)
                tol = 1e-12 * max(1.0, float(np.abs(true).max()))
                a["est"].append(point)
                a["se"].append(se)
                a["cover"].append(bool(((low - tol <= true) & (true <= high + tol)).all()))
                a["cost"].append(cost)
    secs = time.perf_counter() - t0
    out = []
    for mode, a in acc.items():
        row = dict(dataset=dataset, scenario=scenario, metric=metric, budget=budget, method=dsg.method,
                   returned=mode, reps=len(a["est"]), no_head=a["empty"], lost=float(np.mean(a["lost"])),
                   seconds=secs)
        if len(a["est"]) >= 2:
            e, s_ = np.array(a["est"]), np.array(a["se"])
            sd = e.std(axis=0, ddof=1)
            mc = sd / np.sqrt(e.shape[0])
            bias = e.mean(axis=0) - true
            z = np.where(mc > 1e-12, bias / np.where(mc > 1e-12, mc, 1.0), 0.0)
            ratio = np.where(sd > 0, np.mean(s_**2, axis=0) / np.where(sd > 0, sd**2, 1.0), np.nan)
            ratio = np.where(ratio > 0, ratio, np.nan)
            w = int(np.argmax(np.abs(z)))
            row.update(q_worth=float(np.mean(a["cost"])), bias_se=float(z[w]), coverage=float(np.mean(a["cover"])),
                       var_ratio=float(ratio[int(np.nanargmax(np.abs(np.log(ratio))))]) if np.isfinite(ratio).any()
                       else float("nan"))
        out.append(row)
    return out


def tasks(datasets, reps, seed) -> list:
    out = []
    for di, ds in enumerate(datasets):
        for mi, metric in enumerate(("dcg@10", "err@10")):
            for budget in BUDGETS[ds]:
                for si, sc in enumerate(SCENARIOS):
                    out.append((ds, sc, metric, budget, reps, [seed, di, mi, si, int(budget)]))
    return out


def report(df: pd.DataFrame, cmd: str) -> str:
    ok = df[df["q_worth"].fillna(0) >= 10]
    lines = [
        "# Campaigns stopped early (the default campaign, estimate from the judged head)", "",
        f"Generated by `{cmd}`. `method` = what the campaign's `method=\"auto\"` runs; `returned` = which tasks "
        "came back (`head f`: the first f of the task list; `lost 10%`: every task but each lost with "
        "probability 0.1); `q_worth` = mean cost of the head the estimate uses, in queries' worth; `no_head` = runs "
        "with no usable head (not estimated; the campaign says so); `lost` = mean lost tasks. Goals at >= 10 "
        "queries' worth: |bias| <= 3 SE, coverage 0.93-0.97.", "",
        f"Cells at >= 10 queries' worth: {len(ok)}; bias within 3 SE in {int((ok.bias_se.abs() <= 3).sum())}; "
        f"coverage in 0.93-0.97 in {int(ok.coverage.between(0.93, 0.97).sum())} "
        f"(range {ok.coverage.min():.3f}-{ok.coverage.max():.3f}); variance ratio "
        f"{ok.var_ratio.min():.2f}-{ok.var_ratio.max():.2f}." if len(ok) else "No cell reaches 10 queries' worth.",
        "", "| dataset | scenario | metric | budget | method | returned | reps | q_worth | bias/SE | coverage | "
        "var ratio | no head | lost |", "|---|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in df.itertuples():
        cov = "" if pd.isna(getattr(r, "coverage", np.nan)) else f"{r.coverage:.3f}"
        lines.append(f"| {r.dataset} | {r.scenario} | {r.metric} | {r.budget:g} | {r.method} | {r.returned} | "
                     f"{r.reps} | {r.q_worth:.1f} | {r.bias_se:+.1f} | {cov} | {r.var_ratio:.2f} | {r.no_head} | "
                     f"{r.lost:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--datasets", default="sample,synthetic,ohsumed")
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "campaign_early_stop"))
    ap.add_argument("--resume", action="store_true", help="keep the cells of an earlier (partial) run")
    ap.add_argument("--report-only", action="store_true", help="write the report from the partial results")
    args = ap.parse_args(argv)
    datasets = [d for d in args.datasets.split(",") if d]
    if "ohsumed" in datasets and not os.environ.get("ACTIVERANK_DATA"):
        print("ohsumed skipped: set ACTIVERANK_DATA to the folder holding the LETOR data")
        datasets.remove("ohsumed")
    partial = args.out + ".partial.csv"
    rows = pd.read_csv(partial).to_dict("records") if (args.resume or args.report_only) and os.path.exists(partial) else []
    done = {(r["dataset"], r["scenario"], r["metric"], float(r["budget"])) for r in rows}
    work = [t for t in tasks(datasets, args.reps, args.seed) if (t[0], t[1], t[2], float(t[3])) not in done]
    if args.report_only:
        work = []

    def keep(out):  # a checkpoint after every cell: a run cut short keeps its finished cells
        rows.extend(out)
        pd.DataFrame(rows).to_csv(partial, index=False)
        print(out[0]["dataset"], out[0]["scenario"], out[0]["metric"], out[0]["method"], f"{out[0]['seconds']:.0f}s",
              flush=True)

    if args.workers > 1:
        with Pool(args.workers) as p:
            for out in p.imap_unordered(cell, work):
                keep(out)
    else:
        for t in work:
            keep(cell(t))
    df = pd.DataFrame(rows).sort_values(["dataset", "metric", "scenario", "budget", "returned"])
    df.to_csv(args.out + ".csv", index=False)
    cmd = "python benchmarks/campaign_early_stop.py " + " ".join(argv if argv is not None else sys.argv[1:])
    with open(args.out + ".md", "w") as fh:
        fh.write(report(df, cmd.strip()))
    print(report(df, cmd.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
