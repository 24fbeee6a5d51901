"""Benchmark the campaign store: import speed, opening (with its quick check) and the full check.

A synthetic campaign of ``--queries`` queries with ``--docs`` documents each (DCG@docs, so every
document of a drawn query is a task; ``--budget`` in mean query costs) is created once; its tasks are
answered by one annotator into a JSONL file.  Then, each ``--repeats`` times on a fresh copy of the
store:

``import``   ``Campaign.import_judgments`` of the whole file (default ``chunk_size=500``, and 100):
             judgment lines per second (every chunk acknowledged durable in the store file);
``open``     ``Campaign.open`` + ``close`` of the judged store (its quick check included);
``quick``    the quick check alone (:func:`activerank.campaign.integrity.quick_problems`, when present);
``check``    ``Campaign.check()``: the full check (integrity, checksums, grades, replays).

Median wall times are printed as JSON.  The machine is shared: compare only numbers of one run.

Run:  python benchmarks/campaign_store.py [--queries 30000] [--docs 20] [--budget 3000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

import activerank as ar
from activerank.campaign import Campaign


def build(root, n_queries, n_docs, budget, seed=0):
    rng = np.random.default_rng(seed)
    qids = np.repeat(np.arange(n_queries), n_docs)
    doc_ids = np.array([f"d{q}-{j}" for q in range(n_queries) for j in range(n_docs)], dtype=object)
    pool = ar.Pool.from_qids(qids, doc_ids=doc_ids)
    probs = rng.dirichlet(np.ones(3), size=qids.size)
    db = os.path.join(root, "fresh.db")
    t0 = time.perf_counter()
    Campaign.create(db, pool, rng.random(qids.size), probs, budget=budget, metric=f"dcg@{n_docs}",
                    seed=seed).close()
    t_create = time.perf_counter() - t0
    path = os.path.join(root, "judged.jsonl")
    with Campaign.open(db) as c, open(path, "w") as f:
        plan = c.plan()
        for x in plan.queries[plan.new]:
            q = c.query_ids[x]
            for i, d in enumerate(c.tasks(q)):
                f.write(json.dumps({"query_id": int(q), "doc_id": d, "grade": (int(x) + i) % 3,
                                    "annotator": "a"}) + "\n")
    with open(path) as f:
        n_lines = sum(1 for _ in f)
    return db, path, n_lines, t_create


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=30000)
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--budget", type=float, default=3000.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    out = {"queries": args.queries, "docs_per_query": args.docs, "budget": args.budget,
           "load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as root:
        db0, judged, n_lines, out["create_s"] = build(root, args.queries, args.docs, args.budget)
        out["judgment_lines"] = n_lines
        for chunk in (500, 100):
            times = []
            for r in range(args.repeats):
                db = os.path.join(root, f"c{chunk}-{r}.db")
                shutil.copy(db0, db)
                with Campaign.open(db) as c:
                    times.append(timed(lambda: c.import_judgments(judged, chunk_size=chunk)))
            out[f"import_chunk{chunk}_lines_per_s"] = round(n_lines / statistics.median(times))
        out["open_s"] = statistics.median(timed(lambda: Campaign.open(db).close()) for _ in range(args.repeats))
        with Campaign.open(db) as c:
            try:
                from activerank.campaign.integrity import quick_problems
            except ImportError:  # a store before checksums
                quick_problems = None
            if quick_problems is not None:
                out["quick_check_s"] = statistics.median(timed(lambda: quick_problems(c._db))
                                                         for _ in range(args.repeats))
            out["full_check_s"] = statistics.median(timed(c.check) for _ in range(args.repeats))
        out["store_mib"] = round(os.path.getsize(db) / 2**20, 1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
