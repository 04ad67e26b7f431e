"""Analysis of the IR: validation (names, scopes, types), schemas, relevance (which events
can matter, for prefilters), the reported variables, output growth and compile-time warnings."""

from ..ir import output_variables
from .growth import Growth, output_growth
from .hints import compile_warnings, sql_like_patterns, sql_like_to_regex, unbounded_output
from .relevance import Compiled, Relevance, relevance
from .schema import KINDS, normalize_schema
from .validate import validate

__all__ = [
    "KINDS",
    "Compiled",
    "Growth",
    "Relevance",
    "compile_warnings",
    "normalize_schema",
    "output_growth",
    "output_variables",
    "relevance",
    "sql_like_patterns",
    "sql_like_to_regex",
    "unbounded_output",
    "validate",
]
