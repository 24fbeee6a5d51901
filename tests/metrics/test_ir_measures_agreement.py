"""ir_measures' names give ir_measures' numbers; trec_eval's names give trec_eval's.

Every ir_measures spelling activerank accepts (strings and measure objects) is
evaluated per query by activerank and by ir_measures on the same qrels and run,
with tied scores: values agree to 1e-9 through ``pool_metric_values``, and the
pool mean agrees through a census ``estimate`` (a budget that buys every
query).  Exceptions, each tested against the provider's published formula
instead:

* gdeval (ir_measures' ``ERR@k`` and ``nDCG(dcg='exp-log2')@k``) prints 5
  decimals, so those agree to 5e-6 with ir_measures and to 1e-12 with gdeval's
  formula (``R(y) = (2^y - 1) / 2^4``, exponential gains);
* RBP needs trectools (graded, ``RBP``) or cwl_eval (``RBP(rel=...)``), not in
  the dev extra: Moffat & Zobel's formula without residual;
* ``RR@k`` comes from ir_measures' MS MARCO provider, which orders tied scores
  by document id *ascending*; activerank keeps trec_eval's order everywhere, so
  ``RR@k`` is compared on a run without ties (``RR`` without cutoff, from
  trec_eval, is compared with ties).

trec_eval's names (``ndcg_cut_10``, ``P_10``, ``map`` ...) are checked against
pytrec_eval itself.  Data: the shipped MQ2008 sample (LETOR feature 25 as the
run: many ties), LightGBM's lambdarank example (``$ACTIVERANK_DATA``; skipped
without it) and a hand-written TREC run with ties, unjudged retrieved documents
and judged unretrieved ones.
"""

from __future__ import annotations

import math
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import activerank as ar
from activerank.relevance.rankers import rank_by_scores

from ..conftest import require_shared_data

ir_measures = pytest.importorskip("ir_measures")

TOL = 1e-9
GDEVAL_TOL = 5.1e-6  # gdeval prints %.5f
REPO = Path(__file__).resolve().parents[2]

# ir_measures spellings computed by providers in the dev extra (pytrec_eval)
TREC_EVAL_BACKED = ("nDCG@10", "nDCG@5", "nDCG", "NDCG@10", "nDCG(gains={0:0,1:1,2:3})@10",
                    "nDCG(gains={1:3,2:1})@5", "nDCG(judged_only=False)@10", "P@10", "P@5", "P(rel=2)@5",
                    "Precision@3", "RR", "RR(rel=2)", "MRR", "AP", "AP@10", "AP(rel=2)", "MAP", "R@10", "R@100",
                    "Recall@5", "Success@1", "Success@5", "Success(rel=2)@10")
GDEVAL_BACKED = ("ERR@10", "ERR@5", "ERR@20", "nDCG(dcg='exp-log2')@10")
TREC_EVAL_NAMES = ("ndcg", "ndcg_cut_10", "ndcg_cut.5", "P_10", "P.5", "recip_rank", "map", "map_cut_10",
                   "recall_10", "success_5")


