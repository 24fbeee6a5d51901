"""Calibrated relevance from external judges: p(y | judges, x) fitted on human labels.

A judge's raw output is not a probability of the human grade: an LLM grades on its own scale, over-grades or
under-grades, and its "probabilities" are often overconfident.  :class:`JudgeCalibrator` fits a multinomial
logistic regression of the human grade on every judge's output (one-hot grades, probabilities, or a
standardized score, each with a missing flag) and, optionally, the feature model's log-probabilities.  Its
``predict_proba`` is a relevance model like any other: pass it as ``probs`` to :func:`activerank.estimate`,
:func:`activerank.compare` and the rest, and the default design plans with it.

Given the feature model, the fit also asks whether the judges help at all: out of fold (the same folds that
choose ``C``), it compares the squared error of the expected gain under the calibrated model with that under
the feature model unchanged.  When the feature model does as well, ``predict_proba`` returns it unchanged
(``uses_judges_`` is False).  A useless judge then costs nothing: recalibrating the feature model through
the judge's noise raised the designs' MSE by 6-17% on TREC News (``docs/judges.md``).

Labels the calibrator was fitted on and that lie in the evaluated pool are known: pass them as
``judgments=`` (they cost nothing and enter the estimate exactly), so fitting on them does not bias the
estimate.  :func:`cross_fitted_proba` gives out-of-fold probabilities (folds by query) for honest quality
numbers (:func:`activerank.judges.judge_report`).
"""

from __future__ import annotations

import numpy as np

from ..metrics._blas import single_blas_thread
from .outputs import JudgeOutputs

__all__ = ["C_GRID", "JudgeCalibrator", "cross_fitted_proba"]

_LOG_FLOOR = 1e-6
#: the regularization strengths ``C="auto"`` chooses among
C_GRID = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)


