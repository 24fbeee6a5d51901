"""Synthetic pools for the distributed tests: a pandas frame, cut into partitions at query boundaries."""

import numpy as np


def synthetic_frame(seed=0, n_queries=120, max_docs=25, n_grades=3, query_offset=5):
    """A frame with one row per (query, document) and the true labels (drawn from the probabilities)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, max_docs + 1, n_queries)
    n = int(lengths.sum())
    qid = np.repeat(np.arange(n_queries) * 3 + query_offset, lengths)
    richness = rng.dirichlet(np.ones(n_grades), n_queries)
    probs = 0.85 * np.repeat(richness, lengths, axis=0) + 0.15 * rng.dirichlet(np.ones(n_grades), n)
    labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, n_grades - 1)
    df = pd.DataFrame({"query_id": qid, "doc_id": [f"d{i}" for i in range(n)],
                       "score_a": probs @ np.arange(n_grades) + 0.3 * rng.random(n),
                       "score_b": rng.random(n).round(1),  # ties: broken towards the earlier row
                       "f0": rng.normal(size=n), "f1": rng.normal(size=n),
                       "cost": rng.uniform(0.5, 3.0, n), "length": rng.integers(1, 4000, n).astype(float)})
    for g in range(n_grades):
        df[f"p{g}"] = probs[:, g]
    df["label"] = labels
    return df, dict(zip(df["doc_id"], labels.tolist()))


def boundaries(df, n_parts, query="query_id"):
    """Row cuts of ``n_parts`` partitions that keep every query whole."""
    qid = df[query].to_numpy()
    starts = np.r_[0, np.flatnonzero(qid[1:] != qid[:-1]) + 1]
    picks = starts[np.linspace(0, starts.size, n_parts, endpoint=False).astype(int)]
    return [*picks.tolist(), len(df)]


def dask_frame(df, cuts):
    """A Dask DataFrame whose partitions are ``df`` rows ``cuts[i]:cuts[i + 1]``."""
    import dask
    import dask.dataframe as dd

    parts = [dask.delayed(df.iloc[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    return dd.from_delayed(parts, meta=df.iloc[:0], verify_meta=False)


def labeler_of(labels):
    return lambda query_id, doc_ids: [labels[d] for d in doc_ids]


class LinearSoftmax:
    """A fitted-looking relevance model: softmax of a fixed linear map of (f0, f1), row by row."""

    def __init__(self, n_grades=3):
        self.W = np.linspace(-1.0, 1.0, 2 * n_grades).reshape(2, n_grades)

    def predict_proba(self, X):
        X = np.asarray(X, dtype=np.float64)
        z = X[:, :1] * self.W[0] + X[:, 1:2] * self.W[1]  # elementwise: the same bits in any partition
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)
