"""Input validation (``*_iv``): each helper validates *and* standardizes one input.

This is the one place where user input is checked.  Every public entry point
(the functions of :mod:`activerank.api`, the campaign store, the kernels'
public wrappers) calls these helpers once, at its boundary; everything behind
the boundary trusts its inputs.  Every error names the parameter, the rule
and the first offending item, so a user can find the bad row in a pool of a
million queries.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from .ragged import Rankings, listed_once, offsets_from_lengths, rank_rows_by_scores, segment_argsort, segment_ids

PROB_ROW_TOL = 1e-6


def py_scalar(value):
    """Plain Python scalar for messages and dict keys (numpy scalars repr as ``np.int64(...)``)."""
    return value.item() if isinstance(value, np.generic) else value


# --------------------------------------------------------------------------- numbers


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive_real_iv(value, name: str) -> float:
    """A finite number > 0 (TypeError for non-numbers, ValueError otherwise)."""
    if not _is_real(value):
        raise TypeError(f"`{name}` must be a positive number, got {value!r}.")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")
    return float(value)


def budget_iv(budget) -> float:
    """The labeling budget: a positive finite number (in mean-query-cost units)."""
    return positive_real_iv(budget, "budget")


def budget_unit_iv(unit) -> str:
    """What the budget counts: ``"queries"`` (mean query costs), ``"cost"`` (the cost model's unit) or
    ``"documents"`` (judgments)."""
    units = ("queries", "cost", "documents")
    if not isinstance(unit, str) or unit not in units:
        raise ValueError(f"`budget_unit` must be one of {units}; got {unit!r}.")
    return unit


def int_iv(value, name: str, minimum: int) -> int:
    if not (isinstance(value, numbers.Integral) and not isinstance(value, bool)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def confidence_level_iv(confidence_level) -> float:
    if not _is_real(confidence_level) or not 0 < confidence_level < 1:
        raise ValueError(f"`confidence_level` must lie in (0, 1), got {confidence_level!r}.")
    return float(confidence_level)


def defensive_iv(defensive) -> float:
    if not _is_real(defensive):
        raise TypeError(f"`defensive` must be a number in [0, 1], got {defensive!r}.")
    if not 0.0 <= defensive <= 1.0:
        raise ValueError(f"`defensive` must lie in [0, 1], got {defensive}.")
    return float(defensive)


def max_draws_iv(max_draws, n_queries: int) -> int:
    if max_draws is None:
        return 100 * n_queries
    if not (isinstance(max_draws, numbers.Integral) and not isinstance(max_draws, bool)) or max_draws < 1:
        raise ValueError(f"`max_draws` must be a positive integer; got {max_draws!r}.")
    return int(max_draws)


# --------------------------------------------------------------------------- randomness


def rng_iv(rng, *, name: str = "rng") -> np.random.Generator:
    """``None``, a non-negative integer seed, a SeedSequence or a Generator -> Generator."""
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"`{name}` must be a non-negative integer seed, None or a numpy Generator; got {rng!r}.")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"`{name}` must be None, a non-negative integer seed or a numpy.random.Generator; got {rng!r}."
    )


def seed_iv(seed, *, name: str = "seed") -> int:
    """A seed that is stored to reproduce draws: a non-negative integer (None picks one)."""
    if seed is None:
        import secrets

        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise TypeError(
            f"`{name}` must be a non-negative integer (it is stored to reproduce the draws), got {seed!r}."
        )
    return int(seed)


# --------------------------------------------------------------------------- distributions


def query_weights_iv(query_weights, n_queries: int) -> np.ndarray:
    """Validate the target distribution ``p(x)`` over the pool (default uniform)."""
    if query_weights is None:
        return np.full(n_queries, 1.0 / n_queries)
    w = _float_array(query_weights, "query_weights").reshape(-1)
    if w.size != n_queries:
        raise ValueError(f"`query_weights` must have one entry per query ({n_queries}); got {w.size}.")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`query_weights` must be finite and >= 0; query {i} has {w[i]!r}.")
    if w.sum() <= 0:
        raise ValueError("`query_weights` must have a positive sum.")
    return w / w.sum()


def distribution_iv(q, costs):
    """Validate a sampling distribution and per-query costs of one pool."""
    q = _float_array(q, "q").reshape(-1)
    costs = _float_array(costs, "costs").reshape(-1)
    if q.size == 0:
        raise ValueError("`q` must not be empty.")
    if costs.size != q.size:
        raise ValueError(f"`costs` must have one entry per query ({q.size}); got {costs.size}.")
    bad = np.flatnonzero(~np.isfinite(q) | (q < 0))
    if bad.size:
        raise ValueError(f"`q` must be finite and >= 0; query {bad[0]} has {q[bad[0]].item()!r}.")
    if not q.sum() > 0:
        raise ValueError("`q` must have a positive sum.")
    # zero is allowed: a query whose documents are all judged already costs nothing
    bad = np.flatnonzero(~np.isfinite(costs) | (costs < 0))
    if bad.size:
        raise ValueError(f"`costs` must be finite and >= 0; query {bad[0]} has {costs[bad[0]].item()!r}.")
    return q, costs


def affordable_budget_iv(budget, costs: np.ndarray, q: np.ndarray) -> float:
    """A budget that buys at least the cheapest reachable query."""
    budget = budget_iv(budget)
    cheapest = float(costs[q > 0].min())
    if budget < cheapest:
        raise ValueError(
            f"`budget`={budget:g} is below the cheapest query's cost ({cheapest:.4g} in units of the "
            "mean query cost); no query could be labeled."
        )
    return budget


def sample_budget_iv(budget, costs: np.ndarray, scores: np.ndarray) -> float:
    """A budget for one sample without replacement: it must afford the two cheapest reachable queries
    (a standard error needs two), checked before anything is labeled."""
    budget = affordable_budget_iv(budget, costs, scores)
    reachable = np.sort(costs[scores > 0])
    if reachable.size >= 2 and budget < reachable[0] + reachable[1]:
        raise ValueError(
            f"`budget`={budget:g} is below the cost of the two cheapest queries ({reachable[0] + reachable[1]:.4g} "
            "in units of the mean query cost); a sample without replacement needs at least 2 queries for a "
            "standard error.")
    return budget


def _float_array(values, name: str) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"`{name}` must be numeric, got a string.")
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be numeric: {exc}") from None


def doc_costs_iv(values, n_docs: int, name: str = "costs", *, allow_zero: bool = False) -> np.ndarray:
    """Per-document costs (or lengths): one finite number per document, > 0 (>= 0 with ``allow_zero``)."""
    arr = _float_array(values, name).reshape(-1)
    if arr.size != n_docs:
        raise ValueError(f"`{name}` must have one entry per document ({n_docs}); got {arr.size}.")
    bad = ~np.isfinite(arr) | ((arr < 0) if allow_zero else (arr <= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        rule = "finite and >= 0" if allow_zero else "finite and > 0"
        raise ValueError(f"`{name}` must be {rule}; document row {i} has {arr[i].item()!r}.")
    return arr


# --------------------------------------------------------------------------- probabilities


def probs_iv(probs, *, name: str = "probs", n_rows: int | None = None) -> np.ndarray:
    """Validate an (n_items, n_grades) matrix of label distributions."""
    if isinstance(probs, (str, bytes)) or probs is None:
        raise TypeError(f"`{name}` must be a 2-d array of probabilities, got {type(probs).__name__}.")
    arr = _float_array(probs, name)
    if arr.ndim != 2:
        raise ValueError(
            f"`{name}` must have shape (n_items, n_grades); got an array with {arr.ndim} dimension(s)."
        )
    if arr.shape[1] < 2:
        raise ValueError(f"`{name}` must have at least 2 grade columns; got shape {arr.shape}.")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"`{name}` has {arr.shape[0]} rows but the pool has {n_rows} documents.")
    arr = np.ascontiguousarray(arr)
    if _rows_are_distributions(arr):
        return arr
    # The full diagnosis only runs for invalid input and reports the first rule broken.
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argwhere(bad)[0, 0])
        raise ValueError(f"`{name}` must be finite; row {row} contains NaN or inf.")
    if (arr < 0).any():
        row = int(np.argwhere(arr < 0)[0, 0])
        raise ValueError(f"`{name}` must be non-negative; row {row} has a negative probability.")
    sums = arr.sum(axis=1)
    off = np.abs(sums - 1.0) > PROB_ROW_TOL
    if off.any():
        row = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"`{name}` rows must sum to 1 (tolerance {PROB_ROW_TOL:g}); row {row} sums to {sums[row]:.9g}."
        )
    return np.ascontiguousarray(arr)


def grade_count_iv(probs, *, name: str = "probs", **sources) -> None:
    """Refuse ``probs`` whose number of grade columns differs from a grade count a source declares.

    ``sources`` maps a description (``pool``, ``labeler``, ``model``) to an
    object; one with an integer ``n_grades`` (a :class:`LetorData`, a labeler
    or relevance model built for a scale) must agree with ``probs``: the
    columns fix the grade scale, and with it the gains and ERR's top grade, so
    a mismatch would give a silently wrong estimate.

    Examples
    --------
    >>> import types
    >>> grade_count_iv(np.full((4, 3), 1 / 3), pool=types.SimpleNamespace(n_grades=3))
    >>> grade_count_iv(np.full((4, 5), 0.2), pool=types.SimpleNamespace(n_grades=3))
    Traceback (most recent call last):
    ValueError: `probs` has 5 grade columns but the pool has n_grades=3 (grades 0..2): ...
    """
    shape: tuple = getattr(probs, "shape", None) or (np.shape(probs) if isinstance(probs, (list, tuple)) else ())
    if len(shape) != 2:
        return  # probs_iv names the shape error
    columns = int(shape[1])
    for what, source in sources.items():
        g = getattr(source, "n_grades", None)
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g == columns:
            continue
        raise ValueError(
            f"`{name}` has {columns} grade columns but the {what} has n_grades={g} (grades 0..{g - 1}): the "
            f"columns set the grade scale (gains, ERR's top grade), so the estimate would be wrong; give the "
            f"relevance model n_grades={g}, or load the data with n_grades={columns} if that is its scale."
        )


def _rows_are_distributions(arr: np.ndarray, block: int = 1 << 16) -> bool:
    """Fast check of the valid case: rows non-negative and summing to 1.

    Block by block so the row sums and the minimum are read from cache (about
    2x one ``np.sum`` over the matrix, 2.6x faster than whole-matrix passes).
    A NaN or inf makes a row sum non-finite and the minimum NaN, so every
    comparison fails and the caller diagnoses.
    """
    ones = np.ones(arr.shape[1])
    for lo in range(0, arr.shape[0], block):
        part = arr[lo:lo + block]
        sums = part @ ones
        if not (sums.min() >= 1.0 - PROB_ROW_TOL and sums.max() <= 1.0 + PROB_ROW_TOL and part.min() >= 0):
            return False
    return True


def predicted_iv(predicted, n_queries: int):
    """``(mean, variance)`` per-query predictions replacing the model's moments."""
    try:
        mean, variance = (np.asarray(a, dtype=np.float64).reshape(-1) for a in predicted)
    except (TypeError, ValueError):
        raise TypeError("`predicted` must be a pair (mean, variance) of arrays.") from None
    for name, arr in (("mean", mean), ("variance", variance)):
        if arr.size != n_queries:
            raise ValueError(f"`predicted` {name} must have one entry per query ({n_queries}); got {arr.size}.")
        if not np.isfinite(arr).all():
            raise ValueError(
                f"`predicted` {name} must be finite; query {int(np.flatnonzero(~np.isfinite(arr))[0])} is not.")
    if (variance < 0).any():
        raise ValueError(
            f"`predicted` variance must be >= 0; query {int(np.flatnonzero(variance < 0)[0])} is negative.")
    return mean, variance


# --------------------------------------------------------------------------- rankings


def k_iv(k, *, name: str = "k") -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive integer or None, got {k!r}.")
    if k < 1:
        raise ValueError(f"`{name}` must be >= 1 (or None for the whole list), got {k}.")
    return int(k)


def _integer_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == bool:
        raise TypeError(f"`{name}` must hold integer indices, not booleans.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"`{name}` must hold integer indices, got dtype {arr.dtype}.")
        ok = np.isfinite(arr) & (arr == np.round(arr))
        if not ok.all():
            pos = int(np.flatnonzero(~ok.reshape(-1))[0])
            raise ValueError(
                f"`{name}` must hold integer indices; entry {pos} is {arr.reshape(-1)[pos].item()!r}."
            )
    return arr.astype(np.int64, copy=False).reshape(-1)


def ranking_iv(ranking, n_items: int, *, name: str = "ranking") -> np.ndarray:
    """Validate one ranking: distinct integer row indices in [0, n_items)."""
    arr = np.asarray(ranking)
    if arr.ndim > 1:
        raise ValueError(f"`{name}` must be a 1-d sequence of item indices; got shape {arr.shape}.")
    return rankings_iv([_integer_array(arr, name)], n_items, name=name).items


def rankings_iv(rankings, n_items: int, *, name: str = "rankings") -> Rankings:
    """Validate per-query rankings (a ``Rankings`` or a sequence of sequences)."""
    if isinstance(rankings, Rankings):
        items, offsets = rankings.items, rankings.offsets
    else:
        if isinstance(rankings, (str, bytes)) or not hasattr(rankings, "__len__"):
            raise TypeError(f"`{name}` must be a Rankings object or a sequence of index sequences.")
        arrays = []
        for q, r in enumerate(rankings):
            arr = np.asarray(r)
            if arr.ndim > 1:
                raise ValueError(f"`{name}`[{q}] must be 1-d; got shape {arr.shape}.")
            arrays.append(_integer_array(arr, f"{name}[{q}]"))
        offsets = offsets_from_lengths([a.size for a in arrays])
        items = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    if items.size and (items.min() < 0 or items.max() >= n_items):
        bad = (items < 0) | (items >= n_items)
        e = int(np.flatnonzero(bad)[0])
        qidx = segment_ids(offsets)
        raise ValueError(
            f"`{name}` indices must lie in [0, {n_items}); query {qidx[e]} has index {items[e]}."
        )
    _check_distinct(items, offsets, n_items, name)
    return rankings if isinstance(rankings, Rankings) else Rankings(items, offsets)


def _check_distinct(items: np.ndarray, offsets: np.ndarray, n_items: int, name: str) -> None:
    """Raise if some query lists an item twice.

    A bitmap of ranked rows (one O(n) scatter of bytes) proves distinctness in
    the usual case where every row is ranked at most once in the whole pool;
    only entries whose row occurs more than once are sorted by (query, row) to
    tell a duplicate inside one query from a row shared by two queries.
    """
    if items.size < 2:
        return
    if listed_once(items, n_items):
        return
    counts = np.bincount(items, minlength=n_items)
    cand = np.flatnonzero(counts[items] > 1)
    qidx = segment_ids(offsets)[cand]
    keys = qidx * max(n_items, 1) + items[cand]
    order = np.argsort(keys, kind="stable")
    dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if dup.size:
        e = order[dup[0] + 1]
        raise ValueError(
            f"`{name}` must not contain duplicates; query {qidx[e]} lists item {items[cand[e]]} twice."
        )


def labels_iv(labels, n_grades: int, *, name: str = "labels") -> np.ndarray:
    arr = _integer_array(labels, name)
    bad = (arr < 0) | (arr >= n_grades)
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`{name}` must lie on the grade scale 0..{n_grades - 1}; item {e} has grade {arr[e]}."
        )
    return arr


def n_grades_from_ymax(ymax, *, name: str = "ymax") -> int:
    if isinstance(ymax, bool) or not isinstance(ymax, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive integer (the top grade of the scale), got {ymax!r}.")
    if ymax < 1:
        raise ValueError(f"`{name}` must be >= 1, got {ymax}.")
    return int(ymax) + 1


# --------------------------------------------------------------------------- pools and rankers


def offsets_iv(offsets, n_rows: int | None = None, *, name: str = "offsets") -> np.ndarray:
    """CSR offsets: a 1-d integer array starting at 0, non-decreasing, ending at ``n_rows`` if given."""
    try:
        off = np.asarray(offsets)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be a 1-d integer array: {exc}") from None
    if off.ndim != 1 or off.size < 1:
        raise ValueError(f"`{name}` must be a 1-d array of length n_queries + 1; got shape {off.shape}.")
    if not np.issubdtype(off.dtype, np.integer):
        raise TypeError(f"`{name}` must hold integers; got dtype {off.dtype}.")
    off = off.astype(np.int64)
    if off[0] != 0:
        raise ValueError(f"`{name}` must start at 0; got {off[0]}.")
    dec = np.flatnonzero(np.diff(off) < 0)
    if dec.size:
        raise ValueError(f"`{name}` must be non-decreasing; query {dec[0]} has a negative length.")
    if n_rows is not None and off[-1] != n_rows:
        raise ValueError(f"`{name}` must end at the number of rows ({n_rows}); got {off[-1]}.")
    return off


def distinct_docs_iv(doc_ids, offsets: np.ndarray, query_ids) -> None:
    """Refuse a pool that lists one document twice for a query (ids compared by their string form).

    As the campaign store: ``7`` and ``"7"`` are the same id.  Rows are hashed
    and sorted within each query (vectorized); only queries where two hashes
    agree are checked exactly, one id at a time.

    Examples
    --------
    >>> distinct_docs_iv(np.array(["a", "b", "a"], dtype=object), np.array([0, 2, 3]), np.array([1, 2]))
    >>> distinct_docs_iv(np.array(["a", "b", "a"], dtype=object), np.array([0, 3]), np.array(["q"]))
    Traceback (most recent call last):
    ValueError: `pool` query 'q' lists document id 'a' twice (rows 0 and 2).
    """
    ids = np.asarray(doc_ids).reshape(-1)
    if ids.size < 2:
        return
    if ids.dtype.kind in "iu":      # the string forms agree exactly when the integers do
        keys = ids.astype(np.int64, copy=False).view(np.uint64) if ids.dtype.kind == "i" else ids.astype(np.uint64)
    else:
        keys = np.fromiter(map(hash, map(str, ids.tolist())), dtype=np.int64, count=ids.size).view(np.uint64)
    order = segment_argsort(keys, offsets)
    same = keys[order[1:]] == keys[order[:-1]]
    ends = offsets[1:-1]
    same[ends[(ends > 0) & (ends < ids.size)] - 1] = False          # pairs across two queries
    if not same.any():
        return
    for x in np.unique(np.searchsorted(offsets, np.flatnonzero(same), side="right") - 1).tolist():
        first: dict = {}
        for r in range(int(offsets[x]), int(offsets[x + 1])):
            d = str(py_scalar(ids[r]))
            if d in first:
                raise ValueError(f"`pool` query {str(py_scalar(query_ids[x]))!r} lists document id {d!r} twice "
                                 f"(rows {first[d]} and {r}).")
            first[d] = r


def _unique_ids_iv(qids: np.ndarray) -> None:
    if qids.size < 2:
        return
    order = np.argsort(qids, kind="stable")
    same = np.flatnonzero(qids[order][1:] == qids[order][:-1])
    if same.size:
        a, b = sorted((int(order[same[0]]), int(order[same[0] + 1])))
        raise ValueError(f"`pool.query_ids` must be unique; query id {py_scalar(qids[a])!r} appears twice "
                         f"(queries {a} and {b}).")


def scores_iv(scores, pool, name: str = "scores") -> Rankings:
    """Per-query rankings from per-document scores, or validated ready-made
    :class:`~activerank.ragged.Rankings` of the pool's own documents.

    Scores are ranked as ``trec_eval`` does: descending, ties by the pool's document id
    descending (the row index without ``doc_ids``), :func:`activerank.ragged.rank_rows_by_scores`."""
    offsets = pool.offsets
    n_docs = int(offsets[-1])
    if isinstance(scores, Rankings):
        if scores.n_queries != offsets.size - 1:
            raise ValueError(f"`{name}` ranks {scores.n_queries} queries but the pool has {offsets.size - 1}.")
        # one unsigned comparison of each entry's offset inside its query's rows (negative -> huge)
        lengths = scores.lengths
        local = scores.items - np.repeat(offsets[:-1], lengths)
        outside = local.view(np.uint64) >= np.repeat(np.diff(offsets).astype(np.uint64), lengths)
        if outside.any():
            q = scores.query_index()
            e = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"`{name}` must rank each query's own documents; query {py_scalar(pool.query_ids[q[e]])!r} "
                f"lists row {scores.items[e]}, outside rows [{offsets[q[e]]}, {offsets[q[e] + 1]})."
            )
        return rankings_iv(scores, n_docs, name=name)
    if isinstance(scores, (str, bytes)):
        raise TypeError(f"`{name}` must be one numeric score per pool document or Rankings; got a string.")
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be numeric scores (one per pool document) or Rankings: {exc}") from None
    if s.ndim != 1 or s.size != n_docs:
        raise ValueError(f"`{name}` must have one score per pool document ({n_docs}); got shape {s.shape}.")
    nan = np.flatnonzero(np.isnan(s))
    if nan.size:
        qi = int(np.searchsorted(offsets, nan[0], side="right") - 1)
        raise ValueError(
            f"`{name}` must not contain NaN; query {py_scalar(pool.query_ids[qi])!r} (document row {nan[0]}) has NaN."
        )
    return rank_rows_by_scores(s, offsets, getattr(pool, "doc_ids", None))


def scores_list_iv(scores_list, pool, name: str, minimum: int) -> list:
    """A list (or a ``{name: scores}`` mapping) of several rankers' scores -> list of Rankings."""
    if isinstance(scores_list, dict):
        scores_list = list(scores_list.values())
    if isinstance(scores_list, (Rankings, str)) or not hasattr(scores_list, "__len__"):
        raise ValueError(
            f"`{name}` must be a list of per-document score arrays (or Rankings), one per system; "
            f"got {type(scores_list).__name__}."
        )
    if isinstance(scores_list, np.ndarray) and scores_list.ndim == 1:
        raise ValueError(
            f"`{name}` must be a list of per-document score arrays, one per system; got a single "
            "1-d array (wrap it in a list)."
        )
    items = list(scores_list)
    if len(items) < minimum:
        raise ValueError(f"`{name}` must hold at least {minimum} system(s); got {len(items)}.")
    return [scores_iv(s, pool, f"{name}[{i}]") for i, s in enumerate(items)]


def names_iv(names, count: int, name: str, prefix: str) -> tuple:
    if names is None:
        return tuple(f"{prefix}_{i}" for i in range(count))
    if isinstance(names, str) or not hasattr(names, "__len__"):
        raise ValueError(f"`{name}` must be a sequence of {count} strings; got {names!r}.")
    names = tuple(names)
    if len(names) != count:
        raise ValueError(f"`{name}` must have one name per system ({count}); got {len(names)}.")
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ValueError(f"`{name}` must be non-empty strings; got {bad[0]!r}.")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"`{name}` must be unique; {dup[0]!r} appears more than once.")
    return names


