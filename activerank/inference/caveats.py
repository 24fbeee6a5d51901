"""What a result warns about: few labels, and the name of the interval it actually used.

Every warning of a run names the interval the result reports (Student-t with
its degrees of freedom, normal, the studentized bootstrap, or a confidence
sequence) and fires only when its condition holds on the exact numbers, not
on rounding noise.
"""

from __future__ import annotations

import math
import warnings

__all__ = ["MIN_LABELED_QUERIES", "FewLabelsWarning", "interval_name", "warn_few_labels"]

#: Below this many judged queries (outside those known exactly) an estimate rests on very few labels: its
#: standard error comes from a handful of values, and the interval's measured coverage falls off (at about
#: 5 distinct queries with the model's prior; docs/intervals.md).
MIN_LABELED_QUERIES = 5


class FewLabelsWarning(UserWarning):
    """The estimate rests on very few labels: its standard error and interval are not reliable."""


def interval_name(ci: str, dof: float, interval: str | None = None) -> str:
    """What a result's ``confidence_interval()`` is, in words (``interval``: a confidence sequence's own
    description, which wins).

    Examples
    --------
    >>> interval_name("t", 4.0), interval_name("normal", float("inf"))
    ('Student-t interval with 4 degrees of freedom', 'normal interval')
    """
    if interval is not None:
        return interval
    if ci == "bootstrap":
        return "studentized bootstrap interval"
    if math.isinf(dof):
        return "normal interval"
    unit = "degree" if dof == 1 else "degrees"
    return f"Student-t interval with {dof:g} {unit} of freedom"


def warn_few_labels(n_queries: int, n_labels: int | None, interval: str, stacklevel: int | None = None) -> None:
    """Warn that an estimate rests on ``n_queries`` judged queries (fewer than :data:`MIN_LABELED_QUERIES`);
    the warning names the user's call."""
    from .snis import _user_stacklevel

    labels = "" if n_labels is None else f" ({n_labels} labels)"
    warnings.warn(
        f"the estimate rests on {n_queries} judged quer{'y' if n_queries == 1 else 'ies'}{labels}, fewer than "
        f"{MIN_LABELED_QUERIES}: its standard error comes from a handful of values and the {interval} may "
        "under-cover (result.few_labels is True). Raise the budget; pass judgments=result.judgments to reuse "
        "the labels already bought.", FewLabelsWarning,
        stacklevel=_user_stacklevel() if stacklevel is None else stacklevel)
