"""External judges on a Dask pool: columns of the pool, calibrated on the driver, applied by the workers.

A judge's outputs (an LLM's grades, a cross-encoder's scores) are columns of the pool's frame
(:class:`JudgeColumns`).  The run fetches only the documents of the queries the caller holds labels for
(``judgments=``), fits a :class:`~activerank.judges.JudgeCalibrator` there on the driver -- the same fit as
:func:`activerank.engine.judged.calibrate_held` in memory -- and hands the workers a relevance model
(:class:`JudgedModel`) that applies it partition by partition to the judge columns and the base model.  The
model is fixed before any draw and the labels it was fitted on are held, so every design stays unbiased.

With fewer than :data:`~activerank.engine.judged.MIN_CALIBRATION_LABELS` held labels on judged documents, a
fixed-budget run buys them first (:func:`run_with_rounds`): calibration rounds at the shares
:data:`~activerank.engine.judged.CALIBRATION_SHARES` of the budget, the first planned on ``probs``, the next on
the judges refitted to the labels held so far.  The last run holds every round's label.  Given the rounds, its
model is fixed before its first draw and the labels it holds are true, so its estimate is unbiased for the whole
target and its interval valid.  Unlike in memory, the rounds' estimates are not weighed in (:data:`_ROUND_WEIGHT`
says why); ``trace.attrs["judges"]["calibration_rounds"]`` reports each round's estimate and standard error.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace
from typing import NoReturn

import numpy as np

__all__ = ["JudgeColumns", "JudgedModel", "TooFewHeldLabels", "run_with_rounds", "with_judges"]


class TooFewHeldLabels(ValueError):
    """Fewer held labels on judged documents than a calibration needs (a fixed-budget run then buys them).

    ``held`` says how many were held.
    """

    held: str = ""


@dataclass(frozen=True)
class JudgeColumns:
    """One external judge's outputs in columns of a Dask pool.

    Parameters
    ----------
    columns : str or sequence of str
        One column of grades or scores, or one column per grade of the judge's scale for
        (log-)probabilities.  NaN: the judge gave nothing for that document.
    kind : {"grades", "probabilities", "log_probabilities", "scores"}, default "grades"
        As in :func:`activerank.judges.read_judge`.
    levels : int, optional
        The judge's scale ``0 .. levels - 1`` (required for grades; may differ from the human scale).
    name : str, optional
        Default: the first column's name.

    Examples
    --------
    >>> JudgeColumns("llm_grade", levels=4)
    JudgeColumns(columns=('llm_grade',), kind='grades', levels=4, name='llm_grade')
    """

    columns: tuple
    _: KW_ONLY
    kind: str = "grades"
    levels: int | None = None
    name: str | None = None

    def __post_init__(self):
        cols = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        object.__setattr__(self, "columns", cols)
        if self.name is None and cols:
            object.__setattr__(self, "name", str(cols[0]))

    def outputs(self, values: np.ndarray, where: str):
        """This judge's :class:`~activerank.judges.JudgeOutputs` from its columns' values (checked)."""
        from ..judges import judge_outputs_of

        v = values[:, 0] if self.kind in ("grades", "scores") else values
        return judge_outputs_of(v, kind=self.kind, levels=self.levels, name=str(self.name),
                                label=f"{where}judge {self.name!r} (columns {list(self.columns)})")


def judge_columns_iv(judges, pool) -> list:
    """A non-empty list of :class:`JudgeColumns` naming columns of ``pool`` (one column for grades/scores)."""
    from ..engine.judged import judge_list
    from ..judges.outputs import _kind_levels_iv
    from .frame import frame_columns_iv

    judges = judge_list(judges, JudgeColumns, "activerank.distributed.JudgeColumns: the judges' columns of the pool")
    for i, j in enumerate(judges):
        try:
            _kind_levels_iv(j.kind, j.levels)
        except ValueError as exc:
            raise ValueError(f"`judges[{i}]` ({j.name!r}): {exc}") from None
        frame_columns_iv(pool, list(j.columns), f"judges[{i}].columns")
        if j.kind in ("grades", "scores") and len(j.columns) != 1:
            raise ValueError(f"`judges[{i}]`: kind={j.kind!r} takes one column; got {list(j.columns)}.")
        if j.kind not in ("grades", "scores") and len(j.columns) < 2:
            raise ValueError(f"`judges[{i}]`: kind={j.kind!r} takes one column per grade of the judge's scale; "
                             f"got {list(j.columns)}.")
    return judges


class JudgedModel:
    """The calibrated relevance model the workers apply: judge columns first, then the base model's input.

    ``predict_proba(X)`` takes the pool's feature columns ``judge columns + base columns`` (the base columns
    are ``probs``' probability columns, or the base model's features) and returns the calibrated
    probabilities, as :meth:`activerank.judges.JudgeCalibrator.predict_proba` does in memory.
    """

    def __init__(self, calibrator, judges, base_model=None):
        self.calibrator = calibrator
        self.judges = list(judges)
        self.base_model = base_model

    @property
    def n_judge_columns(self) -> int:
        return sum(len(j.columns) for j in self.judges)

    def split(self, X, where: str = ""):
        """``(judge outputs, base probabilities)`` of rows ``X``."""
        X = np.asarray(X, dtype=np.float64)
        outs, at = [], 0
        for j in self.judges:
            outs.append(j.outputs(X[:, at:at + len(j.columns)], where))
            at += len(j.columns)
        base = X[:, at:]
        if self.base_model is not None:
            base = np.asarray(self.base_model.predict_proba(base), dtype=np.float64)
        return outs, base

    def predict_proba(self, X) -> np.ndarray:
        outs, base = self.split(X)
        return self.calibrator.predict_proba(outs, model_probs=base)


def with_judges(pool, probs, judges, judgments, *, seed: int, progress=None, min_labels: int | None = None):
    """``(pool, probs, info)`` for a run with ``judges``: the calibrated model and the feature columns it reads.

    Only the held queries' documents come to the driver.  ``info`` is the run's ``trace.attrs["judges"]``.
    Without labels of at least 2 grades the run keeps ``probs`` and ``info`` says why, as in memory.  Fewer than
    ``min_labels`` (default :data:`~activerank.engine.judged.MIN_CALIBRATION_LABELS`) on judged documents raise
    :class:`TooFewHeldLabels`.
    """
    import pandas as pd

    from .._validation import py_scalar
    from ..engine.judged import MIN_CALIBRATION_LABELS, calibration_labels
    from ..judges import JudgeCalibrator
    from .frame import fetch_queries, frame_columns_iv, query_values

    judges = judge_columns_iv(judges, pool)
    if isinstance(probs, str) or (isinstance(probs, (list, tuple)) and all(isinstance(c, str) for c in probs)):
        base_cols, base_model = frame_columns_iv(pool, probs, "probs"), None
    elif hasattr(probs, "predict_proba") and pool.features is not None:
        base_cols, base_model = list(pool.features), probs
    else:  # the run's own check of `probs` says what is wrong
        return pool, probs, None
    need = MIN_CALIBRATION_LABELS if min_labels is None else min_labels
    held = _held_iv(judgments)
    n_held = sum(len(docs) for docs in held.values())
    if n_held < need:  # no need to read the pool to refuse
        _too_few(f"{n_held} labels are held")
    judge_cols = [c for j in judges for c in j.columns]
    rows = fetch_queries(pool, list(held), [pool.document, *judge_cols, *base_cols], progress=progress)
    qv = np.asarray([py_scalar(q) for q in query_values(rows, pool.query, pool.query_in_index)], dtype=object)
    outs, base = JudgedModel(None, judges, base_model).split(rows[judge_cols + base_cols].to_numpy(np.float64),
                                                             "held rows: ")
    labels = _held_labels(rows[pool.document].to_numpy(), qv, held, base.shape[1])
    n = calibration_labels(outs, labels)
    if n < need:
        _too_few(f"{n} of the {n_held} labels held lie on documents a judge judged")
    info: dict = {"judges": [str(j.name) for j in judges], "calibration_round_cost": 0.0, "n_labels": int(n)}
    use = (labels >= 0) & np.any([o.judged for o in outs], axis=0)
    if np.unique(labels[use]).size < 2:
        info.update(calibrated=False, reason=f"the {n} human labels on judged documents hold fewer than 2 different "
                                             "grades: the judges were not calibrated, the design used `probs`")
        return pool, probs, info
    groups = pd.factorize(qv)[0]  # queries in the frame's order, as the in-memory pool's positions are
    cal = JudgeCalibrator(base.shape[1], random_state=seed).fit(outs, np.where(use, labels, -1), model_probs=base,
                                                               groups=groups)
    info.update(calibrated=True, C=cal.C_, uses_judges=cal.uses_judges_, cv_gain_error=cal.cv_gain_error_,
                validated_by_query=cal.validated_by_query_)
    return replace(pool, features=tuple(judge_cols + base_cols)), JudgedModel(cal, judges, base_model), info


def _too_few(what: str) -> NoReturn:
    from ..engine.judged import MIN_CALIBRATION_LABELS

    exc = TooFewHeldLabels(f"`judges` on a Dask pool are calibrated on the labels held (`judgments=`): {what}, "
                           f"fewer than {MIN_CALIBRATION_LABELS} on judged documents. Label some queries first (e.g. "
                           "a small run without judges) and pass their judgments, or leave `judges` out.")
    exc.held = what
    raise exc


def run_with_rounds(run, *, budget: float, judgments, judges):
    """A fixed-budget run with ``judges`` that buys its own calibration labels first (module docstring).

    ``run(budget=, judgments=, judges=, min_labels=, on_fit=)`` runs once and returns its result (``judges=None``:
    on ``probs``; ``on_fit``: :class:`~activerank.engine.judged.FitHook`).  The result is the last run's
    (:func:`~activerank.engine.judged.combine_rounds` with every round's weight 0: the rounds' labels are held,
    their estimates not weighed in), with every round's cost, the whole budget and every label bought.
    """
    from ..engine.judged import CALIBRATION_SHARES, CalibrationRound, combine_rounds, keeping
    from ..inference.judgments import JudgmentSet

    # a Dask result holds only the labels of the queries it fetched: every label held is gathered here
    held: dict = {}
    _merge(held, judgments or {})
    bought: dict = {}
    spent, charged = 0.0, 0.0
    rounds, done = list[dict](), list[CalibrationRound]()
    for share in CALIBRATION_SHARES:
        part = share * budget
        fits: list = []
        try:  # round 1 on `probs`; a later one on the judges refitted to every label held, however few
            res = run(budget=part, judgments=held or None, judges=judges if rounds else None, min_labels=0,
                      on_fit=keeping(fits))
        except ValueError as exc:  # e.g. the share buys too little of this design: calibrate on what is held
            reason, now = str(exc), getattr(exc, "judgments", None) or {}
            new = {q: {d: g for d, g in docs.items() if d not in held.get(q, {})} for q, docs in now.items()}
            n_new = sum(len(docs) for docs in new.values())
            if n_new:  # failed after buying: the labels are kept and held, so the round is charged its budget
                _merge(bought, new)  # (a bound on what it spent: every design keeps it)
                _merge(held, new)
                charged += part
                reason += f" (after buying {n_new} labels, which are kept; the round is charged its budget, " \
                          f"{part:.4g})"
            rounds.append({"not_run": reason})
            break
        fit = res.trace.attrs.get("judges") or {}
        done.append(CalibrationRound(fits[0], float(res.cost_spent), _ROUND_WEIGHT, res.method))
        rounds.append(dict(method=res.method, cost=float(res.cost_spent), weight=_ROUND_WEIGHT,
                           planned_on_labels=int(fit.get("n_labels", 0)) if fit.get("calibrated") else 0,
                           estimate=[float(v) for v in fits[0].estimate.estimate],
                           standard_error=[float(v) for v in fits[0].estimate.standard_error]))
        spent += float(res.cost_spent)
        _merge(held, res.judgments)
        _merge(bought, res.judgments.bought)

    def finish(fit):  # the failed round's charge, then the rounds' costs (and the exact answer of an exact round)
        return combine_rounds(done, replace(fit, cost_spent=fit.cost_spent + charged), factor=1.0,
                              whole_budget=budget)

    last = run(budget=budget - spent - charged, judgments=held or None, judges=judges, min_labels=0, on_fit=finish)
    _merge(held, last.judgments)
    _merge(bought, last.judgments.bought)
    ok = [r for r in rounds if "not_run" not in r]
    info = dict(last.trace.attrs.get("judges") or {}, calibration_round_cost=spent + charged,
                round_estimates_used=False)
    if ok:
        info.update(calibration_round=ok[0]["method"], calibration_rounds=ok)
    if len(ok) < len(rounds):  # named as in memory: the first round, else its number
        info["calibration_round" if not ok else f"calibration_round_{len(rounds)}"] = \
            f"not run: {rounds[-1]['not_run']}"
    out = replace(last, judgments=JudgmentSet(held, bought=bought))
    out.trace.attrs["judges"] = info
    return out


#: The weight of a calibration round's estimate on a Dask pool: 0, the rounds' labels are only held.  A weight
#: must be fixed before the round draws, and a good one needs the variance the design predicts at the round's
#: budget and at the budget left, with the labels held, which the per-query table cannot give.  Weights that
#: assume the variance falls as 1 / budget (0.15, about 0.15, the rest) were measured on LLMJudge 2024 (one ranker,
#: DCG@10, best judge, 400 runs): no gain at 100 labels (MSE 0.851 against 0.847 held only) and 2.3 times the MSE of
#: no judge at 200, where doc_dyn's variance falls far faster than 1 / budget near a census.
_ROUND_WEIGHT = 0.0


def _merge(into: dict, judgments) -> None:
    for q, docs in judgments.items():
        into.setdefault(q, {}).update(docs)


def _held_iv(judgments) -> dict:
    """``judgments`` as ``{query: {doc: grade}}`` with plain keys and integer grades >= 0 (checked here: the
    calibration reads them before the run's own loading does)."""
    from ..inference.judgments import _copy

    return {} if judgments is None else _copy(judgments, "judgments")


def _held_labels(doc_ids: np.ndarray, qv: np.ndarray, held: dict, n_grades: int) -> np.ndarray:
    """The held grade of every fetched row (-1 where none); every held query and document must be there, every
    grade on the model's scale."""
    from .._validation import py_scalar

    labels = np.full(doc_ids.size, -1, dtype=np.int64)
    found = set(qv.tolist())
    for q, docs in held.items():
        if q not in found and docs:
            raise ValueError(f"`judgments` names query {q!r}, which is not in the pool.")
    index = {(q, py_scalar(d)): i for i, (q, d) in enumerate(zip(qv.tolist(), doc_ids.tolist()))}
    for q, docs in held.items():
        for d, g in docs.items():
            i = index.get((q, d))
            if i is None:
                raise ValueError(f"`judgments`: query {q!r} has no document {d!r}.")
            if g >= n_grades:
                raise ValueError(f"`judgments`: query {q!r}, document {d!r} has grade {g}, outside the relevance "
                                 f"model's 0..{n_grades - 1}.")
            labels[i] = g
    return labels


def held_qrels_judgments(path, pool, *, n_grades: int | None) -> dict:
    """A qrels file (``qid iter docid grade``) as ``{query: {doc: grade}}`` with the ids in the pool's types.

    Query and document ids are read as integers where the pool's column (or index) holds integers; an id that is
    not one raises, naming the file and the id.
    """
    from ..io.trec.qrels import read_qrels

    qrels = read_qrels(path, n_grades=n_grades)
    frame = pool.frame
    q_kind = (frame.index.dtype if pool.query_in_index else frame[pool.query].dtype).kind
    d_kind = frame[pool.document].dtype.kind

    def native(value: str, kind: str, what: str):
        if kind not in "iu":
            return value
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"`held_qrels` {path}: {what} id {value!r} is not an integer, as the pool's "
                             f"{what} ids are.") from None

    return {native(q, q_kind, "query"): {native(d, d_kind, "document"): int(g) for d, g in docs.items()}
            for q, docs in qrels.judgments.items()}