def _quiet_parse(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the 0.5 meaning change of nDCG/ERR/RBP spellings
        return ar.parse_metric(spec)


def _measure(spec):
    return ir_measures.parse_measure(spec)


# --------------------------------------------------------------------------- direct formulas


def _gdeval_err(grades, k):
    value, still = 0.0, 1.0
    for i, y in enumerate(grades[:k]):
        r = (2.0 ** max(y, 0) - 1.0) / 2.0**4
        value += still * r / (i + 1)
        still *= 1.0 - r
    return value


def _gdeval_ndcg(grades, ideal_grades, k):
    def dcg(gs):
        return sum((2.0 ** max(y, 0) - 1.0) / math.log(i + 2) for i, y in enumerate(gs[:k]))

    ideal = dcg(sorted(ideal_grades, reverse=True))
    return dcg(grades) / ideal if ideal > 0 else 0.0


def _rbp(grades, p, rel, k):
    """Moffat & Zobel: (1 - p) sum_i p^(i-1) r_i, r_i = 1[y >= rel] or the grade (rel=None, graded)."""
    gs = grades if k is None else grades[:k]
    return (1 - p) * sum(p**i * (y if rel is None else float(y >= rel)) for i, y in enumerate(gs))


# --------------------------------------------------------------------------- cases


class Case:
    """A pool, its (possibly incomplete) qrels and one run, in activerank's and ir_measures' forms."""

    def __init__(self, query_ids, offsets, doc_ids, labels, judged_mask, rankings, scores):
        self.query_ids = [str(q) for q in query_ids]
        self.offsets = np.asarray(offsets)
        self.doc_ids = np.asarray([str(d) for d in doc_ids], dtype=object)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.ymax = max(int(self.labels.max()), 1)
        self.rankings = rankings
        self.judged_mask = np.asarray(judged_mask, dtype=bool)
        q = np.repeat(np.arange(len(self.query_ids)), np.diff(self.offsets))
        self.judged = ar.Rankings.from_list([np.flatnonzero(self.judged_mask[o:e]) + o
                                             for o, e in zip(self.offsets[:-1], self.offsets[1:])])
        self.qrels = [ir_measures.Qrel(self.query_ids[q[z]], self.doc_ids[z], int(self.labels[z]))
                      for z in np.flatnonzero(self.judged_mask)]
        self.scores = np.asarray(scores, dtype=np.float64)
        self.run = self._run(self.scores)

    def _run(self, scores):
        return [ir_measures.ScoredDoc(self.query_ids[x], self.doc_ids[z], float(scores[z]))
                for x in range(len(self.query_ids)) for z in self.rankings[x]]

    def untied_run(self):
        """The same ranked lists, scores replaced by strictly decreasing ones (no ties left)."""
        scores = self.scores.copy()
        for r in self.rankings:
            scores[np.asarray(r, dtype=int)] = -np.arange(len(r), dtype=float)
        return self._run(scores)

    def ours(self, spec):
        m = _quiet_parse(spec)
        complete = bool(self.judged_mask.all())
        judged = None if (complete or m.family != "ratio") else self.judged
        labels = np.where(self.judged_mask, self.labels, 0)  # unjudged = 0
        return ar.pool_metric_values(labels, self.rankings, metric=m, ymax=self.ymax, judged=judged,
                                     offsets=self.offsets if judged is None and m.family == "ratio" else None)

    def ranked_grades(self, x):
        labels = np.where(self.judged_mask, self.labels, 0)
        return [int(labels[z]) for z in self.rankings[x]]

    def compare(self, spec, theirs, tol=TOL, every_query=True):
        ours = dict(zip(self.query_ids, self.ours(spec)))
        assert theirs, spec
        assert set(theirs) <= set(ours)
        if every_query:
            assert len(theirs) == len(ours), (spec, len(theirs))
        worst = max(abs(ours[q] - v) for q, v in theirs.items())
        assert worst <= tol, (spec, worst)


def _by_query(measure, qrels, run):
    return {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], qrels, run)}


def _from_scores(query_ids, offsets, doc_ids, labels, scores):
    r = rank_by_scores(scores, offsets, doc_ids=doc_ids)
    return Case(query_ids, offsets, doc_ids, labels, np.ones(len(labels), dtype=bool), r.to_list(), scores)


@pytest.fixture(scope="module")
def mq2008():
    pool = ar.load_sample()
    scores = pool.X[:, 24]  # LETOR feature 25 (BM25 of the whole document): many ties
    assert np.unique(scores).size < scores.size
    return _from_scores(pool.query_ids, pool.offsets, pool.doc_ids, pool.labels, scores)


@pytest.fixture(scope="module")
def lightgbm_example():
    root = require_shared_data("lightgbm-lambdarank-example")
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(str(root / "rank.test"))
    groups = np.loadtxt(root / "rank.test.query", dtype=np.int64).reshape(-1)
    offsets = np.r_[0, np.cumsum(groups)]
    scores = np.asarray(X[:, 5].todense()).reshape(-1)  # a 2-decimal feature, 0 where missing: ties
    query_ids = np.arange(1, groups.size + 1)          # numeric: gdeval needs them
    doc_ids = np.arange(offsets[-1]) * 7 % 1000 + 1       # numeric ids compared as text ("99" > "100")
    return _from_scores(query_ids, offsets, doc_ids, y.astype(int), scores)


TREC_RUN = """\
1 Q0 d3 1 2.0 t
1 Q0 d10 2 2.0 t
1 Q0 d2 3 2.0 t
1 Q0 d7 4 1.5 t
1 Q0 x9 5 1.0 t
1 Q0 d1 6 1.0 t
2 Q0 a 1 0.5 t
2 Q0 b 2 0.5 t
2 Q0 c 3 0.5 t
3 Q0 z 1 3 t
3 Q0 y 2 2 t
"""
TREC_QRELS = """\
1 0 d1 2
1 0 d2 0
1 0 d3 1
1 0 d10 2
1 0 d7 0
1 0 d8 2
2 0 a 0
2 0 c 1
2 0 q 1
3 0 y 0
3 0 z 0
"""


