"""The error the Spark layer raises for a wrong MATCH_CEQL call or unusable input, and how to
find it inside the exceptions Spark wraps it in."""

from __future__ import annotations

from ceql import CeqlError, CeqlWarning
from ceql.constants import TABLE_FUNCTIONS
from ceql.spark.inline import refused

__all__ = ["MatchCeqlError", "TieOrderWarning", "unwrap"]


class MatchCeqlError(CeqlError):
    """A MATCH_CEQL call, its options or its input rows cannot be used as given."""


class TieOrderWarning(CeqlWarning):
    """Rows of one partition have equal times and nothing orders them (no ``tie_break``), so
    the matches can depend on the order Spark happens to read them in."""


# Spark prints a task's error as "<module>.<class>: <message>": the public name reads better
MatchCeqlError.__module__ = "ceql.spark"
TieOrderWarning.__module__ = "ceql.spark"

_MARKERS = (f"{MatchCeqlError.__module__}.{MatchCeqlError.__name__}: ",
            f"{MatchCeqlError.__name__}: ")


def unwrap(exc: BaseException) -> MatchCeqlError | None:
    """The ceql error a Spark exception carries (a task's, or ``analyze``'s), or None.

    Spark reports MATCH_CEQL's errors inside its own (``PythonException``,
    ``AnalysisException``, …) after a line of its own; this gives them back as a
    :class:`MatchCeqlError` whose message is ceql's alone::

        try:
            rows = df.collect()
        except Exception as e:
            raise ceql.spark.unwrap(e) or e

    Spark's own errors for a MATCH_CEQL the session cannot run — not registered, or written
    inline where Spark's parser reads it (no extension) — become ceql's word on what to do.
    """
    if isinstance(exc, MatchCeqlError):
        return exc
    text = str(exc)
    for marker in _MARKERS:
        at = text.find(marker)
        if at >= 0:
            return MatchCeqlError(_trim(text[at + len(marker):]))
    for f in TABLE_FUNCTIONS:
        at = text.find(f"Failed to analyze the Python user defined table function: {f.name}")
        if at >= 0:
            return MatchCeqlError(_trim(text[text.index(f.name, at):]))
    message = refused(text)
    return None if message is None else MatchCeqlError(message)


def _trim(message: str) -> str:
    """A message without what Spark appends (``SQLSTATE: …``, a JVM stack trace)."""
    for tail in (" SQLSTATE: ", "\n SQLSTATE: ", "\n\tat ", "\nJVM stacktrace:"):
        at = message.find(tail)
        if at >= 0:
            message = message[:at]
    return message.rstrip()
