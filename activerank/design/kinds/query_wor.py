"""Query-level methods that sample *without* replacement: the design plug-in of a registered method.

Algorithm 1 of Sawade et al. draws queries with replacement until the budget
is spent; a redrawn query brings no new label.  A method whose estimator is a
:class:`WithoutReplacementDesign` instead takes a budgeted sequential Poisson
sample (:func:`activerank.design.without_replacement.draw_without_replacement`:
every query at most once, the cost of the sample -- not the number of draws --
within the budget, exact conditional inclusion probabilities ``pi_i``) with
scores equal to the method's ``q``, and estimates by the difference estimator

``R = M + sum_S (p_i / pi_i) (y_i - m_i)``

with the model's per-query predictions ``m`` and their exact pool value
``M = sum_pool p_i m_i``: the model's answer corrected by the Horvitz--Thompson
sum of the residuals.  With a fixed coefficient it is exactly unbiased, and
``sum_S (1 - pi_i) (p_i / pi_i)^2 (y_i - m_i)^2`` is an unbiased estimate of
its variance, at any pool size (the priority-sampling property of the design,
:mod:`activerank.design.without_replacement`: the weights ``1{i in S} / pi_i``
have mean 1 and are uncorrelated, checked by simulation in
``tests/design/test_without_replacement.py``).  The plug-in also offers the
Hájek-normalized form and a coefficient tuned on the sample (consistent, not
unbiased; :func:`activerank.inference.horvitz_thompson.hajek_kernel`).

Small samples.  The variance estimate ``sum_S omega_i e_i^2`` is a sum of
``n`` terms; at 5--20 queries it is noisy and, on pools where a few queries
carry most of the variance (index updates), often far too small.  As for the
with-replacement methods (:mod:`activerank.inference.small_sample`), the model's
predicted variance of the design at the budget,
``V_model = sum_pool p_i^2 (1/pi_i - 1) Var_theta[L|x_i]`` with the planning
probabilities ``pi_i ≈ min(1, c q_i)``
(:func:`~activerank.design.without_replacement.approximate_inclusion_probabilities`),
is pooled in as ``prior_dof`` pseudo degrees of freedom,
``SE^2 = (prior_dof V_model + (n - k) SE_hat^2) / (prior_dof + n - k)``, with
Student-t quantiles on ``n - k`` degrees of freedom (``k`` = 1, 2 with a tuned
coefficient; ``ci="normal"``: the sample's own variance and ``z``).

Small pools (issue 30).  When the budget buys a large share of a small pool
(at most ``small_pool`` = 200 queries that can be sampled, planned sampling
fraction >= ``SMALL_FRACTION`` = 0.2), a coefficient tuned on the sample is
biased -- by 10-12 Monte-Carlo SE with coverage 0.79 on the shipped 30-query
sample at budget 12 (17 of 30 queries) -- and the variance sum of 10-20 skewed
terms is unbiased but so noisy that Student-t on ``n - 1`` under-covers
(``benchmarks/results/wor_small_pool.md``).  There the plug-in

* fixes the coefficient at ``prior_coefficient`` (1 by default; a fixed
  ``coefficient`` is kept): the estimate and its variance estimate are exactly
  unbiased;
* gives the sample's variance Satterthwaite's degrees of freedom
  ``d = 2 V^2 / Var-hat(V)`` of its terms ``omega_i e_i^2`` (``n - 1`` for equal
  terms, about 1 when one query dominates), which set both its weight against
  the model's variance, ``(prior_dof V_model + d V_hat) / (prior_dof + d)``, and
  the Student-t quantile (on ``d``);
* uses the model's variance as a floor only: the reported variance is never
  below the sample's own, unbiased, one.

The inclusion probabilities stay the conditional ones (exact for the
estimator); the unconditional ones of the sampler, estimated by simulation
(:func:`~activerank.design.without_replacement.simulated_inclusion_probabilities`),
lowered the SD by 4-32% in the same benchmark, but neither the Poisson nor the
fixed-cost form of their variance estimate was right on every cell.

The engine runs every such method through one function,
:func:`activerank.engine.without_replacement.wor_sample`.

References
----------
.. [1] E. Ohlsson. "Sequential Poisson sampling." Journal of Official
   Statistics 14(2):149-162, 1998.
.. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992, §6.
.. [3] A. N. Angelopoulos, J. C. Duchi, T. Zrnic. "PPI++: Efficient
   prediction-powered inference." arXiv:2311.01453, 2023.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._validation import sample_budget_iv
from ...inference.estimators import Estimate
from ...inference.horvitz_thompson import _estimate, hajek_kernel
from ...inference.snis import kish_ess
from .base import NO_LABELS, DesignFit, DesignKind, LabelRequest, prediction_under
from ..without_replacement import (
    WORSample,
    approximate_inclusion_probabilities,
    draw_without_replacement,
    draw_without_replacement_batch,
)
from .query import (
    census_fit,
    clamp_cost,
    draws_trace,
    judged_count,
    sampled_stratum,
    value_columns,
)

__all__ = ["WORFit", "WithoutReplacementDesign"]

#: pools with at most this many queries that can be sampled are small when the budget buys at least
#: SMALL_FRACTION of them: a fixed coefficient, Satterthwaite's degrees of freedom
#: (benchmarks/results/wor_small_pool.md: the tuned coefficient is biased by up to 12 Monte-Carlo SE at
#: sampling fractions 0.4-0.7 and unbiased, and 20-35% more efficient, at 0.14 on OHSUMED)
SMALL_POOL = 200
SMALL_FRACTION = 0.2


@dataclass(frozen=True, eq=False)
class WORFit:
    """Estimate of one without-replacement sample.

    Attributes
    ----------
    estimate : Estimate
        Point estimates of the ``t`` outputs, their (moderated) covariance,
        Kish's effective sample size of ``g = p / pi`` and the coefficients.
    dof : float
        Degrees of freedom of the Student-t quantile (``inf``: normal).
    sample_variance : ndarray of shape (t,)
        The sample's own variance estimate of every output (before pooling).
    model_variance : ndarray of shape (t,) or None
        The model's predicted variance of the design at the budget.
    """

    estimate: Estimate
    dof: float
    sample_variance: np.ndarray
    model_variance: np.ndarray | None


class WithoutReplacementDesign(DesignKind):
    """Estimator plug-in of a query-level method that samples without replacement.

    Parameters
    ----------
    coefficient : float or None, default 1.0
        The control-variate coefficient ``beta``: a fixed number (1: the
        classical difference estimator, unbiased), or None to tune it on the
        sample, shrunk towards ``prior_coefficient``
        (:func:`activerank.inference.horvitz_thompson.hajek_kernel`; consistent,
        not unbiased).
    normalize : bool, default False
        Hájek (divide by ``sum_S p_i / pi_i``) or Horvitz--Thompson (exactly
        unbiased with a fixed coefficient).
    prior_coefficient : float, default 1.0
        Centre of the shrinkage of a tuned coefficient.
    prior_dof : float, default 2.0
        Pseudo degrees of freedom of the model's predicted variance in the
        standard error (0: the sample's variance alone).
    small_pool : int, default 200
        Pools with at most this many queries that can be sampled are small
        when the budget buys at least ``SMALL_FRACTION`` (0.2) of them: a fixed
        coefficient and Satterthwaite's degrees of freedom there (module
        notes; 0: never).

    Notes
    -----
    It draws and estimates itself (:meth:`draw`, :meth:`fit`); the engine's
    with-replacement estimator interface (``__call__``, ``prefix``) does not
    apply and raises.  Measured on MQ2008 and OHSUMED (LightGBM relevance
    model, 1000 runs per cell, scores ``p sqrt(Var / lambda)``): the
    Horvitz--Thompson difference estimator has no detectable bias and 0.14-0.92
    of the Hájek one's MSE on index updates, where a few queries carry the
    difference; Hájek is 0-40% better for one ranker, two rankers and k
    systems at 5-10 queries but biased by up to 10 Monte-Carlo standard
    errors on index updates.  With Horvitz--Thompson, a coefficient tuned on
    the sample and shrunk towards 1 (``coefficient=None``, what the
    registered ``active_wor`` uses since 0.3) was never worse than 1 by more
    than 2% and better by more than 5% in 27 of 64 cells, mostly at 5-10
    queries, with no bias beyond 2.6 Monte-Carlo SE; its variance estimate
    is inflated by ``n / (n - 1)`` for the fitted coefficient.  Those pools
    are sampled at fractions below 0.2; above it, on small pools, the tuned
    coefficient is biased and not used (module notes).
    """

    name = "wor_difference"
    uses_predictions = True

    def __init__(self, *, coefficient: float | None = 1.0, normalize: bool = False, prior_coefficient: float = 1.0,
                 prior_dof: float = 2.0, small_pool: int = SMALL_POOL):
        if coefficient is not None and not math.isfinite(coefficient):
            raise ValueError(f"`coefficient` must be a finite number or None; got {coefficient!r}.")
        if not (math.isfinite(prior_coefficient) and math.isfinite(prior_dof) and prior_dof >= 0):
            raise ValueError("`prior_coefficient` must be finite and `prior_dof` finite and >= 0.")
        if isinstance(small_pool, bool) or not isinstance(small_pool, (int, np.integer)) or small_pool < 0:
            raise ValueError(f"`small_pool` must be an integer >= 0; got {small_pool!r}.")
        self.coefficient = None if coefficient is None else float(coefficient)
        self.normalize = bool(normalize)
        self.prior_coefficient = float(prior_coefficient)
        self.prior_dof = float(prior_dof)
        self.small_pool = int(small_pool)

    # ------------------------------------------------------------------ the design-kind protocol

    def check(self, method, metric, target_kind, *, predicted) -> None:
        pass  # every metric, target and prediction

    def check_ci(self, ci, design) -> None:
        if ci == "bootstrap":
            raise ValueError("`ci`='bootstrap' (a studentized bootstrap over the distinct sampled queries) resamples "
                             f"with-replacement draws; method {design.method!r} takes one sample without replacement "
                             "(its interval pools the Horvitz-Thompson variance with the model's): use ci='auto', "
                             "'t' or 'normal'.")

    def plan(self, design, budget, *, judged, rng=None):
        """The scores (the method's ``q``), query costs and budget (None when every query is determined)."""
        if not design.q.any():
            return float(budget)
        return sample_budget_iv(budget, design.costs.cost, design.q)

    def draw(self, design, plan, rng) -> WORSample | None:
        if not design.q.any():  # every query is determined: nothing to draw or judge
            return None
        return self.draw_sample(design.q, design.costs.cost, plan, rng)

    def draw_sample(self, scores, costs, budget: float, rng) -> WORSample:
        """The budgeted sequential Poisson sample with ``scores`` (the method's ``q``)."""
        return draw_without_replacement(scores, costs, budget, rng)

    def labels_needed(self, design, plan, sample, labels) -> LabelRequest:
        if sample is None:
            return NO_LABELS
        x = sample.indices
        rows = [design.documents(int(xi)) for xi in x.tolist()]
        sizes = np.array([r.size for r in rows], dtype=np.int64)
        if not sizes.sum():
            return NO_LABELS
        return LabelRequest.of(np.repeat(x, sizes), np.concatenate(rows), labels)

    def query_draws(self, design, plan, sample):
        from ..sampling import DrawPlan

        if sample is None:
            empty = np.zeros(0, dtype=np.int64)
            return DrawPlan(queries=empty, new=np.zeros(0, dtype=bool), charged=np.zeros(0), budget=float(plan))
        return DrawPlan(queries=sample.indices, new=np.ones(sample.n, dtype=bool), charged=sample.cost,
                        budget=sample.budget)

    def predicted_variance(self, design, budget, *, under=None) -> float:
        """``share^2 * sum_x p'(x)^2 (1 / pi(x) - 1) Var_theta[theta | x]`` with the planning inclusion
        probabilities ``pi`` (``p'`` = ``p`` renormalized on the sampled stratum, ``share`` its mass); under
        another model (``under``) the variance around this design's control variate."""
        stratum = sampled_stratum(design)
        if stratum is None:
            return 0.0
        live, share, p_rest = stratum
        var = design.prediction.variance if under is None else prediction_under(design, under).variance
        pi = approximate_inclusion_probabilities(design.q, design.costs.cost, float(budget))
        ok = live & (pi > 0)
        return share**2 * float(np.sum(p_rest[ok] ** 2 * (1.0 / pi[ok] - 1.0) * var[ok]))

    def estimate(self, design, plan, sample, labels, *, held, ci="auto", ci_rng=None) -> DesignFit:
        if sample is None:  # every query is determined: the census alone, exactly
            return census_fit(design, labels, float(plan))
        return self.fit_sample(design, sample, float(plan), labels, ci=ci)

    def fit_sample(self, design, sample: WORSample, budget: float, labels, *, ci="auto") -> DesignFit:
        """The estimate of a without-replacement ``sample`` whose queries are judged in ``labels``."""
        d = design
        costs = d.costs.cost
        x, pi, charged = sample.indices, sample.pi, sample.cost
        small = self.is_small(d.q, costs, sample.budget)
        census = d.census
        p_rest = d.p.copy()
        p_rest[census] = 0.0
        share = float(p_rest.sum())
        p_norm = p_rest / share
        if x.size < 2 and sample.threshold != np.inf:
            raise ValueError(
                f"the budget ({budget:g}) bought {x.size} quer{'y' if x.size == 1 else 'ies'} outside the exactly "
                "known ones: no standard error can be computed from fewer than 2. Raise the budget "
                "(pass judgments=err.judgments to reuse the labels already bought).")
        target = d.target
        judged = np.union1d(x, census)
        pool_values = target.values(labels, judged, d.n_grades)  # full-pool arrays, filled on ``judged``
        pool_outputs = target.outputs(pool_values)
        system_values, outputs = pool_values[x], pool_outputs[x]
        pred = d.prediction
        model_var = self.model_variance(d.q, costs, budget, p_norm, pred.output_variance) if ci != "normal" \
            else None
        fit = self.fit(outputs, pred.mean[x], pi, p_norm[x], pred.pool_mean(p_norm), model_variance=model_var, ci=ci,
                       coefficient=self._small_coefficient() if small else None, satterthwaite=small)
        main = fit.estimate
        if census.size:
            exact = pool_outputs[census].T @ d.p[census]
            main = Estimate(exact + share * main.estimate, share**2 * main.covariance, main.effective_sample_size,
                            main.coefficient)
        own = None
        if target.kind != "mean" and target.changes is None:  # every document judged: each ranking's own value
            # every ranking with the contrasts' (shared) coefficient, so the contrasts of the rankings' own
            # estimates are the contrast estimates (estimate_a - estimate_b = difference)
            coef = np.asarray(main.coefficient, dtype=np.float64)
            beta = float(coef[0]) if coef.size and np.all(coef == coef[0]) else None
            own = self._own(ci, system_values, pred.system_mean, x, pi, p_norm, beta, small=small)
            if census.size:
                own = Estimate(pool_values[census].T @ d.p[census] + share * own.estimate,
                               share**2 * own.covariance, own.effective_sample_size)
        elif target.kind == "mean":
            own = main
        complete = sample.threshold == np.inf and bool(np.all(np.isin(np.flatnonzero(p_rest > 0), x)))
        if target.changes is not None:  # only documents that can change a contrast were judged
            system_values = np.full_like(system_values, np.nan)
        trace = draws_trace(d, x, d.q[x], d.p[x] / pi, np.ones(x.size, dtype=bool), charged,
                            value_columns(target, system_values, outputs))
        trace.insert(trace.columns.get_loc("q") + 1, "pi", pi)
        trace.attrs.update(design="budgeted sequential Poisson sampling without replacement (scores = q)",
                           small_pool=small,
                           threshold=float(sample.threshold), coefficient=np.asarray(main.coefficient).tolist(),
                           sample_variance=(share**2 * fit.sample_variance).tolist())
        if fit.model_variance is not None:
            trace.attrs["model_variance"] = (share**2 * fit.model_variance).tolist()
        # Horvitz-Thompson designs: Student-t on the sample's degrees of freedom (ci="normal": z)
        return DesignFit(main, own, fit.dof, int(x.size), judged_count(d, judged),
                         clamp_cost(float(charged.sum()), float(budget)), float(budget), complete, trace,
                         ci="normal" if math.isinf(fit.dof) else "t")

    def _own(self, ci, system_values, system_mean, x, pi, p_norm, beta, *, small=False) -> Estimate:
        """Every ranking's own mean: GREG on the model's per-system predictions with coefficient ``beta``
        (tuned per ranking when None), Hájek without predictions."""
        if system_mean is None:
            zeros = np.zeros_like(system_values)
            return self.fit(system_values, zeros, pi, p_norm[x], np.zeros(system_values.shape[1]), ci=ci,
                            coefficient=0.0).estimate
        return self.fit(system_values, system_mean[x], pi, p_norm[x], system_mean.T @ p_norm, ci=ci,
                        coefficient=beta, fitted=beta is not None and self.coefficient is None and not small).estimate

    # ------------------------------------------------------------------ small pools

    def is_small(self, scores, costs, budget: float) -> bool:
        """A small pool for this budget: at most ``small_pool`` queries can be sampled (positive scores) and
        the budget buys at least ``SMALL_FRACTION`` of them (planning ``pi``, expected sampling fraction)."""
        live = np.asarray(scores) > 0
        n_live = int(np.count_nonzero(live))
        if not 0 < n_live <= self.small_pool:
            return False
        pi = approximate_inclusion_probabilities(scores, costs, float(budget))
        return float(pi[live].sum()) >= SMALL_FRACTION * n_live

    def _small_coefficient(self) -> float:
        """The coefficient on small pools: a fixed one (a coefficient tuned on 10-20 queries is biased there)."""
        return self.prior_coefficient if self.coefficient is None else self.coefficient

    def model_variance(self, scores, costs, budget: float, p, output_variance) -> np.ndarray | None:
        """``sum p_i^2 (1/pi_i - 1) Var_theta[L_j | x_i]`` per output ``j`` with planning ``pi``
        (``p`` normalized over the sampled stratum; None without per-output variances)."""
        if output_variance is None:
            return None
        return self._planned_variance(scores, costs, budget, p, output_variance)

    @staticmethod
    def _planned_variance(scores, costs, budget: float, p, output_variance) -> np.ndarray:
        pi = approximate_inclusion_probabilities(scores, costs, budget)
        live = (pi > 0) & (p > 0)
        f = np.zeros_like(pi)
        f[live] = p[live] ** 2 * (1.0 / pi[live] - 1.0)
        return f @ np.asarray(output_variance, dtype=np.float64)

    def fit(self, values, predictions, pi, p, pool_prediction, *, model_variance=None,
            ci: str = "auto", coefficient: float | None = None, fitted: bool = False,
            satterthwaite: bool = False) -> WORFit:
        """Difference (GREG) estimate of the sampled stratum's ``t`` outputs.

        Parameters
        ----------
        values, predictions : ndarray of shape (n, t)
            Observed outputs of the sampled queries and the model's predictions.
        pi : ndarray of shape (n,)
            Conditional inclusion probabilities.
        p : ndarray of shape (n,)
            Target weights of the sampled queries (normalized over the stratum).
        pool_prediction : ndarray of shape (t,)
            The model's exact stratum means ``M``.
        model_variance : ndarray of shape (t,), optional
        ci : str
            ``"normal"``: the sample's variance and ``z``; otherwise the
            moderated variance and Student-t.
        coefficient : float, optional
            A fixed control-variate coefficient for this call (default: the
            plug-in's ``coefficient``).
        fitted : bool, default False
            ``coefficient`` was fitted on this sample (e.g. the contrasts'
            tuned coefficient reused for each ranking's own mean): its degree
            of freedom is spent as if tuned here.
        satterthwaite : bool, default False
            Student-t on Satterthwaite's degrees of freedom of the variance estimate
            (:func:`_satterthwaite_dof`) instead of ``n - k`` (small pools).
        """
        values = np.asarray(values, dtype=np.float64)
        n, t = values.shape
        coefficient = self.coefficient if coefficient is None else float(coefficient)
        tuned = True if coefficient is None else coefficient
        if coefficient is None and t > 1 and not self.normalize:
            # one coefficient for every output: contrasts of several systems stay linear (relative values
            # sum to 0, differences = estimates - baseline, two systems = their comparison)
            tuned = _shared_coefficient(values, predictions, pi, p, self.prior_coefficient)
        r = _estimate(values, pi, p, predictions, pool_prediction, tuned, None, self.normalize,
                      prior_coefficient=self.prior_coefficient if tuned is True else None)
        n_par = 2 if coefficient is None or fitted else 1
        g = p / pi
        ess = kish_ess(g)
        inflate = _fitted_coefficient_factor(n, n_par, self.normalize)
        cov = r.covariance * inflate
        own = np.diag(cov).copy()
        dof = math.inf
        if ci != "normal":
            dof_hat: float | np.ndarray = max(n - n_par, 0)
            dof = float(max(n - n_par, 1))
            if satterthwaite and n >= 2:
                # the sample's variance weighs (against the prior) and counts (in the t quantile) as many
                # degrees of freedom as its terms carry: few when one or two queries dominate it
                beta = np.broadcast_to(np.asarray(r.coefficient, dtype=np.float64), (t,))
                e = values - beta[None, :] * np.asarray(predictions, dtype=np.float64)
                dof_hat = _satterthwaite_dof(g * g * (1.0 - pi), e, n_par)
                dof = float(np.min(dof_hat))
            var = _pooled(own, dof_hat, model_variance, self.prior_dof)
            if satterthwaite:  # the model's variance is a floor: it never shrinks the sample's unbiased one
                var = np.where(np.isfinite(own), np.maximum(var, own), var)
            cov = _with_variances(r.covariance, var)
        return WORFit(Estimate(r.estimate, cov, ess, r.coefficient), dof, own, model_variance)

    def simulate(self, values, predictions, p, scores, costs, budgets, n_reps: int, rng, *,
                 output_variance=None) -> dict:
        """Monte-Carlo of ``n_reps`` samples per budget (the experiment harness's path).

        Parameters
        ----------
        values, predictions : ndarray of shape (n_queries,) or (n_queries, t)
            True per-query values of one output (or of ``t`` outputs, e.g. the
            contrasts of k systems, estimated from one shared sample with one
            shared tuned coefficient, as :meth:`fit` does) and the model's
            predictions.
        p, scores, costs : ndarray of shape (n_queries,)
            Target weights (sum 1), the method's ``q`` and the query costs.
        budgets : ndarray of shape (n_budgets,)
        output_variance : ndarray of shape like ``values``, optional
            ``Var_theta[L|x]`` (the small-sample prior).

        Returns
        -------
        dict of ndarray
            ``estimate``, ``standard_error`` of shape (n_budgets, n_reps)
            (``(t, n_budgets, n_reps)`` for ``t`` outputs), ``n`` (sampled
            queries) and ``cost`` of shape (n_budgets, n_reps).
        """
        batch = draw_without_replacement_batch(scores, costs, budgets, n_reps, rng)
        pi, mask = batch.pi(), batch.mask()
        values = np.asarray(values, dtype=np.float64)
        predictions = np.asarray(predictions, dtype=np.float64)
        several = values.ndim == 2
        Y = values if several else values[:, None]
        Mx = predictions if several else predictions[:, None]
        ov = None if output_variance is None else np.asarray(output_variance, dtype=np.float64).reshape(Y.shape)
        bud = np.asarray(budgets, dtype=np.float64).reshape(-1)
        if bud.size != pi.shape[0]:  # one budget per run: no per-budget rule, the large-pool path
            bud = np.full(pi.shape[0], np.nan)
        parts = [self._simulate_one(Y, Mx, p, scores, costs, float(b), pi[i:i + 1], mask[i:i + 1], batch.order, ov)
                 for i, b in enumerate(bud)]
        e, v, dof = (np.concatenate([q[k] for q in parts], axis=-2 if k < 2 else 0) for k in range(3))
        n = mask.sum(-1)
        cost = np.where(mask, costs[batch.order[None]], 0.0).sum(-1)
        if not several:
            e, v = e[0], v[0]
        return {"estimate": e, "standard_error": np.sqrt(v), "n": n, "cost": cost, "dof": dof}

    def _simulate_one(self, Y, Mx, p, scores, costs, budget: float, pi, mask, order, ov):
        """:meth:`simulate` for one budget: estimates and variances (t, 1, n_reps), dof (1, n_reps)."""
        o = order[None]
        small = bool(np.isfinite(budget)) and self.is_small(scores, costs, budget)
        coef = self._small_coefficient() if small else self.coefficient
        n = mask.sum(-1)
        n_par = 2 if coef is None else 1
        t = Y.shape[1]
        if coef is None and t > 1 and not self.normalize:
            e, v = self._shared_batch(Y, Mx, p, pi, mask, order)
        else:
            parts = [hajek_kernel(Y[:, j][o], pi, p[o], mask, predictions=Mx[:, j][o],
                                  pool_prediction=float(p @ Mx[:, j]), tuned=True if coef is None else coef,
                                  ratio=self.normalize,
                                  prior_coefficient=self.prior_coefficient if coef is None else None)
                     for j in range(t)]
            e, v = np.stack([q[0] for q in parts]), np.stack([q[1] for q in parts])
        v = v * _fitted_coefficient_factor(n, n_par, self.normalize)
        dof_hat = np.broadcast_to(np.maximum(n - n_par, 0).astype(np.float64), v.shape)
        dof = np.maximum(n - n_par, 1).astype(np.float64)
        if small and coef is not None:  # small: coef is the fixed small-pool coefficient
            dof_hat = self._batch_dof(Y, Mx, p, pi, mask, order, coef, n)  # (t, 1, n_reps)
            dof_hat = np.where(n - n_par > 0, dof_hat, 0.0)
            dof = np.maximum(dof_hat.min(axis=0), 1.0)
        if ov is not None and self.prior_dof > 0:
            if not np.isfinite(budget):
                raise ValueError("`output_variance` needs one budget per grid point (1-d `budgets`).")
            model = self._planned_variance(scores, costs, budget, p, ov)[:, None]  # (t, 1)
            ok = np.isfinite(v) & (dof_hat > 0)
            pooled = (self.prior_dof * model[:, :, None] + np.where(ok, dof_hat * v, 0.0)) / \
                (self.prior_dof + np.where(ok, dof_hat, 0))
            v = np.where(np.isfinite(v), np.maximum(v, pooled), pooled) if small else pooled
        return e, v, dof

    @staticmethod
    def _batch_dof(Y, Mx, p, pi, mask, order, coef: float, n):
        """Satterthwaite's degrees of freedom of every run's variance, shape (t, n_budgets, n_reps)."""
        safe = np.where(mask, pi, 1.0)
        g = np.where(mask, p[order][None] / safe, 0.0)
        omega = g * g * (1.0 - safe)  # (n_budgets, n_reps, n_cols)
        res2 = (Y[order] - coef * Mx[order]) ** 2  # (n_reps, n_cols, t)
        a = omega[..., None] * res2[None]
        dof = _satterthwaite(a, mask[..., None], n[..., None], 1, axis=2)  # (n_budgets, n_reps, t)
        return np.moveaxis(dof, -1, 0)

    def _shared_batch(self, Y, Mx, p, pi, mask, order):
        """Batched :func:`_shared_coefficient` estimates: (t, n_budgets, n_reps) estimates and raw variances."""
        y, m = Y[order], Mx[order]  # (n_reps, n_cols, t)
        g = np.where(mask, p[order][None] / np.where(mask, pi, 1.0), 0.0)  # (n_budgets, n_reps, n_cols)
        omega = g * g * (1.0 - np.where(mask, pi, 1.0))
        vm = np.einsum("brn,rnt,rnt->br", omega, y, m)
        mm = np.einsum("brn,rnt,rnt->br", omega, m, m)
        vv = np.einsum("brn,rnt,rnt->br", omega, y, y)
        n = mask.sum(-1)
        b0 = self.prior_coefficient
        ok = (mm > 1e-12 * np.maximum(mm, np.finfo(float).tiny)) & (n > 2)
        bh = np.where(ok, vm / np.where(ok, mm, 1.0), b0)
        rss = np.maximum(vv - bh * vm, 0.0)
        var_b = np.where(ok, rss / np.maximum((n - 2.0) * np.where(ok, mm, 1.0), 1e-300), np.inf)
        shrink = np.clip(1.0 - var_b / np.maximum((bh - b0) ** 2, 1e-300), 0.0, 1.0)
        beta = np.where(ok, b0 + shrink * (bh - b0), b0)  # (n_budgets, n_reps)
        M = p @ Mx  # (t,)
        resid = y[None] - beta[:, :, None, None] * m[None]  # (n_budgets, n_reps, n_cols, t)
        est = beta[None] * M[:, None, None] + np.einsum("brn,brnt->tbr", g, resid)
        var = np.einsum("brn,brnt->tbr", omega, resid * resid)
        return est, var

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(coefficient={self.coefficient!r}, normalize={self.normalize}, "
                f"prior_coefficient={self.prior_coefficient:g}, prior_dof={self.prior_dof:g}, "
                f"small_pool={self.small_pool})")


def _satterthwaite_dof(omega, resid, n_par: int) -> np.ndarray:
    """``2 V^2 / Var-hat(V)`` for ``V = sum_S a_i``, ``a_i = omega_i e_i^2``, ``Var-hat(V) = n / (n - 1)
    sum_S (a_i - mean a)^2``, in ``[1, n - n_par]``, for every output (column of ``resid``).

    ``n - 1`` for equal normal terms; a few dominant terms (skewed residuals, unequal weights) give few
    degrees of freedom and a wider Student-t interval (benchmarks/results/wor_small_pool.md)."""
    omega = np.asarray(omega, dtype=np.float64)
    a = omega[:, None] * np.asarray(resid, dtype=np.float64).reshape(omega.size, -1) ** 2
    return _satterthwaite(a, np.ones(a.shape, dtype=bool), np.full(a.shape[1:], float(omega.size)), n_par, axis=0)


def _satterthwaite(a, mask, n, n_par: int, *, axis: int):
    """Batched :func:`_satterthwaite_dof` of the terms ``a`` (sampled where ``mask``; ``n`` per batch)."""
    a = np.where(mask, a, 0.0)
    n = np.asarray(n, dtype=np.float64)
    V = a.sum(axis=axis)
    dev = np.where(mask, a - np.expand_dims(V / np.maximum(n, 1.0), axis), 0.0)
    ss = (dev**2).sum(axis=axis) * n / np.maximum(n - 1.0, 1.0)
    hi = np.maximum(n - n_par, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        dof = np.where(ss > 0, 2.0 * V**2 / np.where(ss > 0, ss, 1.0), hi)
    return np.clip(dof, 1.0, hi)


def _shared_coefficient(values, predictions, pi, p, prior: float) -> float:
    """The Horvitz--Thompson kernel's tuned coefficient (shrunk towards ``prior``) from the cross-products
    summed over all outputs: invariant to the sign and scale of each output, so two systems' relative values
    get their difference's coefficient."""
    y = np.asarray(values, dtype=np.float64)
    m = np.asarray(predictions, dtype=np.float64)
    g = p / pi
    omega = (g * g * (1.0 - pi))[:, None]
    n = y.shape[0]
    vm, mm, vv = float((omega * y * m).sum()), float((omega * m * m).sum()), float((omega * y * y).sum())
    informative = mm > 1e-12 * max(float((omega * m * m).sum()), np.finfo(float).tiny)
    if not (informative and n > 2):
        return float(prior)
    bh = vm / mm
    rss = max(vv - bh * vm, 0.0)
    var_b = rss / max((n - 2.0) * mm, 1e-300)
    shrink = min(max(1.0 - var_b / max((bh - prior) ** 2, 1e-300), 0.0), 1.0)
    return float(prior + shrink * (bh - prior))


def _fitted_coefficient_factor(n, n_par: int, normalize: bool):
    """``n / (n - 1)`` for a coefficient fitted on the Horvitz--Thompson residuals it is judged by (one
    parameter spent; the Hájek form's kernel already corrects for its two); 1 otherwise."""
    if normalize or n_par == 1:
        return 1.0
    n = np.asarray(n, dtype=np.float64)
    return np.where(n > 1, n / np.maximum(n - 1.0, 1.0), 1.0)


def _pooled(own: np.ndarray, dof_hat, model: np.ndarray | None, prior_dof: float) -> np.ndarray:
    """``(prior_dof V_model + dof_hat V_hat) / (prior_dof + dof_hat)``; the sample's variance alone when
    there is no model variance, the model's alone when the sample has none (n <= 2)."""
    dof_hat = np.asarray(dof_hat, dtype=np.float64)
    ok = np.isfinite(own) & (dof_hat > 0)
    if model is None or prior_dof == 0:
        return np.where(ok, own, np.nan)
    mine = np.where(ok, own, 0.0)
    w_own = np.where(ok, dof_hat, 0.0)
    return (prior_dof * model + w_own * mine) / (prior_dof + w_own)


def _with_variances(cov: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``cov``'s correlations (0 where undefined) with the variances ``var``."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov / np.outer(sd, sd)
    corr = np.where(np.isfinite(corr), corr, 0.0)
    se = np.sqrt(np.clip(var, 0.0, None))
    out = corr * np.outer(se, se)
    out[np.diag_indices_from(out)] = var
    return out