@pytest.fixture(scope="module")
def trec_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("trec")
    (d / "run.txt").write_text(TREC_RUN)
    (d / "qrels.txt").write_text(TREC_QRELS)
    return d


@pytest.fixture(scope="module")
def trec_case(trec_files):
    from activerank.io.trec import read_qrels, read_runs, run_rankings_for_pool
    runs = read_runs([trec_files / "run.txt"])
    qrels = read_qrels(trec_files / "qrels.txt")
    qids = ["1", "2", "3"]
    docs = {q: [] for q in qids}
    for line in TREC_QRELS.splitlines() + TREC_RUN.splitlines():
        f = line.split()
        if f[2] not in docs[f[0]]:
            docs[f[0]].append(f[2])
    offsets = np.r_[0, np.cumsum([len(docs[q]) for q in qids])]
    doc_ids = np.array([d for q in qids for d in docs[q]], dtype=object)
    pool = ar.Pool(np.array(qids, dtype=object), offsets, doc_ids)
    r = run_rankings_for_pool(runs, pool)
    labels = qrels.labels_for(pool, missing=-1)
    scores = np.full(offsets[-1], -np.inf)
    for line in TREC_RUN.splitlines():
        q, _, d, _, s, _ = line.split()
        scores[offsets[qids.index(q)] + docs[q].index(d)] = float(s)
    case = Case(qids, offsets, doc_ids, np.maximum(labels, 0), labels >= 0, r.to_list(), scores)
    case.qrels = list(ir_measures.read_trec_qrels(str(trec_files / "qrels.txt")))
    return case


# --------------------------------------------------------------------------- tie order


def test_tie_order_matches_trec_eval(trec_case):
    ids = trec_case.doc_ids
    # the run reader orders ties as trec_eval: score descending, then docid descending as text
    assert [ids[z] for z in trec_case.rankings[0]] == ["d3", "d2", "d10", "d7", "x9", "d1"]
    assert [ids[z] for z in trec_case.rankings[1]] == ["c", "b", "a"]
    # rank_by_scores orders the same scores the same way, with the pool's ids by default
    pool = ar.Pool(np.array(trec_case.query_ids, dtype=object), trec_case.offsets, ids)
    for again in (rank_by_scores(trec_case.scores, trec_case.offsets, doc_ids=ids), rank_by_scores(trec_case.scores,
                                                                                                   pool)):
        for x, r in enumerate(trec_case.rankings):
            assert again.to_list()[x][: len(r)].tolist() == list(r)
    # without doc ids the row index is the id: ties go to the higher row
    rows = rank_by_scores(trec_case.scores, trec_case.offsets).to_list()
    assert [ids[z] for z in rows[0][:3]] == ["d10", "d3", "d2"]


def test_rank_by_scores_doc_ids_validated():
    with pytest.raises(ValueError, match=r"`doc_ids` must have one entry per row \(3\); got 2"):
        rank_by_scores([1.0, 1.0, 0.0], [0, 3], doc_ids=["a", "b"])
    # numbers are compared as text, as trec_eval compares docnos: "9" > "10"
    assert rank_by_scores([1.0, 1.0], [0, 2], doc_ids=[10, 9]).items.tolist() == [1, 0]
    # equal ids: the higher row first, as without ids
    assert rank_by_scores([1.0, 1.0, 1.0], [0, 3], doc_ids=["a", "b", "a"]).items.tolist() == [1, 2, 0]


def test_every_entry_point_orders_ties_the_same_way(mq2008):
    """estimate, compare, campaigns and rank_by_scores rank tied scores alike (a census equals the truth)."""
    from activerank._validation import scores_iv
    from activerank.pool import pool_iv
    pool = ar.load_sample()
    scores = pool.X[:, 24]
    expected = rank_by_scores(scores, pool)
    assert scores_iv(scores, pool_iv(pool)).items.tolist() == expected.items.tolist()
    assert [r.tolist() for r in expected.to_list()] == [list(r) for r in mq2008.rankings]


# --------------------------------------------------------------------------- ir_measures and trec_eval


