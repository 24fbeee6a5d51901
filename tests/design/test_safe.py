import numpy as np
import pytest

from activerank.design.safe import candidate_scores, choose_scores, combine_stages, planned_pi
from activerank.design.without_replacement import draw_without_replacement_batch


def _pool(seed, informative):
    rng = np.random.default_rng(seed)
    N = 500
    m = rng.beta(1, 3, N)
    sd_true = np.where(rng.random(N) < 0.2, 0.4, 0.02)        # a few queries carry all the noise
    y = m + rng.normal(0, 1, N) * sd_true
    v = sd_true**2 if informative else (0.42 - sd_true) ** 2  # predicted variance right or backwards
    return y, m, v


def test_candidate_scores_rows_have_unit_expected_cost():
    p = np.full(4, 0.25)
    lam = np.array([1.0, 2.0, 0.5, 0.5])
    c = candidate_scores(p, lam, [np.array([1.0, 0.0, 2.0, 1.0])], mixtures=(0.0, 0.5))
    np.testing.assert_allclose(c @ lam, 1.0)
    assert c.shape == (3, 4)
    np.testing.assert_allclose(c[0], p / (p @ lam))


@pytest.mark.parametrize("informative, expect_active", [(True, True), (False, False)])
def test_pilot_keeps_a_good_model_and_refutes_a_wrong_one(informative, expect_active):
    y, m, v = _pool(0, informative)
    N = y.size
    p = np.full(N, 1.0 / N)
    lam = np.ones(N)
    cands = candidate_scores(p, lam, [p * np.sqrt(v)])
    pp = planned_pi(cands, lam, 60.0)
    model_var = [np.sum(p**2 * v * (1 / c - 1)) for c in pp]
    b = draw_without_replacement_batch(p, lam, [30.0], 400, rng=1)
    mask, pi, o = b.mask()[0], b.pi()[0], b.order
    dec = choose_scores(y[o][None], m[o][None], pi, p[o], mask, [p @ m], pp[:, o], model_variance=model_var)
    share = np.mean(dec.choice > 0)
    assert (share > 0.9) if expect_active else (share < 0.05)
    # without the model's own ranking the pilot must prove the gain
    dec0 = choose_scores(y[o][None], m[o][None], pi, p[o], mask, [p @ m], pp[:, o])
    assert np.mean(dec0.choice > 0) <= share + 1e-12
    assert dec.stage1_estimate.shape == (1, 400)


def test_combine_stages_weights():
    e, v, w = combine_stages(np.array([1.0, np.nan]), np.array([4.0, np.nan]), np.array([2.0, 2.0]),
                             np.array([1.0, 1.0]), np.array([1.0, 1.0]))
    np.testing.assert_allclose(w, [0.2, 0.0])
    np.testing.assert_allclose(e, [0.2 * 1 + 0.8 * 2, 2.0])
    np.testing.assert_allclose(v, [0.04 * 4 + 0.64 * 1, 1.0])
    # the model-predicted pilot variance overrides an estimate of 0 (pilot saw only zeros)
    _, _, w2 = combine_stages(0.0, 0.0, 1.0, 1.0, 1.0, predicted_var1=3.0)
    assert float(w2) == pytest.approx(0.25)
