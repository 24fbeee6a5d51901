"""Ranking metrics as declarative specs in one registry.

A metric is written as a string in one grammar::

    name[(option=value, ...)][@k]

e.g. ``"dcg@10"``, ``"err@10"``, ``"ndcg(gain=exp)@10"``, ``"p(rel=2)@5"``,
``"rr"``, ``"ap"``, ``"rbp(p=0.8)"``, ``"err(ymax=4)@10"``.  ``@k`` is always
the cutoff; every other setting is a named option with a documented default, and
the same options can be passed as keyword arguments of :func:`parse_metric`.
ir_measures' spellings (``"nDCG@10"``, ``"ERR@10"``, ``"RBP(p=0.8)"``, measure
objects) mean ir_measures' measures and trec_eval's names (``"ndcg_cut_10"``,
``"P_10"``, ``"map"``) trec_eval's; activerank's lower-case ``err``, ``rbp`` and
``dcg`` keep their conventions (:mod:`activerank.metrics._spelling`,
``docs/metrics.md``).  The result is a frozen :class:`Metric` whose ``str`` is
canonical: lower-case, only options that differ from their default plus the
options on which conventions differ (ERR's ``ymax``, nDCG's ``gain``, RBP's
``rel``), so it round-trips through files and never reads ambiguously.

Each registered metric belongs to a *family*; the family decides how values and
moments under a relevance model are computed:

``additive`` (exact moments)
    ``L = sum_i d(i) g(y_i)`` over the top ``k``: DCG (``g = 2^y - 1``, ``y`` or
    a grade -> gain table, ``d = 1/log2(i + 1)`` for 1-based rank ``i``),
    precision (``g = 1[y >= rel]``, ``d = 1/k``), RBP (``g = 1[y >= rel]`` or
    the grade, ``d = (1 - p) p^(i-1)``).
``cascade`` (exact moments)
    ``L = sum_i c(i) R(y_i) prod_{j<i} (1 - R(y_j))``: ERR (Chapelle et al. 2009,
    ``R = (2^y - 1) / 2^ymax``, ``c = 1/i``), reciprocal rank (``R = 1[y >= rel]``)
    and success (``R = 1[y >= rel]``, ``c = 1``).
``ratio`` (approximate moments)
    nDCG (DCG over the ideal DCG of the query's judged documents), average
    precision and recall (normalized by the number of relevant judged
    documents): the value needs labels beyond the evaluated top ``k``, so the
    moments come from seeded Monte Carlo (:mod:`activerank.metrics.approximate`).
    The judged documents are by default every document of the query's pool,
    including those a ranking does not list (trec_eval's normalizer with
    complete qrels); a query without a relevant one has the value 0, as in
    trec_eval.
``custom`` (approximate moments)
    A user function of the labels in ranked order (:func:`custom_metric`).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from .._validation import k_iv
from . import _spelling

__all__ = [
    "METRICS",
    "Metric",
    "MetricDef",
    "Param",
    "custom_metric",
    "describe_metrics",
    "parse_metric",
    "parse_stored_metric",
    "register_metric",
]

EXACT_FAMILIES = ("additive", "cascade")
FAMILIES = EXACT_FAMILIES + ("ratio", "custom")


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class Param:
    """One option of a metric: default, converter/validator and description.

    ``convert(value, name)`` turns a keyword value or the text of a spec string
    into the canonical value, raising ``ValueError``/``TypeError`` that names the
    option.  ``explicit`` options are written in every canonical string (the
    conventions of activerank and other tools differ on them); ``text`` gives a
    value's canonical text.
    """

    default: Any
    convert: Callable[[Any, str], Any]
    description: str
    explicit: bool = False
    text: Callable[[Any], str] | None = None


def _is_none_word(value, *words) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in ("none",) + words)


def _int_option(minimum: int, *, allow_none: bool = False, none_words: tuple = ()):
    def convert(value, name):
        if _is_none_word(value, *none_words):
            if allow_none:
                return None
            raise TypeError(f"option `{name}` must be an integer >= {minimum}, got {value!r}.")
        if isinstance(value, str):
            text = value.strip()
            if not re.fullmatch(r"[+-]?\d+", text):
                words = "".join(f" or {w!r}" for w in none_words)
                raise ValueError(f"option `{name}` must be an integer >= {minimum}{words}, got {value!r}.")
            value = int(text)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"option `{name}` must be an integer >= {minimum}, got {value!r}.")
        if value < minimum:
            raise ValueError(f"option `{name}` must be >= {minimum}, got {value}.")
        return int(value)

    return convert


def _probability_option(value, name):
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"option `{name}` must be a number in (0, 1), got {value!r}.") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"option `{name}` must be a number in (0, 1), got {value!r}.")
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"option `{name}` must lie in (0, 1), got {value!r}.")
    return value


def _gain_option(value, name):
    """'exp', 'linear' or a {grade: gain} table (ir_measures' ``gains``; unlisted grades keep their grade)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text not in ("exp", "linear"):
            raise ValueError(f"option `{name}` must be one of ['exp', 'linear'] or a {{grade: gain}} mapping, "
                             f"got {value!r}.")
        return text
    if isinstance(value, tuple) and all(isinstance(e, tuple) and len(e) == 2 for e in value):
        value = dict(value)
    if not isinstance(value, Mapping):
        raise TypeError(f"option `{name}` must be 'exp', 'linear' or a {{grade: gain}} mapping, got {value!r}.")
    table = {}
    for grade, gain in value.items():
        if isinstance(grade, bool) or not isinstance(grade, numbers.Integral) or grade < 0:
            raise ValueError(f"option `{name}`: grades must be integers >= 0, got {grade!r}.")
        if isinstance(gain, bool) or not isinstance(gain, numbers.Real) or not 0 <= gain < np.inf:
            raise ValueError(f"option `{name}`: gains must be finite numbers >= 0, got {gain!r} for grade {grade}.")
        if grade == 0 and gain != 0:
            raise ValueError(f"option `{name}`: grade 0 must have gain 0 (unjudged documents count as grade 0), "
                             f"got {gain!r}.")
        gain = int(gain) if float(gain).is_integer() else float(gain)
        if gain != grade:  # unlisted grades keep their grade as gain: identity entries say nothing
            table[int(grade)] = gain
    return tuple(sorted(table.items())) if table else "linear"


def _gain_text(value) -> str:
    if isinstance(value, tuple):
        return "{" + ",".join(f"{g}:{v!r}" for g, v in value) + "}"
    return value


_GAIN_EXP = Param("exp", _gain_option,
                  "gain of grade y: 'exp' = 2^y - 1 (Burges et al.; gdeval), 'linear' = y (Jarvelin & "
                  "Kekalainen; trec_eval), or a {grade: gain} table (ir_measures' gains)", text=_gain_text)
_GAIN_LINEAR = Param("linear", _gain_option,
                     "gain of grade y: 'linear' = y (trec_eval, ir_measures' nDCG, ranx; the default since 0.5), "
                     "'exp' = 2^y - 1 (Burges et al.; gdeval, the default before 0.5), or a {grade: gain} table "
                     "(ir_measures' gains)", explicit=True, text=_gain_text)
_REL = Param(1, _int_option(1),
             "relevance threshold: a document is relevant if its grade >= rel (trec_eval's -l, ir_measures' rel)")
_REL_RBP = Param(1, _int_option(1, allow_none=True, none_words=("graded",)),
                 "relevance: binary 1[y >= rel], or 'graded': the grade y itself is the gain (ir_measures' RBP "
                 "without rel, trectools)", explicit=True,
                 text=lambda v: "graded" if v is None else str(v))
_DEPTH = Param(None, _int_option(1, allow_none=True),
               "judging depth of the normalizer: None = every document of the query's pool is judged; D = the "
               "union of every evaluated ranking's top max(D, k) is judged (trec_eval's judged pool), unjudged = 0")
_YMAX = Param(None, _int_option(1, allow_none=True, none_words=("scale",)),
              "top grade in R(y) = (2^y - 1) / 2^ymax: 'scale' = the label scale's top grade (the paper's ERR, "
              "activerank's err); 4 = gdeval's fixed scale (ir_measures' ERR)", explicit=True,
              text=lambda v: "scale" if v is None else str(v))
_PERSISTENCE = Param(0.8, _probability_option, "persistence p of the RBP user model")


# --------------------------------------------------------------------------- per-grade values and discounts


def _gain_values(grades, opts):
    gain = opts["gain"]
    if gain == "linear":
        return grades.copy()
    if gain == "exp":
        return np.exp2(grades) - 1.0
    out = grades.copy()
    for grade, value in gain:
        out[grades == grade] = value
    return out


def _binary_values(grades, opts):
    return (grades >= opts["rel"]).astype(np.float64)


def _rbp_values(grades, opts):
    return grades.copy() if opts["rel"] is None else _binary_values(grades, opts)


def _err_values(grades, opts):
    return (np.exp2(grades) - 1.0) / 2.0 ** opts["ymax"]


def _log_discount(positions, opts):
    return 1.0 / np.log2(positions + 2.0)


def _reciprocal_discount(positions, opts):
    return 1.0 / (positions + 1.0)


def _unit_discount(positions, opts):
    return np.ones(positions.shape)


def _precision_discount(positions, opts):
    return np.full(positions.shape, 1.0 / opts["k"])


def _rbp_discount(positions, opts):
    p = opts["p"]
    return (1.0 - p) * p**positions


# --------------------------------------------------------------------------- definitions


def bounds_iv(bounds, name: str) -> tuple[float, float]:
    """``(low, high)`` as floats with ``low <= high`` (NaN refused; ``inf`` means unbounded)."""
    try:
        low, high = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a pair of numbers (low, high), got {bounds!r}.") from None
    if not low <= high or low == np.inf or high == -np.inf:
        raise ValueError(f"`{name}` must be (low, high) with low <= high and finite or outward infinite ends, "
                         f"got {bounds!r}.")
    return low, high


@dataclass(frozen=True, eq=False)
class MetricDef:
    """Declarative definition of one metric.

    Parameters
    ----------
    name : str
        Lower-case registry name (the spec string's head).
    family : {"additive", "cascade", "ratio", "custom"}
        Decides how values and moments are computed (module docstring).
    description : str
        One line for tables and errors.
    params : mapping of str to Param
        The options the spec may set (``k`` is not one of them).
    values : callable, optional
        ``values(grades, opts) -> per-grade value`` (gain ``g`` or stopping
        probability ``R``); ``grades`` is a float array, ``opts`` the metric's
        options plus ``k`` and ``ymax`` (the scale's top grade unless an option
        fixes it).
    discount : callable, optional
        ``discount(positions, opts) -> weight`` of 0-based rank positions.
    function : callable, optional
        For ``custom`` metrics: ``function(labels, valid) -> values``, see
        :func:`custom_metric`.
    needs_cutoff : bool
        The metric is undefined without ``@k`` (precision).
    binary : bool
        The per-grade value is 0/1 (a cascade then can stop with certainty,
        which the exact pair kernel handles separately); RBP with
        ``rel=graded`` is not (:attr:`Metric.binary`).
    bounds : tuple of two floats, or callable, optional
        The range ``(low, high)`` of one query's value (``-inf``/``inf``: no
        bound), or ``bounds(opts) -> (low, high)`` when it depends on the
        options (``opts`` as for ``values``).  Estimates and intervals are kept
        inside it (:meth:`Metric.bounds`).  Default: unbounded.
    """

    name: str
    family: str
    description: str
    params: Mapping[str, Param] = field(default_factory=dict)
    values: Callable | None = None
    discount: Callable | None = None
    function: Callable | None = None
    needs_cutoff: bool = False
    binary: bool = False
    bounds: tuple | Callable = (-np.inf, np.inf)

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"`family` must be one of {list(FAMILIES)}, got {self.family!r}.")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        if not callable(self.bounds):
            object.__setattr__(self, "bounds", bounds_iv(self.bounds, "bounds"))

    @property
    def moments(self) -> str:
        """``"exact"`` (closed-form kernels) or ``"approximate"`` (Monte Carlo)."""
        return "exact" if self.family in EXACT_FAMILIES else "approximate"

    @property
    def has_moments(self) -> bool:
        """Every registered metric has moments (exact or approximate)."""
        return True

    @property
    def has_exact_moments(self) -> bool:
        return self.moments == "exact"

    def __repr__(self) -> str:
        return f"MetricDef({self.name!r}, family={self.family!r})"


