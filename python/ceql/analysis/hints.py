"""Warnings for queries that compile but probably do not mean what their author meant.

* A LIKE pattern with ``%`` was most likely written for SQL, where ``%`` is any text and ``_``
  one character and the pattern must match the whole value. In CEQL, LIKE is a regular
  expression (RE2) that any part of the value may match, and ``%`` and ``_`` are ordinary
  characters. ``_`` alone does not warn: it is common in values (``'page_view'``) and means
  itself in both languages only when no ``%`` marks the pattern as SQL's. A pattern meant as
  a regular expression with a literal ``%`` writes it ``\\%`` (no warning).
* A query with neither WITHIN nor PARTITION BY whose output can grow faster than its input
  (:func:`~ceql.analysis.growth.output_growth`).
* NEXT, LAST or MAX ranking a partial match per subset of an iteration's events
  (:func:`~ceql.analysis.ranking.exponential_choices`).
* With a schema: two attributes the schema says are strings compared with ``<``, ``>``, ...
  (text order: ``'9' > '10'``), most often numbers read as text.
* ``X[… PREV(attr) …]`` where ``X`` binds at most one event in the formula the FILTER applies
  to: the condition exempts the first event of ``X``, so it never rejects anything (valid: the
  contract makes it vacuously true); most likely another variable's event or a run was meant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..errors import (
    CeqlWarning,
    ExponentialChoiceWarning,
    LikePatternWarning,
    UnboundedOutputWarning,
    VacuousConditionWarning,
    ValueTypeWarning,
)
from ..frontends.ceql.formatter import (
    format_expr,
    format_filter,
    format_formula,
    format_name,
    format_pred,
)
from ..ir import nodes as A
from ..ir.walks import (
    expr_nodes,
    filter_leaves,
    formula_nodes,
    most_events,
    negated_variables,
    pred_leaves,
    stream_views,
)
from .growth import output_growth
from .keys import implied_key
from .ranking import exponential_choice_message

__all__ = ["compile_warnings", "sql_like_patterns", "sql_like_to_regex", "text_order",
           "unbounded_output", "vacuous_prev"]

_UNESCAPED_PERCENT = re.compile(r"(?<!\\)(?:\\\\)*%")
_REGEX_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def sql_like_to_regex(pattern: str) -> str:
    """The CEQL LIKE regex for SQL's ``LIKE pattern``: ``'u%'`` → ``'^u'``, ``'%x_y'`` →
    ``'x.y$'``, ``'%ab%'`` → ``'ab'`` (anchored where SQL's whole-value match requires)."""
    units: list[str] = []
    for ch in pattern:
        unit = ".*" if ch == "%" else "." if ch == "_" else (
            "\\" + ch if ch in _REGEX_SPECIAL else ch)
        if not (unit == ".*" and units and units[-1] == ".*"):
            units.append(unit)
    if units == [".*"]:
        return ".*"
    head = "^"
    if units and units[0] == ".*":
        units.pop(0)
        head = ""
    tail = "$"
    if units and units[-1] == ".*":
        units.pop()
        tail = ""
    return head + "".join(units) + tail


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def sql_like_patterns(query: A.Query) -> list[tuple[A.Like, str]]:
    """Each LIKE of ``query`` whose pattern looks like SQL's (an unescaped ``%``), with the
    regex for what SQL meant, in text order."""
    out: list[tuple[A.Like, str]] = []
    for node in formula_nodes(query.where):
        if not isinstance(node, A.Filter):
            continue
        for atom in filter_leaves(node.cond):  # match conditions too
            for pred in pred_leaves(atom.pred):
                if isinstance(pred, A.Like) and _UNESCAPED_PERCENT.search(pred.pattern):
                    out.append((pred, sql_like_to_regex(pred.pattern)))
    out.sort(key=lambda pair: pair[0].span.start)
    return out


def _like_message(found: list[tuple[A.Like, str]]) -> str:
    parts = []
    for node, regex in found:
        where = f" (line {node.span.line}, column {node.span.column})" if node.span.line else ""
        parts.append(f"LIKE {_quote(node.pattern)}{where} matches values containing a match of "
                     f"the regular expression {_quote(node.pattern)}, where % and _ are "
                     f"ordinary characters; for SQL's meaning write LIKE {_quote(regex)}")
    return ("LIKE takes a regular expression in CEQL (RE2, matching any part of the value), "
            "not SQL's % and _ wildcards: " + "; ".join(parts)
            + ". Write \\% for a literal % to silence this warning.")


def unbounded_output(query: A.Query) -> str | None:
    """The warning for a query with neither WITHIN nor PARTITION BY (written, or implied by
    its equalities between events) whose output can grow faster than its input, or None."""
    if query.within is not None or query.partition_by or implied_key(query) is not None:
        return None
    growth = output_growth(query)
    if growth.linear:
        return None
    strategy = query.strategy if query.strategy not in ("ANY", "ALL") else "ALL (the default)"
    amount = (f"up to {growth.bound} matches" if growth.bound.startswith("n")
              else f"{growth.bound} matches")
    return (f"This query has neither WITHIN nor PARTITION BY: under SELECT {strategy} it can "
            f"give {amount} over n events ({growth.why}), and a match may start at any "
            "earlier event. To cap the output: WITHIN (e.g. WITHIN 10 SECONDS or WITHIN 100 "
            "EVENTS), PARTITION BY [key] (matches within one key), SELECT NEXT * or SELECT "
            "LAST * (at most one match per event), LIMIT n (at most n matches per event) or "
            "CONSUME BY ANY (later matches start after the last one's end).")


def _binder(root: A.Formula, var: str) -> A.Formula | None:
    """The one node of ``root`` that binds ``var`` (its AS, or its event type), if only one
    does and it is small enough to show."""
    found = [n for n in formula_nodes(root)
             if (isinstance(n, A.As) and n.var == var)
             or (isinstance(n, A.EventType) and var in (
                 n.name, f"{n.stream}>{n.name}" if n.stream is not None else n.name))]
    if len(found) != 1 or sum(1 for _ in formula_nodes(found[0])) > 10:
        return None
    return found[0]


def _prev_advice(fil: A.Filter, var: str, prev: A.Prev, negated: set[str]) -> str:
    """What was probably meant instead of ``PREV`` on ``var`` (binding one event in ``fil``):
    another variable's event, or a run of ``var`` events."""
    other = next((n.var for n in formula_nodes(fil.formula) if isinstance(n, A.As)
                  and n.var != var and n.var not in negated), None)
    advice = ([f"to compare with {other}'s event write {format_name(other)}."
               f"{format_name(prev.name)}"] if other else [])
    binder = _binder(fil.formula, var)
    if binder is None and ">" in var:  # S>T: the events of stream S of the T leaves
        binder = _binder(fil.formula, var.partition(">")[2])
    if binder is None:
        run = f"(… AS {format_name(var)})+"
    elif isinstance(binder, A.EventType):
        run = f"{format_formula(binder)}+"
    else:
        run = f"({format_formula(binder)})+"
    advice.append(f"for a run of {var} events, iterate it: {run}")
    text = "; ".join(advice)
    return text[:1].upper() + text[1:]


def vacuous_prev(query: A.Query) -> str | None:
    """The warning for ``X[… PREV(attr) …]`` conditions where ``X`` binds at most one event in
    the formula their FILTER applies to (always true: the first event of ``X`` is exempt), or
    None when there is none."""
    negated = set(negated_variables(query.where))
    views = {f"{s}>{t}" for t, streams in stream_views(query).items() for s in streams}
    parts: list[str] = []
    for node in formula_nodes(query.where):
        if not isinstance(node, A.Filter):
            continue
        for leaf in filter_leaves(node.cond):
            if not isinstance(leaf, A.FilterAtom) or leaf.var in negated:
                continue
            prev = next((e for e in expr_nodes(leaf.pred) if isinstance(e, A.Prev)), None)
            if prev is None or most_events(node.formula, leaf.var, leaf.var in views) > 1:
                continue
            where = (f" (line {prev.span.line}, column {prev.span.column})"
                     if prev.span.line else "")
            parts.append(
                f"{format_filter(leaf)}{where} never rejects anything: '{leaf.var}' binds at "
                f"most one event in the formula this FILTER applies to, so no {leaf.var} event "
                f"has a previous one for {format_expr(prev)} to read, and a condition with "
                f"PREV exempts the first event: it always holds. "
                f"{_prev_advice(node, leaf.var, prev, negated)}")
    return " ".join(parts) if parts else None


_ORDER = frozenset({"<", "<=", ">", ">="})


def text_order(query: A.Query, schema: Mapping[str, str]) -> str | None:
    """The warning for comparisons with ``<``, ``>``, ... of two attributes that ``schema``
    (``{attribute: kind}``) says are strings, or None."""
    found: list[str] = []
    for node in formula_nodes(query.where):
        if not isinstance(node, A.Filter):
            continue
        for leaf in filter_leaves(node.cond):
            for pred in pred_leaves(leaf.pred):
                if (isinstance(pred, A.Compare) and pred.op in _ORDER
                        and isinstance(pred.left, A.Attr) and isinstance(pred.right, A.Attr)
                        and schema.get(pred.left.name) == schema.get(pred.right.name)
                        == "string"):
                    found.append(f"`{format_pred(pred)}`")
    if not found:
        return None
    names = ", ".join(dict.fromkeys(found))
    return (f"{names}: the schema says these attributes are strings, so they are compared as "
            "text, character by character ('9' > '10', '100' < '20'). If they hold numbers, "
            "read them as numbers (give the schema 'number' for them; in Spark, CAST the "
            "columns to a number).")


def compile_warnings(query: A.Query, schema: Mapping[str, str] | None = None,
                     ) -> tuple[tuple[type[CeqlWarning], str], ...]:
    """The warnings compiling ``query`` gives: (category, message) pairs, at most one each of
    :class:`~ceql.errors.LikePatternWarning`, :class:`~ceql.errors.UnboundedOutputWarning`,
    :class:`~ceql.errors.ExponentialChoiceWarning`, :class:`~ceql.errors.VacuousConditionWarning`
    and (with a ``schema``, ``{attribute: kind}``) :class:`~ceql.errors.ValueTypeWarning`."""
    out: list[tuple[type[CeqlWarning], str]] = []
    text = text_order(query, schema) if schema is not None else None
    if text is not None:
        out.append((ValueTypeWarning, text))
    likes = sql_like_patterns(query)
    if likes:
        out.append((LikePatternWarning, _like_message(likes)))
    unbounded = unbounded_output(query)
    if unbounded is not None:
        out.append((UnboundedOutputWarning, unbounded))
    exponential = exponential_choice_message(query)
    if exponential is not None:
        out.append((ExponentialChoiceWarning, exponential))
    vacuous = vacuous_prev(query)
    if vacuous is not None:
        out.append((VacuousConditionWarning, vacuous))
    return tuple(out)
