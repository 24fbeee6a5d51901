"""The ``prefix`` planner and walk of this checkout against another one's, array by array (a check script).

Builds seeded synthetic pools (``benchmarks/_synthetic.py``, 631 queries) and for
one ranker, a difference, a difference of every document and three systems,
both judging orders, with and without documents held, records the planner's
arrays (``taus, W, C, floor, V``), the plans of four budgets, one hard-budget
walk and the predicted variance; then compares them with the same arrays of
``OTHER`` (e.g. ``git archive <commit> | tar -x -C DIR``).  Prints the largest
absolute difference of every array that differs and whether every planned
``tau`` and every walk's judged documents are equal.

Run:  python benchmarks/prefix_plan_equality.py OTHER [--backend numpy]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def dump(out: str) -> None:
    """Inside a worker whose ``activerank`` is the checkout to record: write the arrays to ``out``."""
    import importlib.util

    import activerank as ar
    from activerank.design.kinds.prefix import design_layout, prefix_planner, walk_sample
    from activerank.relevance.rankers import remove_fraction

    spec = importlib.util.spec_from_file_location("_ar_bench_synthetic", os.path.join(HERE, "_synthetic.py"))
    synthetic = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = synthetic
    spec.loader.exec_module(synthetic)
    pool = synthetic.make_pool(0.02, 3)
    P = pool.probs
    pl = ar.Pool(np.arange(pool.n_queries), pool.offsets)
    ra, rng = pool.ranking, np.random.default_rng(5)
    rb, rc = remove_fraction(ra, 0.3, rng=rng), remove_fraction(ra, 0.5, rng=rng)
    cases = {"one": ((ra,), "err@10", "changeable"), "pair": ((ra, rb), "err@10", "changeable"),
             "pair_all": ((ra, rb), "rr@5", "all"), "three": ((ra, rb, rc), "err@10", "changeable")}
    arrays = {}
    for name, (rankings, metric, judge) in cases.items():
        d = ar.make_design(pl, rankings, P, metric=metric, method="prefix", judge=judge)
        held = np.zeros(P.shape[0], dtype=bool)
        held[::7] = True
        for order in ("adaptive", "rank"):
            for hn, judged in (("none", None), ("some", held)):
                layout = design_layout(d, judged)
                planner = prefix_planner(layout, d.probs, d.p, d.prediction.variance, d.q > 0,
                                         np.random.default_rng(11), defensive=d.defensive, order=order)
                key = f"{name}/{order}/{hn}"
                for f in ("taus", "W", "C", "floor", "V"):
                    arrays[f"{key}/{f}"] = getattr(planner, f)
                for budget in (0.5, 3.0, 20.0, 1e9):
                    plan = planner.allocate(budget)
                    for f in ("pi", "tau", "floor", "expected_cost", "within_variance"):
                        arrays[f"{key}/plan{budget:g}/{f}"] = getattr(plan, f)
                plan = planner.allocate(10.0)
                x = np.flatnonzero(plan.pi > 0)
                U = np.random.default_rng(2).random(x.size)
                labels = np.full(P.shape[0], -1)
                labels[::2] = np.random.default_rng(3).integers(0, 5, labels[::2].size)
                walk = walk_sample(layout, d.probs, plan, x, U, order, labels)
                for f in ("D", "P", "judged", "docs", "waiting"):
                    arrays[f"{key}/walk/{f}"] = getattr(walk, f)
        arrays[f"{name}/predicted_variance"] = np.array(d.method_spec.kind.predicted_variance(d, 10.0))
    np.savez(out, **arrays)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("other", nargs="?", help="root of the other checkout")
    ap.add_argument("--backend", default="numpy", help="ACTIVERANK_KERNELS of both runs")
    ap.add_argument("--dump", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.dump:
        dump(args.dump)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, tree in enumerate((ROOT, os.path.abspath(args.other))):
            out = os.path.join(tmp, f"{i}.npz")
            env = dict(os.environ, PYTHONPATH=tree, ACTIVERANK_KERNELS=args.backend)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--dump", out], env=env, check=True)
            files.append(np.load(out))
        mine, other = files
        differ = 0
        for k in other.files:
            a, b = mine[k], other[k]
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
                differ += 1
                gap = np.nanmax(np.abs(a - b)) if a.shape == b.shape else float("nan")
                print(f"{k}: max |difference| {gap:.3g}")
        same = [k for k in other.files if k.endswith(("/tau", "/docs", "/judged"))]
        equal = all(np.array_equal(mine[k], other[k]) for k in same)
        print(f"{len(other.files)} arrays, {differ} differ; every planned tau and every walk's judged documents "
              f"{'equal' if equal else 'NOT equal'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
