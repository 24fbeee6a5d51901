"""End-to-end timings from probabilities at MSLR-WEB30K scale: estimate, compare, k systems.

Every task goes through the public API only (``ar.pool_moments``,
``ar.pool_pair_moments``, ``ar.estimate``, ``ar.compare``, ``ar.compare_many``),
so the script times whatever engine sits behind it:

``moments_single``   DCG and ERR moments of one ranker, full lists
``pair_update``      ERR pair moments, ranker vs its index update (10% of each list removed)
``pair_indep``       ERR pair moments, two independent rankings of the same candidates
``estimate``         ``ar.estimate``, full-list ERR, budget 1000 (costs, q*, draws, labels, SNIS)
``estimate_wor``     ``ar.estimate`` with ``method="active_wor"``, ERR@10 (the API's default metric), budget 1000
``estimate_auto``    the same with ``method="auto"`` (the predicted variance of every candidate, then the
                     chosen design: on this pool ``prefix``, whose planning simulates every query's walk)
``compare_update``   ``ar.compare`` of the ranker and its index update, full-list ERR, budget 1000
``compare_indep``    ``ar.compare`` of two independent rankings, full-list ERR, budget 1000
``compare_many``     ``ar.compare_many``: 3 candidates (5% and 20% index updates, an independent
                     ranking) vs the ranker, full-list ERR, budget 1000
``rank_scores``      per-document scores to per-query rankings, as ``estimate``/``compare`` turn the
                     scores users pass (``_validation.scores_iv``: checks, then the per-query sort)

The ranker and the independent ranking are passed as per-document scores, as
users pass them (every call ranks them, so the sort is part of the time); the
index updates, which list fewer documents than the pool holds, as ready-made
``Rankings``; the moment tasks take ``Rankings``.

on the synthetic MSLR-shaped pool of ``benchmarks/_synthetic.py`` at several
scales (``4`` = 4 x 31,531 queries; ``16:0.25`` = 16 x the queries with lists a
quarter as long, for machines where 16 x the full pool does not fit).  For
every task it prints

* the median wall time of ``--repeats`` (>= 5) runs, its max/min spread, the median CPU time and its spread;
* the time per query;
* the ratio to a per-query Python loop (the public per-query functions
  ``query_moments``/``pair_moments`` called once per query -- for estimate and
  compare the moments they need, a lower bound of a per-query implementation --
  timed on a random subsample and extrapolated);
* the ratio to the memory floor: one read of the probability matrix (``np.sum``), best of 7, against
  the task's best run (both best-of-N, so a shared machine's preemption inflates neither);
* the peak RSS of a process that runs the task once (pool included).

Implementations run in separate worker processes, one per implementation,
each holding the pool; the timed runs alternate between them task by task so
that all see the same machine load.  ``--impls`` chooses the kernel backends of
this checkout (``numpy``, ``numba`` via ``ACTIVERANK_KERNELS``); ``--before DIR``
adds another checkout (e.g. ``git archive <commit> | tar -x -C DIR``).  BLAS is
limited to one thread around every timed call.

Run:  python benchmarks/end_to_end.py [--scales 1,4,16:0.25] [--interleave] [--before DIR] [--repeats 5]
Writes benchmarks/results/end_to_end.csv and benchmarks/results/end_to_end.md (``--stem`` renames them).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")

TASKS = ("moments_single", "pair_update", "pair_indep", "estimate", "compare_update", "compare_indep",
         "compare_many", "rank_scores", "estimate_wor", "estimate_auto")
#: ``ar.estimate`` tasks by (metric, method, with a judge): the ones of TASKS and those of
#: ``benchmarks/auto_speed.py`` (not in TASKS: run them with ``--tasks``)
ESTIMATE_TASKS = {"estimate_wor": ("err@10", "active_wor", False), "estimate_auto": ("err@10", "auto", False),
                  "estimate_prefix": ("err@10", "prefix", False), "estimate_dcg_wor": ("dcg@10", "active_wor", False),
                  "estimate_dcg_auto": ("dcg@10", "auto", False), "estimate_dcg_doc_dyn": ("dcg@10", "doc_dyn", False),
                  "estimate_wor_judged": ("err@10", "active_wor", True), "estimate_auto_judged": ("err@10", "auto", True)}
#: The metric of every task (default: full-list ERR).
TASK_METRIC = {task: metric for task, (metric, _, _) in ESTIMATE_TASKS.items()}
BUDGET = 1000.0


# --------------------------------------------------------------------------- worker side


class Workload:
    """The pool, rankings, labeler and task bodies of one scale, inside a worker."""

    def __init__(self, scale: float, length_scale: float, seed: int):
        import activerank as ar
        from activerank.relevance.rankers import remove_fraction

        synthetic = _load_synthetic()
        make_pool, permute_within = synthetic.make_pool, synthetic.permute_within

        self.ar = ar
        pool = make_pool(scale, seed, length_scale=length_scale)
        rng = np.random.default_rng(seed + 1)
        self.probs = pool.probs
        self.offsets = pool.offsets
        self.ra = pool.ranking
        self.rb = remove_fraction(self.ra, 0.1, rng=rng)
        self.rc = permute_within(pool.offsets, rng)
        # scores that rank exactly as ra / rc (strictly decreasing along each ranking: no ties)
        self.sa, self.sc = _scores_of(self.ra), _scores_of(self.rc)
        self.candidates = [remove_fraction(self.ra, 0.05, rng=rng), remove_fraction(self.ra, 0.2, rng=rng),
                           self.sc]
        self.pool = ar.Pool(np.arange(pool.n_queries), pool.offsets)
        # deterministic grades from the row index: no label array to hold at 16x
        self.labeler = ar.CallableLabeler(lambda qid, doc_ids: _row_grades(doc_ids, self.probs.shape[1]))
        self.n_queries, self.n_docs = pool.n_queries, pool.n_docs
        self._judge = None

    def judge(self):
        """A simulated judge on every row: the labeler's grade, one grade off on every third row (built once)."""
        if self._judge is None:
            from activerank.judges import JudgeOutputs

            rows = np.arange(self.n_docs)
            grades = _row_grades(rows, self.probs.shape[1]).astype(np.float64)
            off = np.where(rows % 3 == 0, np.where(grades > 0, -1.0, 1.0), 0.0)
            self._judge = JudgeOutputs("simulated", "grades", grades + off, self.probs.shape[1])
        return self._judge

    def run(self, task: str):
        ar, P, pool, lab = self.ar, self.probs, self.pool, self.labeler
        common = dict(budget=BUDGET, metric="err", rng=0)
        if task == "moments_single":
            return ar.pool_moments(P, self.ra, metric="dcg"), ar.pool_moments(P, self.ra, metric="err")
        if task == "pair_update":
            return ar.pool_pair_moments(P, self.ra, self.rb, metric="err")
        if task == "pair_indep":
            return ar.pool_pair_moments(P, self.ra, self.rc, metric="err")
        if task == "estimate":
            return ar.estimate(pool, self.sa, P, lab, **common)
        if task in ESTIMATE_TASKS:
            metric, method, judged = ESTIMATE_TASKS[task]
            extra = dict(judges=self.judge()) if judged else {}
            return ar.estimate(pool, self.sa, P, lab, **dict(common, metric=metric), method=method, **extra)
        if task == "compare_update":
            return ar.compare(pool, self.sa, self.rb, P, lab, **common)
        if task == "compare_indep":
            return ar.compare(pool, self.sa, self.sc, P, lab, **common)
        if task == "compare_many":
            return ar.compare_many(pool, self.candidates, self.sa, P, lab, **common)
        if task == "rank_scores":
            from activerank._validation import scores_iv

            return scores_iv(self.sa, pool, "scores")
        raise ValueError(f"unknown task {task!r}")

    def loop(self, task: str, n_sample: int, seed: int) -> float:
        """Per-query Python loop over the moments ``task`` needs, extrapolated to the pool."""
        ar = self.ar
        pairs = {"moments_single": [], "estimate": [], "pair_update": [self.rb], "compare_update": [self.rb],
                 "pair_indep": [self.rc], "compare_indep": [self.rc], "rank_scores": [],
                 "compare_many": self.candidates[:2] + [self.rc], **{t: [] for t in ESTIMATE_TASKS}}[task]
        metric = TASK_METRIC.get(task, "err")
        sample = np.sort(np.random.default_rng(seed).choice(self.n_queries, min(n_sample, self.n_queries),
                                                             replace=False))
        t = time.perf_counter()
        if task == "rank_scores":   # one stable sort per query
            for q in sample:
                np.argsort(-self.sa[self.offsets[q]:self.offsets[q + 1]], kind="stable")
            return (time.perf_counter() - t) * self.n_queries / sample.size
        for q in sample:
            lo, hi = self.offsets[q], self.offsets[q + 1]
            Pq, a = self.probs[lo:hi], self.ra[q] - lo
            if not pairs:
                if task == "moments_single":
                    ar.query_moments(Pq, a, metric="dcg")
                ar.query_moments(Pq, a, metric=metric)
            for rb in pairs:
                ar.pair_moments(Pq, a, rb[q] - lo, metric="err")
        return (time.perf_counter() - t) * self.n_queries / sample.size


