"""Schedules: how draws proceed.  Each implements ``_run(ctx) -> Draws`` and nothing else.

:class:`FixedBudget`
    Algorithm 1 of Sawade et al. (2012): i.i.d. draws from ``q`` until the
    budget is spent (a query's first draw is charged, repeats are free).
:class:`Sequential`
    Target precision: the same draw sequence, labeled one draw at a time,
    stopping once an anytime-valid confidence sequence is narrow enough
    (:mod:`activerank.inference.sequences`).
:class:`Adaptive`
    Batches; the relevance model is refit on the judgments acquired so far
    and ``q`` recomputed before every batch; the batches (and earlier
    campaigns' draws) are combined by multiple importance sampling
    (:mod:`activerank.inference.mis`), census sets of fully judged queries
    enter as an exactly known stratum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._validation import max_draws_iv, py_scalar
from ..design.design import build_design
from ..inference.confidence_sequences import expected_draws, fixed_width_radius, windowed_cs
from ..inference.mis import mixture
from ..inference.model_assisted import tuned_coefficient
from ..inference.sequences import _alpha, choose_t_opt, rho_for_time
from ..design.costs import RemainingCosts
from ..design.kinds.base import DesignFit
from ..design.kinds.query import clamp_cost
from .core import Draws, RunContext, Schedule

__all__ = ["Adaptive", "FixedBudget", "PriorJudgments", "STOPPING_REASONS", "Sequential", "reuse_iv"]

STOPPING_REASONS = ("target", "budget", "all_judged", "all_reachable_judged", "max_draws")


# --------------------------------------------------------------------------- fixed budget


class FixedBudget(Schedule):
    """Any design kind for a fixed ``budget``: plan, draw, label every batch the design asks for, estimate.

    The steps are the design kind's (:mod:`activerank.design.kinds.base`); labels held before the run
    (``judgments=``) are never asked for again.
    """

    name = "fixed"

    def __init__(self, budget: float, rng):
        self.budget = budget
        self.rng = rng

    def _run(self, ctx: RunContext) -> DesignFit:
        d = ctx.design
        kind = d.method_spec.kind
        held = ctx.judgments.labels >= 0
        plan = kind.plan(d, self.budget, judged=held, rng=self.rng)
        sample = kind.draw(d, plan, self.rng)
        while True:
            request = kind.labels_needed(d, plan, sample, ctx.judgments.labels)
            if not len(request):
                break
            ctx.label_request(request, held=held)
        return kind.estimate(d, plan, sample, ctx.judgments.labels, held=held, ci=ctx.ci, ci_rng=ctx.ci_rng)


# --------------------------------------------------------------------------- target precision


class Sequential(Schedule):
    """Label one draw at a time until the interval's half-width meets the target.

    The draws are those of :class:`FixedBudget` with the same budget and seed
    (draw ``j`` uses the same uniform number), cut at the first draw at which
    the half-width is at most ``target_half_width`` (and at least
    ``min_draws`` draws were made): of an anytime-valid asymptotic confidence
    sequence (``sequence="windowed"`` or ``"mixture"``), or of the
    fixed-width (Chow-Robbins) interval (``"fixed_width"``).
    """

    name = "sequential"

    def __init__(self, budget: float, rng, *, target_half_width: float, confidence_level: float,
                 min_draws: int, max_draws: int | None, t_opt: float | None, sequence: str = "windowed"):
        self.sequence = sequence
        self.budget = budget
        self.rng = rng
        self.target = target_half_width
        self.level = confidence_level
        self.min_draws = min_draws
        self.max_draws = max_draws
        self.t_opt = t_opt

    def _centers(self, d) -> np.ndarray:
        """The model's predicted pool means of the tracked columns (fixed before any label)."""
        pred = d.prediction
        if d.target.kind == "mean":
            return pred.pool_mean(d.p)
        system = [float(np.dot(d.p, pred.system_mean[:, i])) for i in range(pred.system_mean.shape[1])]
        return np.array(system + list(pred.pool_mean(d.p)))

    def _rho(self, d, c_last: float) -> float:
        p, q, cost = d.p, d.q, d.costs.cost
        # sigma of the stopping terms under the model, only to tune where the sequence is tightest
        mu, var = d.prediction.mean[:, 0], d.prediction.variance
        w2 = np.where(q > 0, p * p / np.where(q > 0, q, 1.0), 0.0)
        sigma = float(np.sqrt(max(np.sum(w2 * (var + (mu - c_last) ** 2)), 0.0)))
        t_opt = self.t_opt
        if t_opt is None:
            t_budget = self.budget / float(np.dot(q, cost))
            t_opt = choose_t_opt(sigma, self.target, self.level, t_budget, self.min_draws)
        return rho_for_time(float(t_opt), self.level)

    def _run(self, ctx: RunContext) -> Draws:
        d = ctx.design
        p, q = d.p, d.q
        max_draws = max_draws_iv(self.max_draws, p.size)
        c = self._centers(d)
        if not q.any():  # every query is determined: the contrast is exactly 0
            none = Draws.census_only(d, self.budget)
            anytime = dict(centers=c, rho=np.nan, confidence_level=float(self.level), target=float(self.target),
                           reason="all_judged", center_run=np.zeros(0), radius=np.zeros(0),
                           sequence=self.sequence)
            return Draws(none.queries, none.new, none.charged, none.q, none.weights, none.budget, 0.0,
                         "all_judged", census=none.census, anytime=anytime)
        window, fixed = None, self.sequence == "fixed_width"
        if fixed:
            rho = np.nan
        elif self.sequence == "windowed":
            # the window of stopping times is known before the first label: min_draws .. draws the budget buys
            t_max = max(self.min_draws + 1,
                        math.ceil(expected_draws(q, d.costs.cost, self.budget, max_draws=max_draws)))
            cs = windowed_cs(self.min_draws, t_max, self.level)
            rho, window = cs.rho, (cs.t_min, cs.t_max)
        else:
            rho = self._rho(d, float(c[-1]))
        # determined queries (a census stratum, contrast exactly 0) are never drawn: the centered terms
        # c * share + w (L - c) stay unbiased with share = the p-mass of the drawn stratum
        share = 1.0 - float(p[d.census].sum()) if d.census.size else 1.0
        plan = ctx.draw(q, d.costs.cost, self.budget, self.rng, max_draws=max_draws)
        cv = None
        if self.sequence != "mixture":
            # the control variate's centre is the model's mean over the drawn stratum, so that
            # E_q[w (m - C)] = 0 exactly (C = c when nothing is determined, share = 1)
            m = d.prediction.mean[:, 0]
            live = np.ones(p.size, dtype=bool)
            live[d.census] = False
            cv = _PredictableTerms(c[-1], m, pool_prediction=float(p[live] @ m[live]) / share,
                                   offset=c[-1] * share)
        w_of = np.where(q > 0, p / np.where(q > 0, q, 1.0), 0.0)
        known: dict = {}
        centers, radii = [], []
        mean = m2 = 0.0
        r2, log_a = rho * rho, math.log(_alpha(self.level))
        stop, reason = plan.n_draws, None
        for j, (x, is_new) in enumerate(zip(plan.queries.tolist(), plan.new.tolist())):
            if is_new:
                ctx.label(x, where=f" (draw {j})")
                known[x] = self._tracked(d, ctx.values([x])[x])
            if cv is not None:  # a predictable control variate: the coefficient uses earlier draws only
                z = cv.add(x, w_of[x], known[x][-1])
            else:
                z = c[-1] * share + w_of[x] * (known[x][-1] - c[-1])
            t = j + 1
            delta = z - mean  # Welford running mean / variance (divisor t)
            mean += delta / t
            m2 += delta * (z - mean)
            if fixed:
                rad = float(fixed_width_radius(t, math.sqrt(max(m2, 0.0) / t), self.level))
            elif window is not None:
                rad = float(cs.radius(t, math.sqrt(max(m2, 0.0) / t)))
            else:
                v = t * r2 + 1.0
                rad = math.sqrt(max(m2, 0.0) / t) * math.sqrt(2.0 * v / (t * t * r2) * (0.5 * math.log(v) - log_a))
            centers.append(mean)
            radii.append(rad)
            if t >= self.min_draws and rad <= self.target:
                stop, reason = t, "target"
                break
        if reason is None:
            reason = plan.stop_reason
            if reason == "all_reachable":
                done = np.zeros(p.size, dtype=bool)
                done[list(known)] = True
                done[d.census] = True
                reason = "all_judged" if done[p > 0].all() else "all_reachable_judged"
        draws = Draws.from_plan(plan, d, stop=stop)
        anytime = dict(centers=c, rho=rho, confidence_level=float(self.level), target=float(self.target),
                       reason=reason, center_run=np.asarray(centers), radius=np.asarray(radii), window=window,
                       terms=None if cv is None else cv.terms(), sequence=self.sequence)
        return Draws(draws.queries, draws.new, draws.charged, draws.q, draws.weights, draws.budget,
                     draws.cost_spent, reason, census=draws.census, anytime=anytime)

    @staticmethod
    def _tracked(d, system_values: np.ndarray) -> np.ndarray:
        """The values a run tracks for one query: the system values, then the contrast (pairs)."""
        if d.target.kind == "mean":
            return system_values
        return np.concatenate([system_values, d.target.outputs(system_values[None, :])[0]])


