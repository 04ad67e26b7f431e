"""``ceql run --engine spark``: the same matches through a local Spark session's MATCH_CEQL.

Spark reads the file and numbers its rows in reading order: that number, an extra column, is
each event's position. MATCH_CEQL returns, for each variable of a match, every input column of
the events it binds, so the match's positions are read back from that column; its option
``bounds`` gives the stream-order column at the interval's first and last events, which SELECT
may leave out, so the interval's ends are exact too, whatever the times.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import reprlib
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc

import ceql
from ceql.constants import COLUMN_MATCH_END_PREFIX, COLUMN_MATCH_START_PREFIX, MATCH_CEQL

from .errors import EXIT_OK, EXIT_USAGE, CliError
from .progress import Progress, messages_to, summary_line
from .query import check_streams, cli_words, compile_query, unit_warning
from .readers import input_compression
from .sinks import Row, Target, open_sink, variables_in_order

__all__ = ["run_spark"]

_SPARK_READERS = {"csv": "csv", "parquet": "parquet", "jsonl": "json"}


class _SparkLog:
    """Where the JVM's and Spark's own output on standard error goes while Spark runs.

    By default a log file: Spark's JVM inherits file descriptor 2 when it starts, so it is
    pointed at the file meanwhile; ceql's own lines (progress, summary, errors) keep going to
    the original standard error through :attr:`stderr`. With ``capture=False``
    (``--spark-log``) Spark writes on standard error too, and :attr:`path` is None.
    """

    def __init__(self, capture: bool = True) -> None:
        self.path: str | None = None
        self._saved: int | None = None
        sys.stderr.flush()
        if not capture:
            self.stderr: TextIO = sys.stderr
            return
        fd, self.path = tempfile.mkstemp(prefix="ceql-spark-", suffix=".log")
        self._saved = os.dup(2)
        os.dup2(fd, 2)
        os.close(fd)
        self.stderr = os.fdopen(os.dup(self._saved), "w", encoding="utf-8", errors="replace")

    def restore(self, keep: bool) -> None:
        """Give standard error back; delete the log unless ``keep``."""
        sys.stderr.flush()
        self.stderr.flush()
        if self._saved is None:
            return
        os.dup2(self._saved, 2)
        os.close(self._saved)
        if not keep and self.path is not None:
            try:
                os.remove(self.path)
            except OSError:
                pass


class _SparkFailure(CliError):
    """An error Spark reported: its log is kept and named in the message."""


def _spark_message(exc: BaseException) -> str:
    """The line of a Spark error that says what is wrong (not the JVM or Python trace)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def _ceql_message(error: ceql.CeqlError) -> str:
    """ceql's message as the command line says it (its options by their flags)."""
    text = str(error)
    for prefix in (f"{MATCH_CEQL}: ",):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return cli_words(text)


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
    log = _SparkLog(capture=args.spark_log is None)
    keep_log = False
    try:
        with messages_to(log.stderr):
            _run(cspark, args, text, source, fmt_in, fmt_out, log, target)
            target = None  # the sink owns it now
    except _SparkFailure as exc:
        keep_log = True
        where = f" (Spark's log: {log.path})" if log.path is not None else ""
        raise CliError(f"{exc}{where}") from None
    finally:
        if target is not None:
            target.discard()
        log.restore(keep=keep_log)
    return EXIT_OK


