"""The LETOR / SVMlight parser behind :func:`activerank.io.letor.load_letor`.

A file is read in blocks of whole lines (about 16 MiB each).  In every block
numpy finds the data lines, their query ids and their ``docid`` comments (no
Python object per line); scikit-learn's SVMlight reader parses labels and
features *without* query ids (with them it grows its query-id array one line
at a time, which is quadratic in the file size).  The caller counts the data
lines first (:func:`count_data_lines`) and writes every block's features into
its rows of one dense array.  So time is linear in the file size and memory
stays near the dense result.  A block the fast path rejects is re-read line by
line to name the first bad line.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import numpy as np

from .limits import MAX_FEATURE_INDEX, MAX_GRADE

BLOCK = 1 << 24
_WS = np.zeros(256, dtype=bool)
_WS[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.split() splits on (sklearn splits lines with it)
_NOT_WS = ~_WS
_RUN = {True: re.compile(rb"[ \t\n\r\x0b\x0c]*"), False: re.compile(rb"[^ \t\n\r\x0b\x0c]*")}
_DOCID = re.compile(rb"docid[ \t\r\x0b\x0c]*=[ \t\r\x0b\x0c]*([^ \t\n\r\x0b\x0c]+)")
_STEPS = 24  # vectorized steps per run before the few longer runs are finished one by one


def blocks(f, size: int = BLOCK):
    """Yield ``(number of the first line, bytes)`` of consecutive blocks of whole lines of a binary file."""
    first, pieces = 1, []
    chunk = f.read(size)
    while chunk:
        after = f.read(size)
        cut = chunk.rfind(b"\n") + 1 if after else len(chunk)   # the last block takes an unterminated line
        if cut == 0:        # no line end yet: keep the pieces (joined once, not re-copied per chunk)
            pieces.append(chunk)
        else:
            pieces.append(chunk[:cut])
            block = b"".join(pieces)
            yield first, block
            first += block.count(b"\n")
            pieces = [chunk[cut:]] if cut < len(chunk) else []
        chunk = after
    if pieces:
        yield first, b"".join(pieces)


def _skip(block: bytes, buf: np.ndarray, pos: np.ndarray, end: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Advance every ``pos`` while ``pos < end`` and ``table[byte]``: vectorized over the (short) runs."""
    pos = pos.copy()
    active = np.flatnonzero(pos < end)
    for _ in range(_STEPS):
        active = active[table[buf[pos[active]]]]
        if active.size == 0:
            return pos
        pos[active] += 1
        active = active[pos[active] < end[active]]
    run = _RUN[table is _WS]
    for i in active.tolist():
        m = run.match(block, int(pos[i]), int(end[i]))  # a run pattern matches the empty string too
        pos[i] = m.end() if m is not None else pos[i]
    return pos


@dataclass
class Scan:
    """Data lines of a block: index of each in the block's lines, its ``qid:`` value span, its docid."""

    lines: np.ndarray
    qid_start: np.ndarray   # first byte after "qid:"; -1 where the second token is no qid: field
    qid_end: np.ndarray
    doc_ids: np.ndarray | None


def scan(block: bytes) -> Scan:
    """Find the data lines of a block as sklearn's reader sees them (text before ``#``, split on whitespace).

    Examples
    --------
    >>> block = b"# head\\n1 qid:12 1:0.5 # docid = d7\\n\\n  0 qid:-3 2:1\\n"
    >>> s = scan(block)
    >>> s.lines.tolist(), s.doc_ids.tolist(), qid_values(block, s)[0].tolist()
    ([1, 3], ['d7', ''], [12, -3])
    """
    buf = np.frombuffer(block, dtype=np.uint8)
    starts, content_end, first, lines = _classify(block, buf)
    cend = content_end[lines]
    label_end = _skip(block, buf, first[lines], cend, _NOT_WS)
    second = _skip(block, buf, label_end, cend, _WS)
    has_qid = second + 4 <= cend
    for i, ch in enumerate(b"qid:"):
        has_qid &= buf[np.minimum(second + i, buf.size - 1)] == ch
    qid_start = np.where(has_qid, second + 4, -1)
    qid_end = np.where(has_qid, _skip(block, buf, np.where(has_qid, second + 4, cend), cend, _NOT_WS), -1)
    return Scan(lines, qid_start, qid_end, _doc_ids(block, starts, content_end, lines))