class _PredictableTerms:
    """Running terms ``Z_j = M + w_j (v_j - M - beta_{j-1} (m_j - M))`` of a target-precision run.

    ``beta_{j-1}`` is the shrunken variance-optimal coefficient of the draws
    before ``j`` (0 until 10 distinct queries were seen), the same as
    :func:`activerank.inference.confidence_sequences.predictable_terms` computes
    for a whole run, kept here as running sums (O(1) per draw).  Every term
    still has conditional mean ``R``: the sequence stays valid, and a useful
    model shrinks the labels needed (docs/intervals.md).
    """

    MIN_DISTINCT = 10

    def __init__(self, center: float, predictions: np.ndarray, *, pool_prediction: float | None = None,
                 offset: float | None = None):
        self.c = float(center)
        # ``Z = A + w (v - c - beta (m - C))``: ``C`` the model's mean over the sampled stratum, ``A`` the
        # centre's share of it (``A = c`` and ``C = c`` without a census stratum)
        self.C = self.c if pool_prediction is None else float(pool_prediction)
        self.A = self.c if offset is None else float(offset)
        self.m = predictions
        self.sums = np.zeros(6)  # n, sum u, sum g, sum ug, sum gg, sum uu
        self.seen: set = set()
        self.scale = float(np.finfo(float).tiny)
        self.z: list = []

    def add(self, x: int, w: float, value: float) -> float:
        n, su, sg, sug, sgg, suu = self.sums
        u, g = w * (value - self.c), w * (float(self.m[x]) - self.C)
        self.scale = max(self.scale, g * g)
        beta = 0.0
        if len(self.seen) >= self.MIN_DISTINCT:
            ub, gb = su / n, sg / n
            mm, vv = max(sgg - n * gb * gb, 0.0), max(suu - n * ub * ub, 0.0)
            informative = np.array(mm > 1e-12 * self.scale * max(n, 1.0))
            b = float(tuned_coefficient(np.array(sug - n * ub * gb), np.array(mm), np.array(vv),
                                        np.array(float(len(self.seen))), informative))
            beta = b if math.isfinite(b) else 0.0
        self.sums += (1.0, u, g, u * g, g * g, u * u)
        self.seen.add(x)
        self.z.append(self.A + u - beta * g)
        return self.z[-1]

    def terms(self) -> np.ndarray:
        return np.asarray(self.z)


