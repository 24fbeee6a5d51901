"""Calibration rounds on a Dask pool against in memory, on LLMJudge 2024 (issue 33).

A run with ``judges=`` and fewer than 30 human labels held buys two calibration rounds first (15% of the budget
each).  In memory (:mod:`activerank.engine.judged`) their estimates are weighed in, with weights from the
variances the model predicts.  On a Dask pool (:func:`activerank.distributed.judges.run_with_rounds`) the last run
only holds the rounds' labels.  This measures what the Dask route gives against in memory, and checks its bias
and coverage.

Pool, rankers and the ``best`` judge (``h2oloo-fewself``) as in ``llmjudge.py``; the relevance model without a
judge is the pool's human grade frequencies (columns ``p0..p3``).  The pool is a Dask DataFrame of 5 partitions of
whole queries (synchronous scheduler: one process).  Per scenario (one ranker: A; two rankers: A - B) and budget
(in queries' worth: the pool's mean query cost, constant document costs), with run ``r`` of every variant on the
same seed:

* ``none``: :func:`activerank.distributed.estimate` / ``compare`` without a judge;
* ``dask``: the same with ``judges=[JudgeColumns(best)]`` (the rounds' labels held);
* ``memory``: :func:`activerank.estimate` / ``compare`` on the same pool in memory
  (:func:`activerank.distributed.in_memory`) with the best judge (rounds weighed by predicted variances).

Reported: MSE ratio to ``none`` and ``dask`` / ``memory`` (95% paired bootstrap), bias / Monte-Carlo SE,
coverage of the 95% interval, the largest realized cost and the mean number of labels bought.

Run:  python benchmarks/judges/dask_rounds.py [--reps 200] [--budgets 10,20] [--scenarios one,two]
Needs ``ACTIVERANK_DATA`` (or ``--data``) and the ``dask`` extra; writes results/dask_rounds.csv and .md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", ".."))

import activerank as ar  # noqa: E402
from llmjudge import BEST, add_data_options, data_dir, load, mse_ratio, summary, write_report  # noqa: E402

METRIC = "dcg@10"
PROBS = ["p0", "p1", "p2", "p3"]


def frame(pool, labels, judges, scores):
    """The pool as a pandas frame (one row per pair) and as a Dask frame of 5 partitions of whole queries."""
    import dask
    import dask.dataframe as dd

    qid = np.repeat(np.asarray(pool.query_ids), np.diff(pool.offsets))
    df = pd.DataFrame({"query_id": qid, "doc_id": np.asarray(pool.doc_ids), "score_a": scores[0],
                       "score_b": scores[1], "best": judges[BEST].values, "label": labels})
    prior = np.bincount(labels, minlength=4) / labels.size
    for g, c in enumerate(PROBS):
        df[c] = prior[g]
    starts = np.asarray(pool.offsets[:-1])
    cuts = [*starts[np.linspace(0, starts.size, 5, endpoint=False).astype(int)].tolist(), len(df)]
    parts = [dask.delayed(df.iloc[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    return df, dd.from_delayed(parts, meta=df.iloc[:0], verify_meta=False)


def cell(df, ddf, *, scenario, budget, variant, reps, seed):
    import activerank.distributed as ard
    from activerank._validation import scores_iv
    from activerank.judges import JudgeOutputs
    from activerank.pool import pool_iv

    grades = dict(zip(zip(df.query_id, df.doc_id), df.label))

    def labeler(q, docs):
        return [int(grades[(q, d)]) for d in docs]

    pool = ard.DaskPool(ddf)
    cols = ["score_a"] if scenario == "one" else ["score_a", "score_b"]
    mem, sc, probs, _ = ard.in_memory(pool, scores=cols, probs=PROBS)
    ranks = [scores_iv(s, pool_iv(mem), "scores") for s in sc]
    vals = [ar.pool_metric_values(df.label.to_numpy(), r, metric=METRIC, ymax=3).mean() for r in ranks]
    truth = vals[0] if scenario == "one" else vals[0] - vals[1]
    judge_mem = [JudgeOutputs("best", "grades", df.best.to_numpy(), 4)]
    judge_dask = [ard.JudgeColumns("best", levels=4)]
    out = dict(est=[], cover=[], cost=[], bought=[], method=set())
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        common = dict(budget=budget, metric=METRIC, rng=rng)
        if variant == "memory":
            kw = dict(costs="constant", judges=judge_mem, **common)  # the pool has no cost column
            res = (ar.estimate(mem, sc[0], probs, labeler, **kw) if scenario == "one" else
                   ar.compare(mem, sc[0], sc[1], probs, labeler, judge="all", **kw))
        else:
            kw = dict(judges=judge_dask if variant == "dask" else None, **common)
            res = (ard.estimate(pool, "score_a", PROBS, labeler, **kw) if scenario == "one" else
                   ard.compare(pool, "score_a", "score_b", PROBS, labeler, **kw))
        point = res.estimate if scenario == "one" else res.difference
        ci = res.confidence_interval()
        out["est"].append(point)
        out["cover"].append(ci.low <= truth <= ci.high)
        out["cost"].append(res.cost_spent)
        out["bought"].append(res.judgments.bought.n_labels)
        out["method"].add(res.method)
    return dict(summary(out["est"], truth, out["cover"], out["cost"], out["method"]),
                labels=float(np.mean(out["bought"])))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--budgets", default="10,20")
    ap.add_argument("--scenarios", default="one,two")
    add_data_options(ap, "dask_rounds")
    args = ap.parse_args(argv)
    root = data_dir(args)
    if root is None:
        return 0
    import dask

    warnings.simplefilter("ignore")  # the calibrator's solver chatter and small rounds' interval warnings
    df, ddf = frame(*load(root))
    rows, sq = [], {}
    with dask.config.set(scheduler="synchronous"):
        for scenario in args.scenarios.split(","):
            for budget in [float(b) for b in args.budgets.split(",")]:
                for variant in ("none", "dask", "memory"):
                    t0 = time.perf_counter()
                    o = cell(df, ddf, scenario=scenario, budget=budget, variant=variant, reps=args.reps,
                             seed=args.seed)
                    sq[(scenario, budget, variant)] = o.pop("sq")
                    rows.append(dict(scenario=scenario, budget=budget, variant=variant, reps=args.reps,
                                     seconds=time.perf_counter() - t0, **o))
                    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
    res = pd.DataFrame(rows)
    gen = np.random.default_rng(0)
    for col, ref in (("to_none", "none"), ("to_memory", "memory")):
        vals = [mse_ratio(sq[(r.scenario, r.budget, r.variant)], sq[(r.scenario, r.budget, ref)], gen)
                for r in res.itertuples()]
        res[col], res[col + "_low"], res[col + "_high"] = zip(*vals)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    res.to_csv(args.out + ".csv", index=False)
    cmd = "python benchmarks/judges/dask_rounds.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = ["# Calibration rounds on a Dask pool vs in memory, LLMJudge 2024 (benchmarks/judges/dask_rounds.py)", "",
             f"Generated by `{cmd.strip()}`. DCG@10, the best judge, budget in queries' worth (constant document "
             "costs). `dask`: the rounds' labels held; `memory`: the rounds weighed in by the model's predicted variances "
             "(the in-memory API). MSE ratios "
             "[95% paired bootstrap].", "",
             "| scenario | budget | variant | labels bought | MSE ratio to none | MSE ratio to memory | bias/SE | "
             "coverage | max cost |", "|---|---:|---|---:|---|---|---:|---:|---:|"]
    for r in res.itertuples():
        lines.append(f"| {r.scenario} | {r.budget:g} | {r.variant} | {r.labels:.0f} | {r.to_none:.2f} "
                     f"[{r.to_none_low:.2f}, {r.to_none_high:.2f}] | {r.to_memory:.2f} [{r.to_memory_low:.2f}, "
                     f"{r.to_memory_high:.2f}] | {r.bias_se:+.1f} | {r.coverage:.3f} | {r.max_cost:.3g} |")
    write_report(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
