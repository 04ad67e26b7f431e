"""``ceql run --engine spark``: the same matches through a local Spark session's MATCH_CEQL.

Spark reads the file and numbers its rows in reading order: that number, an extra column, is
each event's position. MATCH_CEQL returns, for each variable of a match, every input column of
the events it binds, so the match's positions are read back from that column; its option
``bounds`` gives the stream-order column at the interval's first and last events, which SELECT
may leave out, so the interval's ends are exact too, whatever the times.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc

import ceql
from ceql.constants import COLUMN_MATCH_END_PREFIX, COLUMN_MATCH_START_PREFIX

from .errors import EXIT_OK, EXIT_USAGE, CliError
from .progress import Progress, summary_line
from .query import compile_query, time_warnings, unit_warning
from .readers import input_compression
from .sinks import Row, Target, open_sink, ordered_variables

__all__ = ["run_spark"]

_SPARK_READERS = {"csv": "csv", "parquet": "parquet", "jsonl": "json"}


class _SparkLog:
    """Send the JVM's and Spark's own output on standard error to a log file while Spark runs.

    Spark's JVM inherits file descriptor 2 when it starts; ceql's own lines (progress,
    summary, errors) keep going to the original standard error through :attr:`stderr`.
    """

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="ceql-spark-", suffix=".log")
        sys.stderr.flush()
        self._saved = os.dup(2)
        os.dup2(fd, 2)
        os.close(fd)
        self.stderr: TextIO = os.fdopen(os.dup(self._saved), "w", encoding="utf-8",
                                        errors="replace")

    def restore(self, keep: bool) -> None:
        """Give standard error back; delete the log unless ``keep``."""
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self.stderr.flush()
        if not keep:
            try:
                os.remove(self.path)
            except OSError:
                pass


class _SparkFailure(CliError):
    """An error Spark reported: its log is kept and named in the message."""


def _spark_message(exc: BaseException) -> str:
    """The line of a Spark error that says what is wrong (not the JVM or Python trace)."""
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for marker in ("MatchCeqlError:", "CeqlInputError:", "CeqlError:", "MATCH_CEQL"):
        found = [ln for ln in lines if marker in ln]
        if found:
            line = found[-1]
            return line.split(marker, 1)[1].strip() if marker.endswith(":") else line
    return lines[0] if lines else type(exc).__name__


def _fresh_name(base: str, taken: Sequence[str]) -> str:
    names = {n.lower() for n in taken}
    name, k = base, 0
    while name.lower() in names:
        k += 1
        name = f"{base}_{k}"
    return name


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def run_spark(args: argparse.Namespace, text: str, source: str, fmt_in: str,
              fmt_out: str) -> int:
    """``ceql run --engine spark``: the local engine's matches, found by MATCH_CEQL.

    Matches are collected on the driver, then written like the local engine writes them.
    """
    if args.input == "-":
        raise CliError("--engine spark reads a file, not standard input", EXIT_USAGE)
    if args.stream_col != "stream":
        raise CliError("--engine spark reads streams from a column named 'stream'; "
                       "--stream-col cannot change that", EXIT_USAGE)
    if input_compression(args.input) not in (None, "gzip", "bz2"):
        raise CliError("--engine spark reads .gz and .bz2 files, not other compressions",
                       EXIT_USAGE)
    if not os.path.exists(args.input):
        raise CliError(f"cannot read {args.input}: No such file or directory")
    try:
        import ceql.spark as cspark
    except ImportError as exc:
        raise CliError(f"the Spark engine needs pyspark ({exc}): pip install 'ceql[spark]'"
                       ) from None
    target = Target(args.output) if args.output not in (None, "-") else None
    log = _SparkLog()
    keep_log = False
    try:
        progress = Progress(not args.quiet and (args.progress or sys.stderr.isatty()),
                            log.stderr)
        progress.note("starting Spark")
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # listen on this machine only
        try:
            spark = cspark.local_session(**{"spark.log.level": "ERROR"})
        except ceql.CeqlError as exc:  # e.g. the shim jar is missing
            raise CliError(str(exc)) from None
        except Exception as exc:
            raise _SparkFailure(f"cannot start Spark: {_spark_message(exc)}") from None
        try:
            started = time.perf_counter()
            rows, events, schema = _spark_matches(spark, args, text, source, fmt_in,
                                                  progress, log.stderr)
        finally:
            spark.stop()
        query = compile_query(text, source, max_states=args.max_states)
        sink = open_sink(args, fmt_out, query.partition_by, schema, target)
        target = None  # the sink owns it now
        try:
            sink.write(rows)
            sink.finish()
        except BaseException:
            sink.abort()
            raise
        progress.clear()
        if not args.quiet:
            print(summary_line(events, len(rows), time.perf_counter() - started),
                  file=log.stderr, flush=True)
    except _SparkFailure as exc:
        keep_log = True
        raise CliError(f"{exc} (Spark's log: {log.path})") from None
    finally:
        if target is not None:
            target.discard()
        log.restore(keep=keep_log)
    return EXIT_OK


def _read(spark: Any, path: str, fmt: str) -> Any:
    reader = spark.read.format(_SPARK_READERS[fmt])
    if fmt == "csv":
        reader = reader.option("header", True).option("inferSchema", True)
    return reader.load(path)


@dataclass(frozen=True)
class _Numbered:
    """The events as MATCH_CEQL gets them, and the names of the columns added to number them.

    ``position`` is the input row; ``order`` the place in the stream the engine reads (the
    same column unless ``--sort`` reorders); ``engine_time`` the column MATCH_CEQL takes as time.
    """

    frame: Any
    position: str
    order: str
    engine_time: str


def _spark_matches(spark: Any, args: argparse.Namespace, text: str, source: str, fmt: str,
                   progress: Progress, err: TextIO) -> tuple[list[Row], int, pa.Schema]:
    """Run the query on Spark: the matches, the number of events and the output's schema."""
    from pyspark.errors import AnalysisException

    try:
        raw = _read(spark, args.input, fmt)
        columns = raw.columns
    except AnalysisException as exc:
        raise _SparkFailure(f"cannot read {args.input}: {_spark_message(exc)}") from None
    listed = ", ".join(columns) if columns else "none"
    if args.type_col not in columns:
        raise CliError(f"{args.input} has no column {args.type_col!r} for the event type "
                       f"(--type-col); its columns are {listed}")
    if args.time is not None and args.time not in columns:
        raise CliError(f"{args.input} has no column {args.time!r} for --time; its columns are "
                       f"{listed}")
    query = compile_query(text, source, schema=raw.schema, max_states=args.max_states)
    if not args.quiet:
        time_warnings(query, args, err)
    progress.note("numbering the events")
    cols, events = _number(raw, query, args)
    if not args.quiet and args.time is not None:
        unit_warning(query, args, cols.frame.select(args.time).limit(1).toArrow(), err)
    view = _fresh_name("ceql_events", [])
    cols.frame.createOrReplaceTempView(view)
    params = {"ceql_query": text, "ceql_type": args.type_col, "ceql_unit": args.time_unit,
              "ceql_bounds": cols.order}
    options = ["query => :ceql_query", "type => :ceql_type", "time_unit => :ceql_unit",
               "bounds => :ceql_bounds"]
    # a query partitioned by its own key runs one Spark task per key, except under CONSUME BY
    # ANY, which consumes across keys; ties in time keep the file's order either way
    if query.partition_by and query.ast.consume != "ANY":
        spread = f"PARTITION BY ({', '.join(map(_quote, query.partition_by))})"
    else:
        spread = "WITH SINGLE PARTITION"
    order_by = ", ".join(map(_quote, dict.fromkeys((cols.engine_time, cols.order))))
    sql = (f"SELECT * FROM MATCH_CEQL(TABLE({view}) {spread} ORDER BY ({order_by}), "
           f"{', '.join(options)})")
    progress.note(f"matching {events:,} events")
    try:
        result = spark.sql(sql, args=params).toArrow()
    except Exception as exc:  # Spark wraps the engine's errors in its own
        raise _SparkFailure(f"{args.input}: {_spark_message(exc)}") from None
    rows = _rows(result, query, cols, args.variables)
    cols.frame.unpersist()
    return rows, events, result.schema


