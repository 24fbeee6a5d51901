"""Time one figure's worth of the experiment harness: 10 budgets x 1000 repetitions per curve.

A figure of ``python -m activerank.experiments`` (e.g. ``fig_mq2008_err10.png``)
holds, for one dataset and metric, 7 scenario instances x 4 methods (passive,
active, active_uniD, active_uniC) x 5 folds = 140 simulated curves, each
10 budgets x 1000 repetitions.  Every curve is one call of the harness's
simulation core:

    plan  = draw_budgeted_batch(q, costs, max budget, 1000, rng)   # all repetitions at once
    stops = budget_stops(plan, budgets)                             # the 10 budgets as prefixes
    est   = snis_prefix(values[x], p[x] / q[x], stops)              # SNIS on every prefix
    + the absolute-error / coverage / selection-error summaries

This script builds the 140 problems synthetically with MQ2008's shape (a pool
of 627 queries per fold, ~19 documents per query, @10 costs = judged documents
in the union of the top-10 lists, normalized to mean 1, budgets 10..300), so it
needs no data and no model fitting, and times that core.

``--before DIR`` also times the implementation in ``DIR`` (the root of another
checkout, e.g. ``git archive <commit> | tar -x -C DIR``): the two run
alternately, each figure in a fresh process, so both see the same machine
load; the median of ``--repeats`` (>= 5) figures is reported with the spread.
BLAS is pinned to one thread in every run.

Run:  python benchmarks/harness.py [--before DIR] [--repeats 5]
Writes benchmarks/results/harness.csv and benchmarks/results/harness.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")

BUDGETS = np.array([10, 15, 20, 30, 50, 75, 100, 150, 200, 300], dtype=float)
N_FOLDS, N_INSTANCES, N_PAIRS = 5, 7, 3  # instances b (3 of them) compare two rankers
METHODS = ("passive", "active", "active_uniD", "active_uniC")
POOL_QUERIES = 627
DEFENSIVE = 0.1


def make_problems(seed: int = 0):
    """140 (q, costs, values, p) tuples shaped like one MQ2008 @10 figure."""
    rng = np.random.default_rng(seed)
    problems = []
    for fold in range(N_FOLDS):
        lengths = np.clip(np.rint(rng.lognormal(np.log(17.0), 0.55, POOL_QUERIES)), 5, 121)
        for inst in range(N_INSTANCES):
            pair = inst >= 2 and inst < 2 + N_PAIRS
            top = np.minimum(lengths, 10)
            judged = top + (rng.integers(0, np.maximum(top, 1) + 1) if pair else 0)
            costs = judged / judged.mean()
            p = np.full(POOL_QUERIES, 1.0 / POOL_QUERIES)
            values = (rng.normal(0.0, 0.08, POOL_QUERIES) if pair else rng.beta(1.2, 2.5, POOL_QUERIES))
            # model-predicted E[(L - R)^2 | x]: informative but noisy, and a flat "uniform model" one
            sq_model = (values - p @ values) ** 2 * rng.lognormal(0.0, 1.0, POOL_QUERIES) + 1e-4
            sq_uniform = np.full(POOL_QUERIES, 0.01) * rng.lognormal(0.0, 0.2, POOL_QUERIES)
            for method in METHODS:
                if method == "passive":
                    q = p.copy()
                else:
                    sq = sq_uniform if method == "active_uniD" else sq_model
                    lam = np.ones_like(costs) if method == "active_uniC" else costs
                    score = p * np.sqrt(sq / lam)
                    q = (1 - DEFENSIVE) * score / score.sum() + DEFENSIVE * p
                problems.append((q, costs, values, p))
    return problems


def simulate_curve(sim, q, costs, values, p, n_reps, seed):
    """The harness's ``simulate`` core: draws, budget prefixes, SNIS, loss summaries."""
    plan = sim.draw_budgeted_batch(q, costs, float(BUDGETS[-1]), n_reps, seed)
    stops = sim.budget_stops(plan, BUDGETS)
    x = plan.queries
    est = sim.snis_prefix(values[x], p[x] / q[x], stops)
    target = float(p @ values)
    e = np.where(np.isfinite(est.estimate), est.estimate, 0.0)
    abs_err = np.abs(e - target)
    se = np.where(np.isfinite(est.standard_error), est.standard_error, np.inf)
    covered = abs_err <= 1.959964 * se
    sel = np.where(e == 0.0, 0.5, (np.sign(e) != np.sign(target)).astype(float))
    return abs_err.mean(1), covered.mean(1), sel.mean(1), stops.mean(1)


