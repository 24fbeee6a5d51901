"""Document-level Poisson designs (``doc_dyn``, ``doc_stat``) on a Dask pool.

The in-memory design (:class:`~activerank.design.kinds.documents.DocumentHorvitzThompson`)
water-fills inclusion probabilities ``pi = min(1, kappa s)`` over every
(query, document) unit of the pool, then takes the units in ascending
``xi = U / pi`` while they fit the budget (:func:`~activerank.design.kinds.documents.draw_priority`).
Here the same steps run without the pool on the driver:

1. per partition (the workers; kept there with ``dask.persist``): every unit's
   weights, model moments, cost and score, by the in-memory kernels
   (:func:`~activerank.design.kinds.documents.document_target` over the pool's
   ``n_queries`` with the pool's ``p``, :func:`~activerank.design.kinds.documents.unit_scores`);
2. ``kappa`` by bracketing the score at which units stop being certain: a few
   reductions of sums over the units, then the units of the last bracket only
   on the driver (:func:`_solve_kappa`);
3. the uniforms: unit ``z`` of the pool gets the ``z``-th double of the run's
   generator, as in memory, by advancing a copy of its PCG64 stream to the
   partition's first unit;
4. only the candidates ``xi <= t0`` travel to the driver (``t0`` a little
   above the expected stopping point ``xi ~ 1``; raised and redone in the rare
   case that every candidate fits), which finds the affordable prefix and the
   threshold as :func:`~activerank.design.kinds.documents.draw_priority` does;
5. the drawn queries' documents are fetched and the engine labels and
   estimates on a target that holds the drawn units only; the model's total
   over the units left out is added to the estimate (the control variate
   ``M``), and the trace reports pool document rows.

Same seed, same sample and estimate as :func:`activerank.estimate` (to rounding of
sums taken in another order).
"""

from __future__ import annotations

import math
import threading
import types
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = ["DOCUMENT_METHODS", "DocumentRun", "prepare_units", "run_documents"]

#: document-level methods that run on a Dask pool (Poisson designs with a budgeted order draw)
DOCUMENT_METHODS = ("doc_dyn", "doc_stat")
#: at most this many units of the last bracket of kappa come to the driver
_GATHER = 200_000
_GRID = 256
# pandas builds an Index's hash table on first lookup, and (seen with pandas 2.0) two threads doing that at once see a
# unique index as non-unique (InvalidIndexError): the threads of one worker share the one PoolInfo
_INDEX_LOCK = threading.Lock()


@dataclass(frozen=True)
class PoolInfo:
    """What a partition needs of the whole pool (one object, shipped once)."""

    ids: Any  # pandas.Index of query ids, table order
    p: np.ndarray
    row_start: np.ndarray
    scale: float
    cost_model: str
    n_grades: int


def _held_rows(df, spec, grouped, judged) -> np.ndarray:
    """The partition's rows whose grades were passed in (``judged``: ``{query_id: {doc_id, ...}}``)."""
    from .._validation import py_scalar

    held = np.zeros(len(df), dtype=bool)
    if not judged:
        return held
    docs = df[spec.document].to_numpy()
    for x, qid in enumerate(grouped.query_ids.tolist()):
        keys = judged.get(py_scalar(qid))
        if keys:
            lo, hi = int(grouped.offsets[x]), int(grouped.offsets[x + 1])
            held[lo:hi] = [py_scalar(d) in keys for d in docs[lo:hi]]
    return held


