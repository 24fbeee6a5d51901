"""Agreement between human assessors who graded the same (query, document) pairs.

When several people grade a pair, their disagreement bounds what any judge (or relevance model) can reach: a
judge agreeing with one assessor as well as a second assessor does is as good as a human.  Campaigns keep every
annotator's grade (:meth:`activerank.campaign.Campaign.assessor_agreement`); this module compares them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .report import weighted_kappa

__all__ = ["AssessorAgreement", "assessor_agreement"]


@dataclass(frozen=True)
class AssessorAgreement:
    """Pairwise agreement of assessors on the pairs both graded.

    Attributes
    ----------
    assessors : tuple of str
    n_pairs : int
        (query, document) pairs graded by at least one assessor.
    n_shared : int
        Pairs graded by at least two.
    pairwise : tuple of tuple
        ``(assessor a, assessor b, pairs both graded, quadratic kappa, unweighted kappa, share equal)`` for every
        two assessors who share a pair.
    kappa_quadratic : float
        Mean of the pairwise quadratic kappas, weighted by the pairs each two share (NaN: no shared pair).
    """

    assessors: tuple
    n_pairs: int
    n_shared: int
    pairwise: tuple
    kappa_quadratic: float

    def summary(self) -> str:
        """A small text table."""
        lines = [f"assessors: {len(self.assessors)}; pairs graded: {self.n_pairs}; by two or more: {self.n_shared}",
                 f"quadratic kappa (pair-weighted mean): {self.kappa_quadratic:.3f}"]
        if self.pairwise:
            lines.append(f"{'assessor a':<14}{'assessor b':<14}{'pairs':>7}{'kappa_q':>9}{'kappa':>8}{'equal':>8}")
            lines += [f"{str(a):<14}{str(b):<14}{n:>7d}{kq:>9.3f}{k:>8.3f}{e:>8.3f}"
                      for a, b, n, kq, k, e in self.pairwise]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"assessors": list(self.assessors), "n_pairs": self.n_pairs, "n_shared": self.n_shared,
                "kappa_quadratic": self.kappa_quadratic,
                "pairwise": [dict(zip(("a", "b", "n_pairs", "kappa_quadratic", "kappa", "share_equal"), p))
                             for p in self.pairwise]}

    def __repr__(self) -> str:
        return (f"AssessorAgreement(assessors={len(self.assessors)}, n_shared={self.n_shared}, "
                f"kappa_quadratic={self.kappa_quadratic:.3f})")


def assessor_agreement(grades, *, n_grades: int) -> AssessorAgreement:
    """Pairwise agreement of assessors who graded the same pairs.

    Parameters
    ----------
    grades : mapping or pandas.DataFrame
        ``{assessor: {(query_id, doc_id): grade}}``, or a frame with columns ``query_id, doc_id, assessor,
        grade`` (one row per assessor and pair).
    n_grades : int
        Size of the grade scale (grades ``0 .. n_grades - 1``).

    Examples
    --------
    >>> from activerank.judges import assessor_agreement
    >>> a = {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d1"): 1}
    >>> b = {("q1", "d1"): 2, ("q1", "d2"): 1, ("q2", "d1"): 1}
    >>> assessor_agreement({"ann": a, "bob": b}, n_grades=3).n_shared
    3
    """
    by = _grades_iv(grades, n_grades)
    names = tuple(sorted(by, key=str))
    keys = set().union(*(set(g) for g in by.values())) if by else set()
    counts: dict = {}
    for g in by.values():
        for k in g:
            counts[k] = counts.get(k, 0) + 1
    rows, total, weight = [], 0.0, 0
    for a, b in itertools.combinations(names, 2):
        shared = sorted(set(by[a]) & set(by[b]), key=str)
        if not shared:
            continue
        ga = np.array([by[a][k] for k in shared])
        gb = np.array([by[b][k] for k in shared])
        kq = weighted_kappa(ga, gb, n_levels=n_grades)
        k0 = weighted_kappa(ga, gb, n_levels=n_grades, weights="none")
        rows.append((a, b, len(shared), kq, k0, float(np.mean(ga == gb))))
        if not math.isnan(kq):
            total += kq * len(shared)
            weight += len(shared)
    return AssessorAgreement(names, len(keys), sum(1 for c in counts.values() if c >= 2), tuple(rows),
                             total / weight if weight else float("nan"))


def _grades_iv(grades, n_grades) -> dict:
    """``{assessor: {(query_id, doc_id): grade}}`` with every grade checked against the scale."""
    if isinstance(n_grades, bool) or not isinstance(n_grades, (int, np.integer)) or n_grades < 2:
        raise ValueError(f"`n_grades` must be an integer >= 2; got {n_grades!r}.")
    n_grades = int(n_grades)
    if hasattr(grades, "columns"):
        missing = [c for c in ("query_id", "doc_id", "assessor", "grade") if c not in grades.columns]
        if missing:
            raise ValueError(f"`grades` lacks the columns {missing}; it needs query_id, doc_id, assessor, grade.")
        out: dict = {}
        for i, (q, d, a, g) in enumerate(grades[["query_id", "doc_id", "assessor", "grade"]].itertuples(index=False)):
            pair = out.setdefault(a, {})
            if (q, d) in pair:
                raise ValueError(f"`grades` row {i}: assessor {a!r} graded query {q!r}, document {d!r} twice.")
            pair[(q, d)] = _grade(g, n_grades, f"`grades` row {i}")
        return out
    if not hasattr(grades, "items"):
        raise TypeError(f"`grades` must be a mapping assessor -> {{(query_id, doc_id): grade}} or a DataFrame; got "
                        f"{type(grades).__name__}.")
    out = {}
    for a, pairs in grades.items():
        if not hasattr(pairs, "items"):
            raise TypeError(f"`grades[{a!r}]` must be a mapping (query_id, doc_id) -> grade; got "
                            f"{type(pairs).__name__}.")
        out[a] = {k: _grade(g, n_grades, f"`grades[{a!r}][{k!r}]`") for k, g in pairs.items()}
    return out


def _grade(g, n_grades: int, where: str) -> int:
    if isinstance(g, bool) or not isinstance(g, (int, np.integer, float, np.floating)) or g != int(g) \
            or not 0 <= int(g) < n_grades:
        raise ValueError(f"{where}: grade {g!r} is not an integer in 0..{n_grades - 1}.")
    return int(g)
