"""TREC run files: read them into a pool and per-run rankings, map a run onto another pool, build
rankings from ``{query id: [doc ids]}``, and write rankings as a run file.

Ordering, ids and errors as described in :mod:`activerank.io.trec`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ...ragged import Rankings, offsets_from_lengths
from ._columnar import _Fallback, read_columns
from ._text import _as_key, _atomic_write_text, _int_field, _read_lines


@dataclass(frozen=True, eq=False)
class TrecRuns:
    """Runs read from TREC run files, over one shared pool.

    Attributes
    ----------
    pool : activerank.Pool
        Queries in order of first appearance; each query's documents are the
        union of the documents any run retrieved for it (order of first
        appearance).  ``query_ids`` and ``doc_ids`` are object arrays of str.
    rankings : dict of str to Rankings
        One entry per run (keyed by tag), global pool rows in trec_eval order.
        A query a run did not retrieve anything for has an empty ranking.
    scores : dict of str to ndarray of shape (n_docs,)
        The run's score per pool row (``-inf`` for rows it did not retrieve).
    """

    pool: object
    rankings: dict
    scores: dict

    @property
    def names(self) -> tuple:
        return tuple(self.rankings)


def _parse_run_file(path, multiple_tags: str):
    """Return ``{tag: {qid: [(score, docid, line)]}}`` in file order."""
    runs: dict = {}
    seen: dict = {}
    first_tag = None
    for line, text in _read_lines(path):
        parts = text.split()
        if len(parts) != 6:
            raise ValueError(
                f"{path}: line {line}: a run line must have 6 fields 'qid Q0 docid rank score tag'; "
                f"got {len(parts)}: {text!r}."
            )
        qid, _, doc, rank, score, tag = parts
        _int_field(rank, path, line, "rank")
        try:
            s = float(score)
        except ValueError:
            raise ValueError(f"{path}: line {line}: score {score!r} is not a number.") from None
        if not np.isfinite(s):
            raise ValueError(f"{path}: line {line}: score {score!r} is not finite.")
        if first_tag is None:
            first_tag = tag
        elif tag != first_tag and multiple_tags == "error":
            raise ValueError(
                f"{path}: line {line}: tag {tag!r} differs from the file's first tag {first_tag!r} "
                "(multiple_tags='error'; use multiple_tags='split' for one run per tag)."
            )
        key = (tag, qid, doc)
        if key in seen:
            raise ValueError(
                f"{path}: line {line}: run {tag!r} retrieves document {doc!r} for query {qid!r} twice "
                f"(first at line {seen[key]})."
            )
        seen[key] = line
        runs.setdefault(tag, {}).setdefault(qid, []).append((s, doc))
    if not runs:
        raise ValueError(f"{path}: file is empty (no run lines).")
    return runs


def read_runs(paths, *, multiple_tags: str = "split", queries: str = "union") -> TrecRuns:
    """Read one or more TREC run files into a pool and per-run rankings.

    Parameters
    ----------
    paths : str, os.PathLike or sequence of them
        Run files with lines ``qid Q0 docid rank score tag``.
    multiple_tags : {"split", "error"}, default "split"
        What a file with several tags means: one run per tag, or an error.
    queries : {"union", "intersection"}, default "union"
        Pool queries: every query some run retrieved for, or only queries
        every run retrieved for.

    Returns
    -------
    TrecRuns

    Raises
    ------
    ValueError
        Naming file and line for a line without 6 fields, a non-integer rank,
        a non-numeric score, a document retrieved twice for a query by the
        same run; or when two files use the same tag, or no query is left.

    Notes
    -----
    Documents are ordered by score descending, ties by docid descending, as
    ``trec_eval`` does; the rank column is validated but not used.

    Files are parsed column-wise with numpy (about 10x faster than a Python
    loop over lines, at a fraction of the memory; ``benchmarks/read_runs.py``);
    a file with a problem is re-read line by line to name the file and line.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = os.path.join(tmp, "a.run")
    ...     with open(p, "w") as f:
    ...         _ = f.write("q1 Q0 d1 1 0.5 A\\nq1 Q0 d2 2 0.5 A\\nq1 Q0 d3 3 0.9 A\\n")
    ...     runs = read_runs(p)
    >>> [runs.pool.doc_ids[r] for r in runs.rankings["A"][0]]
    ['d3', 'd2', 'd1']
    """
    if multiple_tags not in ("split", "error"):
        raise ValueError(f"`multiple_tags` must be 'split' or 'error'; got {multiple_tags!r}.")
    if queries not in ("union", "intersection"):
        raise ValueError(f"`queries` must be 'union' or 'intersection'; got {queries!r}.")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise ValueError("`paths` must name at least one run file.")
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"`paths` must be file paths; got {type(p).__name__}.")
    try:
        return _read_runs_columnar(paths, multiple_tags, queries)
    except _Fallback:
        return _read_runs_lines(paths, multiple_tags, queries)


def _read_runs_lines(paths, multiple_tags: str, queries: str) -> TrecRuns:
    """The line-by-line reader: the reference semantics, and every error with its file and line."""
    from ...pool import Pool

    runs: dict = {}
    origin: dict = {}
    for path in paths:
        for tag, by_query in _parse_run_file(path, multiple_tags).items():
            if tag in runs:
                raise ValueError(
                    f"{path}: run tag {tag!r} is also used in {origin[tag]}; tags must be unique across files."
                )
            runs[tag] = by_query
            origin[tag] = os.fspath(path)
    qorder: dict = {}
    for by_query in runs.values():
        for qid in by_query:
            qorder.setdefault(qid, None)
    qids = list(qorder)
    if queries == "intersection":
        qids = [q for q in qids if all(q in r for r in runs.values())]
        if not qids:
            raise ValueError(f"the runs {list(runs)} share no query (queries='intersection').")
    row_of: dict = {}
    doc_ids: list = []
    lengths = []
    for qid in qids:
        n0 = len(doc_ids)
        for by_query in runs.values():
            for _, doc in by_query.get(qid, ()):
                if (qid, doc) not in row_of:
                    row_of[(qid, doc)] = len(doc_ids)
                    doc_ids.append(doc)
        lengths.append(len(doc_ids) - n0)
    offsets = offsets_from_lengths(lengths)
    pool = Pool(np.array(qids, dtype=object), offsets, np.array(doc_ids, dtype=object))
    rankings, scores = {}, {}
    for tag, by_query in runs.items():
        per_query = []
        s = np.full(len(doc_ids), -np.inf)
        for qid in qids:
            entries = sorted(by_query.get(qid, ()), key=lambda e: e[1], reverse=True)
            entries.sort(key=lambda e: e[0], reverse=True)  # stable: ties keep docid descending
            rows = [row_of[(qid, doc)] for _, doc in entries]
            s[rows] = [e[0] for e in entries]
            per_query.append(rows)
        rankings[tag] = Rankings.from_list(per_query)
        scores[tag] = s
    return TrecRuns(pool=pool, rankings=rankings, scores=scores)


def _read_runs_columnar(paths, multiple_tags: str, queries: str) -> TrecRuns:
    """The columnar reader (:mod:`._columnar`); raises ``_Fallback`` where it cannot vouch for the input."""
    pool, rankings, scores = read_columns(paths, multiple_tags, queries)
    return TrecRuns(pool=pool, rankings=rankings, scores=scores)


def run_rankings_for_pool(runs: TrecRuns, pool, *, name: str | None = None, missing: str = "error") -> Rankings:
    """Map one run onto another pool (e.g. a LETOR file with ``doc_ids``).

    Parameters
    ----------
    runs : TrecRuns
    pool : LetorData or Pool
        Must have ``doc_ids``; queries and documents are matched by their
        string form.
    name : str, optional
        Which run (tag); required when ``runs`` holds more than one.
    missing : {"error", "drop"}, default "error"
        What to do with a retrieved document (or query) the pool lacks.

    Returns
    -------
    Rankings
        Per pool query, the pool rows the run retrieved, in run order.  Pool
        queries the run does not cover get an empty ranking.
    """
    if missing not in ("error", "drop"):
        raise ValueError(f"`missing` must be 'error' or 'drop'; got {missing!r}.")
    if name is None:
        if len(runs.rankings) != 1:
            raise ValueError(f"`name` is required: the runs hold several tags {list(runs.rankings)}.")
        name = next(iter(runs.rankings))
    if name not in runs.rankings:
        raise ValueError(f"`name` {name!r} is not a run; available: {list(runs.rankings)}.")
    doc_ids = getattr(pool, "doc_ids", None)
    if doc_ids is None:
        raise ValueError("`pool` has no `doc_ids`; a run can only be matched to a pool by document id.")
    offsets = np.asarray(pool.offsets, dtype=np.int64)
    pool_q = {_as_key(q): i for i, q in enumerate(np.asarray(pool.query_ids).tolist())}
    src = runs.pool
    r = runs.rankings[name]
    per_query = [[] for _ in range(offsets.size - 1)]
    for sq, qid in enumerate(src.query_ids.tolist()):
        ranked = r[sq]
        if ranked.size == 0:
            continue
        if qid not in pool_q:
            if missing == "error":
                raise ValueError(f"run {name!r} has query {qid!r}, which the pool lacks (missing='error').")
            continue
        x = pool_q[qid]
        rows = {_as_key(d): offsets[x] + j for j, d in enumerate(np.asarray(doc_ids)[offsets[x]:offsets[x + 1]].tolist())}
        for row in ranked.tolist():
            d = src.doc_ids[row]
            if d not in rows:
                if missing == "error":
                    raise ValueError(
                        f"run {name!r} retrieves document {d!r} for query {qid!r}, which the pool lacks "
                        "(missing='error')."
                    )
                continue
            per_query[x].append(int(rows[d]))
    return Rankings.from_list(per_query)


def rankings_from_dict(mapping, pool, *, missing: str = "error") -> Rankings:
    """Rankings over a pool from ``{query id: [document ids, best first]}``.

    The input users often have at hand (a search engine's output, a JSON
    dump, ``ranx``-like ``{qid: {docid: score}}`` after sorting) becomes the
    :class:`~activerank.ragged.Rankings` that ``estimate``/``compare`` take.

    Parameters
    ----------
    mapping : mapping of query id to sequence of document ids
        Each list is one query's ranking, best first.  Ids are matched to the
        pool's by their string form (``7`` and ``"7"`` are the same query).
        A mapping ``{doc id: score}`` as a value is ranked by score
        descending, ties by document id descending (as ``trec_eval``).
    pool : LetorData or Pool
        Must have ``doc_ids``.
    missing : {"error", "drop"}, default "error"
        A query or document the pool lacks: raise, or leave it out.

    Returns
    -------
    Rankings
        One ranking per pool query, in pool order; pool queries absent from
        ``mapping`` get an empty ranking.

    Raises
    ------
    TypeError
        ``mapping`` is not a mapping, or a value is not a sequence of ids.
    ValueError
        Naming the query (and document) for an unknown query or document
        (``missing="error"``), a document listed twice for one query, or a
        pool without ``doc_ids``.

    Examples
    --------
    >>> import numpy as np
    >>> import activerank as ar
    >>> pool = ar.Pool(np.array(["q1", "q2"]), np.array([0, 2, 3]), np.array(["a", "b", "c"], dtype=object))
    >>> r = rankings_from_dict({"q1": ["b", "a"], "q2": ["c"]}, pool)
    >>> r.to_list()[0].tolist(), r.to_list()[1].tolist()
    ([1, 0], [2])
    """
    if not isinstance(mapping, Mapping):
        raise TypeError(f"`mapping` must be a mapping query id -> [doc ids, best first]; "
                        f"got {type(mapping).__name__}.")
    if missing not in ("error", "drop"):
        raise ValueError(f"`missing` must be 'error' or 'drop'; got {missing!r}.")
    doc_ids = getattr(pool, "doc_ids", None)
    if doc_ids is None or not hasattr(pool, "offsets") or not hasattr(pool, "query_ids"):
        raise ValueError("`pool` must have `query_ids`, `offsets` and `doc_ids` (rankings are matched to "
                         "the pool by document id).")
    offsets = np.asarray(pool.offsets, dtype=np.int64)
    qkeys = [_as_key(q) for q in np.asarray(pool.query_ids).tolist()]
    qindex = {k: x for x, k in enumerate(qkeys)}
    dkeys = [_as_key(d) for d in np.asarray(doc_ids).tolist()]
    qrow = np.repeat(np.arange(len(qkeys)), np.diff(offsets))
    row_of = {(qkeys[x], d): r for r, (x, d) in enumerate(zip(qrow.tolist(), dkeys))}
    per_query = [[] for _ in qkeys]
    for qid, docs in mapping.items():
        q = _as_key(qid)
        if isinstance(docs, Mapping):
            docs = _ranked_by_score(docs, q)
        if isinstance(docs, (str, bytes)) or not hasattr(docs, "__iter__"):
            raise TypeError(f"`mapping`[{q!r}] must be a sequence of document ids (best first) or a mapping "
                            f"doc id -> score; got {type(docs).__name__}.")
        if q not in qindex:
            if missing == "error":
                raise ValueError(f"`mapping` has query {q!r}, which the pool lacks (missing='error'; "
                                 "missing='drop' leaves it out).")
            continue
        rows, seen = per_query[qindex[q]], set()
        for d in docs:
            key = _as_key(d)
            if key in seen:
                raise ValueError(f"`mapping`[{q!r}] lists document {key!r} twice.")
            seen.add(key)
            r = row_of.get((q, key))
            if r is None:
                if missing == "error":
                    raise ValueError(f"`mapping`[{q!r}] lists document {key!r}, which the pool lacks for "
                                     "that query (missing='error'; missing='drop' leaves it out).")
                continue
            rows.append(r)
    return Rankings.from_list(per_query)


def _ranked_by_score(scored: Mapping, q: str) -> list:
    """Document ids of ``{doc id: score}``: score descending, ties by id descending (trec_eval)."""
    entries = []
    for d, v in scored.items():
        if isinstance(v, (bool, str, bytes)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"`mapping`[{q!r}][{_as_key(d)!r}] must be a score (a real number); got {v!r}.")
        if not np.isfinite(v):
            raise ValueError(f"`mapping`[{q!r}][{_as_key(d)!r}] must be a finite score; got {v!r}.")
        entries.append((float(v), _as_key(d), d))
    entries.sort(key=lambda e: e[1], reverse=True)
    entries.sort(key=lambda e: e[0], reverse=True)      # stable: ties keep id descending
    return [e[2] for e in entries]


def write_run(path, pool, rankings: Rankings, tag: str = "activerank", scores=None):
    """Write rankings over a pool as a TREC run file (atomically).

    Parameters
    ----------
    path : str or os.PathLike
    pool : Pool or LetorData
        Supplies query ids and document ids (global row numbers if it has none).
    rankings : Rankings
    tag : str
    scores : array-like of shape (n_docs,), optional
        Scores to write; default ``n - rank`` so that re-reading reproduces the order.
    """
    if not isinstance(tag, str) or not tag or any(c.isspace() for c in tag):
        raise ValueError(f"`tag` must be a non-empty string without whitespace; got {tag!r}.")
    doc_ids = getattr(pool, "doc_ids", None)
    out = []
    for x, qid in enumerate(np.asarray(pool.query_ids).tolist()):
        ranked = rankings[x]
        for pos, row in enumerate(ranked.tolist()):
            d = str(row) if doc_ids is None else _as_key(doc_ids[row])
            s = float(ranked.size - pos) if scores is None else float(scores[row])
            out.append(f"{_as_key(qid)} Q0 {d} {pos + 1} {s!r} {tag}\n")
    _atomic_write_text(path, "".join(out))