def _check_case(case, every_query=True):
    for spec in TREC_EVAL_BACKED:
        theirs = _by_query(_measure(spec), case.qrels, case.run)
        case.compare(spec, theirs, every_query=every_query)
        case.compare(_measure(spec), theirs, every_query=every_query)  # the measure object itself
    # RR@k: ir_measures' provider orders ties by docid ascending; on a run without ties it is trec_eval's RR@k
    untied = case.untied_run()
    for spec in ("RR@1", "RR@2", "RR@5", "RR@10", "RR(rel=2)@10"):
        case.compare(spec, _by_query(_measure(spec), case.qrels, untied), every_query=every_query)


def test_trec_run_with_ties_and_unjudged_documents(trec_case):
    _check_case(trec_case)
    # hand check of query 1: ranking d3(1) d2(0) d10(2) d7(0) x9(unjudged) d1(2), d8(2) judged but not retrieved
    ours = dict(zip(trec_case.query_ids, trec_case.ours("AP")))
    assert ours["1"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 6) / 4)


def test_mq2008_sample(mq2008):
    _check_case(mq2008)


def test_lightgbm_lambdarank_example(lightgbm_example):
    _check_case(lightgbm_example)


@pytest.mark.parametrize("case_name", ["mq2008", "trec_case", "lightgbm_example"])
def test_trec_eval_names_match_pytrec_eval(case_name, request):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    case = request.getfixturevalue(case_name)
    qrels, run = {}, {}
    for q in case.qrels:
        qrels.setdefault(q.query_id, {})[q.doc_id] = int(q.relevance)
    for d in case.run:
        run.setdefault(d.query_id, {})[d.doc_id] = float(d.score)
    for name in TREC_EVAL_NAMES:
        measure = name.replace(".", "_")
        family = re.sub(r"_\d+$", "", measure)
        got = pytrec_eval.RelevanceEvaluator(qrels, {family} if family != measure else {measure}).evaluate(run)
        theirs = {q: v[measure] for q, v in got.items()}
        case.compare(name, theirs)


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval needs perl")
@pytest.mark.parametrize("case_name", ["mq2008", "lightgbm_example"])
def test_gdeval_measures(case_name, request):
    case = request.getfixturevalue(case_name)
    for spec in GDEVAL_BACKED:
        # gdeval leaves out queries without a relevant document (activerank: 0, as trec_eval)
        case.compare(spec, _by_query(_measure(spec), case.qrels, case.run), tol=GDEVAL_TOL, every_query=False)


