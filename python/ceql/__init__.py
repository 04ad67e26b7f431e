"""ceql: complex event recognition with CORE's guarantees (CEQL → automata → tECS).

    >>> import ceql
    >>> q = ceql.compile("SELECT * FROM S WHERE SELL AS a ; BUY AS b WITHIN 3 EVENTS")
    >>> [m.positions for m in q.run([{"type": "SELL"}, {"type": "BUY"}])]
    [(0, 1)]
"""

from __future__ import annotations

from ._evaluator import Evaluator
from ._explain import describe as _describe
from ._explain import to_dot as _to_dot
from ._match import Match
from ._query import DEFAULT_MAX_STATES, Query, compile
from .errors import (
    CeqlError,
    CeqlInputError,
    CeqlResourceError,
    CeqlSyntaxError,
    CeqlValidationError,
    TypeClashError,
    UnknownAttributeError,
    UnknownStreamError,
    UnknownVariableError,
    UnsafeVariableError,
)

__all__ = [
    "DEFAULT_MAX_STATES",
    "CeqlError",
    "CeqlInputError",
    "CeqlResourceError",
    "CeqlSyntaxError",
    "CeqlValidationError",
    "Evaluator",
    "Match",
    "Query",
    "TypeClashError",
    "UnknownAttributeError",
    "UnknownStreamError",
    "UnknownVariableError",
    "UnsafeVariableError",
    "compile",
    "explain",
]

__version__ = "0.1.0"


def explain(text: str, *, dot: bool = False) -> str:
    """Describe the query's automaton: predicates, states, transitions (or Graphviz DOT)."""
    q = compile(text)
    atoms, cea = q._automaton_parts("type", "stream")
    if dot:
        return _to_dot(cea, atoms)
    from ._format import format_query
    from ._query import _deep, _depth

    with _deep(_depth(q.ast)):
        return _describe(cea, atoms, format_query(q.ast))
