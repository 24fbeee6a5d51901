import numpy as np
import pytest
from sklearn.metrics import dcg_score, ndcg_score

import activerank as ar
from activerank.metrics import Metric

from .._reference import naive_dcg, naive_err


@pytest.mark.parametrize("text, name, k", [
    ("dcg@10", "dcg", 10), ("err", "err", None), ("err@20", "err", 20), (" ndcg(gain=linear)@5 ", "ndcg", 5),
    ("DCG@3", "dcg", 3), ("ndcg_cut_10", "ndcg", 10), ("P_5", "p", 5), ("map", "ap", None),
])
def test_parse_metric(text, name, k):
    assert ar.parse_metric(text) == Metric(name, k)


def test_parse_metric_kwarg_and_suffix():
    assert ar.parse_metric("err", k=3) == Metric("err", 3)
    assert ar.parse_metric("err@3", k=3) == Metric("err", 3)
    with pytest.raises(ValueError, match=r"`k`=4 contradicts the cutoff in `metric`='err@3'"):
        ar.parse_metric("err@3", k=4)


@pytest.mark.parametrize("bad", ["mapp@10", "", "dcg10", "ndcg-10", "dcg(gain=exp", "P_x", "ndcg_cut"])
def test_unknown_metric_lists_the_accepted_spellings(bad):
    with pytest.raises(ValueError, match=r"`metric` .* is not a known metric. Accepted spellings: activerank's "
                                         r"names ap, dcg, err, ndcg, p, r, rbp, rr, success .* ir_measures' "
                                         r"spellings nDCG, NDCG, ERR, .* trec_eval's names ndcg_cut_K, P_K"):
        ar.parse_metric(bad)


@pytest.mark.parametrize("bad", ["dcg@", "dcg@x", "err@10@2", "ndcg@-1", "rbp@0.8", "p@10)"])
def test_bad_cutoff_text(bad):
    with pytest.raises(ValueError, match=r"the cutoff after '@' must be a positive integer"):
        ar.parse_metric(bad)


def test_rbp_persistence_hint():
    with pytest.raises(ValueError, match=r"RBP's persistence is an option: 'rbp\(p=0.8\)'"):
        ar.parse_metric("rbp@0.8")


def test_metric_cutoff_zero_rejected():
    with pytest.raises(ValueError, match=r"must be >= 1"):
        ar.parse_metric("dcg@0")
    with pytest.raises(TypeError, match=r"`metric` must be a string"):
        ar.parse_metric(10)


def test_dcg_matches_sklearn_exponential_gain():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 15))
        labels = rng.integers(0, 5, n)
        scores = rng.permutation(n).astype(float)  # no ties: sklearn and we agree on order
        ranking = np.argsort(-scores)
        for k in (None, 1, 3, 10):
            want = dcg_score([2.0**labels - 1], [scores], k=k)
            got = ar.metric_value(labels, ranking, metric="dcg", k=k, ymax=4)
            assert got == pytest.approx(want, rel=1e-12)
            if (labels > 0).any():
                want_n = ndcg_score([2.0**labels - 1], [scores], k=k)
                got_n = ar.metric_value(labels, ranking, metric="ndcg(gain=exp)", k=k, ymax=4)
                assert got_n == pytest.approx(want_n, rel=1e-12)
                want_lin = ndcg_score([labels], [scores], k=k)   # sklearn's gain is the relevance itself
                got_lin = ar.metric_value(labels, ranking, metric="ndcg(gain=linear)", k=k, ymax=4)
                assert got_lin == pytest.approx(want_lin, rel=1e-12)


def test_err_hand_example_chapelle():
    # 5-grade scale (ymax = 4) as in Chapelle et al. 2009: R(g) = (2^g - 1) / 16.
    # grades 4, 0, 2: 15/16 + (1/16)(1)(0)/2 + (1/16)(1)(3/16)/3 = 15/16 + 1/256
    assert ar.metric_value([4, 0, 2], [0, 1, 2], metric="err", ymax=4) == 0.94140625
    # ymax is the scale's top grade: the same labels on a 0-2 scale give another value
    assert ar.metric_value([2, 0, 1], [0, 1, 2], metric="err", ymax=2) == pytest.approx(
        0.75 + 0.25 * 1.0 * 0.25 / 3)


