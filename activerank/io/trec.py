"""TREC run and qrels files: rankers and judgments as search teams keep them.

Run files
    One retrieved document per line, ``qid Q0 docid rank score tag`` (six
    whitespace-separated fields).  As in ``trec_eval``, the ``rank`` column is
    *not* used for ordering: within a query the documents are ordered by
    **score descending, ties broken by docid descending** (``trec_eval`` sorts
    with ``strcmp(docno2, docno1)`` on ties; Python's ``str`` order on code
    points equals UTF-8 byte order, so the results agree).  The ``Q0`` column
    is ignored.  A file holding several tags yields one run per tag (or an
    error with ``multiple_tags="error"``).
Qrels files
    One judgment per line, ``qid iter docid grade`` (four fields; ``iter`` is
    ignored, usually ``0``).  Grades are integers ``0 .. ymax``.

Query and document ids are kept as strings.  Every parse error is a
``ValueError`` naming the file and the 1-based line.  A UTF-8 byte-order mark
and CRLF line ends are accepted.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..ragged import Rankings, offsets_from_lengths

__all__ = [
    "TrecRuns",
    "Qrels",
    "read_runs",
    "read_qrels",
    "write_qrels",
    "write_run",
    "run_rankings_for_pool",
]


# --------------------------------------------------------------------------- helpers


def _read_lines(path):
    """Yield ``(line_number, text)`` of non-blank lines; BOM and CRLF tolerated."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw.startswith(b"\xff\xfe") or raw.startswith(b"\xfe\xff"):
        raise ValueError(f"{path}: file is UTF-16 encoded; save it as UTF-8.")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for i, line in enumerate(raw.split(b"\n"), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: line {i}: not valid UTF-8 ({exc.reason} at byte {exc.start}).") from None
        text = text.strip()
        if text:
            yield i, text


def _int_field(text: str, path, line: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{path}: line {line}: {what} {text!r} is not an integer.") from None


def _as_key(value) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def _atomic_write_text(path, text: str):
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------- runs


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
    from ..pool import Pool

    if multiple_tags not in ("split", "error"):
        raise ValueError(f"`multiple_tags` must be 'split' or 'error'; got {multiple_tags!r}.")
    if queries not in ("union", "intersection"):
        raise ValueError(f"`queries` must be 'union' or 'intersection'; got {queries!r}.")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise ValueError("`paths` must name at least one run file.")
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


# --------------------------------------------------------------------------- qrels


@dataclass(frozen=True, eq=False)
class Qrels:
    """Judgments read from a qrels file: ``{query id: {doc id: grade}}`` (str keys).

    Attributes
    ----------
    judgments : dict
    path : str or None
    lines : dict
        ``{(query id, doc id): line number}`` in the source file.
    """

    judgments: dict
    path: str | None = None
    lines: dict | None = None

    @property
    def n_judgments(self) -> int:
        return sum(len(d) for d in self.judgments.values())

    @property
    def max_grade(self) -> int:
        return max((g for d in self.judgments.values() for g in d.values()), default=0)

    def get(self, query_id, doc_id, default=None):
        """Grade of one pair (ids matched by their string form)."""
        return self.judgments.get(_as_key(query_id), {}).get(_as_key(doc_id), default)

    def labeler(self, missing: int | None = None):
        """A labeler ``(query_id, doc_ids) -> grades`` answering from these judgments.

        Parameters
        ----------
        missing : int or None, default None
            Grade for an unjudged pair (``trec_eval`` treats unjudged as 0);
            ``None`` raises ``ValueError`` instead.
        """
        if missing is not None and (isinstance(missing, bool) or not isinstance(missing, (int, np.integer))
                                    or missing < 0):
            raise ValueError(f"`missing` must be None or a grade >= 0; got {missing!r}.")

        def label(query_id, doc_ids):
            out = []
            for d in doc_ids:
                g = self.get(query_id, d, missing)
                if g is None:
                    raise ValueError(
                        f"qrels{'' if self.path is None else ' ' + self.path} have no judgment for "
                        f"query {_as_key(query_id)!r}, document {_as_key(d)!r}."
                    )
                out.append(g)
            return np.asarray(out, dtype=np.int64)

        return label

    def labels_for(self, pool, missing: int = -1) -> np.ndarray:
        """Grade of every pool row (``missing`` where unjudged); pool needs ``doc_ids``."""
        doc_ids = getattr(pool, "doc_ids", None)
        offsets = np.asarray(pool.offsets, dtype=np.int64)
        out = np.full(int(offsets[-1]), missing, dtype=np.int64)
        for x, qid in enumerate(np.asarray(pool.query_ids).tolist()):
            judged = self.judgments.get(_as_key(qid))
            if not judged:
                continue
            for row in range(offsets[x], offsets[x + 1]):
                d = str(row) if doc_ids is None else _as_key(doc_ids[row])
                if d in judged:
                    out[row] = judged[d]
        return out


def read_qrels(path, *, n_grades: int | None = None, negative: str = "error") -> Qrels:
    """Read a TREC qrels file (``qid iter docid grade``).

    Parameters
    ----------
    path : str or os.PathLike
    n_grades : int, optional
        Size of the grade scale; a grade ``>= n_grades`` is an error.
    negative : {"error", "zero"}, default "error"
        Negative grades (some collections mark spam with ``-2``): reject, or
        read as 0 (non-relevant, as ``trec_eval`` treats them).

    Returns
    -------
    Qrels

    Raises
    ------
    ValueError
        Naming file and line for a line without 4 fields, a non-integer or
        out-of-scale grade, or a pair judged twice with different grades.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = os.path.join(tmp, "qrels")
    ...     with open(p, "w") as f:
    ...         _ = f.write("7 0 d1 2\\n7 0 d2 0\\n")
    ...     qrels = read_qrels(p)
    >>> qrels.judgments
    {'7': {'d1': 2, 'd2': 0}}
    """
    if negative not in ("error", "zero"):
        raise ValueError(f"`negative` must be 'error' or 'zero'; got {negative!r}.")
    if n_grades is not None and (isinstance(n_grades, bool) or not isinstance(n_grades, (int, np.integer))
                                 or n_grades < 2):
        raise ValueError(f"`n_grades` must be an integer >= 2 or None; got {n_grades!r}.")
    path = os.fspath(path)
    judgments: dict = {}
    lines: dict = {}
    for line, text in _read_lines(path):
        parts = text.split()
        if len(parts) != 4:
            raise ValueError(
                f"{path}: line {line}: a qrels line must have 4 fields 'qid iter docid grade'; "
                f"got {len(parts)}: {text!r}."
            )
        qid, _, doc, grade_text = parts
        grade = _int_field(grade_text, path, line, "grade")
        if grade < 0:
            if negative == "error":
                raise ValueError(
                    f"{path}: line {line}: grade {grade} is negative (use negative='zero' to read it as 0)."
                )
            grade = 0
        if n_grades is not None and grade >= n_grades:
            raise ValueError(
                f"{path}: line {line}: grade {grade} is outside the scale 0..{n_grades - 1}."
            )
        prev = judgments.setdefault(qid, {}).get(doc)
        if prev is not None and prev != grade:
            raise ValueError(
                f"{path}: line {line}: query {qid!r}, document {doc!r} has grade {grade} but line "
                f"{lines[(qid, doc)]} gave {prev}."
            )
        judgments[qid][doc] = grade
        lines.setdefault((qid, doc), line)
    if not judgments:
        raise ValueError(f"{path}: file is empty (no qrels lines).")
    return Qrels(judgments=judgments, path=path, lines=lines)


def write_qrels(path, judgments: Mapping) -> int:
    """Write ``{query id: {doc id: grade}}`` (or a :class:`Qrels`) as a qrels file, atomically.

    Lines are ``qid 0 docid grade`` in the mapping's order.  Returns the
    number of lines written.
    """
    if isinstance(judgments, Qrels):
        judgments = judgments.judgments
    if not isinstance(judgments, Mapping):
        raise TypeError(f"`judgments` must be a mapping query id -> {{doc id: grade}}; got {type(judgments).__name__}.")
    out = []
    for qid, docs in judgments.items():
        q = _as_key(qid)
        if not q or any(c.isspace() for c in q):
            raise ValueError(f"`judgments`: query id {q!r} is empty or contains whitespace; qrels cannot hold it.")
        for doc, grade in docs.items():
            d = _as_key(doc)
            if not d or any(c.isspace() for c in d):
                raise ValueError(
                    f"`judgments`: document id {d!r} of query {q!r} is empty or contains whitespace."
                )
            if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)):
                raise ValueError(f"`judgments`: query {q!r}, document {d!r}: grade {grade!r} is not an integer.")
            out.append(f"{q} 0 {d} {int(grade)}\n")
    _atomic_write_text(path, "".join(out))
    return len(out)