@pytest.mark.parametrize("case_name", ["mq2008", "trec_case", "lightgbm_example"])
def test_gdeval_formulas_to_1e12(case_name, request):
    case = request.getfixturevalue(case_name)
    n = len(case.query_ids)
    for k in (5, 10, 20):
        want = [_gdeval_err(case.ranked_grades(x), k) for x in range(n)]
        np.testing.assert_allclose(case.ours(f"ERR@{k}"), want, rtol=0, atol=1e-12)
        ideal = [case.labels[o:e][case.judged_mask[o:e]].tolist()
                 for o, e in zip(case.offsets[:-1], case.offsets[1:])]
        want = [_gdeval_ndcg(case.ranked_grades(x), ideal[x], k) for x in range(n)]
        np.testing.assert_allclose(case.ours(f"nDCG(dcg='exp-log2')@{k}"), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case_name", ["mq2008", "trec_case", "lightgbm_example"])
def test_rbp_matches_its_formula(case_name, request):
    case = request.getfixturevalue(case_name)
    n = len(case.query_ids)
    for spec, p, rel, k in [("RBP", 0.8, None, None), ("RBP(p=0.5)@10", 0.5, None, 10), ("RBP(rel=1)", 0.8, 1, None),
                            ("RBP(p=0.95, rel=2)", 0.95, 2, None), ("rbp", 0.8, 1, None),
                            ("rbp(p=0.9,rel=graded)@5", 0.9, None, 5)]:
        want = [_rbp(case.ranked_grades(x), p, rel, k) for x in range(n)]
        np.testing.assert_allclose(case.ours(spec), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case_name", ["mq2008", "trec_case"])
def test_rbp_matches_cwl_eval_when_installed(case_name, request):
    pytest.importorskip("cwl")
    case = request.getfixturevalue(case_name)
    for spec in ("RBP(rel=1)", "RBP(p=0.5, rel=1)", "RBP(p=0.95, rel=2)"):
        case.compare(spec, _by_query(_measure(spec), case.qrels, case.run))


# --------------------------------------------------------------------------- census estimates


def _readme_metric_names():
    text = (REPO / "README.md").read_text()
    # metric= and --metric(s) arguments, and quoted names in the prose: with a cutoff, trec_eval's, or "err"
    found = re.findall(r'metric="([^"]+)"|--metrics? (\S+)|`"([A-Za-z]+(?:\([^)]*\))?@\d+|[A-Za-z]+_cut_\d+|err)"`',
                       text)
    names = set()
    for groups in found:
        for g in groups:
            names.update(n for n in g.split(",") if n)
    return sorted(names)


def test_readme_metric_names_are_known():
    names = _readme_metric_names()
    assert {"err@10", "dcg@10", "nDCG@10", "ERR@20"} <= set(names)
    for name in names:
        _quiet_parse(name)


@pytest.fixture(scope="module")
def census_setup():
    pool = ar.load_sample()
    train = ar.load_sample("train")
    probs = ar.relevance.make_relevance_model("logistic", pool.n_grades).fit(train.X, train.labels).predict_proba(
        pool.X)
    return pool, probs, ar.KnownLabels.from_data(pool)


def _census(census_setup, spec, scores, **kw):
    pool, probs, lab = census_setup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return ar.estimate(pool, scores, probs, lab, budget=1e6, metric=spec, rng=0, **kw)


def _theirs(case, spec):
    """Per-query reference values: ir_measures, pytrec_eval (trec_eval's names), or the published formula
    (RBP, and activerank's own err/dcg conventions)."""
    m = _quiet_parse(spec)
    grades = [case.ranked_grades(x) for x in range(len(case.query_ids))]
    if m.name == "rbp":
        return [_rbp(g, m.params["p"], m.params["rel"], m.k) for g in grades], TOL
    if spec in TREC_EVAL_NAMES or re.fullmatch(r"(ndcg_cut|P|map_cut|recall|success)[._]\d+", spec):
        pytrec_eval = pytest.importorskip("pytrec_eval")
        measure = spec.replace(".", "_")
        family = re.sub(r"_\d+$", "", measure)
        qrels, run = {}, {}
        for q in case.qrels:
            qrels.setdefault(q.query_id, {})[q.doc_id] = int(q.relevance)
        for d in case.run:
            run.setdefault(d.query_id, {})[d.doc_id] = float(d.score)
        got = pytrec_eval.RelevanceEvaluator(qrels, {family}).evaluate(run)
        return [got[q][measure] for q in case.query_ids], TOL
    try:
        measure = _measure(spec)
    except (NameError, ValueError):  # not ir_measures' spelling: activerank's err (paper) or dcg
        if m.name == "err":
            ymax = m.params["ymax"] or case.ymax
            return [sum((2.0**y - 1) / 2**ymax / (i + 1) * np.prod([1 - (2.0**h - 1) / 2**ymax for h in g[:i]])
                        for i, y in enumerate(g[: m.k])) for g in grades], 1e-12
        assert m.name == "dcg" and m.params["gain"] == "exp", spec
        return [sum((2.0**y - 1) / math.log2(i + 2) for i, y in enumerate(g[: m.k])) for g in grades], 1e-12
    per_query = _by_query(measure, case.qrels, case.run)
    gdeval = measure.NAME == "ERR" or measure.params.get("dcg") == "exp-log2"
    return [per_query.get(q, 0.0) for q in case.query_ids], GDEVAL_TOL if gdeval else TOL  # gdeval: 0 if left out


@pytest.mark.parametrize("spec", sorted(set(TREC_EVAL_BACKED + GDEVAL_BACKED + TREC_EVAL_NAMES
                                            + ("RBP(p=0.8)", "RBP(rel=2)", "rbp(p=0.9)@10"))
                                        | set(_readme_metric_names())))
def test_census_estimate_equals_the_reference(mq2008, census_setup, spec):
    """A budget that buys every query: the estimate is the pool mean of the reference's per-query values,
    and pool_metric_values gives each of them (every README name included)."""
    pool = census_setup[0]
    theirs, tol = _theirs(mq2008, spec)
    np.testing.assert_allclose(mq2008.ours(spec), theirs, rtol=0, atol=tol)
    res = _census(census_setup, spec, pool.X[:, 24])
    assert res.n_queries == pool.n_queries
    assert abs(res.estimate - np.mean(theirs)) <= tol, (spec, res.estimate, np.mean(theirs))
    assert abs(res.estimate - mq2008.ours(spec).mean()) <= 1e-12


def test_census_of_an_index_update_is_the_pool_metric_values_difference(census_setup):
    """The estimated nDCG difference targets pool_metric_values' definition: the ideal over every document."""
    pool, probs, lab = census_setup
    ra = rank_by_scores(pool.X[:, 24], pool)
    rb = ar.relevance.remove_fraction(ra, 0.2, rng=3)
    for spec in ("ndcg(gain=linear)@10", "ndcg(gain=exp)@10", "ap", "r@10"):
        truth = (ar.pool_metric_values(pool.labels, ra, metric=spec, ymax=pool.ymax, offsets=pool)
                 - ar.pool_metric_values(pool.labels, rb, metric=spec, ymax=pool.ymax, offsets=pool)).mean()
        res = ar.compare(pool, ra, rb, probs, lab, budget=1e6, metric=spec, rng=0)
        assert res.difference == pytest.approx(truth, abs=1e-12), spec


# --------------------------------------------------------------------------- warnings


def test_default_metric_and_canonical_strings_never_warn(census_setup):
    pool, probs, lab = census_setup
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        ar.estimate(pool, pool.X[:, 24], probs, lab, budget=6, rng=0)
        ar.compare(pool, pool.X[:, 24], pool.X[:, 10], probs, lab, budget=6, rng=0)
        for spec in TREC_EVAL_BACKED + GDEVAL_BACKED + TREC_EVAL_NAMES + ("err@10", "dcg@10", "rbp", "p@5", "ap"):
            ar.parse_metric(str(_quiet_parse(spec)))


@pytest.mark.parametrize("spec, now", [("nDCG@10", "ndcg(gain=linear)@10"), ("ndcg@10", "ndcg(gain=linear)@10"),
                                       ("NDCG", "ndcg(gain=linear)"), ("ERR@10", "err(ymax=4)@10"),
                                       ("RBP(p=0.9)", "rbp(p=0.9,rel=graded)")])
def test_changed_meanings_warn_once_per_call(spec, now):
    with pytest.warns(FutureWarning, match=re.escape(f"Write {now!r} (this meaning)")) as rec:
        m = ar.parse_metric(spec)
    assert len(rec) == 1 and str(m) == now
    # the warning points at the caller, not at activerank
    assert Path(rec[0].filename).resolve() == Path(__file__).resolve()


@pytest.mark.parametrize("spec", ["err@10", "dcg@10", "P@10", "RR", "AP", "ndcg_cut_10", "nDCG(dcg='log2')@10",
                                  "ERR(ymax=scale)@10", "RBP(rel=1)", "R@10", "Success@5"])
def test_unchanged_or_explicit_spellings_do_not_warn(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ar.parse_metric(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ar.parse_metric(_measure("nDCG@10"))  # a measure object never meant anything else


@pytest.mark.parametrize("spec", ["Err@10", "eRR", "Rbp(p=0.9)", "rBP"])
def test_ambiguous_spellings_list_both(spec):
    with pytest.raises(ValueError, match=r"is ambiguous: '(ERR|RBP)' is ir_measures' .* is activerank's .* "
                                         r"Write .* for the first, .* for the second"):
        ar.parse_metric(spec)


@pytest.mark.parametrize("spec", ["Rprec", "Bpref", "infAP", "alpha_nDCG@10"])
def test_ir_measures_we_do_not_estimate_are_named(spec):
    with pytest.raises(ValueError, match=r"is an ir_measures measure activerank does not estimate. Accepted "):
        ar.parse_metric(spec)
    with pytest.raises(ValueError, match=r"does not estimate"):
        ar.parse_metric(_measure(spec))


def test_stored_campaign_metrics_keep_their_meaning():
    from activerank.metrics.registry import parse_stored_metric
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert str(parse_stored_metric("ndcg@10")) == "ndcg(gain=exp)@10"          # written by 0.4
        assert str(parse_stored_metric("ndcg(depth=20)@10")) == "ndcg(depth=20,gain=exp)@10"
        assert str(parse_stored_metric("ndcg(gain=linear)@10")) == "ndcg(gain=linear)@10"
        assert str(parse_stored_metric("err@10")) == "err(ymax=scale)@10"
        assert str(parse_stored_metric("err(ymax=4)@10")) == "err(ymax=4)@10"
        assert str(parse_stored_metric("rbp(p=0.9)")) == "rbp(p=0.9,rel=1)"
