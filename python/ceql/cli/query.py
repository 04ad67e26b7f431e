"""The query of a command: reading it (a file, standard input or the text itself), compiling
it, and checking it against the run's options and the input's columns."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import pyarrow as pa

import ceql

from .errors import EXIT_USAGE, CliError, QueryError
from .progress import say

__all__ = [
    "QUERY_TEXT",
    "check_streams",
    "check_time",
    "cli_words",
    "compile_query",
    "looks_like_mr",
    "read_query",
    "unit_warning",
]

#: What messages call a query given as text on the command line.
QUERY_TEXT = "<query>"

# a query given as text: SELECT first (after blanks and comments), then a blank, `*` or `(`
_LOOKS_LIKE_QUERY = re.compile(r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*SELECT(?=[\s*(]|$)",
                               re.IGNORECASE | re.DOTALL)


# text with spaces that is no file but reads like a query with a mistake (SELCT …, … WHERE …):
# compiled, so that the mistake gets ceql's caret
_QUERY_WORDS = re.compile(r"\b(?:FROM|WHERE|PARTITION\s+BY|WITHIN)\b", re.IGNORECASE)


# MATCH_RECOGNIZE's body alone: one of its clauses first (after blanks and comments), its
# parentheses, or the word MATCH_RECOGNIZE and `(` (CEQL text starts with SELECT)
_MR_BODY = re.compile(r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*(?:(?:PARTITION\s+BY|ORDER\s+BY|"
                      r"MEASURES|ONE\s+ROW|ALL\s+ROWS|AFTER\s+MATCH|SUBSET|DEFINE)\b|"
                      r"PATTERN\s*\(|MATCH_RECOGNIZE\s*\(|\()", re.IGNORECASE | re.DOTALL)
# a query holding the clause: the word MATCH_RECOGNIZE and `(` outside strings, quoted names
# and comments (which the first alternatives skip)
_MR_CLAUSE = re.compile(r"'(?:[^']|'')*'?|`(?:[^`]|``)*`?|--[^\n]*|/\*.*?(?:\*/|\Z)|"
                        r"(\bMATCH_RECOGNIZE\s*\()", re.IGNORECASE | re.DOTALL)


def looks_like_query(text: str) -> bool:
    """Whether a QUERY argument is CEQL text rather than a file name."""
    return _LOOKS_LIKE_QUERY.match(text) is not None


def looks_like_mr(text: str) -> bool:
    """Whether query text is MATCH_RECOGNIZE (docs/match_recognize.md): the clause's body
    alone, or a query with the clause ``MATCH_RECOGNIZE (`` outside strings and comments. CEQL
    text is neither (it starts with SELECT and has no such clause)."""
    if _MR_BODY.match(text):
        return True
    return any(m.group(1) for m in _MR_CLAUSE.finditer(text))


def _reads_like_a_query(text: str) -> bool:
    words = text.split(None, 1)
    first = words[0].upper() if words else ""
    return bool(difflib.get_close_matches(first, ["SELECT"], n=1, cutoff=0.7)
                or _QUERY_WORDS.search(text))


def read_query(arg: str) -> tuple[str, str]:
    """The query text and the name to report it by.

    ``arg`` is a file, ``-`` (standard input) or, when no such file exists and it starts with
    SELECT (or is MATCH_RECOGNIZE text, :func:`looks_like_mr`), the query itself.
    """
    if arg == "-":
        return sys.stdin.read(), "<stdin>"
    if not os.path.exists(arg) and (looks_like_query(arg) or (
            looks_like_mr(arg) and any(c.isspace() or c == "(" for c in arg))):
        return arg, QUERY_TEXT
    try:
        with open(arg, encoding="utf-8") as f:
            return f.read(), arg
    except UnicodeDecodeError as exc:
        raise CliError(f"query file {arg} is not UTF-8 text ({exc.reason} at byte "
                       f"{exc.start})") from None
    except FileNotFoundError:
        if any(c.isspace() for c in arg.strip()) and _reads_like_a_query(arg):
            return arg, QUERY_TEXT
        if any(c.isspace() for c in arg.strip()):
            raise CliError(f"{arg!r} is neither a query file nor a query: a query given as "
                           "text starts with SELECT (e.g. ceql run \"SELECT * FROM S WHERE "
                           "A ; B\" -i events.csv)", EXIT_USAGE) from None
        raise CliError(f"cannot read query file {arg}: No such file or directory") from None
    except OSError as exc:
        raise CliError(f"cannot read query file {arg}: {exc.strerror or exc}") from None


_OPTION_WORDS = (
    ("Query.run(..., sort=True) does it", "ceql run --sort does it"),
    ("pass time_format, the strptime format", "give --time-format, the strptime format"),
    ("time_format='", "--time-format '"),
    ("match time_format ", "match --time-format "),
    # the CLI reads files itself: there is no reader of the user's to give a schema to
    (", or give the reader a schema that reads the column as numbers or timestamps", ""),
)


def cli_words(message: str) -> str:
    """An engine message with the Python options it suggests named by their flags."""
    for python, flag in _OPTION_WORDS:
        message = message.replace(python, flag)
    return message


def compile_query(text: str, source: str, *, schema: Any = None,
                  max_states: int = ceql.DEFAULT_MAX_STATES) -> ceql.Query:
    """:func:`ceql.compile`, its errors raised as :class:`QueryError` naming ``source``."""
    try:
        return ceql.compile(text, schema=schema, max_states=max_states)
    except ceql.CeqlError as exc:
        raise QueryError(source, exc) from None


def check_time(query: ceql.Query, args: argparse.Namespace) -> None:
    """Refuse a window in time without ``--time``: positions are not seconds."""
    within = query.ast.within
    if within is not None and within.kind == "time" and args.time is None:
        raise CliError("the query's window (WITHIN) is a length of time, but no --time column "
                       "was given: name the column holding each event's time with --time COL "
                       "(without one, events have positions, not times)", EXIT_USAGE)


def check_streams(query: ceql.Query, columns: Sequence[str], source: str,
                  stream_col: str) -> None:
    """Refuse several FROM names over an input that cannot tell its events' streams apart.

    One FROM name stands for the input, whatever it is (``FROM Stock`` over ``stock.csv``);
    with a stream column, FROM names are that column's values (a name no event carries is
    warned of after the run).
    """
    streams = query.ast.streams
    if len(streams) > 1 and stream_col not in columns:
        raise CliError(
            f"the query reads FROM {', '.join(streams)}, but {source} has no column "
            f"{stream_col!r} (--stream-col) saying which of them each event comes from; "
            "give one FROM name (it stands for the whole input), or add that column",
            EXIT_USAGE)


def unit_warning(query: ceql.Query, args: argparse.Namespace, batch: Any,
                 err: TextIO | None = None) -> None:
    """Warn when numeric times look like epoch milli/micro/nanoseconds but are read as s."""
    within = query.ast.within
    if (args.time is None or args.time_unit != "s" or within is None or within.kind != "time"
            or batch.num_rows == 0):
        return
    col = batch.column(batch.schema.get_field_index(args.time))
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        return
    first = col[0].as_py()
    if not isinstance(first, int | float):
        return
    for unit, name, threshold in (("ns", "nanoseconds", 1e17), ("us", "microseconds", 1e14),
                                  ("ms", "milliseconds", 1e11)):
        if abs(first) >= threshold:
            say(f"ceql: warning: column {args.time!r} starts at {first}, which looks like "
                f"{name} since 1970, but --time-unit is s (the default): did you mean "
                f"--time-unit {unit}?", err)
            return