def _rbp_bounds(opts):
    """RBP without the residual: the discounts sum to at most 1, so the value is at most the top gain."""
    return 0.0, 1.0 if opts["rel"] is not None else float(opts["ymax"])


_UNIT = (0.0, 1.0)
_NONNEGATIVE = (0.0, np.inf)


def _defs():
    rel_only = {"rel": _REL}
    return (
        MetricDef("dcg", "additive", "Discounted cumulative gain: sum_i g(y_i) / log2(i + 1).",
                  {"gain": _GAIN_EXP}, _gain_values, _log_discount, bounds=_NONNEGATIVE),
        MetricDef("ndcg", "ratio",
                  "Normalized DCG: DCG@k over the ideal DCG@k of the query's judged documents (all documents of "
                  "its pool by default; 0 if none is relevant).", {"gain": _GAIN_LINEAR, "depth": _DEPTH},
                  _gain_values, _log_discount, bounds=_UNIT),
        MetricDef("err", "cascade",
                  "Expected reciprocal rank, R(y) = (2^y - 1) / 2^ymax, c(i) = 1/i (Chapelle et al. 2009).",
                  {"ymax": _YMAX}, _err_values, _reciprocal_discount, bounds=_UNIT),
        MetricDef("p", "additive", "Precision at k: the fraction of the top k with grade >= rel "
                  "(a list shorter than k counts the missing ranks as non-relevant, as trec_eval).",
                  rel_only, _binary_values, _precision_discount, needs_cutoff=True, binary=True, bounds=_UNIT),
        MetricDef("rr", "cascade", "Reciprocal rank of the first document with grade >= rel (0 if none).",
                  rel_only, _binary_values, _reciprocal_discount, binary=True, bounds=_UNIT),
        MetricDef("rbp", "additive", "Rank-biased precision (Moffat & Zobel 2008): "
                  "(1 - p) sum_i p^(i-1) r(y_i), r = 1[y >= rel] or the grade (rel=graded), without the residual.",
                  {"p": _PERSISTENCE, "rel": _REL_RBP}, _rbp_values, _rbp_discount, binary=True,
                  bounds=_rbp_bounds),
        MetricDef("ap", "ratio", "Average precision: sum over relevant ranked documents in the top k of "
                  "precision at their rank, over the number of relevant judged documents (trec_eval's map).",
                  {"rel": _REL, "depth": _DEPTH}, _binary_values, None, binary=True, bounds=_UNIT),
        MetricDef("r", "ratio", "Recall at k: relevant documents in the top k over the relevant judged "
                  "documents (trec_eval's recall_k; 0 if none is relevant).",
                  {"rel": _REL, "depth": _DEPTH}, _binary_values, None, needs_cutoff=True, binary=True,
                  bounds=_UNIT),
        MetricDef("success", "cascade", "Success at k: 1 if a document with grade >= rel is in the top k "
                  "(trec_eval's success_k).", rel_only, _binary_values, _unit_discount, needs_cutoff=True,
                  binary=True, bounds=_UNIT),
    )


