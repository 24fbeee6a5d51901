"""Campaigns with ``method="auto"``: the API's choice, made once at creation and stored."""

import json

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign


def _finish(camp, labels, tmp_path):
    """Export, answer, import until the estimate is usable (one round for fixed plans, several for prefix)."""
    for r in range(100):
        if camp.status().blocking_query is None:  # nothing waits (prefix: the query the budget cuts is not used)
            return
        out = tmp_path / f"t{r}.jsonl"
        camp.export_tasks(out, overwrite=True)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        ans = [{**t, "grade": int(labels(t["query_id"], [t["doc_id"]])[0])} for t in rows]
        (tmp_path / f"a{r}.jsonl").write_text("".join(json.dumps(t) + "\n" for t in ans))
        camp.import_judgments(tmp_path / f"a{r}.jsonl")
    raise AssertionError("the campaign did not finish")


@pytest.mark.filterwarnings("ignore::activerank.LowEffectiveSampleSizeWarning")  # 8 draws of 'active'
@pytest.mark.parametrize("metric", ["err@10", "dcg@10"])
def test_auto_campaign_chooses_a_design_usable_from_any_judged_head(tmp_path, data, probs, labels, metric):
    """The default: auto weighs 'active' against 'doc_dyn' (additive metrics), never a design that estimates
    only once complete; the campaign then equals the API run of the chosen method at the same seed."""
    a = data.X[:, 24]
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric=metric, seed=2) as c:
        chosen, auto = c.method, c.meta["auto"]
        assert auto["method"] == chosen and set(auto["predicted_variance"]) <= {"active", "doc_dyn"}
        if metric == "err@10":  # prefix estimates only once its walks stop: not a campaign default
            assert chosen == "active" and "'prefix' not considered" in auto["reason"]
        else:
            api = ar.estimate(data, a, probs, labels, budget=8, metric=metric, rng=2)
            assert chosen == "doc_dyn" == api.method  # as the API's default, here
        _finish(c, labels, tmp_path)
        res = c.estimate()
    ref = ar.estimate(data, a, probs, labels, budget=8, metric=metric, method=chosen, rng=2)
    assert res.method == chosen and res.trace.attrs["auto"] == auto
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12)
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.estimate().trace.attrs["auto"]["method"] == chosen
        assert c.check() == []


def test_auto_campaign_comparison(tmp_path, data, probs, labels):
    a, b = data.X[:, 24], data.X[:, 39]
    with Campaign.create(tmp_path / "c.db", data, [a, b], probs, budget=10, metric="dcg@10", seed=5) as c:
        chosen = c.method
        _finish(c, labels, tmp_path)
        res = c.estimate()
    ref = ar.compare(data, a, b, probs, labels, budget=10, metric="dcg@10", method=chosen, rng=5)
    assert res.method == chosen
    assert np.isclose(res.difference, ref.difference, rtol=1e-12)
