"""External judges' outputs (an LLM, a cross-encoder) matched to a pool by query and document id.

A judge gives, per (query, document) pair, one of

* ``"grades"``: an integer grade on the judge's own scale ``0 .. levels - 1`` (which may differ from the human
  scale; calibration maps one onto the other);
* ``"probabilities"`` / ``"log_probabilities"``: one (log-)probability per grade of the judge's scale, summing
  to 1;
* ``"scores"``: a real-valued score (a cross-encoder's logit, say).

:func:`read_judge` reads any of them from a qrels-like text file (``qid Q0 docid value``), a TSV/CSV file with a
header, a JSONL file, a pandas DataFrame or a dict ``{query id: {doc id: value}}``, checks every row once, and
matches it to the pool's rows.  Pool documents the judge did not grade stay missing (calibration falls back on
the feature model there); rows naming pairs outside the pool, duplicate pairs, grades outside the declared
scale and probabilities that do not sum to 1 raise ``ValueError`` naming the line (or the count and a sample).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from ..io.trec._text import _as_key, _read_lines

__all__ = ["JUDGE_KINDS", "JudgeOutputs", "judge_outputs_of", "read_judge"]

JUDGE_KINDS = ("grades", "probabilities", "log_probabilities", "scores")
#: largest |sum of probabilities - 1| accepted (judges write probabilities rounded to a few digits)
SUM_TOLERANCE = 1e-3
_QUERY_COLUMNS = ("query_id", "qid", "query")
_DOC_COLUMNS = ("doc_id", "docid", "doc", "passage_id", "pid", "docno")
_VALUE_COLUMNS = {"grades": ("grade", "label", "relevance", "rel"), "scores": ("score",),
                  "probabilities": ("probabilities", "probs"), "log_probabilities": ("log_probabilities", "logprobs")}
_PREFIX = {"probabilities": ("p", "prob_"), "log_probabilities": ("logp", "logprob_")}


@dataclass(frozen=True, eq=False)
class JudgeOutputs:
    """One judge's outputs on a pool's document rows.

    Attributes
    ----------
    name : str
    kind : {"grades", "probabilities", "scores"}
        Log-probabilities are stored as probabilities.
    values : ndarray
        ``(n_docs,)`` grades or scores (NaN where the judge gave none) or ``(n_docs, levels)`` probabilities (NaN
        rows where it gave none).
    levels : int or None
        Size of the judge's grade scale (None for scores).
    source : str or None
        Where the outputs came from (a path, ``"DataFrame"`` or ``"dict"``).
    """

    name: str
    kind: str
    values: np.ndarray
    levels: int | None
    source: str | None = None

    @property
    def judged(self) -> np.ndarray:
        """Whether the judge graded each pool row."""
        v = self.values
        return ~np.isnan(v) if v.ndim == 1 else ~np.isnan(v).any(axis=1)

    @property
    def n_docs(self) -> int:
        return int(self.values.shape[0])

    def __repr__(self) -> str:
        scale = "" if self.levels is None else f", levels={self.levels}"
        return (f"JudgeOutputs(name={self.name!r}, kind={self.kind!r}{scale}, judged={int(self.judged.sum())} of "
                f"{self.n_docs})")


def read_judge(source, pool, *, kind: str = "grades", levels: int | None = None, name: str | None = None,
               columns: dict | None = None) -> JudgeOutputs:
    """Read one judge's outputs and match them to ``pool``'s rows by (query id, document id).

    Parameters
    ----------
    source : str, os.PathLike, pandas.DataFrame or dict
        A file (``.tsv``/``.csv`` with a header, ``.jsonl``, or else qrels-like ``qid Q0 docid value``), a
        DataFrame, or ``{query id: {doc id: value}}`` (a value is a grade, a score, or a sequence of
        probabilities).
    pool : Pool
        With ``doc_ids`` (without them documents are named by their row number).
    kind : {"grades", "probabilities", "log_probabilities", "scores"}, default "grades"
    levels : int, optional
        The judge's scale: grades ``0 .. levels - 1``.  Required for grades; for probabilities the number of
        columns, checked when given.
    name : str, optional
        Default: the file's name, else ``"judge"``.
    columns : dict, optional
        Column names of a table (``{"query": ..., "doc": ..., "value": ...}``; ``value`` may be a list of
        probability columns).  Default: ``query_id``/``qid``, ``doc_id``/``docid``/``passage_id``, and
        ``grade``, ``score``, ``p0 .. pK`` or ``logp0 .. logpK``.

    Returns
    -------
    JudgeOutputs

    Raises
    ------
    ValueError
        A pair outside the pool (the count and a sample), a pair given twice, a grade that is not an integer
        in ``0 .. levels - 1``, a non-finite score, or probabilities outside [0, 1] or not summing to 1
        (naming the line, DataFrame row or dict entry).

    Examples
    --------
    >>> import activerank as ar
    >>> pool = ar.Pool.from_qids(["q1", "q1", "q2"], doc_ids=["d1", "d2", "d3"])
    >>> j = read_judge({"q1": {"d1": 2, "d2": 0}}, pool, levels=3, name="llm")
    >>> j
    JudgeOutputs(name='llm', kind='grades', levels=3, judged=2 of 3)
    >>> j.values.tolist()
    [2.0, 0.0, nan]
    """
    _kind_levels_iv(kind, levels)
    label, qk, dk, vals, where = _records(source, kind, columns)
    if name is None:
        name = os.path.basename(label) if label not in ("DataFrame", "dict") else "judge"
    values, levels = _checked_values(vals, kind, levels, label, where)
    rows = _match(pool, qk, dk, label, where)
    n_docs = int(np.asarray(pool.offsets)[-1])
    out = np.full((n_docs,) + values.shape[1:], np.nan)
    out[rows] = values
    return JudgeOutputs(str(name), "probabilities" if kind == "log_probabilities" else kind, out,
                        None if kind == "scores" else int(levels), label)


def _kind_levels_iv(kind, levels) -> None:
    if kind not in JUDGE_KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(map(repr, JUDGE_KINDS))}; got {kind!r}.")
    if levels is not None and (isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 2):
        raise ValueError(f"`levels` must be an integer >= 2 (the judge's grades 0 .. levels - 1); got {levels!r}.")
    if kind == "grades" and levels is None:
        raise ValueError("`levels` is required for kind='grades': declare the judge's scale (grades 0 .. levels - 1), "
                         "which may differ from the human scale.")


def judge_outputs_of(values, *, kind: str, levels: int | None, name: str, label: str) -> JudgeOutputs:
    """One judge's outputs from an array on pool rows already in place (NaN: not judged), checked as
    :func:`read_judge` checks a file; errors name ``label`` and the row.

    ``values`` is ``(n_docs,)`` for grades and scores, ``(n_docs, levels)`` for (log-)probabilities.
    """
    _kind_levels_iv(kind, levels)
    vals = np.asarray(values, dtype=np.float64)
    # a missing row is NaN throughout; a row with some NaN is a broken row, refused by the checks below
    given = ~np.isnan(vals) if vals.ndim == 1 else ~np.isnan(vals).all(axis=1)
    rows = np.flatnonzero(given)
    checked, levels = _checked_values(vals[rows], kind, levels, label, [f"{label} row {i}" for i in rows])
    out = np.full((vals.shape[0],) + checked.shape[1:], np.nan)
    out[rows] = checked
    return JudgeOutputs(str(name), "probabilities" if kind == "log_probabilities" else kind, out,
                        None if kind == "scores" else int(levels), label)


# --------------------------------------------------------------------------- sources


class _Where:
    """Names row ``i`` of a source in error messages, built only when one is raised."""

    def __init__(self, label: str, *, lines=None, keys=None):
        self.label, self.lines, self.keys = label, lines, keys

    def __getitem__(self, i: int) -> str:
        if self.keys is not None:
            return f"query {self.keys[0][i]!r}, document {self.keys[1][i]!r}"
        if self.lines is not None:
            return f"{self.label}: line {self.lines[i]}"
        return f"{self.label} row {i}"


def _records(source, kind, columns):
    """``(label, query keys, doc keys, values, where)`` of every row; ``where[i]`` names row i in messages."""
    if isinstance(source, dict):
        return ("dict",) + _from_dict(source)
    if hasattr(source, "columns") and hasattr(source, "iloc"):
        where = _Where("DataFrame")
        return ("DataFrame",) + _from_table(source, kind, columns, "DataFrame", where) + (where,)
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"`source` must be a path, a pandas DataFrame or a dict; got {type(source).__name__}.")
    path = os.fspath(source)
    ext = os.path.splitext(path)[1].lower()
    if ext in (".tsv", ".csv"):
        return (path,) + _from_delimited(path, kind, columns, "\t" if ext == ".tsv" else ",")
    if ext in (".jsonl", ".ndjson"):
        return (path,) + _from_jsonl(path, kind, columns)
    if kind in ("probabilities", "log_probabilities"):
        raise ValueError(f"{path}: (log-)probabilities need a table: a .tsv/.csv file with a header or a .jsonl file "
                         "(a qrels-like file holds one value per pair).")
    return (path,) + _from_qrels_like(path)


def _from_qrels_like(path):
    qk, dk, vals, lines = [], [], [], []
    for line, text in _read_lines(path):
        parts = text.split()
        if len(parts) != 4:
            raise ValueError(f"{path}: line {line}: a judge line must have 4 fields 'qid iter docid value'; got "
                             f"{len(parts)}: {text!r}.")
        qk.append(parts[0])
        dk.append(parts[2])
        vals.append(parts[3])
        lines.append(line)
    if not qk:
        raise ValueError(f"{path}: file is empty (no judge lines).")
    where = _Where(path, lines=lines)
    return qk, dk, _floats(vals, where), where


def _from_dict(source):
    qk, dk, vals = [], [], []
    for q, docs in source.items():
        if not hasattr(docs, "items"):
            raise TypeError(f"a judge dict maps query id -> {{doc id: value}}; query {_as_key(q)!r} maps to "
                            f"{type(docs).__name__}.")
        for d, v in docs.items():
            qk.append(_as_key(q))
            dk.append(_as_key(d))
            vals.append(v)
    if not qk:
        raise ValueError("the judge dict is empty.")
    where = _Where("dict", keys=(qk, dk))
    return qk, dk, _stack(vals, where), where


def _from_delimited(path, kind, columns, sep):
    import pandas as pd

    frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, skip_blank_lines=False)
    lines = np.arange(len(frame)) + 2  # line 1 is the header
    keep = ~(frame == "").all(axis=1).to_numpy()
    where = _Where(path, lines=lines[keep])
    return _from_table(frame[keep], kind, columns, path, where) + (where,)


def _from_jsonl(path, kind, columns):
    import pandas as pd

    records, lines = [], []
    for line, text in _read_lines(path):
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {line}: not valid JSON ({exc.msg}).") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{path}: line {line}: each line must be a JSON object; got {type(rec).__name__}.")
        records.append(rec)
        lines.append(line)
    if not records:
        raise ValueError(f"{path}: file is empty (no JSON lines).")
    where = _Where(path, lines=lines)
    return _from_table(pd.DataFrame.from_records(records), kind, columns, path, where) + (where,)


def _from_table(frame, kind, columns, label, where):
    cols = [str(c) for c in frame.columns]
    columns = dict(columns or {})
    unknown = set(columns) - {"query", "doc", "value"}
    if unknown:
        raise ValueError(f"`columns` takes the keys 'query', 'doc' and 'value'; got {sorted(unknown)}.")
    q = columns.get("query") or _pick(cols, _QUERY_COLUMNS, label, "query id")
    d = columns.get("doc") or _pick(cols, _DOC_COLUMNS, label, "document id")
    value = columns.get("value") or _value_columns(cols, kind, label)
    for c in [q, d] + (list(value) if isinstance(value, (list, tuple)) else [value]):
        if c not in cols:
            raise ValueError(f"{label}: no column {c!r} (columns: {', '.join(cols)}).")
    qk = [_as_key(v) for v in frame[q].tolist()]
    dk = [_as_key(v) for v in frame[d].tolist()]
    if isinstance(value, (list, tuple)):
        return qk, dk, _stack(frame[list(value)].to_numpy().tolist(), where)
    return qk, dk, _stack([_parse_cell(v, where, i) for i, v in enumerate(frame[value].tolist())], where)


def _pick(cols, names, label, what):
    for n in names:
        if n in cols:
            return n
    raise ValueError(f"{label}: no {what} column: name it one of {', '.join(names)} or pass `columns` (columns: "
                     f"{', '.join(cols)}).")


def _value_columns(cols, kind, label):
    for n in _VALUE_COLUMNS[kind]:
        if n in cols:
            return n
    for prefix in _PREFIX.get(kind, ()):
        found = []
        while f"{prefix}{len(found)}" in cols:
            found.append(f"{prefix}{len(found)}")
        if found:
            return found
    spelled = list(_VALUE_COLUMNS[kind]) + [f"{p}0, {p}1, ..." for p in _PREFIX.get(kind, ())]
    raise ValueError(f"{label}: no column with the judge's {kind.replace('_', ' ')}: name it {' or '.join(spelled)}, "
                     f"or pass `columns` (columns: {', '.join(cols)}).")


def _parse_cell(v, where, i):
    """A table cell: a number, or a list of numbers written as JSON in text."""
    if isinstance(v, str) and v.strip().startswith("["):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            raise ValueError(f"{where[i]}: {v!r} is not a list of numbers.") from None
    return v


def _floats(values, where) -> np.ndarray:
    """``values`` (scalars, or equal-length sequences) as float64; the first that is not a number is named."""
    try:
        if not any(isinstance(v, (bool, np.bool_)) for v in values):
            return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    for i, v in enumerate(values):
        for x in (v if isinstance(v, (list, tuple, np.ndarray)) else [v]):
            try:
                if isinstance(x, (bool, np.bool_)):
                    raise ValueError
                float(x)
            except (TypeError, ValueError):
                raise ValueError(f"{where[i]}: {x!r} is not a number.") from None
    raise ValueError(f"{where[0]}: the values are not numbers.")  # pragma: no cover - every value parsed above


def _stack(vals, where) -> np.ndarray:
    """Scalars to (n,), sequences of one length to (n, k)."""
    seq = [isinstance(v, (list, tuple, np.ndarray)) for v in vals]
    if not any(seq):
        return _floats(vals, where)
    if not all(seq):
        i = seq.index(False)
        raise ValueError(f"{where[i]}: expected a list of probabilities like the other rows; got {vals[i]!r}.")
    width = len(vals[0])
    for i, v in enumerate(vals):
        if len(v) != width:
            raise ValueError(f"{where[i]}: {len(v)} probabilities; the first row has {width}.")
    return _floats(vals, where).reshape(len(vals), width)


# --------------------------------------------------------------------------- checks


def _checked_values(vals: np.ndarray, kind: str, levels, label, where):
    if kind in ("grades", "scores"):
        if vals.ndim != 1:
            raise ValueError(f"{label}: kind={kind!r} takes one value per pair; got {vals.shape[1]} per row.")
        bad = np.flatnonzero(~np.isfinite(vals))
        if bad.size:
            raise ValueError(f"{where[bad[0]]}: {float(vals[bad[0]])!r} is not a finite {kind[:-1]} "
                             f"({bad.size} such rows).")
        if kind == "grades":
            bad = np.flatnonzero((vals != np.round(vals)) | (vals < 0) | (vals > levels - 1))
            if bad.size:
                raise ValueError(f"{where[bad[0]]}: grade {vals[bad[0]]:g} is not on the judge's declared scale "
                                 f"0..{levels - 1} (`levels`={levels}; {bad.size} such rows).")
        return vals, levels
    if vals.ndim != 2:
        raise ValueError(f"{label}: kind={kind!r} takes one (log-)probability per grade of the judge's scale.")
    if levels is not None and vals.shape[1] != levels:
        raise ValueError(f"{label}: {vals.shape[1]} probability columns, but `levels`={levels}.")
    if vals.shape[1] < 2:
        raise ValueError(f"{label}: at least 2 probability columns are needed; got {vals.shape[1]}.")
    if kind == "log_probabilities":
        bad = np.flatnonzero((np.isnan(vals) | (vals > 0) | (vals == np.inf)).any(axis=1))
        if bad.size:
            raise ValueError(f"{where[bad[0]]}: log-probabilities must be <= 0 (or -inf); got "
                             f"{vals[bad[0]].tolist()} ({bad.size} such rows).")
        vals = np.exp(vals)
    bad = np.flatnonzero((~np.isfinite(vals) | (vals < 0) | (vals > 1)).any(axis=1))
    if bad.size:
        raise ValueError(f"{where[bad[0]]}: probabilities must lie in [0, 1]; got {vals[bad[0]].tolist()} "
                         f"({bad.size} such rows).")
    total = vals.sum(axis=1)
    bad = np.flatnonzero(np.abs(total - 1.0) > SUM_TOLERANCE)
    if bad.size:
        raise ValueError(f"{where[bad[0]]}: probabilities sum to {total[bad[0]]:.6g}, not 1 ({bad.size} such rows; "
                         f"tolerance {SUM_TOLERANCE:g}).")
    return vals / total[:, None], vals.shape[1]


def _match(pool, qk, dk, label, where) -> np.ndarray:
    """Pool row of every record; every pair must be in the pool, once."""
    import pandas as pd

    offsets = np.asarray(pool.offsets, dtype=np.int64)
    qids = np.asarray([_as_key(q) for q in np.asarray(pool.query_ids).tolist()], dtype=object)
    doc_ids = getattr(pool, "doc_ids", None)
    n_docs = int(offsets[-1])
    docs = (np.arange(n_docs).astype(str) if doc_ids is None
            else np.asarray([_as_key(d) for d in np.asarray(doc_ids).tolist()], dtype=object))
    index = pd.MultiIndex.from_arrays([np.repeat(qids, np.diff(offsets)), docs])
    if not index.is_unique:
        row = int(np.flatnonzero(index.duplicated())[0])
        raise ValueError(f"the pool names document {docs[row]!r} twice in query "
                         f"{qids[np.searchsorted(offsets, row, side='right') - 1]!r}: judges are matched by id.")
    rows = index.get_indexer(pd.MultiIndex.from_arrays([np.asarray(qk, dtype=object), np.asarray(dk, dtype=object)]))
    bad = np.flatnonzero(rows < 0)
    if bad.size:
        sample = "; ".join(f"{where[i]} (query {qk[i]!r}, document {dk[i]!r})" for i in bad[:3])
        raise ValueError(f"{label}: {bad.size} of {len(qk)} rows name (query, document) pairs that are not in the "
                         f"pool, e.g. {sample}. Nothing was read: give the pool these documents or drop the rows.")
    order = np.argsort(rows, kind="stable")
    dup = np.flatnonzero(np.diff(rows[order]) == 0)
    if dup.size:
        i, j = order[dup[0]], order[dup[0] + 1]
        raise ValueError(f"{where[j]}: query {qk[j]!r}, document {dk[j]!r} is judged twice (first at "
                         f"{where[i].split(': ')[-1]}; {dup.size} duplicate rows).")
    return rows
