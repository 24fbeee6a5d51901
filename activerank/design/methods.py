"""Sampling methods: how the sampling distribution ``q`` is chosen, and which estimator goes with it.

ONE registry, :data:`METHODS`, used by the Python API, the command line, the
experiment harness and the campaign store.  A :class:`Method` is a rule
``(prediction, costs, p, defensive) -> q`` plus an estimator plug-in
(:mod:`activerank.inference.estimators`); adding a method is one
:func:`register_method` call, nothing in the engine changes.

Built-in methods (Sawade et al. 2012; the model-assisted ones are ours):

========================== ============================================== ===================
name                       q                                              estimator
========================== ============================================== ===================
``passive``                ``p``                                          self-normalized
``active``                 ``∝ p sqrt(E[(L - R)^2 | x] / lambda(x))``     self-normalized
``active_uniform_costs``   ``∝ p sqrt(E[(L - R)^2 | x])`` (paper's uniC)   self-normalized
``active_uniform_model``   active ``q`` under uniform labels (uniD)       self-normalized
``model_assisted``         as ``active``                                  control variate, tuned
``model_assisted_variance`` ``∝ p sqrt(Var[L | x] / lambda(x))``           control variate, tuned
``model_assisted_fixed``   as ``model_assisted_variance``                 control variate, beta = 1
========================== ============================================== ===================

Every ``q`` except ``passive`` is mixed with ``p`` by the ``defensive`` weight.

Without replacement (``replacement=False``): the method's ``q`` is the score
vector of a budgeted sequential Poisson sample (every query at most once, the
sample's cost within the budget); its estimator is a
:class:`~activerank.design.wor_methods.WithoutReplacementDesign` plug-in (draw
and estimator together), run by :mod:`activerank.engine.without_replacement`:

========================== ============================================== ===================================
name                       scores                                         estimator
========================== ============================================== ===================================
``active_wor``             ``∝ p sqrt(Var[L | x] / lambda(x))``           model's pool mean + Horvitz-Thompson
                                                                          sum of the residuals (unbiased)
========================== ============================================== ===================================

Document-level methods (``unit="document"``; additive metrics only) sample
(query, document) pairs instead of whole queries.  Their estimator is a
:class:`~activerank.design.document_methods.DocumentDesign` plug-in (design,
draw and estimator together); the engine's fixed-budget schedule runs every
one of them through one code path (:mod:`activerank.engine.documents`), the
experiment harness through :meth:`~activerank.design.document_methods.DocumentDesign.simulate`:

================ ================================================== ===============================
name             draw                                               estimator
================ ================================================== ===============================
``doc_dyn``      Poisson, ``pi ∝ ||W_z|| sqrt(Var[g(y_z)] / c_z)``     ``M + HT(u - m)`` (dyn)
``doc_stat``     Poisson, ``pi ∝ ||W_z|| sqrt(E[g(y_z)^2] / c_z)``     ``HT(u)`` (stat)
``doc_uniform``  uniform, without replacement (SRSWOR)              ``HT(u)``, ``N / n`` expansion
``doc_hh``       with replacement from ``Q* ∝ ||W_z|| sqrt(E u^2 / c)``  Hansen-Hurwitz
``two_stage``    queries by ``q``, ~2 documents per drawn query     two-stage, ``M + mean z_d``
``doc_ubis``     ``k`` draws inside every query from its ``Q_x``     UBIS-k (Schnabel et al. 2015)
================ ================================================== ===============================

Prefix methods (``unit="prefix"``; cascade metrics: ERR, RR) sample queries
(Poisson) and judge each sampled query one document at a time (the most
influential next, given the labels seen) until a stopping rule that
looks at the labels seen says stop (:mod:`activerank.design.prefix`, run by
:mod:`activerank.engine.prefix`):

================ ================================================== ===============================
name             draw                                               estimator
================ ================================================== ===============================
``prefix``       Poisson queries, judged to a random depth          ``M + HT(sum_j D_j / P_j)``
================ ================================================== ===============================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..inference.estimators import Estimator, ModelAssisted, SelfNormalized
from .document_methods import DocumentDesign, DocumentHorvitzThompson, HansenHurwitz, TwoStage, \
    UniformHorvitzThompson, WithinQuery
from .prefix import PrefixSampling
from .sampling import optimal_distribution
from .wor_methods import WithoutReplacementDesign

__all__ = ["METHODS", "Method", "get_method", "method_names", "register_method", "unregister_method"]


@dataclass(frozen=True)
class Method:
    """A sampling method.

    Attributes
    ----------
    name : str
    sample : callable
        ``sample(prediction, costs, p, defensive) -> q``: ``prediction`` is a
        :class:`~activerank.design.targets.Prediction`, ``costs`` the
        normalized per-query costs, ``p`` the target distribution; returns the
        sampling distribution over the pool (sums to 1).
    estimator : Estimator
        How weighted draws become estimates.
    relevance : {"model", "uniform"}
        Moments under the relevance model, or under uniform grade
        probabilities (the paper's uniD ablation).
    description : str
    unit : {"query", "document", "prefix"}
        What a draw is: a whole query (``sample`` gives ``q``), a (query,
        document) pair (``estimator`` is a
        :class:`~activerank.design.document_methods.DocumentDesign` plug-in,
        which draws and estimates; ``sample`` is not used), or a query of
        which a random-depth prefix is judged (``estimator`` is a
        :class:`~activerank.design.prefix.PrefixSampling`; ``q > 0`` marks
        the queries it may sample).
    replacement : bool, default True
        Query-level draws with replacement (Algorithm 1's budgeted loop), or
        one budgeted without-replacement sample (``estimator`` is a
        :class:`~activerank.design.wor_methods.WithoutReplacementDesign`,
        which draws and estimates; ``q`` is its score vector).
    """

    name: str
    sample: Callable
    estimator: Estimator
    relevance: str = "model"
    description: str = ""
    unit: str = "query"
    replacement: bool = True

    def distribution(self, prediction, costs, p, *, defensive: float) -> np.ndarray:
        """The sampling distribution ``q`` for a prediction, costs and target distribution."""
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
    if not isinstance(method.estimator, Estimator):
        raise TypeError(f"`method.estimator` must be an Estimator; got {type(method.estimator).__name__}.")
    if method.relevance not in ("model", "uniform"):
        raise ValueError(f"`method.relevance` must be 'model' or 'uniform'; got {method.relevance!r}.")
    if method.unit not in ("query", "document", "prefix"):
        raise ValueError(f"`method.unit` must be 'query', 'document' or 'prefix'; got {method.unit!r}.")
    if (method.unit == "prefix") != isinstance(method.estimator, PrefixSampling):
        raise ValueError("a method that judges a random-depth prefix of sampled queries (`unit`='prefix') needs a "
                         "PrefixSampling estimator (activerank.design.prefix), and only it.")
    if (method.unit == "document") != isinstance(method.estimator, DocumentDesign):
        raise ValueError("a document-level method (`unit`='document') needs a DocumentDesign estimator "
                         "(activerank.design.document_methods), and only it.")
    if (not method.replacement) != isinstance(method.estimator, WithoutReplacementDesign) \
            or (not method.replacement and method.unit != "query"):
        raise ValueError("a query-level method that samples without replacement (`replacement`=False) needs a "
                         "WithoutReplacementDesign estimator (activerank.design.wor_methods), and only it.")
    if method.name in METHODS and not replace:
        raise ValueError(f"method {method.name!r} is already registered (pass replace=True).")
    METHODS[method.name] = method
    return method


def unregister_method(name: str) -> None:
    """Remove a registered method (e.g. one a test added)."""
    METHODS.pop(name, None)


def method_names(*, estimator: type | None = None, unit: str | None = None,
                 replacement: bool | None = None) -> tuple:
    """Registered method names, optionally only those whose estimator is an instance of ``estimator``,
    whose draw unit is ``unit`` (``"query"`` or ``"document"``) and whose draws are with replacement or
    not (``replacement``)."""
    return tuple(n for n, m in METHODS.items() if (estimator is None or isinstance(m.estimator, estimator))
                 and (unit is None or m.unit == unit) and (replacement is None or m.replacement == replacement))


def get_method(name, *, allowed: tuple | None = None, param: str = "method") -> Method:
    """The registered method called ``name`` (a clear error lists the choices)."""
    if isinstance(name, Method):
        name = name.name
    names = method_names() if allowed is None else allowed
    if name not in METHODS or name not in names:
        raise ValueError(f"`{param}` must be one of {list(names)}, got {name!r}.")
    return METHODS[name]


for _m in (
    Method("active", _active, SelfNormalized(),
           description="cost-aware variance-optimal q* (Sawade et al. 2012), self-normalized estimate"),
    Method("passive", _passive, SelfNormalized(), description="sample from p; the plain mean"),
    Method("active_uniform_costs", _active_uniform_costs, SelfNormalized(),
           description="q* ignoring costs (the paper's uniC)"),
    Method("active_uniform_model", _active, SelfNormalized(), relevance="uniform",
           description="q* under uniform grade probabilities (the paper's uniD)"),
    Method("model_assisted", _active, ModelAssisted(tuned=True),
           description="active q*, the model's pool mean as a control variate with a tuned coefficient"),
    Method("model_assisted_variance", _variance, ModelAssisted(tuned=True),
           description="q ∝ p sqrt(Var[L|x] / lambda), tuned control variate"),
    Method("model_assisted_fixed", _variance, ModelAssisted(tuned=False),
           description="q ∝ p sqrt(Var[L|x] / lambda), control variate with coefficient 1"),
    Method("active_wor", _variance, WithoutReplacementDesign(coefficient=None), replacement=False,
           description="budgeted sequential Poisson sample without replacement, inclusion ∝ p sqrt(Var[L|x] / "
                       "lambda) (defensive); the model's exact pool mean plus the Horvitz-Thompson sum of the "
                       "residuals times a coefficient shrunk towards 1 (PPI++-style power tuning)"),
    Method("doc_dyn", _passive, DocumentHorvitzThompson(control_variate=True), unit="document",
           description="documents sampled independently (Poisson pi-ps on the model's residual variance); "
                       "the model's exact total plus Horvitz-Thompson of the residuals (Cormack & Grossman's "
                       "dyn); additive metrics"),
    Method("doc_stat", _passive, DocumentHorvitzThompson(control_variate=False), unit="document",
           description="documents sampled independently (Poisson pi-ps on E[g(y)^2]); plain Horvitz-Thompson "
                       "(Cormack & Grossman's stat); additive metrics"),
    Method("doc_uniform", _passive, UniformHorvitzThompson(), unit="document",
           description="uniform sampling of pooled documents without replacement (the field's baseline), "
                       "Horvitz-Thompson; additive metrics"),
    Method("doc_hh", _passive, HansenHurwitz(utility="rms"), unit="document",
           description="documents drawn with replacement from Schnabel et al.'s Q* until the budget is spent "
                       "(importance sampling on a budget, Schnabel et al. 2015/2016), Hansen-Hurwitz; "
                       "additive metrics"),
    Method("two_stage", _passive, TwoStage(docs_per_query=2.0), unit="document",
           description="queries drawn from a cost-optimal q, then ~2 documents per drawn query (Poisson on the "
                       "model's residual variance); two-stage difference estimator; additive metrics"),
    Method("doc_ubis", _passive, WithinQuery(), unit="document",
           description="k draws with replacement inside every query (Schnabel et al. 2015's UBIS-k, k the "
                       "largest the budget affords); additive metrics"),
    Method("prefix", _variance, PrefixSampling(), unit="prefix",
           description="queries sampled independently, then documents of each judged one at a time, the most "
                       "influential first, until a stopping rule says the rest matters little; the model's "
                       "prediction plus the importance-weighted conditional-expectation increments; cascade "
                       "metrics (ERR, RR)"),
):
    register_method(_m)
