"""Estimators, intervals and results: from labeled draws to an estimate with
an honest standard error."""
