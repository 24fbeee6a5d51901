"""What the API runs with no ``method`` argument, on every cell of the peers benchmark (issue 30).

The ``default`` row of issue 30: since 0.6.0 ``method="auto"`` is the default of
``estimate`` / ``compare`` / ``compare_many`` (:mod:`activerank.design.auto`): it
weighs ``active_wor`` against ``doc_dyn`` (additive metrics, DCG@10) or ``prefix``
(cascade metrics, ERR@10) by the relevance model's predicted variance at the
budget, and stays query-level under per-query costs.

Same datasets, tasks, rankers, budgets and cost modes as ``run.py`` (its
:func:`run.fit_dataset` and :func:`run.make_tasks`).  Per cell:

(a) the choice.  One public call per cell and budget with no ``method``
    argument -- ``ar.estimate`` (one ranker), ``ar.compare`` (two rankers; index
    update = the ranking against itself with 10% of every result list removed,
    passed as ready-made ``Rankings``), ``ar.compare_many`` (k systems: the 4
    candidates against the baseline) -- on the benchmark's pool, relevance model
    and rankings, with a labeler answering the true labels
    (:class:`activerank.KnownLabels`).  ``queries`` mode = ``costs="uniform"``
    (one unit per query: auto must stay query-level), ``documents`` mode =
    ``costs="constant"`` (one unit per judged document, the budget in units of
    the pool's mean cost of judging a whole query, as ``run.py``'s cost modes;
    checked equal to ``run.py``'s per-query costs).  The chosen method is
    ``result.trace.attrs["auto"]["method"]``; that call's ``cost_spent`` is
    recorded (must be <= the budget).
(b) the numbers.  The design the API builds for the call
    (:func:`activerank.design.auto.auto_design` with the API's arguments; its
    method checked equal to the call's) is repeated ``--reps`` times by its
    kind's batched hard-budget Monte-Carlo path, each tested equal to the
    engine's run in the library's tests: ``active_wor``
    :meth:`~activerank.design.kinds.query_wor.WithoutReplacementDesign.simulate`
    (determined queries a census stratum, as the engine's fit), ``doc_dyn``
    :meth:`~activerank.design.kinds.documents.designs.DocumentDesign.simulate`,
    ``prefix`` :meth:`~activerank.design.kinds.prefix.PrefixSampling.simulate`
    (the engine's plan: fixed planning seed).  The truth is the design target's
    value on the true labels (checked equal to ``run.py``'s).

Reported per cell: MSE (summed over the contrasts of k systems) / the best
peer's MSE from ``results/results.csv`` (1000 runs; peers not rerun) with a 95%
bootstrap interval over the default's runs (peer MSE fixed, as ``wor_api.py``),
coverage of the reported 95% interval (the API's Student-t / normal on the
design's degrees of freedom; mean over contrasts), max |bias| / Monte-Carlo SE
over contrasts, mean estimated variance / empirical variance (mean over
contrasts), max realized cost / budget over all runs.  For DCG@10 at equal
documents ``doc_dyn``'s hard-budget run is simulated in every cell (also where
auto does not pick it) and set against ``run.py``'s ``ar_doc_dyn`` (a Poisson
simulation that spends the budget only in expectation).

Run (one process; MQ2008 and OHSUMED)::

    python benchmarks/peers/default_api.py --reps 1000

Writes ``results/default_api.csv`` and ``results/default_api.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import t as student

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import run as peers  # noqa: E402

import activerank as ar  # noqa: E402
from activerank.design.auto import auto_design  # noqa: E402
from activerank.design.design import prepare_design  # noqa: E402
from activerank.design.kinds.documents import document_target_of, unit_costs  # noqa: E402
from activerank.pool import pool_iv  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
COSTS = {"queries": "uniform", "documents": "constant"}
KIND = {"one": "mean", "two": "difference", "index": "difference", "k_systems": "baseline"}
GOAL_DOCS_GM = 0.5


# --------------------------------------------------------------------------- the public call and its design


def call_default(fm, t, scen, metric, mode, budget, rng):
    """The public function with no ``method`` on the benchmark's cell; returns the result."""
    pool, probs = fm.pool, fm.probs["model"]
    lab = ar.KnownLabels.from_data(pool)
    kw = dict(budget=float(budget), metric=metric, costs=COSTS[mode], rng=rng)
    s = t["systems"]
    if scen == "one":
        return ar.estimate(pool, s[0], probs, lab, **kw)
    if scen == "k_systems":  # candidates first, the baseline last (run.make_tasks)
        return ar.compare_many(pool, list(s[:-1]), s[-1], probs, lab, **kw)
    return ar.compare(pool, s[0], s[1], probs, lab, **kw)


