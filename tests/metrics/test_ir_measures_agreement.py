"""Per-query agreement with ir_measures on the same run and qrels, conventions matched.

For every metric both libraries have, activerank's value of every query equals
ir_measures' to 1e-9 (trec_eval via pytrec_eval, cwl_eval for RBP); gdeval
(ERR, its nDCG) prints 5 decimals, so those agree to 5e-6.  Ties are broken as
trec_eval does (score descending, docid descending): ``rank_by_scores(...,
doc_ids=...)`` and the TREC run reader both do that.

Data: the shipped MQ2008 sample, LightGBM's lambdarank example (from
``$ACTIVERANK_DATA`` or ``../shared/data`` next to the repository; skipped
without it) and a small hand-written TREC run with ties and unjudged documents.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import activerank as ar
from activerank.relevance.rankers import rank_by_scores

ir_measures = pytest.importorskip("ir_measures")

TOL = 1e-9
GDEVAL_TOL = 5.1e-6  # gdeval prints %.5f

REPO = Path(__file__).resolve().parents[2]


def _data_root() -> Path:
    env = os.environ.get("ACTIVERANK_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def _exp_gains(ymax):
    return {g: 2**g - 1 for g in range(ymax + 1)}


def _pairs(ymax):
    """(activerank spec, ir_measures measure) with matched conventions, trec_eval-backed."""
    M = ir_measures
    return [
        ("ndcg(gain=linear)@10", M.nDCG @ 10),
        ("ndcg(gain=linear)@5", M.nDCG @ 5),
        ("ndcg(gain=linear)", M.nDCG),
        ("ndcg@10", M.nDCG(gains=_exp_gains(ymax)) @ 10),
        ("p@10", M.P @ 10),
        ("p@5", M.P @ 5),
        ("p(rel=2)@5", M.P(rel=2) @ 5),
        ("rr", M.RR),
        ("rr(rel=2)", M.RR(rel=2)),
        ("ap", M.AP),
        ("ap@10", M.AP @ 10),
        ("ap(rel=2)", M.AP(rel=2)),
    ]


def _by_query(measure, qrels, run):
    return {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], qrels, run)}


class Case:
    """A pool, its qrels and one run, in activerank's and ir_measures' forms."""

    def __init__(self, query_ids, offsets, doc_ids, labels, judged_mask, rankings, scores):
        self.query_ids = [str(q) for q in query_ids]
        self.offsets = np.asarray(offsets)
        self.doc_ids = np.asarray([str(d) for d in doc_ids], dtype=object)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.ymax = max(int(self.labels.max()), 1)
        self.rankings = rankings
        q = np.repeat(np.arange(len(self.query_ids)), np.diff(self.offsets))
        self.judged = ar.Rankings.from_list([np.flatnonzero(judged_mask[o:e]) + o
                                             for o, e in zip(self.offsets[:-1], self.offsets[1:])])
        self.qrels = [ir_measures.Qrel(self.query_ids[q[z]], self.doc_ids[z], int(self.labels[z]))
                      for z in np.flatnonzero(judged_mask)]
        # the run in trec_eval order (score desc, docid desc): stable re-sorts by providers keep it
        self.run = [ir_measures.ScoredDoc(self.query_ids[x], self.doc_ids[z], float(scores[z]))
                    for x in range(len(self.query_ids)) for z in rankings[x]]

        self.scores = np.asarray(scores, dtype=np.float64)

    def ours(self, spec, rankings=None):
        m = ar.parse_metric(spec)
        judged = self.judged if m.family == "ratio" else None
        labels = np.where(_in(self.judged, self.labels.size), self.labels, 0)  # unjudged = 0
        rankings = self.rankings if rankings is None else rankings
        return ar.pool_metric_values(labels, rankings, metric=m, ymax=self.ymax, judged=judged)

    def docid_ascending(self):
        """The retrieved documents ordered by score, ties by docid ascending (ir_measures' RR@k provider)."""
        _, codes = np.unique(self.doc_ids.astype(str), return_inverse=True)
        out = []
        for r in self.rankings:
            r = np.asarray(r)
            out.append(r[np.lexsort((codes[r], -self.scores[r]))])
        return out

    def compare(self, spec, measure, tol=TOL, min_queries=None, rankings=None):
        theirs = _by_query(measure, self.qrels, self.run)
        ours = dict(zip(self.query_ids, self.ours(spec, rankings)))
        assert theirs, (spec, measure)
        assert set(theirs) <= set(ours)
        if min_queries is not None:
            assert len(theirs) >= min_queries, (spec, len(theirs))
        worst = max(abs(ours[q] - v) for q, v in theirs.items())
        assert worst <= tol, (spec, str(measure), worst)
        return len(theirs)


def _in(judged, n):
    mask = np.zeros(n, dtype=bool)
    mask[judged.items] = True
    return mask


def _from_scores(query_ids, offsets, doc_ids, labels, scores):
    r = rank_by_scores(scores, offsets, doc_ids=doc_ids)
    return Case(query_ids, offsets, doc_ids, labels, np.ones(len(labels), dtype=bool), r.to_list(), scores)


# --------------------------------------------------------------------------- data sets


@pytest.fixture(scope="module")
def mq2008():
    pool = ar.load_sample()
    scores = pool.X[:, 24]  # LETOR feature 25 (BM25 of the whole document): many ties
    assert np.unique(scores).size < scores.size
    return _from_scores(pool.query_ids, pool.offsets, pool.doc_ids, pool.labels, scores)


@pytest.fixture(scope="module")
def lightgbm_example():
    root = _data_root() / "lightgbm-lambdarank-example"
    if not (root / "rank.test").is_file():
        pytest.skip(f"LightGBM lambdarank example not found under {root.name} (set ACTIVERANK_DATA)")
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
    # the pool: every judged or retrieved document of each query
    qids = ["1", "2", "3"]
    docs = {q: [] for q in qids}
    for line in TREC_QRELS.splitlines() + TREC_RUN.splitlines():
        f = line.split()
        d = f[2]
        if d not in docs[f[0]]:
            docs[f[0]].append(d)
    offsets = np.r_[0, np.cumsum([len(docs[q]) for q in qids])]
    doc_ids = np.array([d for q in qids for d in docs[q]], dtype=object)
    pool = ar.Pool(np.array(qids, dtype=object), offsets, doc_ids)
    r = run_rankings_for_pool(runs, pool)
    labels = qrels.labels_for(pool, missing=-1)
    judged = labels >= 0
    scores = np.full(offsets[-1], -np.inf)
    for line in TREC_RUN.splitlines():
        q, _, d, _, s, _ = line.split()
        row = offsets[qids.index(q)] + docs[q].index(d)
        scores[row] = float(s)
    case = Case(qids, offsets, doc_ids, np.maximum(labels, 0), judged, r.to_list(), scores)
    case.qrels = list(ir_measures.read_trec_qrels(str(trec_files / "qrels.txt")))
    # case.run stays in trec_eval order: ir_measures' RR@k (MS MARCO provider) keeps the run's line order on ties
    return case


# --------------------------------------------------------------------------- tests


def test_tie_order_matches_trec_reader(trec_case):
    ids = trec_case.doc_ids
    # the run reader orders ties as trec_eval: score descending, then docid descending as text
    assert [ids[z] for z in trec_case.rankings[0]] == ["d3", "d2", "d10", "d7", "x9", "d1"]
    assert [ids[z] for z in trec_case.rankings[1]] == ["c", "b", "a"]
    # rank_by_scores(doc_ids=...) orders the same scores the same way
    again = rank_by_scores(trec_case.scores, trec_case.offsets, doc_ids=ids).to_list()
    for x, r in enumerate(trec_case.rankings):
        assert again[x][: len(r)].tolist() == list(r)
    # without doc_ids, ties keep row order (the default, unchanged)
    default = rank_by_scores(trec_case.scores, trec_case.offsets).to_list()
    assert [ids[z] for z in default[0][:3]] == ["d2", "d3", "d10"]


def test_rank_by_scores_doc_ids_validated():
    with pytest.raises(ValueError, match=r"`doc_ids` must have one entry per row \(3\); got 2"):
        rank_by_scores([1.0, 1.0, 0.0], [0, 3], doc_ids=["a", "b"])
    # numbers are compared as text, as trec_eval compares docnos: "9" > "10"
    assert rank_by_scores([1.0, 1.0], [0, 2], doc_ids=[10, 9]).items.tolist() == [1, 0]


def _rr_at_k(case):
    # ir_measures computes RR@k with its MS MARCO provider, which breaks ties by docid *ascending*
    for k in (1, 2, 5, 10):
        case.compare(f"rr@{k}", ir_measures.RR @ k, rankings=case.docid_ascending())
        case.compare(f"rr(rel=2)@{k}", ir_measures.RR(rel=2) @ k, rankings=case.docid_ascending())


def test_trec_run_with_ties_and_unjudged_documents(trec_case):
    for spec, measure in _pairs(2):
        trec_case.compare(spec, measure)
    _rr_at_k(trec_case)
    # hand check of query 1: ranking d3(1) d2(0) d10(2) d7(0) x9(unjudged) d1(2), d8(2) judged but not retrieved
    ours = dict(zip(trec_case.query_ids, trec_case.ours("ap")))
    assert ours["1"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 6) / 4)


