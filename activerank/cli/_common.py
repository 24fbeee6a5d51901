"""What every command-line command shares: option types, the error class, warnings display, scores and
trace files."""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from contextlib import contextmanager

import numpy as np

__all__ = ["CLIError", "cli_warnings", "load_letor_file", "n_grades_arg", "nonneg_int", "positive_float",
           "positive_int", "probability_closed", "probability_open", "scores_from_spec", "write_trace"]


class CLIError(Exception):
    """Bad command-line input: printed without a traceback, exit code 2."""


# --------------------------------------------------------------------------- option types
# argparse reports a failing type as "argument --NAME: <message>" with exit code 2.


def _number(text, kind):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be {'an integer' if kind is int else 'a number'}, got {text!r}") from None


def positive_float(text):
    """A finite number > 0 (budgets, costs)."""
    v = _number(text, float)
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return v


def nonneg_int(text):
    """An integer >= 0 (seeds, limits)."""
    v = _number(text, int)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return v


def positive_int(text):
    """An integer >= 1 (chunk sizes, 1-based feature numbers)."""
    v = _number(text, int)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return v


def n_grades_arg(text):
    """Size of a grade scale: an integer in 2..MAX_N_GRADES."""
    from ..io.limits import MAX_N_GRADES

    v = _number(text, int)
    if not 2 <= v <= MAX_N_GRADES:
        raise argparse.ArgumentTypeError(f"must be an integer in 2..{MAX_N_GRADES}, got {text!r}")
    return v


def probability_open(text):
    """A number strictly between 0 and 1 (confidence levels)."""
    v = _number(text, float)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"must be a number strictly between 0 and 1, got {text!r}")
    return v


def probability_closed(text):
    """A number in [0, 1] (mixture weights)."""
    v = _number(text, float)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}")
    return v


@contextmanager
def cli_warnings(prog: str):
    """Show warnings raised while a command runs as one line ``PROG: warning: MESSAGE`` on stderr.

    Python's default display adds the source line that raised the warning,
    which means nothing to a command-line user.  Scoped to the command: the
    previous filters and ``warnings.showwarning`` are restored on exit, and
    library users never see this.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("default")

        def show(message, category, filename, lineno, file=None, line=None):
            text = " ".join(str(message).split())
            print(f"{prog}: warning: {text}", file=sys.stderr if file is None else file, flush=True)

        warnings.showwarning = show
        yield


def load_letor_file(path, n_grades=None):
    """A LETOR/SVMlight file (the pool or the training queries)."""
    from ..io.letor import load_letor

    return load_letor(path, n_grades=n_grades)


def scores_from_spec(spec: str, data, probs, *, option="--scores"):
    """Per-document scores (or Rankings) from ``model`` (expected gain under ``probs``),
    ``feature:N`` (1-based column), ``file:PATH`` (one number per line) or
    ``run:PATH[#TAG]`` (a TREC run matched to the pool's document ids)."""
    from ..relevance.rankers import expected_gain_scores

    kind, _, arg = spec.partition(":")
    if spec == "model":
        return expected_gain_scores(probs)
    if kind == "feature":
        if not (arg.isdigit() and 1 <= int(arg) <= data.X.shape[1]):
            raise CLIError(f"{option} {spec!r}: feature must be 1..{data.X.shape[1]}.")
        return data.X[:, int(arg) - 1]
    if kind == "file" and arg:
        try:
            values = np.loadtxt(arg, dtype=np.float64, ndmin=1)
        except (OSError, ValueError) as exc:
            raise CLIError(f"{option} {spec!r}: cannot read scores: {exc}") from None
        if values.shape != (data.n_docs,):
            raise CLIError(f"{option} {spec!r}: the file must hold {data.n_docs} scores, one per "
                           f"pool document; got {values.size}.")
        return values
    if kind == "run" and arg:
        from ..io.trec import read_runs, run_rankings_for_pool

        path, _, tag = arg.partition("#")
        return run_rankings_for_pool(read_runs(path), data, name=tag or None)
    raise CLIError(f"{option} must be 'model', 'feature:N', 'file:PATH' or 'run:PATH[#TAG]'; "
                   f"got {spec!r}.")


def write_trace(path, trace, *, protected=(), force=False, protected_name="the campaign store"):
    """Write a per-draw trace CSV atomically, under the output rule of
    :func:`activerank.campaign.io.check_output_path` (never an input file)."""
    from ..campaign.io import check_output_path, write_atomic

    path = check_output_path(path, kind="trace", protected=protected, force=force, header=list(trace.columns),
                             protected_name=protected_name)
    write_atomic(path, lambda f: trace.to_csv(f, index=False, lineterminator="\n"))
