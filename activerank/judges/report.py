"""How good a judge is against the human labels: agreement, calibrated log-loss, calibration curve."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .calibration import JudgeCalibrator, cross_fitted_proba
from .outputs import JudgeOutputs

__all__ = ["JudgeReport", "judge_report", "weighted_kappa"]


@dataclass(frozen=True)
class JudgeReport:
    """A judge's quality on the human-labelled pairs.

    Attributes
    ----------
    name : str
    n_pairs : int
        Pairs with a human label and the judge's output.
    confusion : ndarray or None
        Judge grade (rows; the most probable grade of a probability judge) x human grade (columns); None for
        score judges.
    kappa_quadratic, kappa : float
        Cohen's kappa with quadratic weights and unweighted, both scales read as integers (NaN for scores).
    log_loss : float
        Of the judge's calibrated probabilities (cross-fitted by query), nats per pair.
    log_loss_model : float
        The same with the feature model's probabilities added (NaN without ``model_probs``).
    log_loss_prior : float
        Of the human grade frequencies alone: the reference a useful judge beats.
    calibration : tuple of tuple
        ``(predicted mean gain, observed mean gain, pairs)`` per decile of the calibrated expected gain
        ``sum_y p(y) (2**y - 1)``.
    """

    name: str
    n_pairs: int
    confusion: np.ndarray | None
    kappa_quadratic: float
    kappa: float
    log_loss: float
    log_loss_model: float
    log_loss_prior: float
    calibration: tuple

    def summary(self) -> str:
        """A small text table."""
        rows = [("judge", self.name), ("pairs (human-labelled)", str(self.n_pairs)),
                ("kappa quadratic / unweighted", f"{self.kappa_quadratic:.3f} / {self.kappa:.3f}"),
                ("log-loss calibrated (cross-fitted)", f"{self.log_loss:.4f}"),
                ("log-loss with feature model", "-" if math.isnan(self.log_loss_model) else f"{self.log_loss_model:.4f}"),
                ("log-loss of grade frequencies", f"{self.log_loss_prior:.4f}")]
        width = max(len(k) for k, _ in rows)
        lines = [f"{k:<{width}}  {v}" for k, v in rows]
        if self.confusion is not None:
            lines.append("confusion (rows: judge grade, columns: human grade):")
            lines += ["  " + " ".join(f"{int(c):6d}" for c in row) for row in self.confusion]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"name": self.name, "n_pairs": self.n_pairs,
                "confusion": None if self.confusion is None else self.confusion.tolist(),
                "kappa_quadratic": self.kappa_quadratic, "kappa": self.kappa, "log_loss": self.log_loss,
                "log_loss_model": self.log_loss_model, "log_loss_prior": self.log_loss_prior,
                "calibration": [list(c) for c in self.calibration]}

    def __repr__(self) -> str:
        return (f"JudgeReport(name={self.name!r}, n_pairs={self.n_pairs}, kappa_quadratic={self.kappa_quadratic:.3f}, "
                f"log_loss={self.log_loss:.4f}, log_loss_prior={self.log_loss_prior:.4f})")


def weighted_kappa(a, b, *, n_levels: int, weights: str = "quadratic") -> float:
    """Cohen's kappa of two integer gradings on ``0 .. n_levels - 1`` (``weights``: "quadratic" or "none")."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if weights not in ("quadratic", "none"):
        raise ValueError(f"`weights` must be 'quadratic' or 'none'; got {weights!r}.")
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"the two gradings must be non-empty and of one shape; got {a.shape} and {b.shape}.")
    obs = np.zeros((n_levels, n_levels))
    np.add.at(obs, (a, b), 1.0)
    obs /= a.size
    exp = np.outer(obs.sum(1), obs.sum(0))
    i, j = np.indices((n_levels, n_levels))
    w = (i - j) ** 2 / (n_levels - 1) ** 2 if weights == "quadratic" else (i != j).astype(np.float64)
    denom = float((w * exp).sum())
    return float("nan") if denom == 0 else 1.0 - float((w * obs).sum()) / denom


def judge_report(judge: JudgeOutputs, labels, *, n_grades: int, groups, model_probs=None, n_splits: int = 5,
                 random_state=None) -> JudgeReport:
    """Compare one judge with the human labels.

    Parameters
    ----------
    judge : JudgeOutputs
    labels : array-like of int, shape (n_docs,)
        Human grades on the pool's rows, -1 where unlabeled (e.g. ``read_qrels(path).labels_for(pool)``).
    n_grades : int
        Size of the human scale.
    groups : array-like of shape (n_docs,)
        The query of every row (cross-fitting folds by query).
    model_probs : ndarray of shape (n_docs, n_grades), optional
        The feature model, for ``log_loss_model``.
    n_splits : int, default 5
    random_state : None or int

    Returns
    -------
    JudgeReport
    """
    if not isinstance(judge, JudgeOutputs):
        raise TypeError(f"`judge` must be JudgeOutputs (activerank.judges.read_judge); got {type(judge).__name__}.")
    labels = np.asarray(labels)
    both = np.flatnonzero((labels >= 0) & judge.judged)
    if both.size == 0:
        raise ValueError(f"judge {judge.name!r} graded none of the human-labelled pairs: nothing to compare.")
    y = labels[both].astype(np.int64)
    confusion = kq = k0 = None
    if judge.levels is not None:  # grades or probabilities (their most probable grade)
        g = judge.values[both].astype(np.int64) if judge.kind == "grades" else judge.values[both].argmax(axis=1)
        confusion = np.zeros((judge.levels, n_grades), dtype=np.int64)
        np.add.at(confusion, (g, y), 1)
        n = max(judge.levels, n_grades)
        kq, k0 = weighted_kappa(g, y, n_levels=n), weighted_kappa(g, y, n_levels=n, weights="none")
    fit_labels = np.where(judge.judged, labels, -1)
    cal = JudgeCalibrator(n_grades, random_state=random_state)
    p = cross_fitted_proba(cal, [judge], fit_labels, groups=groups, n_splits=n_splits)[both]
    ll_model = float("nan")
    if model_probs is not None:
        pm = cross_fitted_proba(cal, [judge], fit_labels, groups=groups, n_splits=n_splits, model_probs=model_probs)
        ll_model = _log_loss(pm[both], y)
    freq = (np.bincount(y, minlength=n_grades) + 0.5) / (y.size + 0.5 * n_grades)
    return JudgeReport(judge.name, int(both.size), confusion, float("nan") if kq is None else kq,
                       float("nan") if k0 is None else k0, _log_loss(p, y), ll_model,
                       _log_loss(np.broadcast_to(freq, p.shape), y), _calibration(p, y))


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(p[np.arange(y.size), y], 1e-15, 1.0))))


def _calibration(p: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple:
    gains = 2.0 ** np.arange(p.shape[1]) - 1.0
    pred = p @ gains
    obs = gains[y]
    edges = np.quantile(pred, np.linspace(0, 1, bins + 1))
    which = np.clip(np.searchsorted(edges, pred, side="right") - 1, 0, bins - 1)
    out = []
    for b in range(bins):
        m = which == b
        if m.any():
            out.append((float(pred[m].mean()), float(obs[m].mean()), int(m.sum())))
    return tuple(out)