def worker(args) -> int:
    """One figure in this process; prints a JSON line with its timing and a checksum of its results."""
    from threadpoolctl import threadpool_limits

    try:  # this layout: the draw loop in design.draws, estimators in inference
        from types import SimpleNamespace

        from activerank.design import draws
        from activerank.inference.snis import snis_prefix

        sim = SimpleNamespace(draw_budgeted_batch=draws.draw_budgeted_batch, budget_stops=draws.budget_stops,
                              snis_prefix=snis_prefix, __file__=draws.__file__)
    except ImportError:  # an older checkout (--before): everything in experiments.simulation
        from activerank.experiments import simulation as sim  # type: ignore[no-redef]

    problems = make_problems(args.seed)
    with threadpool_limits(1):
        simulate_curve(sim, *problems[0], 20, 0)  # warm-up (imports, first-call costs)
        w, c = time.perf_counter(), time.process_time()
        check = 0.0
        draws = 0.0
        for i, prob in enumerate(problems):
            abs_err, cov, sel, n = simulate_curve(sim, *prob, args.reps, np.random.SeedSequence([args.seed, i]))
            check += float(abs_err.sum() + cov.sum() + sel.sum())
            draws += float(n[-1])
        wall, cpu = time.perf_counter() - w, time.process_time() - c
    print(json.dumps(dict(wall=wall, cpu=cpu, checksum=check, mean_draws=draws / len(problems),
                          curves=len(problems), module=os.path.relpath(sim.__file__, args.tree or ROOT))))
    return 0


def run_worker(tree: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--tree", tree, "--reps", str(args.reps),
           "--seed", str(args.seed)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="root of another checkout to time alternately (the 'before' code)")
    ap.add_argument("--before-label", default="before", help="name of --before in the outputs (e.g. a commit)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--reps", type=int, default=1000, help="repetitions per budget")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=RESULTS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    repeats = max(5, args.repeats)
    impls = [("after", ROOT)] + ([(args.before_label, os.path.abspath(args.before))] if args.before else [])
    load0 = os.getloadavg()
    runs = {name: [] for name, _ in impls}
    for r in range(repeats):
        for name, tree in (impls if r % 2 == 0 else impls[::-1]):
            res = run_worker(tree, args)
            runs[name].append(res)
            print(f"run {r + 1}/{repeats} {name:>10s}: {res['wall']:6.2f} s wall, {res['cpu']:6.2f} s cpu "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    load1 = os.getloadavg()
    rows = []
    for name, _ in impls:
        wall = [x["wall"] for x in runs[name]]
        cpu = [x["cpu"] for x in runs[name]]
        rows.append(dict(implementation=name, curves=runs[name][0]["curves"], reps=args.reps,
                         wall_median_s=statistics.median(wall), wall_min_s=min(wall), wall_max_s=max(wall),
                         cpu_median_s=statistics.median(cpu), spread_max_over_min=max(wall) / min(wall),
                         mean_draws_at_max_budget=runs[name][0]["mean_draws"],
                         checksum=runs[name][0]["checksum"]))
    if len(impls) == 2 and not np.isclose(rows[0]["checksum"], rows[1]["checksum"], rtol=0, atol=1e-9):
        print("WARNING: the two implementations' results differ (checksums)", file=sys.stderr)
    write(rows, args, load0, load1)
    return 0


def write(rows, args, load0, load1) -> None:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "harness.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]) + ["load_avg_start", "load_avg_end", "cpus"])
        w.writeheader()
        for r in rows:
            w.writerow(dict({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()},
                            load_avg_start=f"{load0[0]:.2f}", load_avg_end=f"{load1[0]:.2f}", cpus=os.cpu_count()))
    lines = [
        f"One harness figure: {rows[0]['curves']} curves (7 instances x 4 methods x 5 folds, MQ2008-shaped "
        f"synthetic problems) x 10 budgets x {args.reps} repetitions; median of {max(5, args.repeats)} figures, "
        f"each in a fresh process, implementations alternating; BLAS pinned to one thread. 1-min load average "
        f"{load0[0]:.1f} at start, {load1[0]:.1f} at end, on {os.cpu_count()} CPUs (a shared machine). "
        "Regenerate with `python benchmarks/harness.py --before DIR`.",
        "",
        "| implementation | figure wall (s, median) | min-max (s) | max/min | CPU (s, median) | mean draws per run |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['implementation']} | {r['wall_median_s']:.2f} | {r['wall_min_s']:.2f}-"
                     f"{r['wall_max_s']:.2f} | {r['spread_max_over_min']:.2f} | {r['cpu_median_s']:.2f} | "
                     f"{r['mean_draws_at_max_budget']:.0f} |")
    if len(rows) == 2:
        lines += ["", f"Speed-up: {rows[1]['wall_median_s'] / rows[0]['wall_median_s']:.1f}x (wall), "
                      f"{rows[1]['cpu_median_s'] / rows[0]['cpu_median_s']:.1f}x (CPU); identical results "
                      f"(checksum {rows[0]['checksum']:.6f})."]
    with open(os.path.join(args.out, "harness.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
