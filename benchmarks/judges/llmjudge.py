"""LLMJudge 2024: LLM judges as the relevance model, calibrated on the human labels a run buys (issue 33).

Data (``$ACTIVERANK_DATA/llmjudge-2024``, see its SOURCE.md): human grades 0-3 of 4,423 (query, passage) pairs
of 25 TREC DL 2023 queries and 16 LLM judges' grades of the same pairs.  The pool is every judged pair.  There
are no runs, so two rankers are built over the pool from judges that are *not* used as the relevance model of
the "best judge" cells: ranker A orders each query's passages by ``TREMA-CoT``'s grade, ranker B by
``Olz-multiprompt``'s, ties broken by a fixed random permutation (seed 0).

Cells: metric (DCG@10, P@10) x scenario (one ranker: A; two rankers: A - B) x budget in human labels
(documents; every passage costs the same) x relevance model:

* ``none``: no judge; the model is the human grade frequencies of the whole pool (the best constant model,
  which favours this baseline slightly: it knows the pool's grade mix);
* ``best``: ``h2oloo-fewself`` (the highest quadratic kappa, 0.505), ``judges=``;
* ``all``: all 16 judges, ``judges=``;
* ``oracle_best`` / ``oracle_all``: the ceiling of calibration: the same judges calibrated on *every* human label
  of the pool (which no run has), passed as ``probs`` (one round, no calibration round).

Every run is ``activerank.estimate`` / ``compare`` with the default method, ``budget_unit="documents"``,
``costs="constant"`` and a labeler answering the human grades.  With ``judges=`` the run spends two
calibration rounds of 15% of the budget, refitting after each, then runs the rest (:mod:`activerank.engine.judged`).  Reported per
cell: MSE ratio to ``none``, |bias| / Monte-Carlo SE, coverage of the 95% interval, the largest realized cost.

Run:  python benchmarks/judges/llmjudge.py [--reps 1000] [--budgets 100,200]
Writes benchmarks/judges/results/llmjudge.csv and llmjudge.md.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))

import activerank as ar  # noqa: E402
from activerank.io.trec.qrels import read_qrels  # noqa: E402
from activerank.judges import JudgeCalibrator, read_judge  # noqa: E402

BEST = "h2oloo-fewself.txt"
RANKERS = ("TREMA-CoT.txt", "Olz-multiprompt.txt")


def load(root: str):
    """``(pool, human labels, judges by file name, ranker scores A and B)``."""
    q = read_qrels(os.path.join(root, "human_test_qrels.txt"), n_grades=4)
    qids, dids = zip(*[(qid, d) for qid, docs in q.judgments.items() for d in docs])
    pool = ar.Pool.from_qids(np.array(qids), doc_ids=np.array(dids))
    labels = q.labels_for(pool)
    judges = {os.path.basename(p): read_judge(p, pool, levels=4)
              for p in sorted(glob.glob(os.path.join(root, "judges", "*.txt")))}
    tie = np.random.default_rng(0).permutation(pool.n_docs) / pool.n_docs
    scores = [judges[r].values + 0.5 * tie for r in RANKERS]
    return pool, labels, judges, scores


def cell(pool, labels, judges, scores, *, metric, scenario, budget, model, reps, seed):
    prior = np.tile(np.bincount(labels, minlength=4) / labels.size, (labels.size, 1))
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels, pool.doc_ids)
    chosen_judges = {"best": [judges[BEST]], "all": list(judges.values())}
    use = chosen_judges.get(model)
    if model.startswith("oracle_"):  # calibrated on every human label: the ceiling of calibration
        groups = np.repeat(np.arange(pool.n_queries), np.diff(pool.offsets))
        js = chosen_judges[model.split("_")[1]]
        prior = JudgeCalibrator(4, random_state=0).fit(js, labels, groups=groups).predict_proba(js)
        use = None
    pool_ = ar.pool.pool_iv(pool)
    ranks = [ar._validation.scores_iv(s, pool_, "s") for s in scores]
    vals = [ar.pool_metric_values(labels, r, metric=metric, ymax=3, offsets=pool).mean() for r in ranks]
    truth = vals[0] if scenario == "one" else vals[0] - vals[1]
    est, cover, cost, chosen = [], [], [], set()
    common = dict(budget=budget, metric=metric, costs="constant", budget_unit="documents", judges=use)
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        if scenario == "one":
            res = ar.estimate(pool, scores[0], prior, lab, rng=rng, **common)
            point = res.estimate
        else:
            res = ar.compare(pool, scores[0], scores[1], prior, lab, rng=rng, **common)
            point = res.difference
        ci = res.confidence_interval()
        est.append(point)
        cover.append(ci.low <= truth <= ci.high)
        cost.append(res.cost_spent)
        chosen.add(res.method)
    return summary(est, truth, cover, cost, chosen)


def summary(est, truth: float, cover, cost, methods) -> dict:
    """A cell's runs: MSE (and every squared error, ``sq``), bias / Monte-Carlo SE, coverage, largest cost."""
    e = np.asarray(est)
    return dict(truth=truth, mse=float(np.mean((e - truth) ** 2)), sq=(e - truth) ** 2,
                bias_se=float((e.mean() - truth) / (e.std(ddof=1) / np.sqrt(e.size))), coverage=float(np.mean(cover)),
                max_cost=float(max(cost)), method="/".join(sorted(methods)))


