"""MATCH_RECOGNIZE's own errors: the standard's rules a query breaks (each a
:class:`ceql.errors.CeqlValidationError` with line, column and caret), and the error of a skip
that would restart at a match's first row or at a variable the match does not map (a
:class:`ceql.errors.CeqlInputError`: it depends on the rows). Unknown variables raise CEQL's
:class:`~ceql.errors.UnknownVariableError`."""

from __future__ import annotations

from ...errors import CeqlInputError, CeqlValidationError

__all__ = [
    "AggregateError",
    "ClauseError",
    "MatchSkipError",
    "NavigationError",
    "PatternError",
    "UnsupportedFunctionError",
]


class PatternError(CeqlValidationError):
    """A row pattern the standard refuses: a quantifier whose bounds are wrong (or that repeats
    nothing: ``{0}``), an exclusion with ALL ROWS PER MATCH WITH UNMATCHED ROWS."""


class NavigationError(CeqlValidationError):
    """PREV, NEXT, FIRST or LAST used against the standard's rules: an offset that is not a
    non-negative integer, an argument without a column or reading several variables, a
    nesting the standard does not allow, RUNNING/FINAL where they mean nothing, FINAL in
    DEFINE."""


class AggregateError(CeqlValidationError):
    """An aggregate used against the standard's rules: an argument reading several variables,
    an aggregate or navigation inside another aggregate, ``*`` or DISTINCT where they mean
    nothing, a wrong number of arguments."""


class ClauseError(CeqlValidationError):
    """A clause that cannot mean anything: a name defined twice (variable, subset, measure), a
    SUBSET named like a pattern variable, a measure named like a partition column,
    MATCH_NUMBER() in DEFINE, WITHIN without ORDER BY or not longer than 0, a wrong
    number of arguments to a known function, a unit or literal that is not one."""


class UnsupportedFunctionError(CeqlValidationError):
    """A function that the pure-Python evaluation does not have (Spark evaluates every Spark
    SQL function; the Python engine a documented subset)."""


class MatchSkipError(CeqlInputError):
    """AFTER MATCH SKIP TO FIRST/LAST v (or TO v) where the match maps no row to ``v``, or
    where the row to restart at is the match's first row (matching would never end): the
    standard's exception, raised when the rows meet it."""