def _classify(block: bytes, buf: np.ndarray):
    """Line starts, content ends (first ``#`` or line end), first non-blank byte, and the data lines."""
    ends = np.flatnonzero(buf == 10)
    if ends.size == 0 or ends[-1] != buf.size - 1:
        ends = np.append(ends, buf.size)
    starts = np.r_[0, ends[:-1] + 1]
    hashes = np.append(np.flatnonzero(buf == 35), buf.size)
    content_end = np.minimum(hashes[np.searchsorted(hashes, starts)], ends)   # sklearn cuts at the first '#'
    first = _skip(block, buf, starts, content_end, _WS)
    return starts, content_end, first, np.flatnonzero(first < content_end)


def count_data_lines(block: bytes) -> int:
    """Number of data lines in a block (as :func:`scan` finds them).

    Examples
    --------
    >>> count_data_lines(b"# head\\n1 qid:1 1:2\\n\\n \\t\\n0 qid:1 2:1")
    2
    """
    return int(_classify(block, np.frombuffer(block, dtype=np.uint8))[3].size)


def _doc_ids(block: bytes, starts, content_end, lines) -> np.ndarray | None:
    """The first ``docid = ID`` after the ``#`` of every data line (``""`` if none; None if no line has one)."""
    if b"docid" not in block:
        return None
    found, ids = [], []
    for m in _DOCID.finditer(block):
        found.append(m.start())
        ids.append(m.group(1))
    if not found:
        return None
    at = np.asarray(found, dtype=np.int64)
    line = np.searchsorted(starts, at, side="right") - 1
    row = np.searchsorted(lines, line)
    ok = (at >= content_end[line]) & (row < lines.size)
    ok[ok] &= lines[row[ok]] == line[ok]
    hit = np.flatnonzero(ok)
    if hit.size == 0:
        return None
    rows, first = np.unique(row[hit], return_index=True)
    out = np.full(lines.size, "", dtype=object)
    # ids hold no newline: one decode of the joined ids equals decoding each
    text = b"\n".join([ids[i] for i in hit[first].tolist()]).decode("utf-8", "replace")
    out[rows] = np.array(text.split("\n"), dtype=object)
    return out


def qid_values(block: bytes, s: Scan):
    """``(int64 query id of every data line, None)``, or ``(None, index of the first line whose id is bad)``."""
    buf = np.frombuffer(block, dtype=np.uint8)
    start, end = s.qid_start, s.qid_end
    n = end - start
    head = buf[np.clip(start, 0, max(buf.size - 1, 0))] if buf.size else np.zeros(start.size, np.uint8)
    neg = (n > 0) & (head == 45)
    signed = neg | ((n > 0) & (head == 43))
    digits = n - signed
    ok = (digits >= 1) & (digits <= 18)   # 18 digits never overflow int64
    value = np.zeros(start.size, dtype=np.int64)
    for j in range(int(digits[ok].max()) if ok.any() else 0):
        m = np.flatnonzero(ok & (j < digits))
        d = buf[start[m] + signed[m] + j].astype(np.int64) - 48
        good = (d >= 0) & (d <= 9)
        ok[m[~good]] = False
        value[m] = value[m] * 10 + d
    value = np.where(neg, -value, value)
    for i in np.flatnonzero(~ok & (start >= 0)).tolist():   # other spellings int() accepts (rare)
        try:
            v = int(block[start[i]:end[i]])
        except ValueError:
            return None, i
        if not -2**63 <= v < 2**63:
            return None, i
        value[i] = v
    return value, None