def _partition_units(df, spec, info: PoolInfo, utility: str, control_variate: bool, judged=None) -> dict:
    """Every unit of one partition: pool query, pool row, weights, model mean, ``E e^2``, cost, scores; units
    whose grades were passed in (``judged``) are held: certain and free, as in memory."""
    from ..design.costs import document_costs
    from ..design.kinds.documents import document_target, unit_costs, unit_scores
    from ..ragged import Rankings
    from .query_table import partition_inputs

    m = int(info.p.size)
    if len(df) == 0:
        return {"n": 0}
    grouped, P, target = partition_inputs(df, spec, -1)
    with _INDEX_LOCK:
        pos = np.asarray(info.ids.get_indexer(grouped.query_ids), dtype=np.int64)
    start = int(pos[0])
    if not np.array_equal(pos, start + np.arange(pos.size)):
        raise ValueError("the pool changed between reading the per-query table and the document pass; "
                         "recompute on a stable frame.")
    offsets = np.zeros(m + 1, dtype=np.int64)  # the partition's rankings among all the pool's queries
    local = np.asarray(target.rankings[0].offsets)
    offsets[start + 1: start + local.size] = local[1:]
    offsets[start + local.size:] = local[-1]
    rankings = [Rankings(r.items, offsets) for r in target.rankings]
    dt = document_target(rankings, n_docs=len(df), metric=spec.metric, n_grades=info.n_grades,
                         contrasts=target.contrast, query_weights=info.p)
    if spec.cost_model == "column":
        doc_costs, _ = document_costs(None, len(df), df[spec.cost].to_numpy(np.float64))
    else:
        length = None if spec.length is None else df[spec.length].to_numpy(np.float64)
        doc_costs, _ = document_costs(types.SimpleNamespace(doc_length=length), len(df),
                                      "constant" if spec.cost_model == "uniform" else spec.cost_model)
    c = unit_costs(dt, types.SimpleNamespace(model=info.cost_model, scale=info.scale), doc_costs)
    held = _held_rows(df, spec, grouped, judged)[dt.rows]
    live = dt.matters & ~held
    mom = dt.moments(P)
    return {"n": dt.n_units, "query": dt.query, "row": info.row_start[start] + dt.rows, "W": dt.weights,
            "mean": mom.mean, "e2": mom.variance if control_variate else mom.second,
            "nrm2": np.einsum("ij,ij->i", dt.weights, dt.weights), "c": c, "live": live, "held": held,
            "matters": dt.matters, "charged": np.where(held, 0.0, c),
            "score": np.where(live, unit_scores(dt, P, utility=utility, costs=c), 0.0),
            "fallback": np.where(live, dt.norms / np.sqrt(c), 0.0)}


def _mixed(u: dict, a: tuple, b: tuple, ts_positive: bool) -> np.ndarray:
    """``s`` of the in-memory mix: ``(1 - d) score / ts + d fallback / tf`` (``a = (1 - d, ts)``,
    ``b = (d, tf)``; ``fallback / tf`` alone when no unit has a positive score, as in memory)."""
    if not b[1] > 0:  # no unit left to sample (a census): every score 0
        return np.zeros_like(u["fallback"])
    if not ts_positive:
        return u["fallback"] / b[1]
    return a[0] * u["score"] / a[1] + b[0] * u["fallback"] / b[1]


# --------------------------------------------------------------------------- per-partition reductions


def _sums(u: dict) -> np.ndarray:
    if not u["n"]:
        return np.zeros(4)
    return np.array([np.dot(u["score"], u["c"]), np.dot(u["fallback"], u["c"]), float(u["live"].sum()),
                     float(u["c"][u["live"]].sum())])


def _grid_sums(u: dict, mix, lo: float, hi: float, grid: np.ndarray) -> np.ndarray:
    """``[sum c over s >= t, sum s c over s < t]`` of the bracket ``lo <= s < hi`` for every ``t`` of the grid,
    then the bracket's count and a sorted sample of its scores (rows 2.. of a ragged result)."""
    s = _mixed(u, *mix) if u["n"] else np.zeros(0)
    inside = (s >= lo) & (s < hi) & (s > 0)
    si, ci = s[inside], u["c"][inside] if u["n"] else np.zeros(0)
    order = np.argsort(si)
    si, ci = si[order], ci[order]
    k = np.searchsorted(si, grid, side="left")
    cum_c = np.r_[0.0, np.cumsum(ci)]
    cum_sc = np.r_[0.0, np.cumsum(si * ci)]
    sample = si[np.linspace(0, si.size - 1, min(si.size, _GRID)).astype(np.int64)] if si.size else si
    return np.concatenate([[si.size], cum_c[-1] - cum_c[k], cum_sc[k], sample])


def _bracket_units(u: dict, mix, lo: float, hi: float) -> tuple:
    s = _mixed(u, *mix) if u["n"] else np.zeros(0)
    inside = (s >= lo) & (s < hi) & (s > 0)
    return s[inside], (u["c"][inside] if u["n"] else np.zeros(0))


