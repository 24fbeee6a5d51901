"""Data sets: the small samples shipped with activerank, and where the full ones live.

Shipped samples
    :func:`path` gives the files of a sample shipped inside the package
    (``path("mq2008").test`` is the LETOR file the README examples use);
    :func:`activerank.io.letor.load_sample` loads them.  See ``SOURCE.md`` in
    this folder for their origin and attribution.
Full data sets (not shipped)
    Experiments and benchmarks read them from a *data root*: the ``root``
    argument, else the environment variable ``ACTIVERANK_DATA``
    (:func:`data_root`).  :func:`dataset_dir` checks a data set's layout under
    the root and, when it is missing, says which files it expected and where
    to download them (:data:`DATASETS`).

Nothing here reads a data file; importing this module is cheap.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

__all__ = ["DATASETS", "DatasetLayout", "DatasetNotFoundError", "SamplePaths", "data_root", "dataset_dir",
           "path"]

ENV_VAR = "ACTIVERANK_DATA"

LETOR4_URL = "https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/letor-4-0/"
LETOR3_URL = "https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/letor-3-0/"
MSLR_URL = "https://www.microsoft.com/en-us/research/project/mslr/"
FASTRANK_URL = "https://github.com/jjfiv/fastrank (folder examples/)"


class DatasetNotFoundError(FileNotFoundError):
    """A data set (or the data root) is not where activerank looked for it."""


@dataclass(frozen=True)
class SamplePaths:
    """Files of a sample shipped with activerank.

    Attributes
    ----------
    name : str
    train, test : pathlib.Path
        LETOR files (labeled), disjoint query sets.
    source : pathlib.Path
        ``SOURCE.md``: origin, statistics and attribution.
    """

    name: str
    train: pathlib.Path
    test: pathlib.Path
    source: pathlib.Path


@dataclass(frozen=True)
class DatasetLayout:
    """Where a full data set lives under the data root, and where to get it.

    Attributes
    ----------
    name : str
    folder : str
        Folder under the data root.
    files : tuple of str
        Files (relative to ``folder``) that must exist.
    description : str
    url : str
        Download page.
    """

    name: str
    folder: str
    files: tuple
    description: str
    url: str

    def describe(self) -> str:
        """The expected layout as one line, e.g. ``mq2008/S1.txt ... mq2008/S5.txt``."""
        if len(self.files) > 3:
            shown = f"{self.folder}/{self.files[0]} ... {self.folder}/{self.files[-1]}"
        else:
            shown = ", ".join(f"{self.folder}/{f}" for f in self.files)
        return shown


_PARTS = tuple(f"S{k}.txt" for k in range(1, 6))
_FOLDS = tuple(f"Fold{f}/{s}.txt" for f in range(1, 6) for s in ("train", "vali", "test"))

DATASETS: dict = {
    "mq2008": DatasetLayout(
        "mq2008", "mq2008", _PARTS,
        "LETOR 4.0 MQ2008 (supervised ranking): the five query partitions S1-S5 of MQ2008.rar",
        LETOR4_URL),
    "mq2007": DatasetLayout(
        "mq2007", "mq2007", _PARTS,
        "LETOR 4.0 MQ2007 (supervised ranking): the five query partitions S1-S5 of MQ2007.rar",
        LETOR4_URL),
    "ohsumed": DatasetLayout(
        "ohsumed", "ohsumed-letor3",
        tuple(f"QueryLevelNorm/{p}" for p in _PARTS) + tuple(f"Feature-min/{p}" for p in _PARTS),
        "LETOR 3.0 OHSUMED: S1-S5 of the QueryLevelNorm and of the raw Feature-min version "
        "(S5 = Fold1 test, S1 = Fold2 test, ... cyclically)",
        LETOR3_URL),
    "trec-news": DatasetLayout(
        "trec-news", "trec-news-2018-fastrank", ("trec_news_2018.train", "trec_news_2018.test"),
        "TREC News 2018 background linking, 50 queries with 5 features and grades 0-4, as in the fastrank "
        "examples (train 45 + test 5 queries, no document length)",
        FASTRANK_URL),
    "mslr-web10k": DatasetLayout(
        "mslr-web10k", "mslr-web10k", _FOLDS, "MSLR-WEB10K: Fold1-Fold5 with train/vali/test.txt", MSLR_URL),
    "mslr-web30k": DatasetLayout(
        "mslr-web30k", "mslr-web30k", _FOLDS, "MSLR-WEB30K: Fold1-Fold5 with train/vali/test.txt", MSLR_URL),
}

_SAMPLES = {"mq2008": ("mq2008_sample_train.txt", "mq2008_sample.txt")}


def path(name: str = "mq2008") -> SamplePaths:
    """Paths of a sample shipped with activerank.

    Parameters
    ----------
    name : {"mq2008"}
        ``"mq2008"``: the first 40 queries of MQ2008 S1 (``train``) and the
        first 30 of S5 (``test``), LETOR 4.0 format, grades 0..2.

    Returns
    -------
    SamplePaths

    Examples
    --------
    >>> from activerank import datasets
    >>> p = datasets.path("mq2008")
    >>> p.test.name, p.train.name
    ('mq2008_sample.txt', 'mq2008_sample_train.txt')
    >>> p.test.is_file()
    True
    """
    if name not in _SAMPLES:
        raise ValueError(f"`name` must be one of {sorted(_SAMPLES)} (the samples shipped with activerank); "
                         f"got {name!r}. Full data sets: see activerank.datasets.dataset_dir.")
    here = pathlib.Path(__file__).resolve().parent
    train, test = _SAMPLES[name]
    return SamplePaths(name=name, train=here / train, test=here / test, source=here / "SOURCE.md")


def data_root(root=None) -> pathlib.Path:
    """The folder holding the full data sets.

    Parameters
    ----------
    root : str or os.PathLike, optional
        Used when given; otherwise the environment variable
        ``ACTIVERANK_DATA``.

    Returns
    -------
    pathlib.Path
        An existing directory.

    Raises
    ------
    DatasetNotFoundError
        Neither ``root`` nor ``ACTIVERANK_DATA`` is set, or the folder does
        not exist.
    TypeError
        ``root`` is not a path.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     data_root(tmp).is_dir()
    True
    """
    if root is None:
        env = os.environ.get(ENV_VAR, "")
        if not env.strip():
            raise DatasetNotFoundError(
                f"no data root: the environment variable {ENV_VAR} is not set. Set it to the folder holding "
                f"the full data sets -- in a shell `export {ENV_VAR}=/path/to/data` before starting Python or "
                f"Jupyter, in Python `os.environ[\"{ENV_VAR}\"] = \"/path/to/data\"` before this call -- or pass "
                "the folder as `data_root=` (`--data` on the command line). Expected layout under it: "
                + "; ".join(f"{d.name}: {d.describe()}" for d in DATASETS.values())
                + ". Where to download each: activerank.datasets.DATASETS, or the README's \"Data sets\" section."
            )
        where, source = env, f"${ENV_VAR}"
    else:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a path (str or os.PathLike) or None; got {type(root).__name__}.")
        where, source = os.fspath(root), "`root`"
    p = pathlib.Path(where).expanduser()
    if not p.is_dir():
        raise DatasetNotFoundError(f"data root {where!r} (from {source}) is not a directory.")
    return p


def dataset_dir(name: str, root=None) -> pathlib.Path:
    """The folder of a full data set under the data root, its layout checked.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS` (``"mq2008"``, ``"mq2007"``,
        ``"ohsumed"``, ``"trec-news"``, ``"mslr-web10k"``, ``"mslr-web30k"``).
    root : str or os.PathLike, optional
        Data root (default: see :func:`data_root`).

    Returns
    -------
    pathlib.Path
        ``<root>/<layout.folder>``, holding every file of the layout.

    Raises
    ------
    DatasetNotFoundError
        Naming the data set, the files expected and missing, and the page to
        download it from.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         dataset_dir("mq2008", tmp)
    ...     except DatasetNotFoundError as exc:
    ...         print(str(exc).split(":")[0])
    dataset 'mq2008' not found under the data root
    """
    if name not in DATASETS:
        raise ValueError(f"`name` must be one of {sorted(DATASETS)}; got {name!r}.")
    layout = DATASETS[name]
    base = data_root(root)
    folder = base / layout.folder
    missing = [f for f in layout.files if not (folder / f).is_file()]
    if missing:
        raise DatasetNotFoundError(
            f"dataset {name!r} not found under the data root: {base}/{layout.folder}/{missing[0]} is missing "
            f"({len(missing)} of {len(layout.files)} expected files). Expected layout: {layout.describe()} "
            f"({layout.description}). Download it from {layout.url} and unpack it into {base}/{layout.folder}/."
        )
    return folder
