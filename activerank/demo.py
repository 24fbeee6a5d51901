"""``activerank demo``: a real active estimate on the shipped MQ2008 sample.

A relevance model (mord ordered logit) is fitted on 40 training queries; the
pool is 30 other queries whose LETOR labels play the annotator.  The demo
estimates ERR@10 of the model's ranking (with the default method and with
uniform sampling) and its difference to BM25 (feature 25) with a budget of
about a third of the pool, and prints the truth next to it.
"""

from __future__ import annotations


from .api import compare, estimate
from .io.letor import load_sample
from .labelers import KnownLabels
from .metrics import pool_metric_values
from .relevance.models import make_relevance_model
from .relevance.rankers import expected_gain_scores, rank_by_scores

BM25_FEATURE = 25  # LETOR 4.0: feature 25 is BM25 on the whole document


def run_demo(budget: float = 12.0, seed: int = 0, *, out=print) -> dict:
    train, pool = load_sample("train"), load_sample("test")
    model = make_relevance_model("ordered_logit", pool.n_grades).fit(train.X, train.labels)
    probs = model.predict_proba(pool.X)
    model_scores = expected_gain_scores(probs)
    bm25 = pool.X[:, BM25_FEATURE - 1]
    labeler = KnownLabels.from_data(pool)

    def truth(scores):
        r = rank_by_scores(scores, pool)
        return pool_metric_values(pool.labels, r, metric="err@10", ymax=pool.n_grades - 1).mean()

    out(f"pool: {pool.n_queries} MQ2008 queries, {pool.n_docs} documents; budget {budget:g} "
        "(in units of the mean query's labeling cost)")
    results = {}
    for method in ("auto", "passive"):  # the default, and uniform sampling for contrast
        res = estimate(pool, model_scores, probs, labeler, budget=budget, metric="err@10",
                       method=method, rng=seed)
        method = res.method if method == "auto" else method
        ci = res.confidence_interval(0.95)
        out(f"  ERR@10 of the model ranker, {method:>10}: {res.estimate:.4f} ± {res.standard_error:.4f} (SE)"
            f"  95% CI [{ci.low:.4f}, {ci.high:.4f}]  ({res.n_queries} queries judged)")
        results[method] = res
    out(f"  true ERR@10 (all {pool.n_queries} queries judged): {truth(model_scores):.4f}")
    cmp = compare(pool, model_scores, bm25, probs, labeler, budget=budget, metric="err@10", rng=seed)
    ci = cmp.confidence_interval(0.95)
    out(f"  ERR@10(model) - ERR@10(BM25), {cmp.method}: {cmp.difference:+.4f} ± {cmp.standard_error:.4f} (SE)"
        f"  95% CI [{ci.low:+.4f}, {ci.high:+.4f}]; P(model better) = {cmp.prob_a_better():.2f}")
    out(f"  true difference: {truth(model_scores) - truth(bm25):+.4f}")
    results["compare"] = cmp
    return results


if __name__ == "__main__":  # pragma: no cover
    run_demo()