# --------------------------------------------------------------------------- adaptive batches


@dataclass(frozen=True, eq=False)
class PriorJudgments:
    """Judgments from an earlier campaign, for :func:`activerank.estimate_adaptive` to reuse.

    Build with :meth:`from_draws` (an importance-sampled campaign: draws and the
    distribution they came from) or :meth:`from_census` (queries judged in full).

    Attributes
    ----------
    judgments : dict
        ``{query_id: {doc_id: grade}}``.
    draws : tuple or None
        Query ids drawn, in order, with repetitions (``from_draws`` only).
    q : dict or ndarray or None
        Sampling distribution of ``draws`` over the pool (``from_draws`` only).
    census : bool
        True for a census set.

    Examples
    --------
    >>> old = PriorJudgments.from_draws({7: {0: 2, 1: 0}}, draws=[7, 7], q={7: 0.4, 9: 0.6})
    >>> old.census, len(old.draws)
    (False, 2)
    >>> PriorJudgments.from_census({9: {2: 1}}).census
    True
    """

    judgments: Mapping
    draws: tuple | None = None
    q: object = None
    census: bool = False

    @classmethod
    def from_draws(cls, judgments, draws, q) -> "PriorJudgments":
        """Earlier importance-sampled draws.

        Parameters
        ----------
        judgments : dict
            ``{query_id: {doc_id: grade}}`` covering every drawn query.
        draws : sequence of query ids
            The draw sequence (with repetitions); draws of queries outside the
            current pool are allowed and only count towards ``n_0``.
        q : dict ``{query_id: probability}`` or array of shape (n_queries,)
            The distribution the draws came from, evaluated on the current
            pool (missing queries of a dict have probability 0).
        """
        if draws is None or q is None:
            raise ValueError("`draws` and `q` are both required for reused draws.")
        return cls(judgments, tuple(np.asarray(draws).tolist()), q, False)

    @classmethod
    def from_census(cls, judgments) -> "PriorJudgments":
        """Queries judged in full ("all judged"): their contribution is exact."""
        return cls(judgments, None, None, True)