def test_pool_values_match_naive():
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 9, 40)
    labels = rng.integers(0, 3, lengths.sum())
    offsets = np.r_[0, np.cumsum(lengths)]
    rankings = [rng.permutation(np.arange(offsets[q], offsets[q + 1])) for q in range(40)]
    for k in (None, 4):
        dcg = ar.pool_metric_values(labels, rankings, metric="dcg", k=k, ymax=2)
        err = ar.pool_metric_values(labels, rankings, metric="err", k=k, ymax=2)
        np.testing.assert_allclose(dcg, [naive_dcg(labels, r, k) for r in rankings], rtol=1e-13)
        np.testing.assert_allclose(err, [naive_err(labels, r, 2, k) for r in rankings], rtol=1e-13)


def test_metric_value_bad_input():
    with pytest.raises(ValueError, match=r"`labels` must lie on the grade scale 0..2; item 1 has grade 3"):
        ar.metric_value([0, 3], [0, 1], metric="dcg", ymax=2)
    with pytest.raises(ValueError, match=r"`ymax` must be >= 1"):
        ar.metric_value([0, 0], [0, 1], metric="dcg", ymax=0)
    with pytest.raises(ValueError, match=r"`ranking` must be a 1-d sequence"):
        ar.metric_value([0, 0], [[0, 1]], metric="dcg", ymax=2)


# --------------------------------------------------------------------------- grammar and options


@pytest.mark.parametrize("text, name, k, options", [
    ("p@10", "p", 10, ()),
    ("P(rel=2)@5", "p", 5, (("rel", 2),)),
    ("rr", "rr", None, ()),
    ("RR(rel=2)@10", "rr", 10, (("rel", 2),)),
    ("ap", "ap", None, ()),
    ("AP@100", "ap", 100, ()),
    ("rbp", "rbp", None, ()),
    ("rbp(p=0.9)", "rbp", None, (("p", 0.9),)),
    ("rbp( p = 0.5 , rel=2 )@20", "rbp", 20, (("p", 0.5), ("rel", 2))),
    ("ndcg(gain=linear)@10", "ndcg", 10, ()),  # the default is not stored
    ("ndcg(depth=20,gain=exp)@10", "ndcg", 10, (("depth", 20), ("gain", "exp"))),
    ("dcg(gain=LINEAR)", "dcg", None, (("gain", "linear"),)),
    ("dcg(gain={1: 1, 2: 5})", "dcg", None, (("gain", ((2, 5),)),)),
    ("dcg(gain={0: 0, 1: 1})", "dcg", None, (("gain", "linear"),)),  # identity table = linear
    ("err(ymax=4)@10", "err", 10, (("ymax", 4),)),
    ("err(ymax=scale)@10", "err", 10, ()),
    ("rbp(rel=graded)", "rbp", None, (("rel", None),)),
    ("ndcg(gain=exp)@10", "ndcg", 10, (("gain", "exp"),)),
    ("ap(depth=none)", "ap", None, ()),
    ("r(rel=2)@100", "r", 100, (("rel", 2),)),
    ("success@5", "success", 5, ()),
])
def test_grammar(text, name, k, options):
    m = ar.parse_metric(text)
    assert (m.name, m.k, m.options) == (name, k, options)
    assert ar.parse_metric(str(m)) == m  # canonical string round-trips


def test_canonical_string_and_repr():
    m = ar.parse_metric("RBP(rel=2, p=0.5)@20")
    assert str(m) == "rbp(p=0.5,rel=2)@20"
    assert repr(m) == "Metric(name='rbp', k=20, p=0.5, rel=2)"
    assert str(ar.parse_metric("ndcg@10", gain="linear")) == "ndcg(gain=linear)@10"


def test_keyword_options_equal_string_options():
    assert ar.parse_metric("p@5", rel=2) == ar.parse_metric("p(rel=2)@5")
    assert ar.parse_metric("err", k=10, ymax=4) == ar.parse_metric("err(ymax=4)@10")
    assert ar.parse_metric("p(rel=2)@5", rel=2) == ar.parse_metric("p(rel=2)@5")  # agreeing twice is fine