METRICS: dict[str, MetricDef] = {d.name: d for d in _defs()}


# --------------------------------------------------------------------------- parsed metrics


@dataclass(frozen=True)
class Metric:
    """A parsed metric: registry name, cutoff ``k`` and the non-default options.

    Use :func:`parse_metric` to build one.  ``options`` holds ``(name, value)``
    pairs sorted by name, only for options that differ from their default, so
    two specs of the same metric compare equal.  ``spec`` carries a definition
    passed as an object (custom metrics); registered metrics leave it ``None``.

    Examples
    --------
    >>> m = parse_metric("ndcg(gain=exp)@10")
    >>> m.name, m.k, str(m), m.params["gain"], m.params["depth"]
    ('ndcg', 10, 'ndcg(gain=exp)@10', 'exp', None)
    >>> parse_metric("err@20"), str(parse_metric("err@20"))
    (Metric(name='err', k=20), 'err(ymax=scale)@20')
    >>> parse_metric("err(ymax=4)@20")               # ir_measures' ERR@20 (gdeval)
    Metric(name='err', k=20, ymax=4)
    """

    name: str
    k: int | None = None
    options: tuple = ()
    spec: MetricDef | None = field(default=None, repr=False)

    @property
    def definition(self) -> MetricDef:
        if self.spec is not None:
            return self.spec
        try:
            return METRICS[self.name]
        except KeyError:
            raise _unknown(self.name) from None

    @property
    def family(self) -> str:
        return self.definition.family

    @property
    def moments(self) -> str:
        """``"exact"`` or ``"approximate"``."""
        return self.definition.moments

    @property
    def params(self) -> dict:
        """Every option of the metric with its effective value (defaults filled in)."""
        out = {name: p.default for name, p in self.definition.params.items()}
        out.update(self.options)
        return out

    @property
    def binary(self) -> bool:
        """The per-grade value is 0/1 (RBP with ``rel=graded`` is not)."""
        return self.definition.binary and self.params.get("rel", 1) is not None

    def resolved(self, ymax: int) -> dict:
        """Options plus ``k`` and the ``ymax`` the per-grade values use on a scale ``0..ymax``."""
        opts = self.params
        scale_top = int(ymax)
        if opts.get("ymax") is not None:
            if opts["ymax"] < scale_top:
                raise ValueError(
                    f"option `ymax`={opts['ymax']} of metric {str(self)!r} is below the label scale's top "
                    f"grade {scale_top}: R(y) would exceed 1.")
        else:
            opts["ymax"] = scale_top
        if opts.get("rel") is not None and opts["rel"] > scale_top:
            raise ValueError(
                f"option `rel`={opts['rel']} of metric {str(self)!r} exceeds the label scale's top grade "
                f"{scale_top}: no document could be relevant.")
        opts["k"] = self.k
        return opts

    def grade_values(self, n_grades: int) -> np.ndarray:
        """Per-grade value (gain ``g`` or stopping probability ``R``) of grades ``0..n_grades - 1``."""
        d = self.definition
        if d.values is None:
            raise ValueError(f"metric {str(self)!r} has no per-grade values.")
        return d.values(np.arange(n_grades, dtype=np.float64), self.resolved(n_grades - 1))

    def bounds(self, n_grades: int) -> tuple[float, float]:
        """The range ``(low, high)`` of one query's value on grades ``0..n_grades - 1`` (``inf``: unbounded).

        Examples
        --------
        >>> parse_metric("ndcg@10").bounds(3), parse_metric("dcg@10").bounds(3)
        ((0.0, 1.0), (0.0, inf))
        >>> parse_metric("rbp(rel=graded)").bounds(5)
        (0.0, 4.0)
        """
        b = self.definition.bounds
        if callable(b):
            return bounds_iv(b(self.resolved(int(n_grades) - 1)), f"bounds of metric {str(self)!r}")
        return b

    def discounts(self, n_positions: int) -> np.ndarray:
        """Discount of 0-based ranks ``0..n_positions - 1``."""
        d = self.definition
        if d.discount is None:
            raise ValueError(f"metric {str(self)!r} has no per-position discount.")
        return d.discount(np.arange(n_positions, dtype=np.float64), {**self.params, "k": self.k})

    def __str__(self) -> str:
        text = self.name
        shown = _shown_options(self)
        if shown:
            text += "(" + ",".join(f"{key}={v}" for key, v in shown) + ")"
        return text if self.k is None else f"{text}@{self.k}"

    def __repr__(self) -> str:
        extra = "".join(f", {key}={v!r}" for key, v in self.options)
        return f"Metric(name={self.name!r}, k={self.k!r}{extra})"


