"""Static checks of a parsed CEQL query: names, scopes, types and clause values.

:func:`validate` runs the checks — clause values (here), negations
(:mod:`ceql.analysis.negations`), names and scopes (:mod:`ceql.analysis.scopes`), kinds
(:mod:`ceql.analysis.kinds`) — and raises the first problem in text order as a subclass of
:class:`~ceql.errors.CeqlValidationError`, located (line, column, caret) at the offending node
(:mod:`ceql.analysis.messages`). Schemas are read by :mod:`ceql.analysis.schema`.

All walks over the AST use explicit stacks, so arbitrarily deep queries are fine.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import CeqlValidationError
from ..ir import filter_leaves, formula_nodes
from ..ir import nodes as A
from .kinds import Kinds
from .messages import Reporter
from .negations import Negations
from .schema import normalize_schema
from .scopes import Scope

__all__ = ["validate"]


def _check_clauses(q: A.Query, out: Reporter) -> None:
    """The values of the strategy, CONSUME BY and LIMIT clauses."""
    if q.strategy not in A.STRATEGIES:
        out.report(CeqlValidationError, f"Unknown selection strategy {q.strategy!r}: use "
                   f"one of {', '.join(A.STRATEGIES)}", q.span)
    if q.consume not in A.CONSUME_POLICIES:
        out.report(CeqlValidationError, f"Unknown CONSUME BY policy {q.consume!r}: use one "
                   f"of {', '.join(A.CONSUME_POLICIES)}", q.span)
    if q.limit is not None and q.limit < 0:  # (the grammar reads digits only)
        out.report(CeqlValidationError, f"LIMIT {q.limit} is negative: LIMIT needs a "
                   "whole number, 0 or more (leave it out for no limit)", q.limit_span)


def _check_filters(q: A.Query, scope: Scope, kinds: Kinds) -> None:
    """Each FILTER's conditions: their variables (scope), then their kinds."""
    for node in formula_nodes(q.where):
        if not isinstance(node, A.Filter):
            continue
        scope.enter(node)
        for leaf in filter_leaves(node.cond):
            if not scope.check_leaf(leaf):
                continue
            kinds.check_pred(leaf.pred)
            if isinstance(leaf, A.FilterAtom):
                scope.check_prev(leaf)
        scope.leaf = None


def validate(query: A.Query, text: str,
             schema: Mapping[str, object] | object | None = None) -> A.Query:
    """Check ``query`` (parsed from ``text``) and return it unchanged if it is sound.

    Checks variables (every FILTER ``X[...]`` and SELECT name is bound by the WHERE formula,
    ``S>T`` there names leaves written ``S>T``, and a FILTER only tests variables bound in the
    formula it applies to), conditions between events (the variable of ``Y.attr`` or of an
    aggregate is bound in the formula the FILTER applies to; ``PREV`` stands only inside
    ``X[…]``, for an ``X`` that can bind two events; a match condition ``[P]`` reads no plain
    attribute; SUM and AVG of numbers only, with a schema), streams (``S>T`` names a FROM
    stream; no stream twice), duplicates in SELECT and PARTITION BY, clause values (LIMIT ≥ 0,
    WITHIN amounts) and LIKE patterns (valid RE2). A name inside ``x[…]`` that is an AS
    variable of the query (``b[temp > a]``, most likely meant as ``a.temp``) is refused unless
    the schema lists it as an attribute, and so is an unquoted ``NULL``. Literal types must
    agree among themselves; with a ``schema`` (anything :func:`normalize_schema` reads),
    attributes must exist and types must agree (no string compared with a number, LIKE on
    strings only, arithmetic on numbers only, SUM and AVG on numbers, WITHIN ``[attr]`` on a
    number or timestamp).

    Raises the first problem in text order as a :class:`~ceql.errors.CeqlValidationError`
    subclass carrying line, column and a caret snippet.
    """
    out = Reporter(text)
    scope = Scope(query, out)
    kinds = Kinds(query, out, scope, None if schema is None else normalize_schema(schema))
    _check_clauses(query, out)
    Negations(query, out, scope).check_negations()
    scope.check_streams()
    scope.check_select(scope.bound)
    _check_filters(query, scope, kinds)
    kinds.check_partition()
    kinds.check_within()
    error = out.first()
    if error is not None:
        raise error
    return query
