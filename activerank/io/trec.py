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
    ignored, usually ``0``).  Grades are integers ``0 .. ymax`` with ``ymax``
    at most :data:`activerank.io.limits.MAX_GRADE` (100).
Rankings from a mapping
    :func:`rankings_from_dict` turns ``{query id: [doc ids, best first]}`` into
    :class:`~activerank.ragged.Rankings` over a pool.

Query and document ids are kept as strings.  Every parse error is a
``ValueError`` naming the file and the 1-based line.  A UTF-8 byte-order mark
and CRLF line ends are accepted.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..ragged import Rankings, offsets_from_lengths
from .limits import MAX_GRADE, MAX_N_GRADES

__all__ = [
    "TrecRuns",
    "Qrels",
    "read_runs",
    "read_qrels",
    "write_qrels",
    "write_run",
    "run_rankings_for_pool",
    "rankings_from_dict",
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
    from ..pool import Pool

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


# --------------------------------------------------------------------------- columnar run reader
#
# read_runs parses with numpy over the file's bytes (no Python object per line): find the
# tokens, check six per line, cut the columns out as fixed-width byte strings, factorize ids by
# a verified 64-bit hash, parse scores exactly as float() does.  Anything it cannot vouch for
# (a malformed line, a duplicate, non-ASCII whitespace, a rank or score in an unusual spelling)
# sends the whole call to the line-by-line reader, which produces the documented result or the
# error naming file and line.  Both readers give identical results (tests/io/test_trec.py).

# str.split() whitespace within ASCII; "\n" also ends a line
_ASCII_WS = np.zeros(256, dtype=bool)
_ASCII_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_UNICODE_WS = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[48:58] = True
_POW10 = 10.0 ** np.arange(23)


class _Fallback(Exception):
    """The columnar reader cannot vouch for this input: use the line-by-line reader."""


_SPARE = 256  # zero bytes after the file's content: token windows never run past the buffer
_BLOCK = 1 << 22  # bytes scanned at a time (bounds the temporaries of a whole-file scan)


def _file_bytes(path) -> tuple[np.ndarray, int]:
    """``(buffer, n)``: the file's ``n`` bytes (BOM removed) followed by at least ``_SPARE`` zero bytes."""
    with open(os.fspath(path), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        buf = np.zeros(size + _SPARE, dtype=np.uint8)
        n = f.readinto(memoryview(buf)[:size])
        if f.read(1):  # grew while being read
            raise _Fallback
    a = buf[:n]
    if a[:2].tobytes() in (b"\xff\xfe", b"\xfe\xff"):
        raise _Fallback  # UTF-16: the line reader names it
    if a[:3].tobytes() == b"\xef\xbb\xbf":
        a = a[3:]
    if any((a[i:i + _BLOCK] == 0).any() for i in range(0, a.size, _BLOCK)):
        raise _Fallback
    if any((a[i:i + _BLOCK] >= 0x80).any() for i in range(0, a.size, _BLOCK)):
        try:
            text = a.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            raise _Fallback from None
        if _UNICODE_WS.search(text):
            raise _Fallback
        del text
    return buf[buf.size - _SPARE - a.size:], a.size


def _tokens(a: np.ndarray, n_fields: int):
    """Start and end offsets, shape (n_lines, n_fields), of the tokens of every non-blank line."""
    if a.size == 0:
        raise _Fallback
    index = np.int32 if a.size < 2**31 - _SPARE else np.int64
    starts, ends, newlines = [], [], []
    prev = False                     # is the byte before the block a token byte?
    for b0 in range(0, a.size, _BLOCK):
        block = a[b0:b0 + _BLOCK]
        nonws = ~_ASCII_WS[block]
        edge = np.empty(block.size, dtype=np.int8)
        edge[0] = int(nonws[0]) - int(prev)
        np.subtract(nonws[1:], nonws[:-1], out=edge[1:], dtype=np.int8)
        starts.append((np.flatnonzero(edge == 1) + b0).astype(index))
        ends.append((np.flatnonzero(edge == -1) + b0).astype(index))
        newlines.append((np.flatnonzero(block == 10) + b0).astype(index))
        prev = bool(nonws[-1])
    if prev:
        ends.append(np.array([a.size], dtype=index))
    starts, ends, newlines = np.concatenate(starts), np.concatenate(ends), np.concatenate(newlines)
    if starts.size == 0:
        raise _Fallback
    per_line = np.diff(np.searchsorted(starts, newlines), prepend=0, append=starts.size)
    if np.any((per_line != 0) & (per_line != n_fields)):
        raise _Fallback
    return starts.reshape(-1, n_fields), ends.reshape(-1, n_fields)


def _column(a: np.ndarray, starts: np.ndarray, ends: np.ndarray, multiple: int = 1) -> np.ndarray:
    """Tokens as an (n, width) uint8 matrix, zero-padded to a multiple of ``multiple`` bytes
    (``a`` ends with ``_SPARE`` zero bytes, so every window lies inside the buffer)."""
    lengths = ends - starts
    width = -(-int(lengths.max()) // multiple) * multiple
    if width > _SPARE:
        raise _Fallback
    windows = np.lib.stride_tricks.sliding_window_view(a, width)
    out = windows[starts]
    np.multiply(out, np.arange(width, dtype=np.int32) < lengths[:, None].astype(np.int32), out=out)
    return out


def _factorize(values: np.ndarray):
    """Codes in order of first appearance, and the index of each code's first value."""
    import pandas as pd

    codes, uniques = pd.factorize(values)
    running = np.maximum.accumulate(codes)
    first = np.flatnonzero(np.diff(running, prepend=-1) > 0)
    return codes.astype(np.int64, copy=False), first


def _hash_codes(mat: np.ndarray):
    """Factorize byte-string tokens (width a multiple of 8) by a 64-bit hash of their 8-byte words,
    verified against the tokens: (codes in order of first appearance, first index per code)."""
    words = mat.view("<u8")
    h = np.zeros(mat.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h ^= words[:, j]
            h *= np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(31)
    codes, first = _factorize(h)
    if not np.array_equal(words, words[first[codes]]):  # a hash collision merged distinct tokens
        raise _Fallback
    return codes, first


def _check_ranks(mat: np.ndarray) -> None:
    """Ranks spelled ``[+-]?[0-9]{1,17}`` are integers for int(); other spellings go the slow way."""
    if mat.shape[1] > 18:
        raise _Fallback
    length = np.count_nonzero(mat, axis=1)
    signed = (mat[:, 0] == 43) | (mat[:, 0] == 45)
    pos = np.arange(mat.shape[1])
    must_be_digit = (pos < length[:, None]) & ~((pos == 0) & signed[:, None])
    if not (np.all(_DIGIT[mat] | ~must_be_digit) and np.all(length > signed)):
        raise _Fallback


def _parse_floats(mat: np.ndarray) -> np.ndarray:
    """float() of every token, vectorized where it is provably exact.

    Tokens ``[+-]?digits[.digits]`` with at most 15 significant digits are
    ``m * 10**-e`` with ``m < 2**53`` and ``e <= 22``: one correctly rounded
    division of two exact doubles, which is what float() returns (Clinger's
    fast path).  Other tokens are converted by float() itself.
    """
    n, width = mat.shape
    sign = np.where(mat[:, 0] == 45, -1.0, 1.0)
    start = ((mat[:, 0] == 45) | (mat[:, 0] == 43)).astype(np.int64)
    m = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)   # significant digits so far (leading zeros skipped)
    frac = np.zeros(n, dtype=np.int64)     # digits after the point
    dots = np.zeros(n, dtype=np.int64)
    ok = np.ones(n, dtype=bool)
    for j in range(width):
        c = mat[:, j]
        active = (j >= start) & (c != 0)
        is_digit = _DIGIT[c] & active
        is_dot = (c == 46) & active
        ok &= ~active | is_digit | is_dot
        dots += is_dot
        d = c.astype(np.int64) - 48
        m = np.where(is_digit, m * 10 + d, m)
        digits += is_digit & ((m > 0) | (digits > 0))
        frac += is_digit & (dots > 0)
    length = np.count_nonzero(mat, axis=1)
    ok &= (dots <= 1) & (digits <= 15) & (frac <= 22) & (length > start)
    ok &= (length - start - dots) > 0       # at least one digit
    out = np.empty(n, dtype=np.float64)
    out[ok] = sign[ok] * (m[ok].astype(np.float64) / _POW10[frac[ok]])
    rest = np.flatnonzero(~ok)
    if rest.size:
        try:
            out[rest] = mat[rest].view(f"S{width}").ravel().astype(np.float64)
        except ValueError:
            raise _Fallback from None
    return out


def _run_columns(path):
    """(qid, docid, tag) token matrices and scores of one run file; ranks checked."""
    padded, n = _file_bytes(path)
    starts, ends = _tokens(padded[:n], 6)
    _check_ranks(_column(padded, starts[:, 3], ends[:, 3]))
    score = _parse_floats(_column(padded, starts[:, 4], ends[:, 4]))
    if not np.all(np.isfinite(score)):
        raise _Fallback
    return (_column(padded, starts[:, 0], ends[:, 0], 8), _column(padded, starts[:, 2], ends[:, 2], 8),
            _column(padded, starts[:, 5], ends[:, 5], 8), score)


def _stack(mats) -> np.ndarray:
    width = max(m.shape[1] for m in mats)
    return np.concatenate([np.pad(m, ((0, 0), (0, width - m.shape[1]))) for m in mats])


def _decode(mat: np.ndarray) -> np.ndarray:
    """Rows of a token matrix as an object array of str (one decode of the joined tokens)."""
    out = np.empty(mat.shape[0], dtype=object)
    step = max(1, _BLOCK // (mat.shape[1] + 1))
    for i in range(0, mat.shape[0], step):   # in blocks: bounded temporaries
        flat = np.concatenate([mat[i:i + step], np.full((min(step, mat.shape[0] - i), 1), 10, np.uint8)],
                              axis=1).ravel()
        text = flat[flat != 0].tobytes().decode("utf-8")    # tokens hold neither NUL nor newline
        out[i:i + step] = text.split("\n")[:-1]
    return out


def _desc_bytes_order(mat: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Order by ``group`` ascending, then by the byte strings descending (= str order descending);
    ``mat`` has a width that is a multiple of 8 (big-endian words compare as the bytes do)."""
    words = np.ascontiguousarray(mat).view(">u8")
    keys = [~words[:, j] for j in range(words.shape[1] - 1, -1, -1)] + [group]
    return np.lexsort(keys)


def _ranking_order(lq, score, dcode, dmat_first):
    """Order of one run's lines: query, score descending, ties by document id descending (trec_eval)."""
    if lq.size and np.all((lq[1:] > lq[:-1]) | ((lq[1:] == lq[:-1]) & (score[1:] <= score[:-1]))):
        order = np.arange(lq.size)          # the usual run file: already by query, score descending
    else:
        order = np.lexsort((-score, lq))
    s, g = score[order], lq[order]
    tied = np.r_[False, (s[1:] == s[:-1]) & (g[1:] == g[:-1])]
    if tied.any():
        first = ~tied & np.r_[tied[1:], False]          # first entry of each tie group
        group = np.cumsum(first)
        members = np.flatnonzero(tied | first)
        sub = _desc_bytes_order(dmat_first[dcode[order[members]]], group[members])
        order[members] = order[members][sub]
    return order


def _read_runs_columnar(paths, multiple_tags: str, queries: str) -> TrecRuns:
    from ..pool import Pool

    cols = [_run_columns(p) for p in paths]
    sizes = [c[3].size for c in cols]
    qmat = _stack([c[0] for c in cols])
    q, q_first = _hash_codes(qmat)
    dmat = _stack([c[1] for c in cols])
    d, d_first = _hash_codes(dmat)
    tmat = _stack([c[2] for c in cols])
    t, t_first = _hash_codes(tmat)
    score = np.concatenate([c[3] for c in cols])
    del cols
    n_q, n_d, n_t, n_f = int(q_first.size), int(d_first.size), int(t_first.size), len(sizes)
    if n_t * n_q * n_d >= 2**62:
        raise _Fallback
    # a tag in two files, several tags under multiple_tags="error", a document twice in one run:
    # errors the line reader reports with their file and line
    bounds = offsets_from_lengths(sizes)
    tags_in_file = np.array([np.bincount(t[bounds[f]:bounds[f + 1]], minlength=n_t) > 0 for f in range(n_f)])
    if np.any(tags_in_file.sum(axis=0) > 1):
        raise _Fallback
    if multiple_tags == "error" and np.any(tags_in_file.sum(axis=1) > 1):
        raise _Fallback
    pair = q * n_d + d
    key = np.sort(t * (n_q * n_d) + pair)
    if np.any(key[1:] == key[:-1]):
        raise _Fallback
    del key

    # queries: runs in order of first appearance, each run's queries in order of first appearance
    tq_codes, tq_first = _factorize(t * n_q + q)
    tq = (t * n_q + q)[tq_first]                                # in order of first appearance
    seq = (tq % n_q)[np.argsort(tq // n_q, kind="stable")]
    qorder = seq[_factorize(seq)[1]]
    if queries == "intersection":
        qorder = qorder[np.bincount(tq % n_q, minlength=n_q)[qorder] == n_t]
        if qorder.size == 0:
            raise _Fallback
    qpos = np.full(n_q, -1, dtype=np.int64)
    qpos[qorder] = np.arange(qorder.size)
    lq = qpos[q]
    kept = np.flatnonzero(lq >= 0)

    # pool documents: per query, runs in order, each run's documents in file order
    order = kept[np.lexsort((t[kept], lq[kept]))]               # stable: file order within
    codes, first = _factorize(pair[order])
    pool_pairs = pair[order][first]
    row = np.full(pair.size, -1, dtype=np.int64)
    row[order] = codes
    lengths = np.bincount(qpos[pool_pairs // n_d], minlength=qorder.size)
    del pair, order, codes, first
    dmat_first = dmat[d_first]
    del dmat
    pool = Pool(_decode(qmat[q_first[qorder]]), offsets_from_lengths(lengths),
                _decode(dmat_first)[pool_pairs % n_d])

    rankings, scores = {}, {}
    by_tag = kept[np.argsort(t[kept], kind="stable")]          # one pass for all tags, not one per tag
    tag_bounds = np.searchsorted(t[by_tag], np.arange(n_t + 1))
    for k, tag in enumerate(_decode(tmat[t_first]).tolist()):
        lines = by_tag[tag_bounds[k]:tag_bounds[k + 1]]
        o = lines[_ranking_order(lq[lines], score[lines], d[lines], dmat_first)]
        rankings[tag] = Rankings(row[o], offsets_from_lengths(np.bincount(lq[o], minlength=qorder.size)))
        s = np.full(pool_pairs.size, -np.inf)
        s[row[o]] = score[o]
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
    n_grades : int or None
        The grade scale the file was read on (``read_qrels(n_grades=...)``);
        its :meth:`labeler` declares it, so probabilities on another scale are
        refused.
    """

    judgments: dict
    path: str | None = None
    lines: dict | None = None
    n_grades: int | None = None

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

        label.n_grades = self.n_grades
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
        out-of-scale grade (above ``n_grades - 1``, or above
        :data:`activerank.io.limits.MAX_GRADE`), or a pair judged twice with
        different grades.

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
    if n_grades is not None and n_grades > MAX_N_GRADES:
        raise ValueError(f"`n_grades` must be at most {MAX_N_GRADES} (grades 0..{MAX_GRADE}); got {n_grades}.")
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
        if len(grade_text.lstrip("+-").lstrip("0")) > 18 and grade_text.lstrip("+-").isdigit():
            shown = grade_text if len(grade_text) <= 40 else grade_text[:37] + "..."
            raise ValueError(f"{path}: line {line}: grade {shown} is outside the supported grade scale "
                             f"0..{MAX_GRADE}.")
        grade = _int_field(grade_text, path, line, "grade")
        if grade > MAX_GRADE:
            raise ValueError(
                f"{path}: line {line}: grade {grade} is above {MAX_GRADE}, the largest supported grade "
                "(grades are 0, 1, 2, ...; gains are 2**grade - 1)."
            )
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
    return Qrels(judgments=judgments, path=path, lines=lines, n_grades=None if n_grades is None else int(n_grades))


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
