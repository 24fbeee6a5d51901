"""Agreement between assessors (activerank.judges.assessors)."""

import numpy as np
import pandas as pd
import pytest

from activerank.judges import assessor_agreement, weighted_kappa


def test_pairwise_kappas_on_the_shared_pairs():
    a = {("q", f"d{i}"): i % 3 for i in range(12)}
    b = {k: (g if i % 4 else (g + 1) % 3) for i, (k, g) in enumerate(a.items())}
    c = {("q", "d0"): 0, ("q", "x"): 1}  # shares one pair with a and b
    out = assessor_agreement({"a": a, "b": b, "c": c}, n_grades=3)
    assert out.assessors == ("a", "b", "c") and out.n_pairs == 13 and out.n_shared == 12
    ab = out.pairwise[0]
    ga, gb = np.array(list(a.values())), np.array([b[k] for k in a])
    assert ab[:3] == ("a", "b", 12) and ab[3] == pytest.approx(weighted_kappa(ga, gb, n_levels=3))
    assert ab[5] == pytest.approx(np.mean(ga == gb))
    assert [p[:3] for p in out.pairwise[1:]] == [("a", "c", 1), ("b", "c", 1)]
    assert out.to_dict()["pairwise"][0]["n_pairs"] == 12 and "quadratic kappa" in out.summary()


def test_a_frame_gives_the_same_numbers():
    rows = [("q1", "d1", "ann", 2), ("q1", "d1", "bob", 1), ("q1", "d2", "ann", 0), ("q1", "d2", "bob", 0),
            ("q2", "d1", "ann", 1), ("q2", "d1", "bob", 1)]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "assessor", "grade"])
    by = {}
    for q, d, a, g in rows:
        by.setdefault(a, {})[(q, d)] = g
    assert assessor_agreement(frame, n_grades=3) == assessor_agreement(by, n_grades=3)


def test_bad_grades():
    with pytest.raises(ValueError, match=r"`grades\['a'\]\[\('q', 'd'\)\]`: grade 3 is not an integer in 0..2"):
        assessor_agreement({"a": {("q", "d"): 3}}, n_grades=3)
    frame = pd.DataFrame([("q", "d", "a", 1), ("q", "d", "a", 2)], columns=["query_id", "doc_id", "assessor", "grade"])
    with pytest.raises(ValueError, match="row 1: assessor 'a' graded query 'q', document 'd' twice"):
        assessor_agreement(frame, n_grades=3)
    with pytest.raises(ValueError, match="lacks the columns"):
        assessor_agreement(frame.drop(columns="assessor"), n_grades=3)
    with pytest.raises(TypeError, match="must be a mapping assessor"):
        assessor_agreement([1, 2], n_grades=3)
