"""The ``prefix`` method's plug-in: the design-kind protocol, the two-stage estimate and its
variance (:class:`PrefixSampling`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ....inference.estimators import Estimate
from ....inference.small_sample.clusters import cluster_dof
from ..base import NO_LABELS, DesignFit, DesignKind, LabelRequest
from .layout import PrefixLayout, _by_step, judging_paths, prefix_layout, stop_probabilities, walk_sample
from .plan import N_PLANNING_SIMULATIONS, PrefixPlan, plan_prefix

__all__ = ["PLANNING_SEED", "PRIOR_DOF", "PrefixDraw", "PrefixRun", "PrefixSampling", "design_layout", "pooled_covariance",
           "prefix_dof", "prefix_estimate", "within_estimate"]

#: Seed of the planning simulations behind the predicted variance (``method="auto"``, planning calls).
PLANNING_SEED = 20121


@dataclass(frozen=True, eq=False)
class PrefixRun:
    """What a ``prefix`` run fixes before its draw: the judging layout and the plan (None when every query
    is determined), and the budget."""

    layout: PrefixLayout | None
    plan: PrefixPlan | None
    budget: float

    def parts(self) -> tuple[PrefixLayout, PrefixPlan]:
        """The layout and the plan of a run that samples."""
        if self.layout is None or self.plan is None:
            raise ValueError("this prefix run samples nothing: every query is determined.")
        return self.layout, self.plan


@dataclass(frozen=True, eq=False)
class PrefixDraw:
    """The Poisson sample of queries (pool positions) and one uniform ``U`` per sampled query."""

    queries: np.ndarray
    U: np.ndarray


def design_layout(design, judged) -> PrefixLayout:
    """The judging layout of a design: its rankings' documents (with ``judge="changeable"`` only those that can
    change a contrast); documents in ``judged`` (bool per row, or None) cost nothing."""
    t = design.target
    keep = t.changes.rows if t.changes is not None else None
    return prefix_layout(t.rankings, t.contrast, t.metric, design.n_grades, design.probs.shape[0],
                         design.costs.cost, design.document_costs, keep=keep, judged=judged)


def within_estimate(D, P, judged):
    """``e = sum_judged D_j / P_j`` and ``V_hat = sum_{j,l judged} D_j D_l' (1/P_max - 1)/P_min``.

    Parameters
    ----------
    D : ndarray of shape (B, J, t)
    P : ndarray of shape (B, J)
        Non-increasing along ``J``.
    judged : ndarray of shape (B, J), bool

    Returns
    -------
    e : ndarray of shape (B, t)
    V : ndarray of shape (B, t, t)
    """
    Dj = np.where(judged[..., None], D, 0.0)
    Pj = np.where(judged, P, 1.0)[..., None]
    E = Dj / Pj
    e = E.sum(1)
    # sum_{j,l} (1/P_min - 1)/P_max D_j D_l' in O(J): with A_j = (1/P_j - 1) D_j and the later-step sums
    # R_j = sum_{l > j} E_l, it is sum_j A_j E_j' + A_j R_j' + R_j A_j' (P is non-increasing along J)
    A = (1.0 / Pj - 1.0) * Dj
    R = np.cumsum(E[:, ::-1], axis=1)[:, ::-1] - E
    cross = np.einsum("bjs,bjt->bst", A, R)
    V = np.einsum("bjs,bjt->bst", A, E) + cross + cross.transpose(0, 2, 1)
    return e, V


def prefix_estimate(e, V, pi, p, pool_mean):
    """The two-stage difference estimator and its unbiased covariance estimate.

    Parameters
    ----------
    e : ndarray of shape (n, t)
        Within-query estimates of ``L(x) - m(x)`` of the sampled queries.
    V : ndarray of shape (n, t, t)
        Their within-query covariance estimates.
    pi, p : ndarray of shape (n,)
    pool_mean : ndarray of shape (t,)
        ``sum_pool p m``.

    Returns
    -------
    estimate : ndarray of shape (t,)
    covariance : ndarray of shape (t, t)
    """
    w = p / pi
    est = np.asarray(pool_mean, dtype=np.float64) + w @ e
    c1 = ((1.0 - pi) * w**2)[:, None, None] * e[:, :, None] * e[:, None, :]
    cov = c1.sum(0) + np.einsum("n,nst->st", p**2 / pi, V)
    return est, cov


def prefix_dof(e, V, pi, p) -> float:
    """Student-t degrees of freedom of the two-stage variance estimate, from the sampled queries that carry
    it: the smallest over the outputs (0 when it is 0 for every output).

    Every sampled query adds ``(1 - pi) (p/pi)^2 e^2 + p^2/pi V_xx`` to the
    estimate of :func:`prefix_estimate`; on a small pool a few queries carry
    nearly all of it (each judged prefix is one random length), so ``n - 1``
    overstates its stability and the interval under-covers:
    :func:`~activerank.inference.small_sample.cluster_dof` (twice the
    effective number of queries, at most ``n - 1``; ``docs/prefix.md`` §6).

    Parameters
    ----------
    e : ndarray of shape (n, t)
    V : ndarray of shape (n, t, t)
    pi, p : ndarray of shape (n,)

    Examples
    --------
    >>> e = np.array([[0.4], [0.1], [0.1], [0.1]])  # one query carries 16/19 of the variance
    >>> round(prefix_dof(e, np.zeros((4, 1, 1)), np.full(4, 0.5), np.full(4, 0.25)), 2)
    2.79
    """
    w = p / pi
    terms = (1.0 - pi)[:, None] * (w[:, None] * e) ** 2 + (p**2 / pi)[:, None] * np.diagonal(V, axis1=1, axis2=2)
    k = np.atleast_1d(cluster_dof(terms))
    k = k[k > 0]
    return float(k.min()) if k.size else 0.0


#: Pseudo degrees of freedom of the model's predicted variance pooled into the sample's (small samples).
PRIOR_DOF = 2.0


def pooled_covariance(cov, n, model_variance, prior_dof: float = PRIOR_DOF):
    """``(prior_dof diag(V_model) + (n - 1) cov) / (prior_dof + n - 1)``: the sample's covariance estimate
    moderated by the model's predicted variance (``model_variance`` None: unchanged).

    The two-stage variance estimate is unbiased but, at a few dozen queries where a
    handful carry the target, often far too small (and exactly 0 when every judged
    step had ``P = 1``); the model's prediction enters as ``prior_dof`` pseudo
    observations, as for ``active_wor`` (:mod:`activerank.design.wor_methods`).

    Parameters
    ----------
    cov : ndarray of shape (..., t, t)
    n : int or ndarray of shape (...)
        Sampled queries.
    model_variance : ndarray of shape (t,) or None
    """
    if model_variance is None or prior_dof <= 0:
        return cov
    w = np.maximum(np.asarray(n, dtype=np.float64) - 1.0, 0.0)[..., None, None]
    return (prior_dof * np.diag(np.asarray(model_variance, dtype=np.float64)) + w * cov) / (prior_dof + w)


class PrefixSampling(DesignKind):
    """Plug-in of the ``prefix`` method: Poisson queries, a random-depth prefix judged in each (module doc).

    Attributes
    ----------
    targets : tuple of str
        Every target kind (one ranker, differences, candidates vs a baseline, systems vs the mean system).
    n_sims : int
        Planning simulations per query.

    Examples
    --------
    >>> import numpy as np
    >>> from activerank.design.kinds.prefix import prefix_estimate
    >>> est, cov = prefix_estimate(np.array([[0.1], [-0.1]]), np.zeros((2, 1, 1)), np.array([0.5, 0.5]),
    ...                            np.array([0.5, 0.5]), np.array([0.3]))
    >>> est.tolist()
    [0.3]
    """

    name = "prefix"
    unit = "prefix"
    uses_predictions = True
    families = ("cascade",)
    targets = ("mean", "difference", "baseline", "ranking")

    def __init__(self, *, n_sims: int = N_PLANNING_SIMULATIONS, order: str = "adaptive"):
        if order not in ("adaptive", "rank"):
            raise ValueError(f"`order` must be 'adaptive' or 'rank'; got {order!r}.")
        self.n_sims = int(n_sims)
        self.order = order

    def plan_queries(self, layout, probs, p, variance, live, budget, rng, *, defensive=0.1) -> PrefixPlan:
        """Query inclusion probabilities and stopping rules for ``budget`` (:func:`plan_prefix`)."""
        return plan_prefix(layout, probs, p, variance, live, budget, rng, defensive=defensive, n_sims=self.n_sims,
                           order=self.order)

    @staticmethod
    def draw_queries(plan: PrefixPlan, rng):
        """Poisson sample of queries and one uniform per sampled query: (queries, U)."""
        u = rng.random(plan.pi.size)
        x = np.flatnonzero(u < plan.pi)
        return x, rng.random(x.size)

    # ------------------------------------------------------------------ the design-kind protocol

    def check(self, method, metric, target_kind, *, predicted) -> None:
        if metric.family != "cascade":
            raise ValueError(
                f"`method`={method!r} judges a random-depth prefix of every sampled query and needs a cascade "
                f"metric (ERR@k, RR@k); {str(metric)!r} is a {metric.family} metric: use 'doc_dyn' for additive "
                "metrics or a query-level method such as 'active_wor'.")
        if predicted is not None:
            raise ValueError(f"`predicted` (per-query predictions) is not used by the prefix method {method!r}; "
                             "leave it None.")

    def check_ci(self, ci, design) -> None:
        if ci == "bootstrap":
            raise ValueError("`ci`='bootstrap' (a studentized bootstrap over the distinct sampled queries) needs a "
                             f"query-level design; method {design.method!r} samples queries and judges a "
                             "random-length sequence of documents in each (its interval comes from the "
                             "Horvitz-Thompson variance): use ci='auto', 't' or 'normal'.")

    def plan(self, design, budget, *, judged, rng=None) -> PrefixRun:
        """The judging layout (documents in ``judged`` cost nothing) and the plan for ``budget``; the
        planning simulations use ``rng``.  Raises before any label when the budget samples fewer than 2
        queries in expectation."""
        if not design.q.any():  # every query is determined: nothing to draw or judge
            return PrefixRun(None, None, float(budget))
        layout = design_layout(design, judged)
        plan = self.plan_queries(layout, design.probs, design.p, design.prediction.variance, design.q > 0,
                                 float(budget), rng, defensive=design.defensive)
        if plan.pi.sum() < 2.0 - 1e-6 and not plan.exact:
            raise ValueError(f"`budget`={budget:g} is too small for the prefix method: it samples "
                             f"{plan.pi.sum():.3g} queries in expectation; at least 2 are needed for a standard "
                             "error.")
        return PrefixRun(layout, plan, float(budget))

    def draw(self, design, plan: PrefixRun, rng) -> PrefixDraw | None:
        """The Poisson sample of queries and their uniforms (refused, before any label, below 2 queries)."""
        if plan.plan is None:
            return None
        x, U = self.draw_queries(plan.plan, rng)
        if x.size < 2 and not plan.plan.exact:
            raise ValueError(f"the budget ({plan.budget:g}) drew {x.size} quer{'y' if x.size == 1 else 'ies'} for the "
                             "prefix method's sample (Poisson: the sample size is random); no standard error can be "
                             "computed from fewer than 2. Raise the budget, or run again with another rng.")
        return PrefixDraw(x, U)

    def labels_needed(self, design, plan: PrefixRun, sample: PrefixDraw | None, labels) -> LabelRequest:
        """The next document of every sampled query whose walk waits for a label (one per query)."""
        if sample is None:
            return NO_LABELS
        layout, pplan = plan.parts()
        walk = walk_sample(layout, design.probs, pplan, sample.queries, sample.U, self.order, labels)
        waiting = walk.waiting >= 0
        return LabelRequest(sample.queries[waiting], walk.waiting[waiting])

    def predicted_variance(self, design, budget) -> float:
        """``sum_x p(x)^2 [(Var_theta[theta | x] + W(x)) / pi(x) - Var_theta[theta | x]]`` with the plan's
        inclusion probabilities and added within-query variance ``W`` for the budget; the planning
        simulations use the fixed :data:`PLANNING_SEED`, so the prediction does not depend on ``rng``."""
        live = design.q > 0
        if not live.any():
            return 0.0
        plan = self.plan_queries(design_layout(design, None), design.probs, design.p, design.prediction.variance,
                                 live, float(budget), np.random.default_rng(PLANNING_SEED), defensive=design.defensive)
        if plan.exact:
            return 0.0
        if plan.pi.sum() < 2.0:
            raise ValueError(f"`budget`={budget:g} is too small for the prefix method: it samples "
                             f"{plan.pi.sum():.3g} queries in expectation")
        ok = plan.pi > 0
        p, V, W, pi = design.p[ok], design.prediction.variance[ok], plan.within_variance[ok].sum(-1), plan.pi[ok]
        return float(np.sum(p**2 * ((V + W) / pi - V)))

    def estimate(self, design, plan: PrefixRun, sample: PrefixDraw | None, labels, *, held, ci="auto",
                 ci_rng=None) -> DesignFit:
        import pandas as pd

        from ..query import census_fit

        if sample is None:
            return census_fit(design, labels, plan.budget)
        d, x = design, sample.queries
        layout, pplan = plan.parts()
        walk = walk_sample(layout, d.probs, pplan, x, sample.U, self.order, labels)
        if (walk.waiting >= 0).any():
            raise ValueError(f"{int((walk.waiting >= 0).sum())} sampled queries still wait for a judgment.")
        docs, judged = walk.docs, walk.judged
        rows = layout.rows[x]
        e, V = within_estimate(walk.D, walk.P, judged)
        pi = pplan.pi[x]
        est, cov = prefix_estimate(e, V, pi, d.p[x], d.prediction.pool_mean(d.p))
        sample_cov = cov
        ov = d.prediction.output_variance
        pooled = ci != "normal" and ov is not None
        if pooled:  # small samples: the model's predicted variance pooled in
            cov = pooled_covariance(cov, x.size, pplan.model_variance(d.p, ov))
        # the t's degrees of freedom: from the queries that carry the sample's variance, not all those sampled
        k_eff = prefix_dof(e, V, pi, d.p[x])
        jq, js = np.nonzero(judged)
        doc_rows = rows[jq, docs[jq, js]]
        step_rows = np.take_along_axis(rows, np.maximum(docs, 0), axis=1)  # the row judged at every step
        new = judged & ~np.asarray(held, dtype=bool)[np.maximum(step_rows, 0)]
        step_cost = np.where(docs >= 0, np.take_along_axis(layout.cost[x], np.maximum(docs, 0), axis=1), 0.0)
        charged_doc = np.where(new, step_cost, 0.0)
        trace = pd.DataFrame({
            "query": x[jq], "doc_row": doc_rows, "step": js, "layout_position": docs[jq, js], "pi": pi[jq],
            "P": walk.P[jq, js], "p": d.p[x[jq]], "new": new[jq, js], "cost": charged_doc[jq, js],
            "grade": labels[doc_rows],
        })
        trace["cumulative_cost"] = np.cumsum(trace["cost"].to_numpy())
        trace.attrs.update(design="Poisson sample of queries, a random-length sequence of documents judged in each "
                                  "(prefix)",
                           expected_cost=float(pplan.budget), n_sampled_queries=int(x.size),
                           sample_variance=np.diag(sample_cov).tolist(), dof=k_eff)
        exact = pplan.exact
        if exact or ci == "normal":
            dof = math.inf
        elif k_eff > 0:
            dof = k_eff
        else:  # no sample variance: the model's (its pseudo degrees of freedom), or nothing to widen
            dof = PRIOR_DOF if pooled else float(max(x.size - 1, 1))
        main = Estimate(est, np.zeros_like(cov) if exact else cov, float(x.size))
        own = main if d.target.kind == "mean" else None
        cost = float(charged_doc.sum(1).sum())  # per query, then over queries (the order results were tested in)
        return DesignFit(main, own, dof, int(x.size), int(np.unique(x).size), cost, plan.budget, exact, trace,
                         ci="normal" if math.isinf(dof) else "t")

    def simulate(self, layout, plan, probs, labels, p, mean, n_reps, rng, *, output_variance=None,
                 with_dof: bool = False):
        """Batched repetitions on a fully labelled pool (benchmarks): estimates and covariances.

        The judging sequence of a query is a deterministic function of its labels, so
        ``D`` and ``P`` are computed once per query; a repetition only draws the
        Poisson sample and the uniforms.

        Returns
        -------
        estimate : ndarray of shape (n_reps, t)
        covariance : ndarray of shape (n_reps, t, t)
        n : ndarray of shape (n_reps,)
            Sampled queries.
        cost : ndarray of shape (n_reps,)
            Realized cost.

        With ``output_variance`` (the model's per-query variance of every output, shape
        (n_queries, t)) the covariance is pooled with the model's prediction as the engine
        does (:func:`pooled_covariance`).  With ``with_dof`` a fifth array of shape (n_reps,)
        holds the interval's degrees of freedom, as the engine reports them (``ci="auto"``).
        """
        order = self.order
        live = plan.pi > 0
        q = np.flatnonzero(live)
        R = layout.values
        f = R[labels[np.maximum(layout.rows[q], 0)]]
        rho, sd = layout.document_values(probs, q)
        docs, g, a = judging_paths(layout, q, layout.system_values(probs), sd, f, order=order)
        m = docs >= 0
        D = ((_by_step(f, docs) - _by_step(rho, docs)))[..., None] * g
        P = stop_probabilities(a, plan.floor[q], plan.tau[q])
        step_cost = _by_step(layout.cost[q], docs)
        t = layout.contrast.shape[0]
        pool_mean = p @ mean
        model_var = None if output_variance is None else plan.model_variance(p, output_variance)
        est = np.zeros((n_reps, t))
        cov = np.zeros((n_reps, t, t))
        n = np.zeros(n_reps, dtype=np.int64)
        cost = np.zeros(n_reps)
        dof = np.zeros(n_reps)
        for r in range(n_reps):
            s = rng.random(q.size) < plan.pi[q]
            U = rng.random(int(s.sum()))
            judged = m[s] & (U[:, None] <= P[s])
            e, V = within_estimate(D[s], P[s], judged)
            est[r], cov[r] = prefix_estimate(e, V, plan.pi[q][s], p[q][s], pool_mean)
            n[r] = s.sum()
            k_eff = prefix_dof(e, V, plan.pi[q][s], p[q][s])
            dof[r] = k_eff if k_eff > 0 else (PRIOR_DOF if model_var is not None else max(n[r] - 1.0, 1.0))
            if model_var is not None:
                cov[r] = pooled_covariance(cov[r], n[r], model_var)
            cost[r] = float(np.where(judged, step_cost[s], 0.0).sum())
        if with_dof:
            return est, cov, n, cost, dof
        return est, cov, n, cost

    def __repr__(self) -> str:
        return f"PrefixSampling(n_sims={self.n_sims}, order={self.order!r})"
