"""Planning before any label is bought: each design's predicted precision at a budget, and the budget a
target precision needs.

Every design kind predicts the variance of its estimate at a budget under the relevance model
(:meth:`~activerank.design.kinds.base.DesignKind.predicted_variance`, the rule ``method="auto"`` chooses
by).  :func:`plan_designs` turns that into a predicted standard error and normal-interval half-width at
the budget, and, for a target half-width, the smallest budget whose predicted half-width reaches it
(a geometric bracket and bisection on the budget: a predicted variance falls as the budget grows).  The
predictions are as good as the model's calibration: they are the model's expectation, not a bound
(``docs/planning.md``).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

from scipy.stats import norm

__all__ = ["BudgetPlan", "budget_for_half_width", "plan_designs"]

#: budgets tried beyond the pool's whole cost, as a multiple of it, before a target is called out of reach
#: (designs with replacement keep some variance at any budget)
_REACH = 1000.0
#: relative width of the final budget bracket
_RTOL = 1e-3


def _variance(design, budget: float, under=None) -> float:
    kind = design.method_spec.kind
    if under is None:  # a plug-in kind written before ``under`` existed still plans
        return float(kind.predicted_variance(design, float(budget)))
    params = inspect.signature(kind.predicted_variance).parameters
    if "under" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise NotImplementedError(f"{design.method} predicts its variance under its own model only")
    return float(kind.predicted_variance(design, float(budget), under=under))


def budget_for_half_width(design, half_width: float, *, confidence_level: float = 0.95,
                          start: float = 1.0, under=None) -> float:
    """The smallest budget (to a relative ``1e-3``) whose predicted normal-interval half-width is at most
    ``half_width``; ``inf`` when not even a thousand times the pool's cost reaches it.

    ``start`` is the first budget tried (e.g. the budget the user has in mind); ``under`` as in
    :meth:`~activerank.design.kinds.base.DesignKind.predicted_variance`.
    """
    goal = (half_width / norm.ppf(0.5 + confidence_level / 2.0)) ** 2

    def var(b):
        return _variance(design, b, under)

    cap = _REACH * max(float(design.n_queries), 1.0)
    b = float(start)
    if var(b) <= goal:                 # reached: halve down to a budget that does not reach it
        hi, lo = b, b / 2.0
        while lo > 1e-6 * cap and var(lo) <= goal:
            hi, lo = lo, lo / 2.0
    else:                              # not reached: double up to a budget that does
        lo, hi = b, 2.0 * b
        while var(hi) > goal:
            if hi > cap:
                return math.inf
            lo, hi = hi, 2.0 * hi
    while hi / lo > 1.0 + _RTOL:       # bisection in log budget; ``hi`` always reaches the goal
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if var(mid) <= goal else (mid, hi)
    return hi


@dataclass(frozen=True)
class BudgetPlan:
    """Each design's predicted precision at a budget, and the budget a target half-width needs.

    Attributes
    ----------
    metric, target : str
        The metric and what is estimated (``"mean"``: one ranker; ``"difference"``: two).
    confidence_level : float
    budget : float or None
        The budget planned for, in units of the pool's mean query cost.
    target_half_width : float or None
    methods : tuple of str
    predicted_se, half_width, budget_needed : tuple of float
        Per method: the predicted standard error and normal-interval half-width at ``budget`` (NaN without
        a budget), and the smallest budget whose predicted half-width is ``target_half_width`` (NaN without
        a target, ``inf`` out of reach).
    notes : tuple of str
        Per method, why it has no prediction (empty when it has one).
    auto : str or None
        The method ``method="auto"`` runs at ``budget``, and ``auto_reason`` why.
    judges : tuple of str
        The external judges the designs are planned with (empty without judges; the predictions above are
        then those of the run with the judges calibrated on the labels held).
    se_without_judges, budget_equivalent_without_judges : tuple of float
        Per method, with judges: the predicted standard error at ``budget`` of the same method planned on
        ``probs`` alone, and the budget it needs for the half-width the judged design has at ``budget`` --
        both predicted under the calibrated model, so the two runs are compared under one model
        (``savings``).  Empty without judges; NaN where the kind cannot predict under another model or
        without a budget (``inf``: the target is out of reach without the judges).
    """

    metric: str
    target: str
    confidence_level: float
    budget: float | None
    target_half_width: float | None
    methods: tuple
    predicted_se: tuple
    half_width: tuple
    budget_needed: tuple
    notes: tuple
    auto: str | None
    auto_reason: str | None
    judges: tuple = ()
    se_without_judges: tuple = ()
    budget_equivalent_without_judges: tuple = ()

    @property
    def savings(self) -> tuple:
        """Per method, the share of the labels the judges are predicted to save at ``budget``:
        ``1 - budget / budget_equivalent_without_judges`` (NaN without judges, and where the budget without them
        is not known or infinite)."""
        if not self.judges or self.budget is None:
            return tuple(math.nan for _ in self.methods)
        return tuple(1.0 - self.budget / b if 0 < b < math.inf else math.nan
                     for b in self.budget_equivalent_without_judges)

    def summary(self):
        """One row per method: predicted SE, half-width, budget needed, note (a pandas DataFrame); with judges
        also the same method's SE without them, the budget it needs to match, and the predicted savings."""
        import pandas as pd

        cols = {"method": list(self.methods), "predicted_se": list(self.predicted_se),
                "half_width": list(self.half_width), "budget_needed": list(self.budget_needed)}
        if self.judges:
            cols.update(se_without_judges=list(self.se_without_judges),
                        budget_equivalent_without_judges=list(self.budget_equivalent_without_judges),
                        savings=list(self.savings))
        table = pd.DataFrame({**cols, "note": list(self.notes)})
        table.attrs.update(metric=self.metric, target=self.target, budget=self.budget,
                           target_half_width=self.target_half_width, confidence_level=self.confidence_level,
                           auto=self.auto, auto_reason=self.auto_reason, judges=list(self.judges))
        return table

    def to_dict(self) -> dict:
        """Every field, JSON-safe (NaN and infinities as None)."""
        def plain(v):
            if isinstance(v, tuple):
                return [plain(x) for x in v]
            if isinstance(v, float):
                return v if math.isfinite(v) else None
            return v

        return {"type": "BudgetPlan", **{k: plain(v) for k, v in self.__dict__.items()},
                "savings": plain(self.savings)}

    def __repr__(self) -> str:
        at = "" if self.budget is None else f" at budget {self.budget:g}"
        best = "" if self.auto is None else f", auto runs {self.auto}"
        judged = "" if not self.judges else f", with judges {', '.join(self.judges)}"
        return f"BudgetPlan({self.metric} {self.target}{at}: {len(self.methods)} designs{best}{judged})"

    def _repr_html_(self) -> str:
        import html

        return (f"<div><p><strong>{html.escape(repr(self))}</strong></p>"
                f"{self.summary().to_html(float_format=lambda v: f'{v:.4g}', na_rep='')}"
                f"<p>{html.escape(self.auto_reason or '')}</p></div>")


