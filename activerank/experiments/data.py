"""The data sets of the experiment harness: where each lives under the data root, its cost model and
budget grid (:data:`DATASETS`), and loading all five partitions (:func:`load_dataset`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.letor import LetorData, concat, load_letor, load_partitions, ohsumed_doc_length


@dataclass(frozen=True)
class DatasetSpec:
    """Where a LETOR dataset lives and how its labeling costs are modeled.

    Attributes
    ----------
    name : str
        Also the key of the data set's layout in :data:`activerank.datasets.DATASETS`.
    subdir : str
        Directory (under the data root) with ``S1.txt`` .. ``S5.txt`` (or with ``files``).
    length_subdir : str or None
        Row-aligned twin files to read document length from (five-partition layout only).
    length_feature : int, callable or None
        As in :func:`activerank.io.letor.load_letor`.
    cost_model : str
        Document cost model for :func:`activerank.design.costs.document_costs`.
    budgets : tuple of float
        Budget grid (units of mean query cost).
    reference_budget : float
        Budget at which passive's error defines the savings target.
    cost_note : str
        How the cost model was chosen (reported next to the results).
    n_grades : int
        Size of the label scale (grades ``0 .. n_grades - 1``).
    files : tuple of str or None
        For a data set that is not split into ``S1.txt`` .. ``S5.txt``: the
        files under ``subdir`` that together hold every query.  Their queries
        are dealt into five partitions by sorted query id, round-robin
        (:func:`_deal_partitions`), so the five-fold protocol is unchanged.
    n_features : int or None
        Number of features, checked when reading (``None``: the first file fixes it).
    """

    name: str
    subdir: str
    length_subdir: str | None
    length_feature: object
    cost_model: str
    budgets: tuple
    reference_budget: float
    cost_note: str
    n_grades: int = 3
    files: tuple | None = None
    n_features: int | None = None


DATASETS: dict[str, DatasetSpec] = {
    "mq2008": DatasetSpec(
        name="mq2008",
        subdir="mq2008",
        length_subdir=None,
        length_feature=None,
        cost_model="constant",
        budgets=(10, 15, 20, 30, 50, 75, 100, 150, 200, 300),
        reference_budget=100,
        cost_note=("constant cost per judged document (feature 20, 'DL of the whole document', is "
                   "min-max normalised per query, so no absolute length is available)"),
    ),
    "ohsumed": DatasetSpec(
        name="ohsumed",
        subdir="ohsumed-letor3/QueryLevelNorm",
        length_subdir="ohsumed-letor3/Feature-min",
        length_feature=ohsumed_doc_length,
        cost_model="log_length",
        budgets=(4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40),
        reference_budget=15,
        cost_note=("log(title+abstract length) per judged document, length = f31/f33 of the raw "
                   "Feature-min files"),
    ),
    # 50 queries (fastrank's example split 45 + 5, merged and dealt into five partitions of 10): a pool
    # holds 40 queries, so the grid stops short of judging all of it
    "trec-news": DatasetSpec(
        name="trec-news",
        subdir="trec-news-2018-fastrank",
        length_subdir=None,
        length_feature=None,
        cost_model="constant",
        budgets=(2, 3, 5, 7, 10, 15, 20, 30),
        reference_budget=10,
        cost_note="constant cost per judged document (the five features give no document length)",
        n_grades=5,
        files=("trec_news_2018.train", "trec_news_2018.test"),
        n_features=5,
    ),
}


def default_data_root() -> str:
    """The data root: ``$ACTIVERANK_DATA`` (:func:`activerank.datasets.data_root`; a clear error without it)."""
    from ..datasets import data_root

    return str(data_root())


_DATA_CACHE: dict = {}


def load_dataset(spec: DatasetSpec | str, data_root: str | None = None) -> tuple[LetorData, np.ndarray]:
    """Load all five partitions of a dataset.

    Parameters
    ----------
    spec : DatasetSpec or str
        A spec or a key of :data:`DATASETS`.
    data_root : str, optional
        Default :func:`default_data_root`.

    Returns
    -------
    data : LetorData
        All queries of S1..S5 (or of ``spec.files``) in partition order.
    partition : ndarray of shape (n_queries,), int
        Partition number (1..5) of every query.

    Raises
    ------
    activerank.datasets.DatasetNotFoundError
        The data set is not under the data root (naming the expected layout).
    """
    spec = _spec_iv(spec)
    from ..datasets import data_root as _root, dataset_dir

    root = _root(data_root)
    key = (spec.name, str(root))
    if key not in _DATA_CACHE:
        dataset_dir(spec.name, root)  # a missing dataset: which one, the layout and where to get it
        folder = root / spec.subdir
        if spec.files is None:
            parts = []
            for k in range(1, 6):
                parts.append(load_partitions(
                    folder, [k], n_grades=spec.n_grades, n_features=spec.n_features,
                    length_feature=spec.length_feature,
                    length_root=None if spec.length_subdir is None else root / spec.length_subdir,
                ))
            data = concat(parts)
            part = np.repeat(np.arange(1, 6), [d.n_queries for d in parts])
        else:
            if spec.length_subdir is not None:
                raise ValueError(f"dataset {spec.name!r}: `length_subdir` needs the S1..S5 layout; "
                                 "with `files` give `length_feature` (read from the same files).")
            data = concat([load_letor(folder / f, n_grades=spec.n_grades, n_features=spec.n_features,
                                      length_feature=spec.length_feature) for f in spec.files])
            part = _deal_partitions(data.query_ids)
            order = np.argsort(part, kind="stable")
            data, part = data.subset(order), part[order]
        _DATA_CACHE[key] = (data, part)
    return _DATA_CACHE[key]


def _deal_partitions(query_ids, n_partitions: int = 5) -> np.ndarray:
    """Deal queries into partitions by sorted query id, round-robin.

    The ``i``-th smallest query id goes to partition ``i mod n_partitions + 1``:
    deterministic, independent of file order, and the partitions differ in
    size by at most one query.

    Parameters
    ----------
    query_ids : array-like of int, shape (n_queries,)
        Distinct raw query ids.
    n_partitions : int, default 5

    Returns
    -------
    ndarray of shape (n_queries,), int
        Partition number (``1 .. n_partitions``) of every query, in the input order.

    Examples
    --------
    >>> _deal_partitions([40, 10, 30, 20, 50, 60], 5).tolist()
    [4, 1, 3, 2, 5, 1]
    """
    ids = np.asarray(query_ids).reshape(-1)
    order = np.argsort(ids, kind="stable")
    part = np.empty(ids.size, dtype=np.int64)
    part[order] = np.arange(ids.size) % n_partitions + 1
    return part


def _spec_iv(spec) -> DatasetSpec:
    if isinstance(spec, DatasetSpec):
        return spec
    if spec not in DATASETS:
        raise ValueError(f"`dataset` must be one of {sorted(DATASETS)}; got {spec!r}.")
    return DATASETS[spec]
