"""The CEQL front end: grammar, parser (text → IR), syntax diagnostics and the formatter."""

from .formatter import format_expr, format_filter, format_formula, format_pred, format_query
from .lalr import grammar_text
from .parser import SOFT_KEYWORDS, parse
from .prescan import depth_floor

__all__ = [
    "SOFT_KEYWORDS",
    "depth_floor",
    "format_expr",
    "format_filter",
    "format_formula",
    "format_pred",
    "format_query",
    "grammar_text",
    "parse",
]
