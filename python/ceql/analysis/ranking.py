"""Aggregates that make NEXT, LAST or MAX choose among exponentially many partial matches.

NEXT, LAST and MAX with conditions between events keep one run per distinct (state,
registers) and rank them (``runtime/correlated.py``). A condition's records are cut to the few
it needs (``predicates/summary.py``), so the runs grow with the events, not their subsets —
except for an aggregate over a variable that an iteration (``+``) binds to any subset of its
events: ``SUM`` and ``AVG`` then take a value per subset, and under MAX so do the chains of
one ``COUNT`` (the sets of one size are not subsets of each other). Such a query is valid and
exact, but its work grows exponentially with the events of a partition, and it stops with
``CeqlResourceError`` past ``RANKED_RUNS``/``RANKED_MATCHES``; :func:`exponential_choices`
finds them at compile time, for a warning and ``explain``.
"""

from __future__ import annotations

from ..ir import nodes as A
from ..ir.walks import bound_variables, expr_nodes, filter_leaves, formula_nodes

__all__ = ["exponential_choice_message", "exponential_choices"]

_RANKED = ("NEXT", "LAST", "MAX")


def _iterated(root: A.Formula) -> set[str]:
    """The variables ``root`` binds under a ``+`` (one that may skip events: ``:+`` picks
    an interval, polynomially many)."""
    out: set[str] = set()
    for node in formula_nodes(root):
        if isinstance(node, A.Plus) and not node.contiguous:
            out |= bound_variables(node.formula)
    return out


def exponential_choices(query: A.Query) -> list[A.Agg]:
    """The aggregates of ``query`` whose values NEXT, LAST or MAX must rank per subset of an
    iteration's events (in text order; empty for other strategies)."""
    if query.strategy not in _RANKED:
        return []
    funcs = {"SUM", "AVG"} | ({"COUNT"} if query.strategy == "MAX" else set())
    found: dict[A.Agg, None] = {}
    for node in formula_nodes(query.where):
        if not isinstance(node, A.Filter):
            continue
        iterated = _iterated(node.formula)
        for leaf in filter_leaves(node.cond):
            for e in expr_nodes(leaf.pred):
                if isinstance(e, A.Agg) and e.func in funcs and e.var in iterated:
                    found.setdefault(e)
    return sorted(found, key=lambda e: (e.span.start, e.func, e.var))


def _agg_text(e: A.Agg) -> str:
    where = f" (line {e.span.line}, column {e.span.column})" if e.span.line else ""
    return f"{e.func}({e.var}{'.' + e.attr if e.attr else ''}){where}"


def exponential_choice_message(query: A.Query) -> str | None:
    """The warning for :func:`exponential_choices`, or None when there are none."""
    aggs = exponential_choices(query)
    if not aggs:
        return None
    s = query.strategy
    shown = ", ".join(_agg_text(e) for e in aggs)
    first = aggs[0]
    var = first.var
    why = ("the sets of one size are not subsets of each other" if s == "MAX"
           and all(e.func == "COUNT" for e in aggs) else "its value differs per subset")
    each = (f"a condition every {var} event must pass ({var}[{first.attr} > …]) where that is "
            "what is meant, " if first.attr else "")
    return (f"SELECT {s} must rank every partial match, and {shown} is an aggregate over "
            f"{var}, which an iteration (+) binds to any subset of its events: {why}, so "
            f"the partial matches {s} keeps and ranks grow exponentially with the events of "
            "a partition (the evaluation stops with CeqlResourceError past "
            "ceql.runtime.correlated.RANKED_RUNS or RANKED_MATCHES). Instead: " + each
            + "COUNT, MIN, MAX, FIRST or LAST (few distinct values"
            + ("; not COUNT under MAX" if s == "MAX" else "")
            + "), or SELECT ALL or ANY with WITHIN (runs then expire with the window).")
