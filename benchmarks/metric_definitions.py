"""Numbers users can check (issue 31): activerank's metric values against ir_measures, and the bias of an
estimated nDCG@10 difference against ``pool_metric_values`` on an index update.

On the shipped MQ2008 sample (30-query pool, 40-query training file), LightGBM relevance model:

1. per metric, the pool mean of activerank's value and ir_measures' (complete qrels, runs with tied
   scores: LETOR feature 25, BM25, and the model's expected gain);
2. ``compare(pool, ranking, ranking with 10% of every list removed, ...)`` averaged over ``--reps``
   seeds per budget, against the true difference from ``pool_metric_values(..., offsets=pool)``.

    python benchmarks/metric_definitions.py --reps 1000 --methods active_wor,passive

Results: ``benchmarks/results/metric_definitions.md`` (before/after of 0.5's definitions).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import activerank as ar

IR_PAIRS = ("nDCG@10", "ERR@10", "P@10", "RR", "AP", "R@10", "Success@5")
BIAS_METRICS = ("ndcg(gain=exp)@10", "ndcg(gain=linear)@10", "err@10", "dcg@10")


def setup():
    train, pool = ar.load_sample("train"), ar.load_sample("test")
    model = ar.relevance.make_relevance_model("lightgbm", pool.n_grades).fit(train.X, train.labels)
    probs = model.predict_proba(pool.X)
    return pool, probs


def agreement(pool, probs):
    import ir_measures

    q = np.repeat(pool.query_ids, np.diff(pool.offsets)).astype(str)
    d = pool.doc_ids.astype(str)
    qrels = [ir_measures.Qrel(q[i], d[i], int(pool.labels[i])) for i in range(q.size)]
    rankers = {"BM25 (feature 25)": pool.X[:, 24], "model": ar.relevance.expected_gain_scores(probs)}
    print("| ranker | metric | activerank | ir_measures |\n|---|---|---|---|")
    for name, scores in rankers.items():
        run = [ir_measures.ScoredDoc(q[i], d[i], float(scores[i])) for i in range(q.size)]
        ranking = ar.relevance.rank_by_scores(scores, pool)
        for spec in IR_PAIRS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                ours = ar.pool_metric_values(pool.labels, ranking, metric=spec, ymax=pool.ymax).mean()
            per_query = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure(spec)],
                                                                            qrels, run)}
            theirs = np.mean([per_query.get(x, 0.0) for x in np.unique(q)])  # gdeval skips queries without
            print(f"| {name} | `{spec}` | {ours:.4f} | {theirs:.4f} |")       # a relevant document: 0 here


def bias(pool, probs, reps, methods, budgets):
    scores = ar.relevance.expected_gain_scores(probs)
    ra = ar.relevance.rank_by_scores(scores, pool)
    rb = ar.relevance.remove_fraction(ra, 0.1, rng=0)
    lab = ar.KnownLabels.from_data(pool)
    print("\n| metric | method | budget | mean estimate | MC SE | truth | bias |\n|---|---|---|---|---|---|---|")
    for metric in BIAS_METRICS:
        truth = float(np.mean(ar.pool_metric_values(pool.labels, ra, metric=metric, ymax=pool.ymax, offsets=pool)
                              - ar.pool_metric_values(pool.labels, rb, metric=metric, ymax=pool.ymax,
                                                      offsets=pool)))
        for method in methods:
            for budget in budgets:
                t = time.time()
                d = []
                for seed in range(reps):
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            d.append(ar.compare(pool, ra, rb, probs, lab, budget=budget, metric=metric,
                                                method=method, rng=seed).difference)
                    except ValueError:  # fewer than 2 distinct queries bought (passive, small budgets)
                        pass
                d = np.asarray(d)
                se = d.std(ddof=1) / np.sqrt(d.size)
                print(f"| `{metric}` | {method} | {budget} | {d.mean():+.5f} | {se:.5f} | {truth:+.5f} | "
                      f"{d.mean() - truth:+.5f} ({d.size} runs, {time.time() - t:.0f} s) |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--methods", default="active_wor")
    ap.add_argument("--budgets", default="6,12,24")
    ap.add_argument("--no-bias", action="store_true")
    args = ap.parse_args()
    pool, probs = setup()
    agreement(pool, probs)
    if not args.no_bias:
        bias(pool, probs, args.reps, args.methods.split(","), [float(b) for b in args.budgets.split(",")])


if __name__ == "__main__":
    main()