def _number(raw: Any, query: ceql.Query, args: argparse.Namespace) -> tuple[_Numbered, int]:
    """Number the events (cached) and check their times; also count them."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    columns = raw.columns
    pos = _fresh_name("ceql_pos", columns)
    file_order = _fresh_name("ceql_order", [*columns, pos])
    time_col = args.time if args.time is not None else pos
    numbered = (raw.withColumn(file_order, F.monotonically_increasing_id())
                .withColumn(pos, F.row_number().over(Window.orderBy(file_order)) - 1)
                .drop(file_order))
    seq = pos
    if args.sort:  # the engine reads the events by time, ties in input order
        seq = _fresh_name("ceql_seq", [*columns, pos])
        numbered = numbered.withColumn(
            seq, F.row_number().over(Window.orderBy(time_col, pos)) - 1)
    numbered = numbered.cache()
    time_type = numbered.schema[time_col].dataType
    check = numbered.select(pos, F.col(time_col).alias("t"),
                            F.lag(time_col).over(Window.orderBy(pos)).alias("prev"))
    stats = check.agg(
        F.count(F.lit(1)).alias("n"),
        F.min(F.when(F.col("t").isNull(), F.col(pos))).alias("null_at"),
        F.min(F.when(F.col("t") < F.col("prev"), F.col(pos))).alias("back_at"),
        (F.max(F.isnan("t")) if isinstance(time_type, T.FloatType | T.DoubleType)
         else F.lit(False)).alias("nan"),
    ).collect()[0]
    if stats["null_at"] is not None:
        raise CliError(f"{args.input}: Event {stats['null_at']} has no usable time: "
                       f"attribute {time_col!r} is missing; every event needs a number or a "
                       "timestamp there.")
    if stats["back_at"] is not None and not args.sort:
        bad = int(stats["back_at"])
        pair = check.where(F.col(pos) == bad).collect()[0]
        raise CliError(f"{args.input}: Event {bad} is out of order: {time_col!r} goes back "
                       f"from {pair['prev']!r} to {pair['t']!r}. Sort the events by time first "
                       "(ceql run --sort does it), or fix the data.")
    within = query.ast.within
    # only a time window reads the times: other queries get the stream order as their time;
    # times the engine refuses still go to it, for MATCH_CEQL to say what is wrong
    reads_time = ((within is not None and within.kind == "time") or bool(stats["nan"])
                  or not _time_type(time_type))
    cols = _Numbered(numbered, pos, seq, time_col if reads_time else seq)
    return cols, int(stats["n"])


def _time_type(dtype: Any) -> bool:
    """Whether MATCH_CEQL takes a column of this type as time (else it says what is wrong)."""
    from pyspark.sql import types as T

    return (isinstance(dtype, T.TimestampType | T.TimestampNTZType | T.DateType)
            or (isinstance(dtype, T.NumericType) and not isinstance(dtype, T.DecimalType)))


def _bound_events(column: pa.ChunkedArray, cols: _Numbered, matches: int
                  ) -> list[dict[int, int]]:
    """Per match, the events a variable binds: stream order → position."""
    lists = column.combine_chunks()
    out: list[dict[int, int]] = [{} for _ in range(matches)]
    events = pc.list_flatten(lists)
    owners = pc.list_parent_indices(lists).to_pylist()
    positions = events.field(cols.position).to_pylist()
    order = positions if cols.order == cols.position else events.field(cols.order).to_pylist()
    for i, s, p in zip(owners, order, positions, strict=True):
        out[i][s] = p
    return out


def _rows(result: pa.Table, query: ceql.Query, cols: _Numbered, variables: bool) -> list[Row]:
    """Matches as :class:`Row`s, in the order the local engine gives them."""
    n = result.num_rows
    keys: list[tuple[Any, ...]] = (
        list(zip(*(result.column(c).to_pylist() for c in query.partition_by), strict=True))
        if query.partition_by else [()] * n)
    first, last = (COLUMN_MATCH_START_PREFIX + cols.order, COLUMN_MATCH_END_PREFIX + cols.order)
    bounds = list(zip(result.column(first).to_pylist(), result.column(last).to_pylist(),
                      strict=True))
    bound = {v: _bound_events(result.column(v), cols, n) for v in query.variables}
    matched: list[dict[int, int]] = []  # per match: stream order → position of its events
    for i in range(n):
        events: dict[int, int] = {}
        for per_match in bound.values():
            events.update(per_match[i])
        matched.append(events)
    known = {s: p for events in matched for s, p in events.items()}
    where = _positions(cols, known, [o for b in bounds for o in b])
    out: list[tuple[int, Row]] = []
    for i, (start, end) in enumerate(bounds):
        by_var = {v: tuple(sorted(per_match[i].values())) for v, per_match in bound.items()}
        out.append((end, Row(where.get(start, -1), where.get(end, -1),
                             tuple(sorted(matched[i].values())), keys[i],
                             ordered_variables({v: ps for v, ps in by_var.items() if ps})
                             if variables else {})))
    # the local engine reports matches in stream order of their last event; Spark's tasks
    # report each partition's matches in that order, one partition after another
    out.sort(key=lambda kr: kr[0])
    return [r for _, r in out]


def _positions(cols: _Numbered, known: dict[int, int], orders: list[int]) -> dict[int, int]:
    """Stream order → input row, for ``orders`` (the same numbers unless ``--sort``)."""
    if cols.order == cols.position:
        return {o: o for o in orders}
    from pyspark.sql import functions as F

    missing = sorted({o for o in orders if o not in known and o >= 0})
    if missing:
        found = (cols.frame.where(F.col(cols.order).isin(missing))
                 .select(cols.order, cols.position).toArrow())
        known = {**known, **dict(zip(found.column(0).to_pylist(), found.column(1).to_pylist(),
                                     strict=True))}
    return known
