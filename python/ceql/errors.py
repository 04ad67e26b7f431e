"""The error tree of ceql: every error the package raises is a :class:`CeqlError`.

Each class below the root also subclasses the builtin a caller would catch for the same
problem outside ceql (as lark does), so ``except ValueError`` catches a bad query or bad
events, and ``except TypeError`` an argument of the wrong type::

    CeqlError
    ├── CeqlSyntaxError        (ValueError)
    ├── CeqlValidationError    (ValueError)
    │   ├── UnknownVariableError, UnknownStreamError, UnknownAttributeError
    │   ├── TypeClashError, UnsafeVariableError
    │   └── NegationError, NegatedVariableError
    ├── CeqlInputError         (ValueError)
    ├── CeqlResourceError      (RuntimeError)
    └── CeqlTypeError          (TypeError)

Warnings (for answers that are probably not what the user meant, but may be)::

    CeqlWarning                (UserWarning)
    ├── UnseenNameWarning      an event type or stream of the query never occurred in the input
    ├── LikePatternWarning     a LIKE pattern written with SQL wildcards (LIKE is a regex here)
    ├── ValueTypeWarning       a comparison between a string and a number in the events
    ├── UnboundedOutputWarning neither WITHIN nor PARTITION BY: output may grow without limit
    ├── ExponentialChoiceWarning NEXT/LAST/MAX must rank a partial match per subset (an aggregate)
    └── VacuousConditionWarning a FILTER condition that can never reject anything (PREV of a
                               variable that binds at most one event)
"""

from __future__ import annotations

__all__ = [
    "CeqlError",
    "CeqlInputError",
    "CeqlResourceError",
    "CeqlSyntaxError",
    "CeqlTypeError",
    "CeqlValidationError",
    "CeqlWarning",
    "ExponentialChoiceWarning",
    "LikePatternWarning",
    "NegatedVariableError",
    "NegationError",
    "TypeClashError",
    "UnboundedOutputWarning",
    "UnknownAttributeError",
    "UnknownStreamError",
    "UnknownVariableError",
    "UnsafeVariableError",
    "UnseenNameWarning",
    "VacuousConditionWarning",
    "ValueTypeWarning",
    "caret_snippet",
]


def caret_snippet(text: str, line: int, column: int, width: int = 1) -> str:
    """Return the 1-based ``line`` of ``text`` with carets under ``column`` (1-based)."""
    lines = text.splitlines() or [""]
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1].expandtabs(1)
    width = max(1, min(width, len(src) - column + 1)) if column <= len(src) else 1
    return f"{src}\n{' ' * (column - 1)}{'^' * width}"


class CeqlError(Exception):
    """Root of every error raised by ceql."""


class CeqlSyntaxError(CeqlError, ValueError):
    """The query text does not follow CEQL's grammar."""

    def __init__(self, message: str, *, line: int, column: int, snippet: str,
                 expected: tuple[str, ...] = ()) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.snippet = snippet
        self.expected = expected
        super().__init__(f"{message} (line {line}, column {column})\n{snippet}")


class CeqlValidationError(CeqlError, ValueError):
    """The query parses but cannot mean anything: names, types or structure are wrong."""

    def __init__(self, message: str, *, line: int = 0, column: int = 0, snippet: str = "") -> None:
        self.message = message
        self.line = line
        self.column = column
        self.snippet = snippet
        where = f" (line {line}, column {column})" if line else ""
        tail = f"\n{snippet}" if snippet else ""
        super().__init__(f"{message}{where}{tail}")


class UnknownVariableError(CeqlValidationError):
    """A FILTER or SELECT names a variable that the WHERE formula never binds."""


class UnknownStreamError(CeqlValidationError):
    """A stream-qualified event type names a stream that is not in FROM."""


class UnknownAttributeError(CeqlValidationError):
    """With a schema given, a predicate or clause names an attribute the schema lacks."""


class TypeClashError(CeqlValidationError):
    """With a schema given, a predicate compares values of incompatible types."""


class UnsafeVariableError(CeqlValidationError):
    """A variable is used where it cannot hold any event (e.g. filtered outside its scope)."""


class NegationError(CeqlValidationError):
    """A ``NOT`` where CEQL gives it no meaning: not an element of a ``;`` sequence (between
    two elements, or first or last of the top-level sequence with WITHIN), two in a row, in
    a ``:`` sequence, with CONSUME BY after a trailing one, or over more than one event."""


class NegatedVariableError(CeqlValidationError):
    """A negated variable (``n`` of ``NOT B AS n``, or a type written only under NOT) used
    where only events of the match can be: SELECTed, aggregated, read by a match condition,
    read unnamed (a type only under NOT) by another variable's condition, or its condition
    under OR."""


class CeqlResourceError(CeqlError, RuntimeError):
    """Evaluation would exceed a configured resource cap (e.g. determinized states).

    A :class:`RuntimeError`, like :class:`RecursionError`: a limit the caller set (and can
    raise) was hit. Not a :class:`MemoryError`, which means the interpreter itself ran out of
    memory and which handlers may treat as fatal; here memory is fine and retrying with a
    higher cap or a simpler query is a normal recovery.
    """


class CeqlInputError(CeqlError, ValueError):
    """The events given to a query are unusable (e.g. times out of order, bad time values)."""


class CeqlTypeError(CeqlError, TypeError):
    """An argument of the wrong Python type, e.g. a query that is not a ``str``.

    About the caller's arguments, not the query's values: a type clash inside a query is a
    :class:`TypeClashError`.
    """


class CeqlWarning(UserWarning):
    """Root of every warning ceql issues: an answer that is probably not what was meant."""


class UnseenNameWarning(CeqlWarning):
    """An event type or stream named by the query never occurred in the events of a run."""


class LikePatternWarning(CeqlWarning):
    """A LIKE pattern that looks like SQL's (``%``, ``_``), while ceql's LIKE is a regex."""


class ValueTypeWarning(CeqlWarning):
    """Events compare a string with a number (e.g. a CSV read without a schema)."""


class UnboundedOutputWarning(CeqlWarning):
    """A query with neither WITHIN nor PARTITION BY, whose output can grow without limit."""


class ExponentialChoiceWarning(CeqlWarning):
    """NEXT, LAST or MAX with an aggregate over an iteration's events: the strategy must rank
    a partial match per subset of them, exponentially many in the events of a partition."""


class VacuousConditionWarning(CeqlWarning):
    """A FILTER condition that is valid but can never reject anything: ``PREV`` in ``X[…]``
    where ``X`` binds at most one event (the first event of ``X`` is exempt)."""
