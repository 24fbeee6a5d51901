"""Benchmark ``activerank.io.trec.read_runs`` (columnar) against the line-by-line reader and pandas.

A synthetic TREC run file of ``--lines`` lines (default 1,000,000: 1,000
queries x 1,000 documents in rank order, one tag, ClueWeb-like document ids,
six-decimal scores, 5% of them tied) is read by

``columnar``   ``read_runs`` as shipped: numpy over the file's bytes;
``lines``      the line-by-line reader it falls back to on malformed input
               (``activerank.io.trec.runs._read_runs_lines``; the reader before the
               columnar one);
``pandas``     ``pandas.read_csv(sep=r"\\s+", header=None)`` alone: parsing
               only, no validation, pool or rankings -- a yardstick.

Each reader runs in a fresh subprocess (``--repeats`` times; median wall
time and CPU time), which reports the growth of its peak resident set size
(``ru_maxrss``) during the read: the memory the read needs on top of the
imported libraries.  The columnar and line-by-line results are checked to be
identical.  The machine is shared: the load average is printed, and only
ratios measured in one run should be compared.

Run:  python benchmarks/read_runs.py [--lines 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

CHILD = r"""
import json, resource, sys, time
import numpy as np, pandas as pd
import activerank.api  # imported before timing: both readers build an activerank.Pool
from activerank.io.trec import runs as trec
path, which = sys.argv[1], sys.argv[2]
readers = {
    "columnar": lambda: trec.read_runs(path),
    "lines": lambda: trec._read_runs_lines([path], "split", "union"),
    "pandas": lambda: pd.read_csv(path, sep=r"\s+", header=None),
}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
out = readers[which]()
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
digest = None
if which != "pandas":
    r = next(iter(out.rankings.values()))
    digest = [int(out.pool.offsets[-1]), int(r.items[:1000].sum()), float(np.sum(r.items[::997])),
              out.pool.doc_ids[r.items[0]]]
print(json.dumps({"wall": wall, "cpu": cpu, "peak_mib": peak / 1024, "digest": digest}))
"""


def make_run_file(path, n_lines, seed=0):
    rng = np.random.default_rng(seed)
    n_q = max(1, n_lines // 1000)
    per_q = n_lines // n_q
    with open(path, "w") as f:
        for q in range(n_q):
            scores = np.round(rng.normal(10.0, 3.0, per_q), 6)
            scores[rng.random(per_q) < 0.05] = scores[0]           # some ties, resolved by docid
            scores = np.sort(scores)[::-1]                         # run files list documents by rank
            docs = rng.integers(0, 10**9, per_q)
            f.write("".join(f"{301 + q} Q0 clueweb09-en{d % 10000:04d}-{d // 10000 % 100:02d}-{d % 99991:05d} "
                            f"{r + 1} {s:.6f} bench\n" for r, (d, s) in enumerate(zip(docs, scores))))


def measure(path, which, repeats):
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, path, which], capture_output=True, text=True,
                             env=env, check=True)
        runs.append(json.loads(out.stdout))
    return {"wall": statistics.median(r["wall"] for r in runs), "cpu": statistics.median(r["cpu"] for r in runs),
            "peak_mib": statistics.median(r["peak_mib"] for r in runs), "digest": runs[0]["digest"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.run")
        make_run_file(path, args.lines)
        size = os.path.getsize(path)
        print(f"run file: {args.lines:,} lines, {size / 2**20:.1f} MiB; load average {os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} cores")
        res = {w: measure(path, w, args.repeats) for w in ("columnar", "lines", "pandas")}
    assert res["columnar"]["digest"] == res["lines"]["digest"], "readers disagree"
    per_m = 1e6 / args.lines
    print(f"{'reader':<10} {'wall s/1M':>10} {'cpu s/1M':>9} {'peak MiB/1M':>12} {'x lines (wall)':>15}")
    for w, r in res.items():
        print(f"{w:<10} {r['wall'] * per_m:>10.2f} {r['cpu'] * per_m:>9.2f} {r['peak_mib'] * per_m:>12.0f} "
              f"{res['lines']['wall'] / r['wall']:>15.1f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