def _outside(u: dict, mix, lo: float, hi: float) -> np.ndarray:
    """``[sum c over s >= hi, sum s c over 0 < s < lo]``."""
    if not u["n"]:
        return np.zeros(2)
    s = _mixed(u, *mix)
    return np.array([u["c"][s >= hi].sum(), np.dot(s[(s > 0) & (s < lo)], u["c"][(s > 0) & (s < lo)])])


def _pi(u: dict, mix, kappa: float, s_cap: float) -> np.ndarray:
    """The planned inclusion probabilities (held units: 1)."""
    s = _mixed(u, *mix)
    pi = np.where(s > 0, np.where(s >= s_cap, 1.0, np.minimum(1.0, kappa * s)), 0.0)
    return np.where(u["held"], 1.0, pi)


def _after(u: dict, mix, kappa: float, s_cap: float) -> dict:
    """Sums of the planned design: expected size and cost, its spread, predicted variance, the control total."""
    if not u["n"]:
        return {"n": 0}
    pi = _pi(u, mix, kappa, s_cap)
    c, live = u["c"], u["live"]
    safe = np.where(pi > 0, pi, 1.0)
    sampleable = (pi > 0) & live
    worst = int(np.flatnonzero(sampleable)[np.argmax(c[sampleable])]) if sampleable.any() else -1
    return {"n": u["n"], "size": float(pi[~u["held"]].sum()), "cost": float(np.dot(pi, u["charged"])),
            "var_cost": float(np.sum(c * c * pi * (1.0 - pi))),
            "variance": float(np.sum((1.0 - pi) / safe * u["nrm2"] * u["e2"])),
            "M": u["W"].T @ u["mean"], "matter": int(u["matters"].sum()),
            "min_pi": float(pi[sampleable].min()) if sampleable.any() else math.inf,
            "sampleable": int(((pi > 0) & (u["charged"] > 0)).sum()),
            "worst": None if worst < 0 else (float(c[worst]), int(u["row"][worst]), int(u["query"][worst])),
            "support": bool(np.all(pi[live] > 0))}


def _candidates(u: dict, mix, kappa: float, s_cap: float, state: dict, first: int, t0: float) -> dict:
    """The held units and the units with ``xi = U / pi <= t0`` (``U`` the ``first + i``-th double of the run's
    stream; ``state`` None: a census, no draw); held units get ``xi = -1``."""
    if not u["n"]:
        return {"idx": np.zeros(0, dtype=np.int64)}
    pi = _pi(u, mix, kappa, s_cap)
    census = (pi >= 1.0) & (u["charged"] == 0.0)
    xi = np.full(u["n"], math.inf)
    xi[census] = -1.0
    if state is not None:
        bits = getattr(np.random, state["bit_generator"])()
        bits.state = state
        bits.advance(first)
        uu = np.random.Generator(bits).random(u["n"])
        live = np.flatnonzero((pi > 0) & ~census)
        xi[live] = uu[live] / pi[live]
    take = np.flatnonzero(xi <= t0)
    return {"idx": first + take, "xi": xi[take], "pi": pi[take], "c": u["c"][take], "held": u["held"][take],
            "charged": u["charged"][take], "query": u["query"][take], "row": u["row"][take], "W": u["W"][take],
            "mean": u["mean"][take]}


# --------------------------------------------------------------------------- the driver


def _map(parts, fn, *args):
    import dask

    return list(dask.compute(*[dask.delayed(fn, pure=True)(p, *args) for p in parts]))


