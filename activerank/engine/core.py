"""The engine: one path from a design to draws to labels to an estimate.

Shaped like scikit-learn's ``BaseSearchCV.fit``: :func:`run` owns the
labeling step, failure handling and result assembly; a *schedule*
(:mod:`activerank.engine.schedules`) only decides how a run proceeds, by
implementing ``_run(ctx)``.  The fixed-budget schedule runs any design kind
through its protocol (:mod:`activerank.design.kinds.base`: plan, draw, labels
needed, estimate) with :meth:`RunContext.label_request`, the one labeling step
(:class:`~activerank.engine.labeling.Judgments`), asking for every batch the
design needs at once; the target-precision and adaptive schedules draw
queries with replacement themselves (``ctx.draw``, ``ctx.label``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .._validation import ci_iv
from ..design.kinds.base import DesignFit, LabelRequest
from ..design.kinds.query import clamp_cost
from ..design.sampling import DrawPlan, draw_budgeted
from ..labelers import LabelingError
from .labeling import Judgments

__all__ = ["Draws", "RunContext", "Schedule", "bootstrap_generator", "check_ci", "estimate_from_plan",
           "estimate_sample", "run"]

#: ``SeedSequence`` spawn key of the bootstrap's generator (any fixed value: it only has to differ from the
#: draws' stream).
_BOOTSTRAP_KEY = 0xB007


@dataclass(frozen=True, eq=False)
class Draws:
    """What a schedule did: the draws, their weights and what they cost.

    Attributes
    ----------
    queries : ndarray of shape (n,)
        Pool position of every draw, in order (with repetitions).
    new : ndarray of shape (n,), bool
        The draw bought the query's labels.
    charged : ndarray of shape (n,)
        Cost charged for the draw.
    q : ndarray of shape (n,)
        Sampling probability of the draw under its batch's distribution.
    weights : ndarray of shape (n,)
        Importance weights (``p / q``, or multiple-importance weights).
    budget : float
    cost_spent : float
    stop_reason : str or None
    batch : ndarray of shape (n,) or None
    q_mixture : ndarray of shape (n,) or None
    sampled : ndarray of shape (n,), bool, or None
        False for draws that fall in a census stratum (exactly known queries).
    census : ndarray of int
        Pool positions of queries whose contribution is exact (judged in full).
    anytime : dict or None
        Confidence-sequence state of a target-precision run.
    attrs : dict
        Extra tables for ``trace.attrs``.
    """

    queries: np.ndarray
    new: np.ndarray
    charged: np.ndarray
    q: np.ndarray
    weights: np.ndarray
    budget: float
    cost_spent: float
    stop_reason: str | None = None
    batch: np.ndarray | None = None
    q_mixture: np.ndarray | None = None
    sampled: np.ndarray | None = None
    census: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    anytime: dict | None = None
    attrs: dict = field(default_factory=dict)

    @property
    def n_draws(self) -> int:
        return self.queries.size

    @classmethod
    def from_plan(cls, plan: DrawPlan, design, stop: int | None = None) -> "Draws":
        """The first ``stop`` draws of a single-distribution plan, weighted ``p / q``; the design's
        determined queries (contrasts exactly 0, never drawn) are the census stratum."""
        stop = plan.n_draws if stop is None else stop
        x = plan.queries[:stop]
        charged = plan.charged[:stop]
        return cls(x, plan.new[:stop], charged, design.q[x], design.p[x] / design.q[x], plan.budget,
                   clamp_cost(float(charged.sum()), plan.budget), plan.stop_reason, census=design.census)

    @classmethod
    def census_only(cls, design, budget: float) -> "Draws":
        """No draw at all: every query with ``p > 0`` is determined (its contrasts are exactly 0)."""
        empty = np.zeros(0, dtype=np.int64)
        return cls(empty, np.zeros(0, dtype=bool), np.zeros(0), np.zeros(0), np.zeros(0), float(budget), 0.0,
                   "all_judged", census=design.census)


class RunContext:
    """What a schedule may use: the design, the pool, the draw loop and the labeling step."""

    def __init__(self, design, pool, labeler, judgments: Judgments, *, ci: str = "t", ci_rng=None):
        self.design = design
        self.ci = ci
        #: the bootstrap's own generator (``ci="bootstrap"``): never the draws'
        self.ci_rng = ci_rng
        self.pool = pool
        self.labeler = labeler
        self.judgments = judgments

    def draw(self, q, costs, budget, rng, *, max_draws=None) -> DrawPlan:
        """The budgeted i.i.d. draw loop (Algorithm 1 of Sawade et al. 2012)."""
        return draw_budgeted(q, costs, budget, rng, max_draws=max_draws)

    def label(self, x: int, *, where: str = "", trace=None) -> None:
        """Judge the documents of pool query ``x`` that are not judged yet."""
        self.judgments.ask(self.labeler, int(x), self.design.documents(int(x)), where=where, trace=trace)

    def label_request(self, request: LabelRequest, *, held: np.ndarray) -> None:
        """Judge a design's batch of documents (one labeler call when the labeler takes batches).

        ``held`` marks the rows judged before the run: a failure's trace lists the documents bought since.
        """
        self.judgments.ask_batch(self.labeler, request, trace=lambda: bought_trace(self.pool, self.judgments, held))
        if (self.judgments.labels[request.rows] < 0).any():  # pragma: no cover - ask_batch stores or raises
            raise RuntimeError("the labeling step left requested documents unjudged.")

    def values(self, queries) -> np.ndarray:
        """Metric values of every ranking on fully judged ``queries``, shape (n_queries, n_systems)."""
        return self.design.target.values(self.judgments.labels, queries, self.design.n_grades)


def bought_trace(pool, judgments: Judgments, held: np.ndarray):
    """The documents judged in this run so far: ``query, query_id, doc_row, doc_id, grade, new``."""
    import pandas as pd

    rows = np.flatnonzero((judgments.labels >= 0) & ~held)
    x = np.searchsorted(pool.offsets, rows, side="right") - 1
    return pd.DataFrame({"query": x, "query_id": np.asarray(pool.query_ids)[x], "doc_row": rows,
                         "doc_id": pool.doc_keys(rows), "grade": judgments.labels[rows],
                         "new": np.ones(rows.size, dtype=bool)})


def bootstrap_generator(rng) -> np.random.Generator:
    """An independent generator for the bootstrap, derived from the run's ``rng`` without touching it.

    Its seed is the next 256 bits the run's generator *would* produce, read from a copy and hashed by a
    :class:`numpy.random.SeedSequence` with a fixed spawn key: the run's draws (and the caller's generator)
    are unchanged, a seeded run resamples identically every time, and the bootstrap stream is statistically
    independent of the draws'.  ``None`` (no generator): fresh OS entropy.
    """
    if not isinstance(rng, np.random.Generator):
        return np.random.default_rng()
    words = copy.deepcopy(rng.bit_generator).random_raw(4)
    return np.random.default_rng(np.random.SeedSequence([int(v) for v in words], spawn_key=(_BOOTSTRAP_KEY,)))


def check_ci(ci: str, design, schedule) -> None:
    """Refuse, before any labeling, an interval the run cannot give (the design kind's rule; a
    target-precision run has its confidence sequence)."""
    if ci == "bootstrap" and getattr(schedule, "name", "") == "sequential":
        raise ValueError("`ci`='bootstrap' (a studentized bootstrap over the distinct sampled queries) does not "
                         "apply to a target-precision run, whose interval is an anytime-valid confidence sequence; "
                         "leave `ci` at its default.")
    design.method_spec.kind.check_ci(ci, design)


class Schedule:
    """How draws proceed (fixed budget, target precision, adaptive batches).

    Subclasses implement ``_run(ctx) -> Draws`` and may set ``method_label``
    (what results report as ``method``).
    """

    name = "base"

    def _run(self, ctx: RunContext) -> Draws | DesignFit:  # pragma: no cover - abstract
        raise NotImplementedError

    def method_label(self, design) -> str:
        return design.method


def run(design, pool, labeler, schedule: Schedule, *, judgments: Judgments | None = None, ci: str = "auto"):
    """Run ``schedule`` on ``design``: draw, label, estimate.

    Parameters
    ----------
    design : Design
    pool : Pool
        The standardized pool.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``.
    schedule : Schedule
    judgments : Judgments, optional
        Grades already bought (resumed runs, reuse); never asked for again.
    ci : {"auto", "t", "t_draws", "bootstrap", "normal"}, default "auto"
        Interval of a fixed-budget or adaptive run (``ci_iv``; ``"auto"`` is ``"t_draws"``).
        ``"bootstrap"`` resamples with a generator derived from ``schedule.rng`` without touching it
        (:func:`~activerank.engine.core.bootstrap_generator`): the draws and the point estimate are
        those of any other ``ci``, and a seeded run is reproducible.

    Returns
    -------
    EstimateResult, ComparisonResult, MultiComparisonResult or SystemRankingResult
        (the target-precision variants for a sequential schedule).

    Raises
    ------
    LabelingError
        The labeler failed; carries every judgment acquired so far.  Any other
        failure after labels were bought (e.g. a warning turned into an error)
        gets them as its ``judgments`` attribute too.
    """
    from .assemble import assemble, assemble_fit

    ci = ci_iv(ci)
    check_ci(ci, design, schedule)
    # derived before the first draw, from a copy: the schedule's generator is not advanced
    ci_rng = bootstrap_generator(getattr(schedule, "rng", None)) if ci == "bootstrap" else None
    store = Judgments(pool, design.n_grades) if judgments is None else judgments
    ctx = RunContext(design, pool, labeler, store, ci=ci, ci_rng=ci_rng)
    try:
        out = schedule._run(ctx)
        if isinstance(out, DesignFit):
            return assemble_fit(ctx, out, method=schedule.method_label(design))
        return assemble(ctx, out, method=schedule.method_label(design))
    except LabelingError:
        raise
    except BaseException as exc:
        # the judgments are paid for: hand them back whatever went wrong
        if not hasattr(exc, "judgments"):
            try:
                setattr(exc, "judgments", store.as_dict())
            except AttributeError:  # pragma: no cover - exceptions without a __dict__
                pass
        raise


def estimate_from_plan(design, pool, plan: DrawPlan, labels: np.ndarray, *, ci: str = "auto", rng=None):
    """The fixed-budget estimate of a draw plan whose drawn queries are judged in ``labels``.

    Used by the campaign store, whose labels come from files rather than a labeler.

    Parameters
    ----------
    design : Design
    pool : Pool
    plan : DrawPlan
        A prefix of the campaign's draw sequence.
    labels : ndarray of shape (n_docs,)
        Grades of the judged rows (-1 elsewhere).
    ci : {"auto", "t", "t_draws", "bootstrap", "normal"}, default "auto"
        As in :func:`run`.
    rng : None, int or numpy.random.Generator
        The bootstrap's randomness (``ci="bootstrap"`` only).
    """
    from ..design.kinds.query import QueryPlan

    return estimate_sample(design, pool, QueryPlan(design.q, design.costs.cost, plan.budget), plan, labels, ci=ci,
                           rng=rng)


def estimate_sample(design, pool, plan, sample, labels: np.ndarray, *, held: np.ndarray | None = None,
                    ci: str = "auto", rng=None):
    """The result of a design kind's judged sample, without a labeler (a campaign's stored sample).

    Parameters
    ----------
    design : Design
    pool : Pool
    plan, sample : object
        What the design kind's ``plan`` and ``draw`` returned (:mod:`activerank.design.kinds.base`).
    labels : ndarray of shape (n_docs,)
        Grades of the judged rows (-1 elsewhere).
    held : ndarray of shape (n_docs,), bool, optional
        Rows whose grades were held before the run (not paid for); default none.
    ci : {"auto", "t", "t_draws", "bootstrap", "normal"}, default "auto"
    rng : None, int or numpy.random.Generator
        The bootstrap's randomness (``ci="bootstrap"`` only).
    """
    from .assemble import assemble_fit

    ci = ci_iv(ci)
    check_ci(ci, design, None)
    store = Judgments(pool, design.n_grades)
    store.labels[:] = labels
    held = np.zeros(pool.n_docs, dtype=bool) if held is None else held
    fit = design.method_spec.kind.estimate(design, plan, sample, store.labels, held=held, ci=ci,
                                           ci_rng=np.random.default_rng(rng) if ci == "bootstrap" else None)
    return assemble_fit(RunContext(design, pool, None, store, ci=ci), fit, method=design.method)
