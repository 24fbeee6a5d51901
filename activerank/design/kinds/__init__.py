"""Design kinds: one plug-in per way of sampling what to judge, behind one protocol (:mod:`.base`).

* :mod:`.query` -- queries drawn with replacement from ``q`` (Algorithm 1 of Sawade et al.);
* :mod:`.query_wor` -- one budgeted sample of queries without replacement (sequential Poisson);
* :mod:`.documents` -- (query, document) units: Poisson, uniform, with replacement, within queries;
* :mod:`.two_stage` -- queries, then a subsample of each drawn query's documents;
* :mod:`.prefix` -- Poisson queries, a random-depth prefix of each judged one document at a time.

The registered methods (:mod:`activerank.design.methods`) name a kind with its settings.
"""

from .base import NO_LABELS, DesignFit, DesignKind, LabelRequest

__all__ = ["NO_LABELS", "DesignFit", "DesignKind", "LabelRequest"]