def api_design(fm, t, scen, metric, mode, budget):
    """The design ``method="auto"`` builds for this call (the API's own :func:`auto_design`)."""
    pool, probs = fm.pool, fm.probs["model"]
    pool_ = pool_iv(pool)
    s = tuple(t["systems"])
    args = dict(metric=metric, k=None, method="auto", costs=COSTS[mode], query_weights=None, defensive=0.1,
                predicted=None)
    if scen != "one":
        args["judge"] = "changeable"
    if scen == "k_systems":
        args["names"] = tuple(f"c{j}" for j in range(len(s) - 1)) + ("baseline",)
    return auto_design(pool, pool_, KIND[scen], s, probs, float(budget), args)


def doc_dyn_design(fm, t, scen, metric):
    """``method="doc_dyn"`` on the documents mode's cost model (the alternative auto weighs)."""
    pool, probs = fm.pool, fm.probs["model"]
    s = tuple(t["systems"])
    kw = dict(metric=metric, method="doc_dyn", costs="constant")
    if scen == "k_systems":
        kw["names"] = tuple(f"c{j}" for j in range(len(s) - 1)) + ("baseline",)
    return prepare_design(pool, pool_iv(pool), KIND[scen], s, probs, **kw)


def truth_of(dsg, labels):
    """The target's value on the true labels: per-query outputs (n_queries, t) and the p-weighted means."""
    n = dsg.n_queries
    out = dsg.target.outputs(dsg.target.values(labels, np.arange(n), dsg.n_grades))
    return out, dsg.p @ out


# --------------------------------------------------------------------------- the batched hard-budget paths


def sim_wor(dsg, labels, budget, reps, rng):
    """active_wor: the plug-in's batched path on the sampled stratum, the census stratum exact (as fit_sample)."""
    plug = dsg.method_spec.kind
    out_y, _ = truth_of(dsg, labels)
    census = dsg.census
    p_rest = dsg.p.copy()
    p_rest[census] = 0.0
    share = float(p_rest.sum())
    pn = p_rest / share
    pred = dsg.prediction
    o = plug.simulate(out_y, pred.mean, pn, dsg.q, dsg.costs.cost, np.array([float(budget)]), reps, rng,
                      output_variance=pred.output_variance)
    est = np.asarray(o["estimate"]).reshape(out_y.shape[1], reps).T       # (reps, t)
    se = np.asarray(o["standard_error"]).reshape(out_y.shape[1], reps).T
    exact = out_y[census].T @ dsg.p[census] if census.size else np.zeros(out_y.shape[1])
    est = exact[None] + share * est
    se = share * se
    return est, se, np.asarray(o["dof"]).reshape(reps), np.asarray(o["cost"]).reshape(reps)


def sim_doc(dsg, labels, budget, reps, rng):
    """doc_dyn (any document-level design): DocumentDesign.simulate, a hard budget."""
    plug = dsg.method_spec.kind
    dt = document_target_of(dsg)
    o = plug.simulate(dt, dsg.probs, unit_costs(dt, dsg.costs, dsg.document_costs), [float(budget)],
                      labels[dt.rows], reps, rng, defensive=dsg.defensive)
    return o["estimate"][0], o["standard_error"][0], o["dof"][0], o["cost"][0]


def sim_prefix(dsg, labels, budget, reps, rng):
    """prefix: the engine's plan (planning seed fixed) and PrefixSampling.simulate at the hard budget."""
    kind = dsg.method_spec.kind
    layout, plan = kind.plan(dsg, float(budget), judged=None).parts()
    if layout is None:
        raise RuntimeError("every query is determined: no prefix sample")
    est, cov, _, cost, dof = kind.simulate(layout, plan, dsg.probs, labels, dsg.p, dsg.prediction.mean, reps, rng,
                                           output_variance=dsg.prediction.output_variance, with_dof=True,
                                           budget=float(budget))
    se = np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2), 0, None))
    return est, se, dof, cost


SIM = {"active_wor": sim_wor, "doc_dyn": sim_doc, "prefix": sim_prefix}


