"""Why ``active_wor`` under-covers on small pools: a seeded diagnosis (issue 30 item 4, issue 31 item 3).

For a few cells -- the package's 30-query MQ2008 sample at budget 12 (one ranker ``ap`` / ``rr``, index update
``dcg@10``) and a synthetic 40-query pool with 5 grades, ~120 documents per query and a weak relevance model
(per-query skewed metrics) -- the design of ``active_wor`` is built exactly as :func:`activerank.estimate` /
``compare`` build it (its ``q``, costs, predictions and the true per-query outputs on complete labels), and
the budgeted sequential Poisson sampler is run ``--reps`` times (vectorized,
:func:`activerank.design.without_replacement.draw_without_replacement_batch`).  On the same samples it compares

* ``b=1`` / ``b=0`` / ``b=oracle``: the difference estimator with a fixed coefficient (1, 0, the pool's
  variance-optimal one) and the conditional inclusion probabilities ``pi = min(1, a tau)`` of the sample;
* ``uncond pi``: the unconditional inclusion probabilities of the sampler (and their joint ones), estimated by
  simulation (``--pi-reps`` runs), with the Poisson, fixed-cost and Horvitz-Thompson variance forms -- cause (a);
* ``tuned``: the library's tuned, shrunk coefficient; ``loo-greg`` / ``cross-fit halves``: cross-fitted
  coefficients -- cause (b);
* the variance estimate ``sum_S (1 - pi) (p/pi)^2 e^2`` against the empirical variance -- cause (c);
* the interval: Student-t on ``n - k`` or on Satterthwaite's dof, alone or pooled with the model's predicted
  variance (``prior_dof = 2``), pooled or as a floor -- cause (d).

Columns: SD relative to ``b=1``, bias / Monte-Carlo SE, mean variance estimate / empirical variance, mean SE /
SD, coverage of the 95% interval with ``z`` and with Student-t.  Conclusions and the engine's before/after:
``benchmarks/results/wor_small_pool_notes.md``.

Run:  python benchmarks/wor_small_pool.py [--reps 4000] [--pi-reps 50000] [--seed 0]
Writes benchmarks/results/wor_small_pool.md (OHSUMED cells need ACTIVERANK_DATA).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import activerank as ar  # noqa: E402
from activerank._validation import scores_iv  # noqa: E402
from activerank.api import make_design  # noqa: E402
from activerank.design.without_replacement import draw_without_replacement_batch  # noqa: E402
from activerank.io.letor import LetorData  # noqa: E402
from activerank.pool import pool_iv  # noqa: E402
from activerank.relevance.rankers import remove_fraction  # noqa: E402


# --------------------------------------------------------------------------- pools


def sample_pool():
    """The package's 30-query MQ2008 sample, LightGBM on its training queries, the RankSVM ranker."""
    train, pool = ar.load_sample("train"), ar.load_sample("test")
    model = ar.relevance.make_relevance_model("lightgbm", pool.n_grades, random_state=0, n_jobs=1)
    probs = model.fit(train.X, train.labels).predict_proba(pool.X)
    lin = ar.relevance.rankers.fit_linear_ranker(train, method="ranksvm", random_state=0).scores(pool.X)
    return pool, probs, ar.relevance.expected_gain_scores(probs), lin


def ohsumed_pool():
    """OHSUMED fold 1's pool (106 queries) with benchmarks/metric_bias.py's LightGBM model and rankers."""
    sys.path.insert(0, HERE)
    from _coverage_setup import fit_fold_lightgbm

    fm = fit_fold_lightgbm("ohsumed", 1, cache_dir=os.path.join(HERE, "results", "cache"))
    return fm.pool, fm.probs["lightgbm"], fm.scores["lightgbm"], fm.scores["linear"]