class JudgeCalibrator:
    """Map judges' outputs (and the feature model) to calibrated grade probabilities on the human scale.

    Parameters
    ----------
    n_grades : int
        Size of the human grade scale.
    C : float or "auto", default "auto"
        Inverse L2 regularization of the logistic regression; ``"auto"`` picks it from :data:`C_GRID` by
        cross-validated log-loss (folds by query when ``fit`` gets ``groups``).  Many judges need strong
        regularization: on LLMJudge 2024 all 16 judges at ``C=1`` calibrate worse than the best one alone.
    floor : float, default 1e-3
        Share of a uniform distribution mixed in, so no grade gets probability 0 (the designs then never
        treat a document as certain).
    random_state : None, int or numpy.random.Generator
        Passed to the solver (for reproducibility only; lbfgs is deterministic).
    gains : array-like of shape (n_grades,), optional
        The gain of every human grade, for the out-of-fold check against the feature model; default the
        exponential gains ``2**y - 1`` of DCG and ERR.

    Attributes
    ----------
    C_ : float
        The regularization used.
    uses_judges_ : bool
        False when the feature model (``model_probs``) predicted the gain out of fold at least as well as the
        calibrated judges, or could not be compared with them across queries (``validated_by_query_``);
        ``predict_proba`` then returns ``model_probs`` unchanged.
    validated_by_query_ : bool
        The folds held out whole queries (``groups`` with 3 or more labeled queries).  Without them a feature
        model is kept unchanged (``uses_judges_`` False): folds within a few queries reward a recalibration that
        learns those queries' grade mix.
    cv_gain_error_ : dict or None
        The out-of-fold mean squared gain errors behind that choice (``"judges"``, ``"model"``), or None when
        there was no feature model or too few labels to validate.

    Examples
    --------
    >>> import numpy as np, activerank as ar
    >>> from activerank.judges import JudgeCalibrator, read_judge
    >>> pool = ar.Pool.from_qids([0] * 6 + [1] * 6)
    >>> judge = read_judge({q: {r: r % 3 for r in range(6 * q, 6 * q + 6)} for q in (0, 1)}, pool, levels=3)
    >>> labels = np.array([0, 1, 1, 0, 1, 1] * 2)
    >>> cal = JudgeCalibrator(2).fit([judge], labels)
    >>> cal.predict_proba([judge]).shape
    (12, 2)
    """

    def __init__(self, n_grades: int, *, C="auto", floor: float = 1e-3, random_state=None, gains=None):
        self.n_grades = n_grades
        self.C = C
        self.floor = floor
        self.random_state = random_state
        self.gains = gains

    # ------------------------------------------------------------------ fitting

    @single_blas_thread  # tiny fits: BLAS worker threads only contend (10x slower on a busy 2-core machine)
    def fit(self, judges, labels, *, model_probs=None, groups=None) -> "JudgeCalibrator":
        """Fit on the rows with a human label (``labels >= 0``; -1 elsewhere).

        Parameters
        ----------
        judges : sequence of JudgeOutputs
            On the same pool rows as ``labels``.
        labels : array-like of int, shape (n_docs,)
            Human grades, -1 where unlabeled.
        model_probs : ndarray of shape (n_docs, n_grades), optional
            The feature model's probabilities, as extra features.
        groups : array-like of shape (n_docs,), optional
            The query of every row: ``C="auto"`` then validates on held-out queries.
        """
        judges, labels, model_probs = self._iv(judges, labels, model_probs)
        lab = np.flatnonzero(labels >= 0)
        classes = np.unique(labels[lab])
        if classes.size < 2:
            raise ValueError(f"`labels` must hold human grades of at least 2 different values to calibrate on; got "
                             f"{lab.size} labels, all {classes.tolist()}.")
        self.score_stats_ = [_score_stats(j, lab) for j in judges]
        self.signature_ = [(j.kind, j.levels) for j in judges]
        self.with_model_ = model_probs is not None
        X = self._features(judges, model_probs, lab)
        y = labels[lab]
        row_groups = None if groups is None else np.asarray(groups)[lab]
        splits = self._splits(X, y, row_groups)
        self.C_, self.cv_gain_error_ = self._choose_C(X, y, splits,
                                                      None if model_probs is None else model_probs[lab])
        err = self.cv_gain_error_
        # folds within fewer than 3 queries cannot tell a judge from the labeled queries' own grade mix, which a
        # recalibration learns and then applies to every query: the feature model stays unless it is all there is
        self.validated_by_query_ = _by_query(row_groups)
        self.uses_judges_ = model_probs is None or (self.validated_by_query_
                                                    and (err is None or err["judges"] < err["model"]))
        self.model_ = self._logistic(self.C_).fit(X, y)
        self.n_labels_ = int(lab.size)
        return self

    def _proba(self, model, X) -> np.ndarray:
        """``model``'s probabilities on every human grade (0 for grades absent from its fit), floor mixed in."""
        p = np.zeros((X.shape[0], self.n_grades))
        p[:, model.classes_.astype(np.int64)] = model.predict_proba(X)
        return (1.0 - self.floor) * p + self.floor / self.n_grades

    def _logistic(self, C: float):
        from sklearn.linear_model import LogisticRegression

        rs = self.random_state if not isinstance(self.random_state, np.random.Generator) else None
        return LogisticRegression(C=float(C), max_iter=2000, random_state=rs)

    def _splits(self, X, y, groups):
        """Validation folds: by query when ``groups`` has 3 or more, else shuffled rows; None below 10 labels."""
        from sklearn.model_selection import GroupKFold, KFold

        if _by_query(groups):
            return list(GroupKFold(n_splits=3).split(X, groups=groups))
        if y.size >= 10:
            rs = self.random_state if isinstance(self.random_state, (int, np.integer)) else 0
            return list(KFold(n_splits=3, shuffle=True, random_state=rs).split(X))
        return None

    def _choose_C(self, X, y, splits, model_probs):
        """``C`` (for ``"auto"`` the grid value with the smallest out-of-fold log-loss) and the out-of-fold
        squared gain errors of that ``C`` and of ``model_probs`` unchanged (None without both)."""
        fixed = not (isinstance(self.C, str) and self.C == "auto")
        if fixed and (isinstance(self.C, str) or not float(self.C) > 0):
            raise ValueError(f"`C` must be a positive number or 'auto'; got {self.C!r}.")
        if splits is None:  # too few labels to validate: the strongest regularization
            return (float(self.C) if fixed else C_GRID[-1]), None
        gains = self._gains()
        grid = (float(self.C),) if fixed else C_GRID
        if fixed and model_probs is None:
            return grid[0], None
        loss, gain_err = [], []
        for C in grid:
            total, sq = 0.0, 0.0
            for train, test in splits:
                if np.unique(y[train]).size < 2:  # one grade to learn from: its frequency, not in the C choice
                    sq += float(np.sum((gains[y[train][0]] - gains[y[test]]) ** 2))
                    continue
                p = self._proba(self._logistic(C).fit(X[train], y[train]), X[test])
                total -= float(np.log(np.clip(p[np.arange(test.size), y[test]], 1e-15, 1.0)).sum())
                sq += float(np.sum((p @ gains - gains[y[test]]) ** 2))
            loss.append(total)
            gain_err.append(sq / y.size)
        best = int(np.argmin(loss))
        if model_probs is None:
            return float(grid[best]), None
        # the folds' test sets cover every row once: the unchanged model's error over all rows is its out-of-fold one
        model_err = float(np.mean((model_probs @ gains - gains[y]) ** 2))
        return float(grid[best]), {"judges": gain_err[best], "model": model_err}

    def _gains(self) -> np.ndarray:
        if self.gains is None:
            return 2.0 ** np.arange(self.n_grades) - 1.0
        gains = np.asarray(self.gains, dtype=np.float64)
        if gains.shape != (self.n_grades,) or not np.all(np.isfinite(gains)):
            raise ValueError(f"`gains` must be {self.n_grades} finite numbers, one per human grade; got "
                             f"{self.gains!r}.")
        return gains

    @single_blas_thread
    def predict_proba(self, judges, *, model_probs=None) -> np.ndarray:
        """Calibrated probabilities of every human grade, shape ``(n_docs, n_grades)``."""
        if not hasattr(self, "model_"):
            raise ValueError("this JudgeCalibrator is not fitted yet: call fit() first.")
        judges, _, model_probs = self._iv(judges, None, model_probs)
        if [(j.kind, j.levels) for j in judges] != self.signature_:
            raise ValueError(f"`judges` must be the judges the calibrator was fitted on, in the same order (kinds and "
                             f"levels {self.signature_}); got {[(j.kind, j.levels) for j in judges]}.")
        if (model_probs is not None) != self.with_model_:
            raise ValueError("`model_probs` must be given to predict_proba exactly when it was given to fit.")
        if not self.uses_judges_:
            return model_probs.copy()
        return self._proba(self.model_, self._features(judges, model_probs, None))

    # ------------------------------------------------------------------ helpers

    def _iv(self, judges, labels, model_probs):
        n = self.n_grades
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
            raise ValueError(f"`n_grades` must be an integer >= 2; got {n!r}.")
        if not 0.0 <= float(self.floor) < 1.0:
            raise ValueError(f"`floor` must be in [0, 1); got {self.floor!r}.")
        self._gains()
        if isinstance(judges, JudgeOutputs):
            judges = [judges]
        judges = list(judges)
        if not judges or not all(isinstance(j, JudgeOutputs) for j in judges):
            raise TypeError("`judges` must be a non-empty sequence of JudgeOutputs (activerank.judges.read_judge).")
        n_docs = judges[0].n_docs
        for i, j in enumerate(judges):
            if j.n_docs != n_docs:
                raise ValueError(f"`judges[{i}]` ({j.name!r}) covers {j.n_docs} documents; `judges[0]` covers {n_docs}: "
                                 "read every judge against the same pool.")
        if labels is not None:
            labels = np.asarray(labels)
            if labels.shape != (n_docs,) or not np.issubdtype(labels.dtype, np.integer):
                raise ValueError(f"`labels` must be integer grades of shape ({n_docs},) (-1 where unlabeled); got "
                                 f"dtype {labels.dtype} and shape {labels.shape}.")
            bad = np.flatnonzero((labels < -1) | (labels >= n))
            if bad.size:
                raise ValueError(f"`labels` row {bad[0]}: grade {labels[bad[0]]} is outside 0..{n - 1} (-1: unlabeled).")
        if model_probs is not None:
            model_probs = np.asarray(model_probs, dtype=np.float64)
            if model_probs.shape != (n_docs, n):
                raise ValueError(f"`model_probs` must have shape ({n_docs}, {n}); got {model_probs.shape}.")
        return judges, labels, model_probs

    def _features(self, judges, model_probs, rows) -> np.ndarray:
        cols = []
        for j, stats in zip(judges, self.score_stats_):
            v = j.values if rows is None else j.values[rows]
            miss = np.isnan(v) if v.ndim == 1 else np.isnan(v).any(axis=1)
            if j.kind == "grades":
                onehot = np.zeros((v.shape[0], int(j.levels)))
                ok = np.flatnonzero(~miss)
                onehot[ok, v[ok].astype(np.int64)] = 1.0
                cols.append(onehot)
            elif j.kind == "probabilities":
                cols.append(np.where(miss[:, None], 0.0, v))
            else:
                mean, sd = stats
                cols.append(np.where(miss, 0.0, (v - mean) / sd)[:, None])
            cols.append(miss[:, None].astype(np.float64))
        if model_probs is not None:
            m = model_probs if rows is None else model_probs[rows]
            cols.append(np.log(np.clip(m, _LOG_FLOOR, 1.0)))
        return np.hstack(cols)


