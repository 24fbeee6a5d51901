"""Shared fixtures of the campaign tests: the shipped MQ2008 sample, a LightGBM relevance model fitted on its
training queries, and the sample's labels as the annotator."""

import pytest

import activerank as ar


@pytest.fixture(scope="module")
def data():
    return ar.load_sample()


@pytest.fixture(scope="module")
def probs(data):
    train = ar.load_sample("train")
    model = ar.relevance.make_relevance_model("lightgbm", 3, random_state=0, n_estimators=30)
    return model.fit(train.X, train.labels).predict_proba(data.X)


@pytest.fixture(scope="module")
def labels(data):
    return ar.KnownLabels.from_data(data)
