"""Labeler calls and time of ``estimate`` at budget 1000, with a labeler that answers one query per call and
with one that answers batches (``label_batch``), on the synthetic MSLR-shaped pool (benchmarks/_synthetic.py).

    python benchmarks/labeler_calls.py [--scale 0.25] [--out benchmarks/results/labeler_calls.md]

The batch labeler gets every batch a design needs in one call: one for query samples, one per judging step
for ``prefix``.  Both labelers answer from the same known labels, so every estimate is the same.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import activerank as ar  # noqa: E402
from _synthetic import make_pool  # noqa: E402


class Counting:
    """Known labels, one query per call (no ``label_batch``)."""

    def __init__(self, known):
        self.known, self.calls = known, 0

    def __call__(self, qid, docs):
        self.calls += 1
        return self.known(qid, docs)


class CountingBatch(Counting):
    def label_batch(self, requests):
        self.calls += 1
        return [self.known(q, d) for q, d in requests]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--budget", type=float, default=1000.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    sp = make_pool(args.scale, seed=0)
    pool = ar.Pool(np.arange(sp.offsets.size - 1), sp.offsets)
    rng = np.random.default_rng(1)
    labels = (rng.random(sp.probs.shape[0])[:, None] > np.cumsum(sp.probs, axis=1)).sum(1).clip(0, 4)
    known = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    scores = sp.probs @ np.arange(sp.probs.shape[1]) + 0.1 * rng.random(sp.probs.shape[0])
    rows = []
    for method, metric in (("active_wor", "err@10"), ("active", "err@10"), ("doc_dyn", "dcg@10"),
                           ("prefix", "err@10")):
        out = {}
        for name, lab in (("per query", Counting(known)), ("batch", CountingBatch(known))):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = ar.estimate(pool, scores, sp.probs, lab, budget=args.budget, metric=metric, method=method,
                                  rng=0)
            out[name] = (lab.calls, time.perf_counter() - t0, res.estimate)
        assert out["per query"][2] == out["batch"][2]
        rows.append(f"| {method} | {metric} | {out['per query'][0]} | {out['per query'][1]:.2f} | "
                    f"{out['batch'][0]} | {out['batch'][1]:.2f} |")
    text = "\n".join([
        f"# Labeler calls of `estimate` at budget {args.budget:g}",
        "",
        f"Synthetic MSLR-shaped pool, {pool.n_queries} queries, {pool.n_docs} documents "
        f"(`python benchmarks/labeler_calls.py --scale {args.scale:g}`); one run each, wall seconds.",
        "",
        "| method | metric | calls, per-query labeler | seconds | calls, batch labeler | seconds |",
        "|---|---|---|---|---|---|",
        *rows, ""])
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