def _solve_kappa(parts, mix, budget: float, total_cost: float) -> tuple[float, float]:
    """``(kappa, s_cap)`` of the water-filling ``sum c min(1, kappa s) = budget``: units with ``s >= s_cap``
    are certain, the others have ``pi = kappa s`` (``kappa = 0, s_cap = 0``: every unit is certain)."""
    if budget >= total_cost:  # waterfill caps every unit when the budget covers them all
        return 0.0, 0.0
    lo, hi = 0.0, math.inf
    grid = np.zeros(0)
    while True:
        rows = _map(parts, _grid_sums, mix, lo, hi, grid)
        count = sum(int(r[0]) for r in rows)
        if count <= _GATHER:
            break
        g = grid.size
        samples = np.unique(np.concatenate([r[1 + 2 * g:] for r in rows]))
        grid = samples[np.linspace(0, samples.size - 1, min(samples.size, _GRID)).astype(np.int64)]
        rows = _map(parts, _grid_sums, mix, lo, hi, grid)
        g = grid.size
        above = sum(r[1:1 + g] for r in rows)
        below = sum(r[1 + g:1 + 2 * g] for r in rows)
        out = sum(_map(parts, _outside, mix, lo, hi))
        # f(t) = cost when units with s >= t are certain and kappa = 1 / t for the others
        f = out[0] + above + (out[1] + below) / grid
        ok = np.flatnonzero(f >= budget)  # f decreases in t: the largest t still spending the budget
        new_lo = float(grid[ok[-1]]) if ok.size else lo
        new_hi = float(grid[ok[-1] + 1]) if ok.size and ok[-1] + 1 < g else (hi if ok.size else float(grid[0]))
        if (new_lo, new_hi) == (lo, hi):  # one repeated score fills the bracket: solve on it directly
            break
        lo, hi = new_lo, new_hi
        grid = np.zeros(0)
    got = _map(parts, _bracket_units, mix, lo, hi)
    s = np.concatenate([a for a, _ in got])
    c = np.concatenate([b for _, b in got])
    c_above, sc_below = sum(_map(parts, _outside, mix, lo, hi))
    order = np.argsort(-s, kind="stable")
    s, c = s[order], c[order]
    # capping the bracket's units before position j: kappa_j = (B - cost capped) / sum of the rest s c
    capped_c = c_above + np.r_[0.0, np.cumsum(c)]
    rest_sc = sc_below + np.r_[np.cumsum((s * c)[::-1])[::-1], 0.0]
    s_next = np.r_[s, lo]
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (budget - capped_c) / rest_sc
        ok = np.flatnonzero((kappa > 0) & (kappa * s_next <= 1.0) & (rest_sc > 0))
    if not ok.size:  # pragma: no cover - the budget is below the total cost: some kappa is valid
        raise RuntimeError("internal error: no water-filling level found.")
    j = int(ok[0])
    return float(kappa[j]), (float(s[j - 1]) if j > 0 else (hi if math.isfinite(hi) else math.inf))


def _stream_state(rng) -> dict:
    name = type(rng.bit_generator).__name__
    if name not in ("PCG64", "PCG64DXSM"):
        raise ValueError(f"`rng`: a document-level design on a Dask pool draws every partition's uniforms from "
                         f"the run's stream by advancing it (PCG64 or PCG64DXSM); got a {name} generator: pass an "
                         "int seed or numpy.random.default_rng(seed).")
    return rng.bit_generator.state


def _advance(rng, n: int) -> None:
    """Move ``rng`` on by ``n`` doubles, as the in-memory draw does (its buffered 32-bit value kept)."""
    before = rng.bit_generator.state
    rng.bit_generator.advance(int(n))
    after = rng.bit_generator.state
    after["has_uint32"], after["uinteger"] = before["has_uint32"], before["uinteger"]
    rng.bit_generator.state = after


@dataclass
class DocumentRun:
    """The planned document-level design of a Dask pool: the persisted units and the water-filling level."""

    parts: list
    mix: tuple
    kappa: float
    s_cap: float
    sums: dict
    budget: float
    method: Any
    row_start: np.ndarray
    census: bool = False

    @property
    def predicted_variance(self) -> float:
        return self.sums["variance"]


