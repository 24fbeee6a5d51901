"""Sanity bounds applied when reading files (a typo or a binary file must not allocate gigabytes).

``MAX_GRADE``
    Largest relevance grade a file may hold.  Grades enter the metrics as
    gains ``2**grade - 1`` and every grade is a column of the relevance-model
    probabilities, so a scale of millions of grades is a data error.  Real
    scales are far below the bound: 0..2 (LETOR), 0..4 (MSLR, Yahoo), 0..16
    (TREC News).
``MAX_FEATURE_INDEX``
    Largest LETOR/SVMlight feature index read without an explicit
    ``n_features`` (features are stored dense; MSLR has 136, Istella 220,
    Yahoo 700).
"""

MAX_GRADE = 100
MAX_N_GRADES = MAX_GRADE + 1
MAX_FEATURE_INDEX = 100_000

__all__ = ["MAX_GRADE", "MAX_N_GRADES", "MAX_FEATURE_INDEX"]
