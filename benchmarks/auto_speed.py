"""Wall time of ``ar.estimate`` by method on an ~8k-query pool, as ratios to ``active_wor`` (issue 30).

``method="auto"`` (the default) predicts the variance of every candidate design
before it runs one: for ERR@10 it plans the ``prefix`` design (Monte-Carlo
walks of every query), for DCG@10 the ``doc_dyn`` design.  This script times,
through the public API on the synthetic MSLR-shaped pool of
``benchmarks/_synthetic.py`` (``--scale 0.25``: 7,883 queries, ~940k
documents; budget 1000), the tasks of ``benchmarks/end_to_end.py``'s
``ESTIMATE_TASKS``:

``estimate_wor``          ERR@10, ``method="active_wor"`` (the reference of the ERR rows)
``estimate_prefix``       ERR@10, ``method="prefix"``
``estimate_auto``         ERR@10, ``method="auto"`` (runs ``prefix`` on this pool)
``estimate_dcg_wor``      DCG@10, ``method="active_wor"`` (the reference of the DCG rows)
``estimate_dcg_doc_dyn``  DCG@10, ``method="doc_dyn"``
``estimate_dcg_auto``     DCG@10, ``method="auto"`` (runs ``doc_dyn``)
``estimate_wor_judged``   ERR@10, ``active_wor`` with ``judges=`` (a simulated judge; the reference of the
                          judged rows): a calibration round, the judge's calibration, a second round
``estimate_auto_judged``  the same with ``method="auto"``

Each implementation (``--impls``: this checkout's NumPy and numba kernels, via
``ACTIVERANK_KERNELS``; ``--before DIR`` adds another checkout, e.g. ``git archive
<commit> | tar -x -C DIR``, with both backends) runs in its own worker process
(``end_to_end.Worker``) holding the pool; after one untimed warm-up run per task
(numba compilation, first-touch pages) the ``--repeats`` timed runs alternate
between the workers, BLAS pinned to one thread.  Every row gives the median wall
time, its max/min spread, the method that ran, and the ratio of the median to
the reference task's median in the same worker.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/auto_speed.py [--before DIR] [--repeats 5]
Writes benchmarks/results/auto_speed.md (``--stem`` renames it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from end_to_end import RESULTS, ROOT, Worker  # noqa: E402

#: Task -> the task whose time is its reference (ratio 1).
REFERENCE = {"estimate_wor": "estimate_wor", "estimate_prefix": "estimate_wor", "estimate_auto": "estimate_wor",
             "estimate_dcg_wor": "estimate_dcg_wor", "estimate_dcg_doc_dyn": "estimate_dcg_wor",
             "estimate_dcg_auto": "estimate_dcg_wor", "estimate_wor_judged": "estimate_wor_judged",
             "estimate_auto_judged": "estimate_wor_judged"}


def time_tasks(workers, tasks, repeats: int) -> dict:
    """``{(worker name, task): (wall times, method)}``: one warm-up, then runs alternating over the workers."""
    out = {}
    for task in tasks:
        method = {}
        for w in workers:
            res = w.ask(cmd="time", task=task)
            if "error" in res:
                raise RuntimeError(f"{task} on {w.name}: {res['error']}")
            method[w.name] = res.get("method")
        times = {w.name: [] for w in workers}
        for r in range(repeats):
            for w in (workers if r % 2 == 0 else workers[::-1]):
                times[w.name].append(w.ask(cmd="time", task=task)["wall"])
        for w in workers:
            out[w.name, task] = (times[w.name], method[w.name])
            t = times[w.name]
            print(f"  {task:22s} {w.name:18s} {statistics.median(t):8.3f} s (max/min {max(t) / min(t):.2f}) "
                  f"ran {method[w.name]}", flush=True)
    return out


def table(results, workers, tasks, info, args, load) -> list:
    lines = [f"# `estimate` wall time by method, ratio to `active_wor` (issue 30)", "",
             f"Synthetic MSLR-WEB30K-shaped pool (`benchmarks/_synthetic.py`, scale {args.scale:g}: "
             f"{info['n_queries']:,} queries, {info['n_docs']:,} documents, 5 grades), budget 1000, one ranker. "
             f"Median of {args.repeats} runs after one warm-up, implementations alternating run by run, BLAS "
             f"pinned to one thread; ratio = median / the reference task's median in the same worker "
             f"(ERR@10 and judged rows: `active_wor`, DCG@10 rows: DCG@10 `active_wor`). 1-min load average "
             f"{min(load):.1f}-{max(load):.1f} on {os.cpu_count()} CPUs (a shared machine: compare rows side by "
             f"side). Regenerate with `python benchmarks/auto_speed.py{' --before DIR' if args.before else ''}`.",
             "", "| task | implementation | ran | wall (s) | max/min | ratio to active_wor |",
             "|---|---|---|---:|---:|---:|"]
    for task in tasks:
        for w in workers:
            t, method = results[w.name, task]
            ref = results.get((w.name, REFERENCE[task]))
            ratio = statistics.median(t) / statistics.median(ref[0]) if ref else float("nan")
            lines.append(f"| {task} | {w.name} | {method} | {statistics.median(t):.3f} | {max(t) / min(t):.2f} | "
                         f"{ratio:.1f} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--impls", default="numpy,numba", help="kernel backends of this checkout to time")
    ap.add_argument("--before", help="root of another checkout to time alongside (both backends)")
    ap.add_argument("--before-label", default="before")
    ap.add_argument("--tasks", default=",".join(REFERENCE))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stem", default="auto_speed")
    ap.add_argument("--note", default="", help="a paragraph appended to the results (e.g. what --before is)")
    args = ap.parse_args(argv)
    tasks = args.tasks.split(",")
    unknown = sorted(set(tasks) - set(REFERENCE))
    if unknown:
        raise SystemExit(f"unknown tasks {unknown}; choose from {list(REFERENCE)}")
    backends = args.impls.split(",")
    impls = [(f"after ({b})", ROOT, b) for b in backends]
    if args.before:
        impls += [(f"{args.before_label} ({b})", os.path.abspath(args.before), b) for b in backends]
    load = [os.getloadavg()[0]]
    workers = []
    try:
        for name, tree, backend in impls:  # one at a time: pool construction is memory-heavy
            workers.append(Worker(name, tree, {"ACTIVERANK_KERNELS": backend}, args.scale, 1.0, args.seed))
        info = workers[0].info
        print(f"scale {args.scale:g}: {info['n_queries']:,} queries, {info['n_docs']:,} documents; activerank from "
              + ", ".join(f"{w.name}: {w.info['activerank']}" for w in workers), flush=True)
        results = time_tasks(workers, tasks, args.repeats)
    finally:
        for w in workers:
            w.close()
    load.append(os.getloadavg()[0])
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{args.stem}.md"), "w") as fh:
        fh.write("\n".join(table(results, workers, tasks, info, args, load) + ([""] + [args.note] if args.note
                                                                               else [])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
