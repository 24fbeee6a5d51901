"""Scale of the distributed path (activerank.distributed): synthetic Parquet pools, a local Dask cluster.

For each pool size the script writes a synthetic Parquet pool (never committed:
under ``--dir``, default a temporary directory removed at the end), then runs
``activerank.distributed.compare`` (two rankers, ``--metric``, ``--budget``) in
a fresh driver process against a ``LocalCluster`` of ``--workers`` worker
processes (one thread each) and reports

* wall time of the call and documents per second,
* the driver's peak RSS (its VmHWM: the driver process does nothing but this
  call) and every worker's peak RSS,

and, at ``--in-memory`` sizes, the same comparison by ``activerank.compare`` on
the whole pool loaded into the driver (time of the call alone; reading the
Parquet files is timed separately), with the difference of the two results
(equal to rounding: the same draws, the same estimate).

The pool: ``--docs-per-file`` documents per Parquet file (whole queries), 50-150
documents per query (mean 100), 5 grades.  Every per-document quantity is a
pure function of the document id (a SplitMix64 hash), so the benchmark's
labeler recomputes a drawn document's grade from its id without holding the
pool: probabilities ``p_g ∝ w_g * Exp(1)`` with ``w = (8, 4, 2, 1, 0.5)``, the
true grade drawn from them, ``score_a`` = expected grade + noise, ``score_b`` =
noise.

Run:  python benchmarks/dask_scale.py --sizes 12.5e6,50e6 --in-memory 12.5e6
      python benchmarks/dask_scale.py --sizes 1e6 --in-memory 1e6 --metric dcg@10 \
          --methods active_wor,doc_dyn,auto --out benchmarks/results/dask_scale_documents.md
Writes benchmarks/results/dask_scale.md (or ``--out``; and prints it).  ``--methods`` adds the
document-level design and ``method="auto"`` (one run per size and method; doc_dyn's phases: the
per-partition units and kappa, the candidates' draw).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

N_GRADES = 5
WEIGHTS = np.array([8.0, 4.0, 2.0, 1.0, 0.5])
PROBS = [f"p{g}" for g in range(N_GRADES)]
_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


# --------------------------------------------------------------------------- the synthetic pool


def _uniform(doc_ids: np.ndarray, stream: int) -> np.ndarray:
    """SplitMix64 of (doc id, stream) -> uniform in (0, 1): the same number for a document everywhere."""
    with np.errstate(over="ignore"):
        z = doc_ids.astype(np.uint64) * np.uint64(16) + np.uint64(stream) + _GOLD
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def doc_probs(doc_ids: np.ndarray) -> np.ndarray:
    e = np.stack([-np.log(_uniform(doc_ids, g)) * WEIGHTS[g] for g in range(N_GRADES)], axis=1)
    return e / e.sum(axis=1, keepdims=True)


def doc_grades(doc_ids: np.ndarray) -> np.ndarray:
    cdf = np.cumsum(doc_probs(doc_ids), axis=1)
    return (_uniform(doc_ids, 8)[:, None] > cdf[:, :-1]).sum(axis=1)


def labeler(query_id, doc_ids):
    return doc_grades(np.asarray(doc_ids, dtype=np.int64)).tolist()


def write_pool(path: str, n_docs: int, docs_per_file: int, seed: int = 0) -> tuple[int, int]:
    """Parquet files of whole queries under ``path``; returns (n_docs, n_queries) written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    doc0 = q0 = part = 0
    while doc0 < n_docs:
        rng = np.random.default_rng([seed, part])
        lengths = rng.integers(50, 151, docs_per_file // 50)
        lengths = lengths[np.cumsum(lengths) <= min(docs_per_file, n_docs - doc0)]
        if lengths.size == 0:
            lengths = np.array([n_docs - doc0])
        n = int(lengths.sum())
        ids = np.arange(doc0, doc0 + n, dtype=np.int64)
        probs = doc_probs(ids)
        cols = {"query_id": np.repeat(np.arange(q0, q0 + lengths.size, dtype=np.int64), lengths), "doc_id": ids,
                "score_a": probs @ np.arange(N_GRADES) + 0.8 * _uniform(ids, 9), "score_b": _uniform(ids, 10)}
        cols.update({f"p{g}": probs[:, g] for g in range(N_GRADES)})
        pq.write_table(pa.table(cols), os.path.join(path, f"part.{part:05d}.parquet"), row_group_size=n)
        doc0, q0, part = doc0 + n, q0 + lengths.size, part + 1
    return doc0, q0


# --------------------------------------------------------------------------- one measured run (own process)


def _peak_rss_mib() -> float:
    """Peak RSS of this process's own memory (VmHWM).  Not ``ru_maxrss``: Linux carries that across
    ``fork`` + ``exec``, so a driver started by a big parent would report the parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_once(args) -> dict:
    import distributed

    import activerank as ar
    import activerank.distributed as ard

    out: dict = {"table_s": 0.0, "fetch_s": 0.0, "units_s": 0.0, "draw_s": 0.0}
    _time_phase(importlib.import_module("activerank.distributed.query_table"), "query_table", out, "table_s")
    _time_phase(importlib.import_module("activerank.distributed.frame"), "fetch_queries", out, "fetch_s")
    documents = importlib.import_module("activerank.distributed.documents")
    _time_phase(documents, "prepare_units", out, "units_s")
    _time_phase(documents, "draw_candidates", out, "draw_s")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        pool = ard.DaskPool.from_parquet(args.path)
        t0 = time.perf_counter()
        res = ard.compare(pool, "score_a", "score_b", PROBS, labeler, budget=args.budget, metric=args.metric,
                          rng=args.seed, method=args.method)
        out["dask_s"] = time.perf_counter() - t0
        out["worker_rss_mib"] = sorted(v / 1024.0 for v in client.run(_worker_peak_kib).values())
    out["driver_rss_mib"] = _peak_rss_mib()
    out.update(difference=res.difference, standard_error=res.standard_error, n_queries=res.n_queries,
               n_draws=res.n_draws, partitions=pool.frame.npartitions, method=res.method,
               n_units=res.trace.attrs.get("n_units"))
    if args.in_memory:
        import pandas as pd

        t0 = time.perf_counter()
        df = pd.read_parquet(args.path)
        mem = ar.Pool.from_qids(df["query_id"].to_numpy(), doc_ids=df["doc_id"].to_numpy())
        sa, sb = df["score_a"].to_numpy(), df["score_b"].to_numpy()
        probs = df[PROBS].to_numpy()
        del df
        out["load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        # a Dask comparison judges every document of a drawn query: judge="all" in memory
        ref = ar.compare(mem, sa, sb, probs, labeler, budget=args.budget, metric=args.metric, rng=args.seed,
                         method=args.method, judge="all")
        out["memory_s"] = time.perf_counter() - t0
        out["memory_rss_mib"] = _peak_rss_mib()
        out["max_abs_diff"] = max(abs(ref.difference - res.difference), abs(ref.standard_error - res.standard_error),
                                  abs(ref.estimate_a - res.estimate_a), abs(ref.estimate_b - res.estimate_b))
        key = "doc_row" if "doc_row" in ref.trace.columns else "query"
        out["same_draws"] = bool(ref.method == res.method
                                 and np.array_equal(ref.trace[key].to_numpy(), res.trace[key].to_numpy()))
    return out


def _time_phase(module, name: str, out: dict, key: str) -> None:
    """Time the two passes over the pool (the per-query table, the fetch) inside the public call."""
    inner = getattr(module, name)

    def timed(*a, **kw):
        t0 = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            out[key] += time.perf_counter() - t0

    setattr(module, name, timed)


def _worker_peak_kib() -> float:
    return _peak_rss_mib() * 1024.0


# --------------------------------------------------------------------------- orchestration


def _mib(x: float) -> str:
    return f"{x:,.0f}"


def report(rows: list, args, load: str) -> str:
    lines = [
        "# Distributed path at scale (`benchmarks/dask_scale.py`)",
        "",
        f"`activerank.distributed.compare` ({args.metric}, budget {args.budget:g} mean query costs, methods "
        f"{args.methods}, two rankers) on synthetic Parquet pools (5 grades, 50-150 documents per query, "
        f"{args.docs_per_file:,} documents per file), a `LocalCluster` of {args.workers} worker processes x 1 thread; one fresh driver "
        "process per size.  Peak RSS is each process's high-water mark (VmHWM).  The in-memory row is `activerank.compare` on "
        "the same pool loaded into one process (call time alone; loading the Parquet files is listed apart).",
        "",
        f"Machine: {os.cpu_count()} cores shared with other jobs (load average at the start: {load}), "
        f"Python {platform.python_version()}, moment kernels: {args.kernels} (`ACTIVERANK_KERNELS`).",
        "",
        "| documents | queries | partitions | method (ran) | dask wall (s) | of which table / units / draw / fetch (s) "
        "| dask docs/s | driver peak RSS (MiB) | worker peak RSS (MiB) | in-memory call (s) | in-memory docs/s "
        "| dask / in-memory throughput | in-memory peak RSS (MiB) | load (s) | max abs diff (same draws) |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        dask_rate = r["n_docs"] / r["dask_s"]
        cells = [f"{r['n_docs']:,}", f"{r['n_queries_pool']:,}", str(r["partitions"]),
                 f"{r['asked']} ({r['method']})", f"{r['dask_s']:.1f}",
                 f"{r['table_s']:.1f} / {r['units_s']:.1f} / {r['draw_s']:.1f} / {r['fetch_s']:.1f}",
                 f"{dask_rate:,.0f}", _mib(r["driver_rss_mib"]), " / ".join(_mib(w) for w in r["worker_rss_mib"])]
        if "memory_s" in r:
            mem_rate = r["n_docs"] / r["memory_s"]
            cells += [f"{r['memory_s']:.1f}", f"{mem_rate:,.0f}", f"{dask_rate / mem_rate:.2f}",
                      _mib(r["memory_rss_mib"]), f"{r['load_s']:.1f}",
                      f"{r['max_abs_diff']:.1e} ({'yes' if r['same_draws'] else 'NO'})"]
        else:
            cells += ["—"] * 6
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Goals of issue 18, as measured here:", ""]
    first = [r for r in rows if r["asked"] == rows[0]["asked"]]
    if len(first) >= 2:
        a, b = first[0], first[-1]
        ratio = b["driver_rss_mib"] / a["driver_rss_mib"]
        per_query = (b["driver_rss_mib"] - a["driver_rss_mib"]) * 2**20 / (b["n_queries_pool"] - a["n_queries_pool"])
        lines += [
            f"- driver peak RSS flat (<= 1.2x between the sizes, <= 1 GiB): x{ratio:.2f} between {a['n_docs']:,} "
            f"and {b['n_docs']:,} documents, at most {_mib(max(r['driver_rss_mib'] for r in rows))} MiB "
            f"({'met' if ratio <= 1.2 else 'not met'}: the driver holds the per-query table and the engine's "
            f"per-query arrays, {per_query:.0f} bytes per query of growth here; nothing per document)",
            f"- time linear in documents: x{b['dask_s'] / a['dask_s']:.2f} for x{b['n_docs'] / a['n_docs']:.1f} "
            "documents",
        ]
    for r in rows:
        if "memory_s" in r:
            tput = (r["n_docs"] / r["dask_s"]) / (r["n_docs"] / r["memory_s"])
            lines.append(f"- {r['asked']}: throughput on {args.workers} local workers >= 50% of the in-memory path at "
                         f"{r['n_docs']:,} documents: {tput:.0%} ({'met' if tput >= 0.5 else 'not met'}); "
                         f"results equal to {r['max_abs_diff']:.1e}, same draws: {'yes' if r['same_draws'] else 'NO'}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="12.5e6,50e6", help="documents per pool, comma-separated")
    ap.add_argument("--in-memory", default="12.5e6", help="sizes also run in memory (comma-separated, or '')")
    ap.add_argument("--dir", default=None, help="where the Parquet pools go (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the Parquet pools")
    ap.add_argument("--docs-per-file", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--metric", default="err@10")
    ap.add_argument("--budget", type=float, default=200.0)
    ap.add_argument("--methods", default="active_wor",
                    help="methods, comma-separated (e.g. active_wor,doc_dyn,auto; doc_dyn needs an additive metric "
                         "such as dcg@10); one measured run per size and method")
    ap.add_argument("--method", default="active_wor", help=argparse.SUPPRESS)  # internal: the run's method
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernels", default="numpy", choices=("auto", "numpy", "numba"),
                    help="moment-kernel backend (ACTIVERANK_KERNELS) of the driver and the workers")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "dask_scale.md"))
    ap.add_argument("--path", help=argparse.SUPPRESS)  # internal: one measured run in its own process
    args = ap.parse_args(argv)
    # the workers inherit the environment; benchmarks/ holds modules (coverage.py) that would shadow
    # installed packages of the same name in the workers, which inherit sys.path
    os.environ["ACTIVERANK_KERNELS"] = args.kernels
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    if args.path:
        print(json.dumps(run_once(args)))
        return 0
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    in_memory = {int(float(s)) for s in args.in_memory.split(",") if s.strip()}
    root = args.dir or tempfile.mkdtemp(prefix="activerank-dask-scale-")
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    rows = []
    try:
        for size in sizes:
            path = os.path.join(root, f"pool_{size}")
            t0 = time.perf_counter()
            n_docs, n_queries = write_pool(path, size, args.docs_per_file, args.seed)
            print(f"wrote {n_docs:,} documents ({n_queries:,} queries) in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
            for method in args.methods.split(","):
                cmd = [sys.executable, os.path.abspath(__file__), "--path", path, "--workers", str(args.workers),
                       "--metric", args.metric, "--budget", str(args.budget), "--seed", str(args.seed),
                       "--kernels", args.kernels, "--method", method,
                       *(["--in-memory", "yes"] if size in in_memory else ["--in-memory", ""])]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    sys.stderr.write(done.stderr)
                    return done.returncode
                row = json.loads(done.stdout.strip().splitlines()[-1])
                row.update(n_docs=n_docs, n_queries_pool=n_queries, asked=method)
                print(json.dumps(row), file=sys.stderr)
                rows.append(row)
            if not args.keep:
                shutil.rmtree(path, ignore_errors=True)
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    text = report(rows, args, load)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
