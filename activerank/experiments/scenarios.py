"""The evaluation tasks of the paper's section 5 (:data:`SCENARIOS`) and the savings the paper reports
for them (:data:`PAPER_SAVINGS`)."""

from __future__ import annotations

from dataclasses import dataclass

PAPER_SAVINGS = {
    "a_rf": "~20% (RF, ERR, Λ=300, MSLR)",
    "a_ologit": "~10% (ordered logit)",
    "b_rfreg_rfcls": "30–55% (model-selection error)",
    "b_ologit_linear": "30–55% (model-selection error)",
    "b_ologit_rf": "30–55% (model-selection error)",
    "c_index": "~75%",
    "d_moredata": "~45%",
}


@dataclass(frozen=True)
class ScenarioInstance:
    """One evaluation task of the paper's §5.

    Attributes
    ----------
    key : str
        Identifier used in the CSVs.
    scenario : {"a", "b", "c", "d"}
    title : str
    ranker_a : str
        Ranker whose value is estimated (or the first of a pair).
    ranker_b : str or None
        Second ranker of a comparison; ``"<name>@removed"`` means ``ranker``'s
        lists with ``remove`` of each list deleted at random.
    models : tuple of str
        Relevance models whose mixture gives ``p(y | x, z)``.
    remove : float
        Fraction removed for ``@removed`` rankings.
    """

    key: str
    scenario: str
    title: str
    ranker_a: str
    ranker_b: str | None
    models: tuple
    remove: float = 0.1

    @property
    def is_pair(self) -> bool:
        return self.ranker_b is not None

    @property
    def loss(self) -> str:
        """The error measure of the paper's figure for this scenario."""
        return "selection_error" if self.scenario == "b" else "abs_error"


SCENARIOS: tuple[ScenarioInstance, ...] = (
    ScenarioInstance("a_rf", "a", "(a) RF regression ranker", "rf_regression", None, ("rf_regression",)),
    ScenarioInstance("a_ologit", "a", "(a) ordered-logit ranker", "ordered_logit", None, ("ordered_logit",)),
    ScenarioInstance("b_rfreg_rfcls", "b", "(b) RF regression vs RF classification", "rf_regression",
                     "rf_classifier", ("rf_regression", "rf_classifier")),
    ScenarioInstance("b_ologit_linear", "b", "(b) ordered logit vs linear RankSVM", "ordered_logit",
                     "linear", ("ordered_logit",)),
    ScenarioInstance("b_ologit_rf", "b", "(b) ordered logit vs RF regression", "ordered_logit",
                     "rf_regression", ("ordered_logit", "rf_regression")),
    ScenarioInstance("c_index", "c", "(c) index update: 10% of each list removed", "rf_regression",
                     "rf_regression@removed", ("rf_regression",)),
    ScenarioInstance("d_moredata", "d", "(d) more training data: 100% vs 25% of queries", "rf_regression",
                     "rf_regression_small", ("rf_regression", "rf_regression_small")),
)
