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


@pytest.mark.parametrize("metric", ["err@10", "dcg@10"])
def test_auto_campaign_chooses_as_the_api_and_equals_its_estimate(tmp_path, data, probs, labels, metric):
    a = data.X[:, 24]
    ref = ar.estimate(data, a, probs, labels, budget=8, metric=metric, method="auto", rng=2)
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric=metric, method="auto", seed=2) as c:
        assert c.method == ref.method != "auto"
        assert c.meta["auto"] == ref.trace.attrs["auto"]
        _finish(c, labels, tmp_path)
        res = c.estimate()
    assert res.method == ref.method and res.trace.attrs["auto"] == ref.trace.attrs["auto"]
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12)
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.estimate().trace.attrs["auto"]["method"] == ref.method
        assert c.check() == []


def test_auto_campaign_comparison(tmp_path, data, probs, labels):
    a, b = data.X[:, 24], data.X[:, 39]
    ref = ar.compare(data, a, b, probs, labels, budget=10, metric="err@10", method="auto", rng=5)
    with Campaign.create(tmp_path / "c.db", data, [a, b], probs, budget=10, metric="err@10", method="auto",
                         seed=5) as c:
        _finish(c, labels, tmp_path)
        res = c.estimate()
    assert res.method == ref.method
    assert np.isclose(res.difference, ref.difference, rtol=1e-12)