def _format(param: Param, value) -> str:
    if param.text is not None:
        return param.text(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _shown_options(metric: Metric) -> list:
    """``(name, text)`` of the options a canonical string writes: non-defaults, and every explicit option."""
    params = metric.definition.params
    values = metric.params
    return [(key, _format(p, values[key])) for key, p in sorted(params.items())
            if p.explicit or values[key] != p.default]


def describe_metrics() -> list[dict]:
    """One row per registered metric: name, family, moments, options with defaults, description.

    For help texts and tables (the CLI's ``--metric`` help, the README).

    Examples
    --------
    >>> rows = {r["name"]: r for r in describe_metrics()}
    >>> rows["rbp"]["options"], rows["ndcg"]["moments"]
    ('p=0.8, rel=1', 'approximate')
    """
    rows = []
    for name, d in METRICS.items():
        rows.append({
            "name": name,
            "family": d.family,
            "moments": d.moments,
            "options": ", ".join(f"{key}={_format(p, p.default)}" for key, p in d.params.items()),
            "needs_cutoff": d.needs_cutoff,
            "description": d.description,
        })
    return rows


# --------------------------------------------------------------------------- registration


def register_metric(definition: MetricDef, *, replace: bool = False) -> MetricDef:
    """Add a definition to :data:`METRICS` so its name parses from strings.

    Parameters
    ----------
    definition : MetricDef
        E.g. from :func:`custom_metric`.
    replace : bool, default False
        Allow replacing a registered metric of the same name (never a built-in).

    Returns
    -------
    MetricDef
        ``definition``, for chaining.
    """
    if not isinstance(definition, MetricDef):
        raise TypeError(f"`definition` must be a MetricDef, got {type(definition).__name__}.")
    if not _NAME.fullmatch(definition.name):
        raise ValueError(f"metric name {definition.name!r} must match {_NAME.pattern!r} (lower case).")
    if definition.name in _BUILTIN or any(p.fullmatch(definition.name) for p, _ in _spelling.TREC_EVAL):
        raise ValueError(f"{definition.name!r} is a built-in metric (or one of its spellings) and cannot be "
                         "replaced.")
    if definition.name in METRICS and not replace:
        raise ValueError(f"a metric named {definition.name!r} is already registered; pass replace=True.")
    METRICS[definition.name] = definition
    return definition


def custom_metric(name: str, function: Callable, *, description: str = "", vectorized: bool = True,
                  register: bool = False, bounds=None) -> MetricDef:
    """A user-defined metric: any per-query function of the labels in ranked order.

    Parameters
    ----------
    name : str
        Lower-case identifier (letters, digits, ``_``).
    function : callable
        If ``vectorized`` (default): ``function(labels, valid) -> values`` where
        ``labels`` is an integer array of shape ``(..., depth)`` holding the
        grades of each ranking's top ``depth`` documents in ranked order (``depth``
        is the cutoff ``k``, or the longest list when ``k`` is None), ``valid`` a
        boolean array of the same shape that is False past the end of a shorter
        list (those labels are 0), and ``values`` has shape ``labels.shape[:-1]``.
        Write it with NumPy operations along the last axis: it is called on whole
        pools and on stacks of Monte-Carlo label samples.
        If not ``vectorized``: ``function(labels_1d) -> float`` for one ranked list
        (exact length); it is then called once per list, which is slow for large
        pools and Monte-Carlo moments.
    description : str, optional
    vectorized : bool, default True
    register : bool, default False
        Also :func:`register_metric` it, so ``"name@k"`` strings parse.
    bounds : tuple of two floats, optional
        The range ``(low, high)`` of the function's values, e.g. ``(0, 1)``:
        estimates and intervals are then kept inside it.  Default: unbounded.

    Returns
    -------
    MetricDef
        Usable wherever a metric is accepted (``metric=definition`` or
        ``parse_metric(definition, k=10)``).  Its moments are Monte-Carlo
        (:func:`activerank.metrics.predicted_moments`); the documents it needs
        judged are each ranking's top ``k``.

    Examples
    --------
    Success@3 -- 1 if any of the top 3 has grade >= 2:

    >>> import numpy as np
    >>> success3 = custom_metric("success3", lambda y, valid: (y[..., :3] >= 2).any(axis=-1) * 1.0)
    >>> from activerank.metrics import pool_metric_values
    >>> pool_metric_values([0, 2, 1, 0], [[0, 1, 2], [3, 2]], metric=success3, ymax=2).tolist()
    [1.0, 0.0]
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a string, got {type(name).__name__}.")
    if not callable(function):
        raise TypeError(f"`function` must be callable, got {type(function).__name__}.")
    fn = function if vectorized else _per_list(function)
    d = MetricDef(name.strip().lower(), "custom", description or f"user-defined metric {name!r}", {},
                  function=fn, bounds=(-np.inf, np.inf) if bounds is None else bounds)
    if not _NAME.fullmatch(d.name):
        raise ValueError(f"metric name {name!r} must match {_NAME.pattern!r}.")
    if register:
        register_metric(d)
    return d


def _per_list(function):
    """Wrap a one-list function into the vectorized ``(labels, valid)`` form (a loop over lists)."""

    def vectorized(labels, valid):
        flat_y = labels.reshape(-1, labels.shape[-1])
        flat_v = valid.reshape(-1, valid.shape[-1])
        out = np.fromiter((function(y[v]) for y, v in zip(flat_y, flat_v)), dtype=np.float64,
                          count=flat_y.shape[0])
        return out.reshape(labels.shape[:-1])

    return vectorized


# --------------------------------------------------------------------------- parsing

_NAME = re.compile(r"[a-z_][a-z0-9_]*")
# names a custom metric cannot take: the built-ins and every spelling of them
_BUILTIN = frozenset(METRICS) | frozenset(_spelling.OURS) | frozenset(n.lower() for n in _spelling.IR_MEASURES)


def _unknown(metric) -> ValueError:
    return ValueError(f"`metric` {metric!r} is not a known metric. Accepted spellings: "
                      f"{_spelling.accepted_spellings(METRICS)}.")


def _cutoff(spelled: _spelling.Spelled, name: str):
    if spelled.k_text is None:
        return None
    k_text = spelled.k_text.strip()
    if not k_text.isdigit():
        hint = ""
        if name == "rbp":
            hint = " RBP's persistence is an option: 'rbp(p=0.8)' (with a cutoff: 'rbp(p=0.8)@10')."
        raise ValueError(f"`metric` {spelled.text!r}: the cutoff after '@' must be a positive integer.{hint}")
    return k_iv(int(k_text), name="k (from the metric string)")


def _is_ir_measure(metric) -> bool:
    return not isinstance(metric, (str, bytes)) and hasattr(metric, "NAME") and hasattr(metric, "params")


def parse_metric(metric, k=None, *, require_moments: bool | str = False, **options) -> Metric:
    """Parse a metric spec (string, ir_measures measure, :class:`Metric` or :class:`MetricDef`).

    Parameters
    ----------
    metric : str, ir_measures measure, Metric or MetricDef
        ``name[(option=value, ...)][@k]``, e.g. ``"err@10"``,
        ``"ndcg(gain=exp)@10"``, ``"p(rel=2)@5"``, ``"rbp(p=0.9)"``;
        ir_measures' spellings (``"nDCG@10"``, ``"ERR@10"``, ``"RBP(p=0.8)"``)
        or measure objects (``ir_measures.nDCG@10``) mean ir_measures'
        measures, trec_eval's names (``"ndcg_cut_10"``, ``"P_10"``,
        ``"recip_rank"``, ``"map"``) trec_eval's; or a definition object
        (custom metrics).  See ``docs/metrics.md`` for every spelling.
    k : int or None, optional
        Cutoff; must agree with the ``@k`` suffix if both are given.
    require_moments : bool or "exact", default False
        ``True``: the metric must have moments under a relevance model (exact or
        approximate -- every registered metric does).  ``"exact"``: only metrics
        with closed-form moments (``additive`` and ``cascade`` families).
    **options
        Metric options (e.g. ``gain="linear"``, ``rel=2``, ``p=0.9``, ``ymax=4``,
        ``depth=100``, or ir_measures' ``gains={...}``); must agree with the
        same option in the string.

    Returns
    -------
    Metric

    Warns
    -----
    FutureWarning
        A spelling whose meaning changed in 0.5 without the option that fixes
        it: ``nDCG``/``ndcg`` without ``gain`` (now linear gains), ``ERR``
        without ``ymax`` (now gdeval's ``ymax=4``), ``RBP`` without ``rel``
        (now graded).  Canonical strings never warn.

    Examples
    --------
    >>> parse_metric("dcg", k=5)
    Metric(name='dcg', k=5)
    >>> str(parse_metric("ndcg_cut_10")), str(parse_metric("err@10"))
    ('ndcg(gain=linear)@10', 'err(ymax=scale)@10')
    >>> parse_metric("P_10") == parse_metric("P@10") == parse_metric("p@10")
    True
    >>> parse_metric("rbp(p=0.8)") == parse_metric("rbp")   # 0.8 is the default
    True
    """
    k = k_iv(k)
    spec = None
    spelled = None
    if isinstance(metric, Metric):
        d, suffix_k, given = metric.definition, metric.k, dict(metric.options)
        spec = metric.spec
    elif isinstance(metric, MetricDef):
        d, suffix_k, given = metric, None, {}
        spec = None if METRICS.get(metric.name) is metric else metric
    elif isinstance(metric, str) or _is_ir_measure(metric):
        spelled = (_spelling.read_string(metric, METRICS) if isinstance(metric, str)
                   else _spelling.from_ir_measures(metric, METRICS))
        if spelled.family not in METRICS:
            raise _unknown(metric)
        d, given = METRICS[spelled.family], dict(spelled.options)
        suffix_k = _cutoff(spelled, d.name)
    else:
        raise TypeError(
            f"`metric` must be a string such as 'err@10', an ir_measures measure or a metric definition, got "
            f"{type(metric).__name__}.")
    if k is not None and suffix_k is not None and k != suffix_k:
        raise ValueError(f"`k`={k} contradicts the cutoff in `metric`={str(metric)!r}.")
    k = suffix_k if suffix_k is not None else k
    if options:
        options = _spelling.translate(d.name, {key.lower(): v for key, v in options.items()}, str(metric))
    canonical = {}
    for key, value in list(given.items()) + list(options.items()):
        if key not in d.params:
            known = ", ".join(sorted(d.params)) or "none"
            raise ValueError(f"metric {d.name!r} has no option {key!r} (options: {known}).")
        value = d.params[key].convert(value, key)
        if key in canonical and canonical[key] != value:
            raise ValueError(f"option `{key}`={value!r} contradicts `{key}`={canonical[key]!r} in "
                             f"`metric`={str(metric)!r}.")
        canonical[key] = value
    changed = None
    if spelled is not None:
        for key, value in spelled.presets.items():
            canonical.setdefault(key, d.params[key].convert(value, key))
        changed = _spelling.changed_option(spelled, given.keys() | options.keys())
    kept = tuple(sorted((key, v) for key, v in canonical.items() if v != d.params[key].default))
    if d.needs_cutoff and k is None:
        raise ValueError(f"metric {d.name!r} needs a cutoff, e.g. '{d.name}@10' (or k=10).")
    if "depth" in canonical and canonical["depth"] is not None and k is not None and canonical["depth"] < k:
        raise ValueError(f"option `depth`={canonical['depth']} of metric {d.name!r} must be >= the cutoff k={k}: "
                         "the evaluated top k is always judged.")
    parsed = Metric(d.name, k, kept, spec)
    if changed is not None:
        key, before = changed
        old = {**canonical, key: before}
        old_kept = tuple(sorted((name, v) for name, v in old.items() if v != d.params[name].default))
        _spelling.warn_changed(spelled, str(parsed), str(Metric(d.name, k, old_kept, spec)))
    if require_moments == "exact" and d.moments != "exact":
        exact = sorted(n for n, e in METRICS.items() if e.moments == "exact")
        raise ValueError(
            f"`metric` {str(parsed)!r} has no exact moments (only Monte-Carlo approximations); metrics with "
            f"exact moments: {exact}. activerank.metrics.predicted_moments handles every metric.")
    if require_moments not in (False, True, "exact"):
        raise ValueError(f"`require_moments` must be False, True or 'exact', got {require_moments!r}.")
    return parsed


def parse_stored_metric(text: str) -> Metric:
    """A canonical metric string written by any activerank version, with the meaning it had then.

    Before 0.5 a canonical nDCG without ``gain`` had exponential gains; since
    0.5 canonical strings always write ``gain``, so a string without it was
    written before.  Other canonical strings kept their meaning.

    Examples
    --------
    >>> str(parse_stored_metric("ndcg@10")), str(parse_stored_metric("ndcg(gain=linear)@10"))
    ('ndcg(gain=exp)@10', 'ndcg(gain=linear)@10')
    """
    spelled = _spelling.read_string(text, METRICS)
    if spelled.family == "ndcg" and "gain" not in spelled.options:
        return parse_metric(text, gain="exp")
    return parse_metric(text)
