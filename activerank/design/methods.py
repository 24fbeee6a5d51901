"""Sampling methods: ONE registry of named designs, used by the API, the command line, the experiment
harness, labeling campaigns and Dask pools.

A :class:`Method` names a design kind (:mod:`activerank.design.kinds`: how
units are planned, drawn, judged and estimated) with its settings and the
query-level selection rule ``q`` it starts from.  Adding a method is one
:func:`register_method` call; adding a design kind is one module implementing
:class:`~activerank.design.kinds.base.DesignKind` plus that call -- nothing in
the engine, campaigns, command line or Dask code changes.  The built-in
methods, with what each draws and estimates, are listed in
``docs/methods.md`` (generated from this registry by :func:`method_table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..inference.estimators import Estimator, ModelAssisted, SelfNormalized
from .kinds.base import DesignKind
from .kinds.documents import DocumentHorvitzThompson, HansenHurwitz, UniformHorvitzThompson, WithinQuery
from .kinds.prefix import PrefixSampling
from .kinds.query import QueryDraws
from .kinds.query_wor import WithoutReplacementDesign
from .kinds.two_stage import TwoStage
from .sampling import optimal_distribution

__all__ = ["METHODS", "Method", "get_method", "method_names", "method_table", "register_method",
           "unregister_method"]


@dataclass(frozen=True)
class Method:
    """A named design.

    Attributes
    ----------
    name : str
    sample : callable
        ``sample(prediction, costs, p, defensive) -> q``: the query-level
        selection rule the design starts from (``prediction`` a
        :class:`~activerank.design.targets.Prediction`, ``costs`` the
        normalized per-query costs, ``p`` the target distribution; sums to 1):
        the draw distribution of query draws with replacement, the scores of a
        sample without replacement, the queries a prefix design may sample
        (``q > 0``); document-level designs choose their own.
    kind : DesignKind
        How units are planned, drawn, judged and estimated
        (:mod:`activerank.design.kinds`).  A plain
        :class:`~activerank.inference.estimators.Estimator` is wrapped into
        :class:`~activerank.design.kinds.query.QueryDraws` (query draws with
        replacement, that estimator on the weighted draws).
    relevance : {"model", "uniform"}
        Moments under the relevance model, or under uniform grade
        probabilities (the paper's uniD ablation).
    description : str
    """

    name: str
    sample: Callable
    kind: DesignKind
    relevance: str = "model"
    description: str = ""

    def __post_init__(self):
        if isinstance(self.kind, Estimator):
            object.__setattr__(self, "kind", QueryDraws(self.kind))

    @property
    def unit(self) -> str:
        """What a task is: ``"query"``, ``"document"`` or ``"prefix"`` (:attr:`DesignKind.unit`)."""
        return self.kind.unit

    @property
    def replacement(self) -> bool:
        """Query draws with replacement (:attr:`DesignKind.replacement`)."""
        return self.kind.replacement

    def distribution(self, prediction, costs, p, *, defensive: float) -> np.ndarray:
        """The selection rule ``q`` for a prediction, costs and target distribution."""
        return self.sample(prediction, costs, p, defensive)


def _passive(prediction, costs, p, defensive):
    return p.copy()


def _active(prediction, costs, p, defensive):
    return optimal_distribution(prediction.sq_error, costs, p, defensive=defensive)


def _active_uniform_costs(prediction, costs, p, defensive):
    return optimal_distribution(prediction.sq_error, np.ones_like(costs), p, defensive=defensive)


def _variance(prediction, costs, p, defensive):
    # optimal for a calibrated model: the control variate removes the predictable part
    return optimal_distribution(prediction.variance, costs, p, defensive=defensive)


METHODS: dict[str, Method] = {}


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Add a method to the registry (every entry point sees it at once).

    Examples
    --------
    >>> half = Method("half_active", lambda pred, lam, p, d: (_active(pred, lam, p, d) + p) / 2,
    ...               SelfNormalized(), description="midway between active and passive")
    >>> register_method(half).name in method_names()
    True
    >>> unregister_method("half_active")
    """
    if not isinstance(method, Method):
        raise TypeError(f"`method` must be an activerank.design.methods.Method; got {type(method).__name__}.")
    if not isinstance(method.kind, DesignKind):
        raise TypeError(f"`method.kind` must be a DesignKind (activerank.design.kinds) or an Estimator; "
                        f"got {type(method.kind).__name__}.")
    if method.relevance not in ("model", "uniform"):
        raise ValueError(f"`method.relevance` must be 'model' or 'uniform'; got {method.relevance!r}.")
    if method.unit not in ("query", "document", "prefix"):
        raise ValueError(f"`method.kind.unit` must be 'query', 'document' or 'prefix'; got {method.unit!r}.")
    if method.name in METHODS and not replace:
        raise ValueError(f"method {method.name!r} is already registered (pass replace=True).")
    METHODS[method.name] = method
    return method


def unregister_method(name: str) -> None:
    """Remove a registered method (e.g. one a test added)."""
    METHODS.pop(name, None)


def method_names(*, kind: type | None = None, estimator: type | None = None, unit: str | None = None,
                 replacement: bool | None = None) -> tuple:
    """Registered method names, optionally only those whose design kind is an instance of ``kind``, whose
    weighted-draw estimator (query draws with replacement) is an instance of ``estimator``, whose task unit
    is ``unit`` (``"query"``, ``"document"`` or ``"prefix"``) and whose draws are with replacement or not
    (``replacement``)."""
    return tuple(n for n, m in METHODS.items() if (kind is None or isinstance(m.kind, kind))
                 and (estimator is None or isinstance(getattr(m.kind, "estimator", None), estimator))
                 and (unit is None or m.unit == unit) and (replacement is None or m.replacement == replacement))


def get_method(name, *, allowed: tuple | None = None, param: str = "method") -> Method:
    """The registered method called ``name`` (a clear error lists the choices)."""
    if isinstance(name, Method):
        name = name.name
    names = method_names() if allowed is None else allowed
    if name not in METHODS or name not in names:
        raise ValueError(f"`{param}` must be one of {list(names)}, got {name!r}.")
    return METHODS[name]


def method_table() -> str:
    """The registered methods as a Markdown table (``docs/methods.md`` is this table, checked by a test).

    Examples
    --------
    >>> method_table().splitlines()[0]
    '| method | design kind | a task is | what it draws and estimates |'
    """
    rows = ["| method | design kind | a task is | what it draws and estimates |", "|---|---|---|---|"]
    unit = {"query": "a whole query", "document": "one (query, document) pair",
            "prefix": "the next document of a sampled query"}
    for name, m in METHODS.items():
        rows.append(f"| `{name}` | `{m.kind!r}` | {unit[m.unit]} | {m.description} |")
    return "\n".join(rows) + "\n"


for _m in (
    Method("active", _active, QueryDraws(SelfNormalized()),
           description="cost-aware variance-optimal q* (Sawade et al. 2012), self-normalized estimate"),
    Method("passive", _passive, QueryDraws(SelfNormalized()), description="sample from p; the plain mean"),
    Method("active_uniform_costs", _active_uniform_costs, QueryDraws(SelfNormalized()),
           description="q* ignoring costs (the paper's uniC)"),
    Method("active_uniform_model", _active, QueryDraws(SelfNormalized()), relevance="uniform",
           description="q* under uniform grade probabilities (the paper's uniD)"),
    Method("model_assisted", _active, QueryDraws(ModelAssisted(tuned=True)),
           description="active q*, the model's pool mean as a control variate with a tuned coefficient"),
    Method("model_assisted_variance", _variance, QueryDraws(ModelAssisted(tuned=True)),
           description="q ∝ p sqrt(Var[L|x] / lambda), tuned control variate"),
    Method("model_assisted_fixed", _variance, QueryDraws(ModelAssisted(tuned=False)),
           description="q ∝ p sqrt(Var[L|x] / lambda), control variate with coefficient 1"),
    Method("active_wor", _variance, WithoutReplacementDesign(coefficient=None),
           description="budgeted sequential Poisson sample without replacement, inclusion ∝ p sqrt(Var[L|x] / "
                       "lambda) (defensive); the model's exact pool mean plus the Horvitz-Thompson sum of the "
                       "residuals times a coefficient shrunk towards 1 (PPI++-style power tuning); on small "
                       "pools (<= 200 queries, a fifth or more sampled) coefficient 1 and a Student-t on "
                       "Satterthwaite's degrees of freedom"),
    Method("doc_dyn", _passive, DocumentHorvitzThompson(control_variate=True),
           description="documents taken in a random priority order shaped by pi-ps on the model's residual "
                       "variance until the budget is spent (never beyond; exact inclusion probabilities); "
                       "the model's exact total plus Horvitz-Thompson of the residuals (Cormack & Grossman's "
                       "dyn); additive metrics"),
    Method("doc_stat", _passive, DocumentHorvitzThompson(control_variate=False),
           description="documents in a budgeted priority order shaped by pi-ps on E[g(y)^2]; plain Horvitz-Thompson "
                       "(Cormack & Grossman's stat); additive metrics"),
    Method("doc_uniform", _passive, UniformHorvitzThompson(),
           description="uniform sampling of pooled documents without replacement (the field's baseline), "
                       "Horvitz-Thompson (unequal costs: a uniform order within the budget); additive metrics"),
    Method("doc_hh", _passive, HansenHurwitz(utility="rms"),
           description="documents drawn with replacement from Schnabel et al.'s Q* until the budget is spent "
                       "(importance sampling on a budget, Schnabel et al. 2015/2016), Hansen-Hurwitz; "
                       "additive metrics"),
    Method("two_stage", _passive, TwoStage(docs_per_query=2.0),
           description="queries drawn from a cost-optimal q, then ~2 documents per drawn query (Poisson on the "
                       "model's residual variance); two-stage difference estimator; additive metrics"),
    Method("doc_ubis", _passive, WithinQuery(),
           description="k draws with replacement inside every query (Schnabel et al. 2015's UBIS-k, k the "
                       "largest whose cost can never exceed the budget); additive metrics"),
    Method("prefix", _variance, PrefixSampling(),
           description="queries in a random priority order, the first that does not fit the budget cut; documents "
                       "of each judged one at a time, the most "
                       "influential first, until a stopping rule says the rest matters little; the model's "
                       "prediction plus the importance-weighted conditional-expectation increments; cascade "
                       "metrics (ERR, RR)"),
):
    register_method(_m)
