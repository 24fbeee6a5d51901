"""Growth of the file loaders with file size: LETOR/SVMlight, TREC runs, TREC qrels.

Synthetic files of 10^4 .. 10^6 lines are written to a temporary directory
(deleted afterwards) and read by

``letor``           ``activerank.io.load_letor`` (46 features, MQ2008-like lines with ``#docid`` comments)
``sklearn``         ``sklearn.datasets.load_svmlight_file(query_id=False)`` on the same file: parsing only,
                    sparse result, no query ids -- the yardstick (goal: ``letor`` within 2x at 10^6 lines)
``sklearn_qid``     ``load_svmlight_file(query_id=True)``, what ``load_letor`` called before (its query-id
                    array grows one line at a time); only up to ``--qid-max`` lines
``runs``            ``activerank.io.read_runs`` (1,000 documents per query, one tag)
``qrels``           ``activerank.io.read_qrels`` (the same pairs, grades 0..2)

and, unless ``--no-mslr``, an MSLR-WEB30K-sized LETOR file (3,771,125 lines,
136 features, ~120 documents per query, no comments) read by ``load_letor``
once, with its peak memory against the size of the dense feature matrix.

Each read runs in a fresh subprocess (median of ``--repeats`` for files up to
10^5 lines, one run above), which reports wall and CPU time and the growth of
its peak resident set size during the read.  The growth exponent is the slope
of log(time) against log(lines) fitted over all sizes (1.0 = linear).  The
machine is shared: only ratios measured in one run should be compared.

Run:  python benchmarks/loaders.py [--sizes 10000,100000,1000000] [--repeats 3] [--no-mslr]
Writes benchmarks/results/loaders.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
MSLR_LINES, MSLR_FEATURES, MSLR_PER_QUERY = 3_771_125, 136, 120

CHILD = r"""
import json, resource, sys, time
import numpy as np
from sklearn.datasets import load_svmlight_file
import activerank.api  # imported before timing: the readers build activerank objects
from activerank.io import letor, trec
path, which = sys.argv[1], sys.argv[2]
readers = {
    "letor": lambda: letor.load_letor(path),
    "sklearn": lambda: load_svmlight_file(path, query_id=False, zero_based=False),
    "sklearn_qid": lambda: load_svmlight_file(path, query_id=True, zero_based=False),
    "runs": lambda: trec.read_runs(path),
    "qrels": lambda: trec.read_qrels(path),
}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
out = readers[which]()
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
dense = out.X.nbytes if which == "letor" else 0
print(json.dumps({"wall": wall, "cpu": cpu, "peak_mib": peak / 1024, "dense_mib": dense / 2**20}))
"""


def make_letor(path, n_lines, *, n_features=46, per_query=40, docids=True, seed=0, chunk=20_000):
    """A LETOR file: ``n_lines`` lines, ``per_query`` per query, every feature on every line.

    Values are drawn per feature from 256 spellings, half small integers and
    half six-digit decimals (as in MSLR-WEB30K), so the file looks real to a
    parser without costing a Python float format per value.
    """
    rng = np.random.default_rng(seed)
    table = np.empty((n_features, 256), dtype=object)
    for j in range(n_features):
        ints = rng.integers(0, 200, 128)
        floats = rng.random(128) * 10.0 ** rng.integers(-2, 3, 128)
        table[j] = [b"%d:%d" % (j + 1, v) for v in ints] + [b"%d:%.6f" % (j + 1, v) for v in floats]
    cols = np.arange(n_features)
    with open(path, "wb") as f:
        for r0 in range(0, n_lines, chunk):
            rows = range(r0, min(n_lines, r0 + chunk))
            tokens = table[cols, rng.integers(0, 256, (len(rows), n_features))].tolist()
            labels = rng.integers(0, 3, len(rows)).tolist()
            tail = [b" #docid = GX%03d-%02d-%07d inc = 1 prob = 0.0123" % (r % 997, r % 89, r) if docids else b""
                    for r in rows]
            f.write(b"".join(b"%d qid:%d %s%s\n" % (lab, 10_000 + r // per_query, b" ".join(tok), t)
                             for lab, r, tok, t in zip(labels, rows, tokens, tail)))


def make_run_and_qrels(run_path, qrels_path, n_lines, seed=0):
    """A run file (1,000 documents per query, scores descending, some ties) and qrels of the same pairs."""
    rng = np.random.default_rng(seed)
    per_q = min(1000, n_lines)
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(max(1, n_lines // per_q)):
            scores = np.sort(np.round(rng.normal(10.0, 3.0, per_q), 4))[::-1]
            docs = rng.integers(0, 10**9, per_q)
            grades = rng.integers(0, 3, per_q)
            ids = [f"clueweb09-en{d % 10000:04d}-{d // 10000 % 100:02d}-{d % 99991:05d}-{i}"
                   for i, d in enumerate(docs.tolist())]
            run.write("".join(f"{301 + q} Q0 {d} {r + 1} {s:.4f} bench\n"
                              for r, (d, s) in enumerate(zip(ids, scores.tolist()))))
            qrels.write("".join(f"{301 + q} 0 {d} {g}\n" for d, g in zip(ids, grades.tolist())))


def measure(path, which, repeats):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, path, which], capture_output=True, text=True, env=env)
        if out.returncode:
            raise RuntimeError(f"{which} on {path} failed:\n{out.stderr}")
        runs.append(json.loads(out.stdout))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def exponent(sizes, times) -> float:
    """Slope of log(time) on log(size): 1 for linear growth, 2 for quadratic."""
    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,30000,100000,300000,1000000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--qid-max", type=int, default=100_000, help="largest file read with query_id=True")
    ap.add_argument("--no-mslr", action="store_true", help="skip the MSLR-WEB30K-sized row")
    ap.add_argument("--out", default=os.path.join(RESULTS, "loaders.md"))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    load0 = os.getloadavg()[0]
    rows, mslr = {}, None
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            reps = args.repeats if n <= 100_000 else 1
            lp, rp, qp = (os.path.join(tmp, f"{n}.{ext}") for ext in ("txt", "run", "qrels"))
            make_letor(lp, n)
            make_run_and_qrels(rp, qp, n)
            rows[n] = {"letor": measure(lp, "letor", reps), "sklearn": measure(lp, "sklearn", reps),
                       "runs": measure(rp, "runs", reps), "qrels": measure(qp, "qrels", reps),
                       "mib": os.path.getsize(lp) / 2**20}
            if n <= args.qid_max:
                rows[n]["sklearn_qid"] = measure(lp, "sklearn_qid", reps)
            for p in (lp, rp, qp):
                os.unlink(p)
            print(n, {k: round(v["wall"], 2) for k, v in rows[n].items() if isinstance(v, dict)}, flush=True)
        if not args.no_mslr:
            p = os.path.join(tmp, "mslr.txt")
            t0 = time.perf_counter()
            make_letor(p, MSLR_LINES, n_features=MSLR_FEATURES, per_query=MSLR_PER_QUERY, docids=False)
            made = time.perf_counter() - t0
            mslr = measure(p, "letor", 1) | {"mib": os.path.getsize(p) / 2**20, "made": made}
            print("mslr", mslr, flush=True)
    load1 = os.getloadavg()[0]
    text = report(rows, sizes, mslr, args, load0, load1)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


def report(rows, sizes, mslr, args, load0, load1) -> str:
    readers = ["letor", "sklearn", "sklearn_qid", "runs", "qrels"]
    out = [
        "# File loaders: growth with file size",
        "",
        f"`python benchmarks/loaders.py --sizes {args.sizes} --repeats {args.repeats}` (median of "
        f"{args.repeats} runs up to 10^5 lines, one run above; each read in a fresh process). "
        f"1-min load average {load0:.1f} before, {load1:.1f} after, on {os.cpu_count()} cores: the machine is "
        "shared, compare columns of one row. LETOR: 46 features, 40 lines per query, `#docid` comments; "
        "runs/qrels: 1,000 documents per query.",
        "",
        "Wall seconds (CPU seconds):",
        "",
        "| lines | LETOR MiB | " + " | ".join(readers) + " | letor / sklearn, wall (CPU) | letor peak MiB (dense X MiB) |",
        "|---:|---:|" + "---:|" * len(readers) + "---:|---:|",
    ]
    for n in sizes:
        r = rows[n]
        cells = [f"{r[k]['wall']:.2f} ({r[k]['cpu']:.2f})" if k in r else "-" for k in readers]
        out.append(f"| {n:,} | {r['mib']:.0f} | " + " | ".join(cells)
                   + f" | {r['letor']['wall'] / r['sklearn']['wall']:.2f} ({r['letor']['cpu'] / r['sklearn']['cpu']:.2f}) "
                   + f"| {r['letor']['peak_mib']:.0f} ({r['letor']['dense_mib']:.0f}) |")
    out += ["", "Growth exponent (slope of log wall time on log lines; 1 = linear):", ""]
    out.append("| reader | sizes | exponent (wall) | exponent (CPU) |")
    out.append("|---|---|---:|---:|")
    for k in readers:
        ns = [n for n in sizes if k in rows[n]]
        if len(ns) >= 2:
            out.append(f"| {k} | {ns[0]:,} .. {ns[-1]:,} | {exponent(ns, [rows[n][k]['wall'] for n in ns]):.2f} "
                       f"| {exponent(ns, [rows[n][k]['cpu'] for n in ns]):.2f} |")
    if mslr is not None:
        out += ["", f"MSLR-WEB30K-sized file ({MSLR_LINES:,} lines, {MSLR_FEATURES} features, "
                f"{MSLR_PER_QUERY} lines per query, {mslr['mib']:,.0f} MiB; written in {mslr['made']:.0f} s): "
                f"`load_letor` {mslr['wall']:.1f} s wall ({mslr['cpu']:.1f} s CPU), "
                f"{mslr['wall'] / MSLR_LINES * 1e6:.1f} us/line; peak RSS growth {mslr['peak_mib'] / 1024:.2f} GiB "
                f"for a dense X of {mslr['dense_mib'] / 1024:.2f} GiB "
                f"(x{mslr['peak_mib'] / mslr['dense_mib']:.2f})."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
