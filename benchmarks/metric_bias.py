"""Bias, range and coverage of every README metric x scenario x design, as users get them (issue 31 item 3).

For every dataset (MQ2008 and OHSUMED: fold 1's pool S2-S5 with the LightGBM relevance model of
``benchmarks/_coverage_setup.py``, built with the experiment harness's ``load_dataset``; and the MQ2008 sample
shipped in the package, 30 pool queries, LightGBM trained on its 40 training queries), every metric spelled in
the README (plus ``rr`` and ``ap``; spellings with the same canonical metric share one row), every scenario

* ``single``: one ranker (LightGBM expected gain);
* ``pair``: LightGBM vs a linear RankSVM;
* ``index``: LightGBM vs the same ranker after an index update (10% of every list removed,
  :func:`activerank.relevance.rankers.remove_fraction`);
* ``many``: LightGBM and the index-updated LightGBM vs the RankSVM as baseline (``compare_many``),

and every design that takes the metric (``active_wor``, ``active``, ``doc_dyn`` for additive metrics,
``prefix`` for cascade metrics, ``auto``), the design is built once and run ``--reps`` times through the engine
with different seeds, exactly as :func:`activerank.estimate` / ``compare`` / ``compare_many`` run it (the
labeler returns the pool's hidden grades).  Against the truth on complete labels
(:func:`activerank.metrics.pool_metric_values`) it records

* ``bias_se``: ``(mean estimate - truth) / Monte-Carlo SE`` (the largest |.| over the candidates of
  ``many``); the goal ``|bias| <= 3 SE`` applies where the truth is at least 2 SE (of the estimate) inside
  its range (``near_bound`` marks the others);
* ``in_range``: the share of runs whose every point estimate (estimate, difference, estimate_a/b,
  differences, own estimates) and every interval end lies in its range (goal 100%);
* ``coverage``: of the reported 95% interval (``many``: the joint, simultaneous intervals), with the range
  handling (``coverage``) and without it (``coverage_raw``: ``in_range=False``); goal 0.93-0.97 at budgets
  worth >= 10 queries;
* ``adjusted``: the share of runs where a point estimate was moved into range, ``few``: where few_labels.

Run:  python benchmarks/metric_bias.py [--reps 500] [--budgets 5,12] [--quick] [--workers 2]
Writes benchmarks/results/metric_bias.csv and metric_bias.md (``--quick``: *_quick.*).
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
from activerank._validation import labeler_iv, rng_iv  # noqa: E402
from activerank.api import make_design  # noqa: E402
from activerank.design.auto import auto_design  # noqa: E402
from activerank.design.design import prepare_design  # noqa: E402
from activerank.engine import FixedBudget, Judgments, run  # noqa: E402
from activerank.inference.ranges import contrast_bounds  # noqa: E402
from activerank.metrics import parse_metric, pool_metric_values  # noqa: E402
from activerank.pool import pool_iv  # noqa: E402
from activerank.relevance.rankers import remove_fraction  # noqa: E402
from activerank._validation import scores_iv  # noqa: E402

#: every metric string of the README, then rr and ap
README_METRICS = ("dcg@10", "ndcg@10", "nDCG@10", "err@10", "ERR@10", "err@20", "ERR@20", "err", "p@10", "P@10",
                  "rr", "ap")
#: the metrics run on MQ2008 and OHSUMED (the sample runs every README metric)
CORE_METRICS = ("dcg@10", "ndcg@10", "nDCG@10", "err@10", "ERR@10", "p@10", "P@10", "rr", "ap")
SCENARIOS = ("single", "pair", "index", "many")
DESIGNS = ("active_wor", "active", "doc_dyn", "prefix", "auto")
DATASETS = ("sample", "mq2008", "ohsumed")

_STATE: dict = {}


def _metrics(names) -> list:
    """``[(canonical, [spellings])]``: spellings of one canonical metric share one row."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        out: dict = {}
        for name in names:
            out.setdefault(str(parse_metric(name)), []).append(name)
    return list(out.items())


