"""Metric spellings: activerank's names, ir_measures' measures and trec_eval's names, read into one form.

A metric string is ``name[(option=value, ...)][@k]``.  The name decides the
metric *and* the defaults its spelling implies:

* ir_measures' spellings, case as in ir_measures (``nDCG``/``NDCG``, ``ERR``,
  ``P``/``Precision``, ``RR``/``MRR``, ``AP``/``MAP``, ``RBP``, ``R``/``Recall``,
  ``Success``) mean ir_measures' measures: ``ERR`` is gdeval's (top grade fixed
  at 4), ``RBP`` without ``rel`` has graded gains (trectools).  ir_measures'
  parameters (``dcg=``, ``gains=``, ``judged_only=False``, ``cutoff``) are
  translated into activerank's options.
* trec_eval's names (``ndcg_cut_10`` or ``ndcg_cut.10``, ``P_10``,
  ``recip_rank``, ``map``, ``map_cut_10``, ``recall_10``, ``success_10``) mean
  trec_eval's measures.
* activerank's lower-case names keep their meaning: ``err`` is the paper's ERR
  with the label scale's top grade, ``rbp`` is binary at ``rel=1``, ``dcg`` has
  exponential gains.  ``err`` and ``rbp`` differ from ``ERR`` and ``RBP``, so
  any other capitalization of them is ambiguous and refused.
* ``ndcg`` in any case means linear gains (trec_eval, ir_measures, ranx) since
  0.5; exponential gains are ``ndcg(gain=exp)``.

Spellings whose meaning changed in 0.5 (``nDCG``/``ndcg`` without a gain,
``ERR`` without ``ymax``, ``RBP`` without ``rel``) warn with a
``FutureWarning`` when a user passes them; canonical strings
(:class:`activerank.metrics.Metric`'s ``str``) always write those options, so
they never warn.  This module only reads text; the options' values are checked
by :mod:`activerank.metrics.registry`.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

__all__ = ["Spelled", "accepted_spellings", "changed_option", "from_ir_measures", "read_string", "translate",
           "warn_changed"]

# ir_measures' names, case-sensitive as in ir_measures -> registry family
IR_MEASURES = {
    "nDCG": "ndcg", "NDCG": "ndcg", "ERR": "err", "P": "p", "Precision": "p", "RR": "rr", "MRR": "rr",
    "AP": "ap", "MAP": "ap", "RBP": "rbp", "R": "r", "Recall": "r", "Success": "success",
}
# what an ir_measures spelling implies where activerank's lower-case name implies something else
IR_PRESETS: dict[str, dict[str, Any]] = {"ERR": {"ymax": 4}, "RBP": {"rel": None}}
# activerank's names, case-insensitive unless the family is in CASE_SENSITIVE
OURS = {
    "dcg": "dcg", "ndcg": "ndcg", "err": "err", "p": "p", "precision": "p", "rr": "rr", "mrr": "rr",
    "rbp": "rbp", "ap": "ap", "map": "ap", "r": "r", "recall": "r", "success": "success",
}
CASE_SENSITIVE = ("err", "rbp")
# trec_eval names (the whole string): pattern -> family; the group is the cutoff
TREC_EVAL = (
    (re.compile(r"ndcg_cut[._](\d+)", re.IGNORECASE), "ndcg"),
    (re.compile(r"P[._](\d+)", re.IGNORECASE), "p"),
    (re.compile(r"recip_rank()", re.IGNORECASE), "rr"),
    (re.compile(r"map_cut[._](\d+)", re.IGNORECASE), "ap"),
    (re.compile(r"recall[._](\d+)", re.IGNORECASE), "r"),
    (re.compile(r"success[._](\d+)", re.IGNORECASE), "success"),
)
# ir_measures measures activerank does not estimate (named in the error instead of "unknown")
IR_UNSUPPORTED = frozenset((
    "Accuracy", "AP_IA", "BPM", "Bpref", "BPref", "Compat", "ERR_IA", "INSQ", "INST", "IPrec", "Judged",
    "NERR8", "NERR9", "NERR10", "NERR11", "NRBP", "NumQ", "NumRel", "NumRelRet", "NumRet", "P_IA", "Rprec",
    "RPrec", "SDCG", "SetAP", "SetF", "SetP", "SetR", "SetRelP", "StRecall", "alpha_DCG", "alpha_nDCG",
    "infAP", "nERR_IA", "nNRBP",
))
# ir_measures' judged_only exists for these; activerank always counts unjudged documents as non-relevant
_JUDGED_ONLY = ("ndcg", "p", "rr", "ap", "r", "success")

_SPEC = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@(.*))?\s*", re.DOTALL)

# the spellings whose meaning changed in 0.5: what they mean now, the option that fixes it, its old value
CHANGED: dict[str, tuple[str, str, Any]] = {
    "ndcg": ("linear gains g(y) = y (trec_eval, ir_measures, ranx); before 0.5 it had exponential gains 2^y - 1",
             "gain", "exp"),
    "err": ("ir_measures' ERR (gdeval: R(y) = (2^y - 1) / 2^4 whatever the label scale); before 0.5 it was "
            "activerank's ERR with the label scale's top grade", "ymax", None),
    "rbp": ("ir_measures' RBP (graded: the grade is the gain, trectools); before 0.5 it was binary at rel=1",
            "rel", 1),
}


@dataclass(frozen=True)
class Spelled:
    """A metric as written: its family, cutoff, options (activerank's names), and what the spelling implies.

    ``presets`` fill options the text does not set; ``changed`` names an option
    whose implied value changed in 0.5 (a ``FutureWarning`` unless it is set).
    """

    family: str
    k_text: str | None
    options: dict
    text: str
    presets: dict = field(default_factory=dict)
    changed: str | None = None


def accepted_spellings(registered=()) -> str:
    """The accepted spellings, for error messages."""
    extra = sorted(set(registered) - set(OURS.values()))
    ours = ", ".join(sorted(set(OURS.values()))) + (f" (registered: {', '.join(extra)})" if extra else "")
    return (f"activerank's names {ours} as name[(option=value, ...)][@k], e.g. 'err@10' (the paper's ERR, "
            "the label scale's top grade), 'ndcg(gain=exp)@10', 'p(rel=2)@5', 'rbp(p=0.9)'; ir_measures' "
            f"spellings {', '.join(IR_MEASURES)} (case as in ir_measures, e.g. 'nDCG@10', 'ERR@10', "
            "'RBP(p=0.8)') or an ir_measures measure object; trec_eval's names ndcg_cut_K, P_K, recip_rank, "
            "map, map_cut_K, recall_K, success_K")


def _unknown(text, registered) -> ValueError:
    return ValueError(f"`metric` {text!r} is not a known metric. Accepted spellings: "
                      f"{accepted_spellings(registered)}.")


def _ambiguous(text, head, family, registered) -> ValueError:
    up = next(n for n, f in IR_MEASURES.items() if f == family and n.lower() == head.lower())
    meaning = {"err": ("ERR (gdeval: R(y) = (2^y - 1) / 2^4)", "ERR with the label scale's top grade (Chapelle et "
                       "al.: R(y) = (2^y - 1) / 2^ymax)", "'ERR@10' or 'err(ymax=4)@10'",
                       "'err@10' or 'err(ymax=scale)@10'"),
               "rbp": ("graded RBP (trectools)", "RBP, binary at rel=1", "'RBP' or 'rbp(rel=graded)'",
                       "'rbp' or 'rbp(rel=1)'")}[family]
    return ValueError(f"`metric` {text!r} is ambiguous: {up!r} is ir_measures' {meaning[0]}; {family!r} is "
                      f"activerank's {meaning[1]}. Write {meaning[2]} for the first, {meaning[3]} for the "
                      f"second. Accepted spellings: {accepted_spellings(registered)}.")


def _literal(node, key: str, text: str):
    """The value of one option: a literal, or a bare word read as text (``gain=linear``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Dict):
        return {_literal(k, key, text): _literal(v, key, text) for k, v in zip(node.keys, node.values)}
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        raise ValueError(f"`metric` {text!r}: option `{key}` must be a number, a word or a {{grade: gain}} "
                         "mapping.") from None


def _parse_options(opt_text: str, text: str) -> dict:
    if not opt_text.strip():
        return {}
    try:
        call = ast.parse(f"f({opt_text})", mode="eval").body
    except SyntaxError as exc:
        if "repeated" in str(exc.msg):
            keys = re.findall(r"(\w+)\s*=", opt_text)
            dup = next((k for i, k in enumerate(keys) if k in keys[:i]), "?")
            raise ValueError(f"`metric` {text!r}: option {dup.lower()!r} given twice.") from None
        raise ValueError(f"`metric` {text!r}: options must be written 'name=value', got {opt_text.strip()!r}.") \
            from None
    if not isinstance(call, ast.Call) or call.args or any(kw.arg is None for kw in call.keywords):
        bad = opt_text.split(",")[0].strip()
        raise ValueError(f"`metric` {text!r}: options must be written 'name=value', got {bad!r}.")
    out: dict[str, Any] = {}
    for kw in call.keywords:
        key = str(kw.arg).lower()
        if key in out:
            raise ValueError(f"`metric` {text!r}: option {key!r} given twice.")
        out[key] = _literal(kw.value, key, text)
    return out


def translate(family: str, options: dict, text: str) -> dict:
    """ir_measures' parameters (``dcg``, ``gains``, ``judged_only``) as activerank's options."""
    out = dict(options)
    if "judged_only" in out and family in _JUDGED_ONLY:
        value = out.pop("judged_only")
        if value not in (False, 0) and str(value).lower() != "false":
            raise ValueError(f"`metric` {text!r}: judged_only={value!r} is not supported; activerank counts "
                             "unjudged documents as non-relevant, as judged_only=False does.")
    if family == "ndcg" and ("dcg" in out or "gains" in out):
        dcg, gains = out.pop("dcg", "log2"), out.pop("gains", None)
        if dcg not in ("log2", "exp-log2"):
            raise ValueError(f"`metric` {text!r}: option `dcg` must be 'log2' or 'exp-log2', got {dcg!r}.")
        if gains is not None and dcg == "exp-log2":
            raise ValueError(f"`metric` {text!r}: give `gains` or dcg='exp-log2', not both.")
        gain = gains if gains is not None else ("exp" if dcg == "exp-log2" else "linear")
        if "gain" in out and out["gain"] != gain:
            raise ValueError(f"`metric` {text!r}: option `gain`={out['gain']!r} contradicts the ir_measures "
                             "parameters `dcg`/`gains`.")
        out["gain"] = gain
    return out


def read_string(text: str, registered) -> Spelled:
    """Read a metric string; ``registered`` are the registry's names (custom metrics included)."""
    bare = text.strip()
    for pattern, family in TREC_EVAL:
        m = pattern.fullmatch(bare)
        if m is not None:
            return Spelled(family, m.group(1) or None, {}, text)
    m = _SPEC.fullmatch(text)
    if m is None:
        raise _unknown(text, registered)
    head, opt_text, k_text = m.group(1), m.group(2), m.group(3)
    presets, changed = {}, None
    if head in IR_MEASURES:
        family = IR_MEASURES[head]
        presets = dict(IR_PRESETS.get(head, {}))
        if family in CHANGED:
            changed = family
    elif head.lower() in OURS:
        family = OURS[head.lower()]
        if family in CASE_SENSITIVE and head != head.lower():
            raise _ambiguous(text, head, family, registered)
        if family == "ndcg":
            changed = family
    elif head in IR_UNSUPPORTED:
        raise ValueError(f"`metric` {text!r} is an ir_measures measure activerank does not estimate. Accepted "
                         f"spellings: {accepted_spellings(registered)}.")
    elif head.lower() in registered:
        family = head.lower()
    else:
        raise _unknown(text, registered)
    options = _parse_options(opt_text, text) if opt_text is not None else {}
    return Spelled(family, k_text, translate(family, options, text), text, presets, changed)


def from_ir_measures(measure, registered) -> Spelled:
    """An ir_measures measure object (``ir_measures.nDCG@10``) read like its string."""
    name, params = measure.NAME, dict(measure.params)
    text = str(measure)
    if name not in IR_MEASURES:
        raise ValueError(f"`metric` {text!r} is an ir_measures measure activerank does not estimate. Accepted "
                         f"spellings: {accepted_spellings(registered)}.")
    family = IR_MEASURES[name]
    cutoff = params.pop("cutoff", None)
    k_text = None if cutoff is None else str(cutoff)
    # a measure object was never read before 0.5: it means ir_measures' measure, no warning
    return Spelled(family, k_text, translate(family, params, text), text, dict(IR_PRESETS.get(name, {})))


def changed_option(spelled: Spelled, given) -> tuple | None:
    """``(option, old value)`` when the spelling's meaning changed in 0.5 and the option is not given."""
    if spelled.changed is None or CHANGED[spelled.changed][1] in given:
        return None
    return CHANGED[spelled.changed][1:]


def warn_changed(spelled: Spelled, now: str, before: str) -> None:
    """The ``FutureWarning`` of a spelling whose meaning changed in 0.5 (canonical strings of both meanings)."""
    meaning = CHANGED[spelled.changed][0] if spelled.changed is not None else ""
    warnings.warn(
        f"metric {spelled.text.strip()!r} means {meaning}. Write {now!r} (this meaning) or "
        f"{before!r} (the meaning before 0.5) to silence this warning; see docs/metrics.md.", FutureWarning,
        stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """Stack level of the first frame outside activerank (the user's call)."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("activerank."):
        frame, level = frame.f_back, level + 1
    return level