# --------------------------------------------------------------------------- labelers, models, files


def labeler_iv(labeler):
    if not callable(labeler):
        raise TypeError(f"`labeler` must be callable as labeler(query_id, doc_ids) -> grades; "
                        f"got {type(labeler).__name__}.")
    return labeler


def model_iv(model):
    if not (callable(getattr(model, "fit", None)) and callable(getattr(model, "predict_proba", None))):
        raise TypeError(f"`model` must have fit(X, y) and predict_proba(X) (a RelevanceModel); "
                        f"got {type(model).__name__}.")
    return model


def features_iv(X, n_docs: int) -> np.ndarray:
    Xa = _float_array(X, "X")
    if Xa.ndim != 2 or Xa.shape[0] != n_docs:
        raise ValueError(f"`X` must have shape (n_docs={n_docs}, n_features); got {Xa.shape}.")
    return Xa


def train_iv(train, n_features: int):
    """``(X_train, y_train)`` or a labeled LetorData -> arrays (or None)."""
    if train is None:
        return None
    if hasattr(train, "X") and hasattr(train, "labels"):
        Xt, yt = train.X, train.labels
    elif isinstance(train, (tuple, list)) and len(train) == 2:
        Xt, yt = train
    else:
        raise ValueError("`train` must be (X_train, y_train) or a labeled LetorData.")
    if yt is None:
        raise ValueError("`train` has no labels.")
    Xt = np.asarray(Xt, dtype=np.float64)
    yt = np.asarray(yt).reshape(-1)
    if Xt.ndim != 2 or Xt.shape[1] != n_features or Xt.shape[0] != yt.size:
        raise ValueError(f"`train` must be X of shape (n, {n_features}) and y of shape (n,); "
                         f"got {Xt.shape} and {yt.shape}.")
    return Xt, yt.astype(np.int64)


def path_iv(path, name: str = "path") -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`{name}` must be a file path, got {type(path).__name__}.")
    return os.fspath(path)


CI_CHOICES = ("auto", "t", "t_draws", "bootstrap", "normal")


def ci_iv(ci) -> str:
    """``ci`` of the public functions -> ``"t"``, ``"t_draws"``, ``"bootstrap"`` or ``"normal"`` (``"auto"`` is
    ``"t_draws"``: :data:`activerank.inference.small_sample.AUTO_RULE`)."""
    choice_iv(ci, "ci", CI_CHOICES)
    return "t_draws" if ci == "auto" else ci


def choice_iv(value, name: str, choices) -> str:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {list(choices)}; got {value!r}.")
    return value


JUDGE_MODES = ("changeable", "all")


def judge_iv(judge) -> str:
    """What a comparison judges: ``"changeable"`` (only documents that can change a difference) or ``"all"``."""
    if not isinstance(judge, str) or judge not in JUDGE_MODES:
        raise ValueError(f"`judge` must be one of {list(JUDGE_MODES)}: 'changeable' judges only the documents "
                         f"whose labels can change a difference, 'all' every document; got {judge!r}.")
    return judge