def test_params_fill_defaults():
    assert ar.parse_metric("rbp").params == {"p": 0.8, "rel": 1}
    assert ar.parse_metric("ndcg(gain=linear)@10").params == {"gain": "linear", "depth": None}
    assert ar.parse_metric("err").params == {"ymax": None}
    assert ar.parse_metric("dcg").params == {"gain": "exp"}


@pytest.mark.parametrize("call, exc, match", [
    (lambda: ar.parse_metric("p(rel=2)@5", rel=3), ValueError, r"option `rel`=3 contradicts `rel`=2"),
    (lambda: ar.parse_metric("dcg(p=0.5)"), ValueError, r"metric 'dcg' has no option 'p' \(options: gain\)"),
    (lambda: ar.parse_metric("err", gain="linear"), ValueError, r"metric 'err' has no option 'gain'"),
    (lambda: ar.parse_metric("dcg(gain=log)"), ValueError, r"option `gain` must be one of \['exp', 'linear'\]"),
    (lambda: ar.parse_metric("dcg(gain={0: 1})"), ValueError, r"grade 0 must have gain 0"),
    (lambda: ar.parse_metric("dcg(gain={1: -1})"), ValueError, r"gains must be finite numbers >= 0, got -1"),
    (lambda: ar.parse_metric("dcg(gain={1.5: 1})"), ValueError, r"grades must be integers >= 0, got 1.5"),
    (lambda: ar.parse_metric("dcg(gain=2**3)"), ValueError, r"option `gain` must be a number, a word or a"),
    (lambda: ar.parse_metric("nDCG(judged_only=True)@10"), ValueError, r"judged_only=True is not supported"),
    (lambda: ar.parse_metric("nDCG(dcg='exp-log2', gains={1: 2})@10"), ValueError, r"give `gains` or"),
    (lambda: ar.parse_metric("nDCG(dcg='log10')@10"), ValueError, r"option `dcg` must be 'log2' or 'exp-log2'"),
    (lambda: ar.parse_metric("nDCG(dcg='exp-log2', gain=linear)@10"), ValueError, r"contradicts the ir_measures"),
    (lambda: ar.parse_metric("ERR(judged_only=False)@10"), ValueError, r"metric 'err' has no option 'judged_only'"),
    (lambda: ar.parse_metric("success"), ValueError, r"metric 'success' needs a cutoff"),
    (lambda: ar.parse_metric("R"), ValueError, r"metric 'r' needs a cutoff"),
    (lambda: ar.parse_metric("rbp(p=1)"), ValueError, r"option `p` must lie in \(0, 1\), got 1.0"),
    (lambda: ar.parse_metric("rbp(p=x)"), ValueError, r"option `p` must be a number in \(0, 1\)"),
    (lambda: ar.parse_metric("rbp", p=True), TypeError, r"option `p` must be a number"),
    (lambda: ar.parse_metric("p(rel=0)@5"), ValueError, r"option `rel` must be >= 1, got 0"),
    (lambda: ar.parse_metric("p(rel=1.5)@5"), TypeError, r"option `rel` must be an integer >= 1"),
    (lambda: ar.parse_metric("p(rel=two)@5"), ValueError, r"option `rel` must be an integer >= 1"),
    (lambda: ar.parse_metric("p@5", rel=2.0), TypeError, r"option `rel` must be an integer >= 1"),
    (lambda: ar.parse_metric("p"), ValueError, r"metric 'p' needs a cutoff, e.g. 'p@10'"),
    (lambda: ar.parse_metric("ndcg(depth=5,gain=exp)@10"), ValueError, r"option `depth`=5 of metric 'ndcg' must be "),
    (lambda: ar.parse_metric("rbp(p)"), ValueError, r"options must be written 'name=value', got 'p'"),
    (lambda: ar.parse_metric("rbp(p=0.5,p=0.6)"), ValueError, r"option 'p' given twice"),
    (lambda: ar.parse_metric("rr", require_moments="yes"), ValueError, r"`require_moments` must be"),
])
def test_bad_options(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_scale_dependent_options_checked_against_the_scale():
    with pytest.raises(ValueError, match=r"option `ymax`=1 of metric 'err\(ymax=1\)' is below the label "
                                         r"scale's top grade 2"):
        ar.metric_value([0, 2], [0, 1], metric="err(ymax=1)", ymax=2)
    with pytest.raises(ValueError, match=r"option `rel`=3 of metric 'p\(rel=3\)@2' exceeds the label scale's "
                                         r"top grade 2"):
        ar.metric_value([0, 2], [0, 1], metric="p(rel=3)@2", ymax=2)


def test_require_moments_exact_or_approximate():
    for text in ("ap", "dcg@5", "rr", "p@3", "rbp", "err", "r@3", "success@2"):
        assert ar.parse_metric(text, require_moments=True).name == text.split("@")[0]
    assert ar.parse_metric("rr", require_moments="exact").moments == "exact"
    assert ar.parse_metric("success@2", require_moments="exact").moments == "exact"
    assert ar.parse_metric("ap").moments == "approximate"
    assert ar.parse_metric("r@5").moments == "approximate"
    with pytest.raises(ValueError, match=r"`metric` 'ndcg\(gain=linear\)@10' has no exact moments .* exact "
                                         r"moments: \['dcg', 'err', 'p', 'rbp', 'rr', 'success'\]"):
        ar.parse_metric("ndcg(gain=linear)@10", require_moments="exact")


def test_describe_metrics_lists_the_registry():
    from activerank.metrics import describe_metrics
    rows = describe_metrics()
    assert [r["name"] for r in rows] == list(ar.METRICS)
    p = next(r for r in rows if r["name"] == "p")
    assert p["needs_cutoff"] and p["options"] == "rel=1" and p["moments"] == "exact"


def test_every_builtin_is_documented_and_has_a_family():
    families = {d.family for d in ar.METRICS.values()}
    assert {"additive", "cascade", "ratio"} <= families
    for name, d in ar.METRICS.items():
        assert d.name == name and d.description
        assert d.moments == ("exact" if d.family in ("additive", "cascade") else "approximate")
        for p in d.params.values():
            assert p.description


# --------------------------------------------------------------------------- custom metrics


def _success3(y, valid):
    return (y[..., :3] >= 2).any(axis=-1).astype(float)


def test_custom_metric_object_and_registration():
    from activerank.metrics import METRICS, custom_metric, register_metric
    d = custom_metric("success3_test", _success3, description="any grade-2 document in the top 3")
    m = ar.parse_metric(d, k=10)
    assert m.name == "success3_test" and m.k == 10 and m.family == "custom" and m.moments == "approximate"
    assert m.definition is d
    with pytest.raises(ValueError, match=r"is not a known metric"):
        ar.parse_metric("success3_test@10")  # not registered yet
    try:
        register_metric(d)
        assert ar.parse_metric("success3_test@10") == ar.parse_metric(d, k=10)
        with pytest.raises(ValueError, match=r"already registered; pass replace=True"):
            register_metric(custom_metric("success3_test", _success3))
        register_metric(custom_metric("success3_test", _success3), replace=True)
    finally:
        METRICS.pop("success3_test", None)


def test_custom_metric_bad_input():
    from activerank.metrics import custom_metric, register_metric
    with pytest.raises(TypeError, match=r"`function` must be callable"):
        custom_metric("x", 3)
    with pytest.raises(ValueError, match=r"metric name '9x' must match"):
        custom_metric("9x", _success3)
    with pytest.raises(ValueError, match=r"'ndcg' is a built-in metric \(or one of its spellings\) and cannot"):
        register_metric(custom_metric("ndcg", _success3), replace=True)
    for reserved in ("map", "recall", "mrr", "precision", "recip_rank", "p_10", "ndcg_cut_5"):
        with pytest.raises(ValueError, match=r"is a built-in metric \(or one of its spellings\)"):
            register_metric(custom_metric(reserved, _success3))
    with pytest.raises(TypeError, match=r"`definition` must be a MetricDef"):
        register_metric("ndcg")