def _designs(metric: str) -> list:
    family = parse_metric(metric).family
    return [m for m in DESIGNS if (m != "doc_dyn" or family == "additive") and (m != "prefix" or family == "cascade")]


def load(dataset: str, cache_dir: str):
    """``(pool, probs, {ranker: scores})`` of a dataset (see the module notes)."""
    if dataset == "sample":
        train, pool = ar.load_sample("train"), ar.load_sample("test")
        model = ar.relevance.make_relevance_model("lightgbm", pool.n_grades, random_state=0, n_jobs=1)
        probs = model.fit(train.X, train.labels).predict_proba(pool.X)
        lin = ar.relevance.rankers.fit_linear_ranker(train, method="ranksvm", random_state=0).scores(pool.X)
        return pool, probs, {"lightgbm": ar.relevance.expected_gain_scores(probs), "linear": lin}
    from _coverage_setup import fit_fold_lightgbm

    fm = fit_fold_lightgbm(dataset, 1, cache_dir=cache_dir)
    return fm.pool, fm.probs["lightgbm"], dict(fm.scores)


def _setup(dataset: str, cache_dir: str):
    """Pool, probabilities, the scenarios' rankings and the labeler of one dataset (once per process)."""
    if dataset in _STATE:
        return _STATE[dataset]
    pool, probs, scores = load(dataset, cache_dir)
    pool_ = pool_iv(pool)
    a = scores_iv(scores["lightgbm"], pool_, "scores")
    lin = scores_iv(scores["linear"], pool_, "scores")
    removed = remove_fraction(a, 0.1, rng=np.random.default_rng([7, len(dataset)]))
    rankings = {"single": (a,), "pair": (a, lin), "index": (a, removed), "many": (a, removed, lin)}
    _STATE[dataset] = (pool, pool_, probs, rankings, labeler_iv(ar.KnownLabels.from_data(pool)))
    return _STATE[dataset]


