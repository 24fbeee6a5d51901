"""A design kind written outside the package: stratified simple random sampling of queries.

The pool's live queries fall into two strata by the model's predicted variance; a stratum ``h`` of ``N_h``
queries gets ``n_h`` of the ``n`` queries the budget buys (Neyman allocation, ``n_h ∝ N_h S_h``, at least 2),
drawn without replacement, so the inclusion probabilities ``n_h / N_h`` differ between strata.  The
estimator is the stratified expansion estimator ``sum_h (N_h / n_h) sum_{S_h} p_x L_x`` with its unbiased
variance ``sum_h N_h^2 (1 - n_h / N_h) s_h^2 / n_h`` (Cochran 1977, Ch. 5).  The budget buys ``n`` queries of
the mean cost: it is spent on average over the strata, not exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from activerank.design.kinds.base import DesignFit, DesignKind, LabelRequest
from activerank.design.sampling import DrawPlan
from activerank.inference.estimators import Estimate


@dataclass(frozen=True, eq=False)
class StrataPlan:
    stratum: np.ndarray  # stratum of every pool query (-1: never sampled)
    n_h: np.ndarray      # queries drawn per stratum
    budget: float

    @property
    def N_h(self) -> np.ndarray:
        return np.bincount(self.stratum[self.stratum >= 0], minlength=self.n_h.size)


class StratifiedQueries(DesignKind):
    """Two strata by predicted variance, simple random samples without replacement in each."""

    name = "toy_stratified"
    unit = "query"

    def check(self, method, metric, target_kind, *, predicted) -> None:
        pass

    def plan(self, design, budget, *, judged, rng=None) -> StrataPlan:
        if design.census.size:
            raise ValueError("the stratified toy design does not handle determined queries; use judge='all'.")
        live = design.q > 0
        var = design.prediction.variance
        cut = np.median(var[live])
        stratum = np.where(live, (var > cut).astype(np.int64), -1)
        N_h = np.bincount(stratum[live], minlength=2)
        if (N_h < 2).any():
            stratum = np.where(live, 0, -1)
            N_h = np.bincount(stratum[live], minlength=1)
        n = int(min(max(budget // float(design.costs.cost[live].mean()), 2 * N_h.size), live.sum()))
        S_h = np.array([np.sqrt(var[stratum == h].mean()) + 1e-12 for h in range(N_h.size)])
        share = N_h * S_h / (N_h * S_h).sum()
        n_h = np.clip(np.round(share * n).astype(np.int64), 2, N_h)
        return StrataPlan(stratum, n_h, float(budget))

    def draw(self, design, plan: StrataPlan, rng) -> np.ndarray:
        picks = [rng.choice(np.flatnonzero(plan.stratum == h), int(n), replace=False)
                 for h, n in enumerate(plan.n_h)]
        return np.concatenate(picks).astype(np.int64)

    def labels_needed(self, design, plan, sample, labels) -> LabelRequest:
        rows = [design.documents(int(x)) for x in sample.tolist()]
        sizes = np.array([r.size for r in rows], dtype=np.int64)
        return LabelRequest.of(np.repeat(sample, sizes), np.concatenate(rows), labels)

    def estimate(self, design, plan: StrataPlan, sample, labels, *, held, ci="auto", ci_rng=None) -> DesignFit:
        target = design.target
        outputs = target.outputs(target.values(labels, sample, design.n_grades))[sample]
        z = design.p[sample, None] * outputs
        h_of = plan.stratum[sample]
        N_h, n_h = plan.N_h, plan.n_h
        est = np.zeros(z.shape[1])
        cov = np.zeros((z.shape[1], z.shape[1]))
        for h in range(n_h.size):
            zh = z[h_of == h]
            est += N_h[h] / n_h[h] * zh.sum(axis=0)
            if n_h[h] < N_h[h]:
                cov += N_h[h] ** 2 * (1 - n_h[h] / N_h[h]) * np.atleast_2d(np.cov(zh, rowvar=False)) / n_h[h]
        pi = (n_h / N_h)[h_of]
        main = Estimate(est, cov, float(sample.size))
        cost = design.costs.cost[sample]
        cols = {"query": sample, "stratum": h_of, "pi": pi, "p": design.p[sample], "weight": design.p[sample] / pi,
                "cost": cost}
        cols.update({f"output_{j}": outputs[:, j] for j in range(outputs.shape[1])})
        exact = bool(np.all(n_h == N_h))
        return DesignFit(main, main if target.kind == "mean" else None, float(sample.size - n_h.size),
                         int(sample.size), int(sample.size), float(cost.sum()), plan.budget, exact,
                         pd.DataFrame(cols), ci="t")

    def predicted_variance(self, design, budget) -> float:
        plan = self.plan(design, budget, judged=None)
        v = design.p**2 * design.prediction.variance
        N_h, n_h = plan.N_h, plan.n_h
        return float(sum(N_h[h] ** 2 * (1 - n_h[h] / N_h[h]) * v[plan.stratum == h].mean() / n_h[h]
                         for h in range(n_h.size)))

    def query_draws(self, design, plan, sample) -> DrawPlan:
        return DrawPlan(queries=sample, new=np.ones(sample.size, dtype=bool), charged=design.costs.cost[sample],
                        budget=plan.budget)

    def to_arrays(self, design, plan, sample) -> dict:
        return {"stratum": plan.stratum, "n_h": plan.n_h, "budget": np.array([plan.budget]), "sample": sample}

    def from_arrays(self, design, arrays):
        plan = StrataPlan(arrays["stratum"].astype(np.int64), arrays["n_h"].astype(np.int64),
                          float(arrays["budget"][0]))
        return plan, arrays["sample"].astype(np.int64)