def test_mq2008_sample(mq2008):
    n = len(mq2008.query_ids)
    for spec, measure in _pairs(mq2008.ymax):
        mq2008.compare(spec, measure, min_queries=n)
    _rr_at_k(mq2008)


def test_lightgbm_lambdarank_example(lightgbm_example):
    n = len(lightgbm_example.query_ids)
    for spec, measure in _pairs(lightgbm_example.ymax):
        lightgbm_example.compare(spec, measure, min_queries=n)
    _rr_at_k(lightgbm_example)


@pytest.mark.parametrize("case_name", ["mq2008", "trec_case", "lightgbm_example"])
def test_rbp_matches_cwl_eval(case_name, request):
    pytest.importorskip("cwl")
    case = request.getfixturevalue(case_name)
    M = ir_measures
    for spec, measure in [("rbp", M.RBP(rel=1)), ("rbp(p=0.5)", M.RBP(p=0.5, rel=1)),
                          ("rbp(p=0.95,rel=2)", M.RBP(p=0.95, rel=2))]:
        case.compare(spec, measure)


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval needs perl")
@pytest.mark.parametrize("case_name", ["mq2008", "lightgbm_example"])
def test_err_and_ndcg_match_gdeval(case_name, request):
    case = request.getfixturevalue(case_name)
    # gdeval: R(y) = (2^y - 1) / 2^4 whatever the label scale, exponential gains, ties by docid descending
    case.compare("err(ymax=4)@10", ir_measures.ERR @ 10, tol=GDEVAL_TOL)
    case.compare("err(ymax=4)@5", ir_measures.ERR @ 5, tol=GDEVAL_TOL)
    case.compare("ndcg@10", ir_measures.nDCG(dcg="exp-log2") @ 10, tol=GDEVAL_TOL)


def test_issue_example_err_and_ndcg_conventions(mq2008):
    """The numbers behind docs/metrics.md: which conventions move ERR@10 and nDCG@10 on the sample."""
    pool = ar.load_sample()
    row_ties = rank_by_scores(pool.X[:, 24], pool)
    def mean(spec, r):
        return float(ar.pool_metric_values(pool.labels, r, metric=spec, ymax=2).mean())
    default_err = mean("err@10", row_ties)
    gdeval_scale_row_ties = mean("err(ymax=4)@10", row_ties)
    gdeval_like = float(mq2008.ours("err(ymax=4)@10").mean())
    assert round(default_err, 3) == 0.282
    assert round(gdeval_scale_row_ties, 4) == 0.0892
    if shutil.which("perl"):
        theirs = _by_query(ir_measures.ERR @ 10, mq2008.qrels, mq2008.run)
        assert abs(np.mean(list(theirs.values())) - gdeval_like) < GDEVAL_TOL
    assert round(gdeval_like, 4) == 0.0925
    theirs = _by_query(ir_measures.nDCG @ 10, mq2008.qrels, mq2008.run)
    assert round(float(mq2008.ours("ndcg(gain=linear)@10").mean()), 3) == round(np.mean(list(theirs.values())), 3)
