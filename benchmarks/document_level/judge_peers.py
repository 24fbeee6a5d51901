"""The peers handed the same judge: PPI++ (query and document level) and StratPPI vs ``doc_dyn`` (issue 33).

Same datasets, folds, tasks, simulated judges, calibration, cost model and budget grid as
``judge_check.py`` (read its docstring first).  Every method gets the same calibrated judge
``p(y | x, z)`` (``none``: the feature model), so the comparison is of what each does with it:

``doc_dyn``      activerank's default on these tasks (``judge_check.py``'s cells, same seeds).
``ppi_query``    PPI++ (Angelopoulos et al. 2023, power-tuned mean) over queries.  The label is the query's
                 contrast ``L_q``, the prediction its expectation under the calibrated judge.  Queries come in
                 uniformly random order and are judged whole while the budget lasts (the first query that does
                 not fit ends the sample); the unlabeled set is the rest of the pool.
``ppi_doc``      PPI++ over the pooled documents of the compared top-10 lists that carry a weight (a document
                 at the same rank of both lists cancels, and the peer is told).  A document's label is
                 ``N W u`` (``N`` documents, ``W`` its weight in the targets, ``u`` its gain), the prediction
                 ``N W E[u]``; the sample is random-order as above.
``stratppi``     StratPPI (Fisch et al. 2024, arXiv 2406.04291): the same documents in ``H = 10`` strata,
                 equal-count bins of the judge's predicted residual spread ``||N W|| sd(u)``; Neyman
                 allocation on those predicted spreads with the mean cost (``n_h`` proportional to
                 ``N_h sigma_h / sqrt(c_h)``, capped at ``N_h``, at least 2); simple random samples within the
                 strata; PPI++ with its own power tuning in every stratum, combined with the weights
                 ``N_h / N``.

PPI++'s power tuning, per target: ``lambda = cov_S(y, f) / ((1 + n / N_u) var(f))`` clipped to [0, 1],
estimate ``mean_S(y - lambda f) + lambda mean_U(f)``, variance ``var_S(y - lambda f) / n +
lambda^2 var_U(f) / N_u``, normal 95% interval (ppi_py's ``ppi_mean_pointestimate`` / ``ppi_mean_ci``,
written here).  The document peers spend the budget in expectation (the stratified sample's realized
cost varies with the documents' costs on OHSUMED), ``doc_dyn`` never more than the budget.

Reported per dataset, task and judge: the MSE (summed over the targets) at the reference budget of every
method; ``doc_dyn``'s ratio to the best peer (95% bootstrap over runs) and its largest value over the
budgets of at least 10 queries' worth; the peers' bias (largest |bias| / SE) and coverage there.
The goal (issue 33): ratio at most 0.5 for the kappa-0.6 judge in every scenario.

Run:  python benchmarks/document_level/judge_peers.py [--datasets mq2008,ohsumed] [--folds 1,2,3,4,5]
      [--reps 200] [--tasks a_rf,b_ologit_rf,k_baseline] [--judges none,kappa_0.6,...]
Needs ``ACTIVERANK_DATA`` (or ``--data``); without the data it prints a message and exits 0.
Writes results/judge_peers.csv and results/judge_peers.md.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

import judge_check as jc
import run as bench
from common import RESULTS, build_task
from registered import registered
from report import TITLES


PEERS = ("ppi_query", "ppi_doc", "stratppi")
RAW_PEERS = ("ppi_query_raw", "ppi_doc_raw")  # the judge's own grades as the prediction (not calibrated)
METHODS = ("doc_dyn",) + PEERS + RAW_PEERS
#: every peer's random stream; a raw peer draws as its calibrated twin does (same random numbers: paired)
STREAM = {"ppi_query": 2, "ppi_doc": 3, "stratppi": 4, "ppi_query_raw": 2, "ppi_doc_raw": 3}
N_STRATA = 10
CHUNK = 100  # runs per block (memory: a block holds runs x units)


# --------------------------------------------------------------------------- PPI++ on masked samples


def ppi_pp(y, f, mask, totals, lam=None):
    """PPI++ mean of every target for every run: labeled ``mask`` (R, N), labels ``y`` and predictions ``f``
    (N, T); ``totals`` = (sum f, sum f^2) over all N units.  Returns estimate and variance (R, T).

    ``lam`` fixes the coefficient (default: power tuning, whose estimate from the sample makes PPI++ biased
    by O(1/n); a fixed one is exactly unbiased, which the tests check).  A census (no unlabeled unit) is the
    labels' mean with variance 0; runs with fewer than 2 labels are NaN.
    """
    N = y.shape[0]
    n = mask.sum(axis=1)[:, None]
    nu = N - n
    Sy, Sf = mask @ y, mask @ f
    Syy, Sff, Syf = mask @ (y * y), mask @ (f * f), mask @ (y * f)
    Tf, Tff = totals
    with np.errstate(divide="ignore", invalid="ignore"):
        var_f = (Tff - Tf**2 / N) / (N - 1)
        cov = (Syf - Sy * Sf / n) / (n - 1)
        tuned = np.clip(cov / ((1.0 + n / nu) * np.where(var_f > 0, var_f, np.inf)), 0.0, 1.0)
        lam = np.where(nu > 0, tuned if lam is None else lam, 0.0)
        mean_u = np.where(nu > 0, (Tf - Sf) / nu, 0.0)
        r_mean = (Sy - lam * Sf) / n
        est = r_mean + lam * mean_u
        var_r = (Syy - 2 * lam * Syf + lam**2 * Sff - n * r_mean**2) / (n - 1)
        var_u = np.where(nu > 1, ((Tff - Sff) - nu * mean_u**2) / (nu - 1), 0.0)
        var = np.where(nu > 0, np.clip(var_r, 0.0, None) / n + lam**2 * np.clip(var_u, 0.0, None) / nu, 0.0)
    small = n < 2
    return np.where(small, np.nan, est), np.where(small, np.nan, var)


def random_order_sample(cost, B, U):
    """Random-order sampling while the budget lasts: mask (R, N) of the units bought, their cost (R,)."""
    order = np.argsort(U, axis=1)
    cc = np.cumsum(cost[order], axis=1)
    k = (cc <= B * (1 + 1e-12)).sum(axis=1)
    rank = np.argsort(order, axis=1)
    mask = (rank < k[:, None]).astype(np.float64)
    spent = np.where(k > 0, cc[np.arange(U.shape[0]), np.maximum(k - 1, 0)], 0.0)
    return mask, spent


def ppi_random_order(y, f, cost, budgets, rng, reps, lam=None):
    """PPI++ on random-order samples on the budget grid: estimate, SE (nb, R, T), cost and n (nb, R)."""
    totals = (f.sum(axis=0), (f * f).sum(axis=0))
    nb, N, T = len(budgets), y.shape[0], y.shape[1]
    est, se = np.empty((nb, reps, T)), np.empty((nb, reps, T))
    spent, n = np.empty((nb, reps)), np.empty((nb, reps))
    for start in range(0, reps, CHUNK):
        U = rng.random((min(CHUNK, reps - start), N))
        sl = slice(start, start + U.shape[0])
        for bi, B in enumerate(budgets):
            mask, spent[bi, sl] = random_order_sample(cost, B, U)
            e, v = ppi_pp(y, f, mask, totals, lam)
            est[bi, sl], se[bi, sl], n[bi, sl] = e, np.sqrt(v), mask.sum(axis=1)
    return est, se, spent, n


# --------------------------------------------------------------------------- StratPPI


def strata(score, H):
    """Equal-count bins of ``score`` (ties broken by position): stratum index per unit."""
    order = np.argsort(score, kind="stable")
    h = np.empty(score.size, dtype=np.int64)
    h[order] = np.minimum(np.arange(score.size) * H // score.size, H - 1)
    return h


def neyman(sizes, sigma, mean_cost, B):
    """Stratum sample sizes: ``n_h`` proportional to ``N_h sigma_h / sqrt(c_h)`` with expected cost ``B``,
    capped at ``N_h`` (the cap's excess goes to the others), at least ``min(2, N_h)``, rounded."""
    lo = np.minimum(2, sizes).astype(float)
    n = lo.copy()
    capped = np.zeros(sizes.size, dtype=bool)
    for _ in range(sizes.size):
        w = np.where(capped, 0.0, sizes * sigma / np.sqrt(mean_cost))
        left = B - (n * mean_cost)[capped].sum()
        if w.sum() <= 0 or left <= 0:
            break
        n = np.where(capped, n, np.maximum(left * w / (w @ mean_cost), lo))
        over = ~capped & (n >= sizes)
        if not over.any():
            break
        n = np.where(over, sizes, n)
        capped |= over
    return np.clip(np.round(n), lo, sizes).astype(np.int64)


def strat_ppi(y, f, cost, score, budgets, rng, reps, H=N_STRATA, lam=None):
    """StratPPI on the budget grid: estimate, SE (nb, R, T), cost and n (nb, R)."""
    N, T = y.shape
    h = strata(score, H)
    onehot = np.zeros((N, H))
    onehot[np.arange(N), h] = 1.0
    sizes = onehot.sum(axis=0).astype(np.int64)
    sigma = np.sqrt((onehot.T @ score**2) / sizes)
    mean_cost = (onehot.T @ cost) / sizes
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    nb = len(budgets)
    est, se = np.empty((nb, reps, T)), np.empty((nb, reps, T))
    spent, n_all = np.empty((nb, reps)), np.empty((nb, reps))
    for start in range(0, reps, CHUNK):
        U = rng.random((min(CHUNK, reps - start), N))
        sl = slice(start, start + U.shape[0])
        within = np.argsort(np.argsort(h[None, :] + U, axis=1), axis=1) - first[h][None, :]
        for bi, B in enumerate(budgets):
            nh = neyman(sizes, sigma, mean_cost, B)
            mask = (within < nh[h][None, :]).astype(np.float64)
            e = np.zeros((U.shape[0], T))
            v = np.zeros((U.shape[0], T))
            for s in range(H):
                rows = h == s
                ys, fs = y[rows], f[rows]
                es, vs = ppi_pp(ys, fs, mask[:, rows], (fs.sum(axis=0), (fs * fs).sum(axis=0)), lam)
                e += sizes[s] / N * es
                v += (sizes[s] / N) ** 2 * vs
            est[bi, sl], se[bi, sl] = e, np.sqrt(v)
            spent[bi, sl], n_all[bi, sl] = mask @ cost, mask.sum(axis=1)
    return est, se, spent, n_all


# --------------------------------------------------------------------------- the peers on one task


def peer_inputs(ctx, raw_gain):
    """Labels, predictions, costs and predicted spreads of the query-level and document-level peers.

    ``raw_gain``: every unit's gain at the judge's own grade (the raw peers' prediction).
    """
    t, m = ctx.t, ctx.task.pool.n_queries
    keep = t.matters
    mean, var = ctx.mom.mean, ctx.mom.variance
    Wq = t.weights * m  # a query's contrast is m * sum of its units' W u
    # per query: the weighted sums of the model's mean, the judge's gain and the true gain
    sums = np.zeros((m, 3, t.n_targets))
    np.add.at(sums, t.query, Wq[:, None, :] * np.stack([mean, raw_gain, ctx.u], axis=1)[:, :, None])
    fq, fq_raw, resid = sums[:, 0], sums[:, 1], sums[:, 2]
    yq = ctx.L.T
    if not np.allclose(resid, yq, atol=1e-9):
        raise RuntimeError("a query's contrast is not the sum of its documents' weighted gains")
    Nd = int(keep.sum())
    Wd = t.weights[keep] * Nd
    yd, fd = Wd * ctx.u[keep, None], Wd * mean[keep, None]
    sd = np.sqrt((Wd**2).sum(axis=1) * var[keep])
    return dict(query=(yq, fq, fq_raw, ctx.full.cost * ctx.scale),
                doc=(yd, fd, Wd * raw_gain[keep, None], ctx.c[keep], sd))


def run_peers(ctx, raw_gain, seed, reps):
    """The peers on ``ctx``'s budget grid, packed like ``run.py``'s designs."""
    inp = peer_inputs(ctx, raw_gain)
    budgets = ctx.rel * ctx.scale
    out = {}
    yq, fq, fq_raw, cq = inp["query"]
    yd, fd, fd_raw, cd, sd = inp["doc"]
    runs = {"ppi_query": lambda g: ppi_random_order(yq, fq, cq, budgets, g, reps),
            "ppi_doc": lambda g: ppi_random_order(yd, fd, cd, budgets, g, reps),
            "stratppi": lambda g: strat_ppi(yd, fd, cd, sd, budgets, g, reps),
            "ppi_query_raw": lambda g: ppi_random_order(yq, fq_raw, cq, budgets, g, reps),
            "ppi_doc_raw": lambda g: ppi_random_order(yd, fd_raw, cd, budgets, g, reps)}
    for name in PEERS + RAW_PEERS:
        est, se, spent, n = runs[name](np.random.default_rng(seed + [STREAM[name]]))
        empty = ~np.isfinite(est).all(axis=2)
        est = np.where(empty[..., None], 0.0, est)
        packed = bench._pack(name, est, np.where(empty[..., None], np.nan, se), np.where(empty, 0.0, spent / ctx.scale),
                             ctx.T, n)
        packed["budgets"] = ctx.rel
        out[name] = packed
    return out


def run_dataset(ds, args, cfg, say):
    env, _ = jc.dataset_judges(ds, args, cfg, say)
    rel = env["rel"]
    all_res: dict = {}
    for fold in [int(f) for f in args.folds.split(",")]:
        tf = time.perf_counter()
        fenv, _ = jc.fold_judges(env, fold)
        for key in args.tasks.split(","):
            task = build_task(fenv["fm"], key, fold)
            if bench.determined(bench.Context(task, fenv["doc_costs"], rel)):
                say(f"{ds} fold {fold} {key}: skipped, no judgment can change the target")
                continue
            seed = [env["di"], fold, jc.TASKS_INDEX[key], 33]
            for name in env["judges"]:
                probs, _ = jc.calibrated(env, fenv, task, name)
                ctx = jc.judged_context(fenv, task, probs, rel)
                # the raw peers' prediction: the judge's own grade (none: the feature model's expected gain)
                raw = (ctx.mom.mean if name == "none"
                       else ctx.t.utilities(fenv["grades"][name][1][ctx.t.rows]))
                res = {"doc_dyn": registered(ctx, "doc_dyn", np.random.default_rng(seed + [1]), args.reps)}
                res.update(run_peers(ctx, raw, seed, args.reps))
                for method, r in res.items():
                    all_res.setdefault((key, name), {}).setdefault(method, []).append(r)
        say(f"{ds} fold {fold}: {time.perf_counter() - tf:.0f}s")
    return summarize(ds, env["spec"], rel, all_res)


# --------------------------------------------------------------------------- summaries


def mse_at(parts, bi, idx=None):
    """MSE (summed over targets) at budget index ``bi``, mean over folds (runs ``idx`` per fold)."""
    return float(np.mean([jc.mse_curve(p)[bi, slice(None) if idx is None else i].mean()
                          for p, i in zip(parts, idx or [None] * len(parts))]))


def ratio_to(res, peers, bref, ok, gen, n_boot=300):
    """``doc_dyn``'s MSE / the best of ``peers``' at budget index ``bref`` (95% bootstrap over runs) and its
    largest value over the budgets ``ok``."""
    mse = {m: mse_at(res[m], bref) for m in peers}
    best = min(peers, key=lambda m: mse[m])

    def draw(m):
        return [gen.integers(0, p["loss"].shape[1], p["loss"].shape[1]) for p in res[m]]

    boot = [mse_at(res["doc_dyn"], bref, draw("doc_dyn")) / min(mse_at(res[m], bref, draw(m)) for m in peers)
            for _ in range(n_boot)]
    worst = max(mse_at(res["doc_dyn"], b) / min(mse_at(res[m], b) for m in peers) for b in np.flatnonzero(ok))
    return dict(best_peer=best, ratio=mse_at(res["doc_dyn"], bref) / mse[best],
                ratio_low=float(np.quantile(boot, 0.025)), ratio_high=float(np.quantile(boot, 0.975)),
                ratio_max=worst)


def summarize(ds, spec, rel, all_res):
    ref = float(spec.reference_budget)
    bref = int(np.flatnonzero(np.isclose(rel, ref))[0])
    big = rel >= jc.MIN_BUDGET
    gen = np.random.default_rng(0)
    rows = []
    for (key, judge), res in all_res.items():
        ok = big & np.all([bench.pooled_check(res[m])["valid"] for m in METHODS], axis=0)
        row = dict(dataset=ds, task=key, judge=judge, ref_budget=ref, n_folds=len(res["doc_dyn"]),
                   reps=res["doc_dyn"][0]["loss"].shape[1])
        row.update(ratio_to(res, PEERS + RAW_PEERS, bref, ok, gen))
        row.update({f"{k}_raw": v for k, v in ratio_to(res, RAW_PEERS, bref, ok, gen).items()})
        for m in METHODS:
            chk = bench.pooled_check(res[m])
            okm = big & chk["valid"]
            row.update({f"mse_{m}": mse_at(res[m], bref), f"bias_z_{m}": float(np.nanmax(chk["z"][okm])),
                        f"cov_min_{m}": float(chk["coverage"][okm].min()),
                        f"cov_max_{m}": float(chk["coverage"][okm].max())})
        rows.append(row)
    return pd.DataFrame(rows)


def ratio_table(df, judges, sfx):
    lines = ["| dataset | task | " + " | ".join(judges) + " |", "|---|---|" + "---|" * len(judges)]
    for (ds, key), g in df.groupby(["dataset", "task"], sort=False):
        g = g.set_index("judge")
        lines.append(f"| {ds} | {TITLES.get(key, key)} | " + " | ".join(
            f"{g.loc[j, 'ratio' + sfx]:.2f} [{g.loc[j, 'ratio_low' + sfx]:.2f}, {g.loc[j, 'ratio_high' + sfx]:.2f}] "
            f"({g.loc[j, 'best_peer' + sfx]}); max {g.loc[j, 'ratio_max' + sfx]:.2f}" if j in g.index else "–"
            for j in judges) + " |")
    return lines


def write_md(df):
    df = jc.by_dataset(df)
    judges = [j for j in jc.JUDGES if j in set(df.judge)]
    sizes = jc.run_sizes(df)
    lines = ["# The peers handed the same judge (DCG@10, equal documents)", "",
             f"Generated by `benchmarks/document_level/judge_peers.py` ({sizes}; one process on a shared 2-core "
             "machine). Every method gets the same calibrated judge (protocol in the module docstring and in "
             "`judge_check.py`). Cell: `doc_dyn`'s MSE / the best peer's at the reference budget (95% bootstrap "
             "over runs; the best peer in brackets), then its largest value over the budgets of ≥ 10 queries' "
             "worth. Goal: ≤ 0.5 with the kappa-0.6 judge.", "",
             "", "## Against every peer, the calibrated judge handed to them too", ""]
    lines += ratio_table(df, judges, "")
    lines += ["", "## Against the peers as published: the judge's own grades as the prediction (PPI++)", ""]
    lines += ratio_table(df, judges, "_raw")
    lines += ["", "## MSE at the reference budget, every method (kappa-0.6 judge and none)", "",
              "| dataset | task | judge | " + " | ".join(METHODS) + " |", "|---|---|---|" + "---|" * len(METHODS)]
    for _, r in df[df.judge.isin(["none", "kappa_0.6"])].iterrows():
        lines.append(f"| {r.dataset} | {TITLES.get(r.task, r.task)} | {r.judge} | "
                     + " | ".join(f"{r[f'mse_{m}']:.3g}" for m in METHODS) + " |")
    lines += ["", "## Peers' bias and coverage (budgets of ≥ 10 queries' worth, pooled over folds)", "",
              "Cell: largest |bias| / SE / coverage range, over every judge.", "",
              "| dataset | task | " + " | ".join(METHODS) + " |", "|---|---|" + "---|" * len(METHODS)]
    for (ds, key), g in df.groupby(["dataset", "task"], sort=False):
        lines.append(f"| {ds} | {TITLES.get(key, key)} | " + " | ".join(
            f"{g[f'bias_z_{m}'].max():.1f} / {g[f'cov_min_{m}'].min():.3f}-{g[f'cov_max_{m}'].max():.3f}"
            for m in METHODS) + " |")
    (RESULTS / "judge_peers.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> int:
    args = jc.parse_checked(jc.arg_parser(__doc__.splitlines()[0], reps=200), argv)
    cfg = jc.data_config(args)
    if cfg is None:
        return 0
    warnings.simplefilter("ignore")  # solver convergence chatter of the calibrator's grid search
    path = RESULTS / "judge_peers.csv"
    for ds in args.datasets.split(","):
        td = time.perf_counter()
        df = run_dataset(ds, args, cfg, lambda line: print(line, flush=True))
        df["folds"], df["seconds"] = args.folds, time.perf_counter() - td
        old = pd.read_csv(path) if path.exists() else None  # datasets may run as separate invocations
        (df if old is None else pd.concat([old[old.dataset != ds], df])).to_csv(path, index=False)
    write_md(pd.read_csv(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
