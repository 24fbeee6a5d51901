"""The rounds of a judged run: the calibration rounds' weights and the combined estimate (engine.judged)."""

import math

import numpy as np
import pandas as pd
import pytest

from activerank.design.kinds.base import DesignFit
from activerank.engine.judged import CALIBRATION_SHARES, CalibrationRound, combine_rounds, round_weight
from activerank.inference.estimators import Estimate


def _fit(est, var, dof, *, exact=False, cost=3.0):
    e = Estimate(np.array(est, dtype=float), np.diag(np.array(var, dtype=float)), 10.0)
    return DesignFit(e, None, dof, 10, 5, cost, 10.0, exact, pd.DataFrame(), ci="t")


def test_the_combination_is_the_weighted_mean_with_both_variances():
    first = CalibrationRound(_fit([1.0], [4.0], 9.0), spent=6.0, weight=0.25)
    out = combine_rounds([first], _fit([3.0], [1.0], 19.0, cost=7.0), factor=2.0, whole_budget=10.0)
    assert out.estimate.estimate[0] == pytest.approx(0.25 * 1.0 + 0.75 * 3.0)
    v1, v2 = 0.25**2 * 4.0, 0.75**2 * 1.0
    assert out.estimate.covariance[0, 0] == pytest.approx(v1 + v2)
    assert out.dof == pytest.approx((v1 + v2) ** 2 / (v1**2 / 9.0 + v2**2 / 19.0))  # Welch-Satterthwaite
    assert out.cost_spent == pytest.approx(7.0 + 6.0 / 2.0) and out.budget == 10.0 and out.ci == "t"


def test_an_exact_round_is_not_mixed_with_a_noisy_one():
    noisy = _fit([1.0], [4.0], 9.0)
    exact = _fit([2.0], [0.0], math.inf, exact=True)
    out = combine_rounds([CalibrationRound(noisy, 1.0, 0.4)], exact, factor=1.0, whole_budget=5.0)
    assert out.estimate.estimate[0] == 2.0 and out.exact
    out = combine_rounds([CalibrationRound(exact, 1.0, 0.4)], noisy, factor=1.0, whole_budget=5.0)
    assert out.estimate.estimate[0] == 2.0 and out.estimate.covariance[0, 0] == 0.0


def test_calibration_rounds_enter_with_their_weights_and_the_last_round_with_the_rest():
    rounds = [CalibrationRound(_fit([1.0], [4.0], 9.0), spent=2.0, weight=0.2),
              CalibrationRound(_fit([2.0], [2.0], 14.0), spent=4.0, weight=0.3)]
    out = combine_rounds(rounds, _fit([3.0], [1.0], 19.0, cost=5.0), factor=2.0, whole_budget=10.0)
    assert out.estimate.estimate[0] == pytest.approx(0.2 * 1.0 + 0.3 * 2.0 + 0.5 * 3.0)
    v = [0.2**2 * 4.0, 0.3**2 * 2.0, 0.5**2 * 1.0]
    assert out.estimate.covariance[0, 0] == pytest.approx(sum(v))
    assert out.dof == pytest.approx(sum(v) ** 2 / (v[0] ** 2 / 9.0 + v[1] ** 2 / 14.0 + v[2] ** 2 / 19.0))
    assert out.cost_spent == pytest.approx(5.0 + 6.0 / 2.0) and not out.exact
    # a round of weight 0 drops out; one exact round is the answer
    skip = combine_rounds([rounds[0], CalibrationRound(_fit([9.0], [9.0], 5.0), 1.0, 0.0)], _fit([3.0], [1.0], 19.0),
                          factor=1.0, whole_budget=10.0)
    assert skip.estimate.estimate[0] == pytest.approx(0.2 * 1.0 + 0.8 * 3.0)
    exact = _fit([2.5], [0.0], math.inf, exact=True)
    out = combine_rounds([rounds[0], CalibrationRound(exact, 1.0, 0.3)], _fit([3.0], [1.0], 19.0), factor=1.0,
                         whole_budget=10.0)
    assert out.estimate.estimate[0] == 2.5 and out.exact and out.estimate.covariance[0, 0] == 0.0


def test_a_zero_weight_keeps_the_last_round():
    second = _fit([3.0], [1.0], 19.0, cost=4.0)
    out = combine_rounds([CalibrationRound(_fit([1.0], [4.0], 9.0), 2.0, 0.0)], second, factor=1.0, whole_budget=8.0)
    assert out.estimate is second.estimate and out.cost_spent == 6.0 and out.budget == 8.0


def test_the_weight_comes_from_the_designs_predicted_variances():
    class Kind:
        def predicted_variance(self, design, budget):
            return 100.0 / budget  # a design whose variance falls as 1 / budget

    class Design:
        method_spec = type("S", (), {"kind": Kind()})()

    def make(probs, held, budget):
        return Design(), 1.0

    assert round_weight(make, None, None, 20.0, 6.0) == pytest.approx(0.3)  # the share's budget over the whole's
    assert round_weight(make, None, None, 20.0) == pytest.approx(CALIBRATION_SHARES[0])  # round 1's default share
    assert round_weight(make, None, None, 14.0, 3.0) == pytest.approx(3.0 / 14.0)  # a later round: of what is left

    def refuses(probs, held, budget):
        raise ValueError("buys too little")

    assert round_weight(refuses, None, None, 20.0) == 0.0
