"""The ``prefix`` method's plug-in: the design-kind protocol, the two-stage estimate and its
variance (:class:`PrefixSampling`)."""

from __future__ import annotations

import hashlib
import math
import weakref
from dataclasses import dataclass

import numpy as np

from ....inference.estimators import Estimate
from ....inference.small_sample.clusters import cluster_dof
from ..base import NO_LABELS, DesignFit, DesignKind, LabelRequest
from ..query import clamp_cost
from .budget import WalkMemo, budget_walk, depth_tables, fits_limit
from .layout import PrefixLayout, _by_step, judging_paths, prefix_layout, stop_probabilities
from .plan import N_PLANNING_SIMULATIONS, PrefixPlan, PrefixPlanner, prefix_planner

__all__ = ["MIN_COMPLETED", "PLANNING_SEED", "PRIOR_DOF", "PrefixDraw", "PrefixRun", "PrefixSampling", "design_layout",
           "expected_completed", "pooled_covariance", "prefix_dof", "prefix_estimate", "within_estimate"]

#: Seed of the planning simulations: the plan of a design is a function of the design and the documents held
#: (the run's ``rng`` only draws), so ``method="auto"``'s prediction and the run share one planning pass.
PLANNING_SEED = 20121

#: Completed queries the budget must buy in expectation (a standard error needs 2).
MIN_COMPLETED = 2.0


def expected_completed(plan: PrefixPlan) -> float:
    """The model's expected number of completed queries under the hard budget: the planned ``sum pi``
    (the Poisson design's sample size at the same expected cost) less the one query the budget cuts
    (``docs/prefix.md`` §7; renewal bound ``E[K] >= B / c - 1``)."""
    return float(plan.pi.sum()) - 1.0