def plan_designs(designs: dict, *, metric: str, target: str, budget: float | None,
                 target_half_width: float | None, confidence_level: float, auto=None, unjudged: dict | None = None,
                 judges: tuple = ()) -> BudgetPlan:
    """A :class:`BudgetPlan` of ``designs`` (``{method: Design, or the error that prevented it}``).

    ``auto`` is :func:`~activerank.design.auto.choose_method`'s choice at ``budget``, or None.  With
    ``judges``, ``designs`` are planned on the calibrated model and ``unjudged`` holds the same methods on
    ``probs`` alone, predicted under the calibrated model for the comparison.
    """
    z = norm.ppf(0.5 + confidence_level / 2.0)
    se, hw, need, notes = [], [], [], []
    for method, design in designs.items():
        s = n = math.nan
        note = str(design) if isinstance(design, Exception) else ""
        if not note:
            try:
                if budget is not None:
                    s = math.sqrt(max(_variance(design, budget), 0.0))
                if target_half_width is not None:
                    n = budget_for_half_width(design, target_half_width, confidence_level=confidence_level,
                                              start=budget or 1.0)
            except NotImplementedError:
                note = f"{method} does not predict its variance"
            except ValueError as exc:  # e.g. the budget buys fewer than 2 documents in expectation
                note = str(exc)
        se.append(s)
        hw.append(z * s)
        need.append(n)
        notes.append(note)
    without = _without_judges(designs, unjudged, budget, hw, confidence_level) if judges else ((), ())
    return BudgetPlan(metric=metric, target=target, confidence_level=float(confidence_level),
                      budget=None if budget is None else float(budget),
                      target_half_width=None if target_half_width is None else float(target_half_width),
                      methods=tuple(designs), predicted_se=tuple(se), half_width=tuple(hw),
                      budget_needed=tuple(float(n) for n in need), notes=tuple(notes),
                      auto=None if auto is None else auto.method, auto_reason=None if auto is None else auto.reason,
                      judges=tuple(judges), se_without_judges=without[0],
                      budget_equivalent_without_judges=without[1])


def _without_judges(designs: dict, unjudged: dict | None, budget, half_widths, confidence_level) -> tuple:
    """Per method: the SE at ``budget`` of the design without judges, and the budget it needs for the judged
    design's half-width there, both under the judged design's (calibrated) model."""
    se, need = [], []
    for (method, judged), hw in zip(designs.items(), half_widths):
        raw = (unjudged or {}).get(method)
        s = n = math.nan
        if budget is not None and not isinstance(judged, Exception) and raw is not None \
                and not isinstance(raw, Exception):
            try:
                s = math.sqrt(max(_variance(raw, budget, judged), 0.0))
                if hw > 0:
                    n = budget_for_half_width(raw, hw, confidence_level=confidence_level, start=budget, under=judged)
            except (NotImplementedError, ValueError):
                pass
        se.append(s)
        need.append(float(n))
    return tuple(se), tuple(need)
