"""activerank.datasets: shipped sample paths, the data root, and missing-dataset errors."""

import re

import pytest

import activerank as ar
from activerank import datasets
from activerank.datasets import DatasetNotFoundError, data_root, dataset_dir

from ..conftest import require_shared_data


def test_path_of_shipped_sample_loads():
    p = datasets.path("mq2008")
    assert p.train.is_file() and p.test.is_file() and p.source.is_file()
    d = ar.load_letor(p.test, n_grades=3)
    assert (d.n_queries, d.n_docs) == (30, 607)
    with pytest.raises(ValueError, match=r"`name` must be one of \['mq2008'\].*dataset_dir"):
        datasets.path("mslr-web30k")


def test_data_root_from_argument_and_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("ACTIVERANK_DATA", raising=False)
    assert data_root(tmp_path) == tmp_path
    with pytest.raises(DatasetNotFoundError, match="no data root.*ACTIVERANK_DATA.*mq2008/S1.txt"):
        data_root()
    monkeypatch.setenv("ACTIVERANK_DATA", str(tmp_path))
    assert data_root() == tmp_path
    monkeypatch.setenv("ACTIVERANK_DATA", str(tmp_path / "nope"))
    with pytest.raises(DatasetNotFoundError, match=r"from \$ACTIVERANK_DATA\) is not a directory"):
        data_root()
    with pytest.raises(TypeError, match="`root` must be a path"):
        data_root(3)


@pytest.mark.parametrize("name, layout, url", [
    ("mq2008", r"mq2008/S1\.txt \.\.\. mq2008/S5\.txt", "letor-4-0"),
    ("ohsumed", r"ohsumed-letor3/QueryLevelNorm/S1\.txt", "letor-3-0"),
    ("trec-news", r"trec-news-2018-fastrank/trec_news_2018\.train, trec-news-2018-fastrank/trec_news_2018\.test",
     "jjfiv/fastrank"),
    ("mslr-web30k", r"mslr-web30k/Fold1/train\.txt", "project/mslr"),
])
def test_missing_dataset_names_dataset_layout_and_download_page(tmp_path, name, layout, url):
    with pytest.raises(DatasetNotFoundError) as exc:
        dataset_dir(name, tmp_path)
    msg = str(exc.value)
    assert f"dataset {name!r} not found" in msg
    assert re.search(layout, msg)
    assert url in msg
    assert isinstance(exc.value, FileNotFoundError)


def test_partial_dataset_names_the_first_missing_file(tmp_path):
    (tmp_path / "mq2008").mkdir()
    for k in (1, 2, 3):
        (tmp_path / "mq2008" / f"S{k}.txt").write_text("0 qid:1 1:0\n")
    with pytest.raises(DatasetNotFoundError, match=r"mq2008/S4\.txt is missing \(2 of 5 expected files\)"):
        dataset_dir("mq2008", tmp_path)
    with pytest.raises(ValueError, match="`name` must be one of"):
        dataset_dir("yahoo", tmp_path)


def test_shared_mq2008_is_found():
    root = require_shared_data("mq2008", "S5.txt").parent.parent
    assert dataset_dir("mq2008", root) == root / "mq2008"
