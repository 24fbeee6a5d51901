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

The package's modules: :mod:`.runs` (run files, rankings over a pool),
:mod:`.qrels` (qrels files), :mod:`._columnar` (the fast run reader) and
:mod:`._text` (line reading and atomic writes shared by both).
"""

from .qrels import Qrels, read_qrels, write_qrels
from .runs import TrecRuns, rankings_from_dict, read_runs, run_rankings_for_pool, write_run

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
