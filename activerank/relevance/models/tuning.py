"""Hyper-parameters by validation log-loss over a small grid (:func:`fit_with_validation`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .base import RelevanceModel, grade_log_loss


def _data_xy(data: Any, name: str) -> tuple[Any, Any]:
    """Accept a LetorData (with labels) or an (X, y) pair."""
    if hasattr(data, "X") and hasattr(data, "labels"):
        if data.labels is None:
            raise ValueError(f"`{name}` has no labels; tuning needs labeled data.")
        return data.X, data.labels
    try:
        X, y = data
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a LetorData or an (X, y) pair; got {type(data).__name__}.") from None
    return X, y

@dataclass
class TuningResult:
    """Outcome of :func:`fit_with_validation`.

    Attributes
    ----------
    model : RelevanceModel
        Fitted with ``params`` (on train, or train + vali if ``refit=True``).
    params : dict
        Best grid point.
    scores : list of (dict, float)
        Every grid point with its validation log-loss, in grid order.
    """

    model: RelevanceModel
    params: dict[str, Any]
    scores: list[tuple[dict[str, Any], float]]


def fit_with_validation(
    model_factory: Callable[..., RelevanceModel],
    grid: Mapping[str, Sequence[Any]],
    train: Any,
    vali: Any,
    *,
    refit: bool = False,
) -> TuningResult:
    """Pick hyper-parameters by validation log-loss over a small grid.

    Parameters
    ----------
    model_factory : callable
        ``model_factory(**params)`` returns an unfitted relevance model, e.g.
        ``functools.partial(make_relevance_model, "lightgbm", 3)``.
    grid : mapping of str to sequence
        Parameter name -> candidate values; the full Cartesian product is
        tried (keep it small).  An empty mapping tries ``model_factory()``.
    train, vali : LetorData or (X, y)
        Fitting and validation data.  Following Sawade et al., one may split
        a training fold in halves (e.g. by query with ``LetorData.subset``).
    refit : bool, default False
        Refit the best configuration on train + vali.

    Returns
    -------
    TuningResult

    Examples
    --------
    >>> from functools import partial
    >>> from activerank.relevance.models import make_relevance_model
    >>> from activerank.io.letor import load_sample
    >>> tr, va = load_sample("train"), load_sample("test")
    >>> res = fit_with_validation(partial(make_relevance_model, "ordered_logit", 3),
    ...                           {"alpha": [1.0, 100.0]}, tr, va)
    >>> sorted(res.params), len(res.scores)
    (['alpha'], 2)
    """
    if not callable(model_factory):
        raise TypeError(f"`model_factory` must be callable; got {type(model_factory).__name__}.")
    if not isinstance(grid, Mapping):
        raise TypeError(f"`grid` must be a mapping of parameter name to candidate values; got {type(grid).__name__}.")
    for k, v in grid.items():
        if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or len(v) == 0:
            raise ValueError(f"`grid[{k!r}]` must be a non-empty sequence of candidate values; got {v!r}.")
    Xtr, ytr = _data_xy(train, "train")
    Xva, yva = _data_xy(vali, "vali")
    names = list(grid)
    scores: list[tuple[dict[str, Any], float]] = []
    best: tuple[dict[str, Any], float, RelevanceModel] | None = None
    for values in itertools.product(*(grid[k] for k in names)):
        params = dict(zip(names, values))
        model = model_factory(**params).fit(Xtr, ytr)
        loss = grade_log_loss(model.predict_proba(Xva), yva)
        scores.append((params, loss))
        if best is None or loss < best[1]:
            best = (params, loss, model)
    assert best is not None  # the product of non-empty sequences has at least one point
    params, _, model = best
    if refit:
        model = model_factory(**params).fit(np.concatenate([np.asarray(Xtr), np.asarray(Xva)]),
                                            np.concatenate([np.asarray(ytr), np.asarray(yva)]))
    return TuningResult(model=model, params=params, scores=scores)