def truth(pool, rankings, metric: str) -> np.ndarray:
    """The target's true outputs on complete labels: the mean, the difference, or the candidates - baseline."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        vals = np.array([pool_metric_values(pool.labels, r, metric=metric, ymax=pool.n_grades - 1,
                                            offsets=pool).mean() for r in rankings])
    if vals.size == 1:
        return vals
    if vals.size == 2:
        return vals[:1] - vals[1:]
    return vals[:-1] - vals[-1]


def _design(dataset, scenario, metric, method, budget):
    pool, pool_, probs, rankings, _ = _STATE[dataset]
    kind = {"single": "mean", "pair": "difference", "index": "difference", "many": "baseline"}[scenario]
    r = rankings[scenario]
    if method == "auto":
        args = dict(metric=metric, k=None, costs="auto", query_weights=None,
                    defensive=ar.design.sampling.DEFAULT_DEFENSIVE,
                    predicted=None, judge="changeable", names=None)
        if kind == "baseline":
            args["names"] = ("a", "b", "baseline")
        return auto_design(pool, pool_, kind, r, probs, budget, args)[0]
    names = ("a", "b", "baseline") if kind == "baseline" else None
    return make_design(pool, r, probs, metric=metric, method=method, target=kind, names=names)


def _outputs(res):
    """Point estimates with their ranges, and the reported intervals (with and without the range handling)."""
    lo, hi = res.metric_range
    own, diff = (lo, hi), contrast_bounds((lo, hi))
    if isinstance(res, ar.MultiComparisonResult):
        points = [(res.differences, diff), (res.estimates, own), (np.array([res.baseline_estimate]), own)]
        ci = res.confidence_intervals()  # the raw ones share its critical value (computed once: it is slow)
        raw = np.asarray(res.unadjusted.get("differences", res.differences))
        return res.differences, points, (ci.low, ci.high), (raw - ci.critical_value * ci.standard_error,
                                                            raw + ci.critical_value * ci.standard_error), diff
    if isinstance(res, ar.ComparisonResult):
        points = [(np.array([res.difference]), diff), (np.array([res.estimate_a, res.estimate_b]), own)]
        ci, raw = res.confidence_interval(), res.confidence_interval(in_range=False)
        return np.array([res.difference]), points, tuple(np.array([v]) for v in ci), \
            tuple(np.array([v]) for v in raw), diff
    ci, raw = res.confidence_interval(), res.confidence_interval(in_range=False)
    return np.array([res.estimate]), [(np.array([res.estimate]), own)], tuple(np.array([v]) for v in ci), \
        tuple(np.array([v]) for v in raw), own


def _raw_points(res) -> list:
    """The point estimates of :func:`_outputs` before the range handling (``res.unadjusted``)."""
    u = res.unadjusted
    if isinstance(res, ar.MultiComparisonResult):
        return [np.asarray(u.get("differences", res.differences)), np.asarray(u.get("estimates", res.estimates)),
                np.array([u.get("baseline_estimate", res.baseline_estimate)])]
    if isinstance(res, ar.ComparisonResult):
        return [np.array([u.get("difference", res.difference)]),
                np.array([u.get("estimate_a", res.estimate_a), u.get("estimate_b", res.estimate_b)])]
    return [np.array([u.get("estimate", res.estimate)])]


def cell(task) -> dict:
    """``reps`` runs of one (dataset, scenario, metric, design, budget) cell."""
    dataset, scenario, metric, spellings, method, budget, reps, seed, cache_dir, present = task
    pool, pool_, probs, rankings, labeler = _setup(dataset, cache_dir)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dsg = _design(dataset, scenario, metric, method, budget)
        if method == "auto" and dsg.method in present:
            # auto's design at this budget is one of the table's: its cell, run with other seeds; the numbers
            # are copied from that cell (same design, same number of runs)
            return dict(dataset=dataset, scenario=scenario, metric=metric, spellings="/".join(spellings),
                        design=method, ran=dsg.method, budget=budget, same_as=dsg.method)
        true = truth(pool, rankings[scenario], metric)
        est, cover, cover_raw, inside, inside_raw, adjusted, few, ses, nq, exact = ([] for _ in range(10))
        errors = 0
        chosen = set()
        for rep in range(reps):
            rng = rng_iv(np.random.SeedSequence([seed, rep]))
            try:
                res = run(dsg, pool_, labeler, FixedBudget(float(budget), rng),
                          judgments=Judgments(pool_, dsg.n_grades),
                          ci="auto")
            except ValueError:  # fewer than 2 queries bought: no standard error (a clear error, counted)
                errors += 1
                continue
            point, points, (low, high), (rlow, rhigh), bounds = _outputs(res)
            finite = [p[np.isfinite(p)] for p, _ in points]
            ok = all(((b[0] <= p) & (p <= b[1])).all() for p, b in zip(finite, (b for _, b in points)))
            ok &= bool(((bounds[0] <= low) & (high <= bounds[1])).all())
            inside.append(ok)
            raw_points = _raw_points(res)
            raw_ok = all(((b[0] <= p[np.isfinite(p)]) & (p[np.isfinite(p)] <= b[1])).all()
                         for p, (_, b) in zip(raw_points, points))
            inside_raw.append(raw_ok and bool(((bounds[0] <= rlow) & (rhigh <= bounds[1])).all()))
            est.append(point)
            ses.append(np.atleast_1d(getattr(res, "standard_errors", getattr(res, "standard_error", np.nan))))
            # an exact run's interval is a point: the truth, up to the summation order's rounding
            tol = 1e-12 * max(1.0, float(np.abs(true).max()))
            cover.append(bool(((low - tol <= true) & (true <= high + tol)).all()))
            cover_raw.append(bool(((rlow - tol <= true) & (true <= rhigh + tol)).all()))
            exact.append(res.exact)
            adjusted.append(res.range_adjusted)
            few.append(res.few_labels)
            nq.append(res.n_queries)
            chosen.add(res.method)
    est_a = np.array(est)
    n = est_a.shape[0]
    sd = est_a.std(axis=0, ddof=1) if n > 1 else np.full(true.shape, np.nan)
    mc_se = sd / np.sqrt(max(n, 1))
    bias = est_a.mean(axis=0) - true if n else np.full(true.shape, np.nan)
    # identical estimates (every run exact) have no Monte-Carlo error: rounding is not a bias
    bias = np.where(np.abs(bias) <= 1e-12 * np.maximum(1.0, np.abs(true)), 0.0, bias)
    z = np.where(mc_se > 1e-12, bias / np.where(mc_se > 1e-12, mc_se, 1.0), np.where(bias == 0, 0.0, np.inf))
    worst = int(np.argmax(np.abs(z))) if n else 0
    lo, hi = parse_bounds(dsg)
    bounds = (lo, hi) if scenario == "single" else contrast_bounds((lo, hi))
    margin = np.minimum(true - bounds[0], bounds[1] - true) / np.where(sd > 0, sd, np.inf)
    return dict(dataset=dataset, scenario=scenario, metric=metric, spellings="/".join(spellings), design=method,
                ran="/".join(sorted(chosen)), budget=budget, reps=n, errors=errors,
                n_queries=float(np.mean(nq)) if nq else np.nan,
                truth=float(true[worst]), bias=float(bias[worst]), mc_se=float(mc_se[worst]), bias_se=float(z[worst]),
                sd=float(sd[worst]), mean_se=float(np.mean([s[worst] for s in ses])) if ses else np.nan,
                near_bound=bool(np.any(margin < 2)), in_range=float(np.mean(inside)) if inside else np.nan,
                in_range_raw=float(np.mean(inside_raw)) if inside_raw else np.nan,
                coverage=float(np.mean(cover)) if cover else np.nan,
                coverage_raw=float(np.mean(cover_raw)) if cover_raw else np.nan,
                adjusted=float(np.mean(adjusted)) if adjusted else np.nan, few=float(np.mean(few)) if few else np.nan,
                exact=float(np.mean(exact)) if exact else np.nan,
                seconds=time.perf_counter() - t0)


def parse_bounds(dsg) -> tuple:
    return dsg.metric.bounds(dsg.n_grades)


def tasks(datasets, metrics, scenarios, budgets, reps, seed, cache_dir, *, small_budget=None, designs=DESIGNS) -> list:
    """One task per cell; MQ2008 and OHSUMED take the metrics of :data:`CORE_METRICS` only, and the small
    budget (range and bias only, fewer than 10 queries) runs on the sample without ``prefix`` (time)."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        core = {str(parse_metric(m)) for m in CORE_METRICS}
    for di, ds in enumerate(datasets):
        for mi, (metric, spellings) in enumerate(metrics):
            if ds != "sample" and metric not in core:
                continue
            for si, scenario in enumerate(scenarios):
                extra = [small_budget] if small_budget and ds == "sample" else []
                for budget in list(budgets) + extra:
                    methods = [m for m in _designs(metric) if (budget not in extra or m != "prefix") and m in designs]
                    for method in methods:
                        out.append((ds, scenario, metric, spellings, method, budget, reps,
                                    [seed, di, mi, si, DESIGNS.index(method), int(budget * 10)], cache_dir,
                                    tuple(methods)))
    return out


