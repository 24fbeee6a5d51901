"""What every command-line command shares: option types, the error class, warnings display, scores,
input paths and trace files."""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from contextlib import contextmanager

import numpy as np

__all__ = ["CLIError", "cli_warnings", "load_letor_file", "n_grades_arg", "nonneg_int", "positive_float",
           "positive_int", "probability_closed", "probability_open", "refuse_input_as_output", "score_spec_path",
           "scores_from_spec", "write_trace"]


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


def load_letor_file(path, n_grades=None, length_feature=None):
    """A LETOR/SVMlight file (the pool or the training queries)."""
    from ..io.letor import load_letor

    try:
        return load_letor(path, n_grades=n_grades, length_feature=length_feature)
    except ValueError as exc:  # the loader names its parameter; the user typed the option
        if "`length_feature`" not in str(exc):
            raise
        raise CLIError(str(exc).replace("`length_feature`", "--length-feature")) from None


def score_spec_path(spec: str | None) -> str | None:
    """The file a scores spec reads (``file:PATH``, ``run:PATH[#TAG]``), else None."""
    kind, _, arg = (spec or "").partition(":")
    if kind == "file" and arg:
        return arg
    if kind == "run" and arg:
        return arg.partition("#")[0] or None
    return None


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
        runs = read_runs(path)
        if not tag and len(runs.names) > 1:
            raise CLIError(f"{option} {spec!r}: the file holds {len(runs.names)} runs ({', '.join(runs.names)}); "
                           f"pick one with run:{path}#TAG.")
        return run_rankings_for_pool(runs, data, name=tag or None)
    raise CLIError(f"{option} must be 'model', 'feature:N', 'file:PATH' or 'run:PATH[#TAG]'; "
                   f"got {spec!r}.")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def refuse_input_as_output(path, inputs, *, option: str) -> None:
    """Raise :class:`CLIError` if writing ``path`` would touch an input, ``--force`` or not.

    ``inputs`` holds ``(what, path)`` pairs.  An output may not be an input
    file (by resolved path or by identity: symlinks, hard links), nor lie
    inside an input folder (a Parquet pool).
    """
    out = os.fspath(path)
    real = os.path.realpath(out)
    for what, source in inputs:
        source = os.fspath(source)
        src_real = os.path.realpath(source)
        if os.path.isdir(src_real):
            if real == src_real or real.startswith(src_real.rstrip(os.sep) + os.sep):
                raise CLIError(f"{option} {out} is inside {what} {source}, a folder read as input; an input is "
                               "never an output (not even with --force). Choose a path outside it.")
        elif real == src_real or _same_file(out, source):
            raise CLIError(f"{option} {out} is {what} {source}; writing it would destroy an input file, and an "
                           "input is never an output (not even with --force). Choose another path.")


def write_trace(path, trace, *, protected=(), force=False, protected_name="the campaign store"):
    """Write a per-draw trace CSV atomically, under the output rule of
    :func:`activerank.campaign.io.check_output_path` (never an input file), its text cells escaped against
    spreadsheet formulas (:func:`activerank.campaign.io.escape_cell`)."""
    from ..campaign.io import check_output_path
    from ..campaign.io import write_trace as write_escaped

    path = check_output_path(path, kind="trace", protected=protected, force=force, header=list(trace.columns),
                             protected_name=protected_name)
    write_escaped(path, trace)