def _run(cspark: Any, args: argparse.Namespace, text: str, source: str, fmt_in: str,
         fmt_out: str, log: _SparkLog, target: Target | None) -> None:
    """Start Spark, find the matches, write them (the sink owns ``target`` from then on)."""
    progress = Progress(not args.quiet and (args.progress or sys.stderr.isatty()),
                        log.stderr)
    progress.note("starting Spark")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # listen on this machine only
    # quiet unless --spark-log (ceql.spark.local_session); its log goes to `log` either way
    conf = {} if args.spark_log is None else {"spark.log.level": args.spark_log}
    try:
        spark = cspark.local_session(**conf)
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
    time: str | None  # the column of the events' times (read with --time-format) or None
    added: tuple[str, ...]  # every column added to the input


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
    check_streams(query, columns, args.input, args.stream_col)
    progress.note("numbering the events")
    cols, events = _number(raw, query, args)
    if not args.quiet and args.time is not None:
        unit_warning(query, args, cols.frame.select(args.time).limit(1).toArrow(), err)
    view = _fresh_name("ceql_events", [])
    cols.frame.createOrReplaceTempView(view)
    bounds = [cols.order, *([cols.time] if args.fields and cols.time is not None else [])]
    params = {"ceql_query": text, "ceql_type": args.type_col, "ceql_unit": args.time_unit,
              "ceql_bounds": ",".join(dict.fromkeys(bounds))}
    options = ["query => :ceql_query", "type => :ceql_type", "time_unit => :ceql_unit",
               "bounds => :ceql_bounds"]
    # a query partitioned by its own key runs one Spark task per key, except under CONSUME BY
    # ANY, which consumes across keys; ties in time keep the file's order either way
    if query.partition_by and query.ast.consume != "ANY":
        spread = f"PARTITION BY ({', '.join(map(_quote, query.partition_by))})"
    else:
        spread = "WITH SINGLE PARTITION"
    order_by = ", ".join(map(_quote, dict.fromkeys((cols.engine_time, cols.order))))
    # the events as a subquery: the input has no table name FROM should repeat (a FROM name
    # stands for the file, whatever it is)
    sql = (f"SELECT * FROM MATCH_CEQL(TABLE(SELECT * FROM {view}) {spread} ORDER BY "
           f"({order_by}), {', '.join(options)})")
    progress.note(f"matching {events:,} events")
    try:
        result = spark.sql(sql, args=params).toArrow()
    except Exception as exc:  # Spark wraps the engine's errors in its own
        error = _unwrap(exc)
        if error is not None:  # bad data: ceql's message
            raise CliError(f"{args.input}: {_ceql_message(error)}") from None
        raise _SparkFailure(f"{args.input}: {_spark_message(exc)}") from None
    rows = _rows(result, query, cols, args)
    if not args.quiet:
        import ceql.spark as cspark

        cspark.check(cols.frame, query, type_col=args.type_col, stream_col=args.stream_col)
    cols.frame.unpersist()
    return rows, events, result.schema


def _unwrap(exc: BaseException) -> ceql.CeqlError | None:
    """ceql's error inside a Spark exception (:func:`ceql.spark.unwrap`)."""
    import ceql.spark as cspark

    error: ceql.CeqlError | None = cspark.unwrap(exc)
    return error


def _number(raw: Any, query: ceql.Query, args: argparse.Namespace) -> tuple[_Numbered, int]:
    """Number the events (cached), read text times (``--time-format``) and check them; also
    count the events."""
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
    added = [pos]
    text_time = (args.time_format is not None and args.time is not None
                 and isinstance(raw.schema[args.time].dataType, T.StringType))
    if text_time:
        time_col = _fresh_name("ceql_time", [*columns, *added])
        numbered = _read_times(numbered, args.time, time_col, args.time_format)
        added.append(time_col)
    seq = pos
    if args.sort:  # the engine reads the events by time, ties in input order
        seq = _fresh_name("ceql_seq", [*columns, *added])
        numbered = numbered.withColumn(
            seq, F.row_number().over(Window.orderBy(time_col, pos)) - 1)
        added.append(seq)
    numbered = numbered.cache()
    time_type = numbered.schema[time_col].dataType
    picked = [F.col(pos), F.col(time_col).alias("t"),
              F.lag(time_col).over(Window.orderBy(pos)).alias("prev")]
    if text_time:
        picked.append(F.col(args.time).alias("text"))
    check = numbered.select(*picked)
    unread = (F.col("t").isNull() & F.col("text").isNotNull()) if text_time else F.lit(False)
    stats = check.agg(
        F.count(F.lit(1)).alias("n"),
        F.min(F.when(unread, F.col(pos))).alias("unread_at"),
        F.min(F.when(F.col("t").isNull(), F.col(pos))).alias("null_at"),
        F.min(F.when(F.col("t") < F.col("prev"), F.col(pos))).alias("back_at"),
        (F.max(F.isnan("t")) if isinstance(time_type, T.FloatType | T.DoubleType)
         else F.lit(False)).alias("nan"),
    ).collect()[0]

    def event(at: int) -> str:
        row = numbered.where(F.col(pos) == at).drop(*added).collect()[0].asDict()
        return _shown(row)

    if stats["unread_at"] is not None:
        at = int(stats["unread_at"])
        text = check.where(F.col(pos) == at).collect()[0]["text"]
        raise CliError(f"{args.input}: Event {at} has time {text!r} in column {args.time!r}, "
                       f"which does not match --time-format {args.time_format!r}; the event: "
                       f"{event(at)}.")
    if stats["null_at"] is not None:
        at = int(stats["null_at"])
        raise CliError(f"{args.input}: Event {at} has no usable time: attribute "
                       f"{args.time or time_col!r} is NULL in {event(at)}; every event needs a "
                       "number or a timestamp there.")
    if stats["back_at"] is not None and not args.sort:
        at = int(stats["back_at"])
        pair = check.where(F.col(pos) == at).collect()[0]
        raise CliError(f"{args.input}: Event {at} is out of order: {args.time!r} goes back "
                       f"from {_iso(pair['prev'])} to {_iso(pair['t'])} in {event(at)}. Sort "
                       "the events by time first (ceql run --sort does it), or fix the data.")
    within = query.ast.within
    # only a time window reads the times: other queries get the stream order as their time;
    # times the engine refuses still go to it, for MATCH_CEQL to say what is wrong
    reads_time = ((within is not None and within.kind == "time") or bool(stats["nan"])
                  or not _time_type(time_type))
    cols = _Numbered(numbered, pos, seq, time_col if reads_time else seq,
                     time_col if args.time is not None else None, tuple(added))
    return cols, int(stats["n"])


