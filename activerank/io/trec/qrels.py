"""TREC qrels files: read them (grades checked against the scale), answer labeling requests from
them, and write judgments as a qrels file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..limits import MAX_GRADE, MAX_N_GRADES
from ._text import _as_key, _atomic_write_text, _int_field, _read_lines


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
