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
