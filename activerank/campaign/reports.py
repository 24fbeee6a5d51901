"""What the campaign reports: import, export and status records, and how annotators' grades are combined."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import io as cio

__all__ = ["COMBINE_RULES", "MAX_STORED_REJECTIONS", "SCOPES", "CampaignStatus", "ExportReport", "ImportReport", "Rejection",
           "combine_grades"]

COMBINE_RULES = cio.COMBINE_RULES
MAX_STORED_REJECTIONS = 1000  # per imported file; further rejected lines are counted, not stored
SCOPES = ("tasks", "pool")  # what an import accepts and what judgments() returns: the tasks, or any pool document


# --------------------------------------------------------------------------- combination rule


def combine_grades(grades, rule: str = "mean_gain") -> int:
    """Combine several annotators' grades for one query-document pair.

    Parameters
    ----------
    grades : sequence of int
        One grade per annotator (each annotator's latest judgment).
    rule : {"mean_gain", "majority"}
        ``"mean_gain"``: average the DCG gains ``2**g - 1`` and return the
        grade whose gain is nearest to that mean (ties to the lower grade) --
        averaging on the gain scale, as Schnabel et al. (2016, §3.7) do for
        multiple judgments, then rounding back to the grade scale because the
        estimator works with integer grades.  ``"majority"``: the most
        frequent grade, ties to the lower grade.  A single grade is returned
        unchanged by both rules.

    Returns
    -------
    int

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.

    Examples
    --------
    >>> combine_grades([0, 2]), combine_grades([2, 2, 1]), combine_grades([0, 2, 2], "majority")
    (1, 2, 2)
    """
    g = np.asarray(grades, dtype=np.int64)
    if g.size == 0:
        raise ValueError("`grades` must not be empty.")
    if g.size == 1:
        return int(g[0])
    if rule == "mean_gain":
        mean = float(np.mean(np.exp2(g) - 1.0))
        candidates = np.arange(int(g.max()) + 1)
        dist = np.abs((np.exp2(candidates) - 1.0) - mean)
        return int(candidates[np.argmin(dist)])  # argmin takes the first (lower) on ties
    if rule == "majority":
        values, counts = np.unique(g, return_counts=True)
        return int(values[np.argmax(counts)])
    raise ValueError(f"`rule` must be one of {list(COMBINE_RULES)}; got {rule!r}.")


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class Rejection:
    """A judgment-file line that was not stored, with the reason."""

    line: int
    message: str


@dataclass(frozen=True)
class ImportReport:
    """Outcome of importing one judgment file.

    Counts cover the whole file (including lines stored by an earlier,
    interrupted import of the same file); ``accepted_now`` counts what this
    call stored.

    Attributes
    ----------
    path, sha256, format : str
    batch_id : int
    n_rows : int
        Data lines in the file.
    accepted, duplicates, unanswered, accepted_now : int
        ``duplicates`` are lines repeating an annotator's current grade for
        the pair (not stored again); ``unanswered`` are lines with an empty
        grade (a task row the annotator left blank: skipped, not an error).
    rejected : tuple of Rejection
        The first :data:`MAX_STORED_REJECTIONS` rejected lines (in line order).
    n_rejected : int
        All rejected lines, including those beyond the cap (counted, not stored).
    already_imported : bool
        The same content had been imported completely before; nothing was done.
    resumed : bool
        An interrupted import of the same content was continued.
    notes : tuple of str
    """

    path: str
    sha256: str
    format: str
    batch_id: int
    n_rows: int
    accepted: int
    duplicates: int
    unanswered: int
    accepted_now: int
    rejected: tuple
    already_imported: bool
    resumed: bool
    notes: tuple = ()
    n_rejected: int = 0

    def messages(self) -> list[str]:
        """``"<file>: line <n>: <reason>"`` for every stored rejected line (and a count of the rest)."""
        out = [f"{self.path}: line {r.line}: {r.message}" for r in self.rejected]
        more = self.n_rejected - len(self.rejected)
        if more > 0:
            out.append(f"{self.path}: {more} more rejected lines not listed (only the first "
                       f"{len(self.rejected)} rejections are kept)")
        return out


@dataclass(frozen=True)
class ExportReport:
    """Outcome of :meth:`Campaign.export_tasks`."""

    path: str
    format: str
    n_rows: int
    n_queries: int
    query_ids: tuple
    cost: float



@dataclass(frozen=True)
class CampaignStatus:
    """Progress of a campaign.

    Costs are in the budget's unit (mean query cost of the pool = 1).

    Attributes
    ----------
    budget : float
    cost_planned : float
        Cost of every query the draw sequence asks for (``<= budget``; cost
        sums exceeding the budget only by floating-point rounding, relative
        ``1e-9``, are reported as the budget).
    cost_spent : float
        Cost of the planned queries whose documents are all judged.
    cost_in_progress : float
        Cost of planned queries with some but not all documents judged.
    budget_left : float
        ``budget - cost_spent - cost_in_progress``.
    n_draws : int
    queries_done, queries_partial, queries_pending : tuple of str
        Planned query ids, in draw order.
    n_documents_needed, n_documents_judged : int
        Documents of planned queries to judge / judged so far.
    n_judgments : int
        Stored judgments (all annotators, all documents).
    n_conflicts : int
        Pairs whose annotators disagree (combined by ``combine``).
    draws_usable : int
        Length of the draw-sequence prefix whose queries are all judged:
        what :meth:`Campaign.estimate` uses.
    blocking_query : str or None
        The first drawn query that is not fully judged (ends the prefix).
    n_imports, n_exports : int
    combine : str
    unit : {"query", "document", "prefix"}
        What the campaign samples.  A prefix campaign counts ``n_draws`` as the queries of its priority
        order the budget has reached (the queries ``queries_*`` list), ``n_documents_needed`` as the
        documents its walks have judged plus one per query asked for now, ``cost_spent`` as the cost of the
        judged documents (the cut query's included), ``cost_planned`` as that plus the documents asked for
        now (both at most ``budget``), and ``draws_usable`` as the queries before the cut once no walk asks
        for more (a store of the former Poisson design: the sampled queries and their expected cost).  Document-level campaigns count tasks in
        documents: ``n_draws`` = sampled documents, ``cost_spent`` = cost of
        those judged, ``cost_in_progress`` = 0, ``cost_planned`` = realized
        cost of the sample (may exceed ``budget``: Poisson sampling spends it
        in expectation), ``draws_usable`` = ``n_draws`` once all are judged,
        else the judged head of a budgeted sample's draw order (0 below 2;
        a Poisson sample's estimate needs the whole sample).
    """

    budget: float
    cost_planned: float
    cost_spent: float
    cost_in_progress: float
    budget_left: float
    n_draws: int
    queries_done: tuple
    queries_partial: tuple
    queries_pending: tuple
    n_documents_needed: int
    n_documents_judged: int
    n_judgments: int
    n_conflicts: int
    draws_usable: int
    blocking_query: str | None
    n_imports: int
    n_exports: int
    combine: str
    unit: str = "query"

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

