"""Inside an ML training job: evaluate each checkpoint on a small labeling budget while LightGBM trains.

A LightGBM LambdaRank model trains with :class:`activerank.integrations.lightgbm.ActiveEvaluation` as a
callback.  Every ``--every`` boosting rounds it scores a pool of unlabeled evaluation queries with the current
model and asks :func:`activerank.compare` how much better this checkpoint is than the best one so far,
spending at most ``--budget`` units of labeling cost (about that many average queries judged) instead of
judging the whole pool; labels bought for earlier checkpoints are reused, never bought twice.  A checkpoint
becomes the best when P(it is better) >= ``--min-prob``; training stops when ``--patience`` evaluations in a
row found none, and the booster's ``best_iteration`` is the best checkpoint.  The estimates also enter
LightGBM's evaluation history (``lightgbm.record_evaluation``).  The relevance model p(y | x) that guides
which queries to judge is a LightGBM classifier fitted on the same training data.

The judgments come from the evaluation data's own labels through :class:`activerank.KnownLabels`, which
stands in for the annotators; in production, pass a callable ``labeler(query_id, doc_ids) -> grades``
that asks your annotation service (or use ``activerank campaign`` for asynchronous judging).

Data: LETOR 4.0 MQ2008 (``--size full``: train on partitions S1-S3, evaluate on S5) from ``--data``,
``$ACTIVERANK_DATA`` or ``../shared/data`` next to the repository; without it (and with ``--size small``)
the small MQ2008 sample shipped with activerank.  Run from the repository root::

    python examples/training_job.py --size small
    python examples/training_job.py --size full --budget 20
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import activerank as ar
from activerank.integrations.lightgbm import ActiveEvaluation

# size -> (at most this many boosting rounds, evaluate every this many, labeling budget per evaluation in
# mean-query-cost units, patience in evaluations)
SIZES = {"small": (60, 10, 8.0, 2), "full": (400, 25, 20.0, 3)}
PARAMS = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
          "verbose": -1, "deterministic": True, "force_col_wise": True, "num_threads": 1}


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


def train(train: ar.LetorData, evaluation: ActiveEvaluation, rounds: int, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """Train LambdaRank for at most ``rounds`` rounds with ``evaluation`` as a callback; the booster and
    LightGBM's evaluation history."""
    import lightgbm as lgb

    history: dict[str, Any] = {}
    dtrain = lgb.Dataset(train.X, train.labels, group=train.lengths, free_raw_data=False)
    # keep_training_booster: keep every tree (not only up to the best), to compute the true values below
    booster = lgb.train({**PARAMS, "seed": seed}, dtrain, num_boost_round=rounds, keep_training_booster=True,
                        callbacks=[evaluation, lgb.record_evaluation(history)])
    return booster, history


def run(size: str = "small", *, budget: float | None = None, every: int | None = None, min_prob: float = 0.8,
        patience: int | None = None, metric: str = "err@10", data: str | os.PathLike[str] | None = None,
        seed: int = 0, out: Any = print) -> dict[str, Any]:
    """Train with the evaluation callback, report each comparison and the best checkpoint.

    Returns
    -------
    dict
        ``booster``, ``evaluation`` (the callback: ``results``, ``judgments``, ``best_iteration``),
        ``history`` (:meth:`ActiveEvaluation.history`), ``lightgbm_history`` (``record_evaluation``'s),
        ``true_difference`` (``{rounds: true difference to the checkpoint it was compared to}``, from every
        label of the pool, for illustration), ``data``, ``budget``, ``min_prob``.
    """
    rounds, default_every, default_budget, default_patience = SIZES[size]
    budget = default_budget if budget is None else budget
    every = default_every if every is None else every
    patience = default_patience if patience is None else patience
    train_data, pool, note = load_data(size, data)
    out(f"data: {note}; {train_data.n_queries} training queries, {pool.n_queries} evaluation queries")

    probs = (ar.relevance.make_relevance_model("lightgbm", pool.n_grades, random_state=seed)
             .fit(train_data.X, train_data.labels).predict_proba(pool.X))
    annotators = ar.KnownLabels.from_data(pool)  # stand-in for human judges
    evaluation = ActiveEvaluation(pool, probs, annotators, budget=budget, every=every, mode="compare",
                                  patience=patience, min_prob_better=min_prob, metric=metric,
                                  confidence_level=0.9, rng=seed)
    booster, lightgbm_history = train(train_data, evaluation, rounds, seed)

    def true_value(n_rounds: int) -> float:
        rankings = ar.relevance.rank_by_scores(booster.predict(pool.X, num_iteration=n_rounds), pool.offsets)
        return float(ar.pool_metric_values(pool.labels, rankings, metric=metric, ymax=pool.n_grades - 1).mean())

    table = evaluation.history()
    truth: dict[int, float] = {}
    for n_rounds, row in table.iterrows():
        truth[int(n_rounds)] = true_value(int(n_rounds)) - true_value(int(row["compared_to"]))
        verdict = "new best" if row["prob_a_better"] >= min_prob else "keep"
        out(f"[{n_rounds}] {metric} - {metric}(after {row['compared_to']} rounds): {row['difference']:+.4f} ± "
            f"{row['standard_error']:.4f} (SE), 90% CI [{row['low']:+.4f}, {row['high']:+.4f}]; "
            f"P(new better) = {row['prob_a_better']:.2f} -> {verdict}; {row['labels_bought']} labels bought, "
            f"cost {row['cost_spent']:.1f} of {budget:g}")
    stopped = max(evaluation.results, default=0)
    how = f"stopped after {stopped} rounds" if stopped < rounds else f"ran all {rounds} rounds"
    labels = evaluation.judgments.n_labels
    out(f"best checkpoint: {booster.best_iteration} rounds ({how}, rule: P(new better) >= {min_prob:g}); "
        f"{labels} labels bought in all, {labels / pool.n_docs:.0%} of the pool's {pool.n_docs} documents")
    out(f"  (for illustration, from all labels of the pool: true differences "
        + ", ".join(f"[{r}] {d:+.4f}" for r, d in truth.items()) + ")")
    return {"booster": booster, "evaluation": evaluation, "history": table, "lightgbm_history": lightgbm_history,
            "true_difference": truth, "data": note, "budget": budget, "min_prob": min_prob}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small",
                        help="small: shipped sample, up to 60 rounds, budget 8 every 10 rounds; "
                             "full: MQ2008, up to 400 rounds, budget 20 every 25 rounds")
    parser.add_argument("--budget", type=float, help="labeling budget per evaluation, in mean-query-cost units")
    parser.add_argument("--every", type=int, help="evaluate every this many boosting rounds")
    parser.add_argument("--min-prob", type=float, default=0.8, help="a checkpoint is better if P(new better) >= this")
    parser.add_argument("--patience", type=int, help="stop after this many evaluations without a better checkpoint")
    parser.add_argument("--metric", default="err@10")
    parser.add_argument("--data", help="data root holding mq2008/S1.txt ... (default $ACTIVERANK_DATA or ../shared/data)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return run(args.size, budget=args.budget, every=args.every, min_prob=args.min_prob, patience=args.patience,
               metric=args.metric, data=args.data, seed=args.seed)


if __name__ == "__main__":
    main()