def prepare_units(pool, spec, td, method, *, budget: float, defensive: float, judged=None,
                  census_ok: bool = False) -> DocumentRun:
    """Per-partition units (persisted), ``kappa`` and the design's sums; raises ValueError where the in-memory
    design refuses the budget (as :func:`~activerank.design.kinds.documents.inclusion_probabilities` does).

    ``judged``: ``{query_id: {doc_id, ...}}`` of the grades passed in (held units: certain, free).  With
    ``census_ok``, a pool whose every unit that can change a target is held is a census run (exact, as the
    in-memory plan); without it, that is an error (what ``method="auto"``'s prediction raises).
    """
    import dask

    kind = method.kind
    info = PoolInfo(ids=_index(td.query_ids), p=td.p, row_start=np.r_[0, np.cumsum(td.n_docs)[:-1]],
                    scale=td.costs.scale, cost_model=td.costs.model, n_grades=td.n_grades)
    needed = ([] if spec.query_in_index else [spec.query]) + list(spec.scores) + list(spec.probs or spec.features or ())
    needed += [c for c in (spec.cost, spec.length, spec.document) if c is not None]
    frame = pool.frame[list(dict.fromkeys(needed))]
    shared = dask.delayed(info, pure=True)
    shared_judged = dask.delayed(judged or None, pure=True)
    parts = [dask.delayed(_partition_units, pure=True)(p, spec, shared, kind.utility, kind.control_variate,
                                                       shared_judged)
             for p in frame.to_delayed()]
    parts = list(dask.persist(*parts))
    ts, tf, n_live, live_cost = sum(_map(parts, _sums))
    census = n_live == 0
    if census and not census_ok:
        raise ValueError("no unit can change any target (every weight is 0, or every such unit is judged): "
                         "there is nothing to sample.")
    d = float(defensive)
    mix = ((1.0 - d, ts), (d, tf), bool(ts > 0))
    kappa, s_cap = (0.0, math.inf) if census else _solve_kappa(parts, mix, budget, live_cost)
    per = _map(parts, _after, mix, kappa, s_cap)
    per = [r for r in per if r["n"]]
    sums: dict = {k: math.fsum(r[k] for r in per) for k in ("size", "cost", "var_cost", "variance")}
    sums.update(M=sum(r["M"] for r in per), n_units=sum(r["n"] for r in per),
                sampleable=sum(r["sampleable"] for r in per),
                matter=sum(r["matter"] for r in per), min_pi=min(r["min_pi"] for r in per),
                counts=[int(_n) for _n in _map(parts, lambda u: u["n"])])
    if census:  # every unit that can change a target is held: the exact value, no draw (as in memory)
        return DocumentRun(parts, mix, kappa, s_cap, sums, float(budget), method, info.row_start, census=True)
    if sums["size"] < 2.0:
        raise ValueError(f"`budget`={budget:g} is too small: it buys {sums['size']:.3g} judged documents in "
                         "expectation; a design-based variance needs at least 2.")
    worst = max((r["worst"] for r in per if r["worst"] is not None), key=lambda w: w[0])
    if worst[0] > budget + 1e-12 * max(1.0, budget):
        raise ValueError(
            f"`budget`={budget:g} is too small: document row {worst[1]} of query {worst[2]} costs {worst[0]:.4g} "
            f"alone, and a draw that never exceeds the budget could never judge it; the smallest usable budget is "
            f"{worst[0]:.4g} (and at least 2 documents' worth).")
    if not all(r["support"] for r in per):  # pragma: no cover - the defensive share keeps every pi > 0
        raise ValueError("an inclusion probability is 0 for a document whose label changes a target.")
    return DocumentRun(parts, mix, kappa, s_cap, sums, float(budget), method, info.row_start)


def _index(ids):
    import pandas as pd

    return pd.Index(ids)


def draw_candidates(run: DocumentRun, rng) -> dict:
    """The budgeted order sample: ``idx, pi, pi_real, c, query, row, W, mean`` of the taken units (pool unit
    order), ``threshold`` and ``exact``; ``rng`` moves on by one double per unit, as in memory."""
    from ..design.kinds.documents import affordable_prefix, realized_pi

    import dask

    state = None if run.census else _stream_state(rng)
    first = np.r_[0, np.cumsum(run.sums["counts"])[:-1]]
    # xi of the first unit that does not fit is near 1 (sum pi c = budget): a margin of 6 standard
    # deviations of the cost taken below t0 makes a second round rare (it is exact either way)
    t0 = 1.05 + 6.0 * math.sqrt(run.sums["var_cost"]) / run.budget
    while True:
        got = list(dask.compute(*[dask.delayed(_candidates, pure=True)(p, run.mix, run.kappa, run.s_cap, state,
                                                                      int(f), t0)
                                  for p, f in zip(run.parts, first)]))
        got = [g for g in got if g["idx"].size]
        keys = ("idx", "xi", "pi", "c", "held", "charged", "query", "row", "W", "mean")
        cand = {k: np.concatenate([g[k] for g in got]) for k in keys} if got else \
            {k: np.zeros((0, run.sums["M"].size) if k == "W" else 0) for k in keys}
        held = cand["xi"] < 0  # held units: always in the sample, outside the order
        rest = np.flatnonzero(~held)
        order = rest[np.argsort(cand["xi"][rest], kind="stable")]
        n = affordable_prefix(cand["charged"][order], run.budget)
        if run.census or n < order.size or order.size == run.sums["sampleable"]:
            break
        t0 = 4.0 * t0  # every candidate fits and more units lie beyond t0
    threshold = float(cand["xi"][order[n]]) if n < order.size else math.inf
    take = np.sort(np.concatenate([np.flatnonzero(held), order[:n]]))
    out: dict = {k: v[take] for k, v in cand.items() if k != "xi"}
    out["pi_real"] = np.where(out["held"], 1.0, realized_pi(out["pi"], threshold))
    out["threshold"] = threshold
    out["exact"] = bool(run.census or threshold == math.inf or run.sums["min_pi"] * threshold >= 1.0)
    if not run.census:  # a census plan draws nothing (in memory too)
        _advance(rng, int(run.sums["n_units"]))
    return out