def _row_grades(rows, n_grades: int) -> np.ndarray:
    """The labeler's grade of every document row: a hash of the row (no label array to hold at 16x)."""
    return ((np.asarray(rows, dtype=np.uint64) * np.uint64(2654435761) >> np.uint64(7))
            % np.uint64(n_grades)).astype(np.int64)


def _scores_of(ranking) -> np.ndarray:
    """Per-document scores that rank every query exactly as ``ranking`` (1 / (1 + position))."""
    scores = np.empty(ranking.items.size)
    scores[ranking.items] = 1.0 / (1.0 + ranking.positions())
    return scores


def _load_synthetic():
    """This checkout's ``benchmarks/_synthetic.py`` by path (another checkout may be on sys.path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_ar_bench_synthetic", os.path.join(HERE, "_synthetic.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def worker(args) -> int:
    """Serve JSON requests on stdin; answers go to the real stdout, everything else to stderr."""
    from threadpoolctl import threadpool_limits

    out = sys.stdout
    sys.stdout = sys.stderr
    warnings.simplefilter("ignore")  # low-ESS warnings of tiny budgets are not what is timed here
    wl = Workload(args.scale, args.length_scale, args.seed)
    import activerank

    def reply(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    reply(dict(ready=True, n_queries=wl.n_queries, n_docs=wl.n_docs,
               rss_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
               activerank=os.path.relpath(activerank.__file__, args.tree)))
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req["cmd"]
        try:
            with threadpool_limits(1):
                if cmd == "time":
                    res = {}
                    wall, cpu = _timed(lambda: res.update(out=wl.run(req["task"])))
                    method = getattr(res["out"], "method", None)  # what an estimate ran (auto's choice)
                    reply(dict(wall=wall, cpu=cpu, method=method if isinstance(method, str) else None))
                elif cmd == "mem":
                    reply(dict(maxrss_gib=_peak_rss_of(lambda: wl.run(req["task"]))))
                elif cmd == "loop":
                    reply(dict(seconds=wl.loop(req["task"], req["n"], req["seed"])))
                elif cmd == "floor":
                    reply(dict(seconds=min(_timed(lambda: np.sum(wl.probs))[0] for _ in range(7))))
                elif cmd == "quit":
                    reply(dict(bye=True))
                    return 0
                else:
                    reply(dict(error=f"unknown command {cmd!r}"))
        except Exception as exc:  # report, keep serving the other tasks
            reply(dict(error=f"{type(exc).__name__}: {exc}"))
    return 0


def _peak_rss_of(fn) -> float:
    """Peak resident memory (GiB) of a forked child that runs ``fn`` once (pool pages included)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            fn()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        except BaseException:
            peak = float("nan")
        os.write(w, json.dumps(peak).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return float(json.loads(data or b"NaN"))


# --------------------------------------------------------------------------- driver side


class Worker:
    def __init__(self, name, tree, env, scale, length_scale, seed):
        self.name = name
        full_env = dict(os.environ, PYTHONPATH=tree, **env)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--tree", tree, "--scale", str(scale),
               "--length-scale", str(length_scale), "--seed", str(seed)]
        self.proc = subprocess.Popen(cmd, env=full_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} died (exit code {self.proc.wait()})")
        return json.loads(line)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        try:
            self.ask(cmd="quit")
        finally:
            self.proc.wait()