def _read_times(frame: Any, source: str, target: str, fmt: str) -> Any:
    """``frame`` with column ``target``: the text of ``source`` read with strptime format
    ``fmt`` as the local engine reads it (``pyarrow.compute.strptime``; NULL if unreadable).

    A plain Python UDF: Arrow-batched ones need pandas, which ceql does not.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    zoned = "%z" in fmt.replace("%%", "")

    def read(text: str | None) -> Any:
        if text is None:
            return None
        return pc.strptime(pa.array([text]), format=fmt, unit="us",
                           error_is_null=True)[0].as_py()

    kind = T.TimestampType() if zoned else T.TimestampNTZType()
    return frame.withColumn(target, F.udf(read, kind, useArrow=False)(F.col(source)))


def _iso(v: Any) -> str:
    """A time for a message: ISO 8601 for datetimes, else its ``repr``."""
    return v.isoformat() if isinstance(v, dt.date) else repr(v)


def _shown(row: dict[str, Any]) -> str:
    """An event for a message: its first fields, times in ISO 8601, long values cut short."""
    short = reprlib.Repr()
    short.maxstring = short.maxother = 40
    items = list(row.items())
    shown = [f"{k!r}: {_iso(v) if isinstance(v, dt.date) else short.repr(v)}"
             for k, v in items[:8]]
    more = f", … ({len(items) - 8} more)" if len(items) > 8 else ""
    return "{" + ", ".join(shown) + more + "}"


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


def _rows(result: pa.Table, query: ceql.Query, cols: _Numbered,
          args: argparse.Namespace) -> list[Row]:
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
    fields = _fields(result, query, cols, n) if args.fields else [None] * n
    out: list[tuple[int, Row]] = []
    for i, (start, end) in enumerate(bounds):
        by_var = {v: tuple(sorted(per_match[i].values())) for v, per_match in bound.items()}
        out.append((end, Row(where.get(start, -1), where.get(end, -1),
                             tuple(sorted(matched[i].values())), keys[i],
                             variables_in_order(query.variables, by_var)
                             if args.variables else {}, fields[i])))
    # the local engine reports matches in stream order of their last event; Spark's tasks
    # report each partition's matches in that order, one partition after another
    out.sort(key=lambda kr: kr[0])
    return [r for _, r in out]


def _plain(v: Any) -> Any:
    """A value as ``Match.to_dict(fields=True)`` gives it: datetimes in ISO 8601."""
    return v.isoformat() if isinstance(v, dt.date | dt.time) else v


def _fields(result: pa.Table, query: ceql.Query, cols: _Numbered, n: int
            ) -> list[dict[str, Any] | None]:
    """``--fields`` per match: its times (with ``--time``) and its events in input order."""
    events: list[dict[int, dict[str, Any]]] = [{} for _ in range(n)]
    for v in query.variables:
        lists = result.column(v).combine_chunks()
        owners = pc.list_parent_indices(lists).to_pylist()
        for i, e in zip(owners, pc.list_flatten(lists).to_pylist(), strict=True):
            events[i][e[cols.position]] = {k: _plain(x) for k, x in e.items()
                                           if k not in cols.added}
    times: list[tuple[Any, Any]] = [(None, None)] * n
    if cols.time is not None:
        first, last = (COLUMN_MATCH_START_PREFIX + cols.time,
                       COLUMN_MATCH_END_PREFIX + cols.time)
        times = list(zip(result.column(first).to_pylist(), result.column(last).to_pylist(),
                         strict=True))
    out: list[dict[str, Any] | None] = []
    for i in range(n):
        d: dict[str, Any] = {}
        if cols.time is not None:
            d["start_time"], d["end_time"] = _plain(times[i][0]), _plain(times[i][1])
        d["events"] = [e for _, e in sorted(events[i].items())]
        out.append(d)
    return out


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
