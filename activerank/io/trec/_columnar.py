"""The columnar reader of TREC run files: numpy over the file's bytes.

:func:`read_columns` is what :func:`activerank.io.trec.read_runs` tries first;
it raises :class:`_Fallback` for any input it cannot vouch for, and the
line-by-line reader (:mod:`.runs`) then gives the result or the error naming
file and line.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ...ragged import Rankings, offsets_from_lengths

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


def read_columns(paths, multiple_tags: str, queries: str) -> tuple:
    """``(pool, rankings, scores)`` of run files, as :class:`~activerank.io.trec.TrecRuns` holds them."""
    from ...pool import Pool

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
    return pool, rankings, scores
