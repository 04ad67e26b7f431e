"""ceql: complex event recognition with CORE's guarantees (CEQL → automata → tECS).

    >>> import ceql
    >>> q = ceql.compile("SELECT * FROM S WHERE SELL AS a ; BUY AS b WITHIN 3 EVENTS")
    >>> [m.positions for m in q.run([{"type": "SELL"}, {"type": "BUY"}])]
    [(0, 1)]
"""

from __future__ import annotations

from . import plot
from .errors import (
    CeqlError,
    CeqlInputError,
    CeqlResourceError,
    CeqlSyntaxError,
    CeqlTypeError,
    CeqlValidationError,
    CeqlWarning,
    ExponentialChoiceWarning,
    LikePatternWarning,
    NegatedVariableError,
    NegationError,
    TypeClashError,
    UnboundedOutputWarning,
    UnknownAttributeError,
    UnknownStreamError,
    UnknownVariableError,
    UnsafeVariableError,
    UnseenNameWarning,
    VacuousConditionWarning,
    ValueTypeWarning,
)
from .explanation import Explanation, explain
from .mr import match_recognize
from .query import DEFAULT_MAX_STATES, Query, compile
from .runtime import Evaluator, Match
from .runtime.match import Matches

__all__ = [
    "DEFAULT_MAX_STATES",
    "CeqlError",
    "CeqlInputError",
    "CeqlResourceError",
    "CeqlSyntaxError",
    "CeqlTypeError",
    "CeqlValidationError",
    "CeqlWarning",
    "Evaluator",
    "Explanation",
    "ExponentialChoiceWarning",
    "LikePatternWarning",
    "Match",
    "Matches",
    "NegatedVariableError",
    "NegationError",
    "Query",
    "TypeClashError",
    "UnboundedOutputWarning",
    "UnknownAttributeError",
    "UnknownStreamError",
    "UnknownVariableError",
    "UnsafeVariableError",
    "UnseenNameWarning",
    "VacuousConditionWarning",
    "ValueTypeWarning",
    "compile",
    "explain",
    "match_recognize",
    "plot",
]

__version__ = "0.1.0"
