"""The protocol every design kind implements: plan, draw, labels needed, estimate, predicted variance.

Modelled on R's ``survey`` package: a design object carries what its estimator
needs -- which units were sampled, their inclusion (or selection)
probabilities, and how its variance is estimated -- and whatever runs a
design only moves plain data between these steps:

1. :meth:`DesignKind.plan` -- everything fixed before a label is bought, for
   the budget (inclusion probabilities, a sampling distribution, an
   allocation).  Documents already judged cost nothing.
2. :meth:`DesignKind.draw` -- the random sample (plain arrays: what a
   campaign stores).
3. :meth:`DesignKind.labels_needed` -- the documents to judge next, as one
   batch, given the labels known so far; an empty request means the sample
   is complete.  Most designs need one batch; a sequential one (``prefix``)
   needs one per step.
4. :meth:`DesignKind.estimate` -- the estimate, its covariance and degrees of
   freedom, and the trace, from the judged sample (:class:`DesignFit`).
5. :meth:`DesignKind.predicted_variance` -- the relevance model's prediction
   of the estimate's variance at a budget, before any label (``method="auto"``
   and planning).

Two more steps hand the sample to the layers that keep or move it:
:meth:`DesignKind.query_draws` lists the queries it touches (what a Dask pool
fetches, what a campaign's draw table records), and
:meth:`DesignKind.to_arrays` / :meth:`DesignKind.from_arrays` turn plan and
sample into named arrays and back (what a campaign stores).

The engine (:mod:`activerank.engine`), labeling campaigns
(:mod:`activerank.campaign`) and Dask pools (:mod:`activerank.distributed`) call
only these methods, so a new design is one module implementing them plus one
:func:`~activerank.design.methods.register_method` call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...inference.estimators import Estimate

__all__ = ["DesignFit", "DesignKind", "LabelRequest", "NO_LABELS"]


@dataclass(frozen=True, eq=False)
class LabelRequest:
    """Documents to judge, grouped by query in the order they are shown.

    Attributes
    ----------
    queries : ndarray of shape (n,), int64
        Pool position of the query of every requested row.
    rows : ndarray of shape (n,), int64
        Global document row of every request; rows of one query are contiguous.
    """

    queries: np.ndarray
    rows: np.ndarray

    def __len__(self) -> int:
        return int(self.rows.size)

    def by_query(self) -> list:
        """``[(query, rows), ...]``: one entry per query, in request order."""
        if self.rows.size == 0:
            return []
        cuts = np.flatnonzero(np.diff(self.queries)) + 1
        return [(int(q[0]), r) for q, r in zip(np.split(self.queries, cuts), np.split(self.rows, cuts))]

    @classmethod
    def of(cls, queries, rows, labels) -> "LabelRequest":
        """The not yet judged ``rows`` (``labels < 0``) of their ``queries``."""
        queries = np.asarray(queries, dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        need = labels[rows] < 0
        return cls(queries[need], rows[need])


NO_LABELS = LabelRequest(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


@dataclass(frozen=True, eq=False)
class DesignFit:
    """What a design's estimator returns: plain data the engine, campaigns and Dask turn into a result.

    Attributes
    ----------
    estimate : Estimate
        The target's outputs (one ranker's mean, the contrasts) with their covariance.
    own : Estimate or None
        Every ranking's own mean (None: not estimable from what was judged).
    dof : float
        Degrees of freedom of the Student-t interval (``inf``: normal).
    n_draws : int
        Entries of the sample (a unit drawn twice counts twice).
    n_queries : int
        Distinct queries judged (exactly known queries excluded).
    cost_spent : float
        What the labels bought in this run cost, in budget units.
    budget : float
    exact : bool
        Every unit that can change the answer is judged: the estimate is the pool's value.
    trace : pandas.DataFrame
        One row per sampled entry (columns depend on the design; ``attrs`` hold design details).
    ci : str
        The interval actually used (``"t"``, ``"t_draws"``, ``"bootstrap"`` or ``"normal"``).
    bootstrap : object or None
        Bootstrap pivots of a ``ci="bootstrap"`` interval.
    """

    estimate: Estimate
    own: Estimate | None
    dof: float
    n_draws: int
    n_queries: int
    cost_spent: float
    budget: float
    exact: bool
    trace: object
    ci: str = "normal"
    bootstrap: object = None
    attrs: dict = field(default_factory=dict)


class DesignKind:
    """Base class of design kinds (see the module notes for the protocol).

    Attributes
    ----------
    unit : {"query", "document", "prefix"}
        What a task is: a whole query, a (query, document) pair, or the next
        document of a query judged one document at a time.
    replacement : bool
        Query draws with replacement (Algorithm 1 of Sawade et al.): any judged
        prefix of the draw sequence is itself a sample of the design.
    uses_predictions : bool
        The estimator uses the relevance model's per-query predictions (a control variate).
    targets : tuple of str
        Target kinds the estimator supports (``"mean"``, ``"difference"``, ``"baseline"``, ``"ranking"``).
    families : tuple of str
        Metric families the design supports (``"additive"``, ``"cascade"``, ``"ratio"``, ...); empty: all.
    """

    name = "design"
    unit = "query"
    replacement = False
    uses_predictions = True
    targets: tuple = ("mean", "difference", "baseline", "ranking")
    families: tuple = ()

    # ------------------------------------------------------------------ before any label

    def check(self, method: str, metric, target_kind: str, *, predicted) -> None:
        """Refuse (ValueError) a metric, target or per-query predictions the design cannot use."""
        if self.families and metric.family not in self.families:
            raise ValueError(f"`method`={method!r} needs a {' or '.join(self.families)} metric; {str(metric)!r} is "
                             f"a {metric.family} metric.")
        if target_kind not in self.targets:
            raise ValueError(f"`method`={method!r} does not support the {target_kind!r} target; it handles "
                             f"{', '.join(repr(k) for k in self.targets) or 'no target'}.")

    def check_ci(self, ci: str, design) -> None:
        """Refuse (ValueError) an interval the design cannot give, before any label."""
        if ci == "bootstrap":
            raise ValueError(f"`ci`='bootstrap' (a studentized bootstrap over the distinct sampled queries) needs a "
                             f"query-level design with replacement; method {design.method!r} has none: use "
                             "ci='auto', 't' or 'normal'.")

    def plan(self, design, budget: float, *, judged: np.ndarray, rng=None):
        """Everything fixed before a label for ``budget``; ``judged`` (bool per document row) marks documents
        whose grades are held already (they cost nothing).  ``rng`` is the run's generator, for designs
        that plan by simulation (the draw then continues the same stream)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def draw(self, design, plan, rng: np.random.Generator):
        """The random sample of one run."""
        raise NotImplementedError  # pragma: no cover - abstract

    def predicted_variance(self, design, budget: float, *, under=None) -> float:
        """The model's predicted variance of the estimate at ``budget``, summed over the target's outputs.

        ``under``: a design of the same method and target built on another relevance model; the variance of
        ``design`` (planned and centred on its own model) is then predicted under that model instead (what a
        judge is predicted to save: ``docs/judges.md``).  Kinds that cannot raise ``NotImplementedError``.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    # ------------------------------------------------------------------ labels and the estimate

    def labels_needed(self, design, plan, sample, labels: np.ndarray) -> LabelRequest:
        """The documents to judge next (``labels``: grade per document row, -1 where unknown)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def estimate(self, design, plan, sample, labels: np.ndarray, *, held: np.ndarray, ci: str = "auto",
                 ci_rng=None) -> DesignFit:
        """The estimate of a judged sample; ``held`` marks the rows judged before the run (free)."""
        raise NotImplementedError  # pragma: no cover - abstract

    # ------------------------------------------------------------------ what other layers keep or move

    def query_draws(self, design, plan, sample):
        """The sample as a sequence of query draws (:class:`~activerank.design.sampling.DrawPlan`): the queries
        whose documents it may ask for, in order, with what each is expected to cost."""
        raise NotImplementedError(f"{self!r} does not list its queries (query_draws): campaigns and Dask pools "
                                  "cannot plan it.")

    def to_arrays(self, design, plan, sample) -> dict:
        """``{name: ndarray}``: everything :meth:`from_arrays` needs to rebuild ``plan`` and ``sample``."""
        raise NotImplementedError(f"{self!r} cannot be stored (to_arrays): campaigns cannot plan it.")

    def from_arrays(self, design, arrays: dict):
        """``(plan, sample)`` rebuilt from :meth:`to_arrays`' output."""
        raise NotImplementedError(f"{self!r} cannot be stored (from_arrays): campaigns cannot plan it.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def prediction_under(design, under):
    """``design``'s prediction with its spreads taken under ``under``'s model: the per-query variance around
    ``design``'s own means (its control variate), ``Var_u + sum_j (mean_u - mean)^2``, and the squared error
    around ``under``'s pool means."""
    from dataclasses import replace

    a, b = design.prediction, under.prediction
    if under.method != design.method or b.mean.shape != a.mean.shape or under.p.shape != design.p.shape \
            or not np.array_equal(under.census, design.census):
        raise ValueError(f"`under` must be a design of the same method, target and labels held ({design.method}, "
                         f"{a.mean.shape}); got {under.method}, {b.mean.shape}.")
    shift = ((b.mean - a.mean) ** 2).sum(axis=1)
    return replace(a, variance=b.variance + shift, sq_error=b.sq_error)
