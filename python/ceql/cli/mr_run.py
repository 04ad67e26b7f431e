"""``ceql run`` and ``ceql explain`` of MATCH_RECOGNIZE text (docs/match_recognize.md): the
Python engine (:func:`ceql.match_recognize`) over the rows of the input, its output rows
written as JSON lines (one object per row), CSV or Parquet.

The query is the clause's body or ``SELECT * FROM t MATCH_RECOGNIZE ( … )``; its PARTITION BY
and ORDER BY split and order the rows, so the options that time and order CEQL's events do not
apply. The whole input is read before the query runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

import ceql
from ceql.mr import MatchRecognizeQuery, UnknownColumnError

from .errors import EXIT_OK, EXIT_USAGE, CliError, QueryError
from .progress import say
from .readers import input_format, open_events
from .sinks import Target, output_format

__all__ = ["compile_mr", "explain_mr", "run_mr"]

#: ``ceql run`` options that have no meaning for MATCH_RECOGNIZE, and why.
_CEQL_ONLY = (
    ("time", "--time", "the query's ORDER BY orders the rows"),
    ("time_format", "--time-format", "the query's ORDER BY orders the rows"),
    ("sort", "--sort", "the query's ORDER BY sorts each partition"),
    ("variables", "--variables", "write what a match shows as MEASURES (CLASSIFIER(), "
                                 "MATCH_NUMBER(), FIRST(v.x), ...)"),
    ("fields", "--fields", "ALL ROWS PER MATCH writes each matched row with its columns"),
    ("spark_log", "--spark-log", "it runs on the local engine"),
)

#: ``ceql run`` options of CEQL's events with a default, and that default.
_CEQL_DEFAULTS = (("type_col", "--type-col", "type"), ("stream_col", "--stream-col", "stream"),
                  ("time_unit", "--time-unit", "s"))


def compile_mr(text: str, source: str) -> MatchRecognizeQuery:
    """:func:`ceql.match_recognize`, its errors raised as :class:`QueryError` naming
    ``source``."""
    try:
        return ceql.match_recognize(text)
    except ceql.CeqlError as exc:
        raise QueryError(source, exc) from None


def explain_mr(text: str, source: str, dot: bool) -> str:
    """What ``ceql explain`` prints for MATCH_RECOGNIZE text: the query as ceql reads it, the
    size of its matcher and the registers its threads carry."""
    query = compile_mr(text, source)
    if dot:
        raise CliError("--dot draws a CEQL query's automaton; for MATCH_RECOGNIZE, ceql "
                       "explain prints the query and its matcher as text", EXIT_USAGE)
    return str(query)


def run_mr(args: argparse.Namespace, text: str, source: str) -> int:
    """Run the MATCH_RECOGNIZE query ``text`` (read from ``source``) over ``args.input``;
    write its output rows."""
    for attr, flag, why in _CEQL_ONLY:
        if getattr(args, attr, None):
            raise CliError(f"{flag} is for CEQL queries: {why} (MATCH_RECOGNIZE)", EXIT_USAGE)
    for attr, flag, default in _CEQL_DEFAULTS:
        if getattr(args, attr, default) != default:
            raise CliError(f"{flag} is for CEQL queries: MATCH_RECOGNIZE names its columns in "
                           "its text", EXIT_USAGE)
    if args.engine != "local":
        raise CliError("MATCH_RECOGNIZE runs on the local engine in ceql run; in Spark, write "
                       "SELECT * FROM t MATCH_RECOGNIZE ( ... ) in spark.sql (docs/spark.md)",
                       EXIT_USAGE)
    query = compile_mr(text, source)  # before any input
    fmt_in, compression = input_format(args.input, args.input_format)
    fmt_out = output_format(args)
    if args.input != "-" and not os.path.exists(args.input):
        raise CliError(f"cannot read {args.input}: No such file or directory")
    started = time.perf_counter()
    events = open_events(args.input, fmt_in, compression)
    try:
        table = pa.Table.from_batches(list(events), schema=events.schema)
    finally:
        events.close()
    try:
        rows = query.run(table)
    except UnknownColumnError as exc:  # the query's mistake, as for CEQL's attributes
        raise QueryError(source, exc) from None
    except ceql.CeqlInputError as exc:
        raise CliError(f"{events.name}: {exc}") from None
    _write(rows, args, fmt_out)
    if not args.quiet:
        seconds = time.perf_counter() - started
        say(f"ceql: {_count(table.num_rows, 'row')} read, {_count(len(rows), 'row')} written "
            f"in {seconds:.2f} s")
    return EXIT_OK


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _json_value(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _write_text(rows: Sequence[dict[str, object]], fmt: str, out: TextIO) -> None:
    if fmt == "csv":
        if rows:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(list(rows[0]))
            writer.writerows([_csv_value(v) for v in row.values()] for row in rows)
    else:
        out.writelines(json.dumps(row, default=_json_value) + "\n" for row in rows)


def _write(rows: Sequence[dict[str, object]], args: argparse.Namespace, fmt: str) -> None:
    """The rows to standard output, or to ``--output`` (which appears only when complete)."""
    if args.output in (None, "-"):
        _write_text(rows, fmt, sys.stdout)
        sys.stdout.flush()
        return
    target = Target(args.output)
    try:
        if fmt == "parquet":
            try:
                table = pa.Table.from_pylist(list(rows))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise CliError(f"cannot write {args.output} as Parquet: a column's values "
                               f"differ in type ({exc}); write .jsonl or .csv") from None
            pq.write_table(table, target.temp)
        else:
            with open(target.temp, "w", encoding="utf-8", newline="") as out:
                _write_text(rows, fmt, out)
    except BaseException:
        target.discard()
        raise
    target.commit()