def reuse_iv(reuse) -> list:
    """``None``, a :class:`~activerank.engine.schedules.PriorJudgments` or a list of them -> list."""
    if reuse is None:
        return []
    items = [reuse] if isinstance(reuse, PriorJudgments) else list(reuse) if isinstance(reuse, (list, tuple)) else None
    if items is None or not all(isinstance(r, PriorJudgments) for r in items):
        raise TypeError("`reuse` must be a PriorJudgments or a list of them "
                        "(PriorJudgments.from_draws / PriorJudgments.from_census).")
    for r in items:
        if not isinstance(r.judgments, Mapping):
            raise ValueError("`reuse` judgments must be a dict {query_id: {doc_id: grade}}.")
    return items


def _prior_q(q, pool, index) -> np.ndarray:
    m = pool.n_queries
    if isinstance(q, Mapping):
        out = np.zeros(m)
        for qid, v in q.items():
            if py_scalar(qid) in index:
                out[index[py_scalar(qid)]] = float(v)
    else:
        out = np.asarray(q, dtype=np.float64).reshape(-1)
        if out.size != m:
            raise ValueError(f"`reuse` q must have one entry per pool query ({m}); got {out.size}.")
    bad = ~np.isfinite(out) | (out < 0) | (out > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`reuse` q must be probabilities in [0, 1]; query {pool.query_key(i)!r} has {out[i]!r}.")
    if out.sum() > 1 + 1e-9:
        raise ValueError(f"`reuse` q sums to {out.sum():.6g} > 1 over the pool.")
    return out


class Adaptive(Schedule):
    """Batches with refitting, multiple-importance weights and reuse (see the module notes)."""

    name = "adaptive"

    def __init__(self, budget: float, rng, *, model, X, probs, probs_now, fitted: bool, n_batches: int,
                 refit: str, train, reuse: list, weights: str, method):
        self.budget = budget
        self.rng = rng
        self.model = model
        self.X = X
        self.probs = probs
        self.probs_now = probs_now
        self.fitted = fitted
        self.n_batches = n_batches
        self.refit = refit
        self.train = train
        self.reuse = reuse
        self.weights = weights
        self.method = method

    def method_label(self, design) -> str:
        return "adaptive"

    def _design(self, d, probs, p_rest):
        return build_design(d.target, probs, method=self.method, p=p_rest / p_rest.sum(), doc_costs=d.document_costs,
                            cost_model=d.costs.model, per_query_cost=d.costs.model == "uniform",
                            defensive=d.defensive)

    def _run(self, ctx: RunContext) -> Draws:
        import pandas as pd

        d, pool, store = ctx.design, ctx.pool, ctx.judgments
        budget, p, m = self.budget, d.p, d.p.size
        union = RemainingCosts(d.target, d.costs, d.document_costs)
        index = pool.query_index()
        # ---- reuse: load judgments, census set, earlier draw components
        census = np.zeros(m, dtype=bool)
        comps_q, comps_n, comps_draws, comps_src = [], [], [], []
        for i, r in enumerate(self.reuse):
            store.load(r.judgments, name="reuse", unknown_queries="ignore")
            if r.census:
                for qid in r.judgments:
                    if py_scalar(qid) in index:
                        census[index[py_scalar(qid)]] = True
                continue
            q0 = _prior_q(r.q, pool, index)
            in_pool = np.array([index.get(py_scalar(q), -1) for q in r.draws], dtype=np.int64)
            x0 = in_pool[in_pool >= 0]
            if x0.size and (q0[x0] <= 0).any():
                raise ValueError(f"`reuse`: query {pool.query_key(x0[q0[x0] <= 0][0])!r} was drawn but its q is 0.")
            comps_q.append(q0)
            comps_n.append(len(r.draws))
            comps_draws.append(x0)
            comps_src.append(f"reuse[{i}]")
        spent = 0.0
        rows_batches, trace_parts = [], []
        # complete reused queries whose current top-k lists have unjudged documents
        complete_first = np.unique(np.concatenate([np.flatnonzero(census)] + comps_draws)) \
            if (census.any() or comps_draws) else np.zeros(0, dtype=np.int64)
        if complete_first.size:
            rem = union.remaining(store.labels)[complete_first]
            need = float(rem.sum())
            if need > budget + 1e-12 * budget:
                raise ValueError(f"`budget`={budget:g} cannot cover completing the reused queries' unjudged "
                                 f"documents (cost {need:.4g}).")
            for x in complete_first[rem > 0]:
                ctx.label(int(x))
            spent += need
        for b, (n0, x0, src) in enumerate(zip(comps_n, comps_draws, comps_src)):
            rows_batches.append(dict(batch=b - len(comps_q), source=src, n_draws=n0, n_new=0, cost=0.0,
                                     allotted=0.0, train_docs=np.nan))
            trace_parts.append((np.full(x0.size, b - len(comps_q)), x0, np.zeros(x0.size, dtype=bool),
                                np.zeros(x0.size)))
        if spent > 0:
            rows_batches.append(dict(batch=-len(comps_q) - 1, source="reuse:complete", n_draws=0,
                                     n_new=int((union.remaining(store.labels)[complete_first] == 0).sum()),
                                     cost=spent, allotted=spent, train_docs=np.nan))

        census[d.census] = True  # determined queries: contrasts exactly 0, never drawn or judged
        p_rest = np.where(census, 0.0, p)
        sampling = p_rest.sum() > 1e-15
        fitted = self.fitted
        train_docs = 0 if (self.train is None or not fitted) else self.train[1].size
        probs = self.probs
        n_new_batches = 0
        dirty = bool((store.labels >= 0).any())  # judgments the model has not seen yet
        for b in range(self.n_batches if sampling else 0):
            if self.refit == "each_batch" and dirty:
                rows = np.flatnonzero(store.labels >= 0)
                Xf, yf = self.X[rows], store.labels[rows]
                if self.train is not None:
                    Xf, yf = np.vstack([self.train[0], Xf]), np.concatenate([self.train[1], yf])
                self.model.fit(Xf, yf)
                fitted = True
                train_docs = yf.size
                probs = None
                dirty = False
            if probs is None:
                probs = self.probs_now(fitted)
            q_b = self._design(d, probs, p_rest).q
            allot = budget * (b + 1) / self.n_batches - spent
            remaining = union.remaining(store.labels)
            if not ((q_b > 0) & (remaining > 0) & (remaining <= allot)).any():
                continue
            plan = ctx.draw(q_b, remaining, max(allot, 1e-300), self.rng)
            new = plan.new & (remaining[plan.queries] > 0)
            charged = np.where(new, remaining[plan.queries], 0.0)
            for j in np.flatnonzero(new):
                ctx.label(int(plan.queries[j]), where=f" (batch {n_new_batches}, draw {j})")
            spent += float(charged.sum())
            dirty = dirty or bool(new.any())
            rows_batches.append(dict(batch=n_new_batches, source="adaptive", n_draws=plan.n_draws,
                                     n_new=int(new.sum()), cost=float(charged.sum()), allotted=allot,
                                     train_docs=train_docs))
            trace_parts.append((np.full(plan.n_draws, n_new_batches), plan.queries, new, charged))
            comps_q.append(q_b)
            comps_n.append(plan.n_draws)
            n_new_batches += 1

        # ---- weights of every draw (balance heuristic, or each batch's own)
        qs = np.stack(comps_q) if comps_q else np.zeros((0, m))
        n_b = np.asarray(comps_n, dtype=np.float64)
        if trace_parts:
            b_col, x, new_col, cost_col = (np.concatenate(c) for c in zip(*trace_parts))
        else:
            b_col, x, new_col, cost_col = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                           np.zeros(0, dtype=bool), np.zeros(0))
        x = x.astype(np.int64)
        b_of = b_col + len(comps_src)  # row into qs
        in_rest = ~census[x]
        if sampling and x[in_rest].size == 0:
            raise ValueError(f"`budget`={budget:g} bought no draw outside the census set; increase it.")
        if qs.shape[0]:
            mix = mixture(qs, n_b)
            qcol = qs[b_of, x]
            denom = mix[x] if self.weights == "balance" else qcol
            w = np.where(in_rest, p[x] / np.where(denom > 0, denom, np.inf), 0.0)
        else:
            mix, w, qcol = np.zeros(m), np.zeros(0), np.zeros(0)
        attrs = {"cost_offset": spent - float(cost_col.sum()), "batches": pd.DataFrame(rows_batches), "q": qs,
                 "census_queries": [pool.query_key(i) for i in np.flatnonzero(census)]}
        return Draws(x, new_col, cost_col, qcol, w, budget, clamp_cost(spent, budget), None, batch=b_col,
                     q_mixture=mix[x], sampled=in_rest, census=np.flatnonzero(census), attrs=attrs)