def summarize(est, se, dof, cost, truth, budget):
    """Per-run squared error (summed over contrasts) and the cell's checks."""
    err = est - truth[None]
    tol = 1e-12 * np.maximum(1.0, np.abs(truth))[None]   # an exact (census) estimate has SE 0
    err = np.where(np.abs(err) < 1e-10, 0.0, err)
    q = np.where(np.isfinite(dof), student.ppf(0.975, np.maximum(dof, 1e-9)), 1.959964)[:, None]
    covered = (np.abs(err) <= q * se + tol).mean(1)
    reps = est.shape[0]
    sd = err.std(0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        bz = np.where(err.mean(0) == 0, 0.0, np.abs(err.mean(0)) / (sd / np.sqrt(reps)))
        vr = np.where(sd > 0, np.mean(se**2, 0) / sd**2, np.nan)
    return dict(sq=(err**2).sum(1), coverage=float(covered.mean()), max_bias_z=float(np.max(bz)),
                var_ratio=float(np.nanmean(vr)) if np.isfinite(vr).any() else np.nan,
                max_cost_ratio=float(np.max(cost) / budget), mean_cost=float(np.mean(cost)))


def boot(sq, peer, gen, n_boot=1000):
    idx = gen.integers(0, sq.size, (n_boot, sq.size))
    b = sq[idx].mean(1) / peer
    return float(np.quantile(b, 0.025)), float(np.quantile(b, 0.975))


# --------------------------------------------------------------------------- driver


def run_cells(args):
    ref = pd.read_csv(RESULTS / "results.csv")
    rows = []
    gen = np.random.default_rng(0)
    for ds in args.datasets:
        t0 = time.perf_counter()
        fm = peers.fit_dataset(ds, args.data)
        labels = fm.pool.labels
        print(f"{ds}: fitted ({time.perf_counter() - t0:.0f}s)", flush=True)
        for mi, metric in enumerate(peers.METRICS):
            if args.metrics and metric not in args.metrics:
                continue
            tasks = peers.make_tasks(fm, ds, metric)
            for si, (scen, t) in enumerate(tasks.items()):
                if args.scenarios and scen not in args.scenarios:
                    continue
                R_run = t["p"] @ t["Y"].T
                for ci, mode in enumerate(("queries", "documents")):
                    lam = t["cancel_costs"][mode] if scen != "one" else t["costs"][mode]
                    dd = doc_dyn_design(fm, t, scen, metric) if (mode == "documents" and "doc_target" in t) \
                        else None
                    for bi, B in enumerate(peers.BUDGETS[ds]):
                        seed = [peers.SEED, ["mq2008", "ohsumed"].index(ds), mi, si, ci, bi, 60]
                        tc = time.perf_counter()
                        res = call_default(fm, t, scen, metric, mode, B, np.random.default_rng(seed + [0]))
                        auto = res.trace.attrs["auto"]
                        dsg, choice = api_design(fm, t, scen, metric, mode, B)
                        if choice.method != auto["method"] or dsg.method != res.method:
                            raise AssertionError(f"auto_design chose {choice.method}, the API {auto['method']}")
                        if mode == "queries" and dsg.method != "active_wor":
                            raise AssertionError(f"per-query costs left query level: {dsg.method}")
                        if not np.allclose(dsg.costs.cost, lam, rtol=1e-9, atol=1e-12):
                            raise AssertionError("the API's query costs differ from run.py's cost mode")
                        _, truth = truth_of(dsg, labels)
                        if not np.allclose(np.sort(truth), np.sort(R_run), rtol=1e-9, atol=1e-12):
                            raise AssertionError("the design's truth differs from run.py's")
                        secs_call = time.perf_counter() - tc
                        tc = time.perf_counter()
                        out = SIM[dsg.method](dsg, labels, B, args.reps, np.random.default_rng(seed + [1]))
                        s = summarize(*out, truth, B)
                        secs_sim = time.perf_counter() - tc
                        cell = ref[(ref.dataset == ds) & (ref.scenario == scen) & (ref.metric == metric)
                                   & (ref["mode"] == mode) & (ref.budget == B)]
                        peer = float(cell.best_peer_mse.iloc[0])
                        lo, hi = boot(s["sq"], peer, gen)
                        pv = auto["predicted_variance"]
                        row = dict(dataset=ds, scenario=scen, metric=metric, mode=mode, budget=B,
                                   method=dsg.method, api_cost_spent=float(res.cost_spent),
                                   api_cost_ratio=float(res.cost_spent) / B,
                                   v_active_wor=pv.get("active_wor", np.nan),
                                   v_alternative=next((v for k, v in pv.items() if k != "active_wor"), np.nan),
                                   mse=float(s["sq"].mean()), best_peer=cell.best_peer.iloc[0], best_peer_mse=peer,
                                   ratio=float(s["sq"].mean()) / peer, low=lo, high=hi,
                                   coverage=s["coverage"], max_bias_z=s["max_bias_z"], var_ratio=s["var_ratio"],
                                   max_cost_ratio=s["max_cost_ratio"], mean_cost=s["mean_cost"], reps=args.reps,
                                   seconds_call=secs_call, seconds_sim=secs_sim)
                        ar_dd = cell[cell.method == "ar_doc_dyn"]
                        if dd is not None:  # doc_dyn's hard budget against run.py's Poisson ar_doc_dyn
                            if dsg.method == "doc_dyn":
                                sd_ = s
                            else:
                                _, tr_dd = truth_of(dd, labels)
                                sd_ = summarize(*sim_doc(dd, labels, B, args.reps, np.random.default_rng(seed + [2])),
                                                tr_dd, B)
                            row.update(doc_dyn_hard_ratio=float(sd_["sq"].mean()) / peer,
                                       doc_dyn_hard_max_cost=sd_["max_cost_ratio"],
                                       doc_dyn_hard_coverage=sd_["coverage"],
                                       doc_dyn_poisson_ratio=float(ar_dd.ratio.iloc[0]) if len(ar_dd) else np.nan)
                        rows.append(row)
                        print(f"{ds} {metric} {scen} {mode} B={B}: {dsg.method} ratio {row['ratio']:.3f} "
                              f"[{lo:.2f}, {hi:.2f}] cover {s['coverage']:.3f} |z| {s['max_bias_z']:.1f} "
                              f"var {s['var_ratio']:.2f} cost {s['max_cost_ratio']:.3f} api {row['api_cost_ratio']:.3f}"
                              f" ({secs_call:.1f}s + {secs_sim:.1f}s)", flush=True)
                        if args.out:
                            pd.DataFrame(rows).to_csv(Path(args.out) / "default_api.partial.csv", index=False)
    return pd.DataFrame(rows)


def gm(x):
    return float(np.exp(np.log(np.clip(np.asarray(x, dtype=float), 1e-12, None)).mean()))


def markdown(df: pd.DataFrame, reps: int) -> str:
    short = {"active_wor": "a", "doc_dyn": "d", "prefix": "p"}
    lines = ["# The default (`method` omitted) vs the best peer, every cell of the peers benchmark (issue 30)", "",
             f"Generated by `benchmarks/peers/default_api.py --reps {reps}`. Per cell: the method the public "
             "API runs with no `method` argument (a = active_wor, d = doc_dyn, p = prefix; read from "
             "`trace.attrs['auto']` of one public call on the cell with a labeler answering the true labels), "
             "simulated by its kind's batched hard-budget path. Ratio = MSE(default) / MSE(best peer of the "
             "cell, results.csv, 1000 runs) [95% bootstrap over the default's runs]; **bold** = interval "
             "below 1; coverage of the reported 95% interval (mean over contrasts); max |bias|/MC-SE over "
             "contrasts; var = mean estimated variance / empirical variance; cost = max realized cost / budget "
             "over all runs and the public call.", "",
             "| dataset | scenario | metric | mode | method | ratio per budget | coverage | max abs bias/SE | var "
             "| max cost/budget |", "|---|---|---|---|---|---|---|---|---|---|"]
    for key, g in df.groupby(["dataset", "scenario", "metric", "mode"], sort=False):
        meth = " / ".join(short[m] for m in g.method)
        r = " / ".join((f"**{a:.2f}** [{lo:.2f}, {hi:.2f}]" if hi < 1 else f"{a:.2f} [{lo:.2f}, {hi:.2f}]")
                       for a, lo, hi in zip(g.ratio, g.low, g.high))
        c = " / ".join(f"{x:.3f}" for x in g.coverage)
        z = " / ".join(f"{x:.1f}" for x in g.max_bias_z)
        v = " / ".join("–" if not np.isfinite(x) else f"{x:.2f}" for x in g.var_ratio)
        mc = max(g.max_cost_ratio.max(), g.api_cost_ratio.max())
        lines.append(f"| {' | '.join(key)} | {meth} | {r} | {c} | {z} | {v} | {mc:.3f} |")
    lines += ["", "## Summary per scenario × metric × mode (both datasets, 4 budgets each: 8 cells)", "",
              "Issue 30's goal: at equal documents geometric mean of MSE / best peer <= 0.5 in every scenario × "
              "metric and no cell's interval entirely above 1; at equal queries no cell's interval entirely "
              "above 1.05.", "",
              "| scenario | metric | mode | methods run | gm MSE/best peer | range | cells above 1 | cells above 1.05 "
              "| goal met |", "|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for key, g in df.groupby(["scenario", "metric", "mode"], sort=False):
        scen, metric, mode = key
        above1, above105 = int((g.low > 1).sum()), int((g.low > 1.05).sum())
        if mode == "documents":
            ok = gm(g.ratio) <= GOAL_DOCS_GM and above1 == 0
        else:
            ok = above105 == 0
        verdicts.append(ok)
        runs = ", ".join(f"{m} {n}" for m, n in g.method.value_counts().items())
        lines.append(f"| {scen} | {metric} | {mode} | {runs} | {gm(g.ratio):.2f} | {g.ratio.min():.2f}–"
                     f"{g.ratio.max():.2f} | {above1}/{len(g)} | {above105}/{len(g)} | {'yes' if ok else '**no**'} |")
    lines += ["", f"Goal met in {sum(verdicts)} of {len(verdicts)} scenario × metric × mode groups. Coverage "
              f"{df.coverage.min():.3f}–{df.coverage.max():.3f}; max |bias|/MC-SE {df.max_bias_z.max():.1f}; "
              f"variance ratio {np.nanmin(df.var_ratio):.2f}–{np.nanmax(df.var_ratio):.2f}; max realized cost / "
              f"budget {df.max_cost_ratio.max():.4f} over all simulated runs and "
              f"{df.api_cost_ratio.max():.4f} over the public calls."]
    if "doc_dyn_hard_ratio" in df:
        d = df[df.doc_dyn_hard_ratio.notna()]
        if len(d):
            both = (d.doc_dyn_hard_ratio > 1e-9) & (d.doc_dyn_poisson_ratio > 1e-9)  # not both exact (census)
            rel = (d.doc_dyn_hard_ratio / d.doc_dyn_poisson_ratio)[both]
            lines += ["", "## doc_dyn: hard budget (this run) vs `run.py`'s Poisson `ar_doc_dyn` (budget spent in "
                      "expectation), DCG@10 at equal documents", "",
                      "Ratios to the same best peer; `hard/Poisson` = MSE of the library's hard-budget run over "
                      "run.py's Poisson simulation.", "",
                      "| dataset | scenario | hard-budget ratio per budget | Poisson (run.py) | hard/Poisson | "
                      "hard coverage | auto runs doc_dyn |", "|---|---|---|---|---|---|---|"]
            for key, g in d.groupby(["dataset", "scenario"], sort=False):
                lines.append(f"| {' | '.join(key)} | " + " / ".join(f"{x:.2f}" for x in g.doc_dyn_hard_ratio)
                             + " | " + " / ".join(f"{x:.2f}" for x in g.doc_dyn_poisson_ratio) + " | "
                             + " / ".join(f"{x:.2f}" for x in g.doc_dyn_hard_ratio / g.doc_dyn_poisson_ratio)
                             + " | " + " / ".join(f"{x:.3f}" for x in g.doc_dyn_hard_coverage) + " | "
                             + f"{int((g.method == 'doc_dyn').sum())}/{len(g)} |")
            lines += ["", f"hard/Poisson over the {len(rel)} cells where neither is exact: gm {gm(rel):.2f}, "
                      f"range {rel.min():.2f}–{rel.max():.2f}; cells where hard/Poisson > 1.1: "
                      f"{int((rel > 1.1).sum())}, < 0.9: {int((rel < 0.9).sum())}."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--datasets", nargs="*", default=["mq2008", "ohsumed"])
    ap.add_argument("--metrics", nargs="*", default=[])
    ap.add_argument("--scenarios", nargs="*", default=[])
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=str(RESULTS), help="where to write (default: results/)")
    args = ap.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    df = run_cells(args)
    df.to_csv(Path(args.out) / "default_api.csv", index=False)
    md = markdown(df, args.reps)
    (Path(args.out) / "default_api.md").write_text(md)
    partial = Path(args.out) / "default_api.partial.csv"
    if partial.exists():
        partial.unlink()
    print(md)
    print(f"done in {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
