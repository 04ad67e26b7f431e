"""Analysis of the IR: validation (names, scopes, types), schemas, and relevance (which events
can matter, for prefilters)."""

from .relevance import Compiled, Relevance, relevance
from .schema import KINDS, normalize_schema
from .validate import validate

__all__ = ["KINDS", "Compiled", "Relevance", "normalize_schema", "relevance", "validate"]