def reduced_target(drawn: dict, mem_pool, row_start: np.ndarray, gains):
    """The drawn units as a :class:`~activerank.design.kinds.documents.DocumentTarget` over ``mem_pool``'s rows
    (``row_start``: every query's first row in the pool)."""
    from ..design.kinds.documents import DocumentTarget
    from ..ragged import offsets_from_lengths

    x = drawn["query"]
    n_queries = row_start.size
    rows = mem_pool.offsets[x] + (drawn["row"] - row_start[x])
    return DocumentTarget(rows=rows.astype(np.int64), query=x.astype(np.int64), weights=drawn["W"],
                          gains=np.asarray(gains, dtype=np.float64), n_queries=n_queries, n_docs=mem_pool.n_docs,
                          offsets=offsets_from_lengths(np.bincount(x, minlength=n_queries)))


def run_documents(run: DocumentRun, drawn: dict, design, mem_pool, labeler, store, *, ci: str, on_fit=None):
    """The engine's labeling and estimate of the drawn units (a schedule holding the precomputed sample);
    ``on_fit(fit) -> fit``: what the engine reports instead of the run's DesignFit."""
    from ..design.kinds.documents import DocumentSample, PoissonDesign, UnitPlan, census_sample
    from ..engine import run as engine_run
    from ..engine.assemble import with_ids
    from ..engine.core import Schedule

    target = reduced_target(drawn, mem_pool, run.row_start, design.target.metric.grade_values(design.n_grades))
    n, c, charged, held = drawn["idx"].size, drawn["c"], drawn["charged"], drawn["held"]
    if run.census:  # every unit that can change a target is held (in memory: census_sample)
        plan = UnitPlan(target, c, held, None, run.budget)
        sample = census_sample(target, held)
    else:
        plan = UnitPlan(target, c, held,
                        PoissonDesign(pi=drawn["pi"], costs=charged, budget=run.budget, kind="poisson"), run.budget)
        real = PoissonDesign(pi=drawn["pi_real"], costs=charged, budget=run.budget, kind="poisson")
        pi = drawn["pi_real"]
        sample = DocumentSample(np.arange(n), pi, 1.0 / pi, charged == 0.0, real,
                                stop_reason="all_judged" if drawn["exact"] else "budget",
                                attrs={"expected_cost": run.sums["cost"]})
    # the control variate's total over the units left out (the estimator sums the drawn ones)
    rest = np.asarray(run.sums["M"], dtype=np.float64) - drawn["W"].T @ drawn["mean"] \
        if run.method.kind.control_variate else 0.0

    class Drawn(Schedule):
        name = "fixed"

        def _run(self, ctx):
            d = ctx.design
            kind = d.method_spec.kind
            held = ctx.judgments.labels >= 0
            request = kind.labels_needed(d, plan, sample, ctx.judgments.labels)
            if len(request):
                ctx.label_request(request, held=held)
            fit = kind.estimate(d, plan, sample, ctx.judgments.labels, held=held, ci=ctx.ci, ci_rng=ctx.ci_rng)
            main = replace(fit.estimate, estimate=fit.estimate.estimate + rest)
            trace = with_ids(ctx.pool, fit.trace)
            trace["doc_row"] = drawn["row"]  # pool rows, as in memory
            trace.attrs["n_units"] = int(run.sums["n_units"])
            trace.attrs["n_units_that_matter"] = int(run.sums["matter"])
            fit = replace(fit, estimate=main, own=main if fit.own is not None else None, trace=trace)
            return fit if on_fit is None else on_fit(fit)

    return engine_run(design, mem_pool, labeler, Drawn(), judgments=store, ci=ci)
