"""The paper's experiment harness (Sawade et al. 2012, section 5) on LETOR data.

Not imported by ``import activerank``; figures need the ``experiments`` extra
(matplotlib).  Run ``python -m activerank.experiments --help``.
"""
