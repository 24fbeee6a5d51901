"""Labeling campaigns for real annotators.

A campaign freezes a pool, the ranker(s) being evaluated, the sampling design
and the complete draw sequence in one SQLite file (:class:`Campaign`), hands
out tasks as JSONL/CSV files, takes judgments back from JSONL/CSV/qrels
files (validated row by row, idempotent, crash-safe), and estimates the
metric at any time from what has been judged.  With a document-level method
(``method="doc_dyn"``/``"doc_stat"``) the tasks are the engine's Poisson
sample of single (query, document) pairs; the other document-level methods'
tasks are the documents the engine asks for, recorded
(:mod:`activerank.campaign.documents`).  With ``method="prefix"`` the tasks
come in rounds, one document per query whose walk surely fits the hard budget
(:mod:`activerank.campaign.prefix`).

Every chunk of judgments an import reports committed is in the store file
itself (:mod:`activerank.campaign.schema`, Durability).  Checksums of every
judgment, the design and the schema catch damage that SQLite's own
``integrity_check`` misses: a quick check on every opening,
:meth:`Campaign.check` in full (:mod:`activerank.campaign.integrity`);
:meth:`Campaign.backup` copies a store safely while annotators work.

Examples
--------
>>> import tempfile, os, activerank as ar
>>> from activerank.campaign import Campaign
>>> data = ar.load_sample()
>>> probs = ar.relevance.UniformRelevanceModel(3).fit(data.X, data.labels).predict_proba(data.X)
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Campaign.create(os.path.join(tmp, "c.db"), data, data.X[:, 0], probs,
...                          budget=5, metric="dcg@5", seed=0) as c:
...         st = c.status()
>>> st.cost_planned <= 5, st.cost_spent
(True, 0.0)
"""

import importlib

__all__ = [
    "COMBINE_RULES",
    "SCHEMA_VERSION",
    "Campaign",
    "CampaignStatus",
    "CorruptStoreError",
    "ExportReport",
    "ImportReport",
    "Rejection",
    "combine_grades",
]


def __getattr__(name):
    # lazy, so `activerank --help` does not load the store (SQLite, the engine)
    if name in __all__:
        value = getattr(importlib.import_module(".store", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'activerank.campaign' has no attribute {name!r}")