def synthetic_pool(n_queries=40, seed=0):
    """5 grades, ~120 docs/query (lognormal lengths), skewed per-query relevance, a weak model.

    Every query has a relevance rate ``r ~ Beta(0.4, 4)`` (a few queries carry most relevant documents);
    a document's latent relevance ``z ~ N(0, 1)`` sets its grade through thresholds shifted by the rate.
    The model sees ``z`` through heavy noise and does not know ``r`` (only the pool's average rate), so its
    per-query metric predictions are weakly correlated with the truth.  Ranker A orders by a noisy ``z``,
    ranker B by another noisy ``z``.
    """
    rng = np.random.default_rng([seed, 40])
    lengths = np.clip(np.round(rng.lognormal(np.log(120) - 0.245, 0.7, n_queries)), 10, 600).astype(int)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    qid = np.repeat(np.arange(n_queries), lengths)
    rate = rng.beta(0.4, 4.0, n_queries)
    z = rng.standard_normal(offsets[-1])
    cuts = np.array([0.0, 0.9, 1.6, 2.2])  # on z + shift: higher shift, more relevant documents
    shift = stats.norm.ppf(np.clip(rate, 1e-4, 0.999))[qid] + 1.0
    labels = (z[:, None] + shift[:, None] > cuts[None]).sum(axis=1)
    seen = z + 2.0 * rng.standard_normal(z.size)  # the model's weak view of z
    mean_shift = float(np.mean(shift))
    thr = cuts[None] - mean_shift
    sd = np.sqrt(1 + 4.0)
    cdf = stats.norm.cdf((0.2 * seen[:, None] - thr) / sd)  # P(grade >= g), g = 1..4
    up = np.concatenate([np.ones((z.size, 1)), cdf, np.zeros((z.size, 1))], axis=1)
    probs = np.clip(up[:, :-1] - up[:, 1:], 1e-6, None)
    probs /= probs.sum(axis=1, keepdims=True)
    sa = z + 1.0 * rng.standard_normal(z.size)
    sb = z + 1.2 * rng.standard_normal(z.size)
    pool = LetorData(X=np.zeros((z.size, 1)), qids=qid.astype(str), query_ids=np.arange(n_queries).astype(str),
                     offsets=offsets, labels=labels, n_grades=5)
    return pool, probs, sa, sb


# --------------------------------------------------------------------------- one cell's arrays


def cell_arrays(pool, probs, sa, sb, scenario, metric, removal_seed=(7, 6)):
    """``(design, y, m, v)``: the active_wor design and the true / predicted per-query output, its variance."""
    pool_ = pool_iv(pool)
    a = scores_iv(sa, pool_, "scores")
    if scenario == "single":
        r, kind = (a,), "mean"
    elif scenario == "index":
        r, kind = (a, remove_fraction(a, 0.1, rng=np.random.default_rng(list(removal_seed)))), "difference"
    else:
        r, kind = (a, scores_iv(sb, pool_, "scores")), "difference"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = make_design(pool, r, probs, metric=metric, method="active_wor", target=kind)
    lab = np.asarray(pool.labels)
    y = d.target.outputs(d.target.values(lab, np.arange(pool.n_queries), d.n_grades))[:, 0]
    m = d.prediction.mean[:, 0]
    ov = d.prediction.output_variance
    v = None if ov is None else np.asarray(ov)[:, 0]
    return d, y, m, v


# --------------------------------------------------------------------------- estimators on a batch


def _moments(est, var, n, truth, dof):
    """bias/MC SE, var-hat / empirical var, SE/SD, coverage with z and t(dof)."""
    sd = est.std(ddof=1)
    mc = sd / np.sqrt(est.size)
    se = np.sqrt(np.maximum(var, 0))
    tq = stats.t.ppf(0.975, np.maximum(dof, 1))
    cov_t = np.mean(np.abs(est - truth) <= tq * se)
    cov_z = np.mean(np.abs(est - truth) <= 1.959964 * se)
    return dict(sd_rel=sd, bias_se=(est.mean() - truth) / mc, var_ratio=np.mean(var) / sd**2, se_sd=np.mean(se) / sd,
                cov_z=cov_z, cov_t=cov_t, sd=sd)


def _satt(a_i, mask, n, k):
    """``2 V^2 / Var-hat(V)`` with ``V = sum a_i`` and ``Var-hat(V) = n/(n-1) sum (a_i - mean a)^2``, in
    ``[1, n - k]``."""
    V = a_i.sum(-1)
    abar = V / n
    ss = (np.where(mask, a_i - abar[:, None], 0.0) ** 2).sum(-1) * n / np.maximum(n - 1, 1)
    dof = 2 * V**2 / np.maximum(ss, 1e-300)
    return np.clip(dof, 1, np.maximum(n - k, 1))


