"""``estimate_sequential`` on a Dask pool: the in-memory run, with only the reachable queries fetched."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")

import activerank as ar  # noqa: E402
import activerank.distributed as ard  # noqa: E402

from ._pools import labeler_of  # noqa: E402

PROBS = ["p0", "p1", "p2"]


@pytest.mark.parametrize("scores, sequence, target, reason", [
    ("score_a", "windowed", 1.0, "target"), ("score_a", "mixture", 0.01, "budget"),
    (("score_a", "score_b"), "fixed_width", 1.0, None)])
def test_equals_in_memory(data, scores, sequence, target, reason):
    df, labels, frame = data
    pool = ard.DaskPool(frame, cost="cost")
    cols = [scores] if isinstance(scores, str) else list(scores)
    mem, s, probs, doc_costs = ard.in_memory(pool, scores=cols, probs=PROBS)
    kw = dict(target_half_width=target, budget=60, metric="dcg@5", rng=3, sequence=sequence, min_draws=10)
    res_d = ard.estimate_sequential(pool, scores, PROBS, labeler_of(labels), **kw)
    res_m = ar.estimate_sequential(mem, s[0] if len(s) == 1 else tuple(s), probs, labeler_of(labels),
                                   costs=doc_costs, judge="all", **kw)
    assert type(res_d) is type(res_m) and res_d.stopping_reason == res_m.stopping_reason
    assert reason is None or res_d.stopping_reason == reason  # a stop on the target: a data-dependent prefix
    point = "estimate" if isinstance(scores, str) else "difference"
    for f in (point, "standard_error", "half_width", "cost_spent", "n_draws"):
        assert getattr(res_d, f) == pytest.approx(getattr(res_m, f), rel=1e-9, abs=1e-12), f
    np.testing.assert_array_equal(res_d.trace["query_id"], res_m.trace["query_id"])
    assert res_d.trace.attrs["auto"]["method"] == "active"


def test_bad_arguments(data):
    df, labels, frame = data
    args = (frame, "score_a", PROBS, labeler_of(labels))
    with pytest.raises(ValueError, match="`method`"):
        ard.estimate_sequential(*args, target_half_width=0.1, budget=5, method="active_wor")
    with pytest.raises(ValueError, match="`target_half_width`"):
        ard.estimate_sequential(*args, target_half_width=0, budget=5)
    with pytest.raises(ValueError, match="`scores` must name one or two"):
        ard.estimate_sequential(frame, ["score_a"] * 3, PROBS, labeler_of(labels), target_half_width=0.1, budget=5)
    with pytest.raises(ValueError, match="`sequence`"):
        ard.estimate_sequential(*args, target_half_width=0.1, budget=5, sequence="nope")