def data_lines(raw: bytes, first_line: int = 1):
    """``(line number, content before any comment)`` of data lines (as :func:`scan` finds them)."""
    for i, line in enumerate(raw.split(b"\n"), start=first_line):
        s = line.strip()
        if s and not s.startswith(b"#"):
            yield i, s.split(b"#", 1)[0]


def label_text(raw: bytes, line: int) -> str:
    """The label as written on the ``line``-th line of ``raw`` (not a float64 that may have rounded it)."""
    tokens = raw.split(b"\n")[line - 1].split()
    text = tokens[0].decode("utf-8", "replace") if tokens else ""
    return text if len(text) <= 40 else text[:37] + "..."


def _token(b: bytes) -> str:
    t = b.decode("utf-8", "replace")
    return repr(t if len(t) <= 40 else t[:37] + "...")


def first_bad_line(raw: bytes, first_line: int = 1) -> str | None:
    """``"line N: what is wrong"`` for the first malformed data line of ``raw``, or None.

    Only called when the fast path failed: a line-by-line check that names
    the line, which the fast parser's messages do not.
    """
    for i, s in data_lines(raw, first_line):
        problem = _line_problem(s)
        if problem is not None:
            return f"line {i}: {problem}"
    return None


def _line_problem(s: bytes) -> str | None:
    if b"\x00" in s:
        return "binary data (a NUL byte); not a LETOR/SVMlight text file"
    try:
        s.decode("utf-8")
    except UnicodeDecodeError:
        return "not valid UTF-8 text (binary data?); not a LETOR/SVMlight text file"
    tokens = s.split()
    try:
        float(tokens[0])
    except ValueError:
        return f"label {_token(tokens[0])} is not a number"
    rest = tokens[1:]
    if rest and rest[0].startswith(b"qid:"):
        try:
            q = int(rest[0][4:])
        except ValueError:
            return f"query id {_token(rest[0])} is not an integer"
        if not -2**63 <= q < 2**63:
            return f"query id {_token(rest[0])} does not fit a 64-bit integer"
        rest = rest[1:]
    return _features_problem(rest)


def _features_problem(tokens) -> str | None:
    prev = 0
    for tok in tokens:
        idx, sep, val = tok.partition(b":")
        if not sep:
            return f"{_token(tok)} is not an 'index:value' feature"
        try:
            j = int(idx)
        except ValueError:
            return f"feature index {_token(idx)} is not an integer"
        if j < 1:
            return f"feature index {j} is invalid (LETOR/SVMlight feature indices are 1-based and positive)"
        if j == prev:
            return f"feature index {j} appears twice"
        if j < prev:
            return f"feature index {j} follows {prev} (indices must increase along a line)"
        prev = j
        try:
            float(val)
        except ValueError:
            return f"feature {j} has value {_token(val)}, not a number"
    return None


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.1f} MiB"


def _row_max_index(Xs) -> np.ndarray:
    """Largest 0-based feature index of every row of a CSR matrix with sorted indices (-1 if empty)."""
    row_max = np.full(Xs.shape[0], -1, dtype=np.int64)
    nonempty = np.diff(Xs.indptr) > 0
    row_max[nonempty] = Xs.indices[Xs.indptr[1:][nonempty] - 1]
    return row_max


@dataclass
class Part:
    """One block's data lines: file line numbers, query ids, labels (float), doc ids, features (CSR)."""

    line_no: np.ndarray
    qids: np.ndarray
    y: np.ndarray
    doc_ids: np.ndarray | None
    features: object


