"""TREC News 2018 (fastrank's example features) as a harness dataset: loading, partitions, a tiny run."""

import numpy as np
import pytest

from activerank.datasets import DatasetNotFoundError
from activerank.experiments import harness as ex
from activerank.experiments.data import _deal_partitions

from ..conftest import require_shared_data


def _root():
    return require_shared_data("trec-news-2018-fastrank", "trec_news_2018.train").parents[1]


def test_missing_trec_news_names_the_layout(tmp_path):
    with pytest.raises(DatasetNotFoundError,
                       match=r"dataset 'trec-news' not found.*trec-news-2018-fastrank/trec_news_2018\.train"
                             r".*trec-news-2018-fastrank/trec_news_2018\.test.*fastrank"):
        ex.load_dataset("trec-news", tmp_path)


def test_partitions_are_dealt_by_sorted_query_id():
    ids = np.array([825, 321, 408, 336, 999, 341, 100])
    part = _deal_partitions(ids)
    # sorted: 100, 321, 336, 341, 408, 825, 999 -> partitions 1, 2, 3, 4, 5, 1, 2
    assert part.tolist() == [1, 2, 5, 3, 2, 4, 1]
    # the same whatever the file order
    perm = np.random.default_rng(0).permutation(ids.size)
    assert _deal_partitions(ids[perm]).tolist() == part[perm].tolist()


def test_trec_news_loads_into_five_partitions_of_ten():
    data, part = ex.load_dataset("trec-news", _root())
    # SOURCE.md: train 782 rows / 45 queries + test 41 rows / 5 queries, grades 0..4
    assert (data.n_queries, data.n_docs, data.n_features, data.n_grades) == (50, 823, 5, 5)
    assert np.bincount(data.labels, minlength=5).tolist() == [303 + 14, 256 + 15, 146 + 4, 27 + 4, 50 + 4]
    assert np.bincount(part).tolist() == [0, 10, 10, 10, 10, 10]
    assert (np.diff(part) >= 0).all()  # partition order, like S1..S5
    ranks = np.argsort(np.argsort(data.query_ids))
    assert (part == ranks % 5 + 1).all()
    # fastrank's own test queries are spread over the partitions, not kept together
    test_ids = [408, 427, 806, 815, 821]
    assert len(set(part[np.isin(data.query_ids, test_ids)])) > 1
    assert data.doc_length is None


def test_tiny_harness_run_on_trec_news(tmp_path):
    cfg = ex.ExperimentConfig(datasets=("trec-news",), folds=(1,), n_reps=60, metrics=("dcg@10",),
                              methods=("passive", "active", "doc_dyn"), scenarios=("a_rf", "c_index"),
                              n_trees=8, quick=True, n_boot=30, n_jobs=1, cache_dir=str(tmp_path),
                              data_root=str(_root()))
    fm = ex.fit_fold("trec-news", 1, cfg, data_root=cfg.data_root)
    assert fm.pool.n_queries == 40 and fm.pool.n_grades == 5
    assert all(p.shape == (fm.pool.n_docs, 5) for p in fm.probs.values())
    res = ex.run(cfg, progress=None)
    grid = ex.DATASETS["trec-news"].budgets
    assert len(res.curves) == 2 * 3 * len(grid)
    assert max(grid) < fm.pool.n_queries  # budgets fit a pool of 40 queries
    assert (res.curves.n_empty == 0).all() and res.curves.mean_abs_error.notna().all()
    doc = res.savings[res.savings.method == "doc_dyn"]
    assert len(doc) == 2 and np.isfinite(doc.abs_savings).all()
