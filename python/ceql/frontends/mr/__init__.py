"""The MATCH_RECOGNIZE front end (docs/match_recognize.md): SQL:2016 row pattern recognition.

``parse(text)`` gives a checked :class:`Query` (``SELECT … FROM t MATCH_RECOGNIZE ( … )``) or
:class:`MatchRecognize` (the clause's body alone); ``format_body``/``format_query`` write them
back as text that parses to an equal tree.
"""

from . import ast
from .ast import MatchRecognize, Query
from .checks import SCALAR_FUNCTIONS, check
from .errors import (
    AggregateError,
    ClauseError,
    MatchSkipError,
    NavigationError,
    PatternError,
    UnsupportedFunctionError,
)
from .formatter import format_body, format_expr, format_pattern, format_query
from .lalr import grammar_text
from .parser import INTERVAL_UNITS, parse, parse_body

__all__ = [
    "INTERVAL_UNITS",
    "SCALAR_FUNCTIONS",
    "AggregateError",
    "ClauseError",
    "MatchRecognize",
    "MatchSkipError",
    "NavigationError",
    "PatternError",
    "Query",
    "UnsupportedFunctionError",
    "ast",
    "check",
    "format_body",
    "format_expr",
    "format_pattern",
    "format_query",
    "grammar_text",
    "parse",
    "parse_body",
]
