"""Inside an ML training job: keep the new checkpoint only if a small labeling budget says it is better.

A LightGBM LambdaRank model is trained in two stages; after each stage the booster is checkpointed (as a
training job would write model files).  Before promoting the new checkpoint, the job asks
:func:`activerank.compare` how much better it is than the previous one on a pool of evaluation queries,
spending only ``--budget`` units of labeling cost (about that many average queries judged) instead of
judging the whole pool.  The relevance model p(y | x) that guides which queries to judge is a LightGBM
classifier fitted on the same training data.

The judgments come from the evaluation data's own labels through :class:`activerank.KnownLabels`, which
stands in for the annotators; in production, pass a callable ``labeler(query_id, doc_ids) -> grades``
that asks your annotation service (or use ``activerank campaign`` for asynchronous judging).

Data: LETOR 4.0 MQ2008 (``--size full``: train on partitions S1-S3, evaluate on S5) from ``--data``,
``$ACTIVERANK_DATA`` or ``../shared/data`` next to the repository; without it (and with ``--size small``)
the small MQ2008 sample shipped with activerank.  Run from the repository root::

    python examples/training_job.py --size small
    python examples/training_job.py --size full --budget 40
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import activerank as ar

# size -> (boosting rounds per stage, labeling budget in mean-query-cost units)
SIZES = {"small": (10, 12.0), "full": (60, 40.0)}


def find_mq2008(data: str | os.PathLike[str] | None = None) -> Path | None:
    """``<root>/mq2008`` from ``data``, ``$ACTIVERANK_DATA`` or ``../shared/data``; None if absent."""
    roots = [data, os.environ.get("ACTIVERANK_DATA"), Path(__file__).resolve().parents[1].parent / "shared" / "data"]
    for root in roots:
        if root and (Path(root) / "mq2008" / "S1.txt").is_file():
            return Path(root) / "mq2008"
    return None


def load_data(size: str, data: str | os.PathLike[str] | None = None) -> tuple[ar.LetorData, ar.LetorData, str]:
    """Training data and evaluation pool, and a description of where they come from."""
    mq2008 = find_mq2008(data) if size == "full" else None
    if mq2008 is None:
        note = "shipped MQ2008 sample" + (" (full MQ2008 not found)" if size == "full" else "")
        return ar.load_sample("train"), ar.load_sample("test"), note
    train = ar.load_partitions(mq2008, [1, 2, 3])
    pool = ar.load_partitions(mq2008, [5], n_grades=train.n_grades)
    return train, pool, "MQ2008 S1-S3 (train), S5 (evaluation pool)"


def train_two_checkpoints(train: ar.LetorData, rounds: int, seed: int = 0) -> tuple[str, str]:
    """Train LambdaRank for ``rounds`` rounds, checkpoint, continue ``rounds`` more, checkpoint."""
    import lightgbm as lgb

    params = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
              "verbose": -1, "deterministic": True, "force_col_wise": True, "num_threads": 1, "seed": seed}
    dtrain = lgb.Dataset(train.X, train.labels, group=train.lengths, free_raw_data=False)
    booster = lgb.train(params, dtrain, num_boost_round=rounds, keep_training_booster=True)
    old = booster.model_to_string()
    booster = lgb.train(params, dtrain, num_boost_round=rounds, init_model=booster, keep_training_booster=True)
    return old, booster.model_to_string()


def run(size: str = "small", *, budget: float | None = None, min_prob: float = 0.8,
        metric: str = "err@10", data: str | os.PathLike[str] | None = None, seed: int = 0,
        out: Any = print) -> dict[str, Any]:
    """Train, checkpoint twice, compare the checkpoints on a small budget, decide.

    Returns
    -------
    dict
        ``promote`` (bool), ``comparison`` (the :class:`activerank.ComparisonResult`, new - old),
        ``true_difference`` (from every label of the pool, for illustration), ``data``.
    """
    import lightgbm as lgb

    rounds, default_budget = SIZES[size]
    budget = default_budget if budget is None else budget
    train, pool, note = load_data(size, data)
    out(f"data: {note}; {train.n_queries} training queries, {pool.n_queries} evaluation queries")

    old_ckpt, new_ckpt = train_two_checkpoints(train, rounds, seed)
    # a checkpoint is a model file in a real job; scoring the pool needs no labels
    scores_old = lgb.Booster(model_str=old_ckpt).predict(pool.X)
    scores_new = lgb.Booster(model_str=new_ckpt).predict(pool.X)

    probs = (ar.relevance.make_relevance_model("lightgbm", pool.n_grades, random_state=seed)
             .fit(train.X, train.labels).predict_proba(pool.X))
    annotators = ar.KnownLabels.from_data(pool)  # stand-in for human judges
    cmp = ar.compare(pool, scores_new, scores_old, probs, annotators, budget=budget, metric=metric, rng=seed)
    ci = cmp.confidence_interval(0.90)
    p_better = cmp.prob_a_better()
    promote = bool(p_better >= min_prob)
    out(f"{metric}(checkpoint {2 * rounds} rounds) - {metric}(checkpoint {rounds} rounds): "
        f"{cmp.difference:+.4f} ± {cmp.standard_error:.4f} (standard error), 90% CI [{ci.low:+.4f}, {ci.high:+.4f}]")
    out(f"  {cmp.n_queries} of {pool.n_queries} queries judged, cost {cmp.cost_spent:.1f} of {budget:g}; "
        f"P(new better) = {p_better:.2f} -> {'promote the new checkpoint' if promote else 'keep the old one'}"
        f" (rule: P >= {min_prob:g})")

    def true_value(scores: Any) -> float:
        rankings = ar.relevance.rank_by_scores(scores, pool.offsets)
        return float(ar.pool_metric_values(pool.labels, rankings, metric=metric, ymax=pool.n_grades - 1).mean())

    truth = true_value(scores_new) - true_value(scores_old)
    out(f"  (for illustration, from all {pool.n_docs} labels of the pool: true difference {truth:+.4f})")
    return {"promote": promote, "comparison": cmp, "true_difference": truth, "data": note,
            "budget": budget, "min_prob": min_prob}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small",
                        help="small: shipped sample, 10+10 rounds, budget 12; full: MQ2008, 60+60 rounds, budget 40")
    parser.add_argument("--budget", type=float, help="labeling budget in mean-query-cost units")
    parser.add_argument("--min-prob", type=float, default=0.8, help="promote if P(new better) >= this")
    parser.add_argument("--metric", default="err@10")
    parser.add_argument("--data", help="data root holding mq2008/S1.txt ... (default $ACTIVERANK_DATA or ../shared/data)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return run(args.size, budget=args.budget, min_prob=args.min_prob, metric=args.metric, data=args.data,
               seed=args.seed)


if __name__ == "__main__":
    main()