@dataclass(frozen=True, eq=False)
class PrefixRun:
    """What a ``prefix`` run fixes before its draw: the judging layout and the plan (None when every query
    is determined), and the budget (a hard cap on the cost of the labels bought)."""

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
    """Every live query (pool positions) in priority order: ascending ``xi = u / pi``, with its uniform ``U``
    of the within-query walk (the budget decides how many of them are judged, ``docs/prefix.md`` §7)."""

    queries: np.ndarray
    U: np.ndarray
    xi: np.ndarray | None = None  # None: a sample stored before the hard budget (refused by ``walk``)


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
    """Plug-in of the ``prefix`` method: queries in priority order under a hard budget, a random-depth prefix
    judged in each (module doc).

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
        # design -> {documents held: (layout, planner)}; dies with the design (method="auto" predicts, then runs)
        self._planners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # draw -> (run, model, WalkMemo): the walk states of a run's earlier batches; dies with the draw
        self._walks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def planner(self, layout, probs, p, variance, live, rng, *, defensive=0.1) -> PrefixPlanner:
        """The planning simulations, from which the plan of any budget follows (:func:`prefix_planner`)."""
        return prefix_planner(layout, probs, p, variance, live, rng, defensive=defensive, n_sims=self.n_sims,
                              order=self.order)

    def design_planner(self, design, judged=None) -> tuple[PrefixLayout, PrefixPlanner]:
        """The judging layout of ``design`` with the documents in ``judged`` free (bool per row or None) and
        its planning simulations, seeded by :data:`PLANNING_SEED`: computed once per design and set of
        documents held, so ``method="auto"``'s prediction and the run it chooses plan once."""
        held = judged is not None and bool(np.any(judged))
        key = hashlib.sha1(np.packbits(np.asarray(judged, dtype=bool)).tobytes()).hexdigest() if held else None
        cache = self._planners.setdefault(design, {})
        if key not in cache:
            layout = design_layout(design, judged if held else None)
            cache[key] = layout, self.planner(layout, design.probs, design.p, design.prediction.variance,
                                              design.q > 0, np.random.default_rng(PLANNING_SEED),
                                              defensive=design.defensive)
        return cache[key]

    def plan_queries(self, layout, probs, p, variance, live, budget, rng, *, defensive=0.1) -> PrefixPlan:
        """Query inclusion probabilities and stopping rules for ``budget`` (:func:`plan_prefix`)."""
        return self.planner(layout, probs, p, variance, live, rng, defensive=defensive).allocate(float(budget))

    @staticmethod
    def draw_queries(plan: PrefixPlan, rng):
        """The priority order of the live queries and their uniforms: ``(queries, U, xi)``, ``xi = u / pi``
        ascending (order sampling; the budget stop decides the sample, ``docs/prefix.md`` §7)."""
        q = np.flatnonzero(plan.pi > 0)
        xi = rng.random(q.size) / plan.pi[q]
        o = np.argsort(xi, kind="stable")
        return q[o], rng.random(q.size), xi[o]

    @staticmethod
    def check_budget(planner: PrefixPlanner, plan: PrefixPlan, budget: float) -> None:
        """Refuse (ValueError) a budget that completes fewer than :data:`MIN_COMPLETED` queries in expectation,
        naming the smallest budget that does."""
        if plan.exact or expected_completed(plan) >= MIN_COMPLETED - 1e-6:
            return
        usable = planner.smallest_budget(MIN_COMPLETED + 1.0)
        raise ValueError(f"`budget`={budget:g} is too small for the prefix method: it completes about "
                         f"{max(expected_completed(plan), 0.0):.3g} queries in expectation under the model (the "
                         f"planned {plan.pi.sum():.3g} less the one the hard budget cuts); at least "
                         f"{MIN_COMPLETED:g} are needed for a standard error. The smallest usable budget is "
                         f"about {usable:g}.")

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
        """The judging layout (documents in ``judged`` cost nothing) and the plan for ``budget``.  The
        planning simulations are seeded by :data:`PLANNING_SEED`, not ``rng`` (:meth:`design_planner`: the
        ones :meth:`predicted_variance` ran are reused); the estimator's unbiasedness does not depend on
        them.  Raises before any label when the budget samples fewer than 2 queries in expectation."""
        if not design.q.any():  # every query is determined: nothing to draw or judge
            return PrefixRun(None, None, float(budget))
        layout, planner = self.design_planner(design, judged)
        plan = planner.allocate(float(budget))
        self.check_budget(planner, plan, float(budget))
        return PrefixRun(layout, plan, float(budget))

    def draw(self, design, plan: PrefixRun, rng) -> PrefixDraw | None:
        """The priority order of the live queries and their uniforms (:meth:`draw_queries`)."""
        if plan.plan is None:
            return None
        return PrefixDraw(*self.draw_queries(plan.plan, rng))

    def walk(self, design, plan: PrefixRun, sample: PrefixDraw, labels):
        """The hard-budget walks of ``sample`` given ``labels`` (:func:`.budget.budget_walk`)."""
        if sample.xi is None:
            raise ValueError("this prefix sample has no priorities `xi` (a Poisson sample stored before the prefix "
                             "method's hard budget): it cannot be judged or estimated by this version; draw it again.")
        layout, pplan = plan.parts()
        # a run asks for one batch after another on the same draw: the walks whose labels did not change are kept
        kept = self._walks.get(sample)
        if kept is None or kept[0] is not plan or kept[1] is not design.probs:
            kept = self._walks[sample] = (plan, design.probs, WalkMemo())
        return budget_walk(layout, design.probs, pplan, sample, self.order, labels, plan.budget, memo=kept[2])

    def labels_needed(self, design, plan: PrefixRun, sample: PrefixDraw | None, labels) -> LabelRequest:
        """The next document of every query whose walk surely goes on within the budget (one per query;
        :mod:`.budget`)."""
        if sample is None:
            return NO_LABELS
        bw = self.walk(design, plan, sample, labels)
        i = np.flatnonzero(bw.request)
        return LabelRequest(sample.queries[i], bw.walk.waiting[i])

    def predicted_variance(self, design, budget, *, under=None) -> float:
        """``sum_x p(x)^2 [(Var_theta[theta | x] + W(x)) / pi(x) - Var_theta[theta | x]]`` with the plan's
        inclusion probabilities and added within-query variance ``W`` for the budget less one mean query's
        cost (what the hard budget's cut loses); the planning simulations use the fixed
        :data:`PLANNING_SEED`, so the prediction does not depend on ``rng``."""
        if under is not None:
            raise NotImplementedError("prefix predicts its variance under its own model only (its walk stops on "
                                      "the model's predictions)")
        live = design.q > 0
        if not live.any():
            return 0.0
        _, planner = self.design_planner(design, design.judged)  # held documents free, as the run plans
        plan = planner.allocate(float(budget))
        if plan.exact:
            return 0.0
        self.check_budget(planner, plan, float(budget))
        # the hard budget loses about one query's cost to the cut: the Poisson variance one mean query lower
        plan = planner.allocate(float(budget) * (1.0 - 1.0 / float(plan.pi.sum())))
        ok = plan.pi > 0
        p, V, W, pi = design.p[ok], design.prediction.variance[ok], plan.within_variance[ok].sum(-1), plan.pi[ok]
        return float(np.sum(p**2 * ((V + W) / pi - V)))

    def estimate(self, design, plan: PrefixRun, sample: PrefixDraw | None, labels, *, held, ci="auto",
                 ci_rng=None) -> DesignFit:
        import pandas as pd

        from ..query import census_fit

        if sample is None:
            return census_fit(design, labels, plan.budget)
        d = design
        layout, pplan = plan.parts()
        bw = self.walk(d, plan, sample, labels)
        if not bw.finished:
            raise ValueError(f"{int(bw.request.sum())} sampled queries still wait for a judgment.")
        n = bw.n_used
        walked = n + 1 if bw.cut >= 0 else n  # the sample and the cut query, whose labels are bought too
        x = sample.queries[:walked]
        threshold = float(sample.xi[bw.cut]) if bw.cut >= 0 and sample.xi is not None else math.inf
        # the realized inclusion probability min(1, w xi_f) (1 when no query is cut); the cut query has none
        pi = np.minimum(1.0, pplan.pi[x] * threshold) if bw.cut >= 0 else np.ones(walked)
        used = np.arange(walked) < n
        pi = np.where(used, pi, np.nan)
        exact = pplan.exact and bw.cut < 0
        if n < 2 and not exact:
            raise ValueError(f"the budget ({plan.budget:g}) completed {n} quer{'y' if n == 1 else 'ies'} of the prefix "
                             "method's sample before it ran out (the hard budget makes the sample size random); no "
                             "standard error can be computed from fewer than 2. The judgments bought are kept (this "
                             "error's `judgments`): pass them back as `judgments=` (they cost nothing then) with a "
                             "larger budget.")
        walk = bw.walk
        D, P, judged, docs = walk.D[:walked], walk.P[:walked], walk.judged[:walked], walk.docs[:walked]
        rows = layout.rows[x]
        S = x[:n]
        e, V = within_estimate(D[:n], P[:n], judged[:n])
        est, cov = prefix_estimate(e, V, pi[:n], d.p[S], d.prediction.pool_mean(d.p))
        sample_cov = cov
        ov = d.prediction.output_variance
        pooled = ci != "normal" and ov is not None
        if pooled:  # small samples: the model's predicted variance pooled in
            cov = pooled_covariance(cov, n, pplan.model_variance(d.p, ov))
        # the t's degrees of freedom: from the queries that carry the sample's variance, not all those sampled
        k_eff = prefix_dof(e, V, pi[:n], d.p[S])
        jq, js = np.nonzero(judged)
        doc_rows = rows[jq, docs[jq, js]]
        step_rows = np.take_along_axis(rows, np.maximum(docs, 0), axis=1)  # the row judged at every step
        new = judged & ~np.asarray(held, dtype=bool)[np.maximum(step_rows, 0)]
        step_cost = np.where(docs >= 0, np.take_along_axis(layout.cost[x], np.maximum(docs, 0), axis=1), 0.0)
        charged_doc = np.where(new, step_cost, 0.0)
        trace = pd.DataFrame({
            "query": x[jq], "doc_row": doc_rows, "step": js, "layout_position": docs[jq, js], "pi": pi[jq],
            "P": P[jq, js], "p": d.p[x[jq]], "new": new[jq, js], "cost": charged_doc[jq, js],
            "grade": labels[doc_rows], "used": used[jq],
        })
        trace["cumulative_cost"] = np.cumsum(trace["cost"].to_numpy())
        cost = clamp_cost(float(charged_doc.sum(1).sum()), plan.budget)  # per query, then over queries
        trace.attrs.update(design="queries in priority order (xi = u / pi), a random-length sequence of documents "
                                  "judged in each until the budget is spent; the query the budget cuts is not "
                                  "used (prefix, hard budget)",
                           expected_cost=float(pplan.budget), n_sampled_queries=int(n),
                           cut_query=int(x[n]) if bw.cut >= 0 else None, threshold=threshold,
                           budget_left=float(plan.budget - cost),
                           sample_variance=np.diag(sample_cov).tolist(), dof=k_eff)
        if exact or ci == "normal":
            dof = math.inf
        elif k_eff > 0:
            dof = k_eff
        else:  # no sample variance: the model's (its pseudo degrees of freedom), or nothing to widen
            dof = PRIOR_DOF if pooled else float(max(n - 1, 1))
        main = Estimate(est, np.zeros_like(cov) if exact else cov, float(n))
        own = main if d.target.kind == "mean" else None
        return DesignFit(main, own, dof, int(n), int(n), cost, plan.budget, exact, trace,
                         ci="normal" if math.isinf(dof) else "t")

    def simulate(self, layout, plan, probs, labels, p, mean, n_reps, rng, *, output_variance=None,
                 with_dof: bool = False, budget: float | None = None, chunk: int = 64):
        """Batched repetitions of the hard-budget design on a fully labelled pool (benchmarks, planning).

        The judging sequence of a query is a deterministic function of its labels and a
        walk judges its first ``d`` steps for ``d = #{j : U <= P_j}``, so the within-query
        estimate, its variance estimate and the cost of every depth are tabled once per
        query (:func:`.budget.depth_tables`); a repetition draws the priorities and the
        uniforms, cuts the priority order at the budget and reads the tables.

        Parameters
        ----------
        budget : float, optional
            The hard budget (default: the plan's expected cost ``plan.budget``).

        Returns
        -------
        estimate : ndarray of shape (n_reps, t)
        covariance : ndarray of shape (n_reps, t, t)
        n : ndarray of shape (n_reps,)
            Completed (used) queries.
        cost : ndarray of shape (n_reps,)
            Realized cost (at most the budget), the cut query's bought labels included.

        With ``output_variance`` (the model's per-query variance of every output, shape
        (n_queries, t)) the covariance is pooled with the model's prediction as the engine
        does (:func:`pooled_covariance`).  With ``with_dof`` a fifth array of shape (n_reps,)
        holds the interval's degrees of freedom, as the engine reports them (``ci="auto"``).
        """
        B = float(plan.budget if budget is None else budget)
        limit = fits_limit(B)
        q = np.flatnonzero(plan.pi > 0)
        R = layout.values
        f = R[labels[np.maximum(layout.rows[q], 0)]]
        rho, sd = layout.document_values(probs, q)
        docs, g, a = judging_paths(layout, q, layout.system_values(probs), sd, f, order=self.order)
        m = docs >= 0
        D = ((_by_step(f, docs) - _by_step(rho, docs)))[..., None] * g
        P = np.where(m, stop_probabilities(a, plan.floor[q], plan.tau[q]), 0.0)  # no step past the last
        E, Vt, C = depth_tables(D, P, m, _by_step(layout.cost[q], docs))
        w, pq = plan.pi[q], p[q]
        t = layout.contrast.shape[0]
        pool_mean = p @ mean
        model_var = None if output_variance is None else plan.model_variance(p, output_variance)
        est = np.zeros((n_reps, t))
        cov = np.zeros((n_reps, t, t))
        n = np.zeros(n_reps, dtype=np.int64)
        cost = np.zeros(n_reps)
        dof = np.zeros(n_reps)
        for lo in range(0, n_reps, chunk):
            r = min(chunk, n_reps - lo)
            xi = rng.random((r, q.size)) / w
            U = rng.random((r, q.size))
            depth = (U[:, :, None] <= P[None]).sum(-1)  # judged steps of every query's walk
            o = np.argsort(xi, axis=1, kind="stable")
            dep = np.take_along_axis(depth, o, axis=1)
            cq = C[o, dep]  # (r, n) realized cost in priority order
            cum = np.cumsum(cq, axis=1)
            k = (cum <= limit).sum(1)  # completed queries (cum is non-decreasing)
            for i in range(r):
                ki, ri = int(k[i]), lo + i
                spent = float(cum[i, ki - 1]) if ki else 0.0
                if ki < q.size:  # the cut query: its walk stops before the first label that does not fit
                    fc, fd = int(o[i, ki]), int(dep[i, ki])
                    part = int(np.searchsorted(C[fc, :fd + 1], limit - spent, side="right")) - 1
                    spent += float(C[fc, part])
                    pi = np.minimum(1.0, w[o[i, :ki]] * xi[i, fc])
                else:
                    pi = np.ones(ki)
                s, ds = o[i, :ki], dep[i, :ki]
                e, V = E[s, ds], Vt[s, ds]
                est[ri], cov[ri] = prefix_estimate(e, V, pi, pq[s], pool_mean)
                n[ri], cost[ri] = ki, spent
                k_eff = prefix_dof(e, V, pi, pq[s]) if ki else 0.0
                dof[ri] = k_eff if k_eff > 0 else (PRIOR_DOF if model_var is not None else max(ki - 1.0, 1.0))
                if model_var is not None:
                    cov[ri] = pooled_covariance(cov[ri], ki, model_var)
        if with_dof:
            return est, cov, n, cost, dof
        return est, cov, n, cost

    def __repr__(self) -> str:
        return f"PrefixSampling(n_sims={self.n_sims}, order={self.order!r})"