def read_block(block: bytes, first_line: int, path: str, *, n_features, n_grades, labeled,
               n_rows: int) -> Part | None:
    """Parse and check one block of whole lines starting at file line ``first_line`` (None if it has no data).

    ``n_features``, ``n_grades`` and ``labeled`` as in ``load_letor``;
    ``n_rows``: the file's data lines (for one message).  Errors
    name ``path`` and the file line, in this order within a block: unparsable
    line, missing or bad query id, non-finite value, feature index too large,
    label not an integer grade or outside the scale.
    """
    from sklearn.datasets import load_svmlight_file

    s = scan(block)
    if s.lines.size == 0:
        return None
    line_no = first_line + s.lines

    def bad_line(fallback):
        problem = first_bad_line(block, first_line)
        return ValueError(f"{path}: {problem}." if problem is not None else fallback)

    try:
        Xs, y = load_svmlight_file(io.BytesIO(block), dtype=np.float64, zero_based=False)
    except (ValueError, OverflowError) as exc:
        raise bad_line(f"{path}: could not parse as SVMlight/LETOR: {exc}") from None
    if Xs.shape[0] != s.lines.size:  # pragma: no cover - the scan mirrors sklearn's line filter
        raise bad_line(f"{path}: parsed {Xs.shape[0]} rows but found {s.lines.size} data lines.")
    missing = np.flatnonzero(s.qid_start < 0)
    if missing.size:
        raise ValueError(f"{path}: line {line_no[missing[0]]} has no 'qid:' field.")
    qids, bad = qid_values(block, s)
    if bad is not None:
        raise bad_line(f"{path}: line {line_no[bad]}: query id is not a 64-bit integer.")
    _check_features(Xs, line_no, path, n_features, n_rows)
    if labeled:
        _check_labels(y, line_no, path, n_grades, lambda r: label_text(block, int(line_no[r]) - first_line + 1))
    return Part(line_no, qids, y, s.doc_ids, Xs)


def _check_features(Xs, line_no, path, n_features, n):
    Xs.sort_indices()
    bad = np.flatnonzero(~np.isfinite(Xs.data))
    if bad.size:
        k = int(bad[0])
        r = int(np.searchsorted(Xs.indptr, k, side="right") - 1)
        raise ValueError(
            f"{path}: line {line_no[r]}: feature {Xs.indices[k] + 1} is {float(Xs.data[k])}; feature values "
            "must be finite numbers."
        )
    if n_features is None and Xs.shape[1] > MAX_FEATURE_INDEX:
        row_max = _row_max_index(Xs)
        r = int(np.flatnonzero(row_max >= MAX_FEATURE_INDEX)[0])
        raise ValueError(
            f"{path}: line {line_no[r]}: feature index {row_max[r] + 1} is above "
            f"{MAX_FEATURE_INDEX}, the largest read without `n_features` (features are stored dense: "
            f"{n} x {Xs.shape[1]} values would need {_size(n * Xs.shape[1] * 8)}); pass n_features= "
            "if the file really has that many features."
        )
    if n_features is not None and Xs.shape[1] > n_features:
        row_max = _row_max_index(Xs)
        r = int(np.flatnonzero(row_max >= n_features)[0])
        raise ValueError(
            f"{path}: line {line_no[r]} has feature index {row_max[r] + 1}, but "
            f"n_features={n_features} (feature count mismatch)."
        )


def _check_labels(y, line_no, path, n_grades, text_of):
    """Labels are integer grades in ``0..n_grades - 1`` (``0..MAX_GRADE`` without ``n_grades``); checked in
    float64, before a cast to int64 could overflow; ``text_of(r)`` is row ``r``'s label as written."""
    bad = np.flatnonzero(~np.isfinite(y) | (y != np.round(y)))
    if bad.size:
        r = int(bad[0])
        raise ValueError(f"{path}: line {line_no[r]}: label {text_of(r)} is not an integer grade.")
    top = MAX_GRADE if n_grades is None else n_grades - 1
    bad = np.flatnonzero((y < 0) | (y > top))
    if bad.size:
        r = int(bad[0])
        if n_grades is None and y[r] > top:
            raise ValueError(
                f"{path}: line {line_no[r]}: label {text_of(r)} is above {MAX_GRADE}, the largest supported "
                f"grade (labels are relevance grades 0, 1, 2, ...; gains are 2**grade - 1)."
            )
        scale = "" if n_grades is None else f" (n_grades={n_grades})"
        raise ValueError(f"{path}: line {line_no[r]}: label {text_of(r)} is outside the grade scale "
                         f"0..{top}{scale}.")
