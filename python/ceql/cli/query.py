"""The query of a command: reading its file, compiling it, warning about its time window."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

import pyarrow as pa

import ceql

from .errors import CliError, QueryError
from .progress import say

__all__ = ["compile_query", "read_query", "time_warnings", "unit_warning"]


def read_query(path: str) -> tuple[str, str]:
    """The query text and the name to report it by."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except UnicodeDecodeError as exc:
        raise CliError(f"query file {path} is not UTF-8 text ({exc.reason} at byte "
                       f"{exc.start})") from None
    except OSError as exc:
        raise CliError(f"cannot read query file {path}: {exc.strerror or exc}") from None


def compile_query(text: str, source: str, *, schema: Any = None,
                  max_states: int = ceql.DEFAULT_MAX_STATES) -> ceql.Query:
    """:func:`ceql.compile`, its errors raised as :class:`QueryError` naming ``source``."""
    try:
        return ceql.compile(text, schema=schema, max_states=max_states)
    except ceql.CeqlError as exc:
        raise QueryError(source, exc) from None


def time_warnings(query: ceql.Query, args: argparse.Namespace,
                  err: TextIO | None = None) -> None:
    """Warn when the query has a time window but the events have no time column."""
    within = query.ast.within
    if within is not None and within.kind == "time" and args.time is None:
        say("ceql: warning: the query has a time window but no --time column was given, "
            "so each event's position counts as its time in seconds", err)


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