def write_report(out: str, lines) -> None:
    """``lines`` to ``<out>.md`` and to stdout."""
    with open(out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def add_data_options(ap, out: str) -> None:
    """``--seed``, ``--data`` and ``--out`` (``results/<out>``), as every LLMJudge benchmark takes them."""
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--data", default=os.environ.get("ACTIVERANK_DATA"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", out))


def data_dir(args) -> str | None:
    """The LLMJudge 2024 folder, or None after saying how to provide it."""
    if not args.data or not os.path.isdir(os.path.join(args.data, "llmjudge-2024")):
        print("LLMJudge 2024 not found: set ACTIVERANK_DATA (or --data) to the folder holding llmjudge-2024/")
        return None
    return os.path.join(args.data, "llmjudge-2024")


def mse_ratio(a, b, gen, n_boot: int = 1000) -> tuple:
    """``mean(a) / mean(b)`` of paired squared errors and its 95% paired bootstrap interval."""
    idx = gen.integers(0, a.size, (n_boot, a.size))
    boot = a[idx].mean(1) / b[idx].mean(1)
    return a.mean() / b.mean(), np.quantile(boot, 0.025), np.quantile(boot, 0.975)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--budgets", default="100,200")
    ap.add_argument("--metrics", default="dcg@10,p@10")
    ap.add_argument("--scenarios", default="one,two")
    ap.add_argument("--models", default="none,best,all,oracle_best,oracle_all")
    add_data_options(ap, "llmjudge")
    args = ap.parse_args(argv)
    root = data_dir(args)
    if root is None:
        return 0
    warnings.simplefilter("ignore")
    pool, labels, judges, scores = load(root)
    rows, sq = [], {}
    for metric in args.metrics.split(","):
        for scenario in args.scenarios.split(","):
            for budget in [float(b) for b in args.budgets.split(",")]:
                for model in args.models.split(","):
                    t0 = time.perf_counter()
                    out = cell(pool, labels, judges, scores, metric=metric, scenario=scenario, budget=budget,
                               model=model, reps=args.reps, seed=args.seed)
                    sq[(metric, scenario, budget, model)] = out.pop("sq")
                    rows.append(dict(metric=metric, scenario=scenario, budget=budget, model=model, reps=args.reps,
                                     seconds=time.perf_counter() - t0, **out))
                    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
    df = pd.DataFrame(rows)
    gen = np.random.default_rng(0)
    df["mse_ratio"], df["ratio_low"], df["ratio_high"] = zip(*(
        mse_ratio(sq[(r.metric, r.scenario, r.budget, r.model)], sq[(r.metric, r.scenario, r.budget, "none")], gen)
        for r in df.itertuples()))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    df.to_csv(args.out + ".csv", index=False)
    cmd = "python benchmarks/judges/llmjudge.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = ["# LLMJudge 2024: LLM judges as the relevance model (benchmarks/judges/llmjudge.py)", "",
             f"Generated by `{cmd.strip()}`. Budget in human labels (documents). MSE ratio = MSE / MSE of the same "
             "default design without a judge (`none`) [95% paired bootstrap]. Goals (issue 33): best judge <= 0.7, "
             "all 16 <= 0.6, coverage 0.93-0.97 at budgets >= 100.", "",
             "| metric | scenario | budget | model | method | MSE ratio | bias/SE | coverage | max cost |",
             "|---|---|---:|---|---|---|---:|---:|---:|"]
    for r in df.itertuples():
        lines.append(f"| {r.metric} | {r.scenario} | {r.budget:g} | {r.model} | {r.method} | {r.mse_ratio:.2f} "
                     f"[{r.ratio_low:.2f}, {r.ratio_high:.2f}] | {r.bias_se:+.1f} | {r.coverage:.3f} | {r.max_cost:g} |")
    write_report(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