def _shrunk(vm, mm, vv, n, b0=1.0):
    ok = (mm > 1e-300) & (n > 2)
    bh = np.where(ok, vm / np.where(ok, mm, 1.0), b0)
    rss = np.maximum(vv - bh * vm, 0.0)
    var_b = np.where(ok, rss / np.maximum((n - 2.0) * np.where(ok, mm, 1.0), 1e-300), np.inf)
    s = np.clip(1.0 - var_b / np.maximum((bh - b0) ** 2, 1e-300), 0.0, 1.0)
    return np.where(ok, b0 + s * (bh - b0), b0)


def _loo_coefficients(om, yy, mm, mask, n, shrink=True):
    """Full-sample and leave-one-out coefficients (omega-weighted, through 0, shrunk towards 1)."""
    w = np.where(mask, om, 0.0)
    vm, m2, vv = (w * yy * mm).sum(-1), (w * mm * mm).sum(-1), (w * yy * yy).sum(-1)
    lvm, lm2, lvv = vm[:, None] - w * yy * mm, m2[:, None] - w * mm * mm, vv[:, None] - w * yy * yy
    if shrink:
        return _shrunk(vm, m2, vv, n), _shrunk(lvm, lm2, lvv, n[:, None] - 1)
    full = np.where(m2 > 1e-300, vm / np.maximum(m2, 1e-300), 1.0)
    return full, np.where(lm2 > 1e-300, lvm / np.maximum(lm2, 1e-300), 1.0)


