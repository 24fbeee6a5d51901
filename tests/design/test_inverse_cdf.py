"""The guide-table inverse CDF returns exactly the searchsorted index, on adversarial cdfs too."""

import numpy as np
import pytest

from activerank.design._inverse_cdf import InverseCDF


def _searchsorted(cdf, u):
    return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)


def _uniforms(rng, cdf, n=5000):
    """Random uniforms plus every cdf value and its two neighbouring doubles, in [0, 1)."""
    u = np.concatenate([rng.random(n), cdf, np.nextafter(cdf, -1.0), np.nextafter(cdf, 2.0),
                        [0.0, np.nextafter(1.0, 0.0), 0.5]])
    return u[(u >= 0.0) & (u < 1.0)]


def _weights(rng, m, kind):
    if kind == "dirichlet":
        return rng.dirichlet(np.full(m, 0.5))
    if kind == "zeros":  # q = 0 queries: runs of equal cdf values
        q = rng.dirichlet(np.full(m, 0.5))
        q[rng.random(m) < 0.6] = 0.0
        q[rng.integers(m)] = 1.0
        return q
    if kind == "spike_first":  # one bucket crowded with almost every entry
        q = np.full(m, 1e-12)
        q[0] = 1.0
        return q
    if kind == "spike_last":
        q = np.full(m, 1e-12)
        q[-1] = 1.0
        return q
    if kind == "tiny_steps":  # many distinct values inside one bucket
        return np.r_[1.0, np.linspace(1e-9, 2e-9, m - 1)] if m > 1 else np.ones(1)
    if kind == "equal":
        return np.ones(m)
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["dirichlet", "zeros", "spike_first", "spike_last", "tiny_steps", "equal"])
@pytest.mark.parametrize("m", [1, 2, 3, 17, 500])
@pytest.mark.parametrize("n_buckets", [None, 1, 7])
def test_equals_searchsorted(kind, m, n_buckets):
    rng = np.random.default_rng([m, len(kind), n_buckets or 0])
    q = _weights(rng, m, kind)
    cdf = np.cumsum(q / q.sum())
    cdf[-1] = 1.0
    inv = InverseCDF.from_weights(q) if n_buckets is None else InverseCDF(
        np.minimum.accumulate(cdf[::-1])[::-1], n_buckets=n_buckets)
    u = _uniforms(rng, cdf)
    np.testing.assert_array_equal(inv(u), _searchsorted(cdf, u))
    # any shape and memory layout in, same shape out
    assert inv(u[:6].reshape(2, 3)).shape == (2, 3)
    block = u[: (u.size // 8) * 8].reshape(-1, 8)
    for view in (block.T, block[:, [0, 3, 5]], block[::2, ::3], np.asfortranarray(block)):
        np.testing.assert_array_equal(inv(view), _searchsorted(cdf, view))


def test_cdf_not_ending_at_one_and_uniforms_outside():
    cdf = np.array([0.1, 0.1, 0.4, 0.4, 0.4, 0.9])
    inv = InverseCDF(cdf)
    u = np.array([-0.5, 0.0, 0.1, 0.0999, 0.4, 0.5, 0.9, 0.95, 1.0, 3.0])
    np.testing.assert_array_equal(inv(u), _searchsorted(cdf, u))


def test_rounded_tail_above_one():
    """Setting cdf[-1] = 1 can leave earlier entries a rounding above it; draws must not change."""
    q = np.array([0.08401534358238483, 0.8326441476533978, 0.7870983074886834, 0.23936944299295215,
                  0.8764842308107038, 0.05856803480519435, 0.3361170605456604, 0.15027946689483906,
                  0.450339366649287, 0.7963242702872942, 0.23064220899374743, 0.05202130106440961,
                  0.4045518398215282, 0.19851304450925533, 0.0907530456191219, 0.5803323859868507,
                  0.2986961328189226, 0.6719948779563594, 0.1995154439682133, 0.9421131105064978,
                  1.0549527957022954e-18])
    cdf = np.cumsum(q / q.sum())
    assert cdf[-2] > 1.0  # the case this test is about
    cdf[-1] = 1.0
    with pytest.raises(ValueError, match="non-decreasing"):
        InverseCDF(cdf)
    u = _uniforms(np.random.default_rng(0), cdf)
    np.testing.assert_array_equal(InverseCDF.from_weights(q)(u), _searchsorted(cdf, u))


def test_validation():
    with pytest.raises(ValueError, match="`cdf` must not be empty"):
        InverseCDF([])
    with pytest.raises(ValueError, match=r"`cdf` must be non-decreasing; entry 2 is below entry 1"):
        InverseCDF([0.1, 0.5, 0.4])
    with pytest.raises(ValueError, match="`cdf` must be finite"):
        InverseCDF([0.1, np.nan])
    with pytest.raises(ValueError, match="`n_buckets` must be a positive integer"):
        InverseCDF([0.5, 1.0], n_buckets=0)
