"""The engine: one path from a design to draws to labels to an estimate.

Shaped like scikit-learn's ``BaseSearchCV.fit``: :func:`run` owns the
labeling step, failure handling and result assembly; a *schedule*
(:mod:`activerank.engine.schedules`) only decides how draws proceed, by
implementing ``_run(ctx)`` with the two services of :class:`RunContext`:
``ctx.draw(...)`` (the one budgeted draw loop,
:func:`activerank.design.sampling.draw_budgeted`) and ``ctx.label(x)`` (the one
labeling step, :class:`~activerank.engine.labeling.Judgments`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import ci_iv
from ..design.sampling import DrawPlan, draw_budgeted
from ..labelers import LabelingError
from .labeling import Judgments

__all__ = ["Draws", "RunContext", "Schedule", "estimate_from_plan", "run"]


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
    estimate : Estimate or None
        Set by document-level schedules, which estimate from their (query,
        document) sample themselves; ``queries`` then has one entry per
        judged document.
    trace : pandas.DataFrame or None
        The trace of a document-level schedule (one row per judged document).
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
    estimate: object = None
    trace: object = None

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


def clamp_cost(cost: float, budget: float) -> float:
    """A cost sum, without reporting rounding noise (1e-12 relative) as overspending."""
    return budget if budget < cost <= budget * (1 + 1e-9) else cost


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

    def values(self, queries) -> np.ndarray:
        """Metric values of every ranking on fully judged ``queries``, shape (n_queries, n_systems)."""
        return self.design.target.values(self.judgments.labels, queries, self.design.n_grades)


class Schedule:
    """How draws proceed (fixed budget, target precision, adaptive batches).

    Subclasses implement ``_run(ctx) -> Draws`` and may set ``method_label``
    (what results report as ``method``).
    """

    name = "base"

    def _run(self, ctx: RunContext) -> Draws:  # pragma: no cover - abstract
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
        (:func:`~activerank.engine.small_sample.bootstrap_generator`): the draws and the point estimate are
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
    from .assemble import assemble
    from .small_sample import bootstrap_generator, check_ci

    ci = ci_iv(ci)
    check_ci(ci, design, schedule)
    # derived before the first draw, from a copy: the schedule's generator is not advanced
    ci_rng = bootstrap_generator(getattr(schedule, "rng", None)) if ci == "bootstrap" else None
    store = Judgments(pool, design.n_grades) if judgments is None else judgments
    ctx = RunContext(design, pool, labeler, store, ci=ci, ci_rng=ci_rng)
    try:
        draws = schedule._run(ctx)
        return assemble(ctx, draws, method=schedule.method_label(design))
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
    from .assemble import assemble
    from .small_sample import check_ci

    ci = ci_iv(ci)
    check_ci(ci, design, None)
    store = Judgments(pool, design.n_grades)
    store.labels[:] = labels
    ci_rng = np.random.default_rng(rng) if ci == "bootstrap" else None
    return assemble(RunContext(design, pool, None, store, ci=ci, ci_rng=ci_rng), Draws.from_plan(plan, design),
                    method=design.method)