def parse_scales(text):
    out = []
    for part in text.split(","):
        s, _, ls = part.partition(":")
        out.append((float(s), float(ls) if ls else 1.0))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="1,4,16:0.25")
    ap.add_argument("--impls", default="numpy,numba", help="kernel backends of this checkout to time")
    ap.add_argument("--before", help="root of another checkout to time alongside")
    ap.add_argument("--before-label", default="before")
    ap.add_argument("--before-scales", default="1", help="scales at which --before runs too")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--interleave", action="store_true",
                    help="hold every scale's workers at once and alternate runs across scales (linearity)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--loop-queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=RESULTS)
    ap.add_argument("--stem", default="end_to_end", help="name of the result files (STEM.csv, STEM.md)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--scale", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--length-scale", type=float, default=1.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)

    repeats = max(5, args.repeats)
    tasks = args.tasks.split(",")
    before_scales = {s for s, _ in parse_scales(args.before_scales)} if args.before else set()
    rows = []
    loads = [os.getloadavg()[0]]
    scales = parse_scales(args.scales)
    # --interleave: every scale's workers live at once and the timed runs alternate across scales too,
    # so per-query times of 1x/4x/16x see the same machine load (linearity under a drifting load)
    groups = [scales] if args.interleave else [[sc] for sc in scales]
    for group in groups:
        workers = []
        try:
            for scale, length_scale in group:
                impls = [(f"after ({b})", ROOT, {"ACTIVERANK_KERNELS": b}) for b in args.impls.split(",")]
                if scale in before_scales:
                    impls.append((args.before_label, os.path.abspath(args.before), {}))
                for name, tree, env in impls:  # one at a time: pool construction is memory-heavy
                    w = Worker(name, tree, env, scale, length_scale, args.seed)
                    w.scale, w.length_scale = scale, length_scale
                    workers.append(w)
                info = workers[-1].info
                print(f"\nscale {scale:g} (lists x{length_scale:g}): {info['n_queries']:,} queries, "
                      f"{info['n_docs']:,} documents; load {os.getloadavg()[0]:.1f}", flush=True)
            for w in workers:
                w.floor = w.ask(cmd="floor")["seconds"]
            for task in tasks:
                _time_task(task, workers, repeats, args, rows)
                write(rows, args, loads + [os.getloadavg()[0]])
        finally:
            for w in workers:
                w.close()
        loads.append(os.getloadavg()[0])
    write(rows, args, loads)
    return 0


def _time_task(task, workers, repeats, args, rows) -> None:
    """Warm up, then ``repeats`` timed runs alternating over ``workers``; one result row per worker."""
    times = {id(w): [] for w in workers}
    errors = {}
    for w in workers:  # untimed warm-up: numba's compiled-code cache, first-touch pages
        res = w.ask(cmd="time", task=task)
        if "error" in res:
            errors[id(w)] = res["error"]
            print(f"  {task} {w.name}: {res['error']}", flush=True)
    for r in range(repeats):
        for w in (workers if r % 2 == 0 else workers[::-1]):
            if id(w) in errors:
                continue
            res = w.ask(cmd="time", task=task)
            if "error" in res:
                errors[id(w)] = res["error"]
                print(f"  {task} {w.name}: {res['error']}", flush=True)
            else:
                times[id(w)].append(res)
    loops = {}
    for w in workers:
        if id(w) in errors:
            continue
        key = (w.scale, w.length_scale)
        if key not in loops:  # the per-query loop once per scale, by the first worker of that scale
            loops[key] = w.ask(cmd="loop", task=task, n=args.loop_queries, seed=args.seed)["seconds"]
        info, loop = w.info, loops[key]
        mem = w.ask(cmd="mem", task=task)["maxrss_gib"]
        wall = [t["wall"] for t in times[id(w)]]
        cpu = [t["cpu"] for t in times[id(w)]]
        med = statistics.median(wall)
        row = dict(scale=w.scale, length_scale=w.length_scale, n_queries=info["n_queries"],
                   n_docs=info["n_docs"], implementation=w.name, task=task, runs=len(wall),
                   wall_median_s=med, wall_min_s=min(wall), wall_max_s=max(wall),
                   spread=max(wall) / min(wall), cpu_median_s=statistics.median(cpu),
                   cpu_spread=max(cpu) / max(min(cpu), 1e-9),
                   us_per_query=1e6 * med / info["n_queries"], loop_s=loop, x_loop=loop / med,
                   floor_s=w.floor, x_floor=min(wall) / w.floor, peak_rss_gib=mem,
                   load_avg=os.getloadavg()[0])
        rows.append(row)
        print(f"  {task:15s} {w.scale:g}x {w.name:22s} {med:8.3f} s (cpu {row['cpu_median_s']:.3f}, spread "
              f"{row['spread']:.2f})  {row['us_per_query']:7.2f} us/query  loop x{row['x_loop']:6.1f}"
              f"  floor x{row['x_floor']:6.0f}  peak {mem:.2f} GiB", flush=True)


def write(rows, args, loads) -> None:
    if not rows:
        return
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.stem}.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.5g}" if isinstance(v, float) else v) for k, v in r.items()})
    lines = [
        f"End to end from probabilities on the synthetic MSLR-WEB30K-shaped pool (5 grades), full-list "
        f"ERR (DCG + ERR for moments_single; ERR@10 for estimate_wor and estimate_auto), budget {BUDGET:g}. "
        f"Median of {max(5, args.repeats)} runs, "
        f"implementations alternating run by run, BLAS pinned to one thread; loop = per-query Python loop "
        f"(extrapolated from {args.loop_queries} queries); floor = one np.sum over the probabilities, best "
        f"of 7 (x floor = the task's best run / floor); peak = "
        f"max RSS of a process running the task once, pool included. 1-min load average "
        f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs (a shared machine: wall times are "
        f"inflated, compare rows side by side). Regenerate with `python benchmarks/end_to_end.py`.",
        "",
        "| scale | task | implementation | wall (s) | max/min | CPU (s) | CPU max/min | us/query | x loop | x floor "
        "| peak RSS (GiB) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {_scale_label(r)} | {r['task']} | {r['implementation']} | {r['wall_median_s']:.3f} | "
                     f"{r['spread']:.2f} | {r['cpu_median_s']:.3f} | {r['cpu_spread']:.2f} | {r['us_per_query']:.2f} | "
                     f"{r['x_loop']:.1f} | {r['x_floor']:.0f} | {r['peak_rss_gib']:.2f} |")
    lines += _linearity_lines(rows)
    with open(os.path.join(args.out, f"{args.stem}.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def _scale_label(r) -> str:
    return f"{r['scale']:g}x" + (f" (lists x{r['length_scale']:g})" if r["length_scale"] != 1 else "")


def _linearity_lines(rows) -> list:
    """Time per query at every scale of each (task, implementation), and max/min of those."""
    per = {}
    for r in rows:
        per.setdefault((r["task"], r["implementation"]), []).append(r)
    out = []
    for (task, impl), rs in per.items():
        if len(rs) < 2:
            continue
        if not out:
            out = ["", "Time per query across scales (linear in the pool: max/min near 1; CPU time per query in "
                   "brackets):", "", "| task | implementation | us/query by scale | max/min (wall) | max/min (CPU) |",
                   "|---|---|---|---:|---:|"]
        wall = [r["us_per_query"] for r in rs]
        cpu = [1e6 * r["cpu_median_s"] / r["n_queries"] for r in rs]
        cells = ", ".join(f"{_scale_label(r)}: {w:.2f} [{c:.2f}]" for r, w, c in zip(rs, wall, cpu))
        out.append(f"| {task} | {impl} | {cells} | {max(wall) / min(wall):.2f} | {max(cpu) / min(cpu):.2f} |")
    return out


if __name__ == "__main__":
    sys.exit(main())
