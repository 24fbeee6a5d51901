"""Ranking metrics as declarative specs in one registry.

A metric is written as a string in one grammar (case-insensitive names, as in
``ir_measures``)::

    name[(option=value, ...)][@k]

e.g. ``"dcg@10"``, ``"ndcg(gain=linear)@10"``, ``"p@10"``, ``"p(rel=2)@5"``,
``"rr"``, ``"ap"``, ``"rbp(p=0.8)"``, ``"err(ymax=4)@10"``.  ``@k`` is always
the cutoff; every other setting is a named option with a documented default, and
the same options can be passed as keyword arguments of :func:`parse_metric`.
The result is a frozen :class:`Metric` whose ``str`` is canonical (only options
that differ from their default are written), so it round-trips through files.

Each registered metric belongs to a *family*; the family decides how values and
moments under a relevance model are computed:

``additive`` (exact moments)
    ``L = sum_i d(i) g(y_i)`` over the top ``k``: DCG (``g = 2^y - 1`` or ``y``,
    ``d = 1/log2(i + 1)`` for 1-based rank ``i``), precision (``g = 1[y >= rel]``,
    ``d = 1/k``), RBP (``g = 1[y >= rel]``, ``d = (1 - p) p^(i-1)``).
``cascade`` (exact moments)
    ``L = sum_i c(i) R(y_i) prod_{j<i} (1 - R(y_j))``: ERR (Chapelle et al. 2009,
    ``R = (2^y - 1) / 2^ymax``, ``c = 1/i``) and reciprocal rank (``R = 1[y >= rel]``).
``ratio`` (approximate moments)
    nDCG (DCG over the ideal DCG of the query's judged documents) and average
    precision (normalized by the number of relevant judged documents): the value
    needs labels beyond the evaluated top ``k``, so the moments come from seeded
    Monte Carlo (:mod:`activerank.metrics.approximate`).
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

__all__ = [
    "METRICS",
    "Metric",
    "MetricDef",
    "Param",
    "custom_metric",
    "describe_metrics",
    "parse_metric",
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
    option.
    """

    default: Any
    convert: Callable[[Any, str], Any]
    description: str


def _int_option(minimum: int, *, allow_none: bool = False):
    def convert(value, name):
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            if allow_none:
                return None
            raise TypeError(f"option `{name}` must be an integer >= {minimum}, got None.")
        if isinstance(value, str):
            text = value.strip()
            if not re.fullmatch(r"[+-]?\d+", text):
                raise ValueError(f"option `{name}` must be an integer >= {minimum}, got {value!r}.")
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


def _choice_option(*choices):
    def convert(value, name):
        text = value.strip().lower() if isinstance(value, str) else value
        if text not in choices:
            raise ValueError(f"option `{name}` must be one of {list(choices)}, got {value!r}.")
        return text

    return convert


_GAIN = Param("exp", _choice_option("exp", "linear"),
              "gain of grade y: 'exp' = 2^y - 1 (Burges et al.; gdeval), 'linear' = y "
              "(Jarvelin & Kekalainen; trec_eval, ir_measures' nDCG)")
_REL = Param(1, _int_option(1),
             "relevance threshold: a document is relevant if its grade >= rel (trec_eval's -l, ir_measures' rel)")
_DEPTH = Param(None, _int_option(1, allow_none=True),
               "judging depth of the normalizer: None = every document of the query is judged; D = the union "
               "of every evaluated ranking's top max(D, k) is judged (trec_eval's judged pool), unjudged = 0")
_YMAX = Param(None, _int_option(1, allow_none=True),
              "top grade in R(y) = (2^y - 1) / 2^ymax: None = the label scale's top grade; "
              "4 reproduces gdeval (ir_measures' ERR)")
_PERSISTENCE = Param(0.8, _probability_option, "persistence p of the RBP user model")


# --------------------------------------------------------------------------- per-grade values and discounts


def _gain_values(grades, opts):
    if opts["gain"] == "linear":
        return grades.copy()
    return np.exp2(grades) - 1.0


def _binary_values(grades, opts):
    return (grades >= opts["rel"]).astype(np.float64)


def _err_values(grades, opts):
    return (np.exp2(grades) - 1.0) / 2.0 ** opts["ymax"]


def _log_discount(positions, opts):
    return 1.0 / np.log2(positions + 2.0)


def _reciprocal_discount(positions, opts):
    return 1.0 / (positions + 1.0)


def _precision_discount(positions, opts):
    return np.full(positions.shape, 1.0 / opts["k"])


def _rbp_discount(positions, opts):
    p = opts["p"]
    return (1.0 - p) * p**positions