def _score_stats(judge: JudgeOutputs, rows) -> tuple[float, float]:
    """Mean and SD of a score judge on the fitting rows (standardized features)."""
    if judge.kind != "scores":
        return 0.0, 1.0
    v = judge.values[rows]
    v = v[~np.isnan(v)]
    if v.size == 0:
        return 0.0, 1.0
    sd = float(v.std())
    return float(v.mean()), sd if sd > 0 else 1.0


def _by_query(groups) -> bool:
    """Whether the validation folds hold out whole queries: ``groups`` (of the labeled rows) has 3 or more."""
    return groups is not None and np.unique(groups).size >= 3


def cross_fitted_proba(calibrator: JudgeCalibrator, judges, labels, *, groups, model_probs=None,
                       n_splits: int = 5) -> np.ndarray:
    """Out-of-fold calibrated probabilities of the labeled rows (NaN rows elsewhere).

    Folds split ``groups`` (the query of every row), so a query's own labels never calibrate its documents.

    Parameters
    ----------
    calibrator : JudgeCalibrator
        Its settings are used (it is not refitted).
    judges, labels, model_probs
        As :meth:`JudgeCalibrator.fit`.
    groups : array-like of shape (n_docs,)
        The query of every row.
    n_splits : int, default 5
    """
    from sklearn.model_selection import GroupKFold

    labels = np.asarray(labels)
    groups = np.asarray(groups)
    if groups.shape != labels.shape:
        raise ValueError(f"`groups` must have one query per row, shape {labels.shape}; got {groups.shape}.")
    lab = np.flatnonzero(labels >= 0)
    n_groups = np.unique(groups[lab]).size
    if n_groups < 2:
        raise ValueError(f"cross-fitting needs labeled rows in at least 2 queries; got {n_groups}.")
    out = np.full((labels.size, calibrator.n_grades), np.nan)
    for train, test in GroupKFold(n_splits=min(int(n_splits), n_groups)).split(lab, groups=groups[lab]):
        fold = np.full(labels.shape, -1, dtype=np.int64)
        fold[lab[train]] = labels[lab[train]]
        cal = JudgeCalibrator(calibrator.n_grades, C=calibrator.C, floor=calibrator.floor,
                              random_state=calibrator.random_state, gains=calibrator.gains)
        if np.unique(fold[fold >= 0]).size < 2:  # a fold whose training labels are all one grade: its frequency
            out[lab[test]] = np.bincount(labels[lab[train]], minlength=calibrator.n_grades) / train.size
            continue
        cal.fit(judges, fold, model_probs=model_probs, groups=groups)
        out[lab[test]] = cal.predict_proba(judges, model_probs=model_probs)[lab[test]]
    return out