def diagnose(name, d, y, m, v, budget, reps, pi_reps, seed):
    """Every variant's numbers on ``reps`` seeded samples of one cell."""
    q, lam = d.q, d.costs.cost
    live = d.p * (q > 0)
    share = live.sum()
    p = live / share  # the sampled stratum (census queries are exact; none here unless q = 0)
    truth_s = float(p @ y)
    M = float(p @ m)
    b = draw_without_replacement_batch(q, lam, [budget], reps, np.random.default_rng([seed, 1]))
    mask, pic, o = b.mask()[0], b.pi()[0], b.order
    n = mask.sum(-1)
    # (a) the unconditional inclusion probabilities of the actual sampler, by simulation
    bb = draw_without_replacement_batch(q, lam, [budget], pi_reps, np.random.default_rng([seed, 2]))
    inc = np.zeros(q.size)
    np.add.at(inc, bb.order[bb.mask()[0]], 1.0)
    pi_true = inc / pi_reps
    Z = np.zeros((pi_reps, q.size), dtype=np.float32)
    np.put_along_axis(Z, bb.order, bb.mask()[0].astype(np.float32), axis=1)
    pij = (Z.T @ Z) / pi_reps  # simulated joint inclusion probabilities
    del Z
    target = np.asarray(ar.design.without_replacement.approximate_inclusion_probabilities(q, lam, budget))
    yy, mm, pp = y[o], m[o], p[o]
    safe = np.where(mask, pic, 1.0)
    g = np.where(mask, pp / safe, 0.0)
    om = g * g * (1 - safe)
    out = {}

    def fixed(beta, gg=g, omg=om):
        e = yy - beta * mm
        return beta * M + (gg * e).sum(-1), (omg * e * e).sum(-1)

    for beta, label in ((1.0, "b=1"), (0.0, "b=0")):
        est, var = fixed(beta)
        out[label] = _moments(est, var, n, truth_s, n - 1)
    # oracle: the pool's variance-optimal fixed coefficient (approximately sum p^2 (1/pi - 1) y m / ... m m)
    w = np.where(target > 0, p**2 * (1 / np.maximum(target, 1e-12) - 1), 0.0)
    b_or = float((w * y * m).sum() / max((w * m * m).sum(), 1e-300))
    est, var = fixed(b_or)
    out[f"b=oracle ({b_or:.2f})"] = _moments(est, var, n, truth_s, n - 1)
    # (a) unconditional pi
    pu = np.where(mask, np.maximum(pi_true[o], 1e-12), 1.0)
    gu = np.where(mask, pp / pu, 0.0)
    est, var = fixed(1.0, gu, gu * gu * (1 - pu))
    out["b=1 uncond pi"] = _moments(est, var, n, truth_s, n - 1)
    # Horvitz-Thompson variance estimator with the simulated joint inclusion probabilities
    def ht_var(u_):
        idx = np.where(mask, o, 0)
        P2 = pij[idx[:, :, None], idx[:, None, :]]
        P1 = np.where(mask, pi_true[o], 1.0)
        mm2 = mask[:, :, None] & mask[:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(mm2 & (P2 > 0), (P2 - P1[:, :, None] * P1[:, None, :]) / np.where(P2 > 0, P2, 1), 0.0)
        return np.einsum("rij,ri,rj->r", term, u_, u_)
    uu = np.where(mask, gu * (yy - mm), 0.0)
    vht = ht_var(uu)
    out["b=1 uncond pi, HT var joint pi"] = _moments(est, np.maximum(vht, 0), n, truth_s, n - 1)
    # the fixed-cost (conditional Poisson) form: residuals u = p e / pi regressed on lambda (Deville-Tille)
    lo = lam[o]
    u = np.where(mask, gu * (yy - mm), 0.0)
    w1 = np.where(mask, 1 - pu, 0.0)
    B = (w1 * u * lo).sum(-1) / np.maximum((w1 * lo * lo).sum(-1), 1e-300)
    vdt = (w1 * (u - B[:, None] * lo) ** 2).sum(-1) * n / np.maximum(n - 1, 1)
    out["b=1 uncond pi fixed-cost var"] = _moments(est, vdt, n, truth_s, n - 1)
    a_i = np.where(mask, gu * gu * (1 - pu) * (yy - mm) ** 2, 0.0)
    out["b=1 uncond pi satt-dof"] = _moments(est, var, n, truth_s, _satt(a_i, mask, n, 1))
    from activerank.inference.horvitz_thompson import hajek_kernel as _hk

    e_u, v_u, _ = _hk(yy, pu, pp, mask, predictions=mm, pool_prediction=M, tuned=True, ratio=False,
                      prior_coefficient=1.0)
    out["tuned uncond pi"] = _moments(e_u, v_u * n / np.maximum(n - 1, 1), n, truth_s, n - 2)
    if v is not None:
        vmod0 = float(np.sum(np.where(target > 0, p**2 * (1 / np.maximum(target, 1e-12) - 1), 0) * v))
        out["b=1 uncond pi + prior"] = _moments(est, (2 * vmod0 + (n - 1) * var) / (n + 1), n, truth_s, n - 1)
    # (b) the library's tuned, shrunk coefficient
    from activerank.inference.horvitz_thompson import hajek_kernel

    e_t, v_t, beta_t = hajek_kernel(yy, pic, pp, mask, predictions=mm, pool_prediction=M, tuned=True, ratio=False,
                                    prior_coefficient=1.0)
    v_t = v_t * n / np.maximum(n - 1, 1)
    out["tuned"] = _moments(e_t, v_t, n, truth_s, n - 2)
    # leave-one-out coefficient (cross-fitted): unit i's residual uses the coefficient fitted without it
    vm, mmm = (om * yy * mm).sum(-1, keepdims=True), (om * mm * mm).sum(-1, keepdims=True)
    loo_vm, loo_mm = vm - om * yy * mm, mmm - om * mm * mm
    b_loo = np.where(loo_mm > 1e-300, loo_vm / np.maximum(loo_mm, 1e-300), 1.0)
    b_loo = np.clip(b_loo, 0.0, 2.0)
    bbar = np.where(mask, b_loo, 0).sum(-1) / n
    e = yy - b_loo * mm
    est_x = (g * e).sum(-1) + bbar * M  # the pool term with the mean coefficient (not unbiased: see loo-greg)
    # leave-one-out GREG: unit i's residual uses the coefficient fitted without it, the pool term uses
    # b_i on sampled queries and the full-sample b elsewhere (exactly unbiased under Poisson sampling)
    for shrink in (True, False):
        bf, bl = _loo_coefficients(om, yy, mm, mask, n, shrink)
        el2 = np.where(mask, yy - bl * mm, 0.0)
        est_l = bf * M + (g * el2).sum(-1) + np.where(mask, pp * mm * (bl - bf[:, None]), 0.0).sum(-1)
        a_l = om * el2 * el2
        lab = "loo-greg" + (" shrunk" if shrink else "")
        out[lab] = _moments(est_l, a_l.sum(-1), n, truth_s, n - 1)
        out[lab + " satt"] = _moments(est_l, a_l.sum(-1), n, truth_s, _satt(a_l, mask, n, 1))
        if v is not None:
            vmod1 = float(np.sum(np.where(target > 0, p**2 * (1 / np.maximum(target, 1e-12) - 1), 0) * v))
            ds = _satt(a_l, mask, n, 1)
            out[lab + " + prior satt"] = _moments(est_l, (2 * vmod1 + ds * a_l.sum(-1)) / (2 + ds), n, truth_s, ds)
    # cross-fitted in random halves (K splits averaged): unit i's residual uses the coefficient of the half
    # without it, the pool term the halves' mean coefficient (exactly unbiased under Poisson sampling)
    crng = np.random.default_rng([seed, 3])
    K = 8
    coin = crng.random((K,) + mask.shape) < 0.5
    ests, bsum = [], np.zeros(mask.shape)
    w = np.where(mask, om, 0.0)
    for k in range(K):
        h = coin[k]
        bh = []
        for side in (h, ~h):
            sm = mask & side
            ww = np.where(sm, w, 0.0)
            bh.append(_shrunk((ww * yy * mm).sum(-1), (ww * mm * mm).sum(-1), (ww * yy * yy).sum(-1),
                              sm.sum(-1)))
        b_other = np.where(h, bh[1][:, None], bh[0][:, None])
        bsum += b_other
        ek = np.where(mask, yy - b_other * mm, 0.0)
        ests.append(0.5 * (bh[0] + bh[1]) * M + (g * ek).sum(-1))
    est_c = np.mean(ests, axis=0)
    ec = np.where(mask, yy - (bsum / K) * mm, 0.0)
    a_c = om * ec * ec
    out["cross-fit halves"] = _moments(est_c, a_c.sum(-1), n, truth_s, n - 1)
    out["cross-fit halves satt"] = _moments(est_c, a_c.sum(-1), n, truth_s, _satt(a_c, mask, n, 1))
    if v is not None:
        vmod2 = float(np.sum(np.where(target > 0, p**2 * (1 / np.maximum(target, 1e-12) - 1), 0) * v))
        dc = _satt(a_c, mask, n, 1)
        vc = a_c.sum(-1)
        out["cross-fit halves + prior floor satt"] = _moments(est_c, np.maximum(vc, (2 * vmod2 + dc * vc) / (2 + dc)),
                                                             n, truth_s, dc)
    el = np.where(mask, e, 0.0)
    out["cross (loo, clip 0..2)"] = _moments(est_x, (om * el * el).sum(-1), n, truth_s, n - 2)
    # (d') Satterthwaite degrees of freedom of the variance estimate (its terms a_i = omega_i e_i^2)
    for beta, label in ((1.0, "b=1"), (b_or, "b=oracle")):
        est, var = fixed(beta)
        a_i = np.where(mask, om * (yy - beta * mm) ** 2, 0.0)
        out[f"{label} satt-dof"] = _moments(est, var, n, truth_s, _satt(a_i, mask, n, 1))
    a_i = om * el * el
    out["cross satt-dof"] = _moments(est_x, a_i.sum(-1), n, truth_s, _satt(a_i, mask, n, 2))
    a_i = np.where(mask, om * (yy - beta_t[:, None] * mm) ** 2, 0.0) * (n / np.maximum(n - 1, 1))[:, None]
    out["tuned satt-dof"] = _moments(e_t, v_t, n, truth_s, _satt(a_i, mask, n, 2))
    # (d) pooled with the model's predicted variance, prior_dof = 2, t on n - 2
    if v is not None:
        vmod = float(np.sum(np.where(target > 0, p**2 * (1 / np.maximum(target, 1e-12) - 1), 0) * v))
        for label, (ee, vh, k) in {"tuned + prior": (e_t, v_t, 2), "b=1 + prior": (*fixed(1.0), 1)}.items():
            pooled = (2 * vmod + (n - k) * vh) / (2 + n - k)
            out[label] = _moments(ee, pooled, n, truth_s, n - k)
        # the prior pooled with the sample's variance weighted by its Satterthwaite dof, t on that dof
        ee, vh = fixed(1.0)
        a_i = np.where(mask, om * (yy - mm) ** 2, 0.0)
        ds = _satt(a_i, mask, n, 1)
        out["b=1 + prior, satt weight, t(satt)"] = _moments(ee, (2 * vmod + ds * vh) / (2 + ds), n, truth_s, ds)
        out["b=1 + prior as floor, satt weight, t(satt)"] = _moments(
            ee, np.maximum(vh, (2 * vmod + ds * vh) / (2 + ds)), n, truth_s, ds)
        out["b=1 + prior, satt weight, t(satt+2)"] = _moments(ee, (2 * vmod + ds * vh) / (2 + ds), n, truth_s,
                                                             np.minimum(ds + 2, n - 1))
        a_t = np.where(mask, om * (yy - beta_t[:, None] * mm) ** 2, 0.0) * (n / np.maximum(n - 1, 1))[:, None]
        dt = _satt(a_t, mask, n, 2)
        out["tuned + prior, satt weight, t(satt)"] = _moments(e_t, (2 * vmod + dt * v_t) / (2 + dt), n, truth_s, dt)
        out["_vmodel"] = vmod
    rows = []
    rows.append(f"\n### {name}\n")
    rows.append(f"N = {q.size}, budget {budget:g}, mean n = {n.mean():.1f} (n/N {n.mean() / q.size:.2f}, "
                f"planned fraction {target.sum() / max(int((q > 0).sum()), 1):.2f}), "
                f"reps {reps}; truth {truth_s:.5g}; true coefficient-free SD of b=1: {out['b=1']['sd']:.3g}; "
                f"model-predicted variance / empirical variance of tuned: "
                f"{out.get('_vmodel', np.nan) / out['tuned']['sd'] ** 2:.2f}\n")
    rows.append(f"Inclusion probabilities (pi-reps {pi_reps}, MC SE <= {0.5 / np.sqrt(pi_reps):.4f}): "
                f"max |simulated - planning pi| = {np.max(np.abs(pi_true - target)):.3f}, "
                f"sum = {pi_true.sum():.2f} vs {target.sum():.2f}; "
                f"corr(y, m) = {np.corrcoef(y, m)[0, 1]:.2f}; skewness of p y/pi_plan: "
                f"{stats.skew(np.where(target > 0, y / np.maximum(target, 1e-12), 0)):.2f}\n")
    rows.append("| variant | SD / SD(b=1) | bias / MC SE | mean var-hat / emp. var | mean SE / SD | cov z | cov t |")
    rows.append("|---|---|---|---|---|---|---|")
    for k, r in out.items():
        if k.startswith("_"):
            continue
        rows.append(f"| {k} | {r['sd'] / out['b=1']['sd']:.2f} | {r['bias_se']:+.1f} | {r['var_ratio']:.2f} | "
                    f"{r['se_sd']:.2f} | {r['cov_z']:.3f} | {r['cov_t']:.3f} |")
    return "\n".join(rows), out


CELLS = [
    ("ohsumed", "single", "dcg@10", 12.0), ("ohsumed", "pair", "dcg@10", 12.0), ("ohsumed", "single", "ap", 12.0),
    ("sample", "single", "ap", 12.0), ("sample", "single", "rr", 12.0), ("sample", "index", "dcg@10", 12.0),
    ("sample", "index", "err@10", 12.0), ("sample", "pair", "err@10", 12.0), ("sample", "pair", "dcg@10", 12.0),
    ("sample", "index", "ndcg@10", 12.0), ("sample", "index", "ap", 12.0),
    ("synthetic", "single", "dcg@10", 10.0), ("synthetic", "index", "err@10", 20.0),
    ("synthetic", "pair", "err@10", 10.0), ("synthetic", "pair", "err@10", 20.0),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--pi-reps", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "wor_small_pool.md"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pools = {"sample": sample_pool(), "synthetic": synthetic_pool()}
    if os.environ.get("ACTIVERANK_DATA"):
        pools["ohsumed"] = ohsumed_pool()
    parts = [__doc__.split("\n\n")[0], "", f"Command: `python benchmarks/wor_small_pool.py --reps {args.reps} "
             f"--pi-reps {args.pi_reps} --seed {args.seed}`"]
    for ds, scen, metric, budget in CELLS:
        if ds not in pools:
            continue
        pool, probs, sa, sb = pools[ds]
        # the sample's index update is metric_bias.py's (seed [7, len("sample")])
        d, y, m, v = cell_arrays(pool, probs, sa, sb, scen, metric, (7, 6) if ds == "sample" else (7, 40))
        # budgets in mean-query-cost units, as benchmarks/metric_bias.py
        bud = budget
        text, _ = diagnose(f"{ds} {scen} {metric} budget {budget:g}", d, y, m, v, bud, args.reps, args.pi_reps,
                           args.seed)
        print(text, flush=True)
        parts.append(text)
    parts.append(f"\n{time.perf_counter() - t0:.0f} s.")
    with open(args.out, "w") as f:
        f.write("\n".join(parts) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