# --------------------------------------------------------------------------- definitions


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
        which the exact pair kernel handles separately).
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

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"`family` must be one of {list(FAMILIES)}, got {self.family!r}.")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

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


def _defs():
    rel_only = {"rel": _REL}
    return (
        MetricDef("dcg", "additive", "Discounted cumulative gain: sum_i g(y_i) / log2(i + 1).",
                  {"gain": _GAIN}, _gain_values, _log_discount),
        MetricDef("ndcg", "ratio",
                  "Normalized DCG: DCG@k over the ideal DCG@k of the query's judged documents (0 if none is "
                  "relevant).", {"gain": _GAIN, "depth": _DEPTH}, _gain_values, _log_discount),
        MetricDef("err", "cascade",
                  "Expected reciprocal rank, R(y) = (2^y - 1) / 2^ymax, c(i) = 1/i (Chapelle et al. 2009).",
                  {"ymax": _YMAX}, _err_values, _reciprocal_discount),
        MetricDef("p", "additive", "Precision at k: the fraction of the top k with grade >= rel "
                  "(a list shorter than k counts the missing ranks as non-relevant, as trec_eval).",
                  rel_only, _binary_values, _precision_discount, needs_cutoff=True, binary=True),
        MetricDef("rr", "cascade", "Reciprocal rank of the first document with grade >= rel (0 if none).",
                  rel_only, _binary_values, _reciprocal_discount, binary=True),
        MetricDef("rbp", "additive", "Rank-biased precision (Moffat & Zobel 2008): "
                  "(1 - p) sum_i p^(i-1) 1[y_i >= rel], without the residual.",
                  {"p": _PERSISTENCE, "rel": _REL}, _binary_values, _rbp_discount, binary=True),
        MetricDef("ap", "ratio", "Average precision: sum over relevant ranked documents in the top k of "
                  "precision at their rank, over the number of relevant judged documents (trec_eval's map).",
                  {"rel": _REL, "depth": _DEPTH}, _binary_values, None, binary=True),
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
    >>> m = parse_metric("nDCG(gain=linear)@10")
    >>> m.name, m.k, str(m), m.params["gain"], m.params["depth"]
    ('ndcg', 10, 'ndcg(gain=linear)@10', 'linear', None)
    >>> parse_metric("ERR@20")
    Metric(name='err', k=20)
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
        if "rel" in opts and opts["rel"] > scale_top:
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

    def discounts(self, n_positions: int) -> np.ndarray:
        """Discount of 0-based ranks ``0..n_positions - 1``."""
        d = self.definition
        if d.discount is None:
            raise ValueError(f"metric {str(self)!r} has no per-position discount.")
        return d.discount(np.arange(n_positions, dtype=np.float64), {**self.params, "k": self.k})

    def __str__(self) -> str:
        text = self.name
        if self.options:
            text += "(" + ",".join(f"{key}={_format(v)}" for key, v in self.options) + ")"
        return text if self.k is None else f"{text}@{self.k}"

    def __repr__(self) -> str:
        extra = "".join(f", {key}={v!r}" for key, v in self.options)
        return f"Metric(name={self.name!r}, k={self.k!r}{extra})"


def _format(value) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


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
            "options": ", ".join(f"{key}={p.default}" for key, p in d.params.items()),
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
    if definition.name in _BUILTIN:
        raise ValueError(f"{definition.name!r} is a built-in metric and cannot be replaced.")
    if definition.name in METRICS and not replace:
        raise ValueError(f"a metric named {definition.name!r} is already registered; pass replace=True.")
    METRICS[definition.name] = definition
    return definition


def custom_metric(name: str, function: Callable, *, description: str = "", vectorized: bool = True,
                  register: bool = False) -> MetricDef:
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
                  function=fn)
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
_SPEC = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@(.*))?\s*", re.DOTALL)
_BUILTIN = frozenset(METRICS)


def _unknown(metric) -> ValueError:
    return ValueError(
        f"`metric` {metric!r} is not a known metric; expected one of {sorted(METRICS)} optionally with "
        f"options and a cutoff, e.g. 'err@10', 'ndcg(gain=linear)@10', 'rbp(p=0.8)'."
    )


def _parse_options(text: str, metric) -> dict:
    out = {}
    if not text.strip():
        return out
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or not _NAME.fullmatch(key):
            raise ValueError(f"`metric` {metric!r}: options must be written 'name=value', got {part.strip()!r}.")
        if key in out:
            raise ValueError(f"`metric` {metric!r}: option {key!r} given twice.")
        out[key] = value.strip().strip("'\"")
    return out


