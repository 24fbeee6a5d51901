import os
from pathlib import Path

import numpy as np
import pytest

from activerank.ragged import offsets_from_lengths

# Long Monte-Carlo checks scale with ACTIVERANK_STAT_SCALE (default 1; CI runs 0.3, and its checks hold at
# that size, the cheap vectorized ones whose bands need their full size keeping it; e.g. 5 for a more thorough local run).
STAT_SCALE = float(os.environ.get("ACTIVERANK_STAT_SCALE", "1"))


# Full data sets (LETOR MQ2008, OHSUMED, ...): $ACTIVERANK_DATA, else ../shared/data next to the repository.
REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data(*parts) -> Path | None:
    """``<data root>/<parts>`` if it exists, else ``None`` (tests using it skip cleanly)."""
    env = os.environ.get("ACTIVERANK_DATA", "").strip()
    root = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    p = root.joinpath(*parts)
    return p if p.exists() else None


def require_shared_data(*parts) -> Path:
    """Like :func:`shared_data`, but skips the calling test when the data are absent."""
    p = shared_data(*parts)
    if p is None:
        pytest.skip(f"shared data {'/'.join(parts) or '.'} not present (set ACTIVERANK_DATA or put it in "
                    "../shared/data next to the repository)")
    return p


def load_benchmark(folder: Path, file: str, name: str):
    """A benchmark script as a module, loaded by path under ``name`` (the benchmarks folder never shadows
    installed modules); ``folder`` is on ``sys.path`` while it loads, for its sibling imports."""
    import importlib.util
    import sys

    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(name, folder / file)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(folder))
    return mod


def stat_reps(base: int) -> int:
    return max(1, int(round(base * STAT_SCALE)))


class SyntheticPool:
    """A random pool with a known relevance model: labels are drawn from ``probs``."""

    def __init__(self, rng, n_queries=200, max_docs=12, n_grades=3):
        lengths = rng.integers(3, max_docs + 1, n_queries)
        self.offsets = offsets_from_lengths(lengths)
        self.query_ids = np.arange(1000, 1000 + n_queries)
        n = int(self.offsets[-1])
        # heterogeneous queries: some mostly irrelevant, some rich in relevant documents
        richness = rng.beta(0.6, 1.5, n_queries)
        alpha = np.stack([np.full(n_queries, 1.0), 2 * richness, richness], axis=1)[:, :n_grades]
        alpha = np.repeat(alpha, lengths, axis=0) + 0.05
        self.probs = np.array([rng.dirichlet(a) for a in alpha])
        self.doc_ids = None
        self.doc_length = rng.integers(20, 2000, n).astype(float)
        self.n_grades = n_grades

    def sample_labels(self, rng):
        cdf = np.cumsum(self.probs, axis=1)
        return (rng.random(self.probs.shape[0])[:, None] > cdf).sum(axis=1).clip(0, self.n_grades - 1)


@pytest.fixture
def synthetic_pool():
    return SyntheticPool(np.random.default_rng(12345))
