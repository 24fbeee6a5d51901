"""How results present themselves: short reprs, summary tables, JSON-safe dicts, notebook HTML.

One set of helpers for the whole result family (:mod:`activerank.inference.results`); each result class
only says what its rows and headline are.
"""

from __future__ import annotations

import html
import math
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RUN_COLUMNS", "auto_note", "decimals", "fmt", "judges_note", "jsonable", "result_dict", "result_html",
           "run_facts", "summary_frame"]

#: the columns every summary table ends with, one value per run
RUN_COLUMNS = ("n_queries", "labels_bought", "cost_spent", "budget", "budget_unit", "method", "chosen_because",
               "judges", "few_labels", "range_adjusted")

# fields that are not plain data: the per-draw trace, the bootstrap distribution, the judgments (as records)
_NOT_PLAIN = ("trace", "bootstrap", "judgments", "win_probabilities")


def jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python numbers and lists, tuples as lists, dict keys as
    strings, and NaN or infinite floats as None -- what ``json.dumps`` writes and ``json.loads`` reads back
    unchanged."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"cannot write a {type(value).__name__} as JSON.")  # pragma: no cover - a new field type


def decimals(scale: float) -> int:
    """Decimal places that show ``scale`` (a standard error) to two significant digits."""
    if not math.isfinite(scale) or scale <= 0:
        return 3
    return int(min(8, max(0, 1 - math.floor(math.log10(scale)))))


def fmt(x: float, places: int, sign: bool = False) -> str:
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return f"{x:+.{places}f}" if sign else f"{x:.{places}f}"


def auto_note(result) -> str | None:
    """Why ``method="auto"`` chose the method that ran (``trace.attrs["auto"]``), or None."""
    auto = result.trace.attrs.get("auto") if result.trace is not None else None
    if not auto:
        return None
    variances = ", ".join(f"{m} {v:.3g}" for m, v in auto.get("predicted_variance", {}).items())
    return f"auto: {auto.get('reason', '')} (predicted variance {variances})"


def judges_note(result) -> str | None:
    """How external judges became the relevance model (``trace.attrs["judges"]``), or None."""
    info = result.trace.attrs.get("judges") if result.trace is not None else None
    if not info:
        return None
    names = ", ".join(info.get("judges", []))
    if not info.get("calibrated"):
        return f"judges {names} not used: {info.get('reason', '')}"
    n_rounds = len(info.get("calibration_rounds", ())) or 1
    rounds = "calibration round" if n_rounds == 1 else f"{n_rounds} calibration rounds"
    held = " (their labels held, their estimates not used)" if info.get("round_estimates_used") is False else ""
    first = (f"; {rounds} {info['calibration_round']} cost {info['calibration_round_cost']:.4g}{held}"
             if info.get("calibration_round_cost") else "")
    kept = ("" if info.get("uses_judges", True) else
            "; the labels held cover fewer than 3 queries, too few to compare the judges with the feature model "
            "across queries, so the design used it unchanged" if info.get("validated_by_query") is False else
            "; the feature model predicted the gain as well out of fold, so the design used it unchanged")
    return f"judges {names} calibrated on {info.get('n_labels')} human labels (C={info.get('C'):g}){first}{kept}"


def labels_bought(result) -> int | None:
    j = result.judgments
    return None if j is None else j.bought.n_labels


def run_facts(result) -> dict:
    """What the run did, whatever it estimated: :data:`RUN_COLUMNS` as a dict."""
    return dict(n_queries=result.n_queries, labels_bought=labels_bought(result), cost_spent=result.cost_spent,
                budget=result.budget, budget_unit=result.budget_unit, method=result.method,
                chosen_because=auto_note(result), judges=judges_note(result),
                few_labels=result.few_labels, range_adjusted=result.range_adjusted)


def summary_frame(result, rows: "pd.DataFrame", confidence_level: float, extra: dict, columns: bool) -> "pd.DataFrame":
    """``rows`` (one per estimated quantity) with the run's facts (:func:`run_facts`, then ``extra``) in
    ``attrs["run"]`` and, with ``columns``, as the last columns; ``attrs`` also holds ``confidence_level``
    and ``metric``."""
    run = {**run_facts(result), **extra}
    if columns:
        for name, value in run.items():
            rows[name] = [value] * len(rows)
    rows.attrs.update(confidence_level=confidence_level, metric=result.metric, run=run)
    return rows


def result_dict(result, derived: dict) -> dict:
    """Every plain field of ``result``, ``derived`` (intervals, probabilities), why ``"auto"`` chose the
    method, and the judgments as ``[query_id, doc_id, grade]`` records; JSON-safe (:func:`jsonable`)."""
    out: dict = {"type": type(result).__name__}
    for f in fields(result):
        if f.name not in _NOT_PLAIN:
            out[f.name] = getattr(result, f.name)
    out.update(derived)
    out["auto"] = result.trace.attrs.get("auto") if result.trace is not None else None
    out["judges"] = result.trace.attrs.get("judges") if result.trace is not None else None
    out["labels_bought"] = labels_bought(result)
    out["judgments"] = None if result.judgments is None else result.judgments.to_records()
    return jsonable(out)


def result_html(result, table: "pd.DataFrame") -> str:
    """Headline, summary table and the run's facts (interval kind, cost, the auto choice, the judgments)."""
    run = table.attrs.get("run", {})
    interval = getattr(result, "interval", None) or (
        result.ci + ("" if math.isinf(result.dof) else f", {result.dof:g} degrees of freedom"))
    notes = [f"interval: {interval}",
             f"{run.get('n_queries')} queries judged, cost {result.cost_spent:.4g} of {result.budget:g} "
             f"({result.budget_unit}), "
             f"{run.get('labels_bought')} labels bought, method {result.method}"]
    for key in ("chosen_because", "judges"):
        if run.get(key):
            notes.append(run[key])
    if result.few_labels:
        notes.append(f"few labels: the estimate rests on {result.n_queries} judged queries")
    if result.range_adjusted:
        notes.append(f"moved into the metric's range {tuple(result.metric_range)}: {result.unadjusted}")
    if result.judgments is not None:
        notes.append(f"judgments: {result.judgments!r} (pass result.judgments as judgments= to reuse them)")
    items = "".join(f"<li>{html.escape(str(n))}</li>" for n in notes)
    return (f"<div><p><strong>{html.escape(repr(result))}</strong></p>"
            f"{table.to_html(float_format=lambda v: f'{v:.4g}', na_rep='')}<ul>{items}</ul></div>")