def _parse_string(metric: str):
    m = _SPEC.fullmatch(metric)
    if m is None:
        raise _unknown(metric)
    name, opt_text, k_text = m.group(1).lower(), m.group(2), m.group(3)
    if name not in METRICS:
        raise _unknown(metric)
    k = None
    if k_text is not None:
        k_text = k_text.strip()
        if not k_text.isdigit():
            hint = ""
            if name == "rbp":
                hint = " RBP's persistence is an option: 'rbp(p=0.8)' (with a cutoff: 'rbp(p=0.8)@10')."
            raise ValueError(f"`metric` {metric!r}: the cutoff after '@' must be a positive integer.{hint}")
        k = k_iv(int(k_text), name="k (from the metric string)")
    options = _parse_options(opt_text, metric) if opt_text is not None else {}
    return METRICS[name], k, options


def parse_metric(metric, k=None, *, require_moments: bool | str = False, **options) -> Metric:
    """Parse a metric spec (string, :class:`Metric` or :class:`MetricDef`) into a :class:`Metric`.

    Parameters
    ----------
    metric : str, Metric or MetricDef
        ``name[(option=value, ...)][@k]``, case-insensitive, e.g. ``"ndcg@10"``,
        ``"p(rel=2)@5"``, ``"rbp(p=0.9)"``; or a definition object (custom metrics).
    k : int or None, optional
        Cutoff; must agree with the ``@k`` suffix if both are given.
    require_moments : bool or "exact", default False
        ``True``: the metric must have moments under a relevance model (exact or
        approximate -- every registered metric does).  ``"exact"``: only metrics
        with closed-form moments (``additive`` and ``cascade`` families).
    **options
        Metric options (e.g. ``gain="linear"``, ``rel=2``, ``p=0.9``, ``ymax=4``,
        ``depth=100``); must agree with the same option in the string.

    Returns
    -------
    Metric

    Examples
    --------
    >>> parse_metric("dcg", k=5)
    Metric(name='dcg', k=5)
    >>> str(parse_metric("NDCG@10", gain="linear"))
    'ndcg(gain=linear)@10'
    >>> parse_metric("rbp(p=0.8)") == parse_metric("rbp")   # 0.8 is the default
    True
    """
    k = k_iv(k)
    spec = None
    if isinstance(metric, Metric):
        d, suffix_k, given = metric.definition, metric.k, dict(metric.options)
        spec = metric.spec
    elif isinstance(metric, MetricDef):
        d, suffix_k, given = metric, None, {}
        spec = None if METRICS.get(metric.name) is metric else metric
    elif isinstance(metric, str):
        d, suffix_k, given = _parse_string(metric)
    else:
        raise TypeError(
            f"`metric` must be a string such as 'err@10' or a metric definition, got {type(metric).__name__}.")
    if k is not None and suffix_k is not None and k != suffix_k:
        raise ValueError(f"`k`={k} contradicts the cutoff in `metric`={str(metric)!r}.")
    k = suffix_k if suffix_k is not None else k
    canonical = {}
    for key, value in list(given.items()) + [(key, v) for key, v in options.items()]:
        if key not in d.params:
            known = ", ".join(sorted(d.params)) or "none"
            raise ValueError(f"metric {d.name!r} has no option {key!r} (options: {known}).")
        value = d.params[key].convert(value, key)
        if key in canonical and canonical[key] != value:
            raise ValueError(f"option `{key}`={value!r} contradicts `{key}`={canonical[key]!r} in "
                             f"`metric`={str(metric)!r}.")
        canonical[key] = value
    kept = tuple(sorted((key, v) for key, v in canonical.items() if v != d.params[key].default))
    if d.needs_cutoff and k is None:
        raise ValueError(f"metric {d.name!r} needs a cutoff, e.g. '{d.name}@10' (or k=10).")
    if "depth" in canonical and canonical["depth"] is not None and k is not None and canonical["depth"] < k:
        raise ValueError(f"option `depth`={canonical['depth']} of metric {d.name!r} must be >= the cutoff k={k}: "
                         "the evaluated top k is always judged.")
    parsed = Metric(d.name, k, kept, spec)
    if require_moments == "exact" and d.moments != "exact":
        exact = sorted(n for n, e in METRICS.items() if e.moments == "exact")
        raise ValueError(
            f"`metric` {str(parsed)!r} has no exact moments (only Monte-Carlo approximations); metrics with "
            f"exact moments: {exact}. activerank.metrics.predicted_moments handles every metric.")
    if require_moments not in (False, True, "exact"):
        raise ValueError(f"`require_moments` must be False, True or 'exact', got {require_moments!r}.")
    return parsed
