"""Benchmark the pool-level moment kernels at MSLR-WEB30K scale, against two yardsticks.

Every task runs on a synthetic pool shaped like MSLR-WEB30K (31,531 queries,
~120 documents per query with a long tail to 1,251, 5 grades, Dirichlet rows;
see ``benchmarks/_synthetic.py``) and is reported next to

(a) a straightforward per-query Python loop over the same data (the public
    per-query functions called once per query), timed on a random subsample of
    queries and extrapolated to the pool (unbiased: uniform sample, scaled by
    ``n_queries / n_sample``); the ratio is the speed-up of the pool kernel;
(b) a memory-bandwidth floor: the bytes any implementation must touch (read
    every needed probability row and ranking entry once, write the outputs)
    divided by this machine's measured memcpy bandwidth.  The ERR cross moment
    is quadratic per query, so its floor is compute, not memory: its row also
    prints the number of (i, l) cells.

Tasks
-----
``single``        DCG and ERR moments (full lists, then ``@10``) of one ranker,
                  via the public ``pool_moments`` (input validation included).
``pair_update``   pair moments of a ranker and its index update (10% of every
                  list removed, ``activerank.relevance.rankers.remove_fraction``).
``pair_indep``    pair moments of two independent rankings of the same candidates.
``qstar_draws``   ``optimal_distribution`` + ``expected_squared_error`` from the
                  ERR moments, then one budgeted run of ~1000 draws.

Timings are the median of ``--repeats`` (>= 5) runs, wall clock; CPU time of the
process is printed too because this machine is shared (the load average is
recorded).  Peak memory is the tracemalloc peak of one extra run above what was
allocated before it (numpy reports its buffers to tracemalloc), and the
process's maximum RSS is printed at the end.

Run:  python benchmarks/moments.py [--scale 0.1] [--repeats 5]
Writes benchmarks/results/moments.csv and benchmarks/results/moments.md.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import statistics
import sys
import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from activerank.metrics.moments import pair_moments, pool_moments, pool_pair_moments, query_moments  # noqa: E402
from activerank.relevance.rankers import remove_fraction  # noqa: E402
from activerank.design.sampling import draw_budgeted, expected_squared_error, optimal_distribution  # noqa: E402

from benchmarks._synthetic import make_pool, permute_within  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
F8 = 8  # bytes per float64 / int64

# Acceptance targets (issue 7), checked on the full-scale pool only.
TARGET_SINGLE_S = 1.0
TARGET_ERR_PAIR_S = 10.0
TARGET_PEAK_BYTES = 4 * 2**30
TARGET_SPEEDUP = 20.0


@dataclass
class Row:
    task: str
    detail: str
    wall: list = field(default_factory=list)
    cpu: list = field(default_factory=list)
    loop_s: float = float("nan")
    loop_sample: int = 0
    floor_bytes: float = float("nan")
    peak_bytes: float = float("nan")
    cells: float = float("nan")


def memcpy_bandwidth(n_bytes: int = 256 * 2**20, repeats: int = 5) -> float:
    """Best-of-``repeats`` copy bandwidth in bytes/s, counting the read and the write."""
    src = np.ones(n_bytes // F8)
    dst = np.empty_like(src)
    best = min(_timed(lambda: np.copyto(dst, src))[0] for _ in range(repeats))
    return 2 * src.nbytes / best


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def measure(row: Row, fn, repeats: int) -> None:
    """Median-of-``repeats`` timing plus one tracemalloc run for the peak."""
    for _ in range(repeats):
        w, c, _ = _timed(fn)
        row.wall.append(w)
        row.cpu.append(c)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    row.peak_bytes = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()


def per_query_loop(pool, queries, body) -> float:
    """Seconds for ``body(q, probs_q, offset_q)`` over ``queries`` (the naive baseline)."""
    t = time.perf_counter()
    for q in queries:
        lo, hi = pool.offsets[q], pool.offsets[q + 1]
        body(q, pool.probs[lo:hi], lo)
    return time.perf_counter() - t


def fmt_s(x: float) -> str:
    if not np.isfinite(x):
        return "-"
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the 31,531 MSLR-WEB30K queries")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per task (median reported)")
    ap.add_argument("--loop-queries", type=int, default=300, help="queries in the per-query-loop subsample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    repeats = max(5, args.repeats)

    t0 = time.perf_counter()
    pool = make_pool(args.scale, seed=args.seed)
    rng = np.random.default_rng(args.seed + 1)
    ra = pool.ranking
    rb_update = remove_fraction(ra, 0.1, rng=rng)
    rb_indep = permute_within(pool.offsets, rng)
    m, n_docs = pool.n_queries, pool.n_docs
    sample = np.sort(rng.choice(m, size=min(args.loop_queries, m), replace=False))
    extrapolate = m / sample.size
    bandwidth = memcpy_bandwidth()
    load = os.getloadavg()
    print(f"pool: {m:,} queries, {n_docs:,} documents (mean {n_docs / m:.1f}, max "
          f"{pool.lengths.max()}), probs {pool.probs.nbytes / 2**20:.0f} MiB; built in "
          f"{time.perf_counter() - t0:.1f} s")
    print(f"memcpy bandwidth {bandwidth / 1e9:.1f} GB/s; load average {load[0]:.1f} "
          f"(machine has {os.cpu_count()} CPUs)\n")

    rows: list[Row] = []
    row_bytes = pool.probs.shape[1] * F8  # one document's label distribution

    def top(r, k):
        return r.truncate(k) if k else r

    # ---------------------------------------------------------------- single ranker
    for k in (None, 10):
        sfx = "" if k is None else f"@{k}"
        row = Row("single", f"dcg{sfx} + err{sfx}")
        measure(row, lambda: (pool_moments(pool.probs, ra, metric=f"dcg{sfx}"),
                              pool_moments(pool.probs, ra, metric=f"err{sfx}")), repeats)

        def body(q, P, lo, sfx=sfx):
            r = ra[q] - lo
            query_moments(P, r, metric=f"dcg{sfx}")
            query_moments(P, r, metric=f"err{sfx}")

        row.loop_s = per_query_loop(pool, sample, body) * extrapolate
        row.loop_sample = sample.size
        n_e = top(ra, k).items.size
        row.floor_bytes = n_e * (row_bytes + F8) + 2 * 3 * m * F8
        rows.append(row)
        report(rows[-1], bandwidth)

    # ---------------------------------------------------------------- pairs
    for name, rb in (("pair_update", rb_update), ("pair_indep", rb_indep)):
        for metric in ("dcg", "err", "err@10"):
            k = 10 if metric.endswith("@10") else None
            row = Row(name, metric)
            measure(row, lambda: pool_pair_moments(pool.probs, ra, rb, metric=metric), repeats)

            def body(q, P, lo, rb=rb, metric=metric):
                pair_moments(P, ra[q] - lo, rb[q] - lo, metric=metric)

            row.loop_s = per_query_loop(pool, sample, body) * extrapolate
            row.loop_sample = sample.size
            ta, tb = top(ra, k), top(rb, k)
            # every row of a (b ranks a subset of the same candidates) + both rankings + 6 outputs
            row.floor_bytes = ta.items.size * row_bytes + (ta.items.size + tb.items.size) * F8 + 6 * m * F8
            if metric.startswith("err"):
                row.cells = float(np.dot(ta.lengths.astype(float), tb.lengths))
            rows.append(row)
            report(rows[-1], bandwidth)

    # ---------------------------------------------------------------- q* + budgeted draws
    mom = pool_moments(pool.probs, ra, metric="err")
    p = np.full(m, 1.0 / m)
    costs = pool.lengths / pool.lengths.mean()  # cost ~ number of documents to judge
    budget = 1000.0

    def qstar_and_draws():
        q = optimal_distribution(expected_squared_error(mom.mean, mom.variance, p), costs, p)
        return draw_budgeted(q, costs, budget, rng=0)

    row = Row("qstar_draws", f"q* + budgeted draws (budget {budget:g})")
    measure(row, qstar_and_draws, repeats)
    n_draws = qstar_and_draws().n_draws
    row.detail += f", {n_draws} draws"

    def naive_qstar_and_draws():
        target = sum(p[q] * mom.mean[q] for q in range(m))
        score = [p[q] * np.sqrt((mom.variance[q] + (mom.mean[q] - target) ** 2) / costs[q])
                 for q in range(m)]
        total = sum(score)
        q_dist = [0.9 * s / total + 0.1 * p[q] for q, s in enumerate(score)]
        cdf = np.cumsum(q_dist)
        gen, seen, spent, draws = np.random.default_rng(0), set(), 0.0, []
        while len(seen) < m:  # one draw at a time, as Algorithm 1 is written
            x = min(int(np.searchsorted(cdf, gen.random() * cdf[-1], side="right")), m - 1)
            c = 0.0 if x in seen else costs[x]
            if spent + c > budget:
                break
            spent += c
            seen.add(x)
            draws.append(x)
        return draws

    row.loop_s = _timed(naive_qstar_and_draws)[0]
    row.loop_sample = m
    row.floor_bytes = 5 * m * F8
    rows.append(row)
    report(rows[-1], bandwidth)

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"\nprocess max RSS {maxrss / 2**30:.2f} GiB (pool, rankings and baselines included)")
    write(rows, args, bandwidth, load, maxrss, pool)
    return 0


def report(row: Row, bandwidth: float) -> None:
    wall = statistics.median(row.wall)
    floor = row.floor_bytes / bandwidth
    extra = f"  {row.cells / 1e6:,.0f}M cells" if np.isfinite(row.cells) else ""
    print(f"{row.task:12s} {row.detail:36s} {wall:8.3f} s (cpu {statistics.median(row.cpu):.3f})  "
          f"loop {fmt_s(row.loop_s):>7s} s  x{row.loop_s / wall:7.1f}  floor {floor:.4f} s "
          f"(x{wall / floor:,.0f})  peak +{row.peak_bytes / 2**20:,.0f} MiB{extra}")


def write(rows, args, bandwidth, load, maxrss, pool) -> None:
    os.makedirs(args.out, exist_ok=True)
    fields = ["task", "detail", "n_queries", "n_docs", "wall_median_s", "wall_min_s", "cpu_median_s",
              "loop_extrapolated_s", "loop_sample_queries", "speedup_vs_loop", "floor_bytes",
              "floor_s", "x_floor", "peak_mib", "err_cells", "scale", "bandwidth_gbs", "load_avg_1m"]
    recs = []
    for r in rows:
        wall = statistics.median(r.wall)
        floor = r.floor_bytes / bandwidth
        recs.append(dict(
            task=r.task, detail=r.detail, n_queries=pool.n_queries, n_docs=pool.n_docs,
            wall_median_s=f"{wall:.4f}", wall_min_s=f"{min(r.wall):.4f}",
            cpu_median_s=f"{statistics.median(r.cpu):.4f}", loop_extrapolated_s=f"{r.loop_s:.3f}",
            loop_sample_queries=r.loop_sample, speedup_vs_loop=f"{r.loop_s / wall:.1f}",
            floor_bytes=int(r.floor_bytes), floor_s=f"{floor:.5f}", x_floor=f"{wall / floor:.0f}",
            peak_mib=f"{r.peak_bytes / 2**20:.0f}",
            err_cells="" if not np.isfinite(r.cells) else int(r.cells),
            scale=args.scale, bandwidth_gbs=f"{bandwidth / 1e9:.2f}", load_avg_1m=f"{load[0]:.2f}"))
    with open(os.path.join(args.out, "moments.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(recs)

    lines = [
        f"Synthetic MSLR-WEB30K-scale pool (scale {args.scale:g}): {pool.n_queries:,} queries, "
        f"{pool.n_docs:,} documents, 5 grades. Median of {len(rows[0].wall)} runs, wall clock "
        f"(CPU time in brackets); memcpy bandwidth {bandwidth / 1e9:.1f} GB/s; 1-min load average "
        f"at start {load[0]:.1f} on {os.cpu_count()} CPUs. Regenerate with "
        f"`python benchmarks/moments.py --scale {args.scale:g}`.",
        "",
        "| task | metric | time (s) | per-query loop (s, extrapolated) | speed-up | bandwidth floor (s) "
        "| x floor | peak extra memory (MiB) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for rec in recs:
        lines.append(
            f"| {rec['task']} | {rec['detail']} | {float(rec['wall_median_s']):.3f} "
            f"({float(rec['cpu_median_s']):.3f}) | {fmt_s(float(rec['loop_extrapolated_s']))} | "
            f"{rec['speedup_vs_loop']}x | {float(rec['floor_s']):.4f} | {rec['x_floor']} | "
            f"{rec['peak_mib']} |")
    lines += ["", f"Process max RSS: {maxrss / 2**30:.2f} GiB (pool, rankings and baselines included)."]
    if args.scale == 1.0:
        by = {(r["task"], r["detail"]): r for r in recs}
        single = float(by[("single", "dcg + err")]["wall_median_s"])
        err_pair = max(float(by[(t, "err")]["wall_median_s"]) for t in ("pair_update", "pair_indep"))
        speed = min(float(r["speedup_vs_loop"]) for r in recs)
        lines += ["", "Targets (issue 7):",
                  f"- single-ranker DCG+ERR <= {TARGET_SINGLE_S:g} s: {single:.2f} s "
                  f"({'met' if single <= TARGET_SINGLE_S else 'MISSED'})",
                  f"- ERR pair moments <= {TARGET_ERR_PAIR_S:g} s: {err_pair:.2f} s "
                  f"({'met' if err_pair <= TARGET_ERR_PAIR_S else 'MISSED'})",
                  f"- peak memory <= 4 GiB: {maxrss / 2**30:.2f} GiB "
                  f"({'met' if maxrss <= TARGET_PEAK_BYTES else 'MISSED'})",
                  f"- >= {TARGET_SPEEDUP:g}x the per-query loop: smallest speed-up {speed:.0f}x "
                  f"({'met' if speed >= TARGET_SPEEDUP else 'MISSED'})"]
    with open(os.path.join(args.out, "moments.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
