"""Deliberately naive reference implementations used only by the tests."""

import itertools
import math

import numpy as np


def naive_dcg(grades, ranking, k=None):
    r = list(ranking)[:k] if k is not None else list(ranking)
    return sum((2.0 ** grades[z] - 1.0) / math.log2(i + 2) for i, z in enumerate(r))


def naive_err(grades, ranking, ymax, k=None):
    r = list(ranking)[:k] if k is not None else list(ranking)
    value, still = 0.0, 1.0
    for i, z in enumerate(r):
        rel = (2.0 ** grades[z] - 1.0) / 2.0**ymax
        value += still * rel / (i + 1)
        still *= 1.0 - rel
    return value


def naive_metric(name, grades, ranking, ymax, k=None):
    if name == "dcg":
        return naive_dcg(grades, ranking, k)
    return naive_err(grades, ranking, ymax, k)


def brute_force_moments(probs, ranking_a, ranking_b, name, k=None):
    """Enumerate every label vector: returns E[La], E[Lb], E[La^2], E[Lb^2], E[La Lb]."""
    probs = np.asarray(probs, dtype=float)
    n, n_grades = probs.shape
    ymax = n_grades - 1
    acc = np.zeros(5)
    for ys in itertools.product(range(n_grades), repeat=n):
        p = 1.0
        for z, y in enumerate(ys):
            p *= probs[z, y]
        if p == 0.0:
            continue
        la = naive_metric(name, ys, ranking_a, ymax, k)
        lb = naive_metric(name, ys, ranking_b, ymax, k)
        acc += p * np.array([la, lb, la * la, lb * lb, la * lb])
    return acc


def random_probs(rng, n, n_grades, *, sharp=True):
    """Dirichlet rows, with some one-hot rows and some exact zeros mixed in."""
    probs = rng.dirichlet(np.full(n_grades, 0.7), size=n)
    if sharp and n:
        onehot = rng.random(n) < 0.25
        probs[onehot] = np.eye(n_grades)[rng.integers(0, n_grades, onehot.sum())]
        zero = (rng.random((n, n_grades)) < 0.2) & ~onehot[:, None]
        probs = np.where(zero, 0.0, probs)
        empty = probs.sum(1) == 0
        probs[empty, 0] = 1.0
        probs /= probs.sum(1, keepdims=True)
    return probs


# --- naive per-query metrics for the whole registry (one list, plain loops) ---


def naive_gain(gain):
    """Gain of a grade: 'exp', 'linear' or a {grade: gain} table (unlisted grades keep their grade)."""
    if gain == "exp":
        return lambda y: 2.0**y - 1.0
    if gain == "linear":
        return lambda y: float(y)
    table = dict(gain)
    return lambda y: float(table.get(y, y))


def naive_dcg_gain(grades, ranking, k=None, gain="exp"):
    r = list(ranking)[:k] if k is not None else list(ranking)
    g = naive_gain(gain)
    return sum(g(grades[z]) / math.log2(i + 2) for i, z in enumerate(r))


def naive_precision(grades, ranking, k, rel=1):
    return sum(1 for z in list(ranking)[:k] if grades[z] >= rel) / k


def naive_rbp(grades, ranking, p=0.8, rel=1, k=None):
    """Moffat & Zobel's RBP without residual; rel=None: graded, the grade is the gain (trectools)."""
    r = list(ranking)[:k] if k is not None else list(ranking)
    if rel is None:
        return (1 - p) * sum(p**i * grades[z] for i, z in enumerate(r))
    return (1 - p) * sum(p**i for i, z in enumerate(r) if grades[z] >= rel)


def naive_recall(grades, ranking, judged, rel=1, k=None):
    """trec_eval's recall_k: relevant judged items in the top k over all relevant judged items."""
    judged = set(judged)
    n_rel = sum(1 for z in judged if grades[z] >= rel)
    r = list(ranking)[:k] if k is not None else list(ranking)
    return sum(1 for z in r if z in judged and grades[z] >= rel) / n_rel if n_rel else 0.0


def naive_success(grades, ranking, rel=1, k=None):
    r = list(ranking)[:k] if k is not None else list(ranking)
    return float(any(grades[z] >= rel for z in r))


def naive_rr(grades, ranking, rel=1, k=None):
    r = list(ranking)[:k] if k is not None else list(ranking)
    for i, z in enumerate(r):
        if grades[z] >= rel:
            return 1.0 / (i + 1)
    return 0.0


def naive_err_ymax(grades, ranking, ymax, k=None):
    return naive_err(grades, ranking, ymax, k)


def naive_ndcg(grades, ranking, judged, k=None, gain="exp"):
    """DCG@k of the ranking (unjudged ranked items count 0) over the ideal DCG@k of the judged items."""
    judged = list(judged)
    g = {z: grades[z] if z in set(judged) else 0 for z in list(ranking) + judged}
    gain_of = naive_gain(gain)
    ideal = sorted((gain_of(g[z]) for z in judged), reverse=True)   # the ideal orders by gain
    idcg = sum(v / math.log2(i + 2) for i, v in enumerate(ideal[:k] if k is not None else ideal))
    return naive_dcg_gain(g, ranking, k, gain) / idcg if idcg > 0 else 0.0


def naive_ap(grades, ranking, judged, rel=1, k=None):
    """trec_eval's average precision (map / map_cut): relevant = grade >= rel among the judged items."""
    judged = set(judged)
    n_rel = sum(1 for z in judged if grades[z] >= rel)
    if n_rel == 0:
        return 0.0
    r = list(ranking)[:k] if k is not None else list(ranking)
    hits, total = 0, 0.0
    for i, z in enumerate(r):
        if z in judged and grades[z] >= rel:
            hits += 1
            total += hits / (i + 1)
    return total / n_rel


def brute_force_pair(probs, value_a, value_b):
    """Enumerate every label vector for two metric functions ``value(ys) -> float``.

    Returns E[La], E[Lb], E[La^2], E[Lb^2], E[La Lb].
    """
    probs = np.asarray(probs, dtype=float)
    n, n_grades = probs.shape
    acc = np.zeros(5)
    for ys in itertools.product(range(n_grades), repeat=n):
        p = 1.0
        for z, y in enumerate(ys):
            p *= probs[z, y]
        if p == 0.0:
            continue
        la, lb = value_a(ys), value_b(ys)
        acc += p * np.array([la, lb, la * la, lb * lb, la * lb])
    return acc