def _init():
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _fill_auto(rows: list) -> list:
    """``auto`` cells whose design is another cell's: that cell's numbers (``ran`` names it); those whose
    cell is not done yet stay markers."""
    key = {(r["dataset"], r["scenario"], r["metric"], r["design"], r["budget"]): r for r in rows if "same_as" not in r}
    out = []
    for r in rows:
        src = key.get((r["dataset"], r["scenario"], r["metric"], r.get("same_as"), r["budget"]))
        if "same_as" in r and src is not None:
            r = {**src, "design": "auto", "ran": f"{r['same_as']} (= its cell)", "seconds": 0.0}
        out.append(r)
    return out


def verdict(row) -> str:
    """Which goals a cell misses (empty: none)."""
    miss = []
    if row["in_range"] < 1:
        miss.append("range")
    if not row["near_bound"] and abs(row["bias_se"]) > 3:
        miss.append("bias")
    if row["n_queries"] >= 10 and not 0.93 <= row["coverage"] <= 0.97:
        miss.append("coverage")
    return ",".join(miss)


def markdown(df: pd.DataFrame, *, reps: int, seconds: float, command: str, n_tasks: int) -> str:
    cols = ["dataset", "scenario", "metric", "design", "ran", "budget", "n_queries", "reps", "errors", "truth",
            "bias_se", "near_bound", "in_range", "coverage", "coverage_raw", "adjusted", "few", "miss"]
    t = df[cols].copy()
    for c in ("n_queries", "truth", "bias_se"):
        t[c] = t[c].map(lambda v: f"{v:.3g}")
    for c in ("in_range", "coverage", "coverage_raw", "adjusted", "few"):
        t[c] = t[c].map(lambda v: f"{v:.3f}")
    header = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = "".join("| " + " | ".join(str(v) for v in r) + " |\n" for r in t.itertuples(index=False))
    judged = df[df["n_queries"] >= 10]
    unbiased = df[~df["near_bound"]]
    lines = [
        "# Bias, range and coverage per metric, scenario and design (benchmarks/metric_bias.py)",
        "",
        f"`{command}`: {len(df)} of {n_tasks} cells done, {reps} runs per cell (seeded); "
        f"{df['seconds'].sum() / 60:.0f} worker-minutes on 2 shared cores (this invocation: {seconds / 60:.1f} min).",
        "Goals: every point estimate and interval end in range in 100% of runs; |bias| <= 3 Monte-Carlo SE where",
        "the truth is at least 2 SE inside its range; 95% coverage in 0.93-0.97 where the runs judge >= 10 queries",
        "on average. `coverage_raw` is the same interval without the range handling (`in_range=False`).",
        "",
        f"* in range: {int((df['in_range'] == 1).sum())} of {len(df)} cells at 100% "
        f"(without the handling: {int((df['in_range_raw'] == 1).sum())}).",
        f"* bias: {int((unbiased['bias_se'].abs() <= 3).sum())} of {len(unbiased)} cells away from the bounds "
        f"within 3 SE (largest |bias| {unbiased['bias_se'].abs().max():.2f} SE).",
        f"* coverage at >= 10 queries: {int(judged['coverage'].between(0.93, 0.97).sum())} of {len(judged)} cells "
        f"in 0.93-0.97 (range {judged['coverage'].min():.3f}-{judged['coverage'].max():.3f}; without the "
        f"handling {judged['coverage_raw'].min():.3f}-{judged['coverage_raw'].max():.3f}); "
        f"{int((judged['coverage'] < 0.93).sum())} below, {int((judged['coverage'] > 0.97).sum())} above.",
        "",
        "## Cells that miss a goal",
        "",
    ]
    misses = df[df["miss"] != ""]
    if len(misses):
        mt = t[df["miss"] != ""]
        lines.append(header + "".join("| " + " | ".join(str(v) for v in r) + " |\n"
                                      for r in mt.itertuples(index=False)))
    else:
        lines.append("None.")
    lines += ["", "## Every cell", "", header + body]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--budgets", default="12", help="budgets in mean query costs, comma-separated")
    ap.add_argument("--small-budget", type=float, default=5.0,
                    help="an extra budget on the sample (range and bias only; 0: none)")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--metrics", default=",".join(README_METRICS))
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--designs", default=",".join(DESIGNS), help="only these designs (comma-separated)")
    ap.add_argument("--seed", type=int, default=20240531)
    ap.add_argument("--quick", action="store_true", help="the shipped sample, 3 metrics, 40 runs per cell")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--resume", action="store_true", help="keep the cells of an earlier run's CSV")
    args = ap.parse_args(argv)
    if args.quick:
        args.datasets, args.metrics, args.reps = "sample", "dcg@10,nDCG@10,ERR@10", 40
    datasets = [d for d in args.datasets.split(",") if d]
    if any(d != "sample" for d in datasets) and not os.environ.get("ACTIVERANK_DATA"):
        print("set ACTIVERANK_DATA to the data root (mq2008/, ohsumed-letor3/), or pass --datasets sample")
        return 2
    budgets = [float(b) for b in args.budgets.split(",")]
    cache_dir = os.path.join(args.out, "cache")
    todo = tasks(datasets, _metrics(args.metrics.split(",")), args.scenarios.split(","), budgets, args.reps,
                 args.seed, cache_dir, small_budget=args.small_budget, designs=tuple(args.designs.split(",")))
    # smallest pools first, and in each the slow prefix cells last: an interrupted run (the table is
    # rewritten every 10 cells) has the most cells; auto follows the designs it may copy
    size = {"sample": 0, "ohsumed": 1, "mq2008": 2}
    todo.sort(key=lambda t: (size.get(t[0], 3), t[4] == "prefix", t[4] == "auto"))
    rows = []
    if args.resume and os.path.exists(os.path.join(args.out, "metric_bias.csv")):
        # keep the cells done, except those whose exact runs were scored without a rounding tolerance
        old = pd.read_csv(os.path.join(args.out, "metric_bias.csv")).drop(columns=["miss"])
        redo = old["exact"].isna() & (old["design"] != "prefix") & (old["n_queries"] >= 15) if "exact" in old \
            else old["n_queries"] >= 15
        copied = (old["design"] == "auto") & old["ran"].astype(str).str.contains("its cell")
        keep = old[~redo & ~copied]
        rows = [{k: v for k, v in r.items() if not (isinstance(v, float) and np.isnan(v) and k == "exact")}
                for r in keep.to_dict("records")]
        done = {(r["dataset"], r["scenario"], r["metric"], r["design"], float(r["budget"])) for r in rows}
        todo = [t for t in todo if (t[0], t[1], t[2], t[4], float(t[5])) not in done]
    for ds in datasets:  # fit (and cache) the relevance models once, before the workers start
        if ds != "sample":
            load(ds, cache_dir)
    t0 = time.perf_counter()
    n_kept = len(rows)
    # one dataset per chunk of tasks keeps each worker's pools in memory once
    with Pool(args.workers, initializer=_init) as workers:
        for i, row in enumerate(workers.imap_unordered(cell, todo)):
            rows.append(row)
            head = f"[{i + 1}/{len(todo)}] {row['dataset']} {row['scenario']} {row['metric']} {row['design']} " \
                   f"B={row['budget']:g}"
            if "same_as" in row:
                print(f"{head}: = {row['same_as']}", flush=True)
                continue
            print(f"{head}: bias {row['bias_se']:+.2f} SE, range {row['in_range']:.3f}, cov {row['coverage']:.3f} "
                  f"(raw {row['coverage_raw']:.3f}), {row['seconds']:.0f}s", flush=True)
            if (i + 1) % 10 == 0 or i + 1 == len(todo):
                df = write(rows, args, len(todo) + n_kept, time.perf_counter() - t0, argv)
    print(f"{len(df)} cells in {(time.perf_counter() - t0) / 60:.1f} min; misses: {int((df['miss'] != '').sum())}")
    return 0


def write(rows: list, args, n_tasks: int, seconds: float, argv) -> pd.DataFrame:
    """The CSV and the markdown table of the cells done so far."""
    done = [r for r in _fill_auto(rows) if "same_as" not in r]
    df = pd.DataFrame(done).sort_values(["dataset", "scenario", "metric", "design", "budget"]).reset_index(drop=True)
    df["miss"] = df.apply(verdict, axis=1)
    suffix = "_quick" if args.quick else ""
    os.makedirs(args.out, exist_ok=True)
    df.to_csv(os.path.join(args.out, f"metric_bias{suffix}.csv"), index=False)
    command = "python benchmarks/metric_bias.py " + " ".join(argv if argv is not None else sys.argv[1:])
    with open(os.path.join(args.out, f"metric_bias{suffix}.md"), "w") as f:
        f.write(markdown(df, reps=args.reps, seconds=seconds, command=command.strip(), n_tasks=n_tasks))
    return df


if __name__ == "__main__":
    sys.exit(main())
